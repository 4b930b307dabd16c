//! Server commands: INFO, DBSIZE, FLUSHDB, FLUSHALL, CONFIG, TIME, LASTSAVE, DEBUG,
//! MEMORY, SHUTDOWN, SWAPDB, and the cron sampling behind INFO's rates and peak.

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::config;
use keel_engine::ctx::Ctx;
use keel_engine::engine::Engine;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::Value;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

pub static COMMANDS: &[&CommandSpec] = &[
    &DBSIZE, &FLUSHDB, &FLUSHALL, &INFO, &CONFIG, &TIME, &LASTSAVE, &SWAPDB, &SHUTDOWN, &DEBUG,
    &MEMORY,
];

pub(crate) const DBSIZE: CommandSpec = CommandSpec {
    name: "DBSIZE",
    group: Group::Server,
    arity: 1,
    flags: Flags::READONLY.union(Flags::FAST).union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "Returns the number of keys in the database.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: dbsize,
};

fn dbsize(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let db = ctx.db();
    let mut n = 0usize;
    ctx.for_each_shard(|s| n += s.db_ref(db).len());
    Ok(Frame::Integer(n as i64))
}

/// Parse the optional ASYNC|SYNC of FLUSHDB/FLUSHALL. Both free memory before
/// replying in Keel, which satisfies either promise.
fn flush_mode(args: &mut Args<'_>) -> Result<(), CmdError> {
    match args.next_opt() {
        None => Ok(()),
        Some(a) if is(a, "ASYNC") || is(a, "SYNC") => args.finish(),
        Some(_) => Err(CmdError::Syntax),
    }
}

/// Before databases change wholesale, invalidate WATCHes on keys that exist in
/// a changing database (`changes`) or in the database replacing it (`replaced_by`).
/// A watched key that exists on neither side is unaffected, as in Redis.
fn touch_existing(
    ctx: &mut Ctx<'_>,
    changes: impl Fn(usize) -> bool,
    replaced_by: impl Fn(usize) -> Option<usize>,
) {
    let engine = ctx.engine;
    let now = ctx.now_ms();
    engine.watches.touch_where(|db, key| {
        if !changes(db) {
            return false;
        }
        let mut exists = |d: usize| ctx.table_in(d, key).is_ok_and(|t| t.contains(key, now));
        exists(db) || replaced_by(db).is_some_and(exists)
    });
}

pub(crate) const FLUSHDB: CommandSpec = CommandSpec {
    name: "FLUSHDB",
    group: Group::Server,
    arity: -1,
    flags: Flags::WRITE.union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "Remove all keys from the current database.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of keys in the selected database",
    subcommands: &[],
    run: flushdb,
};

fn flushdb(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    flush_mode(args)?;
    let db = ctx.db();
    touch_existing(ctx, |d| d == db, |_| None);
    ctx.engine.tracking.flushed(ctx.engine);
    let mut n = 0;
    ctx.for_each_shard(|s| n += s.db(db).clear());
    ctx.dirty(n as u64 + 1);
    Ok(Frame::ok())
}

pub(crate) const FLUSHALL: CommandSpec = CommandSpec {
    name: "FLUSHALL",
    group: Group::Server,
    arity: -1,
    flags: Flags::WRITE.union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "Removes all keys from all databases.",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of keys in all databases",
    subcommands: &[],
    run: flushall,
};

fn flushall(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    flush_mode(args)?;
    touch_existing(ctx, |_| true, |_| None);
    ctx.engine.tracking.flushed(ctx.engine);
    let mut n = 0;
    ctx.for_each_shard(|s| {
        for db in 0..s.databases() {
            n += s.db(db).clear();
        }
    });
    ctx.dirty(n as u64);
    // As Redis does, with save points set the emptied dataset is saved at
    // once (stopping a background save of the old one).
    if !ctx.engine.config.get("save").is_empty() {
        let _ = keel_engine::persistence::snapshot::save_foreground(ctx);
    }
    ctx.dirty(1);
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------
// INFO

/// INFO's sections in the order Redis prints them.
const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

/// Sections that INFO without arguments (or `INFO default`) leaves out.
const NOT_DEFAULT: &[&str] = &["commandstats", "latencystats"];

pub(crate) const INFO: CommandSpec = CommandSpec {
    name: "INFO",
    group: Group::Server,
    arity: -1,
    flags: Flags::LOADING.union(Flags::STALE).union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "Returns information and statistics about the server.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: info,
};

fn info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let mut wanted = [false; SECTIONS.len()];
    let defaults = |w: &mut [bool]| {
        for (i, s) in SECTIONS.iter().enumerate() {
            w[i] |= !NOT_DEFAULT.contains(s);
        }
    };
    if args.is_empty() {
        defaults(&mut wanted);
    }
    for a in args.rest() {
        if is(a, "all") || is(a, "everything") {
            wanted = [true; SECTIONS.len()];
        } else if is(a, "default") {
            defaults(&mut wanted);
        } else if let Some(i) = SECTIONS.iter().position(|s| is(a, s)) {
            wanted[i] = true;
        }
        // Redis ignores section names it does not know.
    }
    let text = info_text(ctx, &wanted);
    Ok(Frame::Verbatim("txt", Bytes::from(text)))
}

/// Append `name:value\r\n`.
macro_rules! field {
    ($out:expr, $name:expr, $($val:tt)+) => {{
        let _ = write!($out, "{}:", $name);
        let _ = write!($out, $($val)+);
        $out.push_str("\r\n");
    }};
}

fn info_text(ctx: &mut Ctx<'_>, wanted: &[bool]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (i, name) in SECTIONS.iter().enumerate() {
        if !wanted.get(i).copied().unwrap_or(false) {
            continue;
        }
        let mut out = String::new();
        match *name {
            "server" => info_server(ctx, &mut out),
            "clients" => info_clients(ctx.engine, &mut out),
            "memory" => info_memory(ctx, &mut out),
            "persistence" => info_persistence(ctx.engine, &mut out),
            "stats" => info_stats(ctx.engine, &mut out),
            "replication" => info_replication(ctx.engine, &mut out),
            "cpu" => info_cpu(&mut out),
            "modules" => out.push_str("# Modules\r\n"),
            "commandstats" => info_commandstats(ctx.engine, &mut out),
            "errorstats" => crate::operator::info_errorstats(ctx.engine, &mut out),
            "latencystats" => crate::operator::info_latencystats(ctx.engine, &mut out),
            "cluster" => {
                out.push_str("# Cluster\r\n");
                field!(out, "cluster_enabled", "0");
            }
            _ => info_keyspace(ctx, &mut out),
        }
        parts.push(out);
    }
    parts.join("\r\n")
}

fn info_server(ctx: &Ctx<'_>, out: &mut String) {
    let e = ctx.engine;
    let now_ms = ctx.now_ms();
    let uptime = now_ms.saturating_sub(e.start_ms) / 1000;
    let hz = e.config.get_i64("hz").clamp(1, 500);
    out.push_str("# Server\r\n");
    field!(
        out,
        "redis_version",
        "{}",
        keel_engine::version::REDIS_VERSION
    );
    field!(out, "keel_version", "{}", env!("CARGO_PKG_VERSION"));
    field!(out, "redis_git_sha1", "00000000");
    field!(out, "redis_git_dirty", "0");
    field!(out, "redis_build_id", "{}", build_id());
    field!(out, "redis_mode", "standalone");
    field!(out, "os", "{}", os_name());
    field!(out, "arch_bits", "{}", usize::BITS);
    field!(out, "monotonic_clock", "POSIX clock_gettime");
    field!(out, "multiplexing_api", "epoll");
    field!(out, "atomicvar_api", "c11-builtin");
    // Redis prints its C compiler's version, 0.0.0 when not built by GCC.
    field!(out, "gcc_version", "0.0.0");
    field!(out, "process_id", "{}", std::process::id());
    field!(out, "process_supervised", "no");
    field!(out, "run_id", "{}", e.run_id);
    field!(out, "tcp_port", "{}", e.tcp_port.load(Ordering::Relaxed));
    field!(out, "server_time_usec", "{}", e.clock.now_us());
    field!(out, "uptime_in_seconds", "{uptime}");
    field!(out, "uptime_in_days", "{}", uptime / 86_400);
    field!(out, "hz", "{hz}");
    field!(out, "configured_hz", "{hz}");
    // Redis's LRU clock: seconds, wrapped at 24 bits.
    field!(out, "lru_clock", "{}", (now_ms / 1000) & ((1 << 24) - 1));
    field!(out, "executable", "{}", e.executable);
    field!(out, "config_file", "{}", e.config_file);
    field!(out, "io_threads_active", "0");
}

