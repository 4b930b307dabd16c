//! Stream consumer groups: XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER,
//! DELCONSUMER, HELP), XREADGROUP [BLOCK], XACK, XPENDING, XCLAIM, XAUTOCLAIM
//! and XINFO (STREAM [FULL], GROUPS, CONSUMERS, HELP).
//!
//! The groups themselves (PEL, consumers, the entries-read and lag counting)
//! are `keel_store::stream::groups`; this file parses, replies and logs. As in
//! Redis 7.0, reads through a group are not logged as sent: each delivery is
//! logged as the `XCLAIM ... FORCE JUSTID LASTID` that recreates its PEL
//! entry, a NOACK read as `XGROUP SETID ... ENTRIESREAD`, and a command with
//! several such effects wraps them in MULTI/EXEC.

use crate::streams::BLOCKED_DEFAULT_COUNT;
use bytes::Bytes;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::stream::groups::{AutoClaimed, Claim, ClaimStamp, StreamCounters};
use keel_store::stream::{Group as CGroup, Stream, StreamId};
use keel_store::Value;
use std::time::Duration;

pub static COMMANDS: &[&CommandSpec] = &[
    &XGROUP,
    &XREADGROUP,
    &XACK,
    &XPENDING,
    &XCLAIM,
    &XAUTOCLAIM,
    &XINFO,
];

/// An id where `-` and `+` are refused (Redis's strict form); a bare `ms`
/// takes `missing_seq`.
fn strict_id(a: &[u8], missing_seq: u64) -> Result<StreamId, CmdError> {
    crate::streams::parse_strict_id(a, missing_seq)
}

/// An id where `-` is the smallest and `+` the largest.
fn loose_id(a: &[u8], missing_seq: u64) -> Result<StreamId, CmdError> {
    match a {
        b"-" => Ok(StreamId::MIN),
        b"+" => Ok(StreamId::MAX),
        _ => strict_id(a, missing_seq),
    }
}

/// A range bound: a loose id, or `(id` excluding it; returns whether excluded.
fn interval_id(a: &[u8], missing_seq: u64) -> Result<(StreamId, bool), CmdError> {
    match a.split_first() {
        Some((b'(', rest)) if !rest.is_empty() => Ok((strict_id(rest, missing_seq)?, true)),
        _ => Ok((loose_id(a, missing_seq)?, false)),
    }
}

/// The start of a range, moved past its bound when excluded.
fn range_start(a: &[u8]) -> Result<StreamId, CmdError> {
    match interval_id(a, 0)? {
        (id, false) => Ok(id),
        (id, true) => id
            .next()
            .ok_or_else(|| CmdError::err("invalid start ID for the interval")),
    }
}

fn range_end(a: &[u8]) -> Result<StreamId, CmdError> {
    match interval_id(a, u64::MAX)? {
        (id, false) => Ok(id),
        (id, true) => id
            .prev()
            .ok_or_else(|| CmdError::err("invalid end ID for the interval")),
    }
}

fn id_bytes(id: StreamId) -> Bytes {
    Bytes::from(id.to_string())
}

fn id_frame(id: StreamId) -> Frame {
    Frame::Bulk(id_bytes(id))
}

fn bulk(b: &[u8]) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(b))
}

fn word(s: &'static str) -> Frame {
    Frame::Bulk(Bytes::from_static(s.as_bytes()))
}

fn int(n: impl TryInto<i64>) -> Frame {
    Frame::Integer(n.try_into().unwrap_or(i64::MAX))
}

fn entry_frame(e: &keel_store::stream::Entry<'_>) -> Frame {
    crate::streams::entry_reply(e)
}

/// The entry `id` of `s` as a reply, if the stream still holds it.
fn entry_at(s: &Stream, id: StreamId) -> Option<Frame> {
    s.get(id).map(|e| entry_frame(&e))
}

fn counters(s: &Stream) -> StreamCounters {
    StreamCounters {
        length: s.len(),
        first_id: s.first_id(),
        last_id: s.last_id(),
        max_deleted_id: s.max_deleted_id(),
        entries_added: s.entries_added(),
    }
}

/// The stream at `key`: `None` when absent, WRONGTYPE for another type.
fn stream_mut<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t mut Stream>, CmdError> {
    crate::streams::stream_write(ctx, key)
}

fn group_of<'s>(s: &'s mut Stream, name: &[u8]) -> Option<&'s mut CGroup> {
    s.groups.as_deref_mut().and_then(|g| g.get_mut(name))
}

fn has_group(s: &Stream, name: &[u8]) -> bool {
    s.groups.as_deref().is_some_and(|g| g.get(name).is_some())
}

fn now_i64(ctx: &Ctx<'_>) -> i64 {
    i64::try_from(ctx.now_ms()).unwrap_or(i64::MAX)
}

fn no_key_or_group(key: &[u8], group: &[u8]) -> CmdError {
    CmdError::msg(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    ))
}

/// Redis's reply to a subcommand with options it does not take.
fn sub_syntax(args: &Args<'_>, cmd: &str) -> CmdError {
    let sub = args.argv().get(1).map(|s| &s[..s.len().min(128)]);
    CmdError::err(format!(
        "unknown subcommand or wrong number of arguments for '{}'. Try {cmd} HELP.",
        String::from_utf8_lossy(sub.unwrap_or_default())
    ))
}

// ---------------------------------------------------------------------------
// Effects: what a group command logs instead of itself.

