//! Configuration directives, declared once and read by the config file loader,
//! the command line, CONFIG GET/SET, and INFO.
//!
//! Values are kept as the canonical strings CONFIG GET returns; the few that the
//! request path reads constantly are mirrored in atomics.

use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use thiserror::Error;

#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Int {
        min: i64,
        max: i64,
    },
    /// A byte size that accepts Redis's units (`1k`, `512mb`, `1gb`).
    Memory {
        min: i64,
        max: i64,
    },
    Bool,
    Enum(&'static [&'static str]),
    Str,
    /// One or more words joined by spaces (`bind`, `save`).
    Words,
}

pub struct Directive {
    pub name: &'static str,
    pub default: &'static str,
    pub kind: Kind,
    /// Whether CONFIG SET may change it at run time.
    pub mutable: bool,
}

const fn d(name: &'static str, default: &'static str, kind: Kind, mutable: bool) -> Directive {
    Directive {
        name,
        default,
        kind,
        mutable,
    }
}

const MB: i64 = 1024 * 1024;

/// Every directive Keel understands. Anything else in a config file stops start-up.
pub static DIRECTIVES: &[Directive] = &[
    d("bind", "127.0.0.1", Kind::Words, false),
    d("port", "6379", Kind::Int { min: 0, max: 65535 }, false),
    d("threads", "0", Kind::Int { min: 0, max: 1024 }, false),
    d("dir", ".", Kind::Str, true),
    d(
        "databases",
        "16",
        Kind::Int {
            min: 1,
            max: 1_000_000,
        },
        false,
    ),
    d(
        "maxclients",
        "10000",
        Kind::Int {
            min: 1,
            max: 1_000_000,
        },
        true,
    ),
    d("requirepass", "", Kind::Str, true),
    d("save", "", Kind::Words, true),
    d("appendonly", "no", Kind::Bool, true),
    d(
        "appendfsync",
        "everysec",
        Kind::Enum(&["everysec", "always", "no"]),
        true,
    ),
    d("appendfilename", "appendonly.aof", Kind::Str, false),
    d("dbfilename", "dump.rdb", Kind::Str, true),
    // Redis accepts any non-negative hz and clamps it to 1..=500 (see `canonical`).
    d(
        "hz",
        "10",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        true,
    ),
    d(
        "active-expire-effort",
        "1",
        Kind::Int { min: 1, max: 10 },
        true,
    ),
    d(
        "timeout",
        "0",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        true,
    ),
    d(
        "tcp-keepalive",
        "300",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        true,
    ),
    d(
        "tcp-backlog",
        "511",
        Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        false,
    ),
    d("protected-mode", "yes", Kind::Bool, true),
    d("daemonize", "no", Kind::Enum(&["no"]), false),
    d(
        "supervised",
        "no",
        Kind::Enum(&["no", "auto", "systemd", "upstart"]),
        false,
    ),
    d("pidfile", "", Kind::Str, false),
    d(
        "loglevel",
        "notice",
        Kind::Enum(&["debug", "verbose", "notice", "warning"]),
        true,
    ),
    d("logfile", "", Kind::Enum(&[""]), false),
    d(
        "enable-debug-command",
        "no",
        Kind::Enum(&["no", "yes", "local"]),
        false,
    ),
    d(
        "proto-max-bulk-len",
        "536870912",
        Kind::Memory {
            min: MB,
            max: i64::MAX,
        },
        true,
    ),
    // When small collections leave their compact encodings (Redis 7.0's
    // names; set-max-listpack-* are Redis 7.2's).
    d(
        "hash-max-listpack-entries",
        "128",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        true,
    ),
    d(
        "hash-max-listpack-value",
        "64",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        true,
    ),
    d(
        "set-max-intset-entries",
        "512",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        true,
    ),
    d(
        "set-max-listpack-entries",
        "128",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        true,
    ),
    d(
        "set-max-listpack-value",
        "64",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        true,
    ),
    d(
        "zset-max-listpack-entries",
        "128",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        true,
    ),
    d(
        "zset-max-listpack-value",
        "64",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        true,
    ),
    d(
        "list-max-listpack-size",
        "-2",
        Kind::Int {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
        true,
    ),
    d(
        "client-query-buffer-limit",
        "1073741824",
        Kind::Memory {
            min: MB,
            max: i64::MAX,
        },
        true,
    ),
    // What BF.ADD, BF.MADD and BF.INSERT use for a filter they create (RedisBloom's
    // names and defaults). The rate is a float, checked in `canonical_bloom`.
    d("bf-error-rate", "0.01", Kind::Str, true),
    d(
        "bf-initial-size",
        "100",
        Kind::Int {
            min: 1,
            max: 1 << 30,
        },
        true,
    ),
    // 0 makes the filters it creates fixed-size.
    d(
        "bf-expansion-factor",
        "2",
        Kind::Int { min: 0, max: 32768 },
        true,
    ),
    // Operator tooling: the slow log, the latency monitor and the per-command
    // latency histograms (Redis 7.0's names, defaults and ranges).
    d(
        "slowlog-log-slower-than",
        "10000",
        Kind::Int {
            min: -1,
            max: i64::MAX,
        },
        true,
    ),
    d(
        "slowlog-max-len",
        "128",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        true,
    ),
    d(
        "latency-monitor-threshold",
        "0",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        true,
    ),
    d("latency-tracking", "yes", Kind::Bool, true),
    d(
        "latency-tracking-info-percentiles",
        "50 99 99.9",
        Kind::Words,
        true,
    ),
];

pub fn find(name: &str) -> Option<&'static Directive> {
    DIRECTIVES
        .iter()
        .find(|d| d.name.eq_ignore_ascii_case(name))
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("Bad directive or wrong number of arguments")]
    Unknown,
    #[error("argument couldn't be parsed into an integer")]
    NotInteger,
    #[error("argument must be between {0} and {1} inclusive")]
    OutOfRange(i64, i64),
    #[error("argument must be a memory value")]
    NotMemory,
    #[error("argument must be 'yes' or 'no'")]
    NotBool,
    #[error("argument(s) must be one of the following: {0}")]
    NotInEnum(String),
    #[error("can't set immutable config")]
    Immutable,
    #[error("{0}")]
    Unsupported(&'static str),
}

