//! String commands: GET, SET and the rest of the string family.

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::{StrBytes, Value};

pub static COMMANDS: &[&CommandSpec] = &[
    &GET,
    &SET,
    &SETNX,
    &SETEX,
    &PSETEX,
    &GETSET,
    &GETDEL,
    &GETEX,
    &MGET,
    &MSET,
    &MSETNX,
    &INCR,
    &DECR,
    &INCRBY,
    &DECRBY,
    &INCRBYFLOAT,
    &APPEND,
    &STRLEN,
    &GETRANGE,
    &SUBSTR,
    &SETRANGE,
    &LCS,
];

/// The string held at `key`, `None` if absent, WRONGTYPE for another type.
pub fn read_str<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t [u8]>, CmdError> {
    Ok(ctx
        .read_value(key, keel_store::ValueType::String)?
        .and_then(|v| v.as_str())
        .map(|s| s.as_slice()))
}

/// Apply `f` to the string at `key` in place (bitmaps can be large, so reads
/// never copy them), counting the hit or miss. `None` when the key is missing.
pub fn with_str<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> R,
) -> Result<Option<R>, CmdError> {
    let found = read_str(ctx, key)?.map(f);
    ctx.hit_key(key, found.is_some());
    Ok(found)
}

pub(crate) const GET: CommandSpec = CommandSpec {
    name: "GET",
    group: Group::String,
    arity: 2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the string value of a key.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: get,
};

fn get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let mut out = ctx.take_out();
    let reply = read_str(ctx, key).map(|found| {
        let hit = found.is_some();
        (keel_engine::ctx::bulk_frame(out.as_deref_mut(), found), hit)
    });
    ctx.give_out(out);
    let (reply, hit) = reply?;
    ctx.hit_key(key, hit);
    Ok(reply)
}

/// SET's and GETEX's timed options: (name, ms per unit, absolute time).
fn timed_option(opt: &[u8]) -> Option<(&'static str, i64, bool)> {
    [
        ("EX", 1000, false),
        ("PX", 1, false),
        ("EXAT", 1000, true),
        ("PXAT", 1, true),
    ]
    .into_iter()
    .find(|(n, _, _)| is(opt, n))
}

pub(crate) const SET: CommandSpec = CommandSpec {
    name: "SET",
    group: Group::String,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary:
        "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: set,
};

/// How a write treats the key's existing expiry.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ttl {
    /// Remove any expiry.
    Clear,
    /// Keep the existing expiry (KEEPTTL).
    Keep,
    /// Expire at this absolute Unix ms.
    At(u64),
}

/// Parse an expiry given in `unit_ms` relative (EX/PX) or absolute (EXAT/PXAT)
/// form into absolute ms, with Redis's range checks.
pub(crate) fn expire_at(
    raw: &[u8],
    unit_ms: i64,
    absolute: bool,
    now_ms: u64,
    cmd: &'static str,
) -> Result<u64, CmdError> {
    let n = keel_engine::args::parse_i64(raw)?;
    if n <= 0 {
        return Err(CmdError::InvalidExpire(cmd));
    }
    let ms = n.checked_mul(unit_ms).ok_or(CmdError::InvalidExpire(cmd))?;
    let at = if absolute {
        ms
    } else {
        ms.checked_add(now_ms as i64)
            .ok_or(CmdError::InvalidExpire(cmd))?
    };
    Ok(at as u64)
}

/// Store a string with SET's semantics for the expiry. Returns nothing; the
/// caller has already decided the write should happen.
pub(crate) fn store_str(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    value: &[u8],
    ttl: Ttl,
) -> Result<(), CmdError> {
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    let at = match ttl {
        Ttl::Clear => 0,
        Ttl::At(at) => at,
        Ttl::Keep => table.expiry(key, now).flatten().unwrap_or(0),
    };
    table.insert(key, Value::str(value), at, now);
    ctx.dirty(1);
    Ok(())
}

