//! Stream commands: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XSETID and
//! XREAD (with BLOCK). The stream itself is `keel_store::stream::Stream`;
//! this file owns argument parsing, Redis 7.0's error texts, reply shapes
//! and what is logged: XADD logs the id it chose for `*` and `ms-*`, and an
//! approximate trim (`~`) is logged as the exact trim it amounted to
//! (`MAXLEN = <length after>`, `MINID = <first id after>`), as Redis does,
//! so replaying the log rebuilds the same stream. Log replay (the AOF
//! client) ignores LIMIT, as Redis does for its master and AOF clients.
//!
//! Consumer-group commands build on the helpers marked `pub(crate)` here:
//! [`stream_read`], [`stream_write`], [`parse_strict_id`],
//! [`parse_block_ms`], [`entry_reply`] and [`entries_reply`].
//!
//! Blocking: XREAD hands its read to `Ctx::block_or_read` (see
//! `keel_engine::blocking`) with the keys after STREAMS; without data the client
//! waits, and a write to one of its keys re-runs the command for it under
//! the writer's locks. As in Redis, only XADD and a key's creation or
//! deletion (and XGROUP DESTROY) wake readers: the other stream writes call
//! `Ctx::wake_no_waiter`. A served reader answers for the key written alone
//! (the first a transaction wrote), at most 1000 entries without COUNT. A
//! reader finding nothing newer stays queued without stopping the waiters
//! behind it. The re-run command must mean
//! the same later as when the client blocked, so XREAD passes its argv with
//! `$` replaced by the id it stood for. XREADGROUP BLOCK wires the same way:
//! its spec's keys are `Keys::Streams` (which skips `GROUP g c` and
//! `NOACK`), its attempt reads `>` for the group and returns `Ok(None)` when
//! no key has new entries, and `>` needs no pinning; an attempt that errors
//! (NOGROUP after the group went) answers the waiter with that error.

use bytes::Bytes;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::stream::{id::parse_redis, Entry, Stream, StreamId, TrimTo};
use keel_store::{Value, ValueType};
use std::fmt::Write as _;

pub static COMMANDS: &[&CommandSpec] = &[
    &XADD, &XRANGE, &XREVRANGE, &XLEN, &XDEL, &XTRIM, &XSETID, &XREAD,
];

/// How many entries a blocked XREAD or XREADGROUP without COUNT gets when
/// served, as in Redis: a client woken on a long stream is not sent all of it.
pub const BLOCKED_DEFAULT_COUNT: usize = 1000;

pub(crate) const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

fn invalid_id() -> CmdError {
    CmdError::msg(INVALID_ID)
}

/// The stream at `key` for reading: `None` when absent, WRONGTYPE for
/// another type.
pub(crate) fn stream_read<'t>(
    ctx: &'t mut Ctx<'_>,
    key: &[u8],
) -> Result<Option<&'t Stream>, CmdError> {
    match ctx.read_value(key, ValueType::Stream)? {
        Some(Value::Stream(s)) => Ok(Some(s)),
        Some(_) => Err(CmdError::WrongType),
        None => Ok(None),
    }
}

/// The stream at `key` for a change: `None` when absent, WRONGTYPE for
/// another type.
pub(crate) fn stream_write<'t>(
    ctx: &'t mut Ctx<'_>,
    key: &[u8],
) -> Result<Option<&'t mut Stream>, CmdError> {
    let now = ctx.now_ms();
    match ctx.table(key)?.get_mut(key, now) {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::Stream(s) => Ok(Some(s)),
            _ => Err(CmdError::WrongType),
        },
    }
}

/// An id where Redis wants a strict one (`streamParseStrictIDOrReply`): no
/// lone `-` or `+`.
pub(crate) fn parse_strict_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, CmdError> {
    parse_redis(arg, missing_seq, false)
        .map(|(id, _)| id)
        .ok_or_else(invalid_id)
}

/// An id of a range: `-` and `+` for the ends, else as strict.
fn parse_range_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, CmdError> {
    match arg {
        b"-" => Ok(StreamId::MIN),
        b"+" => Ok(StreamId::MAX),
        _ => parse_strict_id(arg, missing_seq),
    }
}

