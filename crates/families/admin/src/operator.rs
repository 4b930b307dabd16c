//! Operator commands: SLOWLOG, LATENCY, ROLE, LOLWUT and MODULE, and the INFO
//! sections they feed (errorstats, latencystats).
//!
//! The state they read lives in the engine: the slow log (`slowlog.rs`), the
//! latency monitor (`latency.rs`), and the per-thread error counters and
//! latency histograms (`stats.rs`, `histogram.rs`), all filled by the executor
//! after each command. Nothing here runs on the request path.

use bytes::Bytes;
use keel_engine::args::Args;
use keel_engine::config::format_percentile;
use keel_engine::ctx::Ctx;
use keel_engine::engine::Engine;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_engine::version::REDIS_VERSION;
use keel_resp::Frame;
use std::fmt::Write;
use std::sync::atomic::Ordering;

pub static COMMANDS: &[&CommandSpec] = &[&SLOWLOG, &LATENCY, &ROLE, &LOLWUT, &MODULE];

const ADMIN: Flags = Flags::ADMIN.union(Flags::LOADING).union(Flags::STALE);
const ADMIN_NOSCRIPT: Flags = ADMIN.union(Flags::NOSCRIPT);
const HELP_FLAGS: Flags = Flags::LOADING.union(Flags::STALE);

fn bulk(s: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

/// Human-readable text: a verbatim string in RESP3, a bulk string in RESP2.
fn text(s: String) -> Frame {
    Frame::Verbatim("txt", Bytes::from(s))
}

// ---------------------------------------------------------------------------
// SLOWLOG

pub(crate) const SLOWLOG: CommandSpec = CommandSpec {
    name: "SLOWLOG",
    group: Group::Server,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for slow log commands.",
    since: "2.2.12",
    complexity: "Depends on subcommand.",
    subcommands: &[&SLOWLOG_GET, &SLOWLOG_LEN, &SLOWLOG_RESET, &SLOWLOG_HELP],
    run: keel_engine::subcommands::container,
};

pub(crate) const SLOWLOG_GET: CommandSpec = CommandSpec::admin_subcommand(
    "SLOWLOG|GET",
    -2,
    ADMIN,
    "Returns the slow log's entries.",
    "2.2.12",
    slowlog_get,
);
pub(crate) const SLOWLOG_LEN: CommandSpec = CommandSpec::admin_subcommand(
    "SLOWLOG|LEN",
    2,
    ADMIN,
    "Returns the number of entries in the slow log.",
    "2.2.12",
    slowlog_len,
);
pub(crate) const SLOWLOG_RESET: CommandSpec = CommandSpec::admin_subcommand(
    "SLOWLOG|RESET",
    2,
    ADMIN,
    "Clears all entries from the slow log.",
    "2.2.12",
    slowlog_reset,
);
pub(crate) const SLOWLOG_HELP: CommandSpec = CommandSpec::admin_subcommand(
    "SLOWLOG|HELP",
    2,
    HELP_FLAGS,
    "Show helpful text about the different subcommands",
    "6.2.0",
    slowlog_help,
);

fn slowlog_get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    // Redis 7.0 takes one optional count; more is "unknown subcommand or
    // wrong number of arguments".
    if args.remaining() > 1 {
        let sub = String::from_utf8_lossy(&args.argv()[1]).into_owned();
        return Err(CmdError::err(format!(
            "unknown subcommand or wrong number of arguments for '{sub}'. Try SLOWLOG HELP."
        )));
    }
    let bad = || CmdError::err("count should be greater than or equal to -1");
    let count = match args.next_opt() {
        None => 10,
        Some(a) => match keel_store::num::parse_i64(a) {
            Some(-1) => usize::MAX,
            Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => return Err(bad()),
        },
    };
    Ok(Frame::Array(ctx.engine.slowlog.newest(count)))
}

fn slowlog_len(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Integer(ctx.engine.slowlog.len() as i64))
}

fn slowlog_reset(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.engine.slowlog.reset();
    Ok(Frame::ok())
}

