//! Per-key access flags in Redis 7's key-spec form: for each command, where
//! its keys are and how it uses each one (RO/RW/OW/RM plus access, update,
//! insert, delete). The data is Redis's own (`keyspecs.rs`, generated from
//! redis-server); this module looks it up and applies it to an argv the way
//! Redis's key extraction does.

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

/// Redis's key specs of the command named `full_name` (`get`, `client|kill`),
/// if Redis has the command and it takes keys.
pub fn for_command(full_name: &str) -> Option<&'static [KeySpec]> {
    let table = crate::keyspecs::KEY_SPECS;
    table
        .binary_search_by(|(name, _)| (*name).cmp(full_name))
        .ok()
        .map(|i| table[i].1)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<bytes::Bytes> {
        a.iter()
            .map(|s| bytes::Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    #[test]
    fn table_is_sorted_and_has_redis_flags() {
        let t = crate::keyspecs::KEY_SPECS;
        assert!(t.windows(2).all(|w| w[0].0 < w[1].0));
        let lmove = for_command("lmove").expect("lmove");
        assert_eq!(lmove[0].flags, ["RW", "access", "delete"]);
        assert_eq!(lmove[1].flags, ["RW", "insert"]);
        assert!(for_command("ping").is_none());
    }

    #[test]
    fn positions_follow_begin_and_find() {
        let specs = for_command("zunionstore").expect("spec");
        let p: Vec<usize> = positions(specs, &argv(&["zunionstore", "d", "2", "a", "b"]))
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(p, [1, 3, 4]);
        let specs = for_command("xread").expect("spec");
        let p: Vec<usize> = positions(
            specs,
            &argv(&["xread", "count", "1", "streams", "a", "b", "0", "0"]),
        )
        .into_iter()
        .map(|(i, _)| i)
        .collect();
        assert_eq!(p, [4, 5]);
        let specs = for_command("mset").expect("spec");
        assert_eq!(
            positions(specs, &argv(&["mset", "a", "1", "b", "2"])).len(),
            2
        );
    }
}
