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

/// The reply of HRANDFIELD, SRANDMEMBER or ZRANDMEMBER with a negative count:
/// `picks` draws with repeats, each written by `emit` as `frames_per_pick`
/// encoded frames, straight into one encoded array (no `Frame` per element).
/// Redis streams such a reply into an output buffer of any size; Keel builds
/// it whole, so it refuses a reply that would outgrow `limit_bytes`
/// (`proto-max-bulk-len`), before drawing when even the smallest elements
/// could not fit.
pub fn random_repeats(
    picks: u64,
    frames_per_pick: u64,
    limit_bytes: u64,
    mut emit: impl FnMut(&mut bytes::BytesMut),
) -> Result<keel_resp::Frame, CmdError> {
    use std::fmt::Write as _;
    let too_large = || {
        CmdError::err("reply too large: random picks with repeats would exceed proto-max-bulk-len")
    };
    let frames = picks.saturating_mul(frames_per_pick);
    // An empty bulk string, `$0\r\n\r\n`, is the smallest element.
    if frames.saturating_mul(6) > limit_bytes {
        return Err(too_large());
    }
    let mut buf = bytes::BytesMut::new();
    let _ = write!(buf, "*{frames}\r\n");
    for _ in 0..picks {
        emit(&mut buf);
        if buf.len() as u64 > limit_bytes {
            return Err(too_large());
        }
    }
    Ok(keel_resp::Frame::Encoded(buf.freeze()))
}

/// Append `data` as a bulk string to an encoded reply.
pub fn put_bulk(buf: &mut bytes::BytesMut, data: &[u8]) {
    keel_resp::put_bulk(buf, data);
}

/// The count of HRANDFIELD WITHVALUES and ZRANDMEMBER WITHSCORES: Redis bounds
/// it so that twice it still fits a signed 64-bit integer.
pub fn check_random_pairs(count: i64) -> Result<(), CmdError> {
    if count.unsigned_abs() > (i64::MAX / 2) as u64 {
        return Err(CmdError::err("value is out of range"));
    }
    Ok(())
}

/// The count of HRANDFIELD, SRANDMEMBER and ZRANDMEMBER: any 64-bit integer
/// but the most negative, with Redis's range message.
pub fn parse_random_count(a: &[u8]) -> Result<i64, CmdError> {
    match parse_i64(a)? {
        i64::MIN => Err(CmdError::err(
            "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        )),
        n => Ok(n),
    }
}

/// Whether `a` equals `word` ignoring ASCII case.
pub fn is(a: &[u8], word: &str) -> bool {
    a.eq_ignore_ascii_case(word.as_bytes())
}