fn slowlog_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return the newest <count> entries of the slow log (default: 10, -1 for all).",
        "    Each entry holds: id, unix time, duration in microseconds, arguments,",
        "    client address (ip:port), client name.",
        "LEN",
        "    Return the number of entries in the slow log.",
        "RESET",
        "    Empty the slow log.",
        "HELP",
        "    Print this help.",
    ]))
}

// ---------------------------------------------------------------------------
// LATENCY

pub(crate) const LATENCY: CommandSpec = CommandSpec {
    name: "LATENCY",
    group: Group::Server,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for latency diagnostics commands.",
    since: "2.8.13",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &LATENCY_DOCTOR,
        &LATENCY_GRAPH,
        &LATENCY_HISTOGRAM,
        &LATENCY_HISTORY,
        &LATENCY_LATEST,
        &LATENCY_RESET,
        &LATENCY_HELP,
    ],
    run: keel_engine::subcommands::container,
};

pub(crate) const LATENCY_DOCTOR: CommandSpec = CommandSpec::admin_subcommand(
    "LATENCY|DOCTOR",
    2,
    ADMIN_NOSCRIPT,
    "Returns a human-readable latency analysis report.",
    "2.8.13",
    latency_doctor,
);
pub(crate) const LATENCY_GRAPH: CommandSpec = CommandSpec::admin_subcommand(
    "LATENCY|GRAPH",
    3,
    ADMIN_NOSCRIPT,
    "Returns a latency graph for an event.",
    "2.8.13",
    latency_graph,
);
pub(crate) const LATENCY_HISTOGRAM: CommandSpec = CommandSpec::admin_subcommand(
    "LATENCY|HISTOGRAM",
    -2,
    ADMIN_NOSCRIPT,
    "Returns the cumulative distribution of latencies of a subset or all commands.",
    "7.0.0",
    latency_histogram,
);
pub(crate) const LATENCY_HISTORY: CommandSpec = CommandSpec::admin_subcommand(
    "LATENCY|HISTORY",
    3,
    ADMIN_NOSCRIPT,
    "Returns timestamp-latency samples for an event.",
    "2.8.13",
    latency_history,
);
pub(crate) const LATENCY_LATEST: CommandSpec = CommandSpec::admin_subcommand(
    "LATENCY|LATEST",
    2,
    ADMIN_NOSCRIPT,
    "Returns the latest latency samples for all events.",
    "2.8.13",
    latency_latest,
);
pub(crate) const LATENCY_RESET: CommandSpec = CommandSpec::admin_subcommand(
    "LATENCY|RESET",
    -2,
    ADMIN_NOSCRIPT,
    "Resets the latency data for one or more events.",
    "2.8.13",
    latency_reset,
);
pub(crate) const LATENCY_HELP: CommandSpec = CommandSpec::admin_subcommand(
    "LATENCY|HELP",
    2,
    HELP_FLAGS,
    "Returns helpful text about the different subcommands.",
    "2.8.13",
    latency_help,
);

fn now_s(ctx: &Ctx<'_>) -> u64 {
    ctx.now_ms() / 1000
}

fn latency_latest(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Array(
        ctx.engine
            .latency
            .snapshot()
            .into_iter()
            .filter_map(|(name, s)| {
                let last = s.samples.back()?;
                Some(Frame::Array(vec![
                    bulk(&name),
                    Frame::Integer(last.time_s as i64),
                    Frame::Integer(last.latency_ms as i64),
                    Frame::Integer(s.max_ms as i64),
                ]))
            })
            .collect(),
    ))
}

fn latency_history(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let event = args.next_arg()?;
    // An event without samples is an empty history, not an error.
    let samples = ctx
        .engine
        .latency
        .series(event)
        .map(|s| s.samples)
        .unwrap_or_default();
    Ok(Frame::Array(
        samples
            .iter()
            .map(|x| {
                Frame::Array(vec![
                    Frame::Integer(x.time_s as i64),
                    Frame::Integer(x.latency_ms as i64),
                ])
            })
            .collect(),
    ))
}