/// Parse a Redis memory value: a number with an optional k/kb/m/mb/g/gb suffix.
pub fn parse_memory(s: &str) -> Option<i64> {
    let lower = s.to_ascii_lowercase();
    let (num, mul) = [
        ("gb", 1i64 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("g", 1_000_000_000),
        ("m", 1_000_000),
        ("k", 1000),
        ("b", 1),
    ]
    .iter()
    .find_map(|(suf, m)| lower.strip_suffix(suf).map(|n| (n.to_string(), *m)))
    .unwrap_or((lower.clone(), 1));
    num.parse::<i64>().ok()?.checked_mul(mul)
}

/// The canonical value of `dir` set to `words`, with the checks Redis makes on
/// particular directives beyond their kind.
fn canonical(dir: &Directive, words: &[&str]) -> Result<String, ConfigError> {
    if dir.name.starts_with("bf-") {
        return canonical_bloom(dir, words);
    }
    let v = canonical_kind(dir, words)?;
    match dir.name {
        // Redis clamps hz into its working range rather than refusing it.
        "hz" => Ok(v.parse::<i64>().unwrap_or(10).clamp(1, 500).to_string()),
        "save" => canonical_save(&v),
        "latency-tracking-info-percentiles" => canonical_percentiles(&v),
        "appendonly" if v == "yes" => Err(ConfigError::Unsupported(
            "append-only persistence is not available in this build of Keel",
        )),
        _ => Ok(v),
    }
}

/// `save` takes pairs of <seconds> <changes>: seconds >= 1, changes >= 0.
fn canonical_save(v: &str) -> Result<String, ConfigError> {
    let words: Vec<&str> = v.split_whitespace().collect();
    let invalid = ConfigError::Unsupported("Invalid save parameters");
    if words.len() & 1 == 1 {
        return Err(invalid);
    }
    let mut out = Vec::with_capacity(words.len());
    for (i, w) in words.iter().enumerate() {
        let n: i64 = w.parse().map_err(|_| invalid.clone())?;
        if n < if i % 2 == 0 { 1 } else { 0 } {
            return Err(invalid);
        }
        out.push(n.to_string());
    }
    Ok(out.join(" "))
}

fn canonical_kind(dir: &Directive, words: &[&str]) -> Result<String, ConfigError> {
    let single = || -> Result<&str, ConfigError> {
        match words {
            [w] => Ok(w),
            _ => Err(ConfigError::Unknown),
        }
    };
    match dir.kind {
        Kind::Words => Ok(words.join(" ")),
        Kind::Str => Ok(single()?.to_string()),
        Kind::Bool => match single()?.to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err(ConfigError::NotBool),
        },
        Kind::Enum(opts) => {
            let v = single()?.to_ascii_lowercase();
            if opts.contains(&v.as_str()) {
                Ok(v)
            } else {
                Err(ConfigError::NotInEnum(opts.join(", ")))
            }
        }
        Kind::Int { min, max } => {
            let v: i64 = single()?.parse().map_err(|_| ConfigError::NotInteger)?;
            if v < min || v > max {
                return Err(ConfigError::OutOfRange(min, max));
            }
            Ok(v.to_string())
        }
        Kind::Memory { min, max } => {
            let v = parse_memory(single()?).ok_or(ConfigError::NotMemory)?;
            if v < min || v > max {
                return Err(ConfigError::OutOfRange(min, max));
            }
            Ok(v.to_string())
        }
    }
}

