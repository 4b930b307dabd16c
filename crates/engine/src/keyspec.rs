//! Per-key access flags in Redis 7's key-spec form: for each command, where
//! its keys are and how it uses each one (RO/RW/OW/RM plus access, update,
//! insert, delete). The data is Redis's own (`keyspecs.rs`, generated from
//! redis-server, where `for_command` looks it up); this module declares its
//! form and applies a spec to an argv the way Redis's key extraction does.

/// Where the search for a spec's keys begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Begin {
    /// At a fixed argv index.
    Index(i64),
    /// After `keyword`, searched from `startfrom` (from the end when negative).
    Keyword {
        keyword: &'static str,
        startfrom: i64,
    },
    Unknown,
}

/// How the keys are found from where the search began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Find {
    /// Keys from the start to `lastkey` (relative; negative counts from the
    /// end, divided by `limit` when set), every `keystep`.
    Range {
        lastkey: i64,
        keystep: i64,
        limit: i64,
    },
    /// A count at `keynumidx`, then that many keys from `firstkey`.
    Keynum {
        keynumidx: i64,
        firstkey: i64,
        keystep: i64,
    },
    Unknown,
}

#[derive(Debug)]
pub struct KeySpec {
    pub notes: &'static str,
    pub flags: &'static [&'static str],
    pub begin: Begin,
    pub find: Find,
}

/// The argv positions each spec yields for `argv`, with that spec's flags, in
/// spec order. Positions past the end of argv and malformed counts yield
/// nothing; the caller decides which keys exist.
pub fn positions(
    specs: &[KeySpec],
    argv: &[bytes::Bytes],
) -> Vec<(usize, &'static [&'static str])> {
    let argc = argv.len() as i64;
    let mut out = Vec::new();
    for spec in specs {
        let start = match spec.begin {
            Begin::Index(i) => i,
            Begin::Keyword { keyword, startfrom } => {
                let found = if startfrom >= 0 {
                    (startfrom..argc)
                        .find(|&i| argv[i as usize].eq_ignore_ascii_case(keyword.as_bytes()))
                } else {
                    let from = argc + startfrom;
                    (1..=from.max(0)).rev().find(|&i| {
                        i < argc && argv[i as usize].eq_ignore_ascii_case(keyword.as_bytes())
                    })
                };
                match found {
                    Some(i) => i + 1,
                    None => continue,
                }
            }
            Begin::Unknown => continue,
        };
        if start <= 0 || start >= argc {
            continue;
        }
        let (first, last, step) = match spec.find {
            Find::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let last = if lastkey >= 0 {
                    start + lastkey
                } else if limit <= 1 {
                    argc + lastkey
                } else {
                    start + ((argc - start) / limit + lastkey)
                };
                (start, last, keystep.max(1))
            }
            Find::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                let Some(n) = argv
                    .get((start + keynumidx) as usize)
                    .and_then(|a| keel_store::num::parse_i64(a))
                else {
                    continue;
                };
                let first = start + firstkey;
                (
                    first,
                    first + (n.max(0) - 1) * keystep.max(1),
                    keystep.max(1),
                )
            }
            Find::Unknown => continue,
        };
        let mut i = first;
        while i <= last && i < argc {
            out.push((i as usize, spec.flags));
            i += step;
        }
    }
    out
}