/// A build id as Redis prints one (hex digits), derived from Keel's version.
fn build_id() -> String {
    let h = env!("CARGO_PKG_VERSION")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    format!("{:x}", h >> 4)
}

/// `Linux 6.1.0 x86_64`, as Redis prints uname's sysname, release and machine.
fn os_name() -> String {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let mut sys = read("/proc/sys/kernel/ostype");
    if sys.is_empty() {
        sys = std::env::consts::OS.to_string();
    }
    let release = read("/proc/sys/kernel/osrelease");
    [sys, release, std::env::consts::ARCH.to_string()]
        .iter()
        .filter(|s| !s.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" ")
}

fn info_clients(e: &Engine, out: &mut String) {
    out.push_str("# Clients\r\n");
    field!(
        out,
        "connected_clients",
        "{}",
        e.stats.connected_clients.load(Ordering::Relaxed)
    );
    field!(out, "cluster_connections", "0");
    field!(out, "maxclients", "{}", e.config.maxclients());
    let (max_in, max_out) = e.clients.lock().values().fold((0, 0), |(i, o), h| {
        let b = &h.bufs;
        let get = |v: &std::sync::atomic::AtomicUsize| v.load(Ordering::Relaxed);
        (
            i.max(get(&b.qbuf_peak).max(get(&b.qbuf))),
            o.max(get(&b.out_peak).max(get(&b.out_pending))),
        )
    });
    field!(out, "client_recent_max_input_buffer", "{max_in}");
    field!(out, "client_recent_max_output_buffer", "{max_out}");
    field!(
        out,
        "blocked_clients",
        "{}",
        e.blocking.blocked_clients() + e.pause.waiting()
    );
    field!(out, "tracking_clients", "{}", e.tracking.counts().0);
    field!(out, "clients_in_timeout_table", "0");
}

/// Redis's human-readable byte counts: `512B`, `1.50K`, `2.00M`, ...
pub fn human_bytes(n: u64) -> String {
    const UNITS: &[(u32, &str)] = &[(50, "P"), (40, "T"), (30, "G"), (20, "M"), (10, "K")];
    if n >= 1 << 60 {
        return format!("{n}B");
    }
    for &(shift, unit) in UNITS {
        if n >= 1u64 << shift {
            return format!("{:.2}{unit}", n as f64 / (1u64 << shift) as f64);
        }
    }
    format!("{n}B")
}

/// A `Key: 123 kB` line of a /proc file, in bytes.
fn proc_kb(path: &str, key: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines().find_map(|l| {
                let rest = l.strip_prefix(key)?.strip_prefix(':')?;
                rest.split_whitespace().next()?.parse::<u64>().ok()
            })
        })
        .map_or(0, |kb| kb * 1024)
}