/// The live configuration.
pub struct Config {
    values: RwLock<BTreeMap<&'static str, String>>,
    proto_max_bulk_len: AtomicI64,
    maxclients: AtomicI64,
    query_buffer_limit: AtomicI64,
    idle_timeout_s: AtomicI64,
    compact: RwLock<keel_store::CompactLimits>,
    /// Operator settings read on every command (slow log, latency monitor).
    pub ops: OpsHot,
}

impl Default for Config {
    fn default() -> Self {
        let values = DIRECTIVES
            .iter()
            .map(|d| (d.name, d.default.to_string()))
            .collect();
        let c = Config {
            values: RwLock::new(values),
            proto_max_bulk_len: AtomicI64::new(0),
            maxclients: AtomicI64::new(0),
            query_buffer_limit: AtomicI64::new(0),
            idle_timeout_s: AtomicI64::new(0),
            compact: RwLock::new(keel_store::CompactLimits::default()),
            ops: OpsHot::default(),
        };
        c.refresh_hot();
        c
    }
}

impl Config {
    /// Set one directive. `startup` allows immutable directives (config file and
    /// command line); CONFIG SET passes false.
    pub fn set(&self, name: &str, words: &[&str], startup: bool) -> Result<(), ConfigError> {
        let dir = find(name).ok_or(ConfigError::Unknown)?;
        if !startup && !dir.mutable {
            return Err(ConfigError::Immutable);
        }
        let v = canonical(dir, words)?;
        self.values.write().insert(dir.name, v);
        self.refresh_hot();
        Ok(())
    }