fn set(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let value = args.next_arg()?;
    let (mut nx, mut xx, mut get_old) = (false, false, false);
    let mut ttl = Ttl::Clear;
    let mut ttl_given: Option<&str> = None;
    let mut expiry = None;
    while let Some(opt) = args.next_opt() {
        if let Some((name, unit, absolute)) = timed_option(opt) {
            // Redis lets an expiry option repeat (the last one wins) but not mix
            // with another kind.
            if ttl_given.is_some_and(|given| given != name) {
                return Err(CmdError::Syntax);
            }
            expiry = Some((args.next_arg()?, unit, absolute));
            ttl_given = Some(name);
        } else if is(opt, "NX") && !xx {
            nx = true;
        } else if is(opt, "XX") && !nx {
            xx = true;
        } else if is(opt, "KEEPTTL") && matches!(ttl_given, None | Some("KEEPTTL")) {
            ttl = Ttl::Keep;
            ttl_given = Some("KEEPTTL");
        } else if is(opt, "GET") {
            get_old = true;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    if let Some((raw, unit, absolute)) = expiry {
        ttl = Ttl::At(expire_at(raw, unit, absolute, ctx.now_ms(), "set")?);
    }
    let old = if get_old {
        // Read as GET reads, counting the hit or miss, as Redis does.
        read_counted(ctx, key)?
    } else {
        None
    };
    let exists = if nx || xx {
        let now = ctx.now_ms();
        ctx.table(key)?.contains(key, now)
    } else {
        false
    };
    if (nx && exists) || (xx && !exists) {
        return Ok(if get_old {
            old.map_or(Frame::Null, Frame::Bulk)
        } else {
            Frame::Null
        });
    }
    store_str(ctx, key, value, ttl)?;
    ctx.notify(Class::STRING, "set", key);
    if matches!(ttl, Ttl::At(_)) {
        ctx.notify(Class::GENERIC, "expire", key);
    }
    if ttl != Ttl::Clear || get_old {
        let mut effect = vec![Bytes::from_static(b"SET"), key.clone(), value.clone()];
        match ttl {
            Ttl::At(at) => {
                effect.extend([Bytes::from_static(b"PXAT"), Bytes::from(at.to_string())])
            }
            Ttl::Keep => effect.push(Bytes::from_static(b"KEEPTTL")),
            Ttl::Clear => {}
        }
        ctx.rewrite(effect);
    }
    Ok(if get_old {
        old.map_or(Frame::Null, Frame::Bulk)
    } else {
        Frame::ok()
    })
}

/// Copy of the string at `key` for a read command, counting the keyspace hit or
/// miss; WRONGTYPE for another type.
fn read_counted(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Bytes>, CmdError> {
    let found = read_str(ctx, key)?.map(Bytes::copy_from_slice);
    ctx.hit_key(key, found.is_some());
    Ok(found)
}

/// Length of the string at `key` for a write command (no hit counting), `None`
/// when the key is missing, WRONGTYPE for another type.
pub fn write_len(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<usize>, CmdError> {
    let now = ctx.now_ms();
    match ctx.table(key)?.get(key, now) {
        None => Ok(None),
        Some(e) => e
            .value
            .as_str()
            .map(|s| Some(s.len()))
            .ok_or(CmdError::WrongType),
    }
}

/// The growable buffer of the string at `key` for an in-place write (APPEND,
/// SETRANGE, SETBIT, BITFIELD), created empty when missing. The key keeps its
/// expiry, as Redis's in-place string edits do. Callers check the type and size
/// limits first (with [`write_len`]) so a refused write creates nothing.
pub fn str_buf_mut<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<&'t mut Vec<u8>, CmdError> {
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    if table.get_mut(key, now).is_none() {
        table.insert(key, Value::Str(StrBytes::new(b"")), 0, now);
    }
    let entry = table
        .get_mut(key, now)
        .ok_or_else(|| CmdError::Internal("string buffer".into()))?;
    Ok(entry
        .value
        .as_str_mut()
        .ok_or(CmdError::WrongType)?
        .make_mut())
}

/// Replace the value of `key` with `value`, keeping its expiry (INCR family).
fn replace_keep_ttl(ctx: &mut Ctx<'_>, key: &[u8], value: &[u8]) -> Result<(), CmdError> {
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    match table.get_mut(key, now) {
        Some(e) => e.value = Value::str(value),
        None => {
            table.insert(key, Value::str(value), 0, now);
        }
    }
    ctx.dirty(1);
    Ok(())
}

/// Whether a string of `len` bytes is within proto-max-bulk-len.
pub(crate) fn check_len(ctx: &Ctx<'_>, len: u64) -> Result<(), CmdError> {
    let max = u64::try_from(ctx.engine.config.proto_max_bulk_len()).unwrap_or(0);
    if len > max {
        return Err(CmdError::StringTooLong);
    }
    Ok(())
}

fn word(s: &'static str) -> Bytes {
    Bytes::from_static(s.as_bytes())
}

pub(crate) const SETNX: CommandSpec = CommandSpec {
    name: "SETNX",
    group: Group::String,
    arity: 3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Set the string value of a key only when the key doesn't exist.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: setnx,
};

fn setnx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let value = args.next_arg()?;
    let now = ctx.now_ms();
    if ctx.table(key)?.contains(key, now) {
        return Ok(Frame::Integer(0));
    }
    store_str(ctx, key, value, Ttl::Clear)?;
    ctx.notify(Class::STRING, "set", key);
    Ok(Frame::Integer(1))
}

pub(crate) const SETEX: CommandSpec = CommandSpec {
    name: "SETEX",
    group: Group::String,
    arity: 4,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary:
        "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: setex,
};

fn setex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    set_with_expiry(ctx, args, 1000, "setex")
}

pub(crate) const PSETEX: CommandSpec = CommandSpec {
    name: "PSETEX",
    group: Group::String,
    arity: 4,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary: "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.",
    since: "2.6.0",
    complexity: "O(1)",
    subcommands: &[],
    run: psetex,
};

fn psetex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    set_with_expiry(ctx, args, 1, "psetex")
}