fn latency_reset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let names: Vec<&[u8]> = args.rest().iter().map(|b| &b[..]).collect();
    Ok(Frame::Integer(ctx.engine.latency.reset(&names) as i64))
}

fn latency_graph(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let event = args.next_arg()?;
    let name = String::from_utf8_lossy(event).into_owned();
    let Some(series) = ctx.engine.latency.series(event) else {
        return Err(CmdError::err(format!(
            "No samples available for event '{name}'"
        )));
    };
    Ok(text(keel_engine::latency::graph(
        &name,
        &series,
        now_s(ctx),
    )))
}

fn latency_doctor(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let ops = &ctx.engine.config.ops;
    let report = keel_engine::latency::doctor(
        ops.latency_monitor_ms.load(Ordering::Relaxed),
        ops.slowlog_slower_than_us.load(Ordering::Relaxed),
        &ctx.engine.latency.snapshot(),
    );
    Ok(text(report))
}

/// One command's LATENCY HISTOGRAM entry: calls and the cumulative counts at
/// power-of-two microsecond bounds.
fn histogram_entry(counts: &keel_engine::histogram::Counts) -> Frame {
    Frame::Map(vec![
        (bulk("calls"), Frame::Integer(counts.total() as i64)),
        (
            bulk("histogram_usec"),
            Frame::Map(
                counts
                    .log_buckets()
                    .into_iter()
                    .map(|(usec, n)| (Frame::Integer(usec as i64), Frame::Integer(n as i64)))
                    .collect(),
            ),
        ),
    ])
}

fn latency_histogram(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let e = ctx.engine;
    let table = &e.commands;
    let mut ids: Vec<usize> = Vec::new();
    if args.is_empty() {
        ids.extend(0..table.len());
    } else {
        for name in args.rest() {
            // A name may be `parent|sub`; a container stands for its
            // subcommands.
            let id = match name.iter().position(|&c| c == b'|') {
                None => table.lookup(name),
                Some(bar) => table
                    .lookup(&name[..bar])
                    .and_then(|p| table.lookup_sub(p, &name[bar + 1..])),
            };
            let Some(id) = id else { continue };
            ids.push(id);
            if !table.specs[id].subcommands.is_empty() {
                ids.extend((table.top_level..table.len()).filter(|&s| table.parent[s] == id));
            }
        }
    }
    let mut out = Vec::new();
    for id in ids {
        if let Some(counts) = e.stats.latency_counts(id) {
            out.push((bulk(&table.full_name(id)), histogram_entry(&counts)));
        }
    }
    Ok(Frame::Map(out))
}

fn latency_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return a report on the latency spikes the monitor recorded.",
        "GRAPH <event>",
        "    Return a text chart of the samples of the <event> class.",
        "HISTORY <event>",
        "    Return the (unix time, latency) samples of the <event> class.",
        "LATEST",
        "    Return the newest sample of every event class.",
        "RESET [<event> ...]",
        "    Forget the samples of the named event classes.",
        "    (default: forget every event class)",
        "HISTOGRAM [COMMAND ...]",
        "    Return the cumulative latency distribution of the named commands,",
        "    or of every command that has one.",
        "HELP",
        "    Print this help.",
    ]))
}

// ---------------------------------------------------------------------------
// ROLE, LOLWUT

pub(crate) const ROLE: CommandSpec = CommandSpec {
    name: "ROLE",
    group: Group::Server,
    arity: 1,
    flags: Flags::NOSCRIPT
        .union(Flags::LOADING)
        .union(Flags::STALE)
        .union(Flags::FAST),
    keys: Keys::None,
    summary: "Returns the replication role.",
    since: "2.8.12",
    complexity: "O(1)",
    subcommands: &[],
    run: role,
};