    /// Check a value without applying it (CONFIG SET validates all pairs first).
    pub fn validate(&self, name: &str, words: &[&str]) -> Result<&'static Directive, ConfigError> {
        let dir = find(name).ok_or(ConfigError::Unknown)?;
        if !dir.mutable {
            return Err(ConfigError::Immutable);
        }
        canonical(dir, words)?;
        Ok(dir)
    }

    fn refresh_hot(&self) {
        self.idle_timeout_s
            .store(self.get_i64("timeout"), Ordering::Relaxed);
        self.proto_max_bulk_len
            .store(self.get_i64("proto-max-bulk-len"), Ordering::Relaxed);
        self.maxclients
            .store(self.get_i64("maxclients"), Ordering::Relaxed);
        self.query_buffer_limit
            .store(self.get_i64("client-query-buffer-limit"), Ordering::Relaxed);
        self.refresh_ops();
        let size = |name: &str| usize::try_from(self.get_i64(name)).unwrap_or(usize::MAX);
        // A packed element's length is a u32; like Redis's listpack safety
        // limit, anything over 1 GiB always goes to the general form, however
        // high the *-max-listpack-value settings are.
        let value = |name: &str| size(name).min(1 << 30);
        *self.compact.write() = keel_store::CompactLimits {
            hash_entries: size("hash-max-listpack-entries"),
            hash_value: value("hash-max-listpack-value"),
            set_intset_entries: size("set-max-intset-entries"),
            set_entries: size("set-max-listpack-entries"),
            set_value: value("set-max-listpack-value"),
            zset_entries: size("zset-max-listpack-entries"),
            zset_value: value("zset-max-listpack-value"),
            list_size: self.get_i64("list-max-listpack-size"),
        };
    }

    /// The compact-encoding thresholds, as one copy.
    pub fn compact_limits(&self) -> keel_store::CompactLimits {
        *self.compact.read()
    }

    pub fn get(&self, name: &str) -> String {
        self.values.read().get(name).cloned().unwrap_or_default()
    }

    pub fn get_i64(&self, name: &str) -> i64 {
        self.get(name).parse().unwrap_or(0)
    }

    pub fn get_bool(&self, name: &str) -> bool {
        self.get(name) == "yes"
    }

    /// Every (name, value) whose name matches the glob `pattern`, case-insensitively.
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        self.values
            .read()
            .iter()
            .filter(|(k, _)| keel_store::glob::glob_match(pattern, k.as_bytes(), true))
            .map(|(k, v)| (*k, v.clone()))
            .collect()
    }

    pub fn proto_max_bulk_len(&self) -> i64 {
        self.proto_max_bulk_len.load(Ordering::Relaxed)
    }

    pub fn maxclients(&self) -> i64 {
        self.maxclients.load(Ordering::Relaxed)
    }

    /// `timeout`: seconds a client may stay idle before it is closed; 0 for never.
    pub fn idle_timeout_s(&self) -> i64 {
        self.idle_timeout_s.load(Ordering::Relaxed)
    }

    pub fn query_buffer_limit(&self) -> i64 {
        self.query_buffer_limit.load(Ordering::Relaxed)
    }
}

/// Split a value as CONFIG SET received it into the words `Config::set` takes:
/// multi-word directives (`save`, `bind`) split on spaces, others stay whole.
pub fn value_words<'v>(dir: &Directive, value: &'v str) -> Vec<&'v str> {
    match dir.kind {
        Kind::Words => value.split_whitespace().collect(),
        _ => vec![value],
    }
}

/// Quote `word` for a config file line when it would not read back as itself.
fn quote_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\'' && b != b'\\');
    if plain {
        return word.to_string();
    }
    let mut out = String::from("\"");
    for b in word.bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

/// The config file line that sets `dir` to `value`.
fn directive_line(dir: &Directive, value: &str) -> String {
    let words = value_words(dir, value);
    if words.is_empty() {
        return format!("{} \"\"", dir.name);
    }
    let quoted: Vec<String> = words.iter().map(|w| quote_word(w)).collect();
    format!("{} {}", dir.name, quoted.join(" "))
}

impl Config {
    /// CONFIG REWRITE: `old` (the file's text) with every directive it sets
    /// replaced by its current value, later repeats of a directive dropped, and
    /// directives changed from their defaults appended. Comments, blank lines and
    /// anything unrecognised are kept as they were.
    pub fn rewrite_text(&self, old: &str) -> String {
        let mut written: Vec<&'static str> = Vec::new();
        let mut out: Vec<String> = Vec::new();
        for line in old.lines() {
            let trimmed = line.trim();
            let dir = if trimmed.is_empty() || trimmed.starts_with('#') {
                None
            } else {
                keel_resp::split_args(trimmed.as_bytes())
                    .and_then(|w| w.first().cloned())
                    .and_then(|name| find(&String::from_utf8_lossy(&name)))
            };
            match dir {
                None => out.push(line.to_string()),
                Some(d) if written.contains(&d.name) => {}
                Some(d) => {
                    written.push(d.name);
                    out.push(directive_line(d, &self.get(d.name)));
                }
            }
        }
        let mut header = false;
        for d in DIRECTIVES {
            let v = self.get(d.name);
            if written.contains(&d.name) || v == d.default {
                continue;
            }
            if !header {
                out.push("# Generated by CONFIG REWRITE".into());
                header = true;
            }
            out.push(directive_line(d, &v));
        }
        let mut text = out.join("\n");
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_validates_and_canonicalises() {
        let c = Config::default();
        assert_eq!(c.get("port"), "6379");
        c.set("proto-max-bulk-len", &["2mb"], false)
            .expect("test value");
        assert_eq!(c.proto_max_bulk_len(), 2 * 1024 * 1024);
        assert_eq!(c.set("port", &["1"], false), Err(ConfigError::Immutable));
        assert_eq!(
            c.set("maxclients", &["x"], false),
            Err(ConfigError::NotInteger)
        );
        assert_eq!(c.set("nope", &["x"], true), Err(ConfigError::Unknown));
        assert!(c.set("appendfsync", &["sometimes"], false).is_err());
        c.set("save", &["3600", "1"], false).expect("test value");
        assert_eq!(c.get("save"), "3600 1");
        assert_eq!(c.matching(b"max*").len(), 1);
    }
}

#[cfg(test)]
mod more_tests {
    use super::*;