/// SETEX and PSETEX: `key ttl value`, logged as `SET key value PXAT <abs>`.
fn set_with_expiry(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    unit_ms: i64,
    cmd: &'static str,
) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let raw = args.next_arg()?;
    let value = args.next_arg()?;
    let at = expire_at(raw, unit_ms, false, ctx.now_ms(), cmd)?;
    store_str(ctx, key, value, Ttl::At(at))?;
    ctx.notify(Class::STRING, "set", key);
    ctx.notify(Class::GENERIC, "expire", key);
    ctx.rewrite(vec![
        word("SET"),
        key.clone(),
        value.clone(),
        word("PXAT"),
        Bytes::from(at.to_string()),
    ]);
    Ok(Frame::ok())
}

pub(crate) const GETSET: CommandSpec = CommandSpec {
    name: "GETSET",
    group: Group::String,
    arity: 3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the previous string value of a key after setting it to a new value.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: getset,
};

fn getset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let value = args.next_arg()?;
    let old = read_counted(ctx, key)?;
    store_str(ctx, key, value, Ttl::Clear)?;
    ctx.notify(Class::STRING, "set", key);
    ctx.rewrite(vec![word("SET"), key.clone(), value.clone()]);
    Ok(old.map_or(Frame::Null, Frame::Bulk))
}

pub(crate) const GETDEL: CommandSpec = CommandSpec {
    name: "GETDEL",
    group: Group::String,
    arity: 2,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the string value of a key after deleting the key.",
    since: "6.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: getdel,
};

fn getdel(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let Some(value) = read_counted(ctx, key)? else {
        return Ok(Frame::Null);
    };
    let now = ctx.now_ms();
    ctx.table(key)?.remove(key, now);
    ctx.dirty(1);
    ctx.notify(Class::GENERIC, "del", key);
    ctx.rewrite(vec![word("DEL"), key.clone()]);
    Ok(Frame::Bulk(value))
}

pub(crate) const GETEX: CommandSpec = CommandSpec {
    name: "GETEX",
    group: Group::String,
    arity: -2,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the string value of a key after setting its expiration time.",
    since: "6.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: getex,
};