/// `XCLAIM key group consumer 0 id TIME t RETRYCOUNT n FORCE JUSTID LASTID
/// last`: replayed, it puts the PEL entry `id` back exactly as it is now.
fn xclaim_effect(
    key: &[u8],
    group_name: &[u8],
    group: &CGroup,
    id: StreamId,
    p: &keel_store::stream::Pending,
) -> Vec<Bytes> {
    vec![
        Bytes::from_static(b"XCLAIM"),
        Bytes::copy_from_slice(key),
        Bytes::copy_from_slice(group_name),
        Bytes::copy_from_slice(&p.consumer),
        Bytes::from_static(b"0"),
        id_bytes(id),
        Bytes::from_static(b"TIME"),
        Bytes::from(p.delivery_time.to_string()),
        Bytes::from_static(b"RETRYCOUNT"),
        Bytes::from(p.delivery_count.to_string()),
        Bytes::from_static(b"FORCE"),
        Bytes::from_static(b"JUSTID"),
        Bytes::from_static(b"LASTID"),
        id_bytes(group.last_id),
    ]
}

fn setid_effect(key: &[u8], group_name: &[u8], group: &CGroup) -> Vec<Bytes> {
    let read = group
        .entries_read
        .map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
    vec![
        Bytes::from_static(b"XGROUP"),
        Bytes::from_static(b"SETID"),
        Bytes::copy_from_slice(key),
        Bytes::copy_from_slice(group_name),
        id_bytes(group.last_id),
        Bytes::from_static(b"ENTRIESREAD"),
        Bytes::from(read.to_string()),
    ]
}

fn createconsumer_effect(key: &[u8], group_name: &[u8], consumer: &[u8]) -> Vec<Bytes> {
    vec![
        Bytes::from_static(b"XGROUP"),
        Bytes::from_static(b"CREATECONSUMER"),
        Bytes::copy_from_slice(key),
        Bytes::copy_from_slice(group_name),
        Bytes::copy_from_slice(consumer),
    ]
}

/// Group changes leave WATCH and client tracking alone: Redis signals no
/// key change for them (only XGROUP CREATE MKSTREAM's new key is one).
fn unwatched(ctx: &mut Ctx<'_>) {
    if ctx.modified.is_none() {
        ctx.modified = Some(Vec::new());
    }
}

/// The effects of one command, built only when something logs them (the
/// AOF, replicas); counted either way.
struct Effects {
    logging: bool,
    changes: u64,
    list: Vec<Vec<Bytes>>,
}

impl Effects {
    fn new(ctx: &Ctx<'_>) -> Effects {
        Effects {
            logging: ctx.engine.logging(),
            changes: 0,
            list: Vec::new(),
        }
    }

    fn push(&mut self, effect: impl FnOnce() -> Vec<Bytes>) {
        self.changes += 1;
        if self.logging {
            self.list.push(effect());
        }
    }
}

/// Log `effects` as this command's effect: nothing when there are none
/// (the command then changed nothing worth logging), one as it is, several
/// inside MULTI/EXEC as Redis wraps them (unless already inside a
/// transaction or script).
fn emit(ctx: &mut Ctx<'_>, effects: Effects) {
    if effects.changes == 0 {
        return;
    }
    ctx.dirty(effects.changes);
    unwatched(ctx);
    let mut list = effects.list;
    let db = ctx.db();
    if list.len() > 1 && ctx.nested == 0 {
        ctx.log_effect(db, vec![Bytes::from_static(b"MULTI")]);
        for e in list {
            ctx.log_effect(db, e);
        }
        ctx.rewrite(vec![Bytes::from_static(b"EXEC")]);
        return;
    }
    let Some(last) = list.pop() else {
        return;
    };
    for e in list {
        ctx.log_effect(db, e);
    }
    ctx.rewrite(last);
}

// ---------------------------------------------------------------------------
// XGROUP

pub(crate) const XGROUP: CommandSpec = CommandSpec {
    name: "XGROUP",
    group: Group::Stream,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for consumer groups commands.",
    since: "5.0.0",
    complexity: "Depends on subcommand.",
    // In the order Redis lists them.
    subcommands: &[
        &XGROUP_CREATE,
        &XGROUP_DESTROY,
        &XGROUP_HELP,
        &XGROUP_SETID,
        &XGROUP_CREATECONSUMER,
        &XGROUP_DELCONSUMER,
    ],
    run: keel_engine::subcommands::container,
};

const fn xgroup_sub(
    name: &'static str,
    arity: i32,
    flags: Flags,
    summary: &'static str,
    since: &'static str,
    run: keel_engine::spec::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        group: Group::Stream,
        arity,
        flags,
        keys: Keys::single(2),
        summary,
        since,
        complexity: "O(1)",
        subcommands: &[],
        run,
    }
}

pub(crate) const XGROUP_CREATE: CommandSpec = xgroup_sub(
    "XGROUP|CREATE",
    -5,
    Flags::WRITE.union(Flags::DENYOOM),
    "Creates a consumer group.",
    "5.0.0",
    xgroup_create,
);

pub(crate) const XGROUP_SETID: CommandSpec = xgroup_sub(
    "XGROUP|SETID",
    -5,
    Flags::WRITE,
    "Sets the last-delivered ID of a consumer group.",
    "5.0.0",
    xgroup_setid,
);

pub(crate) const XGROUP_DESTROY: CommandSpec = CommandSpec {
    complexity: "O(N) where N is the number of entries in the group's pending entries list (PEL).",
    ..xgroup_sub(
        "XGROUP|DESTROY",
        4,
        Flags::WRITE,
        "Destroys a consumer group.",
        "5.0.0",
        xgroup_destroy,
    )
};

pub(crate) const XGROUP_CREATECONSUMER: CommandSpec = xgroup_sub(
    "XGROUP|CREATECONSUMER",
    5,
    Flags::WRITE.union(Flags::DENYOOM),
    "Creates a consumer in a consumer group.",
    "6.2.0",
    xgroup_createconsumer,
);

pub(crate) const XGROUP_DELCONSUMER: CommandSpec = xgroup_sub(
    "XGROUP|DELCONSUMER",
    5,
    Flags::WRITE,
    "Deletes a consumer from a consumer group.",
    "5.0.0",
    xgroup_delconsumer,
);