/// Current allocation and its peak, updating the peak.
fn memory_now(e: &Engine) -> (u64, u64) {
    let used = (e.used_memory)();
    let peak = e
        .stats
        .memory_peak
        .fetch_max(used, Ordering::Relaxed)
        .max(used);
    (used, peak)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Where `used_memory` goes, as INFO memory and MEMORY STATS report it.
struct MemoryOverview {
    used: u64,
    peak: u64,
    rss: u64,
    startup: u64,
    clients_normal: u64,
    aof_buffer: u64,
    lua_caches: u64,
    functions_caches: u64,
    /// Per database: keys, key-table overhead, deadline-index overhead.
    per_db: Vec<(u64, u64, u64)>,
}

impl MemoryOverview {
    fn take(ctx: &mut Ctx<'_>) -> MemoryOverview {
        let e = ctx.engine;
        let (used, peak) = memory_now(e);
        let mut per_db = vec![(0u64, 0u64, 0u64); e.databases()];
        let mut add = |s: &mut keel_store::Shard| {
            for (db, c) in per_db.iter_mut().enumerate().take(s.databases()) {
                let t = s.db_ref(db);
                let expires = t.expires_overhead_bytes() as u64;
                c.0 += t.len() as u64;
                c.1 += (t.overhead_bytes() as u64).saturating_sub(expires);
                c.2 += expires;
            }
        };
        if ctx.guards.indices().is_empty() {
            // Holding no shard, take each in turn.
            for i in 0..e.keyspace.shard_count() {
                add(&mut e.keyspace.lock(i));
            }
        } else {
            // Inside a transaction or script: only the shards it holds.
            ctx.for_each_shard(add);
        }
        let sc = &e.scripting;
        MemoryOverview {
            used,
            peak,
            rss: proc_kb("/proc/self/status", "VmRSS"),
            startup: e.stats.memory_startup.load(Ordering::Relaxed),
            clients_normal: client_memory_normal(e),
            aof_buffer: e.persist.aof.buffered_bytes(),
            lua_caches: sc.script_bytes(),
            functions_caches: function_bytes(e),
            per_db,
        }
    }

    fn keys(&self) -> u64 {
        self.per_db.iter().map(|c| c.0).sum()
    }

    /// Redis's overhead: the empty server, clients, buffers, caches and the
    /// key tables; the rest is the dataset.
    fn overhead(&self) -> u64 {
        self.startup
            + self.clients_normal
            + self.aof_buffer
            + self.lua_caches
            + self.functions_caches
            + self.per_db.iter().map(|c| c.1 + c.2).sum::<u64>()
    }

    fn dataset(&self) -> u64 {
        self.used.saturating_sub(self.overhead())
    }

    fn dataset_percent(&self) -> f64 {
        ratio(self.dataset(), self.used.saturating_sub(self.startup)) * 100.0
    }
}

fn info_memory(ctx: &mut Ctx<'_>, out: &mut String) {
    let m = MemoryOverview::take(ctx);
    let e = ctx.engine;
    let (used, peak, rss) = (m.used, m.peak, m.rss);
    let total = proc_kb("/proc/meminfo", "MemTotal");
    out.push_str("# Memory\r\n");
    field!(out, "used_memory", "{used}");
    field!(out, "used_memory_human", "{}", human_bytes(used));
    field!(out, "used_memory_rss", "{rss}");
    field!(out, "used_memory_rss_human", "{}", human_bytes(rss));
    field!(out, "used_memory_peak", "{peak}");
    field!(out, "used_memory_peak_human", "{}", human_bytes(peak));
    field!(
        out,
        "used_memory_peak_perc",
        "{:.2}%",
        ratio(used, peak) * 100.0
    );
    field!(out, "used_memory_overhead", "{}", m.overhead());
    field!(out, "used_memory_startup", "{}", m.startup);
    field!(out, "used_memory_dataset", "{}", m.dataset());
    field!(
        out,
        "used_memory_dataset_perc",
        "{:.2}%",
        m.dataset_percent()
    );
    // Keel's allocator reports no page-level figures: what it has allocated
    // is `used_memory`, and what is resident is the process's RSS.
    field!(out, "allocator_allocated", "{used}");
    field!(out, "allocator_active", "{used}");
    field!(out, "allocator_resident", "{rss}");
    field!(out, "total_system_memory", "{total}");
    field!(out, "total_system_memory_human", "{}", human_bytes(total));
    info_script_memory(e, out);
    let maxmemory = e.config.ops.evict.maxmemory();
    field!(out, "maxmemory", "{maxmemory}");
    field!(out, "maxmemory_human", "{}", human_bytes(maxmemory));
    field!(
        out,
        "maxmemory_policy",
        "{}",
        e.config.get("maxmemory-policy")
    );
    field!(out, "allocator_frag_ratio", "1.00");
    field!(out, "allocator_frag_bytes", "0");
    field!(out, "allocator_rss_ratio", "{:.2}", ratio(rss, used));
    field!(out, "allocator_rss_bytes", "{}", rss as i64 - used as i64);
    field!(out, "rss_overhead_ratio", "1.00");
    field!(out, "rss_overhead_bytes", "0");
    field!(out, "mem_fragmentation_ratio", "{:.2}", ratio(rss, used));
    field!(
        out,
        "mem_fragmentation_bytes",
        "{}",
        rss as i64 - used as i64
    );
    field!(
        out,
        "mem_not_counted_for_evict",
        "{}",
        keel_engine::evict::not_counted(e)
    );
    field!(out, "mem_replication_backlog", "0");
    field!(out, "mem_total_replication_buffers", "0");
    field!(out, "mem_clients_slaves", "0");
    field!(out, "mem_clients_normal", "{}", m.clients_normal);
    field!(out, "mem_cluster_links", "0");
    field!(out, "mem_aof_buffer", "{}", m.aof_buffer);
    field!(out, "mem_allocator", "mimalloc");
    field!(out, "active_defrag_running", "0");
    field!(out, "lazyfree_pending_objects", "0");
    field!(out, "lazyfreed_objects", "0");
}

/// The bytes FUNCTION's libraries hold: their code and their functions.
fn function_bytes(e: &Engine) -> u64 {
    let reg = e.scripting.functions.read();
    reg.libraries
        .values()
        .map(|l| l.code.len() as u64 + 64 * (l.functions.len() as u64 + 1))
        .sum()
}

/// The Lua VMs (one per worker thread here), cached scripts and libraries.
fn info_script_memory(e: &Engine, out: &mut String) {
    let sc = &e.scripting;
    let vm = sc.host().map_or(0, |h| h.vm_memory());
    let scripts = sc.script_bytes();
    let libs_bytes = function_bytes(e);
    let (functions, libraries) = {
        let reg = sc.functions.read();
        (reg.function_count(), reg.libraries.len())
    };
    field!(out, "used_memory_lua", "{vm}");
    field!(out, "used_memory_vm_eval", "{vm}");
    field!(out, "used_memory_lua_human", "{}", human_bytes(vm));
    field!(out, "used_memory_scripts_eval", "{scripts}");
    field!(out, "number_of_cached_scripts", "{}", sc.script_count());
    field!(out, "number_of_functions", "{functions}");
    field!(out, "number_of_libraries", "{libraries}");
    field!(out, "used_memory_vm_functions", "0");
    field!(out, "used_memory_vm_total", "{vm}");
    field!(out, "used_memory_vm_total_human", "{}", human_bytes(vm));
    field!(out, "used_memory_functions", "{libs_bytes}");
    field!(out, "used_memory_scripts", "{}", scripts + libs_bytes);
    field!(
        out,
        "used_memory_scripts_human",
        "{}",
        human_bytes(scripts + libs_bytes)
    );
}

/// What the clients' connections hold (their buffers and structures), a part
/// of `used_memory` like in Redis; Keel has no replicas.
fn client_memory_normal(e: &Engine) -> u64 {
    e.clients
        .lock()
        .values()
        .map(|h| keel_engine::clients::client_memory(h) as u64)
        .sum()
}

fn info_persistence(e: &Engine, out: &mut String) {
    use keel_engine::persistence::snapshot::JobKind;
    let p = &e.persist;
    let st = &p.stats;
    let job = p
        .job
        .lock()
        .as_ref()
        .map(|j| (j.kind, j.started.elapsed().as_secs()));
    let running = |k: JobKind| job.is_some_and(|(kind, _)| kind == k);
    let age = |k: JobKind| match job {
        Some((kind, secs)) if kind == k => secs as i64,
        _ => -1,
    };
    let ok = |b: &std::sync::atomic::AtomicBool| {
        if b.load(Ordering::Relaxed) {
            "ok"
        } else {
            "err"
        }
    };
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    out.push_str("# Persistence\r\n");
    field!(
        out,
        "loading",
        "{}",
        u8::from(p.loading.load(Ordering::Relaxed))
    );
    field!(out, "async_loading", "0");
    // No fork, so no copy-on-write of pages; the side copies of entries
    // changed during a snapshot are what Keel holds instead.
    field!(out, "current_cow_peak", "0");
    field!(out, "current_cow_size", "0");
    field!(out, "current_cow_size_age", "0");
    field!(out, "current_fork_perc", "0.00");
    field!(out, "current_save_keys_processed", "0");
    field!(out, "current_save_keys_total", "0");
    field!(
        out,
        "rdb_changes_since_last_save",
        "{}",
        e.stats.dirty().saturating_sub(load(&p.dirty_at_save))
    );
    field!(
        out,
        "rdb_bgsave_in_progress",
        "{}",
        u8::from(running(JobKind::Bgsave))
    );
    field!(
        out,
        "rdb_last_save_time",
        "{}",
        e.last_save_s.load(Ordering::Relaxed)
    );
    field!(
        out,
        "rdb_last_bgsave_status",
        "{}",
        ok(&st.rdb_last_bgsave_ok)
    );
    field!(
        out,
        "rdb_last_bgsave_time_sec",
        "{}",
        st.rdb_last_bgsave_time_sec.load(Ordering::Relaxed)
    );
    field!(
        out,
        "rdb_current_bgsave_time_sec",
        "{}",
        age(JobKind::Bgsave)
    );
    field!(out, "rdb_saves", "{}", load(&st.rdb_saves));
    field!(out, "rdb_last_cow_size", "0");
    field!(
        out,
        "rdb_last_load_keys_expired",
        "{}",
        load(&st.load_keys_expired)
    );
    field!(
        out,
        "rdb_last_load_keys_loaded",
        "{}",
        load(&st.load_keys_loaded)
    );
    field!(
        out,
        "aof_enabled",
        "{}",
        u8::from(e.config.get_bool("appendonly"))
    );
    field!(
        out,
        "aof_rewrite_in_progress",
        "{}",
        u8::from(running(JobKind::Rewrite))
    );
    field!(
        out,
        "aof_rewrite_scheduled",
        "{}",
        u8::from(p.rewrite_scheduled.load(Ordering::Relaxed))
    );
    field!(
        out,
        "aof_last_rewrite_time_sec",
        "{}",
        st.aof_last_rewrite_time_sec.load(Ordering::Relaxed)
    );
    field!(
        out,
        "aof_current_rewrite_time_sec",
        "{}",
        age(JobKind::Rewrite)
    );
    field!(
        out,
        "aof_last_bgrewrite_status",
        "{}",
        ok(&st.aof_last_rewrite_ok)
    );
    field!(out, "aof_rewrites", "{}", load(&st.aof_rewrites));
    field!(
        out,
        "aof_rewrites_consecutive_failures",
        "{}",
        load(&st.aof_rewrites_consecutive_failures)
    );
    field!(
        out,
        "aof_last_write_status",
        "{}",
        ok(&p.aof.stats.last_write_ok)
    );
    field!(out, "aof_last_cow_size", "0");
    field!(out, "module_fork_in_progress", "0");
    field!(out, "module_fork_last_cow_size", "0");
    if p.aof.on() {
        let a = &p.aof.stats;
        let base = load(&a.base_size);
        field!(out, "aof_current_size", "{}", base + load(&a.current_size));
        field!(out, "aof_base_size", "{}", base);
        field!(
            out,
            "aof_pending_rewrite",
            "{}",
            u8::from(p.rewrite_scheduled.load(Ordering::Relaxed))
        );
        field!(out, "aof_buffer_length", "0");
        field!(out, "aof_pending_bio_fsync", "0");
        field!(out, "aof_delayed_fsync", "{}", load(&a.delayed_fsync));
    }
}

fn info_stats(e: &Engine, out: &mut String) {
    let st = &e.stats;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let [ops, input, output] = st.rates.per_second();
    out.push_str("# Stats\r\n");
    field!(
        out,
        "total_connections_received",
        "{}",
        load(&st.total_connections)
    );
    field!(out, "total_commands_processed", "{}", st.total_commands());
    field!(out, "instantaneous_ops_per_sec", "{}", ops.round() as u64);
    field!(
        out,
        "total_net_input_bytes",
        "{}",
        load(&st.net_input_bytes)
    );
    field!(
        out,
        "total_net_output_bytes",
        "{}",
        load(&st.net_output_bytes)
    );
    field!(out, "total_net_repl_input_bytes", "0");
    field!(out, "total_net_repl_output_bytes", "0");
    field!(out, "instantaneous_input_kbps", "{:.2}", input / 1024.0);
    field!(out, "instantaneous_output_kbps", "{:.2}", output / 1024.0);
    field!(out, "instantaneous_input_repl_kbps", "0.00");
    field!(out, "instantaneous_output_repl_kbps", "0.00");
    field!(
        out,
        "rejected_connections",
        "{}",
        load(&st.rejected_connections)
    );
    field!(out, "sync_full", "0");
    field!(out, "sync_partial_ok", "0");
    field!(out, "sync_partial_err", "0");
    field!(out, "expired_keys", "{}", load(&st.expired_keys));
    // The active cycle pops keys from a deadline index, so it leaves no
    // already-expired keys behind to estimate.
    field!(out, "expired_stale_perc", "0.00");
    field!(
        out,
        "expired_time_cap_reached_count",
        "{}",
        load(&st.expire_time_cap_reached)
    );
    field!(
        out,
        "expire_cycle_cpu_milliseconds",
        "{}",
        load(&st.expire_cycle_us) / 1000
    );
    field!(out, "evicted_keys", "{}", load(&e.evictor.evicted_keys));
    let (exceeded_total, exceeded_now) = keel_engine::evict::exceeded_times_ms(e);
    field!(out, "evicted_clients", "{}", load(&st.evicted_clients));
    field!(out, "total_eviction_exceeded_time", "{exceeded_total}");
    field!(out, "current_eviction_exceeded_time", "{exceeded_now}");
    field!(out, "keyspace_hits", "{}", st.keyspace_hits());
    field!(out, "keyspace_misses", "{}", st.keyspace_misses());
    crate::pubsub::info_fields(e, out);
    field!(out, "latest_fork_usec", "0");
    field!(out, "total_forks", "0");
    field!(out, "migrate_cached_sockets", "0");
    field!(out, "slave_expires_tracked_keys", "0");
    for name in [
        "active_defrag_hits",
        "active_defrag_misses",
        "active_defrag_key_hits",
        "active_defrag_key_misses",
        "total_active_defrag_time",
        "current_active_defrag_time",
    ] {
        field!(out, name, "0");
    }
    let (_, keys, items, prefixes) = e.tracking.counts();
    field!(out, "tracking_total_keys", "{keys}");
    field!(out, "tracking_total_items", "{items}");
    field!(out, "tracking_total_prefixes", "{prefixes}");
    field!(out, "unexpected_error_replies", "0");
    field!(out, "total_error_replies", "{}", st.error_replies());
    field!(out, "dump_payload_sanitizations", "0");
    field!(
        out,
        "total_reads_processed",
        "{}",
        load(&st.reads_processed)
    );
    field!(
        out,
        "total_writes_processed",
        "{}",
        load(&st.writes_processed)
    );
    field!(out, "io_threaded_reads_processed", "0");
    field!(out, "io_threaded_writes_processed", "0");
    field!(
        out,
        "reply_buffer_shrinks",
        "{}",
        load(&st.reply_buffer_shrinks)
    );
    field!(out, "reply_buffer_expands", "0");
}

/// A replication id for this process: 40 hex digits derived from the run id, so
/// it is stable for the server's lifetime without more state in the engine.
fn info_replication(e: &Engine, out: &mut String) {
    let m = e.repl.info();
    out.push_str("# Replication\r\n");
    let now_ms = e.now_ms();
    match e.follow.target() {
        None => field!(out, "role", "master"),
        Some((host, port)) => {
            let f = &e.follow;
            let up = f.link_up();
            let secs = |ms: u64| now_ms.saturating_sub(ms) / 1000;
            field!(out, "role", "slave");
            field!(out, "master_host", "{host}");
            field!(out, "master_port", "{port}");
            field!(
                out,
                "master_link_status",
                "{}",
                if up { "up" } else { "down" }
            );
            if up {
                field!(
                    out,
                    "master_last_io_seconds_ago",
                    "{}",
                    secs(f.last_io_ms.load(Ordering::Relaxed))
                );
            } else {
                field!(out, "master_last_io_seconds_ago", "-1");
            }
            let syncing = f.state() == keel_engine::replication::follow::LinkState::Sync;
            field!(out, "master_sync_in_progress", "{}", u8::from(syncing));
            let read = f.read_offset.load(Ordering::Relaxed).max(m.offset);
            field!(out, "slave_read_repl_offset", "{read}");
            field!(out, "slave_repl_offset", "{}", m.offset);
            if syncing {
                let total = f.sync_total.load(Ordering::Relaxed);
                let got = f.sync_read.load(Ordering::Relaxed) as i64;
                let perc = if total > 0 {
                    got as f64 * 100.0 / total as f64
                } else {
                    0.0
                };
                field!(out, "master_sync_total_bytes", "{total}");
                field!(out, "master_sync_read_bytes", "{got}");
                field!(
                    out,
                    "master_sync_left_bytes",
                    "{}",
                    if total > 0 { total - got } else { -1 }
                );
                field!(out, "master_sync_perc", "{perc:.2}");
                field!(
                    out,
                    "master_sync_last_io_seconds_ago",
                    "{}",
                    secs(f.last_io_ms.load(Ordering::Relaxed))
                );
            }
            if !up {
                field!(
                    out,
                    "master_link_down_since_seconds",
                    "{}",
                    secs(f.down_since_ms.load(Ordering::Relaxed))
                );
            }
            field!(
                out,
                "slave_priority",
                "{}",
                e.config.get_i64("replica-priority")
            );
            field!(
                out,
                "slave_read_only",
                "{}",
                u8::from(e.config.get_bool("replica-read-only"))
            );
            field!(
                out,
                "replica_announced",
                "{}",
                u8::from(e.config.get_bool("replica-announced"))
            );
        }
    }
    field!(out, "connected_slaves", "{}", m.replicas.len());
    for (i, r) in m.replicas.iter().enumerate() {
        let ip = r.ip.lock().clone();
        let lag = now_ms.saturating_sub(r.ack_ms.load(Ordering::Relaxed)) / 1000;
        field!(
            out,
            &format!("slave{i}"),
            "ip={ip},port={},state={},offset={},lag={lag}",
            r.port.load(Ordering::Relaxed),
            r.state().name(),
            r.ack_offset.load(Ordering::Relaxed)
        );
    }
    field!(out, "master_failover_state", "no-failover");
    field!(out, "master_replid", "{}", m.replid);
    field!(out, "master_replid2", "{}", m.replid2);
    field!(out, "master_repl_offset", "{}", m.offset);
    // Redis prints the first offset the old id no longer covers.
    let second = if m.second_offset >= 0 {
        m.second_offset + 1
    } else {
        -1
    };
    field!(out, "second_repl_offset", "{second}");
    field!(out, "repl_backlog_active", "{}", u8::from(m.backlog_active));
    let size = if m.backlog_active {
        m.backlog_size as i64
    } else {
        e.config.get_i64("repl-backlog-size")
    };
    field!(out, "repl_backlog_size", "{size}");
    field!(
        out,
        "repl_backlog_first_byte_offset",
        "{}",
        m.backlog_first_byte
    );
    field!(out, "repl_backlog_histlen", "{}", m.backlog_histlen);
}

/// CPU time from a /proc stat file (the process's, or a thread's), in
/// microseconds: [user, system, children's user, children's system].
fn cpu_usage_us(path: &str) -> [u64; 4] {
    // The kernel reports these in USER_HZ ticks, which Linux fixes at 100 per second.
    const US_PER_TICK: u64 = 10_000;
    let Ok(stat) = std::fs::read_to_string(path) else {
        return [0; 4];
    };
    // Fields after the parenthesised command name, which may contain spaces.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let mut out = [0u64; 4];
    // utime, stime, cutime, cstime are fields 14..=17; `after` starts at field 3.
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = fields
            .get(11 + i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
            * US_PER_TICK;
    }
    out
}

fn info_cpu(out: &mut String) {
    let [user, sys, cuser, csys] = cpu_usage_us("/proc/self/stat");
    // Keel has no main thread: the worker thread answering stands for it.
    let [tuser, tsys, _, _] = cpu_usage_us("/proc/thread-self/stat");
    let secs = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    out.push_str("# CPU\r\n");
    field!(out, "used_cpu_sys", "{}", secs(sys));
    field!(out, "used_cpu_user", "{}", secs(user));
    field!(out, "used_cpu_sys_children", "{}", secs(csys));
    field!(out, "used_cpu_user_children", "{}", secs(cuser));
    field!(out, "used_cpu_sys_main_thread", "{}", secs(tsys));
    field!(out, "used_cpu_user_main_thread", "{}", secs(tuser));
}

fn info_commandstats(e: &Engine, out: &mut String) {
    out.push_str("# Commandstats\r\n");
    for id in 0..e.commands.len() {
        let t = e.stats.command_totals(id);
        if t.calls == 0 && t.rejected == 0 && t.failed == 0 {
            continue;
        }
        let per_call = if t.calls == 0 {
            0.0
        } else {
            t.usec as f64 / t.calls as f64
        };
        let _ = write!(
            out,
            "cmdstat_{}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}\r\n",
            e.commands.full_name(id),
            t.calls,
            t.usec,
            per_call,
            t.rejected,
            t.failed
        );
    }
}

fn info_keyspace(ctx: &mut Ctx<'_>, out: &mut String) {
    let dbs = ctx.engine.databases();
    let mut counts = vec![(0usize, 0usize); dbs];
    ctx.for_each_shard(|s| {
        for (db, c) in counts.iter_mut().enumerate().take(s.databases()) {
            let t = s.db_ref(db);
            c.0 += t.len();
            c.1 += t.volatile_len();
        }
    });
    out.push_str("# Keyspace\r\n");
    for (db, (keys, expires)) in counts.into_iter().enumerate() {
        if keys > 0 {
            // avg_ttl is not estimated; Redis itself reports 0 until it has sampled.
            let _ = write!(out, "db{db}:keys={keys},expires={expires},avg_ttl=0\r\n");
        }
    }
}

/// Periodic sampling for INFO, called by the server's cron: per-second rates for
/// the instantaneous_* fields and the memory peak.
pub fn cron_sample(engine: &Engine) {
    memory_now(engine);
    let st = &engine.stats;
    st.rates.sample(
        engine.now_ms(),
        [
            st.total_commands(),
            st.net_input_bytes.load(Ordering::Relaxed),
            st.net_output_bytes.load(Ordering::Relaxed),
        ],
    );
}

// ---------------------------------------------------------------------------
// CONFIG

pub(crate) const CONFIG: CommandSpec = CommandSpec {
    name: "CONFIG",
    group: Group::Server,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for server configuration commands.",
    since: "2.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &CONFIG_GET,
        &CONFIG_SET,
        &CONFIG_RESETSTAT,
        &CONFIG_REWRITE,
        &CONFIG_HELP,
    ],
    run: keel_engine::subcommands::container,
};