fn getex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let mut given: Option<&str> = None;
    let mut expiry = None;
    while let Some(opt) = args.next_opt() {
        let timed = timed_option(opt);
        // As in SET, an option may repeat but not mix with another kind.
        match timed {
            Some((name, unit, absolute)) if none_or_same(given, name) && !args.is_empty() => {
                expiry = Some((args.next_arg()?, unit, absolute));
                given = Some(name);
            }
            None if is(opt, "PERSIST") && none_or_same(given, "PERSIST") => {
                given = Some("PERSIST");
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    let Some(value) = read_counted(ctx, key)? else {
        return Ok(Frame::Null);
    };
    let now = ctx.now_ms();
    if let Some((raw, unit, absolute)) = expiry {
        let at = expire_at(raw, unit, absolute, now, "getex")?;
        let table = ctx.table(key)?;
        if absolute && at <= now {
            // An absolute time already past deletes the key, as Redis does.
            table.remove(key, now);
            ctx.notify(Class::GENERIC, "del", key);
            ctx.rewrite(vec![word("DEL"), key.clone()]);
        } else {
            table.set_expire(key, at, now);
            ctx.notify(Class::GENERIC, "expire", key);
            ctx.rewrite(vec![
                word("PEXPIREAT"),
                key.clone(),
                Bytes::from(at.to_string()),
            ]);
        }
        ctx.dirty(1);
    } else if given == Some("PERSIST") {
        let table = ctx.table(key)?;
        let had_ttl = table.expiry(key, now).flatten().is_some();
        if had_ttl {
            table.set_expire(key, 0, now);
            ctx.notify(Class::GENERIC, "persist", key);
            ctx.rewrite(vec![word("PERSIST"), key.clone()]);
            ctx.dirty(1);
        }
    }
    Ok(Frame::Bulk(value))
}

/// Whether an expiry option may follow `given`: none yet, or the same one again.
fn none_or_same(given: Option<&str>, name: &str) -> bool {
    given.is_none() || given == Some(name)
}

pub(crate) const MGET: CommandSpec = CommandSpec {
    name: "MGET",
    group: Group::String,
    arity: -2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::range(1, -1, 1),
    summary: "Atomically returns the string values of one or more keys.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of keys to retrieve.",
    subcommands: &[],
    run: mget,
};

fn mget(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let keys = args.rest();
    let now = ctx.now_ms();
    let no_touch = ctx.session.no_touch;
    // While every value so far is a string, the reply is encoded as it is
    // read (one copy per value, no frame each); a nil's encoding differs
    // between RESP2 and RESP3, so the first one turns what was encoded into
    // frames and the rest follows as frames.
    let mut encoded = Some(keel_resp::BulkArray::new());
    let mut out = Vec::new();
    for key in keys {
        let table = ctx.table(key)?;
        let entry = if no_touch {
            table.peek(key, now)
        } else {
            table.get(key, now)
        };
        let found = entry.is_some();
        // A key of another type reads as nil here, not as an error.
        let value = entry.and_then(|e| e.value.as_str()).map(|s| s.as_slice());
        match (&mut encoded, value) {
            (Some(bulks), Some(v)) => bulks.push(v),
            (None, Some(v)) => out.push(Frame::bulk_from_slice(v)),
            (bulks, None) => {
                if let Some(bulks) = bulks.take() {
                    let done = bulks.len();
                    out = frames_of(bulks.finish(), keys.len());
                    debug_assert_eq!(out.len(), done, "an encoded bulk array parses back whole");
                }
                out.push(Frame::Null);
            }
        }
        ctx.hit_key(key, found);
    }
    Ok(match encoded {
        Some(bulks) => bulks.finish(),
        None => Frame::Array(out),
    })
}

/// The elements of an encoded array of bulks, as frames.
fn frames_of(encoded: Frame, capacity: usize) -> Vec<Frame> {
    let mut out = Vec::with_capacity(capacity);
    if let Frame::Encoded(raw) = encoded {
        if let Ok(Some((Frame::Array(items), _))) = keel_resp::parse_frame(&raw) {
            out.extend(items);
        }
    }
    out
}

pub(crate) const MSET: CommandSpec = CommandSpec {
    name: "MSET",
    group: Group::String,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(1, -1, 2),
    summary: "Atomically creates or modifies the string values of one or more keys.",
    since: "1.0.1",
    complexity: "O(N) where N is the number of keys to set.",
    subcommands: &[],
    run: mset,
};

fn mset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    set_pairs(ctx, args, false, "mset")
}

pub(crate) const MSETNX: CommandSpec = CommandSpec {
    name: "MSETNX",
    group: Group::String,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(1, -1, 2),
    summary:
        "Atomically modifies the string values of one or more keys only when all keys don't exist.",
    since: "1.0.1",
    complexity: "O(N) where N is the number of keys to set.",
    subcommands: &[],
    run: msetnx,
};

fn msetnx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    set_pairs(ctx, args, true, "msetnx")
}

