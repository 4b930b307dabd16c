//! A cursor over a command's arguments (after the name, and after the subcommand
//! for container commands). Arity has been checked before a handler runs, so
//! "missing" here means a syntax error in an optional clause.

use crate::error::CmdError;
use bytes::Bytes;
use keel_store::num;

pub struct Args<'a> {
    argv: &'a [Bytes],
    pos: usize,
}

impl<'a> Args<'a> {
    pub fn new(argv: &'a [Bytes], start: usize) -> Args<'a> {
        Args {
            argv,
            pos: start.min(argv.len()),
        }
    }

    /// The full argv, name included.
    pub fn argv(&self) -> &'a [Bytes] {
        self.argv
    }

    pub fn remaining(&self) -> usize {
        self.argv.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub fn peek(&self) -> Option<&'a Bytes> {
        self.argv.get(self.pos)
    }

    /// The next argument, or a syntax error if there is none.
    pub fn next_arg(&mut self) -> Result<&'a Bytes, CmdError> {
        let a = self.argv.get(self.pos).ok_or(CmdError::Syntax)?;
        self.pos += 1;
        Ok(a)
    }

    pub fn next_opt(&mut self) -> Option<&'a Bytes> {
        let a = self.argv.get(self.pos)?;
        self.pos += 1;
        Some(a)
    }

    pub fn next_key(&mut self) -> Result<&'a Bytes, CmdError> {
        self.next_arg()
    }

    pub fn next_i64(&mut self) -> Result<i64, CmdError> {
        parse_i64(self.next_arg()?)
    }

    pub fn next_f64(&mut self) -> Result<f64, CmdError> {
        parse_f64(self.next_arg()?)
    }

    /// The rest of the arguments, consuming them.
    pub fn rest(&mut self) -> &'a [Bytes] {
        let r = &self.argv[self.pos..];
        self.pos = self.argv.len();
        r
    }

    /// Whether the next argument equals `word` ignoring ASCII case; consumes it if so.
    pub fn eat(&mut self, word: &str) -> bool {
        match self.peek() {
            Some(a) if a.eq_ignore_ascii_case(word.as_bytes()) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }

    /// Fail with a syntax error if arguments remain.
    pub fn finish(&self) -> Result<(), CmdError> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(CmdError::Syntax)
        }
    }
}

pub fn parse_i64(a: &[u8]) -> Result<i64, CmdError> {
    num::parse_i64(a).ok_or(CmdError::NotInteger)
}

/// A database number (SELECT, COPY ... DB, MOVE): parsed as a C int first, as
/// Redis does, then checked against the number of databases.
pub fn parse_db_index(a: &[u8], databases: usize) -> Result<usize, CmdError> {
    let n = parse_i64(a)?;
    let n = i32::try_from(n).map_err(|_| {
        CmdError::err("value is out of range, value must between -2147483648 and 2147483647")
    })?;
    usize::try_from(n)
        .ok()
        .filter(|&d| d < databases)
        .ok_or(CmdError::DbIndexOutOfRange)
}

pub fn parse_f64(a: &[u8]) -> Result<f64, CmdError> {
    num::parse_f64_in_range(a).ok_or(CmdError::NotFloat)
}

/// Whether `a` equals `word` ignoring ASCII case.
/// HRANDFIELD, SRANDMEMBER and ZRANDMEMBER with a negative count build their
/// whole reply in memory; past this many picks Keel refuses rather than let
/// one request exhaust the server (Redis streams them into an unbounded
/// output buffer).
pub const MAX_RANDOM_REPEATS: u64 = 1 << 24;

/// Refuse a negative random-pick count beyond `MAX_RANDOM_REPEATS`.
pub fn check_random_repeats(count: i64) -> Result<(), CmdError> {
    if count < 0 && count.unsigned_abs() > MAX_RANDOM_REPEATS {
        return Err(CmdError::err(format!(
            "count is out of range, a negative count must be at least -{MAX_RANDOM_REPEATS}"
        )));
    }
    Ok(())
}

pub fn is(a: &[u8], word: &str) -> bool {
    a.eq_ignore_ascii_case(word.as_bytes())
}