const CONFIG_FLAGS: Flags = Flags::ADMIN
    .union(Flags::NOSCRIPT)
    .union(Flags::LOADING)
    .union(Flags::STALE);

pub(crate) const CONFIG_GET: CommandSpec = CommandSpec {
    name: "CONFIG|GET",
    group: Group::Server,
    arity: -3,
    flags: CONFIG_FLAGS,
    keys: Keys::None,
    summary: "Returns the effective values of configuration parameters.",
    since: "2.0.0",
    complexity: "O(N) when N is the number of configuration parameters provided",
    subcommands: &[],
    run: config_get,
};

/// Each parameter is reported once however many patterns match it. A pattern
/// without glob characters is looked up directly and, as in Redis, answered
/// under the name as the client spelled it.
fn config_get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let cfg = &ctx.engine.config;
    let mut seen: Vec<&'static str> = Vec::new();
    let mut pairs = Vec::new();
    for pattern in args.rest() {
        if !pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
            let typed = String::from_utf8_lossy(pattern);
            if let Some(dir) = config::find(&typed) {
                if !seen.contains(&dir.name) {
                    seen.push(dir.name);
                    pairs.push((
                        Frame::bulk(pattern.clone()),
                        Frame::bulk(cfg.reported(dir.name)),
                    ));
                }
            }
            continue;
        }
        for (name, value) in cfg.matching(pattern) {
            if !seen.contains(&name) {
                seen.push(name);
                pairs.push((Frame::bulk(name), Frame::bulk(value)));
            }
        }
    }
    Ok(Frame::Map(pairs))
}