fn set_pairs(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    nx: bool,
    cmd: &str,
) -> Result<Frame, CmdError> {
    let pairs = args.rest();
    if pairs.len() & 1 == 1 {
        return Err(CmdError::WrongArity(cmd.into()));
    }
    let now = ctx.now_ms();
    if nx {
        for pair in pairs.chunks_exact(2) {
            if ctx.table(&pair[0])?.contains(&pair[0], now) {
                return Ok(Frame::Integer(0));
            }
        }
    }
    for pair in pairs.chunks_exact(2) {
        store_str(ctx, &pair[0], &pair[1], Ttl::Clear)?;
        ctx.notify(Class::STRING, "set", &pair[0]);
    }
    Ok(if nx { Frame::Integer(1) } else { Frame::ok() })
}

/// Add `delta` to the integer at `key` (0 when missing), keeping its expiry.
/// INCR, DECR, INCRBY, DECRBY: one lookup, the value replaced in place (its
/// TTL kept), the new number formatted on the stack.
fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> Result<Frame, CmdError> {
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    let new = match table.get_mut(key, now) {
        None => {
            let new = delta;
            table.insert(
                key,
                Value::str(itoa::Buffer::new().format(new).as_bytes()),
                0,
                now,
            );
            new
        }
        Some(e) => {
            let s = e.value.as_str().ok_or(CmdError::WrongType)?;
            let current = keel_store::num::parse_i64(s.as_slice()).ok_or(CmdError::NotInteger)?;
            let new = current.checked_add(delta).ok_or(CmdError::Overflow)?;
            e.value = Value::str(itoa::Buffer::new().format(new).as_bytes());
            new
        }
    };
    ctx.dirty(1);
    ctx.notify(Class::STRING, "incrby", key);
    Ok(Frame::Integer(new))
}

pub(crate) const INCR: CommandSpec = CommandSpec {
    name: "INCR",
    group: Group::String,
    arity: 2,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: incr,
};

fn incr(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    incr_by(ctx, key, 1)
}

pub(crate) const DECR: CommandSpec = CommandSpec {
    name: "DECR",
    group: Group::String,
    arity: 2,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: decr,
};

fn decr(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    incr_by(ctx, key, -1)
}

pub(crate) const INCRBY: CommandSpec = CommandSpec {
    name: "INCRBY",
    group: Group::String,
    arity: 3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: incrby,
};

fn incrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let delta = args.next_i64()?;
    incr_by(ctx, key, delta)
}

pub(crate) const DECRBY: CommandSpec = CommandSpec {
    name: "DECRBY",
    group: Group::String,
    arity: 3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: decrby,
};

fn decrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let delta = args.next_i64()?;
    let delta = delta
        .checked_neg()
        .ok_or_else(|| CmdError::err("decrement would overflow"))?;
    incr_by(ctx, key, delta)
}

pub(crate) const INCRBYFLOAT: CommandSpec = CommandSpec {
    name: "INCRBYFLOAT",
    group: Group::String,
    arity: 3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
    since: "2.6.0",
    complexity: "O(1)",
    subcommands: &[],
    run: incrbyfloat,
};

fn incrbyfloat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    use keel_store::longdouble::{incr_by_float, IncrFloatError};
    let key = args.next_key()?;
    let incr = args.next_arg()?;
    let now = ctx.now_ms();
    let current = match ctx.table(key)?.get(key, now) {
        None => Bytes::from_static(b"0"),
        Some(e) => Bytes::copy_from_slice(e.value.as_str().ok_or(CmdError::WrongType)?.as_slice()),
    };
    // Redis computes in long double; the model gives its exact digits.
    let result = incr_by_float(&current, incr).map_err(|e| match e {
        IncrFloatError::NotFloat => CmdError::NotFloat,
        IncrFloatError::NanOrInfinity => CmdError::err("increment would produce NaN or Infinity"),
    })?;
    let result = Bytes::from(result);
    replace_keep_ttl(ctx, key, &result)?;
    ctx.notify(Class::STRING, "incrbyfloat", key);
    ctx.rewrite(vec![
        word("SET"),
        key.clone(),
        result.clone(),
        word("KEEPTTL"),
    ]);
    Ok(Frame::Bulk(result))
}