/// One entry as Redis replies it: `[id, [field, value, ...]]`.
pub(crate) fn entry_reply(e: &Entry<'_>) -> Frame {
    let mut kv = Vec::new();
    for (f, v) in e.fields() {
        kv.push(Frame::bulk_from_slice(f));
        kv.push(Frame::bulk_from_slice(v));
    }
    Frame::Array(vec![
        Frame::Bulk(Bytes::from(e.id.to_string())),
        Frame::Array(kv),
    ])
}

/// Entries as an array of [`entry_reply`]s, encoded straight into one buffer
/// as the entries are read (no frame per field).
pub(crate) fn entries_reply<'a>(entries: impl Iterator<Item = Entry<'a>>) -> Frame {
    let mut out = keel_resp::BulkArray::new();
    let mut id = String::with_capacity(41);
    for e in entries {
        out.push_array(2);
        id.clear();
        let _ = write!(id, "{}", e.id);
        out.part(id.as_bytes());
        out.part_array(2 * e.field_count());
        for (f, v) in e.fields() {
            out.part(f);
            out.part(v);
        }
    }
    out.finish()
}

fn id_bulk(id: StreamId) -> Bytes {
    Bytes::from(id.to_string())
}

/// The trimming options XADD and XTRIM share.
#[derive(Default)]
struct TrimArgs {
    to: Option<TrimTo>,
    approx: bool,
    /// Where the MAXLEN/MINID value is, for rewriting.
    value_at: usize,
    limit: u64,
    no_mkstream: bool,
    /// XADD's id: `None` for `*`; with whether a sequence was given.
    id: Option<(StreamId, bool)>,
    /// Where the field-value pairs start (XADD).
    fields_at: usize,
}