pub(crate) const CONFIG_SET: CommandSpec = CommandSpec {
    name: "CONFIG|SET",
    group: Group::Server,
    arity: -4,
    flags: CONFIG_FLAGS,
    keys: Keys::None,
    summary: "Sets configuration parameters in-flight.",
    since: "2.0.0",
    complexity: "O(N) when N is the number of configuration parameters provided",
    subcommands: &[],
    run: config_set,
};

fn set_failed(name: &str, reason: impl std::fmt::Display) -> CmdError {
    CmdError::err(format!(
        "CONFIG SET failed (possibly related to argument '{name}') - {reason}"
    ))
}

/// Checks a value needs beyond its directive's kind, against the running server.
fn check_live(dir: &config::Directive, value: &str) -> Result<(), CmdError> {
    if dir.name == "dir" && !std::path::Path::new(value).is_dir() {
        return Err(set_failed(dir.name, "No such file or directory"));
    }
    Ok(())
}

/// What the network layer does for new values, once they are set: listen
/// elsewhere for `bind`/`port` (the first of them named decides the error, as
/// Redis applies them in that order), make descriptors for a higher
/// `maxclients`. On failure every value this CONFIG SET changed goes back.
fn apply_net(
    e: &Engine,
    chosen: &[(&'static config::Directive, String)],
    old: &[String],
) -> Result<(), CmdError> {
    let Some(net) = e.net.get() else {
        return Ok(());
    };
    let cfg = &e.config;
    let changed = |name: &str| {
        chosen
            .iter()
            .zip(old)
            .any(|((d, _), prev)| d.name == name && cfg.get(name) != *prev)
    };
    let mut failure = None;
    if changed("maxclients") {
        let (now, before) = (cfg.maxclients(), chosen.iter().zip(old));
        let raised = before
            .filter(|((d, _), _)| d.name == "maxclients")
            .any(|(_, prev)| !prev.parse::<i64>().is_ok_and(|p| now <= p));
        if raised {
            if let Err(most) = net.fit_maxclients(now.max(1) as u64) {
                failure = Some((
                    "maxclients",
                    format!(
                        "The operating system is not able to handle the specified number of clients, try with {most}"
                    ),
                ));
            }
        }
    }
    let listener = chosen
        .iter()
        .map(|(d, _)| d.name)
        .find(|n| (*n == "bind" || *n == "port") && changed(n));
    if let (None, Some(name)) = (&failure, listener) {
        let port = u16::try_from(cfg.get_i64("port")).unwrap_or(0);
        match net.rebind(&cfg.get("bind"), port) {
            Ok(()) => e.tcp_port.store(u64::from(port), Ordering::Relaxed),
            Err(_) if name == "port" => {
                failure = Some((
                    name,
                    "Unable to listen on this port. Check server logs.".into(),
                ))
            }
            Err(_) => failure = Some((name, "Failed to bind to specified addresses.".into())),
        }
    }
    let tls = chosen
        .iter()
        .map(|(d, _)| d.name)
        .find(|n| n.starts_with("tls-") && changed(n));
    if let (None, Some(name)) = (&failure, tls) {
        if let Err(reason) = net.reload_tls(cfg) {
            failure = Some((name, reason));
        }
    }
    let Some((name, reason)) = failure else {
        return Ok(());
    };
    // Redis logs the rollback before answering the error.
    config::log_warning(&format!(
        "Failed applying new configuration. Possibly related to new {name} setting. Restoring previous settings."
    ));
    for ((d, _), v) in chosen.iter().zip(old).rev() {
        let _ = cfg.set(d.name, &config::value_words(d, v), true);
    }
    Err(set_failed(name, reason))
}

/// All pairs are checked before any is applied, so CONFIG SET changes all of
/// them or none. The first problem found is reported, in Redis's order: unknown,
/// immutable or repeated names first, then values.
fn config_set(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let rest = args.rest();
    if rest.len() & 1 == 1 {
        return Err(CmdError::Syntax);
    }
    let cfg = &ctx.engine.config;
    let mut chosen: Vec<(&'static config::Directive, String)> = Vec::new();
    let mut typed_names: Vec<String> = Vec::new();
    for pair in rest.chunks(2) {
        let typed = String::from_utf8_lossy(&pair[0]);
        let Some(dir) = config::find(&typed) else {
            return Err(CmdError::err(format!(
                "Unknown option or number of arguments for CONFIG SET - '{typed}'"
            )));
        };
        if !dir.mutable {
            return Err(set_failed(&typed, config::ConfigError::Immutable));
        }
        // An alias and its directive are different names to Redis: both may
        // be set at once, the later winning.
        if typed_names.iter().any(|t| t.eq_ignore_ascii_case(&typed)) {
            return Err(set_failed(&typed, "duplicate parameter"));
        }
        typed_names.push(typed.to_string());
        chosen.push((dir, String::from_utf8_lossy(&pair[1]).into_owned()));
    }
    for ((dir, value), typed) in chosen.iter().zip(&typed_names) {
        let reported = config::reported_name(typed).unwrap_or(dir.name);
        cfg.validate(dir.name, &config::value_words(dir, value))
            .map_err(|e| set_failed(reported, e))?;
        check_live(dir, value)?;
    }
    let old: Vec<String> = chosen.iter().map(|(d, _)| cfg.get(d.name)).collect();
    for (i, (dir, value)) in chosen.iter().enumerate() {
        if let Err(e) = cfg.set(dir.name, &config::value_words(dir, value), false) {
            // Validated above, so this is not expected; undo what was applied.
            for ((d, _), v) in chosen.iter().zip(&old).take(i).rev() {
                let _ = cfg.set(d.name, &config::value_words(d, v), true);
            }
            return Err(set_failed(dir.name, e));
        }
    }
    apply_net(ctx.engine, &chosen, &old)?;
    if chosen.iter().any(|(d, _)| d.name == "maxmemory") {
        keel_engine::evict::maxmemory_changed(ctx);
    }
    if chosen.iter().any(|(d, _)| d.name == "loglevel") {
        config::set_log_verbosity(&cfg.get("loglevel"));
    }
    for (dir, value) in &chosen {
        if dir.name == "dir" {
            std::env::set_current_dir(value).map_err(|e| set_failed(dir.name, e))?;
        }
        keel_engine::persistence::config_changed(ctx.engine, dir.name);
        keel_engine::acl::config_changed(ctx.engine, dir.name);
    }
    Ok(Frame::ok())
}

pub(crate) const CONFIG_RESETSTAT: CommandSpec = CommandSpec {
    name: "CONFIG|RESETSTAT",
    group: Group::Server,
    arity: 2,
    flags: CONFIG_FLAGS,
    keys: Keys::None,
    summary: "Resets the server's statistics.",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: config_resetstat,
};

fn config_resetstat(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let e = ctx.engine;
    e.stats.reset();
    keel_engine::evict::reset_stats(e);
    e.stats
        .memory_peak
        .store((e.used_memory)(), Ordering::Relaxed);
    Ok(Frame::ok())
}

pub(crate) const CONFIG_REWRITE: CommandSpec = CommandSpec {
    name: "CONFIG|REWRITE",
    group: Group::Server,
    arity: 2,
    flags: CONFIG_FLAGS,
    keys: Keys::None,
    summary: "Persists the effective configuration to file.",
    since: "2.8.0",
    complexity: "O(1)",
    subcommands: &[],
    run: config_rewrite,
};

fn config_rewrite(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let path = ctx.engine.config_file.as_str();
    if path.is_empty() {
        return Err(CmdError::err("The server is running without a config file"));
    }
    let failed = |e: std::io::Error| CmdError::err(format!("Rewriting config file: {e}"));
    let old = std::fs::read_to_string(path).map_err(failed)?;
    // The users, as ACL LIST words them, unless an ACL file keeps them.
    let users = ctx
        .engine
        .config
        .get("aclfile")
        .is_empty()
        .then(|| crate::acl::list_lines(ctx));
    let text = ctx.engine.config.rewrite_text(&old, users.as_deref());
    // Write beside the file and rename, so a failure never leaves half a file.
    let tmp = format!("{path}.keel-rewrite.tmp");
    std::fs::write(&tmp, text).map_err(failed)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        failed(e)
    })?;
    Ok(Frame::ok())
}

pub(crate) const CONFIG_HELP: CommandSpec = CommandSpec {
    name: "CONFIG|HELP",
    group: Group::Server,
    arity: 2,
    flags: Flags::LOADING.union(Flags::STALE),
    keys: Keys::None,
    summary: "Returns helpful text about the different subcommands.",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: config_help,
};

fn config_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern> [<pattern> ...]",
        "    Reply with every parameter whose name matches a glob <pattern>, and its value.",
        "SET <directive> <value> [<directive> <value> ...]",
        "    Change parameters at run time; either all of them change or none does.",
        "RESETSTAT",
        "    Zero the counters that INFO reports.",
        "REWRITE",
        "    Save the running configuration into the file the server was started with.",
        "HELP",
        "    Print this help.",
    ]))
}