pub(crate) const APPEND: CommandSpec = CommandSpec {
    name: "APPEND",
    group: Group::String,
    arity: 3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.",
    since: "2.0.0",
    complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
    subcommands: &[],
    run: append,
};

fn append(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let tail = args.next_arg()?;
    let len = match write_len(ctx, key)? {
        None => {
            store_str(ctx, key, tail, Ttl::Clear)?;
            ctx.notify(Class::STRING, "append", key);
            return Ok(Frame::Integer(tail.len() as i64));
        }
        Some(len) => len,
    };
    check_len(ctx, (len + tail.len()) as u64)?;
    let buf = str_buf_mut(ctx, key)?;
    buf.extend_from_slice(tail);
    let len = buf.len();
    ctx.dirty(1);
    ctx.notify(Class::STRING, "append", key);
    Ok(Frame::Integer(len as i64))
}

pub(crate) const STRLEN: CommandSpec = CommandSpec {
    name: "STRLEN",
    group: Group::String,
    arity: 2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the length of a string value.",
    since: "2.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: strlen,
};

fn strlen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let len = read_str(ctx, key)?.map(<[u8]>::len);
    ctx.hit_key(key, len.is_some());
    Ok(Frame::Integer(len.unwrap_or(0) as i64))
}

pub(crate) const GETRANGE: CommandSpec = CommandSpec {
    name: "GETRANGE",
    group: Group::String,
    arity: 4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns a substring of the string stored at a key.",
    since: "2.4.0",
    complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
    subcommands: &[],
    run: getrange,
};

pub(crate) const SUBSTR: CommandSpec = CommandSpec {
    name: "SUBSTR",
    group: Group::String,
    arity: 4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns a substring from a string value.",
    since: "1.0.0",
    complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
    subcommands: &[],
    run: getrange,
};

fn getrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let start = args.next_i64()?;
    let end = args.next_i64()?;
    let part = with_str(ctx, key, |s| {
        // Both ends counted from the end and reversed: empty before any clamping.
        if start < 0 && end < 0 && start > end {
            return Bytes::new();
        }
        match keel_store::bits::resolve_range(start, end, s.len() as u64) {
            Some((a, z)) => Bytes::copy_from_slice(&s[a as usize..=z as usize]),
            None => Bytes::new(),
        }
    })?;
    Ok(Frame::Bulk(part.unwrap_or_default()))
}

pub(crate) const SETRANGE: CommandSpec = CommandSpec {
    name: "SETRANGE",
    group: Group::String,
    arity: 4,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.",
    since: "2.2.0",
    complexity: "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
    subcommands: &[],
    run: setrange,
};

fn setrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let offset = args.next_i64()?;
    let patch = args.next_arg()?;
    if offset < 0 {
        return Err(CmdError::OutOfRange("offset"));
    }
    let len = write_len(ctx, key)?;
    if patch.is_empty() {
        // Writing nothing changes nothing and creates no key.
        return Ok(Frame::Integer(len.unwrap_or(0) as i64));
    }
    let offset = offset as u64;
    check_len(ctx, offset.saturating_add(patch.len() as u64))?;
    let (start, end) = (offset as usize, offset as usize + patch.len());
    let buf = str_buf_mut(ctx, key)?;
    if buf.len() < end {
        // The offset is the client's number: fail the command, not the process,
        // if the memory is not there.
        if buf.try_reserve(end - buf.len()).is_err() {
            return Err(CmdError::err("out of memory growing the string"));
        }
        buf.resize(end, 0);
    }
    buf[start..end].copy_from_slice(patch);
    let len = buf.len();
    ctx.dirty(1);
    ctx.notify(Class::STRING, "setrange", key);
    Ok(Frame::Integer(len as i64))
}

pub(crate) const LCS: CommandSpec = CommandSpec {
    name: "LCS",
    group: Group::String,
    arity: -3,
    flags: Flags::READONLY,
    keys: Keys::range(1, 2, 1),
    summary: "Finds the longest common substring.",
    since: "7.0.0",
    complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
    subcommands: &[],
    run: lcs,
};

