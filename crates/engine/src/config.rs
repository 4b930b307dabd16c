//! Configuration directives, declared once and read by the config file loader,
//! the command line, CONFIG GET/SET/REWRITE, and INFO.
//!
//! Every Redis 7.0 directive is in the table, classified: honoured, belonging
//! to a feature Keel does not have yet (only values that ask nothing of it are
//! accepted), or a recorded no-op. Unknown names are refused.
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
    /// A byte size, or a percentage of `maxmemory` (`10%`).
    MemoryOrPercent,
    /// An octal number (`unixsocketperm 700`).
    Octal,
    Bool,
    Enum(&'static [&'static str]),
    Str,
    /// One or more words joined by spaces (`bind`).
    Words,
    /// Words with a syntax of their own, checked by name in `canonical`
    /// (`save`, `client-output-buffer-limit`, `notify-keyspace-events`...).
    Special,
}

/// How Keel treats a directive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Keel does what the directive asks.
    Honoured,
    /// Belongs to a feature Keel does not have yet (named here). A value that
    /// asks nothing of the feature (its default, or a disabled value) is
    /// accepted; any other is refused with a message naming the feature.
    Later(&'static str),
    /// Accepted and reported by CONFIG GET, with no effect on Keel; a value
    /// other than the default is logged once at start-up.
    NoOp,
}

pub struct Directive {
    pub name: &'static str,
    /// The canonical form of the default, as CONFIG GET prints it.
    pub default: &'static str,
    pub kind: Kind,
    /// Whether CONFIG SET may change it at run time.
    pub mutable: bool,
    pub class: Class,
}

const fn d(name: &'static str, default: &'static str, kind: Kind, mutable: bool) -> Directive {
    Directive {
        name,
        default,
        kind,
        mutable,
        class: Class::Honoured,
    }
}

const MB: i64 = 1024 * 1024;
const I32: i64 = i32::MAX as i64;
const I64: i64 = i64::MAX;

const fn int(min: i64, max: i64) -> Kind {
    Kind::Int { min, max }
}
const fn mem(min: i64) -> Kind {
    Kind::Memory { min, max: I64 }
}

// The features a later version of Keel brings, named in refusals.
const REPLICATION: &str = "replication";
const TLS: &str = "TLS";
const CLUSTER: &str = "cluster";
const DEFRAG: &str = "active defragmentation";
const UNIX_SOCKET: &str = "Unix socket listeners";
const MODULES: &str = "modules";
const SYSLOG: &str = "syslog logging";
const CPU_AFFINITY: &str = "CPU affinity";
const DUMP: &str = "DUMP and RESTORE";
const RENAME: &str = "command renaming";

/// A directive of a feature Keel does not have yet.
const fn later(
    feature: &'static str,
    name: &'static str,
    default: &'static str,
    kind: Kind,
    mutable: bool,
) -> Directive {
    Directive {
        name,
        default,
        kind,
        mutable,
        class: Class::Later(feature),
    }
}

/// A directive Keel accepts and reports but that changes nothing in it.
const fn noop(name: &'static str, default: &'static str, kind: Kind, mutable: bool) -> Directive {
    Directive {
        name,
        default,
        kind,
        mutable,
        class: Class::NoOp,
    }
}

const YES_NO_LOCAL: Kind = Kind::Enum(&["no", "yes", "local"]);

