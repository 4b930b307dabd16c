//! The words a command is declared in: its [`Flags`], its [`Group`] (COMMAND
//! DOCS, ACL categories) and where its keys are ([`Keys`]). Names nothing of the
//! kernel above it.

use bytes::Bytes;

/// Command flags, as Redis names them in COMMAND INFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flags(u32);

impl Flags {
    pub const NONE: Flags = Flags(0);
    pub const WRITE: Flags = Flags(1);
    pub const READONLY: Flags = Flags(1 << 1);
    pub const DENYOOM: Flags = Flags(1 << 2);
    pub const ADMIN: Flags = Flags(1 << 3);
    pub const PUBSUB: Flags = Flags(1 << 4);
    pub const NOSCRIPT: Flags = Flags(1 << 5);
    pub const BLOCKING: Flags = Flags(1 << 6);
    pub const LOADING: Flags = Flags(1 << 7);
    pub const STALE: Flags = Flags(1 << 8);
    pub const SKIP_MONITOR: Flags = Flags(1 << 9);
    pub const SKIP_SLOWLOG: Flags = Flags(1 << 10);
    pub const FAST: Flags = Flags(1 << 11);
    pub const NO_AUTH: Flags = Flags(1 << 12);
    pub const MAY_REPLICATE: Flags = Flags(1 << 13);
    pub const NO_MULTI: Flags = Flags(1 << 14);
    pub const ALLOW_BUSY: Flags = Flags(1 << 15);
    pub const NO_MANDATORY_KEYS: Flags = Flags(1 << 16);
    /// Keel-specific: a script (EVAL, FCALL): it may reach keys it did not
    /// declare, so inside EXEC it takes every shard.
    pub const SCRIPT: Flags = Flags(1 << 27);
    /// Keel-specific: the command reads or writes the whole keyspace, so the
    /// executor locks every shard (KEYS, SCAN, FLUSHALL, SWAPDB, ...).
    pub const ALL_SHARDS: Flags = Flags(1 << 24);
    /// Keel-specific: the command walks the keyspace one shard at a time through
    /// `Ctx::with_shard`, holding one lock at a time (SCAN), so other clients
    /// are not stopped for the whole walk. Inside EXEC every shard is locked.
    pub const SHARD_WALK: Flags = Flags(1 << 26);
    /// Keel-specific: the command may name other keys through patterns in its
    /// arguments (SORT's BY and GET): a call that does takes every shard, one
    /// that does not only its declared keys (see `Engine::every_shard`).
    pub const KEY_PATTERNS: Flags = Flags(1 << 28);
    /// Keel-specific: runs outside MULTI queueing (MULTI, EXEC, DISCARD, WATCH...).
    pub const TX_CONTROL: Flags = Flags(1 << 25);

    pub const fn union(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Redis's names for the flags that COMMAND INFO reports.
    pub fn names(self) -> Vec<&'static str> {
        const NAMES: &[(Flags, &str)] = &[
            (Flags::WRITE, "write"),
            (Flags::READONLY, "readonly"),
            (Flags::DENYOOM, "denyoom"),
            (Flags::ADMIN, "admin"),
            (Flags::PUBSUB, "pubsub"),
            (Flags::NOSCRIPT, "noscript"),
            (Flags::BLOCKING, "blocking"),
            (Flags::LOADING, "loading"),
            (Flags::STALE, "stale"),
            (Flags::SKIP_MONITOR, "skip_monitor"),
            (Flags::SKIP_SLOWLOG, "skip_slowlog"),
            (Flags::FAST, "fast"),
            (Flags::NO_AUTH, "no_auth"),
            (Flags::MAY_REPLICATE, "may_replicate"),
            (Flags::NO_MANDATORY_KEYS, "no_mandatory_keys"),
            (Flags::NO_MULTI, "no_multi"),
            (Flags::ALLOW_BUSY, "allow_busy"),
        ];
        NAMES
            .iter()
            .filter(|(f, _)| self.contains(*f))
            .map(|(_, n)| *n)
            .collect()
    }
}