/// A master: its offset and each online replica's ip, port and
/// acknowledged offset. A replica: its master, the link's state and the
/// offset applied (-1 while not connected).
fn role(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let e = ctx.engine;
    if let Some((host, port)) = e.follow.target() {
        let state = e.follow.state();
        let offset = if e.follow.link_up() {
            e.repl.offset() as i64
        } else {
            -1
        };
        return Ok(Frame::Array(vec![
            bulk("slave"),
            Frame::Bulk(host.into_bytes().into()),
            Frame::Integer(i64::from(port)),
            bulk(state.role_name()),
            Frame::Integer(offset),
        ]));
    }
    let replicas = e
        .repl
        .replicas()
        .iter()
        .filter(|r| r.state() == keel_engine::replication::state::ReplicaState::Online)
        .map(|r| {
            Frame::Array(vec![
                Frame::Bulk(r.ip.lock().clone().into_bytes().into()),
                Frame::Bulk(
                    r.port
                        .load(std::sync::atomic::Ordering::Relaxed)
                        .to_string()
                        .into_bytes()
                        .into(),
                ),
                Frame::Bulk(
                    r.ack_offset
                        .load(std::sync::atomic::Ordering::Relaxed)
                        .to_string()
                        .into_bytes()
                        .into(),
                ),
            ])
        })
        .collect();
    Ok(Frame::Array(vec![
        bulk("master"),
        Frame::Integer(e.repl.offset() as i64),
        Frame::Array(replicas),
    ]))
}

pub(crate) const LOLWUT: CommandSpec = CommandSpec {
    name: "LOLWUT",
    group: Group::Server,
    arity: -1,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::None,
    summary: "Displays computer art and the Redis version",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: lolwut,
};

/// LOLWUT [VERSION v [...]]: like Redis, the version line alone except for
/// versions 5 and 6, which draw a picture first (Keel's own: a field of
/// tilted squares, more tilted further down, and a skyline).
fn lolwut(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let mut version = 7;
    let mut params: Vec<i64> = Vec::new();
    if args.remaining() >= 2 && args.eat("VERSION") {
        version = args.next_i64()?;
        for a in args.rest() {
            params.push(keel_engine::args::parse_i64(a)?);
        }
    }
    let line = format!("Redis ver. {REDIS_VERSION}\n");
    let art = match version {
        5 => squares(&params),
        6 => skyline(&params),
        _ => String::new(),
    };
    Ok(text(format!("{art}{line}")))
}