/// Every directive Keel understands: Redis 7.0's, each honoured, refused until a
/// later feature, or a recorded no-op, plus Keel's own (`threads`, the
/// `set-max-listpack-*` limits of Redis 7.2, the Bloom filter defaults).
/// Anything else in a config file stops start-up.
pub static DIRECTIVES: &[Directive] = &[
    // Network and process.
    d("bind", "127.0.0.1", Kind::Words, true),
    d("port", "6379", int(0, 65535), true),
    d("threads", "0", int(0, 1024), false),
    d("tcp-backlog", "511", int(0, I32), false),
    d("tcp-keepalive", "300", int(0, I32), true),
    d("timeout", "0", int(0, I32), true),
    d("maxclients", "10000", int(1, u32::MAX as i64), true),
    d("requirepass", "", Kind::Str, true),
    d("databases", "16", int(1, 1_000_000), false),
    d("dir", ".", Kind::Str, true),
    d("daemonize", "no", Kind::Bool, false),
    d("pidfile", "", Kind::Str, false),
    d("logfile", "", Kind::Str, false),
    d(
        "loglevel",
        "notice",
        Kind::Enum(&["debug", "verbose", "notice", "warning"]),
        true,
    ),
    d("enable-debug-command", "no", YES_NO_LOCAL, false),
    d("proto-max-bulk-len", "536870912", mem(MB), true),
    d("client-query-buffer-limit", "1073741824", mem(MB), true),
    // Redis accepts any non-negative hz and clamps it to 1..=500 (see `canonical`).
    d("hz", "10", int(0, I32), true),
    d("active-expire-effort", "1", int(1, 10), true),
    // Save points, read as Redis reads them (two `save` lines add up); the
    // default is Redis 7's.
    d("save", "3600 1 300 100 60 10000", Kind::Special, true),
    // When small collections leave their compact encodings (Redis 7.0's
    // names; set-max-listpack-* are Redis 7.2's).
    d("hash-max-listpack-entries", "512", int(0, I64), true),
    d("hash-max-listpack-value", "64", mem(0), true),
    d("set-max-intset-entries", "512", int(0, I64), true),
    d("set-max-listpack-entries", "128", int(0, I64), true),
    d("set-max-listpack-value", "64", mem(0), true),
    d("zset-max-listpack-entries", "128", int(0, I64), true),
    d("zset-max-listpack-value", "64", mem(0), true),
    d(
        "list-max-listpack-size",
        "-2",
        int(i32::MIN as i64, I32),
        true,
    ),
    // What BF.ADD, BF.MADD and BF.INSERT use for a filter they create (RedisBloom's
    // names and defaults). The rate is a float, checked in `canonical_bloom`.
    d("bf-error-rate", "0.01", Kind::Str, true),
    d("bf-initial-size", "100", int(1, 1 << 30), true),
    // 0 makes the filters it creates fixed-size.
    d("bf-expansion-factor", "2", int(0, 32768), true),
    // Operator tooling: the slow log, the latency monitor and the per-command
    // latency histograms (Redis 7.0's names, defaults and ranges).
    d("slowlog-log-slower-than", "10000", int(-1, I64), true),
    d("slowlog-max-len", "128", int(0, I64), true),
    d("latency-monitor-threshold", "0", int(0, I64), true),
    d("latency-tracking", "yes", Kind::Bool, true),
    d(
        "latency-tracking-info-percentiles",
        "50 99 99.9",
        Kind::Words,
        true,
    ),
    // Recorded no-ops: they tune what Keel does not have (a logo, a process
    // title, jemalloc, rehashing steps, lazy freeing, OOM scores, THP) or
    // what it always does its own way.
    noop("always-show-logo", "no", Kind::Bool, false),
    noop("set-proc-title", "yes", Kind::Bool, false),
    noop(
        "proc-title-template",
        "{title} {listen-addr} {server-mode}",
        Kind::Str,
        true,
    ),
    noop(
        "supervised",
        "no",
        Kind::Enum(&["upstart", "systemd", "auto", "no"]),
        false,
    ),
    d("protected-mode", "yes", Kind::Bool, true),
    noop("activerehashing", "yes", Kind::Bool, true),
    noop("dynamic-hz", "yes", Kind::Bool, true),
    noop("jemalloc-bg-thread", "yes", Kind::Bool, true),
    noop("disable-thp", "yes", Kind::Bool, false),
    noop("lazyfree-lazy-eviction", "no", Kind::Bool, true),
    noop("lazyfree-lazy-expire", "no", Kind::Bool, true),
    noop("lazyfree-lazy-server-del", "no", Kind::Bool, true),
    noop("lazyfree-lazy-user-del", "no", Kind::Bool, true),
    noop("lazyfree-lazy-user-flush", "no", Kind::Bool, true),
    noop(
        "oom-score-adj",
        "no",
        Kind::Enum(&["no", "yes", "relative", "absolute"]),
        true,
    ),
    noop("oom-score-adj-values", "0 200 800", Kind::Special, true),
    noop("crash-log-enabled", "yes", Kind::Bool, true),
    noop("crash-memcheck-enabled", "yes", Kind::Bool, true),
    d("rdbcompression", "yes", Kind::Bool, true),
    d("rdbchecksum", "yes", Kind::Bool, false),
    // Lists are never compressed; the depth is kept for CONFIG GET.
    noop("list-compress-depth", "0", int(0, I32), true),
    noop("io-threads", "1", int(1, 128), false),
    noop("io-threads-do-reads", "no", Kind::Bool, false),
    noop("ignore-warnings", "", Kind::Str, true),
    noop("enable-protected-configs", "no", YES_NO_LOCAL, false),
    noop("socket-mark-id", "0", int(0, u32::MAX as i64), false),
    // A signal always shuts Keel down at once, without a snapshot.
    noop(
        "shutdown-on-sigint",
        "default",
        Kind::Enum(&["default", "save", "nosave", "now", "force"]),
        true,
    ),
    noop(
        "shutdown-on-sigterm",
        "default",
        Kind::Enum(&["default", "save", "nosave", "now", "force"]),
        true,
    ),
    // Persistence.
    d("dbfilename", "dump.rdb", Kind::Str, true),
    d("stop-writes-on-bgsave-error", "yes", Kind::Bool, true),
    noop("rdb-del-sync-files", "no", Kind::Bool, true),
    noop("rdb-save-incremental-fsync", "yes", Kind::Bool, true),
    d("appendonly", "no", Kind::Bool, true),
    d(
        "appendfsync",
        "everysec",
        Kind::Enum(&["everysec", "always", "no"]),
        true,
    ),
    d("appendfilename", "appendonly.aof", Kind::Str, false),
    d("appenddirname", "appendonlydir", Kind::Str, false),
    noop("no-appendfsync-on-rewrite", "no", Kind::Bool, true),
    d("auto-aof-rewrite-percentage", "100", int(0, I32), true),
    d("auto-aof-rewrite-min-size", "67108864", mem(0), true),
    d("aof-load-truncated", "yes", Kind::Bool, true),
    d("aof-use-rdb-preamble", "yes", Kind::Bool, true),
    d("aof-timestamp-enabled", "no", Kind::Bool, true),
    noop("aof-rewrite-incremental-fsync", "yes", Kind::Bool, true),
    noop("aof-disable-auto-gc", "no", Kind::Bool, true),
    // Memory limits.
    d("maxmemory", "0", mem(0), true),
    d(
        "maxmemory-policy",
        "noeviction",
        Kind::Enum(&[
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "noeviction",
        ]),
        true,
    ),
    d("maxmemory-samples", "5", int(1, I32), true),
    d("maxmemory-eviction-tenacity", "10", int(0, 100), true),
    d("maxmemory-clients", "0", Kind::MemoryOrPercent, true),
    d("lfu-log-factor", "10", int(0, I32), true),
    d("lfu-decay-time", "1", int(0, I32), true),
    d(
        "client-output-buffer-limit",
        COBL_DEFAULT,
        Kind::Special,
        true,
    ),
    // Replication.
    d("replicaof", "", Kind::Special, false),
    d("masterauth", "", Kind::Str, true),
    d("masteruser", "", Kind::Str, true),
    d("replica-serve-stale-data", "yes", Kind::Bool, true),
    d("replica-read-only", "yes", Kind::Bool, true),
    later(
        REPLICATION,
        "replica-ignore-maxmemory",
        "yes",
        Kind::Bool,
        true,
    ),
    later(REPLICATION, "replica-lazy-flush", "no", Kind::Bool, true),
    d("replica-priority", "100", int(0, I32), true),
    d("replica-announce-ip", "", Kind::Str, true),
    d("replica-announce-port", "0", int(0, 65535), true),
    d("replica-announced", "yes", Kind::Bool, true),
    later(
        REPLICATION,
        "replica-ignore-disk-write-errors",
        "no",
        Kind::Bool,
        true,
    ),
    later(REPLICATION, "repl-diskless-sync", "yes", Kind::Bool, true),
    later(
        REPLICATION,
        "repl-diskless-sync-delay",
        "5",
        int(0, I32),
        true,
    ),
    later(
        REPLICATION,
        "repl-diskless-sync-max-replicas",
        "0",
        int(0, I32),
        true,
    ),
    later(
        REPLICATION,
        "repl-diskless-load",
        "disabled",
        Kind::Enum(&["disabled", "on-empty-db", "swapdb"]),
        true,
    ),
    d("repl-ping-replica-period", "10", int(1, I32), true),
    d("repl-timeout", "60", int(1, I32), true),
    d("repl-disable-tcp-nodelay", "no", Kind::Bool, true),
    d("repl-backlog-size", "1048576", mem(1), true),
    d("repl-backlog-ttl", "3600", int(0, I64), true),
    d("min-replicas-to-write", "0", int(0, I32), true),
    d("min-replicas-max-lag", "10", int(0, I32), true),
    later(REPLICATION, "bind-source-addr", "", Kind::Str, true),
    later(
        REPLICATION,
        "propagation-error-behavior",
        "ignore",
        Kind::Enum(&["ignore", "panic", "panic-on-replicas"]),
        true,
    ),
    // SHUTDOWN waits this long for replicas to catch up.
    later(REPLICATION, "shutdown-timeout", "10", int(0, I32), true),
    // ACL.
    d("aclfile", "", Kind::Str, false),
    d("acllog-max-len", "128", int(0, I64), true),
    d(
        "acl-pubsub-default",
        "resetchannels",
        Kind::Enum(&["allchannels", "resetchannels"]),
        true,
    ),
    d("notify-keyspace-events", "", Kind::Special, true),
    // Scripting, data types and caching not built yet.
    d("busy-reply-threshold", "5000", int(0, I64), true),
    d("stream-node-max-bytes", "4096", mem(0), true),
    d("stream-node-max-entries", "100", int(0, I64), true),
    d("hll-sparse-max-bytes", "3000", mem(0), true),
    d("tracking-table-max-keys", "1000000", int(0, I64), true),
    later(
        DUMP,
        "sanitize-dump-payload",
        "no",
        Kind::Enum(&["no", "yes", "clients"]),
        true,
    ),
    later(MODULES, "enable-module-command", "no", YES_NO_LOCAL, false),
    later(DEFRAG, "activedefrag", "no", Kind::Bool, true),
    later(
        DEFRAG,
        "active-defrag-ignore-bytes",
        "104857600",
        mem(1),
        true,
    ),
    later(
        DEFRAG,
        "active-defrag-threshold-lower",
        "10",
        int(0, 1000),
        true,
    ),
    later(
        DEFRAG,
        "active-defrag-threshold-upper",
        "100",
        int(0, 1000),
        true,
    ),
    later(DEFRAG, "active-defrag-cycle-min", "1", int(1, 99), true),
    later(DEFRAG, "active-defrag-cycle-max", "25", int(1, 99), true),
    later(
        DEFRAG,
        "active-defrag-max-scan-fields",
        "1000",
        int(1, I64),
        true,
    ),
    later(UNIX_SOCKET, "unixsocket", "", Kind::Str, false),
    later(UNIX_SOCKET, "unixsocketperm", "0", Kind::Octal, false),
    later(SYSLOG, "syslog-enabled", "no", Kind::Bool, false),
    later(SYSLOG, "syslog-ident", "redis", Kind::Str, false),
    later(
        SYSLOG,
        "syslog-facility",
        "local0",
        Kind::Enum(&[
            "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
        ]),
        false,
    ),
    later(CPU_AFFINITY, "server_cpulist", "", Kind::Str, false),
    later(CPU_AFFINITY, "bio_cpulist", "", Kind::Str, false),
    later(CPU_AFFINITY, "aof_rewrite_cpulist", "", Kind::Str, false),
    later(CPU_AFFINITY, "bgsave_cpulist", "", Kind::Str, false),
    // Cluster.
    later(CLUSTER, "cluster-enabled", "no", Kind::Bool, false),
    later(
        CLUSTER,
        "cluster-config-file",
        "nodes.conf",
        Kind::Str,
        false,
    ),
    later(CLUSTER, "cluster-port", "0", int(0, 65535), false),
    later(CLUSTER, "cluster-node-timeout", "15000", int(0, I64), true),
    later(CLUSTER, "cluster-announce-ip", "", Kind::Str, true),
    later(CLUSTER, "cluster-announce-hostname", "", Kind::Str, true),
    later(CLUSTER, "cluster-announce-port", "0", int(0, 65535), true),
    later(
        CLUSTER,
        "cluster-announce-bus-port",
        "0",
        int(0, 65535),
        true,
    ),
    later(
        CLUSTER,
        "cluster-announce-tls-port",
        "0",
        int(0, 65535),
        true,
    ),
    later(
        CLUSTER,
        "cluster-replica-validity-factor",
        "10",
        int(0, I32),
        true,
    ),
    later(CLUSTER, "cluster-migration-barrier", "1", int(0, I32), true),
    later(
        CLUSTER,
        "cluster-allow-replica-migration",
        "yes",
        Kind::Bool,
        true,
    ),
    later(
        CLUSTER,
        "cluster-require-full-coverage",
        "yes",
        Kind::Bool,
        true,
    ),
    later(
        CLUSTER,
        "cluster-replica-no-failover",
        "no",
        Kind::Bool,
        true,
    ),
    later(
        CLUSTER,
        "cluster-allow-reads-when-down",
        "no",
        Kind::Bool,
        true,
    ),
    later(
        CLUSTER,
        "cluster-allow-pubsubshard-when-down",
        "yes",
        Kind::Bool,
        true,
    ),
    later(
        CLUSTER,
        "cluster-preferred-endpoint-type",
        "ip",
        Kind::Enum(&["ip", "hostname", "unknown-endpoint"]),
        true,
    ),
    later(CLUSTER, "cluster-link-sendbuf-limit", "0", mem(0), true),
    // TLS.
    d("tls-port", "0", int(0, 65535), true),
    d("tls-cert-file", "", Kind::Str, true),
    d("tls-key-file", "", Kind::Str, true),
    later(TLS, "tls-key-file-pass", "", Kind::Str, true),
    later(TLS, "tls-client-cert-file", "", Kind::Str, true),
    later(TLS, "tls-client-key-file", "", Kind::Str, true),
    later(TLS, "tls-client-key-file-pass", "", Kind::Str, true),
    later(TLS, "tls-dh-params-file", "", Kind::Str, true),
    d("tls-ca-cert-file", "", Kind::Str, true),
    d("tls-ca-cert-dir", "", Kind::Str, true),
    d(
        "tls-auth-clients",
        "yes",
        Kind::Enum(&["no", "yes", "optional"]),
        true,
    ),
    later(TLS, "tls-replication", "no", Kind::Bool, true),
    later(TLS, "tls-cluster", "no", Kind::Bool, true),
    d("tls-protocols", "", Kind::Str, true),
    d("tls-ciphers", "", Kind::Str, true),
    d("tls-ciphersuites", "", Kind::Str, true),
    d("tls-prefer-server-ciphers", "no", Kind::Bool, true),
    d("tls-session-caching", "yes", Kind::Bool, true),
    d("tls-session-cache-size", "20480", int(0, I32), true),
    later(TLS, "tls-session-cache-timeout", "300", int(0, I32), true),
];