// ---------------------------------------------------------------------------
// TIME, LASTSAVE, SWAPDB

pub(crate) const TIME: CommandSpec = CommandSpec {
    name: "TIME",
    group: Group::Server,
    arity: 1,
    flags: Flags::LOADING.union(Flags::STALE).union(Flags::FAST),
    keys: Keys::None,
    summary: "Returns the server time.",
    since: "2.6.0",
    complexity: "O(1)",
    subcommands: &[],
    run: time,
};

fn time(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let us = ctx.engine.clock.now_us();
    Ok(Frame::Array(vec![
        Frame::bulk((us / 1_000_000).to_string()),
        Frame::bulk((us % 1_000_000).to_string()),
    ]))
}

pub(crate) const LASTSAVE: CommandSpec = CommandSpec {
    name: "LASTSAVE",
    group: Group::Server,
    arity: 1,
    flags: Flags::LOADING.union(Flags::STALE).union(Flags::FAST),
    keys: Keys::None,
    summary: "Returns the Unix timestamp of the last successful save to disk.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: lastsave,
};

fn lastsave(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Integer(
        ctx.engine.last_save_s.load(Ordering::Relaxed) as i64,
    ))
}

pub(crate) const SWAPDB: CommandSpec = CommandSpec {
    name: "SWAPDB",
    group: Group::Server,
    arity: 3,
    flags: Flags::WRITE.union(Flags::FAST).union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "Swaps two Redis databases.",
    since: "4.0.0",
    complexity:
        "O(N) where N is the count of clients watching or blocking on keys from both databases.",
    subcommands: &[],
    run: swapdb,
};