pub(crate) const XGROUP_HELP: CommandSpec = CommandSpec {
    keys: Keys::None,
    ..xgroup_sub(
        "XGROUP|HELP",
        2,
        Flags::LOADING.union(Flags::STALE),
        "Returns helpful text about the different subcommands.",
        "5.0.0",
        xgroup_help,
    )
};

fn xgroup_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Prints this help.",
    ]))
}

/// The value of ENTRIESREAD: any integer from 0, or -1 for "unknown".
fn parse_entries_read(a: &[u8]) -> Result<Option<u64>, CmdError> {
    match parse_i64(a)? {
        -1 => Ok(None),
        n if n >= 0 => Ok(Some(n as u64)),
        _ => Err(CmdError::err(
            "value for ENTRIESREAD must be positive or -1",
        )),
    }
}

/// The checks every XGROUP subcommand but HELP shares, in Redis's order:
/// the key must hold a stream (unless MKSTREAM), and SETID, CREATECONSUMER
/// and DELCONSUMER need the group.
fn xgroup_target<'t>(
    ctx: &'t mut Ctx<'_>,
    key: &[u8],
    group: &[u8],
    need_group: bool,
) -> Result<&'t mut Stream, CmdError> {
    let Some(s) = stream_mut(ctx, key)? else {
        return Err(CmdError::err(
            "The XGROUP subcommand requires the key to exist. Note that for CREATE you may want \
             to use the MKSTREAM option to create an empty stream automatically.",
        ));
    };
    if need_group && group_of(s, group).is_none() {
        return Err(CmdError::msg(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            String::from_utf8_lossy(group),
            String::from_utf8_lossy(key)
        )));
    }
    Ok(s)
}

fn xgroup_create(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    // Redis wakes no blocked reader for this write.
    ctx.wake_no_waiter();
    let argv = args.argv();
    let (key, name, id_arg) = (&argv[2], &argv[3], &argv[4]);
    let mut mkstream = false;
    let mut entries_read = None;
    let mut i = 5;
    while i < argv.len() {
        if is(&argv[i], "MKSTREAM") {
            mkstream = true;
            i += 1;
        } else if is(&argv[i], "ENTRIESREAD") && i + 1 < argv.len() {
            entries_read = parse_entries_read(&argv[i + 1])?;
            i += 2;
        } else {
            return Err(sub_syntax(args, "XGROUP"));
        }
    }
    let exists = stream_mut(ctx, key)?.is_some();
    if !exists && !mkstream {
        xgroup_target(ctx, key, name, false)?;
    }
    if argv.len() > 8 {
        return Err(sub_syntax(args, "XGROUP"));
    }
    let id = if id_arg.as_ref() == b"$" {
        stream_mut(ctx, key)?.map_or(StreamId::MIN, |s| s.last_id())
    } else {
        strict_id(id_arg, 0)?
    };
    let now = ctx.now_ms();
    if !exists {
        ctx.table(key)?
            .insert(key, Value::Stream(Box::default()), 0, now);
    }
    let s = stream_mut(ctx, key)?.ok_or(CmdError::NoSuchKey)?;
    let created = s
        .groups
        .get_or_insert_with(Box::default)
        .create(name, id, entries_read);
    if !created {
        if !exists {
            // Not reachable (a new stream has no groups), but never leave
            // a created key unlogged.
            ctx.dirty(1);
        }
        return Err(CmdError::msg(
            "BUSYGROUP Consumer Group name already exists",
        ));
    }
    ctx.dirty(1);
    unwatched(ctx);
    if !exists {
        let db = ctx.db();
        ctx.modified(db, key);
    }
    ctx.notify(Class::STREAM, "xgroup-create", key);
    Ok(Frame::ok())
}

fn xgroup_setid(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.wake_no_waiter();
    let argv = args.argv();
    let (key, name, id_arg) = (&argv[2], &argv[3], &argv[4]);
    let mut entries_read = None;
    let mut i = 5;
    while i < argv.len() {
        if is(&argv[i], "ENTRIESREAD") && i + 1 < argv.len() {
            entries_read = parse_entries_read(&argv[i + 1])?;
            i += 2;
        } else {
            return Err(sub_syntax(args, "XGROUP"));
        }
    }
    let s = xgroup_target(ctx, key, name, true)?;
    if argv.len() != 5 && argv.len() != 7 {
        return Err(sub_syntax(args, "XGROUP"));
    }
    let id = if id_arg.as_ref() == b"$" {
        s.last_id()
    } else {
        loose_id(id_arg, 0)?
    };
    if let Some(g) = group_of(s, name) {
        g.set_id(id, entries_read);
    }
    ctx.dirty(1);
    unwatched(ctx);
    ctx.notify(Class::STREAM, "xgroup-setid", key);
    Ok(Frame::ok())
}

fn xgroup_destroy(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let (key, name) = (&argv[2], &argv[3]);
    let s = xgroup_target(ctx, key, name, false)?;
    let gone = s.groups.as_deref_mut().is_some_and(|g| g.destroy(name));
    if !gone {
        return Ok(Frame::Integer(0));
    }
    // The write marks the key ready: clients blocked reading through the
    // group are answered NOGROUP.
    ctx.dirty(1);
    unwatched(ctx);
    ctx.notify(Class::STREAM, "xgroup-destroy", key);
    Ok(Frame::Integer(1))
}

fn xgroup_createconsumer(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.wake_no_waiter();
    let argv = args.argv();
    let (key, name, consumer) = (&argv[2], &argv[3], &argv[4]);
    let now = now_i64(ctx);
    let s = xgroup_target(ctx, key, name, true)?;
    let created = group_of(s, name).is_some_and(|g| g.create_consumer(consumer, now));
    if !created {
        return Ok(Frame::Integer(0));
    }
    ctx.dirty(1);
    unwatched(ctx);
    ctx.notify(Class::STREAM, "xgroup-createconsumer", key);
    Ok(Frame::Integer(1))
}