    #[test]
    fn hz_is_clamped_and_save_checked() {
        let c = Config::default();
        c.set("hz", &["0"], false).expect("test value");
        assert_eq!(c.get("hz"), "1");
        c.set("hz", &["501"], false).expect("test value");
        assert_eq!(c.get("hz"), "500");
        assert_eq!(
            c.set("hz", &["-1"], false),
            Err(ConfigError::OutOfRange(0, i32::MAX as i64))
        );
        let bad = Err(ConfigError::Unsupported("Invalid save parameters"));
        assert_eq!(c.set("save", &["3600"], false), bad);
        assert_eq!(c.set("save", &["0", "1"], false), bad);
        assert_eq!(c.set("save", &["10", "-1"], false), bad);
        assert_eq!(c.set("save", &["x", "1"], false), bad);
        c.set("save", &["3600", "1", "300", "0"], false)
            .expect("test value");
        assert_eq!(c.get("save"), "3600 1 300 0");
        c.set("save", &[""], false).expect("test value");
        assert_eq!(c.get("save"), "");
        assert!(c.validate("appendonly", &["yes"]).is_err());
        assert!(c.validate("appendonly", &["no"]).is_ok());
    }

    #[test]
    fn compact_limits_follow_the_settings_with_a_ceiling_on_element_size() {
        let c = Config::default();
        assert_eq!(c.compact_limits(), keel_store::CompactLimits::default());
        c.set("hash-max-listpack-entries", &["7"], false)
            .expect("test value");
        c.set("zset-max-listpack-value", &["100000000000"], false)
            .expect("test value");
        c.set("list-max-listpack-size", &["-5"], false)
            .expect("test value");
        let l = c.compact_limits();
        assert_eq!(l.hash_entries, 7);
        assert_eq!(l.zset_value, 1 << 30);
        assert_eq!(l.list_size, -5);
        // CONFIG GET still shows what was set.
        assert_eq!(c.get("zset-max-listpack-value"), "100000000000");
    }

    #[test]
    fn rewrite_replaces_dedupes_and_appends() {
        let c = Config::default();
        c.set("port", &["7001"], true).expect("test value");
        c.set("maxclients", &["77"], false).expect("test value");
        c.set("requirepass", &["a b\"c"], false)
            .expect("test value");
        c.set("save", &["60", "1"], false).expect("test value");
        let old = "# my file\nport 6379\n\nport 6380\nhz 10\nsave \"\"\n";
        let new = c.rewrite_text(old);
        assert_eq!(
            new,
            "# my file\nport 7001\n\nhz 10\nsave 60 1\n# Generated by CONFIG REWRITE\n\
             maxclients 77\nrequirepass \"a b\\\"c\"\n"
        );
        // What was written reads back to the same values.
        let back = Config::default();
        for line in new.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let words = keel_resp::split_args(line.as_bytes()).expect("test value");
            let words: Vec<String> = words
                .iter()
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            let vals: Vec<&str> = words[1..].iter().map(String::as_str).collect();
            back.set(&words[0], &vals, true).expect("test value");
        }
        for name in ["port", "maxclients", "requirepass", "save", "hz"] {
            assert_eq!(back.get(name), c.get(name), "{name}");
        }
        let empty = Config::default();
        empty.set("save", &["60", "1"], false).expect("test value");
        assert_eq!(empty.rewrite_text("save \"\"\n"), "save 60 1\n");
        empty.set("save", &[""], false).expect("test value");
        assert_eq!(empty.rewrite_text("save 60 1\n"), "save \"\"\n");
    }
}