/// The command groups of COMMAND DOCS; they also give ACL categories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Connection,
    Server,
    Generic,
    String,
    Bitmap,
    Transactions,
    Hash,
    Set,
    List,
    SortedSet,
    HyperLogLog,
    Geo,
    /// The `BF.*` commands (RedisBloom's Bloom filters).
    Bloom,
    /// The `CF.*` commands (RedisBloom's cuckoo filters).
    Cuckoo,
    /// The `CMS.*` commands (RedisBloom's count-min sketches).
    Cms,
    /// The `R.*` commands (redis-roaring's 32-bit Roaring bitmaps).
    Roaring,
    /// The `R64.*` commands (redis-roaring's 64-bit Roaring bitmaps).
    Roaring64,
    /// The `IDX.*` commands (Keel's bitmap index).
    Index,
    /// The `TOPK.*` commands (RedisBloom's top-k).
    TopK,
    /// The `TDIGEST.*` commands (RedisBloom's t-digest).
    TDigest,
    Stream,
    Scripting,
    Pubsub,
    Cluster,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Connection => "connection",
            Group::Server => "server",
            Group::Cluster => "cluster",
            Group::Generic => "generic",
            Group::String => "string",
            Group::Bitmap => "bitmap",
            Group::Transactions => "transactions",
            Group::Hash => "hash",
            Group::Set => "set",
            Group::List => "list",
            Group::SortedSet => "sorted-set",
            Group::HyperLogLog => "hyperloglog",
            Group::Geo => "geo",
            Group::Bloom => "bloom",
            Group::Cuckoo => "cf",
            Group::Cms => "cms",
            Group::Roaring => "roaring",
            Group::Roaring64 => "roaring64",
            Group::Index => "index",
            Group::TopK => "topk",
            Group::TDigest => "tdigest",
            Group::Stream => "stream",
            Group::Scripting => "scripting",
            Group::Pubsub => "pubsub",
        }
    }

    /// The ACL category named after the group (`@string`, `@keyspace`, ...).
    pub fn acl_category(self) -> &'static str {
        match self {
            Group::Generic => "@keyspace",
            Group::Transactions => "@transaction",
            Group::Server => "@admin",
            // Redis gives cluster commands no category of their own.
            Group::Cluster => "@slow",
            Group::Connection => "@connection",
            Group::String => "@string",
            Group::Bitmap => "@bitmap",
            Group::Hash => "@hash",
            Group::Set => "@set",
            Group::List => "@list",
            Group::SortedSet => "@sortedset",
            Group::HyperLogLog => "@hyperloglog",
            Group::Geo => "@geo",
            Group::Bloom => "@bloom",
            // RedisBloom's own ACL categories for these families.
            Group::Cuckoo => "@cuckoo",
            Group::Cms => "@cms",
            Group::Roaring => "@roaring",
            Group::Roaring64 => "@roaring64",
            Group::Index => "@index",
            Group::TopK => "@topk",
            Group::TDigest => "@tdigest",
            Group::Stream => "@stream",
            Group::Scripting => "@scripting",
            Group::Pubsub => "@pubsub",
        }
    }
}

/// Where a command's keys are, in Redis's legacy (first, last, step) form. `last`
/// may be negative, counting from the end (-1 = last argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    None,
    Range {
        first: i32,
        last: i32,
        step: i32,
    },
    /// A count at `numkeys` followed by that many keys (ZUNIONSTORE-like); `extra`
    /// names an additional key at a fixed position (the destination), 0 for none.
    NumKeys {
        numkeys: i32,
        extra: i32,
    },
    /// Every argument from `first` on, less one trailing option: a word of `options` with
    /// its count of arguments, found at the end of the line (R.INTERSECT's `CARD`, `MIN`,
    /// `LIMIT n`). The handler reads options the same way, so a key may be named like an
    /// option anywhere but last.
    BeforeOptions {
        first: i32,
        options: &'static [(&'static str, u8)],
    },
    /// XREAD's and XREADGROUP's keys: the first half of the arguments after
    /// the `STREAMS` keyword, found past the options (`BLOCK n`, `COUNT n`,
    /// `GROUP g c`, `NOACK`) as Redis's key extraction finds it; none when
    /// the line is malformed (the handler reports the error).
    Streams,
    /// The keys of the commands queued by MULTI (EXEC).
    Queued,
    /// The first argument, plus keys that options name anywhere in the line
    /// (GEORADIUS's STORE, SORT's STORE), found by the command's own function.
    Find(KeyFinder),
}