fn lcs(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let ka = args.next_key()?;
    let kb = args.next_key()?;
    let mut strings = [Bytes::new(), Bytes::new()];
    for (slot, key) in strings.iter_mut().zip([ka, kb]) {
        match read_str(ctx, key) {
            Ok(v) => {
                let found = v.map(Bytes::copy_from_slice);
                ctx.hit_key(key, found.is_some());
                *slot = found.unwrap_or_default();
            }
            Err(CmdError::WrongType) => {
                return Err(CmdError::err(
                    "The specified keys must contain string values",
                ))
            }
            Err(e) => return Err(e),
        }
    }
    let (mut want_len, mut want_idx, mut with_len) = (false, false, false);
    let mut min_len: i64 = 0;
    while let Some(opt) = args.next_opt() {
        if is(opt, "IDX") {
            want_idx = true;
        } else if is(opt, "LEN") {
            want_len = true;
        } else if is(opt, "WITHMATCHLEN") {
            with_len = true;
        } else if is(opt, "MINMATCHLEN") && !args.is_empty() {
            min_len = args.next_i64()?.max(0);
        } else {
            return Err(CmdError::Syntax);
        }
    }
    if want_idx && want_len {
        return Err(CmdError::err(
            "If you want both the length and indexes, please just use IDX.",
        ));
    }
    let [a, b] = strings;
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1).saturating_mul(blen as u64 + 1);
    let limit = u64::try_from(ctx.engine.config.proto_max_bulk_len()).unwrap_or(0);
    if cells.saturating_mul(4) > limit {
        return Err(CmdError::err(
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    // table[i * (blen + 1) + j]: LCS length of a[..i] and b[..j].
    let w = blen + 1;
    let mut table: Vec<u32> = Vec::new();
    if table.try_reserve_exact(cells as usize).is_err() {
        return Err(CmdError::err(
            "Insufficient memory, failed allocating transient memory for LCS",
        ));
    }
    table.resize(cells as usize, 0);
    for i in 1..=alen {
        for j in 1..=blen {
            table[i * w + j] = if a[i - 1] == b[j - 1] {
                table[(i - 1) * w + j - 1] + 1
            } else {
                table[(i - 1) * w + j].max(table[i * w + j - 1])
            };
        }
    }
    let total = table[alen * w + blen];
    if want_len {
        return Ok(Frame::Integer(i64::from(total)));
    }
    // Walk back from the end, collecting the common string and, for IDX, the
    // runs of matches, newest first, as Redis reports them.
    let mut common = vec![0u8; total as usize];
    let mut k = total as usize;
    let mut matches = Vec::new();
    let mut run: Option<(usize, usize, usize, usize)> = None;
    let (mut i, mut j) = (alen, blen);
    let emit = |run: (usize, usize, usize, usize), out: &mut Vec<Frame>| {
        let (a0, a1, b0, b1) = run;
        let len = (a1 - a0 + 1) as i64;
        if min_len == 0 || len >= min_len {
            let mut m = vec![
                Frame::Array(vec![Frame::Integer(a0 as i64), Frame::Integer(a1 as i64)]),
                Frame::Array(vec![Frame::Integer(b0 as i64), Frame::Integer(b1 as i64)]),
            ];
            if with_len {
                m.push(Frame::Integer(len));
            }
            out.push(Frame::Array(m));
        }
    };
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            common[k - 1] = a[i - 1];
            k -= 1;
            let r = match run {
                Some((a0, a1, b0, b1)) if a0 == i && b0 == j => (a0 - 1, a1, b0 - 1, b1),
                Some(r) => {
                    emit(r, &mut matches);
                    (i - 1, i - 1, j - 1, j - 1)
                }
                None => (i - 1, i - 1, j - 1, j - 1),
            };
            i -= 1;
            j -= 1;
            if r.0 == 0 || r.2 == 0 {
                emit(r, &mut matches);
                run = None;
            } else {
                run = Some(r);
            }
        } else {
            if table[(i - 1) * w + j] > table[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if let Some(r) = run.take() {
                emit(r, &mut matches);
            }
        }
    }
    if !want_idx {
        return Ok(Frame::Bulk(Bytes::from(common)));
    }
    Ok(Frame::Map(vec![
        (Frame::bulk(word("matches")), Frame::Array(matches)),
        (Frame::bulk(word("len")), Frame::Integer(i64::from(total))),
    ]))
}