/// The Bloom filter defaults word their range errors as RedisBloom does
/// ("... must be in the range ..."), and the error rate is a float strictly
/// between 0 and 1.
fn canonical_bloom(dir: &Directive, words: &[&str]) -> Result<String, ConfigError> {
    let range = match dir.name {
        "bf-error-rate" => "bf-error-rate must be in the range (0, 1)",
        "bf-initial-size" => "bf-initial-size must be in the range [1, 1073741824]",
        _ => "bf-expansion-factor must be in the range [0, 32768]",
    };
    if dir.name == "bf-error-rate" {
        let [w] = words else {
            return Err(ConfigError::Unknown);
        };
        let rate: f64 = w
            .trim()
            .parse()
            .map_err(|_| ConfigError::Unsupported("argument couldn't be parsed into a float"))?;
        if !(rate > 0.0 && rate < 1.0) {
            return Err(ConfigError::Unsupported(range));
        }
        return Ok(w.trim().to_string());
    }
    canonical_kind(dir, words).map_err(|e| match e {
        ConfigError::OutOfRange(..) => ConfigError::Unsupported(range),
        other => other,
    })
}

/// The parameters of a Bloom filter that a write creates on its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BloomDefaults {
    pub error_rate: f64,
    pub capacity: u64,
    /// 0 for a fixed-size filter.
    pub expansion: u32,
}

impl Config {
    /// `bf-error-rate`, `bf-initial-size` and `bf-expansion-factor`, read
    /// when a filter is created (rarely enough that parsing each time is
    /// cheaper than keeping a mirror in sync).
    pub fn bloom_defaults(&self) -> BloomDefaults {
        BloomDefaults {
            error_rate: self.get("bf-error-rate").parse().unwrap_or(0.01),
            capacity: self.get("bf-initial-size").parse().unwrap_or(100),
            expansion: self.get("bf-expansion-factor").parse().unwrap_or(2),
        }
    }
}

#[cfg(test)]
mod bloom_tests {
    use super::*;

    #[test]
    fn bloom_defaults_are_validated_with_range_errors() {
        let c = Config::default();
        assert_eq!(
            c.bloom_defaults(),
            BloomDefaults {
                error_rate: 0.01,
                capacity: 100,
                expansion: 2
            }
        );
        c.set("bf-error-rate", &["0.001"], false).expect("in range");
        c.set("bf-initial-size", &["1073741824"], false)
            .expect("in range");
        c.set("bf-expansion-factor", &["0"], false)
            .expect("in range");
        assert_eq!(c.get("bf-error-rate"), "0.001");
        assert_eq!(
            c.bloom_defaults(),
            BloomDefaults {
                error_rate: 0.001,
                capacity: 1 << 30,
                expansion: 0
            }
        );
        for (name, bad) in [
            ("bf-error-rate", "0"),
            ("bf-error-rate", "1"),
            ("bf-error-rate", "-0.5"),
            ("bf-error-rate", "nan"),
            ("bf-initial-size", "0"),
            ("bf-initial-size", "1073741825"),
            ("bf-expansion-factor", "-1"),
            ("bf-expansion-factor", "32769"),
        ] {
            let e = c.set(name, &[bad], false).expect_err(bad).to_string();
            assert!(e.contains("must be in the range"), "{name} {bad}: {e}");
        }
        assert!(c.set("bf-error-rate", &["x"], false).is_err());
        assert_eq!(
            c.set("bf-initial-size", &["x"], false),
            Err(ConfigError::NotInteger)
        );
        // Nothing refused changed the values.
        assert_eq!(c.bloom_defaults().capacity, 1 << 30);
    }
}