/// A command's own key search: pushes the argv positions of the keys.
#[derive(Clone, Copy, Debug)]
pub struct KeyFinder(pub fn(&[Bytes], &mut Vec<usize>));

impl PartialEq for KeyFinder {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}

impl Eq for KeyFinder {}

impl Keys {
    pub const fn single(pos: i32) -> Keys {
        Keys::Range {
            first: pos,
            last: pos,
            step: 1,
        }
    }

    pub const fn range(first: i32, last: i32, step: i32) -> Keys {
        Keys::Range { first, last, step }
    }

    /// The (first, last, step) triple COMMAND INFO reports.
    pub fn legacy_triple(self) -> (i64, i64, i64) {
        match self {
            Keys::None | Keys::Queued | Keys::Streams => (0, 0, 0),
            Keys::Range { first, last, step } => (first.into(), last.into(), step.into()),
            Keys::BeforeOptions { first, .. } => (first.into(), -1, 1),
            Keys::Find(_) => (1, 1, 1),
            Keys::NumKeys { extra, numkeys } => {
                if extra > 0 {
                    (extra.into(), extra.into(), 1)
                } else {
                    ((numkeys + 1).into(), (numkeys + 1).into(), 1)
                }
            }
        }
    }

    /// Indices into argv of the keys of this invocation. Out-of-range or malformed
    /// positions yield no key rather than an error; the handler reports the error.
    pub fn positions(self, argv: &[Bytes], out: &mut Vec<usize>) {
        let argc = argv.len() as i64;
        match self {
            Keys::None | Keys::Queued => {}
            Keys::Find(KeyFinder(find)) => find(argv, out),
            Keys::Streams => {
                let mut i = 1;
                let mut at = None;
                while i < argv.len() {
                    let a = &argv[i];
                    if a.eq_ignore_ascii_case(b"BLOCK") || a.eq_ignore_ascii_case(b"COUNT") {
                        i += 1;
                    } else if a.eq_ignore_ascii_case(b"GROUP") {
                        i += 2;
                    } else if a.eq_ignore_ascii_case(b"STREAMS") {
                        at = Some(i);
                        break;
                    } else if !a.eq_ignore_ascii_case(b"NOACK") {
                        break;
                    }
                    i += 1;
                }
                let Some(at) = at else { return };
                let n = argv.len() - at - 1;
                if n == 0 || !n.is_multiple_of(2) {
                    return;
                }
                out.extend(at + 1..at + 1 + n / 2);
            }
            Keys::Range { first, last, step } => {
                let first = i64::from(first);
                let last = if last < 0 {
                    argc + i64::from(last)
                } else {
                    i64::from(last)
                };
                let step = i64::from(step.max(1));
                let mut i = first;
                while i <= last && i < argc {
                    out.push(i as usize);
                    i += step;
                }
            }
            Keys::BeforeOptions { first, options } => {
                let first = first.max(1) as usize;
                let mut end = argv.len();
                for &(word, nargs) in options {
                    let at = end.checked_sub(1 + usize::from(nargs));
                    if let Some(at) = at.filter(|&at| at >= first) {
                        if argv[at].eq_ignore_ascii_case(word.as_bytes()) {
                            end = at;
                            break;
                        }
                    }
                }
                out.extend(first..end);
            }
            Keys::NumKeys { numkeys, extra } => {
                if extra > 0 && i64::from(extra) < argc {
                    out.push(extra as usize);
                }
                let Some(n) = argv
                    .get(numkeys as usize)
                    .and_then(|a| keel_store::num::parse_i64(a))
                else {
                    return;
                };
                let start = i64::from(numkeys) + 1;
                let end = start.saturating_add(n.max(0)).min(argc);
                out.extend((start..end).map(|i| i as usize));
            }
        }
    }
}

/// ACL categories in the order Redis reports them.
pub const CATEGORY_ORDER: &[&str] = &[
    "@keyspace",
    "@read",
    "@write",
    "@set",
    "@sortedset",
    "@list",
    "@hash",
    "@string",
    "@bitmap",
    "@hyperloglog",
    "@geo",
    "@stream",
    "@pubsub",
    "@admin",
    "@fast",
    "@slow",
    "@blocking",
    "@dangerous",
    "@connection",
    "@transaction",
    "@scripting",
];