fn swapdb(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let a = keel_store::num::parse_i64(args.next_arg()?)
        .ok_or_else(|| CmdError::err("invalid first DB index"))?;
    let b = keel_store::num::parse_i64(args.next_arg()?)
        .ok_or_else(|| CmdError::err("invalid second DB index"))?;
    let dbs = ctx.engine.databases() as i64;
    if !(0..dbs).contains(&a) || !(0..dbs).contains(&b) {
        return Err(CmdError::DbIndexOutOfRange);
    }
    let (a, b) = (a as usize, b as usize);
    if a != b {
        let other = move |d: usize| if d == a { Some(b) } else { Some(a) };
        touch_existing(ctx, |d| d == a || d == b, other);
        ctx.for_each_shard(|s| s.swap_dbs(a, b));
    }
    ctx.dirty(1);
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------
// SHUTDOWN

pub(crate) const SHUTDOWN: CommandSpec = CommandSpec {
    name: "SHUTDOWN",
    group: Group::Server,
    arity: -1,
    flags: Flags::ADMIN
        .union(Flags::NOSCRIPT)
        .union(Flags::LOADING)
        .union(Flags::STALE)
        .union(Flags::NO_MULTI)
        .union(Flags::ALLOW_BUSY)
        .union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "Synchronously saves the database(s) to disk and shuts down the Redis server.",
    since: "1.0.0",
    complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
    subcommands: &[],
    run: shutdown,
};

/// The AOF is fsynced; a shutdown that must save (SAVE, or save points
/// configured without NOSAVE) writes the snapshot with every lock held, and
/// if that fails refuses as Redis does, unless FORCE says to exit anyway. A
/// shutdown never waits (NOW is implied), so ABORT always finds none in
/// progress. On success the connection is closed with no reply, as Redis does.
fn shutdown(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let (mut nosave, mut save, mut force, mut abort, mut other) =
        (false, false, false, false, false);
    for a in args.rest() {
        if is(a, "NOSAVE") {
            nosave = true;
        } else if is(a, "SAVE") {
            save = true;
        } else if is(a, "NOW") {
            other = true;
        } else if is(a, "FORCE") {
            force = true;
        } else if is(a, "ABORT") {
            abort = true;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    if (abort && (nosave || save || force || other)) || (nosave && save) {
        return Err(CmdError::Syntax);
    }
    if abort {
        return Err(CmdError::err("No shutdown in progress."));
    }
    let wants_save = save || (!nosave && !ctx.engine.config.get("save").is_empty());
    if let Err(why) = keel_engine::persistence::prepare_shutdown(ctx.engine, false) {
        config::log_warning(&why);
    }
    if wants_save {
        if let Err(why) = keel_engine::persistence::snapshot::save_foreground(ctx) {
            config::log_warning(&format!("Error trying to save the DB, can't exit. {why}"));
            if !force {
                config::log_warning(
                    "Errors trying to shut down the server. Check the logs for more information.",
                );
                return Err(CmdError::err("Errors trying to SHUTDOWN. Check logs."));
            }
        }
    }
    ctx.engine
        .persist
        .shutdown_done
        .store(true, Ordering::SeqCst);
    ctx.engine.request_shutdown();
    ctx.session.handle.kill();
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------
// DEBUG

/// Redis's DEBUG is one command that parses its own subcommands (it is not a
/// container in COMMAND), so unknown or malformed ones get DEBUG's own error.
/// It locks the whole keyspace: POPULATE writes everywhere, and SLEEP stalls
/// every key access the way Redis's stalls the whole server.
pub(crate) const DEBUG: CommandSpec = CommandSpec {
    name: "DEBUG",
    group: Group::Server,
    arity: -2,
    flags: Flags::ADMIN
        .union(Flags::NOSCRIPT)
        .union(Flags::LOADING)
        .union(Flags::STALE)
        .union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "A container for debugging commands.",
    since: "1.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[],
    run: debug,
};

/// Whether the peer is the local host as Redis's `enable-debug-command local`
/// understands it: exactly 127.0.0.1 or ::1.
pub fn is_local_peer(addr: &str) -> bool {
    match addr.parse::<std::net::SocketAddr>() {
        Ok(sa) => match sa.ip() {
            std::net::IpAddr::V4(ip) => ip == std::net::Ipv4Addr::LOCALHOST,
            std::net::IpAddr::V6(ip) => ip == std::net::Ipv6Addr::LOCALHOST,
        },
        // Not an IP address: a Unix socket, which Redis counts as local.
        Err(_) => true,
    }
}

fn debug(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let allowed = match ctx.engine.config.get("enable-debug-command").as_str() {
        "yes" => true,
        "local" => is_local_peer(&ctx.session.handle.addr),
        _ => false,
    };
    if !allowed {
        return Err(CmdError::err(
            "DEBUG command not allowed. If the enable-debug-command option is set to \"local\", \
             you can run it from a local connection, otherwise you need to set this option in the \
             configuration file, and then restart the server.",
        ));
    }
    let sub = args.next_arg()?;
    let argc = args.argv().len();
    if is(sub, "HELP") && argc == 2 {
        Ok(keel_engine::subcommands::help(&[
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "POPULATE <count> [<prefix>] [<size>]",
            "    Add <count> string keys named <prefix>:<n> (prefix 'key' by default) with",
            "    values value:<n>, cut or zero-padded to <size> bytes when given. Keys that",
            "    already exist are left alone.",
            "RELOAD [MERGE] [NOFLUSH] [NOSAVE]",
            "    Save the RDB on disk and reload it back to memory. By default it will save",
            "    the RDB file and load it back. With the NOFLUSH option the current database",
            "    is not removed before loading the new one, but conflicts in keys will kill",
            "    the server with an exception. When MERGE is used, conflicting keys will be",
            "    loaded (the key in the loaded RDB file will win). When NOSAVE is used, the",
            "    server will not save the current dataset in the RDB file before loading.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Stop or restart the active expiry cycle; keys then expire only when read.",
            "SLEEP <seconds>",
            "    Hold the keyspace for <seconds> (fractions allowed) before replying.",
            "HELP",
            "    Print this help.",
        ]))
    } else if is(sub, "SLEEP") && argc == 3 {
        let secs = strtod_prefix(args.next_arg()?);
        if secs > 0.0 && secs.is_finite() {
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(1e9)));
        }
        Ok(Frame::ok())
    } else if is(sub, "SET-ACTIVE-EXPIRE") && argc == 3 {
        // Redis reads the flag with atoi: anything but a number is 0 (off).
        let on = keel_store::num::parse_i64(args.next_arg()?).unwrap_or(0) != 0;
        let ops = &ctx.engine.config.ops;
        ops.active_expire_off.store(!on, Ordering::Relaxed);
        Ok(Frame::ok())
    } else if is(sub, "POPULATE") && (3..=5).contains(&argc) {
        populate(ctx, args)
    } else if is(sub, "RELOAD") {
        debug_reload(ctx, args)
    } else {
        Err(CmdError::err(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            String::from_utf8_lossy(sub)
        )))
    }
}

/// DEBUG RELOAD: save (unless NOSAVE), empty the keyspace (unless NOFLUSH),
/// load the file back; every lock is held throughout (DEBUG is ALL_SHARDS).
fn debug_reload(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let (mut flush, mut save) = (true, true);
    for a in args.rest() {
        if is(a, "MERGE") {
            continue;
        } else if is(a, "NOFLUSH") {
            flush = false;
        } else if is(a, "NOSAVE") {
            save = false;
        } else {
            return Err(CmdError::err(
                "DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    if save && keel_engine::persistence::snapshot::save_foreground(ctx).is_err() {
        return Err(CmdError::err("Error trying to save the DB"));
    }
    if flush {
        ctx.for_each_shard(|s| {
            for db in 0..s.databases() {
                s.db(db).clear();
            }
        });
    }
    let engine = ctx.engine;
    let now = ctx.now_ms();
    let path = keel_engine::persistence::snapshot::rdb_path(engine);
    let mut failed = None;
    let r =
        keel_engine::persistence::load::load_rdb(engine, &path, &mut |db, key, value, expire| {
            match ctx.table_in(db, key) {
                Ok(t) => {
                    t.insert(key, value, expire, now);
                }
                Err(e) => failed = Some(e),
            }
        });
    if let Err(why) = r {
        config::log_warning(&why);
        return Err(CmdError::err(
            "Error trying to load the RDB dump, check server logs.",
        ));
    }
    if let Some(e) = failed {
        return Err(e);
    }
    config::log_notice("DB reloaded by DEBUG RELOAD");
    Ok(Frame::ok())
}

/// The number at the start of `a`, 0 if there is none (C's strtod, which DEBUG
/// SLEEP uses, ignores trailing garbage).
pub fn strtod_prefix(a: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(a);
    let text = text.trim_start();
    (1..=text.len())
        .rev()
        .filter(|&n| text.is_char_boundary(n))
        .find_map(|n| text[..n].parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// A non-negative integer argument, with the error Redis gives for anything else.
fn positive(a: &[u8]) -> Result<u64, CmdError> {
    keel_store::num::parse_i64(a)
        .filter(|n| *n >= 0)
        .map(|n| n as u64)
        .ok_or_else(|| CmdError::err("value is out of range, must be positive"))
}

/// Redis formats POPULATE's keys into a 128-byte buffer, so longer names are cut.
const POPULATE_KEY_MAX: usize = 127;

fn populate(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let count = positive(args.next_arg()?)?;
    let prefix: &[u8] = match args.next_opt() {
        Some(p) => p,
        None => b"key",
    };
    let size = match args.next_opt() {
        Some(s) => positive(s)? as usize,
        None => 0,
    };
    if size as i64 > ctx.engine.config.proto_max_bulk_len() {
        return Err(CmdError::StringTooLong);
    }
    let db = ctx.db();
    let now = ctx.now_ms();
    let watched = ctx.engine.watches.any();
    let mut key: Vec<u8> = Vec::with_capacity(POPULATE_KEY_MAX + 1);
    let mut val: Vec<u8> = Vec::with_capacity(size.max(32));
    for j in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        let _ = write!(ByteWriter(&mut key), ":{j}");
        key.truncate(POPULATE_KEY_MAX);
        let table = ctx.table_in(db, &key)?;
        if table.contains(&key, now) {
            continue;
        }
        val.clear();
        let _ = write!(ByteWriter(&mut val), "value:{j}");
        if size > 0 {
            val.resize(size, 0);
        }
        table.insert(&key, Value::str(&val), 0, now);
        if watched {
            ctx.engine.watches.touch(db, &key);
        }
    }
    Ok(Frame::ok())
}

/// `write!` into a byte vector.
struct ByteWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// MEMORY

pub(crate) const MEMORY: CommandSpec = CommandSpec {
    name: "MEMORY",
    group: Group::Server,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for memory diagnostics commands.",
    since: "4.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &MEMORY_USAGE,
        &MEMORY_STATS,
        &MEMORY_DOCTOR,
        &MEMORY_PURGE,
        &MEMORY_MALLOC_STATS,
        &MEMORY_HELP,
    ],
    run: keel_engine::subcommands::container,
};

pub(crate) const MEMORY_USAGE: CommandSpec = CommandSpec {
    name: "MEMORY|USAGE",
    group: Group::Server,
    arity: -3,
    flags: Flags::READONLY,
    keys: Keys::single(2),
    summary: "Estimates the memory usage of a key.",
    since: "4.0.0",
    complexity: "O(N) where N is the number of samples.",
    subcommands: &[],
    run: memory_usage,
};

fn memory_usage(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    while let Some(opt) = args.next_opt() {
        // SAMPLES bounds how much of an aggregate is measured; Keel's estimate of
        // a value is exact and cheap, so the count is checked and otherwise unused.
        if is(opt, "SAMPLES") && !args.is_empty() {
            if keel_engine::args::parse_i64(args.next_arg()?)? < 0 {
                return Err(CmdError::Syntax);
            }
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let now = ctx.now_ms();
    let usage = ctx.table(key)?.peek(key, now).map(|e| e.memory_usage());
    Ok(usage.map_or(Frame::Null, |n| Frame::Integer(n as i64)))
}

pub(crate) const MEMORY_STATS: CommandSpec = CommandSpec {
    name: "MEMORY|STATS",
    group: Group::Server,
    arity: 2,
    flags: Flags::ALL_SHARDS,
    keys: Keys::None,
    summary: "Returns details about memory usage.",
    since: "4.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: memory_stats,
};

fn memory_stats(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let m = MemoryOverview::take(ctx);
    let int = |n: u64| Frame::Integer(n as i64);
    let double = |f: f64| Frame::Double(f);
    let mut out = vec![
        (Frame::bulk("peak.allocated"), int(m.peak)),
        (Frame::bulk("total.allocated"), int(m.used)),
        (Frame::bulk("startup.allocated"), int(m.startup)),
        (Frame::bulk("replication.backlog"), int(0)),
        (Frame::bulk("clients.slaves"), int(0)),
        (Frame::bulk("clients.normal"), int(m.clients_normal)),
        (Frame::bulk("cluster.links"), int(0)),
        (Frame::bulk("aof.buffer"), int(m.aof_buffer)),
        (Frame::bulk("lua.caches"), int(m.lua_caches)),
        (Frame::bulk("functions.caches"), int(m.functions_caches)),
    ];
    for (db, &(keys, main, expires)) in m.per_db.iter().enumerate() {
        if keys > 0 {
            out.push((
                Frame::bulk(format!("db.{db}")),
                Frame::Map(vec![
                    (Frame::bulk("overhead.hashtable.main"), int(main)),
                    (Frame::bulk("overhead.hashtable.expires"), int(expires)),
                    (Frame::bulk("overhead.hashtable.slot-to-keys"), int(0)),
                ]),
            ));
        }
    }
    let keys = m.keys();
    let (used, rss) = (m.used, m.rss);
    out.extend([
        (Frame::bulk("overhead.total"), int(m.overhead())),
        (Frame::bulk("keys.count"), int(keys)),
        (
            Frame::bulk("keys.bytes-per-key"),
            int(used
                .saturating_sub(m.startup)
                .checked_div(keys)
                .unwrap_or(0)),
        ),
        (Frame::bulk("dataset.bytes"), int(m.dataset())),
        (
            Frame::bulk("dataset.percentage"),
            double(m.dataset_percent()),
        ),
        (
            Frame::bulk("peak.percentage"),
            double(ratio(used, m.peak) * 100.0),
        ),
        (Frame::bulk("allocator.allocated"), int(used)),
        (Frame::bulk("allocator.active"), int(used)),
        (Frame::bulk("allocator.resident"), int(rss)),
        (Frame::bulk("allocator-fragmentation.ratio"), double(1.0)),
        (Frame::bulk("allocator-fragmentation.bytes"), int(0)),
        (Frame::bulk("allocator-rss.ratio"), double(ratio(rss, used))),
        (
            Frame::bulk("allocator-rss.bytes"),
            Frame::Integer(rss as i64 - used as i64),
        ),
        (Frame::bulk("rss-overhead.ratio"), double(1.0)),
        (Frame::bulk("rss-overhead.bytes"), int(0)),
        (Frame::bulk("fragmentation"), double(ratio(rss, used))),
        (
            Frame::bulk("fragmentation.bytes"),
            Frame::Integer(rss as i64 - used as i64),
        ),
    ]);
    Ok(Frame::Map(out))
}

pub(crate) const MEMORY_DOCTOR: CommandSpec = CommandSpec {
    name: "MEMORY|DOCTOR",
    group: Group::Server,
    arity: 2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "Outputs a memory problems report.",
    since: "4.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: memory_doctor,
};

/// Below this much allocated memory the ratios are dominated by fixed costs.
const DOCTOR_MIN_BYTES: u64 = 5 << 20;

fn memory_doctor(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let (used, peak) = memory_now(ctx.engine);
    let rss = proc_kb("/proc/self/status", "VmRSS");
    let mut report = String::new();
    if used < DOCTOR_MIN_BYTES {
        report.push_str(
            "This instance holds too little data for a meaningful memory report; \
             add some and ask again.\n",
        );
    } else {
        let mut issues = Vec::new();
        if peak > used + used / 2 {
            issues.push(format!(
                "* Peak memory: the peak ({}) is well above current usage ({}); \
                 memory freed since may not have been returned to the system.",
                human_bytes(peak),
                human_bytes(used)
            ));
        }
        if rss > used + used * 2 / 5 {
            issues.push(format!(
                "* Fragmentation: the process's resident size ({}) is {:.2} times the \
                 allocated memory ({}).",
                human_bytes(rss),
                ratio(rss, used),
                human_bytes(used)
            ));
        }
        if issues.is_empty() {
            report.push_str("No memory problems detected.\n");
        } else {
            report.push_str("Memory problems found:\n\n");
            for i in issues {
                report.push_str(&i);
                report.push('\n');
            }
        }
    }
    Ok(Frame::Verbatim("txt", Bytes::from(report)))
}

pub(crate) const MEMORY_PURGE: CommandSpec = CommandSpec {
    name: "MEMORY|PURGE",
    group: Group::Server,
    arity: 2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "Asks the allocator to release memory.",
    since: "4.0.0",
    complexity: "Depends on how much memory is allocated, could be slow",
    subcommands: &[],
    run: memory_purge,
};

/// Redis answers OK whether or not its allocator can purge; mimalloc returns
/// freed pages to the system by itself.
fn memory_purge(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::ok())
}

pub(crate) const MEMORY_MALLOC_STATS: CommandSpec = CommandSpec {
    name: "MEMORY|MALLOC-STATS",
    group: Group::Server,
    arity: 2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "Returns the allocator statistics.",
    since: "4.0.0",
    complexity: "Depends on how much memory is allocated, could be slow",
    subcommands: &[],
    run: memory_malloc_stats,
};

/// What Redis replies when built with an allocator other than jemalloc.
fn memory_malloc_stats(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Verbatim(
        "txt",
        Bytes::from_static(b"Stats not supported for the current allocator"),
    ))
}

pub(crate) const MEMORY_HELP: CommandSpec = CommandSpec {
    name: "MEMORY|HELP",
    group: Group::Server,
    arity: 2,
    flags: Flags::LOADING.union(Flags::STALE),
    keys: Keys::None,
    summary: "Returns helpful text about the different subcommands.",
    since: "4.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: memory_help,
};

fn memory_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Report memory problems this instance may have.",
        "MALLOC-STATS",
        "    Report the allocator's own statistics, where it offers them.",
        "PURGE",
        "    Ask the allocator to hand unused memory back to the system.",
        "STATS",
        "    Break down how this instance uses memory.",
        "USAGE <key> [SAMPLES <count>]",
        "    Estimate the bytes <key> and its value take. <count> is accepted for",
        "    compatibility; Keel measures the whole value.",
        "HELP",
        "    Print this help.",
    ]))
}