/// `latency-tracking-info-percentiles`: zero or more numbers between 0 and
/// 100, kept as Redis prints them (`%f` with trailing zeros trimmed).
fn canonical_percentiles(v: &str) -> Result<String, ConfigError> {
    let mut out = Vec::new();
    for w in v.split_whitespace() {
        let p: f64 = w.parse().map_err(|_| {
            ConfigError::Unsupported("Invalid latency-tracking-info-percentiles parameters")
        })?;
        if !(0.0..=100.0).contains(&p) {
            return Err(ConfigError::Unsupported(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
            ));
        }
        out.push(format_percentile(p));
    }
    Ok(out.join(" "))
}

/// A percentile as Redis writes it: six decimals, trailing zeros and a bare
/// point dropped (`99.900000` -> `99.9`, `50.000000` -> `50`).
pub fn format_percentile(p: f64) -> String {
    let s = format!("{p:.6}");
    let s = s.trim_end_matches('0');
    s.trim_end_matches('.').to_string()
}

/// Mirrors of the operator directives the executor reads on every command, so
/// the request path pays one relaxed load per setting and no lock.
#[derive(Default)]
pub struct OpsHot {
    /// `slowlog-log-slower-than` in microseconds; negative disables the log.
    pub slowlog_slower_than_us: AtomicI64,
    pub slowlog_max_len: AtomicI64,
    /// `latency-monitor-threshold` in milliseconds; 0 disables the monitor.
    pub latency_monitor_ms: AtomicI64,
    pub latency_tracking: std::sync::atomic::AtomicBool,
    /// The parsed `latency-tracking-info-percentiles`.
    pub percentiles: RwLock<Vec<f64>>,
}

impl Config {
    fn refresh_ops(&self) {
        let o = &self.ops;
        o.slowlog_slower_than_us
            .store(self.get_i64("slowlog-log-slower-than"), Ordering::Relaxed);
        o.slowlog_max_len
            .store(self.get_i64("slowlog-max-len"), Ordering::Relaxed);
        o.latency_monitor_ms
            .store(self.get_i64("latency-monitor-threshold"), Ordering::Relaxed);
        o.latency_tracking
            .store(self.get_bool("latency-tracking"), Ordering::Relaxed);
        *o.percentiles.write() = self
            .get("latency-tracking-info-percentiles")
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
    }
}

#[cfg(test)]
mod ops_tests {
    use super::*;

    #[test]
    fn operator_directives_have_redis_defaults_and_ranges() {
        let c = Config::default();
        assert_eq!(c.get("slowlog-log-slower-than"), "10000");
        assert_eq!(c.get("slowlog-max-len"), "128");
        assert_eq!(c.get("latency-monitor-threshold"), "0");
        assert_eq!(c.get("latency-tracking"), "yes");
        assert_eq!(c.get("latency-tracking-info-percentiles"), "50 99 99.9");
        assert_eq!(c.ops.slowlog_slower_than_us.load(Ordering::Relaxed), 10000);
        assert!(c.ops.latency_tracking.load(Ordering::Relaxed));
        assert_eq!(*c.ops.percentiles.read(), vec![50.0, 99.0, 99.9]);
        assert_eq!(
            c.set("slowlog-log-slower-than", &["-2"], false),
            Err(ConfigError::OutOfRange(-1, i64::MAX))
        );
        c.set("slowlog-log-slower-than", &["-1"], false)
            .expect("in range");
        assert_eq!(c.ops.slowlog_slower_than_us.load(Ordering::Relaxed), -1);
        assert!(c.set("slowlog-max-len", &["-1"], false).is_err());
        assert!(c.set("latency-monitor-threshold", &["-1"], false).is_err());
        c.set("latency-tracking", &["no"], false).expect("bool");
        assert!(!c.ops.latency_tracking.load(Ordering::Relaxed));
        c.set(
            "latency-tracking-info-percentiles",
            &["0.1", "33.333333333", "1e-5", "100"],
            false,
        )
        .expect("in range");
        assert_eq!(
            c.get("latency-tracking-info-percentiles"),
            "0.1 33.333333 0.00001 100"
        );
        c.set("latency-tracking-info-percentiles", &[""], false)
            .expect("empty list");
        assert_eq!(c.get("latency-tracking-info-percentiles"), "");
        assert!(c.ops.percentiles.read().is_empty());
        for bad in ["101", "-1", "abc"] {
            assert!(c
                .set("latency-tracking-info-percentiles", &[bad], false)
                .is_err());
        }
    }
}