fn xgroup_delconsumer(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.wake_no_waiter();
    let argv = args.argv();
    let (key, name, consumer) = (&argv[2], &argv[3], &argv[4]);
    let s = xgroup_target(ctx, key, name, true)?;
    let Some(pending) = group_of(s, name).and_then(|g| g.delete_consumer(consumer)) else {
        return Ok(Frame::Integer(0));
    };
    ctx.dirty(1);
    unwatched(ctx);
    ctx.notify(Class::STREAM, "xgroup-delconsumer", key);
    Ok(int(pending))
}

// ---------------------------------------------------------------------------
// XREADGROUP

pub(crate) const XREADGROUP: CommandSpec = CommandSpec {
    name: "XREADGROUP",
    group: Group::Stream,
    arity: -7,
    flags: Flags::WRITE.union(Flags::BLOCKING),
    keys: Keys::Streams,
    summary: "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.",
    since: "5.0.0",
    complexity: "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
    subcommands: &[],
    run: xreadgroup,
};

/// Where an XREADGROUP reads one stream from.
#[derive(Clone, Copy)]
enum ReadFrom {
    /// `>`: entries never delivered to the group.
    New,
    /// An id: the consumer's own pending entries after it.
    History(StreamId),
}

struct ReadGroup<'a> {
    group: &'a Bytes,
    consumer: &'a Bytes,
    count: usize,
    noack: bool,
    timeout: Option<Option<Duration>>,
    keys: &'a [Bytes],
    ids: &'a [Bytes],
}