/// Redis's `streamParseAddOrTrimArgsOrReply`, for XADD (`xadd`) or XTRIM.
fn parse_add_or_trim(ctx: &Ctx<'_>, argv: &[Bytes], xadd: bool) -> Result<TrimArgs, CmdError> {
    let mut a = TrimArgs::default();
    let mut limit_given = false;
    let mut limit: i64 = 0;
    let mut i = 2;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        let opt = &argv[i];
        if xadd && &opt[..] == b"*" {
            break;
        } else if (is(opt, "MAXLEN") || is(opt, "MINID")) && more > 0 {
            let maxlen = is(opt, "MAXLEN");
            if a.to.is_some() {
                return Err(CmdError::err(
                    "syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            a.approx = false;
            let next = &argv[i + 1];
            if more >= 2 && &next[..] == b"~" {
                a.approx = true;
                i += 1;
            } else if more >= 2 && &next[..] == b"=" {
                i += 1;
            }
            let value = &argv[i + 1];
            a.to = Some(if maxlen {
                let n = parse_i64(value)?;
                if n < 0 {
                    return Err(CmdError::err("The MAXLEN argument must be >= 0."));
                }
                TrimTo::MaxLen(n as u64)
            } else {
                TrimTo::MinId(parse_strict_id(value, 0)?)
            });
            i += 1;
            a.value_at = i;
        } else if is(opt, "LIMIT") && more > 0 {
            limit = parse_i64(&argv[i + 1])?;
            if limit < 0 {
                return Err(CmdError::err("The LIMIT argument must be >= 0."));
            }
            limit_given = true;
            i += 1;
        } else if xadd && is(opt, "NOMKSTREAM") {
            a.no_mkstream = true;
        } else if xadd {
            let (id, seq_given) = parse_redis(opt, 0, true).ok_or_else(invalid_id)?;
            a.id = Some((id, seq_given));
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    a.fields_at = i + 1;
    if limit != 0 && a.to.is_none() {
        return Err(CmdError::err(
            "syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && a.to.is_none() {
        return Err(CmdError::err("One of MAXLEN or MINID must be specified"));
    }
    if ctx.session.handle.id == u64::MAX {
        // Replaying the log: the trim was logged exact.
        a.limit = 0;
    } else if limit_given {
        if !a.approx {
            return Err(CmdError::err(
                "syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
        a.limit = limit as u64;
    } else if a.approx {
        let n = ctx
            .engine
            .config
            .stream_limits()
            .max_entries
            .saturating_mul(100);
        // Redis caps the default on both sides: none set, or too many.
        a.limit = match n {
            0 => 10_000,
            n => n.min(1_000_000),
        };
    }
    Ok(a)
}

/// After an approximate trim, the exact form to log in place of `argv`'s
/// `~` and value.
fn exact_trim_argv(argv: &[Bytes], a: &TrimArgs, s: &Stream) -> Vec<Bytes> {
    let mut out = argv.to_vec();
    if let Some(to) = a.to {
        if a.value_at >= 1 {
            out[a.value_at - 1] = Bytes::from_static(b"=");
        }
        out[a.value_at] = match to {
            TrimTo::MaxLen(_) => Bytes::from(s.len().to_string()),
            TrimTo::MinId(_) => id_bulk(s.first_id()),
        };
    }
    out
}

pub(crate) const XADD: CommandSpec = CommandSpec {
    name: "XADD",
    group: Group::Stream,
    arity: -5,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Appends a new message to a stream. Creates the key if it doesn't exist.",
    since: "5.0.0",
    complexity: "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
    subcommands: &[],
    run: xadd,
};

fn xadd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let key = &argv[1];
    let a = parse_add_or_trim(ctx, argv, true)?;
    let pairs = argv.get(a.fields_at..).unwrap_or(&[]);
    if pairs.len() < 2 || pairs.len() % 2 == 1 {
        return Err(CmdError::WrongArity("xadd".into()));
    }
    if let Some((id, true)) = a.id {
        if id == StreamId::MIN {
            return Err(CmdError::err(
                "The ID specified in XADD must be greater than 0-0",
            ));
        }
    }
    let limits = ctx.engine.config.stream_limits();
    let now = ctx.now_ms();
    let fields: Vec<(&[u8], &[u8])> = pairs
        .chunks_exact(2)
        .map(|p| (&p[0][..], &p[1][..]))
        .collect();
    let logging = ctx.engine.logging();
    // One lookup: the stream found is changed in place, a new one is built
    // and stored only once its first entry is in.
    let table = ctx.table(key)?;
    let (id, trimmed, log) = match table.get_mut(key, now) {
        Some(e) => match &mut e.value {
            Value::Stream(s) => add_entry(s, &a, argv, &fields, now, limits, logging)?,
            _ => return Err(CmdError::WrongType),
        },
        None => {
            if a.no_mkstream {
                return Ok(Frame::Null);
            }
            let mut s = Box::<Stream>::default();
            let added = add_entry(&mut s, &a, argv, &fields, now, limits, logging)?;
            table.insert(key, Value::Stream(s), 0, now);
            added
        }
    };
    ctx.dirty(1);
    if let Some(v) = log {
        ctx.rewrite(v);
    }
    ctx.notify(Class::STREAM, "xadd", key);
    if trimmed > 0 {
        ctx.notify(Class::STREAM, "xtrim", key);
    }
    Ok(Frame::Bulk(id_bulk(id)))
}

/// XADD's work on the stream: choose the id, append, trim. Returns the id,
/// the entries trimmed and, when the command must be logged otherwise than
/// sent, what to log (only while `logging`: nothing reads it otherwise).
fn add_entry(
    s: &mut Stream,
    a: &TrimArgs,
    argv: &[Bytes],
    fields: &[(&[u8], &[u8])],
    now: u64,
    limits: keel_store::stream::NodeLimits,
    logging: bool,
) -> Result<(StreamId, u64, Option<Vec<Bytes>>), CmdError> {
    if s.last_id() == StreamId::MAX {
        return Err(CmdError::err(
            "The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let last = s.last_id();
    let id = match a.id {
        Some((id, true)) => Some(id),
        Some((given, false)) => {
            if given.ms == last.ms {
                if last.seq == u64::MAX {
                    // Redis 7.0 fails here without naming the cause, and
                    // answers its generic append failure.
                    return Err(CmdError::err("Elements are too large to be stored"));
                }
                Some(StreamId::new(last.ms, last.seq + 1))
            } else {
                Some(given)
            }
        }
        None => {
            if now > last.ms {
                Some(StreamId::new(now, 0))
            } else {
                last.next()
            }
        }
    };
    let Some(id) = id.filter(|id| *id > last && s.append(*id, fields, limits)) else {
        return Err(CmdError::err(
            "The ID specified in XADD is equal or smaller than the target stream top item",
        ));
    };
    let mut log: Option<Vec<Bytes>> = None;
    if logging && a.id.is_none_or(|(_, seq_given)| !seq_given) {
        let mut v = argv.to_vec();
        v[a.fields_at - 1] = id_bulk(id);
        log = Some(v);
    }
    let mut trimmed = 0;
    if let Some(to) = a.to {
        trimmed = s.trim(to, a.approx, a.limit);
        if logging && a.approx {
            let base = log.take().unwrap_or_else(|| argv.to_vec());
            log = Some(exact_trim_argv(&base, a, s));
        }
    }
    Ok((id, trimmed, log))
}

pub(crate) const XRANGE: CommandSpec = CommandSpec {
    name: "XRANGE",
    group: Group::Stream,
    arity: -4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns the messages from a stream within a range of IDs.",
    since: "5.0.0",
    complexity: "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
    subcommands: &[],
    run: xrange,
};

fn xrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    range_command(ctx, args, false)
}

/// A range bound: `(` makes it exclusive (not with `-` or `+`).
fn parse_bound(arg: &[u8], start: bool) -> Result<StreamId, CmdError> {
    let missing = if start { 0 } else { u64::MAX };
    if let Some(rest) = arg.strip_prefix(b"(") {
        if rest == b"-" || rest == b"+" {
            return Err(invalid_id());
        }
        let id = parse_strict_id(rest, missing)?;
        let moved = if start { id.next() } else { id.prev() };
        return moved.ok_or_else(|| {
            CmdError::err(if start {
                "invalid start ID for the interval"
            } else {
                "invalid end ID for the interval"
            })
        });
    }
    parse_range_id(arg, missing)
}

/// XRANGE and XREVRANGE (whose bounds come end first).
fn range_command(ctx: &mut Ctx<'_>, args: &mut Args<'_>, rev: bool) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let first = args.next_arg()?;
    let second = args.next_arg()?;
    let (start_arg, end_arg) = if rev {
        (second, first)
    } else {
        (first, second)
    };
    let start = parse_bound(start_arg, true)?;
    let end = parse_bound(end_arg, false)?;
    let mut count: i64 = -1;
    while let Some(opt) = args.next_opt() {
        if is(opt, "COUNT") && !args.is_empty() {
            count = parse_i64(args.next_arg()?)?.max(0);
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let Some(s) = stream_read(ctx, key)? else {
        ctx.hit(false);
        return Ok(Frame::Array(Vec::new()));
    };
    if count == 0 {
        return Ok(Frame::NullArray);
    }
    let n = if count < 0 {
        usize::MAX
    } else {
        count as usize
    };
    Ok(if rev {
        entries_reply(s.rev_range(start, end).take(n))
    } else {
        entries_reply(s.range(start, end).take(n))
    })
}

pub(crate) const XREVRANGE: CommandSpec = CommandSpec {
    name: "XREVRANGE",
    group: Group::Stream,
    arity: -4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns the messages from a stream within a range of IDs in reverse order.",
    since: "5.0.0",
    complexity: "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
    subcommands: &[],
    run: xrevrange,
};

fn xrevrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    range_command(ctx, args, true)
}

pub(crate) const XLEN: CommandSpec = CommandSpec {
    name: "XLEN",
    group: Group::Stream,
    arity: 2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Return the number of messages in a stream.",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: xlen,
};

fn xlen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let n = stream_read(ctx, key)?.map_or(0, Stream::len);
    Ok(Frame::Integer(n as i64))
}

pub(crate) const XDEL: CommandSpec = CommandSpec {
    name: "XDEL",
    group: Group::Stream,
    arity: -3,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the number of messages after removing them from a stream.",
    since: "5.0.0",
    complexity: "O(1) for each single item to delete in the stream, regardless of the stream size.",
    subcommands: &[],
    run: xdel,
};

fn xdel(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    // Redis wakes no blocked reader for this write (only XADD and the
    // key's creation or deletion do).
    ctx.wake_no_waiter();
    let key = args.next_key()?;
    // A missing key answers 0 before the ids are looked at; then every id
    // is checked before anything is deleted, as in Redis.
    if stream_write(ctx, key)?.is_none() {
        return Ok(Frame::Integer(0));
    }
    let ids = args
        .rest()
        .iter()
        .map(|a| parse_strict_id(a, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(s) = stream_write(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    let deleted = ids.into_iter().filter(|id| s.delete(*id)).count();
    if deleted > 0 {
        ctx.dirty(deleted as u64);
        ctx.notify(Class::STREAM, "xdel", key);
    }
    Ok(Frame::Integer(deleted as i64))
}

pub(crate) const XTRIM: CommandSpec = CommandSpec {
    name: "XTRIM",
    group: Group::Stream,
    arity: -4,
    flags: Flags::WRITE,
    keys: Keys::single(1),
    summary: "Deletes messages from the beginning of a stream.",
    since: "5.0.0",
    complexity: "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
    subcommands: &[],
    run: xtrim,
};

fn xtrim(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.wake_no_waiter();
    let argv = args.argv();
    let key = &argv[1];
    let a = parse_add_or_trim(ctx, argv, false)?;
    let Some(s) = stream_write(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    let Some(to) = a.to else {
        return Err(CmdError::Syntax);
    };
    let removed = s.trim(to, a.approx, a.limit);
    if removed > 0 {
        if a.approx {
            let v = exact_trim_argv(argv, &a, s);
            ctx.rewrite(v);
        }
        ctx.dirty(removed);
        ctx.notify(Class::STREAM, "xtrim", key);
    }
    Ok(Frame::Integer(removed as i64))
}

pub(crate) const XSETID: CommandSpec = CommandSpec {
    name: "XSETID",
    group: Group::Stream,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "An internal command for replicating stream values.",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: xsetid,
};

fn xsetid(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.wake_no_waiter();
    let key = args.next_key()?;
    let id = parse_strict_id(args.next_arg()?, 0)?;
    let mut entries_added: Option<u64> = None;
    let mut max_deleted = StreamId::MIN;
    while let Some(opt) = args.next_opt() {
        if is(opt, "ENTRIESADDED") && !args.is_empty() {
            let n = parse_i64(args.next_arg()?)?;
            if n < 0 {
                return Err(CmdError::err("entries_added must be positive"));
            }
            entries_added = Some(n as u64);
        } else if is(opt, "MAXDELETEDID") && !args.is_empty() {
            max_deleted = parse_strict_id(args.next_arg()?, 0)?;
            if id < max_deleted {
                return Err(CmdError::err(
                    "The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let Some(s) = stream_write(ctx, key)? else {
        return Err(CmdError::NoSuchKey);
    };
    if !s.is_empty() {
        let top = s
            .rev_range(StreamId::MIN, StreamId::MAX)
            .next()
            .map_or(StreamId::MIN, |e| e.id);
        if id < top {
            return Err(CmdError::err(
                "The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added.is_some_and(|n| n < s.len()) {
            return Err(CmdError::err(
                "The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    s.last_id = id;
    if let Some(n) = entries_added {
        s.entries_added = n;
    }
    if max_deleted != StreamId::MIN {
        s.max_deleted_id = max_deleted;
    }
    ctx.dirty(1);
    ctx.notify(Class::STREAM, "xsetid", key);
    Ok(Frame::ok())
}

pub(crate) const XREAD: CommandSpec = CommandSpec {
    name: "XREAD",
    group: Group::Stream,
    arity: -4,
    flags: Flags::READONLY.union(Flags::BLOCKING),
    keys: Keys::Streams,
    summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.",
    since: "5.0.0",
    complexity: "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.",
    subcommands: &[],
    run: xread,
};

/// The milliseconds of a BLOCK option: an integer, not negative; 0 waits
/// forever.
pub(crate) fn parse_block_ms(arg: &[u8]) -> Result<Option<std::time::Duration>, CmdError> {
    let ms = keel_store::num::parse_i64(arg)
        .ok_or_else(|| CmdError::err("timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::err("timeout is negative"));
    }
    Ok((ms > 0).then(|| std::time::Duration::from_millis(ms as u64)))
}

fn xread(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let mut block: Option<Option<std::time::Duration>> = None;
    let mut count: usize = 0;
    let mut streams_at = 0;
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let o = &argv[i];
        if is(o, "BLOCK") && more > 0 {
            if ctx.in_script {
                // Redis refuses it outright rather than treat it as a timeout.
                return Err(CmdError::err(format!(
                    "{} command is not allowed with BLOCK option from scripts",
                    String::from_utf8_lossy(&argv[0])
                )));
            }
            i += 1;
            block = Some(parse_block_ms(&argv[i])?);
        } else if is(o, "COUNT") && more > 0 {
            i += 1;
            count = parse_i64(&argv[i])?.max(0) as usize;
        } else if is(o, "STREAMS") && more > 0 {
            streams_at = i + 1;
            if !(argv.len() - streams_at).is_multiple_of(2) {
                return Err(CmdError::err(
                    "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            break;
        } else if is(o, "GROUP") && more >= 2 {
            return Err(CmdError::err(
                "The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
            ));
        } else if is(o, "NOACK") {
            return Err(CmdError::err(
                "The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
            ));
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if streams_at == 0 {
        return Err(CmdError::Syntax);
    }
    let n = (argv.len() - streams_at) / 2;
    let keys = &argv[streams_at..streams_at + n];
    let id_args = &argv[streams_at + n..];
    let mut ids = Vec::with_capacity(n);
    let mut resolved = false;
    for (key, arg) in keys.iter().zip(id_args) {
        let s = stream_read(ctx, key)?;
        if &arg[..] == b"$" {
            ids.push(s.map_or(StreamId::MIN, Stream::last_id));
            resolved = true;
        } else if &arg[..] == b">" {
            return Err(CmdError::err(
                "The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
            ));
        } else {
            ids.push(parse_strict_id(arg, 0)?);
        }
    }
    let limit = if count == 0 { usize::MAX } else { count };
    let read = |ctx: &mut Ctx<'_>| -> Result<Option<Frame>, CmdError> {
        let mut out: Vec<(Frame, Frame)> = Vec::new();
        let serving = ctx.serving_key().cloned();
        for (key, after) in keys.iter().zip(&ids) {
            if serving.as_ref().is_some_and(|k| k != key) {
                continue;
            }
            let Some(s) = stream_read(ctx, key)? else {
                continue;
            };
            if serving.is_some() {
                // A served client gets the written key alone, as in Redis,
                // once its last id passed the one waited after, even when
                // the new entries are gone again (`MAXLEN 0`, a MULTI's XDEL).
                if s.last_id() <= *after {
                    continue;
                }
                let start = after.next().unwrap_or(StreamId::MAX);
                let limit = if count == 0 {
                    BLOCKED_DEFAULT_COUNT
                } else {
                    limit
                };
                let entries = entries_reply(s.range(start, StreamId::MAX).take(limit));
                out.push((Frame::Bulk(key.clone()), entries));
                break;
            }
            let Some(start) = after.next() else {
                continue;
            };
            let mut it = s.range(start, StreamId::MAX).take(limit).peekable();
            if it.peek().is_none() {
                continue;
            }
            out.push((Frame::Bulk(key.clone()), entries_reply(it)));
        }
        if out.is_empty() {
            return Ok(None);
        }
        Ok(Some(if ctx.resp3() {
            Frame::Map(out)
        } else {
            Frame::Array(
                out.into_iter()
                    .map(|(k, v)| Frame::Array(vec![k, v]))
                    .collect(),
            )
        }))
    };
    let Some(timeout) = block else {
        return Ok(read(ctx)?.unwrap_or(Frame::NullArray));
    };
    // What a served client re-runs: `$` pinned to the last id it stood for.
    let pinned: Vec<Bytes>;
    let rerun = if resolved {
        let mut v = argv.to_vec();
        for (k, id) in ids.iter().enumerate() {
            v[streams_at + n + k] = id_bulk(*id);
        }
        pinned = v;
        &pinned[..]
    } else {
        argv
    };
    ctx.block_or_read(rerun, keys, timeout, Frame::NullArray, read)
}