fn squares(p: &[i64]) -> String {
    let cols = p.first().copied().unwrap_or(66).clamp(1, 1000) as usize;
    let per_row = p.get(1).copied().unwrap_or(8).clamp(1, 200) as usize;
    let rows = p.get(2).copied().unwrap_or(12).clamp(1, 200) as usize;
    let side = (cols / per_row).max(2);
    let glyphs = ['#', '%', '*', '+', '.'];
    let mut out = String::new();
    for r in 0..rows {
        for line in 0..side / 2 {
            let mut s = String::new();
            for c in 0..per_row {
                // Squares drift right and thin out with the row, a nod to
                // plotter art of falling order.
                let shift = (r * (c + 1) + line) % 3;
                let g = glyphs[(r * 5 / rows.max(1)).min(4)];
                for x in 0..side {
                    let edge = x == shift || x + 1 == side || line == 0;
                    s.push(if edge { g } else { ' ' });
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        }
    }
    out.push('\n');
    out
}

fn skyline(p: &[i64]) -> String {
    let width = p.first().copied().unwrap_or(80).clamp(1, 1000) as usize;
    let height = p.get(1).copied().unwrap_or(20).clamp(1, 1000) as usize;
    let mut heights = Vec::with_capacity(width);
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut x = 0;
    while x < width {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let w = 3 + (seed % 6) as usize;
        let h = 1 + (seed >> 8) as usize % height.max(1);
        for _ in 0..w.min(width - x) {
            heights.push(h);
        }
        x += w;
    }
    let mut out = String::new();
    for row in (0..height).rev() {
        let line: String = heights
            .iter()
            .map(|&h| if h > row { '#' } else { ' ' })
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push('\n');
    out
}

// ---------------------------------------------------------------------------
// MODULE

pub(crate) const MODULE: CommandSpec = CommandSpec {
    name: "MODULE",
    group: Group::Server,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for module commands.",
    since: "4.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &MODULE_LIST,
        &MODULE_LOAD,
        &MODULE_LOADEX,
        &MODULE_UNLOAD,
        &MODULE_HELP,
    ],
    run: keel_engine::subcommands::container,
};

const MODULE_FLAGS: Flags = Flags::ADMIN.union(Flags::NOSCRIPT);

pub(crate) const MODULE_LIST: CommandSpec = CommandSpec::admin_subcommand(
    "MODULE|LIST",
    2,
    MODULE_FLAGS,
    "Returns all loaded modules.",
    "4.0.0",
    module_list,
);
pub(crate) const MODULE_LOAD: CommandSpec = CommandSpec::admin_subcommand(
    "MODULE|LOAD",
    -3,
    MODULE_FLAGS,
    "Loads a module.",
    "4.0.0",
    module_refused,
);
pub(crate) const MODULE_LOADEX: CommandSpec = CommandSpec::admin_subcommand(
    "MODULE|LOADEX",
    -3,
    MODULE_FLAGS,
    "Loads a module using extended parameters.",
    "7.0.0",
    module_refused,
);
pub(crate) const MODULE_UNLOAD: CommandSpec = CommandSpec::admin_subcommand(
    "MODULE|UNLOAD",
    3,
    MODULE_FLAGS,
    "Unloads a module.",
    "4.0.0",
    module_refused,
);
pub(crate) const MODULE_HELP: CommandSpec = CommandSpec::admin_subcommand(
    "MODULE|HELP",
    2,
    HELP_FLAGS,
    "Returns helpful text about the different subcommands.",
    "5.0.0",
    module_help,
);

/// The name and version RedisBloom reports, so clients that look for
/// RedisBloom (`bf`, 2.6.12) find Keel's built-in Bloom filters.
pub const BLOOM_MODULE_NAME: &str = "bf";
pub const BLOOM_MODULE_VERSION: i64 = 20612;

fn module_list(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Array(vec![Frame::Map(vec![
        (bulk("name"), bulk(BLOOM_MODULE_NAME)),
        (bulk("ver"), Frame::Integer(BLOOM_MODULE_VERSION)),
        (bulk("path"), bulk("")),
        (bulk("args"), Frame::Array(Vec::new())),
    ])]))
}

fn module_refused(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let sub = args
        .argv()
        .get(1)
        .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
        .unwrap_or_default();
    Err(CmdError::err(format!(
        "MODULE {sub} is not supported: Keel's modules (the bf Bloom filter family) are built in \
         and cannot be loaded or unloaded"
    )))
}

fn module_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LIST",
        "    Return the loaded modules (Keel's are built in).",
        "LOAD <path> [<arg> ...]",
        "    Refused: modules are built into Keel.",
        "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
        "    Refused: modules are built into Keel.",
        "UNLOAD <name>",
        "    Refused: modules are built into Keel.",
        "HELP",
        "    Print this help.",
    ]))
}

// ---------------------------------------------------------------------------
// INFO sections

/// INFO errorstats: error replies by code.
pub(crate) fn info_errorstats(e: &Engine, out: &mut String) {
    out.push_str("# Errorstats\r\n");
    for (code, n) in e.stats.error_counts() {
        let _ = write!(out, "errorstat_{code}:count={n}\r\n");
    }
}

/// INFO latencystats: the configured percentiles of each command's latency
/// in microseconds; empty while latency-tracking is off.
pub(crate) fn info_latencystats(e: &Engine, out: &mut String) {
    out.push_str("# Latencystats\r\n");
    let ops = &e.config.ops;
    if !ops.latency_tracking.load(Ordering::Relaxed) {
        return;
    }
    let percentiles = ops.percentiles.read().clone();
    for id in 0..e.commands.len() {
        let Some(counts) = e.stats.latency_counts(id) else {
            continue;
        };
        let _ = write!(
            out,
            "latency_percentiles_usec_{}:",
            e.commands.full_name(id)
        );
        for (i, p) in percentiles.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let usec = counts.value_at_percentile(*p) as f64 / 1000.0;
            let _ = write!(out, "p{}={usec:.3}", format_percentile(*p));
        }
        out.push_str("\r\n");
    }
}