fn parse_xreadgroup<'a>(argv: &'a [Bytes], in_script: bool) -> Result<ReadGroup<'a>, CmdError> {
    let mut group = None;
    let mut count = 0usize;
    let mut noack = false;
    let mut timeout = None;
    let mut streams = None;
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let a = &argv[i];
        if is(a, "BLOCK") && more > 0 {
            // Refused in scripts even where it would not block, as Redis does.
            if in_script {
                return Err(CmdError::err(
                    "xreadgroup command is not allowed with BLOCK option from scripts",
                ));
            }
            i += 1;
            timeout = Some(crate::streams::parse_block_ms(&argv[i])?);
        } else if is(a, "COUNT") && more > 0 {
            i += 1;
            count = usize::try_from(parse_i64(&argv[i])?.max(0)).unwrap_or(usize::MAX);
        } else if is(a, "STREAMS") && more > 0 {
            let rest = &argv[i + 1..];
            if !rest.len().is_multiple_of(2) {
                return Err(CmdError::err(
                    "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            streams = Some(rest.split_at(rest.len() / 2));
            break;
        } else if is(a, "GROUP") && more >= 2 {
            group = Some((&argv[i + 1], &argv[i + 2]));
            i += 2;
        } else if is(a, "NOACK") {
            noack = true;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    let Some((keys, ids)) = streams else {
        return Err(CmdError::Syntax);
    };
    let Some((group, consumer)) = group else {
        return Err(CmdError::err("Missing GROUP option for XREADGROUP"));
    };
    Ok(ReadGroup {
        group,
        consumer,
        count,
        noack,
        timeout,
        keys,
        ids,
    })
}

fn xreadgroup(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.wake_no_waiter();
    let argv = args.argv();
    let req = parse_xreadgroup(argv, ctx.in_script)?;
    let Some(timeout) = req.timeout else {
        return Ok(read_groups(ctx, &req)?.unwrap_or(Frame::NullArray));
    };
    ctx.block_or_read(argv, req.keys, timeout, Frame::NullArray, |ctx| {
        read_groups(ctx, &req)
    })
}

/// One XREADGROUP pass over its streams: the reply when any stream was
/// served, `None` when there was nothing new to read.
fn read_groups(ctx: &mut Ctx<'_>, req: &ReadGroup<'_>) -> Result<Option<Frame>, CmdError> {
    let serving = ctx.session.serving.is_some();
    // A served client answers for the key whose write serves it, as in
    // Redis; the other keys are not even looked at.
    let only = ctx.serving_key().cloned();
    let (keys, ids) = match only
        .as_ref()
        .and_then(|k| req.keys.iter().position(|x| x == k))
    {
        Some(at) => (&req.keys[at..=at], &req.ids[at..=at]),
        None => (req.keys, req.ids),
    };
    // Check every stream and id before reading any.
    let mut from = Vec::with_capacity(keys.len());
    for (key, id) in keys.iter().zip(ids) {
        let found = match stream_mut(ctx, key) {
            Ok(s) => s.map(|s| has_group(s, req.group)),
            Err(CmdError::WrongType) if serving => None,
            Err(e) => return Err(e),
        };
        match found {
            Some(true) => {}
            None if serving => {
                return Err(CmdError::msg("UNBLOCKED the stream key no longer exists"))
            }
            Some(false) if serving => {
                return Err(CmdError::msg(
                    "NOGROUP the consumer group this client was blocked on no longer exists",
                ))
            }
            _ => {
                return Err(CmdError::msg(format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                String::from_utf8_lossy(key),
                String::from_utf8_lossy(req.group)
            )))
            }
        }
        from.push(match id.as_ref() {
            b"$" => {
                return Err(CmdError::err(
                    "The $ ID is meaningless in the context of XREADGROUP: you want to read the \
                     history of this consumer by specifying a proper ID, or use the > ID to get \
                     new messages. The $ ID would just return an empty result set.",
                ))
            }
            b">" => ReadFrom::New,
            _ => match strict_id(id, 0)? {
                // The largest id stands for `>` in Redis too.
                StreamId::MAX => ReadFrom::New,
                id => ReadFrom::History(id),
            },
        });
    }
    let count = match req.count {
        0 if serving => BLOCKED_DEFAULT_COUNT,
        n => n,
    };
    let now = now_i64(ctx);
    let mut served: Vec<(Frame, Frame)> = Vec::new();
    let mut effects = Effects::new(ctx);
    let mut created_any = Vec::new();
    for (key, from) in keys.iter().zip(from) {
        let Some(s) = stream_mut(ctx, key)? else {
            continue;
        };
        let (entries, created) = match from {
            ReadFrom::History(after) => read_history(s, req.group, req.consumer, after, count, now),
            ReadFrom::New => match read_new(s, key, req, count, now, serving, &mut effects) {
                Some(r) => r,
                None => continue,
            },
        };
        if created {
            created_any.push(key.clone());
        }
        served.push((Frame::Bulk(key.clone()), Frame::Array(entries)));
        // Serving a blocked client answers for one stream, as Redis does.
        if serving {
            break;
        }
    }
    for key in created_any {
        ctx.notify(Class::STREAM, "xgroup-createconsumer", &key);
    }
    emit(ctx, effects);
    if served.is_empty() {
        return Ok(None);
    }
    Ok(Some(if ctx.resp3() {
        Frame::Map(served)
    } else {
        Frame::Array(
            served
                .into_iter()
                .map(|(k, v)| Frame::Array(vec![k, v]))
                .collect(),
        )
    }))
}

/// A history read: the consumer's pending entries after `after`, each
/// counted as delivered again; an entry deleted since is `[id, nil]`.
/// Logs nothing, as in Redis. Returns the entries and whether the consumer
/// was created.
fn read_history(
    s: &mut Stream,
    group: &[u8],
    consumer: &[u8],
    after: StreamId,
    count: usize,
    now: i64,
) -> (Vec<Frame>, bool) {
    let Some(g) = group_of(s, group) else {
        return (Vec::new(), false);
    };
    let created = g.touch_consumer(consumer, now);
    let Some(start) = after.next() else {
        return (Vec::new(), created);
    };
    let ids = g.consumer_pending_from(consumer, start, count);
    let mut out = Vec::with_capacity(ids.len());
    let mut delivered = Vec::new();
    for id in ids {
        match entry_at(s, id) {
            Some(f) => {
                out.push(f);
                delivered.push(id);
            }
            None => out.push(Frame::Array(vec![id_frame(id), Frame::NullArray])),
        }
    }
    if let Some(g) = group_of(s, group) {
        for id in delivered {
            g.redeliver(id, now);
        }
    }
    (out, created)
}

/// A `>` read: `None` when the stream holds nothing after the group's last
/// id. Otherwise the entries, each delivered to the consumer (unless NOACK),
/// with the effects Redis 7.0 logs for them, and whether the consumer was
/// created. A `serving` read (a blocked client served) answers as soon as
/// the stream's last id passed the group's, even with every entry past it
/// deleted: Redis then replies an empty list for the key.
fn read_new(
    s: &mut Stream,
    key: &[u8],
    req: &ReadGroup<'_>,
    count: usize,
    now: i64,
    serving: bool,
    effects: &mut Effects,
) -> Option<(Vec<Frame>, bool)> {
    let last = group_of(s, req.group)?.last_id;
    // Nothing was added past the group (the common case for a waiting reader).
    if s.last_id() <= last {
        return None;
    }
    let start = last.next()?;
    let mut entries = Vec::new();
    let mut ids = Vec::new();
    for e in s.range(start, StreamId::MAX) {
        entries.push(entry_frame(&e));
        ids.push(e.id);
        if count != 0 && ids.len() == count {
            break;
        }
    }
    // Entries past the group were all deleted: as in Redis, nothing to serve
    // unless a blocked client is being served.
    if ids.is_empty() && !serving {
        return None;
    }
    let c = counters(s);
    let g = group_of(s, req.group)?;
    let created = g.touch_consumer(req.consumer, now);
    if created && (req.noack || ids.is_empty()) {
        effects.push(|| createconsumer_effect(key, req.group, req.consumer));
    }
    let mut propagate_last_id = false;
    for id in ids {
        if g.advance(id, &c) {
            propagate_last_id = true;
        }
        if !req.noack {
            g.deliver(id, req.consumer, now);
            if let Some(p) = g.pel.get(&id) {
                effects.push(|| xclaim_effect(key, req.group, g, id, p));
            }
            // The XCLAIM carries the group's last id.
            propagate_last_id = false;
        }
    }
    if propagate_last_id {
        effects.push(|| setid_effect(key, req.group, g));
    }
    Some((entries, created))
}

// ---------------------------------------------------------------------------
// XACK

pub(crate) const XACK: CommandSpec = CommandSpec {
    name: "XACK",
    group: Group::Stream,
    arity: -4,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.",
    since: "5.0.0",
    complexity: "O(1) for each message ID processed.",
    subcommands: &[],
    run: xack,
};

fn xack(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.wake_no_waiter();
    let argv = args.argv();
    let (key, name) = (&argv[1], &argv[2]);
    let Some(s) = stream_mut(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    let Some(g) = group_of(s, name) else {
        return Ok(Frame::Integer(0));
    };
    // All or nothing: every id is checked before any is acknowledged.
    let ids = argv[3..]
        .iter()
        .map(|a| strict_id(a, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let acked = ids.into_iter().filter(|&id| g.ack(id)).count();
    ctx.dirty(acked as u64);
    unwatched(ctx);
    Ok(int(acked))
}

// ---------------------------------------------------------------------------
// XPENDING

pub(crate) const XPENDING: CommandSpec = CommandSpec {
    name: "XPENDING",
    group: Group::Stream,
    arity: -3,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns the information and entries from a stream consumer group's pending entries list.",
    since: "5.0.0",
    complexity: "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
    subcommands: &[],
    run: xpending,
};

fn xpending(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let (key, name) = (&argv[1], &argv[2]);
    let argc = argv.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(CmdError::Syntax);
    }
    let mut range = None;
    if argc >= 6 {
        let mut at = 3;
        let mut min_idle = 0i64;
        if is(&argv[3], "IDLE") {
            min_idle = parse_i64(&argv[4])?;
            if argc < 8 {
                return Err(CmdError::Syntax);
            }
            at += 2;
        }
        let count = usize::try_from(parse_i64(&argv[at + 2])?.max(0)).unwrap_or(usize::MAX);
        let start = range_start(&argv[at])?;
        let end = range_end(&argv[at + 1])?;
        let consumer = argv.get(at + 3);
        range = Some((start, end, count, min_idle, consumer));
    }
    let now = now_i64(ctx);
    let found = stream_mut(ctx, key)?;
    let Some(g) = found.and_then(|s| group_of(s, name)) else {
        return Err(no_key_or_group(key, name));
    };
    let Some((start, end, count, min_idle, consumer)) = range else {
        let sum = g.pending_summary();
        let Some((lo, hi)) = sum.bounds else {
            return Ok(Frame::Array(vec![
                Frame::Integer(0),
                Frame::Null,
                Frame::Null,
                Frame::NullArray,
            ]));
        };
        let consumers = sum
            .consumers
            .iter()
            .map(|(c, n)| Frame::Array(vec![bulk(c), Frame::Bulk(Bytes::from(n.to_string()))]))
            .collect();
        return Ok(Frame::Array(vec![
            int(sum.count),
            id_frame(lo),
            id_frame(hi),
            Frame::Array(consumers),
        ]));
    };
    let rows = g
        .pending_range(start, end, count, min_idle, consumer.map(|c| &c[..]), now)
        .into_iter()
        .map(|(id, p)| {
            Frame::Array(vec![
                id_frame(id),
                bulk(&p.consumer),
                int(now.saturating_sub(p.delivery_time).max(0)),
                int(p.delivery_count),
            ])
        })
        .collect();
    Ok(Frame::Array(rows))
}

// ---------------------------------------------------------------------------
// XCLAIM

pub(crate) const XCLAIM: CommandSpec = CommandSpec {
    name: "XCLAIM",
    group: Group::Stream,
    arity: -6,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.",
    since: "5.0.0",
    complexity: "O(log N) with N being the number of messages in the PEL of the consumer group.",
    subcommands: &[],
    run: xclaim,
};

fn xclaim(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.wake_no_waiter();
    let argv = args.argv();
    let (key, name, consumer) = (&argv[1], &argv[2], &argv[3]);
    match stream_mut(ctx, key)? {
        Some(s) if has_group(s, name) => {}
        _ => return Err(no_key_or_group(key, name)),
    }
    let min_idle = parse_i64(&argv[4])
        .map_err(|_| CmdError::err("Invalid min-idle-time argument for XCLAIM"))?
        .max(0);
    // The ids run up to the first argument that is not one; options follow.
    let mut ids = Vec::new();
    let mut j = 5;
    while j < argv.len() {
        if argv[j].as_ref() == b"-" || argv[j].as_ref() == b"+" {
            break;
        }
        match keel_store::stream::id::parse_redis(&argv[j], 0, false) {
            Some((id, _)) => ids.push((id, &argv[j])),
            None => break,
        }
        j += 1;
    }
    let now = now_i64(ctx);
    let mut delivery_time = None;
    let mut retry_count = None;
    let mut force = false;
    let mut justid = false;
    let mut last_id = StreamId::MIN;
    while j < argv.len() {
        let more = argv.len() - j - 1;
        let opt = &argv[j];
        let option_int = |a: &[u8], what: &str| {
            parse_i64(a)
                .map_err(|_| CmdError::err(format!("Invalid {what} option argument for XCLAIM")))
        };
        if is(opt, "FORCE") {
            force = true;
        } else if is(opt, "JUSTID") {
            justid = true;
        } else if is(opt, "IDLE") && more > 0 {
            j += 1;
            delivery_time = Some(now.saturating_sub(option_int(&argv[j], "IDLE")?));
        } else if is(opt, "TIME") && more > 0 {
            j += 1;
            delivery_time = Some(option_int(&argv[j], "TIME")?);
        } else if is(opt, "RETRYCOUNT") && more > 0 {
            j += 1;
            retry_count = u64::try_from(option_int(&argv[j], "RETRYCOUNT")?).ok();
        } else if is(opt, "LASTID") && more > 0 {
            j += 1;
            last_id = strict_id(&argv[j], 0)?;
        } else {
            return Err(CmdError::err(format!(
                "Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(opt)
            )));
        }
        j += 1;
    }
    // A time in the future or before the epoch is taken as now rather than
    // refused: clients compute it from their own clocks.
    let delivery_time = match delivery_time {
        Some(t) if (0..=now).contains(&t) => t,
        _ => now,
    };
    let stamp = ClaimStamp {
        delivery_time,
        retry_count,
        justid,
    };
    let mut effects = Effects::new(ctx);
    let s = stream_mut(ctx, key)?.ok_or(CmdError::NoSuchKey)?;
    let exists: Vec<bool> = ids.iter().map(|(id, _)| s.get(*id).is_some()).collect();
    let g = group_of(s, name).ok_or_else(|| no_key_or_group(key, name))?;
    let mut propagate_last_id = false;
    if last_id > g.last_id {
        g.last_id = last_id;
        propagate_last_id = true;
    }
    let mut claimed = Vec::new();
    let mut created = false;
    for (&(id, _), &there) in ids.iter().zip(&exists) {
        let (outcome, made) = g.claim(id, consumer, there, force, min_idle, stamp, now);
        created |= made;
        match outcome {
            Claim::Claimed => {
                if let Some(p) = g.pel.get(&id) {
                    effects.push(|| xclaim_effect(key, name, g, id, p));
                }
                claimed.push(id);
            }
            Claim::Deleted(p) => effects.push(|| xclaim_effect(key, name, g, id, &p)),
            Claim::Skipped => continue,
        }
        propagate_last_id = false;
    }
    if propagate_last_id {
        effects.push(|| setid_effect(key, name, g));
    }
    let reply = if justid {
        claimed.iter().map(|&id| id_frame(id)).collect()
    } else {
        claimed
            .iter()
            .map(|&id| entry_at(s, id).unwrap_or(Frame::Null))
            .collect()
    };
    if created {
        ctx.notify(Class::STREAM, "xgroup-createconsumer", key);
    }
    emit(ctx, effects);
    Ok(Frame::Array(reply))
}

// ---------------------------------------------------------------------------
// XAUTOCLAIM

pub(crate) const XAUTOCLAIM: CommandSpec = CommandSpec {
    name: "XAUTOCLAIM",
    group: Group::Stream,
    arity: -6,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.",
    since: "6.2.0",
    complexity: "O(1) if COUNT is small.",
    subcommands: &[],
    run: xautoclaim,
};

/// The largest COUNT XAUTOCLAIM takes: Redis keeps `count * 16` bytes of
/// ids (and ten times as many attempts) within a signed 64-bit size.
const AUTOCLAIM_MAX_COUNT: i64 = i64::MAX / 16;

fn xautoclaim(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.wake_no_waiter();
    let argv = args.argv();
    let (key, name, consumer) = (&argv[1], &argv[2], &argv[3]);
    let min_idle = parse_i64(&argv[4])
        .map_err(|_| CmdError::err("Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0);
    let start = range_start(&argv[5])?;
    let mut count = 100usize;
    let mut justid = false;
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - j - 1;
        if is(&argv[j], "COUNT") && more > 0 {
            let n = parse_i64(&argv[j + 1])
                .ok()
                .filter(|n| (1..=AUTOCLAIM_MAX_COUNT).contains(n))
                .ok_or_else(|| CmdError::err("COUNT must be > 0"))?;
            count = usize::try_from(n).unwrap_or(usize::MAX);
            j += 1;
        } else if is(&argv[j], "JUSTID") {
            justid = true;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    match stream_mut(ctx, key)? {
        Some(s) if has_group(s, name) => {}
        _ => return Err(no_key_or_group(key, name)),
    }
    let now = now_i64(ctx);
    let mut effects = Effects::new(ctx);
    let s = stream_mut(ctx, key)?.ok_or(CmdError::NoSuchKey)?;
    // Whether each PEL entry's stream entry still exists is asked while the
    // group is borrowed: look them up first, for the ids the scan can reach.
    let reach: Vec<StreamId> = {
        let g = group_of(s, name).ok_or_else(|| no_key_or_group(key, name))?;
        g.pel
            .range(start..)
            .take(count.saturating_mul(10))
            .map(|(id, _)| *id)
            .collect()
    };
    let present: std::collections::HashSet<StreamId> = reach
        .into_iter()
        .filter(|id| s.get(*id).is_some())
        .collect();
    let g = group_of(s, name).ok_or_else(|| no_key_or_group(key, name))?;
    let scan = g.autoclaim(consumer, start, count, min_idle, justid, now, |id| {
        present.contains(&id)
    });
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    for step in &scan.steps {
        match step {
            AutoClaimed::Claimed(id) => {
                if let Some(p) = g.pel.get(id) {
                    effects.push(|| xclaim_effect(key, name, g, *id, p));
                }
                claimed.push(*id);
            }
            AutoClaimed::Deleted(id, p) => {
                effects.push(|| xclaim_effect(key, name, g, *id, p));
                deleted.push(id_frame(*id));
            }
        }
    }
    let entries = if justid {
        claimed.iter().map(|&id| id_frame(id)).collect()
    } else {
        claimed
            .iter()
            .map(|&id| entry_at(s, id).unwrap_or(Frame::Null))
            .collect()
    };
    if scan.created_consumer {
        ctx.notify(Class::STREAM, "xgroup-createconsumer", key);
    }
    emit(ctx, effects);
    Ok(Frame::Array(vec![
        id_frame(scan.next),
        Frame::Array(entries),
        Frame::Array(deleted),
    ]))
}

// ---------------------------------------------------------------------------
// XINFO

pub(crate) const XINFO: CommandSpec = CommandSpec {
    name: "XINFO",
    group: Group::Stream,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for stream introspection commands.",
    since: "5.0.0",
    complexity: "Depends on subcommand.",
    // In the order Redis lists them.
    subcommands: &[&XINFO_HELP, &XINFO_CONSUMERS, &XINFO_STREAM, &XINFO_GROUPS],
    run: keel_engine::subcommands::container,
};

pub(crate) const XINFO_CONSUMERS: CommandSpec = CommandSpec {
    name: "XINFO|CONSUMERS",
    group: Group::Stream,
    arity: 4,
    flags: Flags::READONLY,
    keys: Keys::single(2),
    summary: "Returns a list of the consumers in a consumer group.",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: xinfo_consumers,
};

pub(crate) const XINFO_GROUPS: CommandSpec = CommandSpec {
    name: "XINFO|GROUPS",
    group: Group::Stream,
    arity: 3,
    flags: Flags::READONLY,
    keys: Keys::single(2),
    summary: "Returns a list of the consumer groups of a stream.",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: xinfo_groups,
};

pub(crate) const XINFO_STREAM: CommandSpec = CommandSpec {
    name: "XINFO|STREAM",
    group: Group::Stream,
    arity: -3,
    flags: Flags::READONLY,
    keys: Keys::single(2),
    summary: "Returns information about a stream.",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: xinfo_stream,
};

pub(crate) const XINFO_HELP: CommandSpec = CommandSpec {
    name: "XINFO|HELP",
    group: Group::Stream,
    arity: 2,
    flags: Flags::LOADING.union(Flags::STALE),
    keys: Keys::None,
    summary: "Returns helpful text about the different subcommands.",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: xinfo_help,
};

fn xinfo_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        "HELP",
        "    Prints this help.",
    ]))
}

/// The stream at `key` for XINFO: a missing key is `ERR no such key`.
fn xinfo_stream_of<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<&'t mut Stream, CmdError> {
    let found = stream_mut(ctx, key)?;
    let hit = found.is_some();
    // Re-borrow after counting the hit.
    if !hit {
        ctx.hit_key(key, false);
        return Err(CmdError::NoSuchKey);
    }
    ctx.hit(true);
    stream_mut(ctx, key)?.ok_or(CmdError::NoSuchKey)
}

fn map(pairs: Vec<(&'static str, Frame)>) -> Frame {
    Frame::Map(pairs.into_iter().map(|(k, v)| (word(k), v)).collect())
}

fn lag_frame(g: &CGroup, c: &StreamCounters) -> Frame {
    g.lag(c).map_or(Frame::Null, Frame::Integer)
}

fn entries_read_frame(g: &CGroup) -> Frame {
    g.entries_read.map_or(Frame::Null, int)
}

fn xinfo_consumers(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let (key, name) = (&argv[2], &argv[3]);
    let now = now_i64(ctx);
    let s = xinfo_stream_of(ctx, key)?;
    let Some(g) = group_of(s, name) else {
        return Err(CmdError::msg(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            String::from_utf8_lossy(name),
            String::from_utf8_lossy(key)
        )));
    };
    let rows = g
        .consumers
        .iter()
        .map(|(cname, c)| {
            map(vec![
                ("name", bulk(cname)),
                ("pending", int(c.pending.len())),
                ("idle", int(now.saturating_sub(c.seen_time).max(0))),
            ])
        })
        .collect();
    Ok(Frame::Array(rows))
}

fn xinfo_groups(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = &args.argv()[2];
    let s = xinfo_stream_of(ctx, key)?;
    let c = counters(s);
    let Some(groups) = s.groups.as_deref() else {
        return Ok(Frame::Array(Vec::new()));
    };
    let rows = groups
        .groups
        .iter()
        .map(|(name, g)| {
            map(vec![
                ("name", bulk(name)),
                ("consumers", int(g.consumers.len())),
                ("pending", int(g.pel.len())),
                ("last-delivered-id", id_frame(g.last_id)),
                ("entries-read", entries_read_frame(g)),
                ("lag", lag_frame(g, &c)),
            ])
        })
        .collect();
    Ok(Frame::Array(rows))
}

fn xinfo_stream(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let key = &argv[2];
    let s = xinfo_stream_of(ctx, key)?;
    let mut full = None;
    if argv.len() > 3 {
        if !is(&argv[3], "FULL") {
            return Err(sub_syntax(args, "XINFO"));
        }
        let mut count = 10usize;
        if argv.len() > 4 {
            if argv.len() != 6 || !is(&argv[4], "COUNT") {
                return Err(sub_syntax(args, "XINFO"));
            }
            let n = parse_i64(&argv[5])?;
            count = if n < 0 {
                10
            } else {
                usize::try_from(n).unwrap_or(usize::MAX)
            };
        }
        full = Some(count);
    }
    let c = counters(s);
    let blocks = s.block_count();
    let mut pairs = vec![
        ("length", int(s.len())),
        ("radix-tree-keys", int(blocks)),
        ("radix-tree-nodes", int(s.radix_tree_nodes())),
        ("last-generated-id", id_frame(s.last_id())),
        ("max-deleted-entry-id", id_frame(s.max_deleted_id())),
        ("entries-added", int(s.entries_added())),
        ("recorded-first-entry-id", id_frame(s.first_id())),
    ];
    let Some(count) = full else {
        pairs.push(("groups", int(s.groups.as_deref().map_or(0, |g| g.len()))));
        let first = s.range(StreamId::MIN, StreamId::MAX).next();
        pairs.push((
            "first-entry",
            first.map_or(Frame::Null, |e| entry_frame(&e)),
        ));
        let last = s.rev_range(StreamId::MIN, StreamId::MAX).next();
        pairs.push(("last-entry", last.map_or(Frame::Null, |e| entry_frame(&e))));
        return Ok(map(pairs));
    };
    let take = if count == 0 { usize::MAX } else { count };
    let entries = s
        .range(StreamId::MIN, StreamId::MAX)
        .take(take)
        .map(|e| entry_frame(&e))
        .collect();
    pairs.push(("entries", Frame::Array(entries)));
    let groups = s.groups.as_deref().map_or_else(Vec::new, |gs| {
        gs.groups
            .iter()
            .map(|(name, g)| full_group(name, g, &c, take))
            .collect()
    });
    pairs.push(("groups", Frame::Array(groups)));
    Ok(map(pairs))
}

/// One group of XINFO STREAM FULL, its PEL and consumers cut at `take`.
fn full_group(name: &[u8], g: &CGroup, c: &StreamCounters, take: usize) -> Frame {
    let pel = g
        .pel
        .iter()
        .take(take)
        .map(|(id, p)| {
            Frame::Array(vec![
                id_frame(*id),
                bulk(&p.consumer),
                Frame::Integer(p.delivery_time),
                int(p.delivery_count),
            ])
        })
        .collect();
    let consumers = g
        .consumers
        .iter()
        .map(|(cname, cons)| {
            let own = cons
                .pending
                .iter()
                .take(take)
                .filter_map(|id| {
                    let p = g.pel.get(id)?;
                    Some(Frame::Array(vec![
                        id_frame(*id),
                        Frame::Integer(p.delivery_time),
                        int(p.delivery_count),
                    ]))
                })
                .collect();
            map(vec![
                ("name", bulk(cname)),
                ("seen-time", Frame::Integer(cons.seen_time)),
                ("pel-count", int(cons.pending.len())),
                ("pending", Frame::Array(own)),
            ])
        })
        .collect();
    map(vec![
        ("name", bulk(name)),
        ("last-delivered-id", id_frame(g.last_id)),
        ("entries-read", entries_read_frame(g)),
        ("lag", lag_frame(g, c)),
        ("pel-count", int(g.pel.len())),
        ("pending", Frame::Array(pel)),
        ("consumers", Frame::Array(consumers)),
    ])
}