/// Older names Redis 7.0 still accepts for a directive. CONFIG GET lists both
/// names; each reads and writes the same value.
pub static ALIASES: &[(&str, &str)] = &[
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("slaveof", "replicaof"),
    ("slave-serve-stale-data", "replica-serve-stale-data"),
    ("slave-read-only", "replica-read-only"),
    ("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
    ("slave-lazy-flush", "replica-lazy-flush"),
    ("slave-priority", "replica-priority"),
    ("slave-announce-ip", "replica-announce-ip"),
    ("slave-announce-port", "replica-announce-port"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("min-slaves-to-write", "min-replicas-to-write"),
    ("min-slaves-max-lag", "min-replicas-max-lag"),
    (
        "cluster-slave-validity-factor",
        "cluster-replica-validity-factor",
    ),
    ("cluster-slave-no-failover", "cluster-replica-no-failover"),
    ("lua-time-limit", "busy-reply-threshold"),
];

/// Directives only a config file (or the command line) takes, never CONFIG
/// GET/SET: `include` is honoured by the loader; the others name a feature
/// Keel does not have, and are refused with it.
pub static FILE_ONLY_LATER: &[(&str, &str)] =
    &[("rename-command", RENAME), ("loadmodule", MODULES)];

/// Names Redis 7.0 still reads from a file and ignores.
pub static IGNORED: &[&str] = &[
    "list-max-ziplist-entries",
    "list-max-ziplist-value",
    "lua-replicate-commands",
];

/// `client-output-buffer-limit`'s default, in CONFIG GET's form.
pub const COBL_DEFAULT: &str =
    "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";

/// The name Redis reports a directive under when `name` sets it: the alias
/// itself when `name` is one, else the directive's name.
pub fn reported_name(name: &str) -> Option<&'static str> {
    ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
        .map(|(alias, _)| *alias)
        .or_else(|| find(name).map(|d| d.name))
}

pub fn find(name: &str) -> Option<&'static Directive> {
    let canonical = ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
        .map_or(name, |(_, to)| *to);
    DIRECTIVES
        .iter()
        .find(|d| d.name.eq_ignore_ascii_case(canonical))
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("Bad directive or wrong number of arguments")]
    Unknown,
    #[error("wrong number of arguments")]
    WrongArgs,
    #[error("argument couldn't be parsed into an integer")]
    NotInteger,
    #[error("argument must be between {0} and {1} inclusive")]
    OutOfRange(i64, i64),
    #[error("argument must be a memory value")]
    NotMemory,
    #[error("argument must be a memory or percent value")]
    NotMemoryOrPercent,
    #[error("percentage argument must be less or equal to 100")]
    PercentTooHigh,
    #[error("argument couldn't be parsed as an octal number")]
    NotOctal,
    #[error("argument must be 'yes' or 'no'")]
    NotBool,
    #[error("argument(s) must be one of the following: {0}")]
    NotInEnum(String),
    #[error("can't set immutable config")]
    Immutable,
    #[error("{0}")]
    Unsupported(&'static str),
    /// A value that needs a feature Keel does not have yet.
    #[error("{0} is not available in this build of Keel")]
    NotAvailable(&'static str),
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

/// The canonical value of `dir` set to `words`, given its `current` value (some
/// directives change only part of it), with the checks Redis makes on
/// particular directives beyond their kind, and the refusal of values that
/// need a feature Keel does not have.
fn canonical(dir: &Directive, words: &[&str], current: &str) -> Result<String, ConfigError> {
    if dir.name.starts_with("bf-") {
        return canonical_bloom(dir, words);
    }
    let v = match dir.kind {
        Kind::Special => canonical_special(dir.name, words, current)?,
        _ => canonical_kind(dir, words)?,
    };
    let v = match dir.name {
        // Redis clamps hz into its working range rather than refusing it.
        "hz" => v.parse::<i64>().unwrap_or(10).clamp(1, 500).to_string(),
        // "relative" is Redis's other name for "yes".
        "oom-score-adj" if v == "relative" => "yes".into(),
        "latency-tracking-info-percentiles" => canonical_percentiles(&v)?,
        // The files live in `dir`: Redis refuses paths for their names.
        "dbfilename" if v.contains('/') => {
            return Err(ConfigError::Unsupported(
                "dbfilename can't be a path, just a filename",
            ))
        }
        "appendfilename" if v.contains('/') => {
            return Err(ConfigError::Unsupported(
                "appendfilename can't be a path, just a filename",
            ))
        }
        "appenddirname" if v.contains('/') => {
            return Err(ConfigError::Unsupported(
                "appenddirname can't be a path, just a dirname",
            ))
        }
        _ => v,
    };
    if let Class::Later(feature) = dir.class {
        if v != dir.default {
            return Err(ConfigError::NotAvailable(feature));
        }
    }
    Ok(v)
}

fn canonical_special(name: &str, words: &[&str], current: &str) -> Result<String, ConfigError> {
    let raw = words;
    let words: Vec<&str> = words.iter().flat_map(|w| w.split_whitespace()).collect();
    match name {
        "save" => canonical_save(&words),
        "client-output-buffer-limit" => canonical_output_limits(&words, current),
        "oom-score-adj-values" => {
            if words.len() != 3 {
                return Err(ConfigError::WrongArgs);
            }
            let bad = ConfigError::Unsupported(
                "Invalid oom-score-adj-values, elements must be between -2000 and 2000.",
            );
            let mut out = Vec::with_capacity(3);
            for w in &words {
                let n: i64 = w.parse().map_err(|_| bad.clone())?;
                if !(-2000..=2000).contains(&n) {
                    return Err(bad);
                }
                out.push(n.to_string());
            }
            Ok(out.join(" "))
        }
        "notify-keyspace-events" => Ok(crate::notify::state::flags_to_string(notify_flags(raw)?)),
        "replicaof" => match words.as_slice() {
            [] => Ok(String::new()),
            [no, one] if no.eq_ignore_ascii_case("no") && one.eq_ignore_ascii_case("one") => {
                Ok(String::new())
            }
            [host, port] => Ok(format!("{host} {port}")),
            _ => Err(ConfigError::WrongArgs),
        },
        _ => Ok(words.join(" ")),
    }
}

/// The classes a `notify-keyspace-events` value names: one word, each
/// character a class (a space is refused like any other character).
fn notify_flags(words: &[&str]) -> Result<u32, ConfigError> {
    let [word] = words else {
        return Err(ConfigError::WrongArgs);
    };
    crate::notify::state::parse_flags(word).ok_or(ConfigError::Unsupported(
        crate::notify::state::INVALID_CLASS,
    ))
}

/// `save` takes pairs of <seconds> <changes>: seconds >= 1, changes >= 0.
fn canonical_save(words: &[&str]) -> Result<String, ConfigError> {
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

/// `client-output-buffer-limit <class> <hard> <soft> <soft-seconds> ...`
/// changes the classes it names and keeps the others.
fn canonical_output_limits(words: &[&str], current: &str) -> Result<String, ConfigError> {
    // An empty value changes nothing, as in Redis.
    if words.is_empty() {
        return Ok(current.to_string());
    }
    if !words.len().is_multiple_of(4) {
        return Err(ConfigError::Unsupported(
            "Wrong number of arguments in buffer limit configuration.",
        ));
    }
    let mut classes: Vec<(String, [i64; 3])> = current
        .split_whitespace()
        .collect::<Vec<_>>()
        .chunks(4)
        .filter_map(|c| match c {
            [name, h, s, t] => Some((
                name.to_string(),
                [
                    h.parse().unwrap_or(0),
                    s.parse().unwrap_or(0),
                    t.parse().unwrap_or(0),
                ],
            )),
            _ => None,
        })
        .collect();
    for group in words.chunks(4) {
        let name = match group[0].to_ascii_lowercase().as_str() {
            "normal" => "normal",
            "slave" | "replica" => "slave",
            "pubsub" => "pubsub",
            _ => {
                return Err(ConfigError::Unsupported(
                    "Invalid client class specified in buffer limit configuration.",
                ))
            }
        };
        let bad = ConfigError::Unsupported(
            "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
        );
        let hard = parse_memory(group[1])
            .filter(|n| *n >= 0)
            .ok_or(bad.clone())?;
        let soft = parse_memory(group[2])
            .filter(|n| *n >= 0)
            .ok_or(bad.clone())?;
        let secs = group[3]
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or(bad)?;
        match classes.iter_mut().find(|(n, _)| n == name) {
            Some((_, limits)) => *limits = [hard, soft, secs],
            None => classes.push((name.to_string(), [hard, soft, secs])),
        }
    }
    Ok(classes
        .iter()
        .map(|(n, [h, s, t])| format!("{n} {h} {s} {t}"))
        .collect::<Vec<_>>()
        .join(" "))
}

fn canonical_kind(dir: &Directive, words: &[&str]) -> Result<String, ConfigError> {
    let single = || -> Result<&str, ConfigError> {
        match words {
            [w] => Ok(w),
            _ => Err(ConfigError::WrongArgs),
        }
    };
    match dir.kind {
        Kind::Words | Kind::Special => Ok(words
            .iter()
            .flat_map(|w| w.split_whitespace())
            .collect::<Vec<_>>()
            .join(" ")),
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
        Kind::MemoryOrPercent => {
            let w = single()?;
            if let Some(p) = w.strip_suffix('%') {
                let p: i64 = p
                    .parse()
                    .ok()
                    .filter(|p| *p >= 0)
                    .ok_or(ConfigError::NotMemoryOrPercent)?;
                if p > 100 {
                    return Err(ConfigError::PercentTooHigh);
                }
                // Redis prints 0% as plain 0.
                return Ok(if p == 0 { "0".into() } else { format!("{p}%") });
            }
            let v = parse_memory(w)
                .filter(|v| *v >= 0)
                .ok_or(ConfigError::NotMemoryOrPercent)?;
            Ok(v.to_string())
        }
        Kind::Octal => {
            let v = i64::from_str_radix(single()?, 8).map_err(|_| ConfigError::NotOctal)?;
            if !(0..=0o777).contains(&v) {
                return Err(ConfigError::NotOctal);
            }
            Ok(format!("{v:o}"))
        }
    }
}

pub use crate::logging::{
    log_debug, log_enabled, log_notice, log_verbose, log_warning, set_log_verbosity, set_logger,
};

/// The live configuration.
pub struct Config {
    values: RwLock<BTreeMap<&'static str, String>>,
    proto_max_bulk_len: AtomicI64,
    maxclients: AtomicI64,
    query_buffer_limit: AtomicI64,
    idle_timeout_s: AtomicI64,
    compact: RwLock<keel_store::CompactLimits>,
    /// `stream-node-max-bytes` and `stream-node-max-entries`.
    stream_node_bytes: AtomicI64,
    stream_node_entries: AtomicI64,
    /// Operator settings read on every command (slow log, latency monitor).
    pub ops: OpsHot,
    /// `client-output-buffer-limit`, shared with every client's handle.
    pub output_limits: std::sync::Arc<crate::outbuf::OutputLimits>,
    /// `user` lines of the config file, each the user's name and rules,
    /// applied when the engine is built.
    pub acl_users: parking_lot::Mutex<Vec<Vec<String>>>,
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
            stream_node_bytes: AtomicI64::new(4096),
            stream_node_entries: AtomicI64::new(100),
            acl_users: parking_lot::Mutex::new(Vec::new()),
            ops: OpsHot::default(),
            output_limits: Default::default(),
        };
        c.refresh_hot();
        c
    }
}

impl Config {
    /// Set one directive, replacing its value. `startup` allows immutable
    /// directives; CONFIG SET passes false.
    pub fn set(&self, name: &str, words: &[&str], startup: bool) -> Result<(), ConfigError> {
        let dir = find(name).ok_or(ConfigError::Unknown)?;
        if !startup && !dir.mutable {
            return Err(ConfigError::Immutable);
        }
        if words.is_empty() {
            return Err(ConfigError::WrongArgs);
        }
        let v = canonical(dir, words, &self.get(dir.name))?;
        if dir.name == "notify-keyspace-events" {
            // The bits as parsed: `An` keeps `n` though CONFIG GET shows `A`.
            self.ops.notify.set(notify_flags(words)?);
        }
        self.values.write().insert(dir.name, v);
        self.refresh_hot();
        Ok(())
    }

    /// Apply one config file (or command line) line. As in Redis,
    /// `client-output-buffer-limit` lines each set their class, and with
    /// `add_up` `save` lines add their points to those before (`save ""`
    /// clears them). Names Redis ignores are accepted.
    pub fn apply_line(&self, name: &str, words: &[&str], add_up: bool) -> Result<(), ConfigError> {
        if IGNORED.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            return Ok(());
        }
        if name.eq_ignore_ascii_case("user") {
            if words.is_empty() {
                return Err(ConfigError::Unknown);
            }
            self.acl_users
                .lock()
                .push(words.iter().map(|w| w.to_string()).collect());
            return Ok(());
        }
        if let Some((_, feature)) = FILE_ONLY_LATER
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            return Err(ConfigError::NotAvailable(feature));
        }
        let dir = find(name).ok_or(ConfigError::Unknown)?;
        if dir.name == "save" {
            // `save` alone (`--save` with no value) clears the points, as in Redis.
            if words.is_empty() {
                return self.set(dir.name, &[""], true);
            }
            let current = self.get("save");
            let clears = words.iter().all(|w| w.trim().is_empty());
            if add_up && !clears && !current.is_empty() {
                let mut all: Vec<&str> = current.split_whitespace().collect();
                all.extend(words.iter().flat_map(|w| w.split_whitespace()));
                return self.set(dir.name, &all, true);
            }
        }
        self.set(dir.name, words, true)
    }

    /// Check a value without applying it (CONFIG SET validates all pairs first).
    pub fn validate(&self, name: &str, words: &[&str]) -> Result<&'static Directive, ConfigError> {
        let dir = find(name).ok_or(ConfigError::Unknown)?;
        if !dir.mutable {
            return Err(ConfigError::Immutable);
        }
        canonical(dir, words, &self.get(dir.name))?;
        Ok(dir)
    }

    /// Recorded no-op directives set to something other than their default,
    /// with their values: what start-up reports, one line each.
    pub fn noops_changed(&self) -> Vec<(&'static str, String)> {
        DIRECTIVES
            .iter()
            .filter(|d| d.class == Class::NoOp)
            .filter_map(|d| {
                let v = self.get(d.name);
                (v != d.default).then_some((d.name, v))
            })
            .collect()
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
        self.stream_node_bytes
            .store(self.get_i64("stream-node-max-bytes"), Ordering::Relaxed);
        self.stream_node_entries
            .store(self.get_i64("stream-node-max-entries"), Ordering::Relaxed);
        self.output_limits
            .set_from(&self.get("client-output-buffer-limit"));
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

    /// When a stream's block is full (`stream-node-max-*`).
    pub fn stream_limits(&self) -> keel_store::stream::NodeLimits {
        let get = |a: &AtomicI64| u64::try_from(a.load(Ordering::Relaxed)).unwrap_or(0);
        keel_store::stream::NodeLimits {
            max_bytes: get(&self.stream_node_bytes),
            max_entries: get(&self.stream_node_entries),
        }
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

    /// The value CONFIG GET reports: as stored, except `dir`, which Redis
    /// reports as the working directory it is in.
    pub fn reported(&self, name: &str) -> String {
        let value = self.get(name);
        if name == "dir" {
            if let Ok(cwd) = std::env::current_dir() {
                return cwd.to_string_lossy().into_owned();
            }
        }
        value
    }

    /// Every (name, value) whose name matches the glob `pattern`,
    /// case-insensitively, with values as CONFIG GET reports them. Aliases
    /// are listed under their own names too, as Redis does.
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        let values = self.values.read();
        let names = values.iter().map(|(k, v)| (*k, v)).chain(
            ALIASES
                .iter()
                .filter_map(|(alias, to)| values.get(to).map(|v| (*alias, v))),
        );
        let mut found: Vec<(&'static str, String)> = names
            .filter(|(k, _)| keel_store::glob::glob_match(pattern, k.as_bytes(), true))
            .map(|(k, v)| (k, v.clone()))
            .collect();
        drop(values);
        for (k, v) in found.iter_mut() {
            if *k == "dir" {
                *v = self.reported("dir");
            }
        }
        found
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

/// The words of a config file line, split as redis.conf lines are (quotes
/// and escapes), as text; `None` when its quotes are unbalanced.
pub fn line_words(line: &[u8]) -> Option<Vec<String>> {
    keel_resp::split_args(line).map(|words| {
        words
            .iter()
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect()
    })
}

/// Split a value as CONFIG SET received it into the words `Config::set` takes:
/// `bind` splits on spaces, others stay whole (directives of their own syntax
/// split it themselves).
pub fn value_words<'v>(dir: &Directive, value: &'v str) -> Vec<&'v str> {
    match dir.kind {
        // An empty value is one empty word (an empty list), not no words.
        Kind::Words if !value.trim().is_empty() => value.split_whitespace().collect(),
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
    let words: Vec<&str> = match dir.kind {
        Kind::Special => value.split_whitespace().collect(),
        _ => value_words(dir, value),
    };
    if words.is_empty() {
        return format!("{} \"\"", dir.name);
    }
    let quoted: Vec<String> = words.iter().map(|w| quote_word(w)).collect();
    format!("{} {}", dir.name, quoted.join(" "))
}

/// A byte count as Redis's CONFIG REWRITE writes it: in gb, mb or kb when a
/// whole number of them, else in bytes.
fn rewrite_memory(n: i64) -> String {
    for (unit, size) in [("gb", 1i64 << 30), ("mb", 1 << 20), ("kb", 1 << 10)] {
        if n != 0 && n % size == 0 {
            return format!("{}{unit}", n / size);
        }
    }
    n.to_string()
}

/// `client-output-buffer-limit` as Redis rewrites it: one line per class, in
/// the order normal, replica, pubsub, for each class that is not at its
/// default or that takes the place of one of the `old_lines` the file had.
fn output_limit_lines(value: &str, old_lines: usize) -> Vec<String> {
    let groups = |v: &str| -> Vec<Vec<String>> {
        v.split_whitespace()
            .collect::<Vec<_>>()
            .chunks(4)
            .map(|c| c.iter().map(|w| w.to_string()).collect())
            .collect()
    };
    let now = groups(value);
    let defaults = groups(COBL_DEFAULT);
    let mut out = Vec::new();
    for (j, (name, default)) in ["normal", "replica", "pubsub"]
        .iter()
        .zip(&defaults)
        .enumerate()
    {
        let Some(g) = now.get(j).filter(|g| g.len() == 4) else {
            continue;
        };
        if j >= old_lines && g[1..] == default[1..] {
            continue;
        }
        let mem = |w: &str| rewrite_memory(w.parse().unwrap_or(0));
        out.push(format!(
            "client-output-buffer-limit {name} {} {} {}",
            mem(&g[1]),
            mem(&g[2]),
            g[3]
        ));
    }
    out
}

impl Config {
    /// CONFIG REWRITE: `old` (the file's text) with every directive it sets
    /// replaced by its current value, later repeats of a directive dropped, and
    /// directives changed from their defaults appended. Comments, blank lines and
    /// anything unrecognised are kept as they were. `users` are the `user`
    /// lines to write (None when an ACL file holds the users: the file's own
    /// `user` lines are then dropped); as Redis does, they take the places of
    /// the old `user` lines in order, and those left over go last.
    pub fn rewrite_text(&self, old: &str, users: Option<&[String]>) -> String {
        let mut users = users.unwrap_or_default().iter();
        let mut written: Vec<&'static str> = Vec::new();
        let mut out: Vec<String> = Vec::new();
        let directive_of = |line: &str| {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                return None;
            }
            keel_resp::split_args(trimmed.as_bytes())
                .and_then(|w| w.first().cloned())
                .and_then(|name| find(&String::from_utf8_lossy(&name)))
        };
        let cobl_lines = old
            .lines()
            .filter(|l| directive_of(l).is_some_and(|d| d.name == "client-output-buffer-limit"))
            .count();
        // Bytes, not a str slice: a line may start with any UTF-8.
        let is_user = |line: &str| {
            let t = line.trim_start().as_bytes();
            t.len() > 4 && t[..4].eq_ignore_ascii_case(b"user") && t[4] == b' '
        };
        for line in old.lines() {
            if is_user(line) {
                out.extend(users.next().cloned());
                continue;
            }
            match directive_of(line) {
                None => out.push(line.to_string()),
                Some(d) if written.contains(&d.name) => {}
                Some(d) if d.name == "client-output-buffer-limit" => {
                    written.push(d.name);
                    out.extend(output_limit_lines(&self.get(d.name), cobl_lines));
                }
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
            if d.name == "client-output-buffer-limit" {
                out.extend(output_limit_lines(&v, 0));
                continue;
            }
            out.push(directive_line(d, &v));
        }
        for line in users {
            if !header {
                out.push("# Generated by CONFIG REWRITE".into());
                header = true;
            }
            out.push(line.clone());
        }
        let mut text = out.join("\n");
        text.push('\n');
        text
    }
}

/// Copy the eviction directives into the config's hot values.
fn refresh_eviction(config: &Config) {
    let l = &config.ops.evict;
    let policy = crate::evict::state::Policy::parse(&config.get("maxmemory-policy"));
    l.maxmemory
        .store(config.get_i64("maxmemory").max(0) as u64, Ordering::Relaxed);
    l.policy.store(policy as u8, Ordering::Relaxed);
    l.samples.store(
        config.get_i64("maxmemory-samples").clamp(1, 64) as usize,
        Ordering::Relaxed,
    );
    l.tenacity.store(
        config.get_i64("maxmemory-eviction-tenacity").clamp(0, 100) as u64,
        Ordering::Relaxed,
    );
    keel_store::access::set_lfu(
        policy.is_lfu(),
        config
            .get_i64("lfu-log-factor")
            .clamp(0, i64::from(u32::MAX)) as u32,
        config
            .get_i64("lfu-decay-time")
            .clamp(0, i64::from(u32::MAX)) as u32,
    );
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
        assert_eq!(c.set("threads", &["1"], false), Err(ConfigError::Immutable));
        c.set("port", &["1"], false)
            .expect("port changes at run time");
        assert_eq!(
            c.set("maxclients", &["x"], false),
            Err(ConfigError::NotInteger)
        );
        assert_eq!(c.set("nope", &["x"], true), Err(ConfigError::Unknown));
        assert!(c.set("appendfsync", &["sometimes"], false).is_err());
        c.set("save", &["3600", "1"], false).expect("test value");
        assert_eq!(c.get("save"), "3600 1");
        assert_eq!(c.matching(b"maxc*").len(), 1);
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;

    #[test]
    fn loglevel_filters_log_lines() {
        set_log_verbosity("warning");
        assert!(log_enabled('#'));
        assert!(!log_enabled('*'));
        set_log_verbosity("debug");
        assert!(log_enabled('.') && log_enabled('-'));
        set_log_verbosity("notice");
        assert!(log_enabled('*') && !log_enabled('-'));
    }

    #[test]
    fn table_is_consistent() {
        let c = Config::default();
        for (i, d) in DIRECTIVES.iter().enumerate() {
            assert!(
                DIRECTIVES[..i].iter().all(|e| e.name != d.name),
                "{} twice",
                d.name
            );
            // Every default is in canonical form and accepted as it is.
            let words = value_words(d, d.default);
            assert_eq!(
                canonical(d, &words, d.default).as_deref(),
                Ok(d.default),
                "{}",
                d.name
            );
            assert_eq!(c.get(d.name), d.default);
        }
        for (alias, to) in ALIASES {
            assert!(find(alias).is_some_and(|d| d.name == *to), "{alias}");
            assert!(find(to).is_some());
        }
    }

    #[test]
    fn aliases_read_and_write_one_value() {
        let c = Config::default();
        c.set("hash-max-ziplist-value", &["100"], false)
            .expect("alias");
        assert_eq!(c.get("hash-max-listpack-value"), "100");
        assert_eq!(c.compact_limits().hash_value, 100);
        let got = c.matching(b"hash-max-*");
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got.contains(&("hash-max-ziplist-value", "100".to_string())));
        c.set("list-max-ziplist-size", &["-3"], false)
            .expect("alias");
        assert_eq!(c.compact_limits().list_size, -3);
        assert_eq!(c.matching(b"*").len(), DIRECTIVES.len() + ALIASES.len());
    }

    #[test]
    fn later_features_accept_only_values_that_ask_nothing_of_them() {
        let c = Config::default();
        for (name, ok) in [
            ("appendonly", "no"),
            ("activedefrag", "no"),
            ("tls-replication", "no"),
        ] {
            c.set(name, &[ok], false).expect(name);
        }
        for (name, bad, feature) in [
            ("tls-replication", "yes", TLS),
            ("activedefrag", "yes", DEFRAG),
        ] {
            assert_eq!(
                c.set(name, &[bad], false),
                Err(ConfigError::NotAvailable(feature)),
                "{name} {bad}"
            );
        }
        assert_eq!(
            ConfigError::NotAvailable(DEFRAG).to_string(),
            "active defragmentation is not available in this build of Keel"
        );
        // Validation comes first, with Redis's texts.
        assert_eq!(
            c.set("maxmemory", &["x"], false),
            Err(ConfigError::NotMemory)
        );
        assert_eq!(
            c.set("maxmemory-clients", &["101%"], false),
            Err(ConfigError::PercentTooHigh)
        );
        assert_eq!(
            c.set("notify-keyspace-events", &["Q"], false)
                .map_err(|e| e.to_string()),
            Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into())
        );
        assert_eq!(
            c.set("tls-port", &["70000"], false),
            Err(ConfigError::OutOfRange(0, 65535))
        );
        assert_eq!(c.set("replicaof", &["no", "one"], true), Ok(()));
        assert_eq!(c.set("replicaof", &["127.0.0.1", "6379"], true), Ok(()));
        assert_eq!(c.get("replicaof"), "127.0.0.1 6379");
        assert_eq!(
            c.set("replicaof", &["x"], true),
            Err(ConfigError::WrongArgs)
        );
    }

    #[test]
    fn noops_keep_their_values_and_are_listed_when_changed() {
        let c = Config::default();
        assert!(c.noops_changed().is_empty());
        c.set("list-compress-depth", &["3"], false).expect("noop");
        c.set("activerehashing", &["NO"], false).expect("noop");
        c.set("always-show-logo", &["yes"], true).expect("noop");
        assert_eq!(c.get("list-compress-depth"), "3");
        assert_eq!(
            c.noops_changed(),
            vec![
                ("always-show-logo", "yes".to_string()),
                ("activerehashing", "no".to_string()),
                ("list-compress-depth", "3".to_string()),
            ]
        );
        assert_eq!(
            c.set("jemalloc-bg-thread", &["x"], false),
            Err(ConfigError::NotBool)
        );
        assert_eq!(
            c.set("list-compress-depth", &["-1"], false),
            Err(ConfigError::OutOfRange(0, I32))
        );
        c.set("oom-score-adj-values", &["0 1 2000"], false)
            .expect("noop");
        assert_eq!(c.get("oom-score-adj-values"), "0 1 2000");
        assert!(c.set("oom-score-adj-values", &["0 1 2001"], false).is_err());
        assert_eq!(
            c.set("oom-score-adj-values", &["0 1"], false),
            Err(ConfigError::WrongArgs)
        );
    }

    #[test]
    fn output_limits_change_only_the_classes_named() {
        let c = Config::default();
        c.apply_line(
            "client-output-buffer-limit",
            &["normal", "0", "0", "0"],
            true,
        )
        .expect("default class");
        c.apply_line(
            "client-output-buffer-limit",
            &["replica", "256mb", "64mb", "60"],
            true,
        )
        .expect("default class");
        assert_eq!(c.get("client-output-buffer-limit"), COBL_DEFAULT);
        let err = |v: &str| {
            c.set("client-output-buffer-limit", &[v], false)
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            err("normal 1 2"),
            Err("Wrong number of arguments in buffer limit configuration.".into())
        );
        assert_eq!(
            err("foo 1 2 3"),
            Err("Invalid client class specified in buffer limit configuration.".into())
        );
        assert_eq!(
            err("normal -1 2 3"),
            Err(
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.".into()
            )
        );
        for bad in [
            "normal 1.5mb 1 1",
            "normal 1 1 1x",
            "normal 1 1 -1",
            "normal 1x 1 1",
        ] {
            assert!(
                err(bad).expect_err(bad).starts_with("Error in hard"),
                "{bad}"
            );
        }
        assert!(err("master 1 1 1").is_err());
        // Nothing changes when any group is wrong.
        assert!(err("normal 1 1 1 foo 1 1 1").is_err());
        assert_eq!(c.get("client-output-buffer-limit"), COBL_DEFAULT);
        assert_eq!(err("pubsub 1mb 256kb 2"), Ok(()));
        assert_eq!(err("replica 1gb 1 0 normal 1k 2K 3"), Ok(()));
        assert_eq!(err(""), Ok(()));
        assert_eq!(
            c.get("client-output-buffer-limit"),
            "normal 1000 2000 3 slave 1073741824 1 0 pubsub 1048576 262144 2"
        );
        // The limits in force follow.
        use crate::outbuf::{NORMAL, PUBSUB};
        assert_eq!(c.output_limits.get(NORMAL), (1000, 2000, 3));
        assert_eq!(c.output_limits.get(PUBSUB), (1048576, 262144, 2));
    }

    #[test]
    fn file_lines_add_up_and_file_only_names_are_handled() {
        let c = Config::default();
        // The first line replaces the default points (the loader passes
        // add_up = false for it); later ones add up.
        c.apply_line("save", &["3600", "1"], false).expect("save");
        c.apply_line("save", &["300", "100"], true).expect("save");
        assert_eq!(c.get("save"), "3600 1 300 100");
        c.apply_line("save", &[""], true).expect("save");
        assert_eq!(c.get("save"), "");
        c.apply_line("save", &["60", "1"], true).expect("save");
        c.apply_line("save", &[], true).expect("save alone");
        assert_eq!(c.get("save"), "");
        c.apply_line("list-max-ziplist-entries", &["512"], true)
            .expect("ignored");
        assert_eq!(
            c.apply_line("rename-command", &["FLUSHALL", ""], true),
            Err(ConfigError::NotAvailable(RENAME))
        );
        assert_eq!(
            c.apply_line("nosuch", &["1"], true),
            Err(ConfigError::Unknown)
        );
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
        assert!(c.validate("appendonly", &["yes"]).is_ok());
        assert!(c.validate("appendonly", &["no"]).is_ok());
        assert_eq!(
            c.validate("dbfilename", &["a/b.rdb"]).err(),
            Some(ConfigError::Unsupported(
                "dbfilename can't be a path, just a filename"
            ))
        );
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
    fn rewrite_writes_output_limits_a_class_a_line() {
        let c = Config::default();
        // At the defaults nothing is appended.
        assert!(!c.rewrite_text("port 1\n", None).contains("client-output"));
        c.set(
            "client-output-buffer-limit",
            &["pubsub 1mb 256kb 2 normal 1000 1024 0"],
            false,
        )
        .expect("limits");
        assert_eq!(
            c.rewrite_text("port 1\n", None),
            "port 6379\n# Generated by CONFIG REWRITE\n\
             client-output-buffer-limit normal 1000 1kb 0\n\
             client-output-buffer-limit pubsub 1mb 256kb 2\n"
        );
        // Lines the file had are each taken by a class, default or not.
        let old = "client-output-buffer-limit normal 0 0 0\nport 1\n\
                   client-output-buffer-limit pubsub 32mb 8mb 60\n";
        c.set("client-output-buffer-limit", &["normal 0 0 0"], false)
            .expect("limits");
        assert_eq!(
            c.rewrite_text(old, None),
            "client-output-buffer-limit normal 0 0 0\n\
             client-output-buffer-limit replica 256mb 64mb 60\n\
             client-output-buffer-limit pubsub 1mb 256kb 2\nport 6379\n"
        );
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
        let new = c.rewrite_text(old, None);
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
        assert_eq!(empty.rewrite_text("save \"\"\n", None), "save 60 1\n");
        // A line whose fourth byte falls inside a character is kept as is.
        let users = ["user u on".to_string()];
        assert_eq!(
            empty.rewrite_text("# é\nüsér x\nuser old off\n", Some(&users)),
            "# é\nüsér x\nuser u on\n# Generated by CONFIG REWRITE\nsave 60 1\n"
        );
        empty.set("save", &[""], false).expect("test value");
        assert_eq!(empty.rewrite_text("save 60 1\n", None), "save \"\"\n");
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
    /// `busy-reply-threshold` (alias `lua-time-limit`) in milliseconds.
    pub busy_reply_ms: AtomicI64,
    /// The classes of `notify-keyspace-events`.
    pub notify: crate::notify::state::Notifications,
    /// DEBUG SET-ACTIVE-EXPIRE 0: the active expiry cycle does not run.
    pub active_expire_off: std::sync::atomic::AtomicBool,
    /// `tracking-table-max-keys`; 0 means no limit.
    pub tracking_max_keys: AtomicI64,
    /// `maxmemory` and the eviction settings.
    pub evict: crate::evict::state::Limits,
    /// `hll-sparse-max-bytes`: past it a sparse HyperLogLog becomes dense.
    pub hll_sparse_max_bytes: AtomicI64,
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
        o.busy_reply_ms
            .store(self.get_i64("busy-reply-threshold"), Ordering::Relaxed);
        o.tracking_max_keys
            .store(self.get_i64("tracking-table-max-keys"), Ordering::Relaxed);
        o.hll_sparse_max_bytes
            .store(self.get_i64("hll-sparse-max-bytes"), Ordering::Relaxed);
        refresh_eviction(self);
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

#[cfg(test)]
mod read_back_tests {
    use super::*;
    use proptest::prelude::*;

    /// Words a config line might carry: the shapes directives expect, and noise.
    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "yes",
                "no",
                "",
                "0",
                "-1",
                "1",
                "512",
                "3600",
                "100mb",
                "1gb",
                "2k",
                "normal",
                "replica",
                "slave",
                "pubsub",
                "KEA",
                "Ex",
                "everysec",
                "always",
                "99.9",
                "50",
                "allkeys-lru",
                "notice",
                "local",
                "relative",
                "\"",
                "1e-5",
            ])
            .prop_map(str::to_string),
            "[a-z0-9.%-]{0,6}",
            any::<i64>().prop_map(|n| n.to_string()),
        ]
    }

    proptest! {
        // Every directive gets a few dozen tries.
        #![proptest_config(ProptestConfig::with_cases(6000))]

        /// Whatever a config line sets, CONFIG GET shows a value that sets the
        /// same thing again: canonical values are fixed points, so CONFIG
        /// REWRITE and a restart from the rewritten file change nothing.
        #[test]
        fn an_accepted_value_reads_back_as_itself(
            idx in 0..DIRECTIVES.len(),
            words in prop::collection::vec(word(), 0..5),
        ) {
            let c = Config::default();
            let dir = &DIRECTIVES[idx];
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            if c.apply_line(dir.name, &words, false).is_ok() {
                let shown = c.get(dir.name);
                let again = value_words(dir, &shown);
                prop_assert!(
                    c.set(dir.name, &again, true).is_ok(),
                    "{} {:?}: '{}' is refused when set back", dir.name, words, shown
                );
                prop_assert_eq!(c.get(dir.name), shown, "{} {:?}", dir.name, words);
            }
        }
    }
}
