//! Generic key commands: DEL, UNLINK, EXISTS, TYPE, TOUCH, the EXPIRE and TTL
//! families, PERSIST, KEYS, SCAN, RENAME, RENAMENX, RANDOMKEY, COPY, MOVE and
//! OBJECT. They work on any value type and follow Redis 7.0's replies and errors.

use bytes::Bytes;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::scan::{parse_cursor, scan_options, scan_reply, ScanOptions};
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::glob::glob_match;
use keel_store::{Keyspace, ValueType};

pub static COMMANDS: &[&CommandSpec] = &[
    &DEL,
    &UNLINK,
    &EXISTS,
    &TYPE,
    &TOUCH,
    &EXPIRE,
    &PEXPIRE,
    &EXPIREAT,
    &PEXPIREAT,
    &TTL,
    &PTTL,
    &EXPIRETIME,
    &PEXPIRETIME,
    &PERSIST,
    &KEYS,
    &SCAN,
    &RENAME,
    &RENAMENX,
    &RANDOMKEY,
    &COPY,
    &MOVE,
    &OBJECT,
];

/// Every key argument from the current position on.
const ALL_KEYS: Keys = Keys::range(1, -1, 1);

fn bytes_of(b: &[u8]) -> Bytes {
    Bytes::copy_from_slice(b)
}

/// Remove each key in `args`, counting those that existed.
fn delete_keys(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let now = ctx.now_ms();
    let mut n = 0u64;
    for key in args.rest() {
        if ctx.table(key)?.remove(key, now).is_some() {
            n += 1;
            ctx.notify(Class::GENERIC, "del", key);
        }
    }
    ctx.dirty(n);
    Ok(Frame::Integer(n as i64))
}

pub(crate) const DEL: CommandSpec = CommandSpec {
    name: "DEL",
    group: Group::Generic,
    arity: -2,
    flags: Flags::WRITE,
    keys: ALL_KEYS,
    summary: "Deletes one or more keys.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of keys that will be removed.",
    subcommands: &[],
    run: del,
};

fn del(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    delete_keys(ctx, args)
}

pub(crate) const UNLINK: CommandSpec = CommandSpec {
    name: "UNLINK",
    group: Group::Generic,
    arity: -2,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: ALL_KEYS,
    summary: "Deletes one or more keys, reclaiming their memory without blocking other clients.",
    since: "4.0.0",
    complexity: "O(1) for each key removed regardless of its size.",
    subcommands: &[],
    run: unlink,
};

/// Keel frees values inline: an entry is one allocation plus its value's, so
/// there is nothing a background thread would save.
fn unlink(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    delete_keys(ctx, args)
}

pub(crate) const EXISTS: CommandSpec = CommandSpec {
    name: "EXISTS",
    group: Group::Generic,
    arity: -2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: ALL_KEYS,
    summary: "Counts how many of the given keys exist; a key named twice counts twice.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of keys to check.",
    subcommands: &[],
    run: exists,
};

fn exists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let now = ctx.now_ms();
    let mut n = 0i64;
    for key in args.rest() {
        let found = ctx.table(key)?.contains(key, now);
        ctx.hit_key(key, found);
        n += i64::from(found);
    }
    Ok(Frame::Integer(n))
}

pub(crate) const TYPE: CommandSpec = CommandSpec {
    name: "TYPE",
    group: Group::Generic,
    arity: 2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the type of value a key holds, or none.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: type_of,
};

fn type_of(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let now = ctx.now_ms();
    let name = ctx
        .table(key)?
        .peek(key, now)
        .map(|e| e.value.value_type().name());
    ctx.hit_key(key, name.is_some());
    Ok(Frame::simple(name.unwrap_or("none")))
}

pub(crate) const TOUCH: CommandSpec = CommandSpec {
    name: "TOUCH",
    group: Group::Generic,
    arity: -2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: ALL_KEYS,
    summary: "Records an access to each existing key and counts them.",
    since: "3.2.1",
    complexity: "O(N) where N is the number of keys that will be touched.",
    subcommands: &[],
    run: touch,
};

fn touch(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let now = ctx.now_ms();
    let mut n = 0i64;
    for key in args.rest() {
        let found = ctx.table(key)?.get(key, now).is_some();
        ctx.hit_key(key, found);
        n += i64::from(found);
    }
    Ok(Frame::Integer(n))
}

const EXPIRE_FLAGS: Flags = Flags::WRITE.union(Flags::FAST);

pub(crate) const EXPIRE: CommandSpec = CommandSpec {
    name: "EXPIRE",
    group: Group::Generic,
    arity: -3,
    flags: EXPIRE_FLAGS,
    keys: Keys::single(1),
    summary: "Sets a key's time to live in seconds.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: expire,
};

fn expire(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    set_expiry(ctx, args, 1000, false, "expire")
}

pub(crate) const PEXPIRE: CommandSpec = CommandSpec {
    name: "PEXPIRE",
    group: Group::Generic,
    arity: -3,
    flags: EXPIRE_FLAGS,
    keys: Keys::single(1),
    summary: "Sets a key's time to live in milliseconds.",
    since: "2.6.0",
    complexity: "O(1)",
    subcommands: &[],
    run: pexpire,
};

fn pexpire(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    set_expiry(ctx, args, 1, false, "pexpire")
}

pub(crate) const EXPIREAT: CommandSpec = CommandSpec {
    name: "EXPIREAT",
    group: Group::Generic,
    arity: -3,
    flags: EXPIRE_FLAGS,
    keys: Keys::single(1),
    summary: "Sets a key's expiry to a Unix time in seconds.",
    since: "1.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: expireat,
};

fn expireat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    set_expiry(ctx, args, 1000, true, "expireat")
}

pub(crate) const PEXPIREAT: CommandSpec = CommandSpec {
    name: "PEXPIREAT",
    group: Group::Generic,
    arity: -3,
    flags: EXPIRE_FLAGS,
    keys: Keys::single(1),
    summary: "Sets a key's expiry to a Unix time in milliseconds.",
    since: "2.6.0",
    complexity: "O(1)",
    subcommands: &[],
    run: pexpireat,
};

fn pexpireat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    set_expiry(ctx, args, 1, true, "pexpireat")
}

/// The shared body of EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT. As in Redis 7.0
/// the NX|XX|GT|LT options are checked before the time argument is parsed, a key
/// without expiry counts as an infinite TTL for GT and LT, and a deadline that is
/// not in the future deletes the key.
fn set_expiry(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    unit_ms: i64,
    absolute: bool,
    cmd: &'static str,
) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let raw = args.next_arg()?;
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in args.rest() {
        if is(opt, "NX") {
            nx = true;
        } else if is(opt, "XX") {
            xx = true;
        } else if is(opt, "GT") {
            gt = true;
        } else if is(opt, "LT") {
            lt = true;
        } else {
            return Err(CmdError::err(format_args!(
                "Unsupported option {}",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(CmdError::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(CmdError::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    let now = ctx.now_ms();
    // Negative times are allowed (they delete the key); only overflow is an error.
    let base = if absolute { 0 } else { now as i64 };
    let when = parse_i64(raw)?
        .checked_mul(unit_ms)
        .and_then(|ms| ms.checked_add(base))
        .ok_or(CmdError::InvalidExpire(cmd))?;
    let table = ctx.table(key)?;
    let Some(current) = table.expiry(key, now) else {
        return Ok(Frame::Integer(0));
    };
    let current = current.map(|at| at as i64);
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| when <= c))
        || (lt && current.is_some_and(|c| when >= c));
    if refused {
        return Ok(Frame::Integer(0));
    }
    if when <= now as i64 {
        table.remove(key, now);
        ctx.dirty(1);
        ctx.notify(Class::GENERIC, "del", key);
        ctx.rewrite(vec![Bytes::from_static(b"DEL"), key.clone()]);
    } else {
        table.set_expire(key, when as u64, now);
        ctx.dirty(1);
        ctx.notify(Class::GENERIC, "expire", key);
        ctx.rewrite(vec![
            Bytes::from_static(b"PEXPIREAT"),
            key.clone(),
            Bytes::from(when.to_string()),
        ]);
    }
    Ok(Frame::Integer(1))
}

/// What the TTL family reports: the key's expiry as absolute ms, -2 for a
/// missing key (as `Err`), `None` for a key without expiry. Never touches the key.
fn expiry_of(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Result<Option<u64>, i64>, CmdError> {
    let key = args.next_key()?;
    let now = ctx.now_ms();
    let found = ctx.table(key)?.expiry(key, now);
    ctx.hit_key(key, found.is_some());
    Ok(found.ok_or(-2))
}

const TTL_FLAGS: Flags = Flags::READONLY.union(Flags::FAST);

pub(crate) const TTL: CommandSpec = CommandSpec {
    name: "TTL",
    group: Group::Generic,
    arity: 2,
    flags: TTL_FLAGS,
    keys: Keys::single(1),
    summary: "Returns a key's remaining time to live in seconds.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: ttl,
};

fn ttl(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    remaining(ctx, args, false)
}

pub(crate) const PTTL: CommandSpec = CommandSpec {
    name: "PTTL",
    group: Group::Generic,
    arity: 2,
    flags: TTL_FLAGS,
    keys: Keys::single(1),
    summary: "Returns a key's remaining time to live in milliseconds.",
    since: "2.6.0",
    complexity: "O(1)",
    subcommands: &[],
    run: pttl,
};

fn pttl(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    remaining(ctx, args, true)
}

/// TTL rounds the remaining milliseconds to the nearest second, as Redis does.
fn remaining(ctx: &mut Ctx<'_>, args: &mut Args<'_>, ms: bool) -> Result<Frame, CmdError> {
    let now = ctx.now_ms();
    let n = match expiry_of(ctx, args)? {
        Err(missing) => missing,
        Ok(None) => -1,
        Ok(Some(at)) => {
            let left = at.saturating_sub(now);
            (if ms {
                left
            } else {
                left.saturating_add(500) / 1000
            }) as i64
        }
    };
    Ok(Frame::Integer(n))
}

pub(crate) const EXPIRETIME: CommandSpec = CommandSpec {
    name: "EXPIRETIME",
    group: Group::Generic,
    arity: 2,
    flags: TTL_FLAGS,
    keys: Keys::single(1),
    summary: "Returns a key's expiry as a Unix time in seconds.",
    since: "7.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: expiretime,
};

fn expiretime(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    deadline(ctx, args, false)
}

pub(crate) const PEXPIRETIME: CommandSpec = CommandSpec {
    name: "PEXPIRETIME",
    group: Group::Generic,
    arity: 2,
    flags: TTL_FLAGS,
    keys: Keys::single(1),
    summary: "Returns a key's expiry as a Unix time in milliseconds.",
    since: "7.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: pexpiretime,
};

fn pexpiretime(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    deadline(ctx, args, true)
}

/// EXPIRETIME truncates to whole seconds (no rounding, unlike TTL).
fn deadline(ctx: &mut Ctx<'_>, args: &mut Args<'_>, ms: bool) -> Result<Frame, CmdError> {
    let n = match expiry_of(ctx, args)? {
        Err(missing) => missing,
        Ok(None) => -1,
        Ok(Some(at)) => (if ms { at } else { at / 1000 }) as i64,
    };
    Ok(Frame::Integer(n))
}

pub(crate) const PERSIST: CommandSpec = CommandSpec {
    name: "PERSIST",
    group: Group::Generic,
    arity: 2,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Removes a key's expiry.",
    since: "2.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: persist,
};

fn persist(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    let volatile = table.expiry(key, now).flatten().is_some();
    if !volatile {
        return Ok(Frame::Integer(0));
    }
    table.set_expire(key, 0, now);
    ctx.dirty(1);
    ctx.notify(Class::GENERIC, "persist", key);
    Ok(Frame::Integer(1))
}

pub(crate) const KEYS: CommandSpec = CommandSpec {
    name: "KEYS",
    group: Group::Generic,
    arity: 2,
    flags: Flags::READONLY.union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "Returns every key name that matches a glob pattern.",
    since: "1.0.0",
    complexity: "O(N) with N being the number of keys in the database.",
    subcommands: &[],
    run: keys,
};

fn keys(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let pattern = args.next_arg()?;
    let every = pattern.as_ref() == b"*";
    let db = ctx.db();
    let now = ctx.now_ms();
    let mut out = Vec::new();
    ctx.for_each_shard(|shard| {
        for e in shard.db_ref(db).iter_live(now) {
            if every || glob_match(pattern, e.key(), false) {
                out.push(Frame::Bulk(bytes_of(e.key())));
            }
        }
    });
    Ok(Frame::Array(out))
}

pub(crate) const SCAN: CommandSpec = CommandSpec {
    name: "SCAN",
    group: Group::Generic,
    arity: -2,
    flags: Flags::READONLY.union(Flags::SHARD_WALK),
    keys: Keys::None,
    summary: "Iterates over the key names in the database.",
    since: "2.8.0",
    complexity: "O(1) for every call. O(N) for a complete iteration.",
    subcommands: &[],
    run: scan,
};

/// SCAN's cursor names a shard and a slab index within that shard's table of
/// the selected database; each call walks shards in order from there until
/// COUNT keys were visited. An entry keeps its slab index while its key
/// exists, so a key present for the whole iteration is returned exactly once.
fn scan(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let cursor = parse_cursor(args.next_arg()?)?;
    let ScanOptions {
        count,
        pattern,
        type_name,
    } = scan_options(args, true)?;
    // `Some(None)`: a TYPE no value can have, which Redis 7.0 answers with no keys.
    let wanted: Option<Option<ValueType>> = type_name.map(ValueType::from_name);
    let db = ctx.db();
    let now = ctx.now_ms();
    let shards = ctx.engine.keyspace.shard_count();
    let (start_shard, start_pos) = Keyspace::decode_cursor(cursor);
    // Where the next call resumes; `None` once every shard has been walked.
    let mut resume = (start_shard < shards).then_some((start_shard, start_pos));
    let mut visited = 0usize;
    let mut keys = Vec::new();
    // One shard at a time, each locked only while it is read.
    while let Some((at_shard, pos)) = resume {
        if visited >= count {
            break;
        }
        let (next, found) = ctx.with_shard(at_shard, |shard| {
            let mut entries = Vec::new();
            let next = shard
                .db_ref(db)
                .scan(pos, count - visited, now, &mut entries);
            let found: Vec<(Bytes, ValueType)> = entries
                .iter()
                .map(|e| (bytes_of(e.key()), e.value.value_type()))
                .collect();
            (next, found)
        })?;
        visited += found.len();
        for (key, vtype) in found {
            let type_ok = wanted.is_none_or(|w| w == Some(vtype));
            let name_ok = pattern.is_none_or(|p| glob_match(p, &key, false));
            if type_ok && name_ok {
                keys.push(Frame::Bulk(key));
            }
        }
        resume = match next {
            Some(p) => Some((at_shard, p)),
            None => (at_shard + 1 < shards).then_some((at_shard + 1, 0)),
        };
    }
    let next = resume.map_or(0, |(s, p)| Keyspace::encode_cursor(s, p));
    Ok(scan_reply(next, keys))
}

pub(crate) const RENAME: CommandSpec = CommandSpec {
    name: "RENAME",
    group: Group::Generic,
    arity: 3,
    flags: Flags::WRITE,
    keys: Keys::range(1, 2, 1),
    summary: "Renames a key, overwriting the destination.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: rename,
};

fn rename(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    rename_generic(ctx, args, false)
}

pub(crate) const RENAMENX: CommandSpec = CommandSpec {
    name: "RENAMENX",
    group: Group::Generic,
    arity: 3,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::range(1, 2, 1),
    summary: "Renames a key only when the target key name doesn't exist.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: renamenx,
};

fn renamenx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    rename_generic(ctx, args, true)
}

/// RENAME and RENAMENX: the value keeps its expiry and idle time. Renaming a
/// key to itself changes nothing but still fails for a missing key.
fn rename_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, nx: bool) -> Result<Frame, CmdError> {
    let src = args.next_key()?;
    let dst = args.next_key()?;
    let now = ctx.now_ms();
    let done = |renamed: bool| {
        if nx {
            Frame::Integer(i64::from(renamed))
        } else {
            Frame::ok()
        }
    };
    if !ctx.table(src)?.contains(src, now) {
        return Err(CmdError::NoSuchKey);
    }
    if src == dst {
        return Ok(done(false));
    }
    if nx && ctx.table(dst)?.contains(dst, now) {
        return Ok(done(false));
    }
    let Some(entry) = ctx.table(src)?.remove(src, now) else {
        return Err(CmdError::NoSuchKey);
    };
    ctx.table(dst)?.put_entry_as(entry, dst, now);
    ctx.dirty(1);
    ctx.notify(Class::GENERIC, "rename_from", src);
    ctx.notify(Class::GENERIC, "rename_to", dst);
    Ok(done(true))
}

pub(crate) const RANDOMKEY: CommandSpec = CommandSpec {
    name: "RANDOMKEY",
    group: Group::Generic,
    arity: 1,
    flags: Flags::READONLY.union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "Returns a random key name from the database.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: randomkey,
};

/// Pick a shard with probability proportional to its size, then a key within
/// it, so every key is equally likely. Expired keys met on the way are deleted
/// (and logged by the executor), as Redis does; each failed draw removes at
/// least one of them, so the loop ends.
fn randomkey(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let engine = ctx.engine;
    let db = ctx.db();
    let now = ctx.now_ms();
    let mut sizes = Vec::new();
    ctx.for_each_shard(|s| sizes.push(s.db_ref(db).len()));
    loop {
        let total: usize = sizes.iter().sum();
        if total == 0 {
            return Ok(Frame::Null);
        }
        let mut r = (engine.rng.next_u64() % total as u64) as usize;
        let mut target = 0;
        for (i, &n) in sizes.iter().enumerate() {
            if r < n {
                target = i;
                break;
            }
            r -= n;
        }
        let mut found = None;
        let mut index = 0;
        ctx.for_each_shard(|s| {
            if index == target {
                let t = s.db(db);
                let mut pick = |n: usize| (engine.rng.next_u64() % n.max(1) as u64) as usize;
                found = t.random_entry(now, &mut pick).map(|e| bytes_of(e.key()));
                sizes[index] = t.len();
            }
            index += 1;
        });
        if let Some(key) = found {
            return Ok(Frame::Bulk(key));
        }
        if sizes.iter().sum::<usize>() >= total {
            return Ok(Frame::Null);
        }
    }
}

/// A database number argument of COPY and MOVE.
fn db_index(ctx: &Ctx<'_>, raw: &[u8]) -> Result<usize, CmdError> {
    keel_engine::args::parse_db_index(raw, ctx.engine.keyspace.databases())
}

fn same_object() -> CmdError {
    CmdError::err("source and destination objects are the same")
}

pub(crate) const COPY: CommandSpec = CommandSpec {
    name: "COPY",
    group: Group::Generic,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(1, 2, 1),
    summary: "Copies the value of a key to a new key.",
    since: "6.2.0",
    complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
    subcommands: &[],
    run: copy,
};

fn copy(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let src = args.next_key()?;
    let dst = args.next_key()?;
    let src_db = ctx.db();
    let mut dst_db = src_db;
    let mut replace = false;
    while let Some(opt) = args.next_opt() {
        if is(opt, "REPLACE") {
            replace = true;
        } else if is(opt, "DB") && !args.is_empty() {
            dst_db = db_index(ctx, args.next_arg()?)?;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    if src_db == dst_db && src == dst {
        return Err(same_object());
    }
    let now = ctx.now_ms();
    let table = ctx.table(src)?;
    let expires_at = table.expiry(src, now).flatten().unwrap_or(0);
    let found = table.get(src, now).map(|e| (e.value.clone(), expires_at));
    ctx.hit_key(src, found.is_some());
    let Some((value, expires_at)) = found else {
        return Ok(Frame::Integer(0));
    };
    let target = ctx.table_in(dst_db, dst)?;
    if !replace && target.contains(dst, now) {
        return Ok(Frame::Integer(0));
    }
    if replace {
        // Redis deletes the old destination and adds the copy as a new key.
        target.remove(dst, now);
    }
    target.insert(dst, value, expires_at, now);
    // The source is only read: its watchers stay valid.
    ctx.modified(dst_db, dst);
    ctx.dirty(1);
    ctx.notify_db(Class::GENERIC, "copy_to", dst_db, dst);
    Ok(Frame::Integer(1))
}

pub(crate) const MOVE: CommandSpec = CommandSpec {
    name: "MOVE",
    group: Group::Generic,
    arity: 3,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Moves a key to another database.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: move_key,
};

fn move_key(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let dst_db = db_index(ctx, args.next_arg()?)?;
    let src_db = ctx.db();
    if dst_db == src_db {
        return Err(same_object());
    }
    let now = ctx.now_ms();
    if !ctx.table(key)?.contains(key, now) || ctx.table_in(dst_db, key)?.contains(key, now) {
        return Ok(Frame::Integer(0));
    }
    let Some(entry) = ctx.table(key)?.remove(key, now) else {
        return Ok(Frame::Integer(0));
    };
    ctx.table_in(dst_db, key)?.put_entry(entry, now);
    ctx.modified(src_db, key);
    ctx.modified(dst_db, key);
    ctx.dirty(1);
    ctx.notify_db(Class::GENERIC, "move_from", src_db, key);
    ctx.notify_db(Class::GENERIC, "move_to", dst_db, key);
    Ok(Frame::Integer(1))
}

pub(crate) const OBJECT: CommandSpec = CommandSpec {
    name: "OBJECT",
    group: Group::Generic,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for object introspection commands.",
    since: "2.2.3",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &OBJECT_ENCODING,
        &OBJECT_FREQ,
        &OBJECT_IDLETIME,
        &OBJECT_REFCOUNT,
        &OBJECT_HELP,
    ],
    run: object,
};

fn object(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Err(CmdError::WrongArity("object".into()))
}

pub(crate) const OBJECT_ENCODING: CommandSpec = CommandSpec {
    name: "OBJECT|ENCODING",
    group: Group::Generic,
    arity: 3,
    flags: Flags::READONLY,
    keys: Keys::single(2),
    summary: "Returns the internal encoding of a key's value.",
    since: "2.2.3",
    complexity: "O(1)",
    subcommands: &[],
    run: object_encoding,
};

/// Look at a key for OBJECT without recording an access, mapping its entry
/// with `f`; a missing key is a nil reply for every subcommand.
fn inspect<T>(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    f: impl FnOnce(&keel_store::Entry, u64) -> T,
) -> Result<Option<T>, CmdError> {
    let key = args.next_key()?;
    let now = ctx.now_ms();
    let found = ctx.table(key)?.peek(key, now).map(|e| f(e, now));
    ctx.hit(found.is_some());
    Ok(found)
}

fn object_encoding(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let enc = inspect(ctx, args, |e, _| e.value.encoding())?;
    Ok(enc.map_or(Frame::Null, |s| {
        Frame::Bulk(Bytes::from_static(s.as_bytes()))
    }))
}

/// Whether `maxmemory-policy` names an LFU policy (no such directive yet means
/// the default, noeviction).
fn lfu_policy(ctx: &Ctx<'_>) -> bool {
    ctx.engine.config.get("maxmemory-policy").contains("lfu")
}

pub(crate) const OBJECT_FREQ: CommandSpec = CommandSpec {
    name: "OBJECT|FREQ",
    group: Group::Generic,
    arity: 3,
    flags: Flags::READONLY,
    keys: Keys::single(2),
    summary: "Returns the logarithmic access frequency counter of a key's value.",
    since: "4.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: object_freq,
};

/// The key's access counter, decayed to now; kept only under an LFU
/// policy, and without one Redis refuses with this error.
fn object_freq(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let Some(freq) = inspect(ctx, args, |e, now| e.frequency(now))? else {
        return Ok(Frame::Null);
    };
    if lfu_policy(ctx) {
        return Ok(Frame::Integer(i64::from(freq)));
    }
    Err(CmdError::err(
        "An LFU maxmemory policy is not selected, access frequency not tracked. \
         Please note that when switching between policies at runtime LRU and LFU data \
         will take some time to adjust.",
    ))
}

pub(crate) const OBJECT_IDLETIME: CommandSpec = CommandSpec {
    name: "OBJECT|IDLETIME",
    group: Group::Generic,
    arity: 3,
    flags: Flags::READONLY,
    keys: Keys::single(2),
    summary: "Returns the seconds since the last access to a key.",
    since: "2.2.3",
    complexity: "O(1)",
    subcommands: &[],
    run: object_idletime,
};

fn object_idletime(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let Some(idle) = inspect(ctx, args, |e, now| e.idle_seconds(now))? else {
        return Ok(Frame::Null);
    };
    if lfu_policy(ctx) {
        return Err(CmdError::err(
            "An LFU maxmemory policy is selected, idle time not tracked. \
             Please note that when switching between policies at runtime LRU and LFU data \
             will take some time to adjust.",
        ));
    }
    Ok(Frame::Integer(i64::try_from(idle).unwrap_or(i64::MAX)))
}

pub(crate) const OBJECT_REFCOUNT: CommandSpec = CommandSpec {
    name: "OBJECT|REFCOUNT",
    group: Group::Generic,
    arity: 3,
    flags: Flags::READONLY,
    keys: Keys::single(2),
    summary: "Returns the reference count of a key's value.",
    since: "2.2.3",
    complexity: "O(1)",
    subcommands: &[],
    run: object_refcount,
};

/// Values are never shared between keys in Keel, so the count is always 1.
fn object_refcount(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    // Redis's shared integers report INT_MAX references.
    let found = inspect(ctx, args, |e, _| e.value.is_shared_integer())?;
    Ok(found.map_or(Frame::Null, |shared| {
        Frame::Integer(if shared { i64::from(i32::MAX) } else { 1 })
    }))
}

pub(crate) const OBJECT_HELP: CommandSpec = CommandSpec {
    name: "OBJECT|HELP",
    group: Group::Generic,
    arity: 2,
    flags: Flags::LOADING.union(Flags::STALE),
    keys: Keys::None,
    summary: "Returns helpful text about the different subcommands.",
    since: "6.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: object_help,
};

fn object_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    const LINES: &[&str] = &[
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Show how the value stored at <key> is represented in memory.",
        "FREQ <key>",
        "    Show the logarithmic access-frequency counter of <key> (LFU policies only).",
        "IDLETIME <key>",
        "    Show how many seconds have passed since <key> was last read or written.",
        "REFCOUNT <key>",
        "    Show how many references the value stored at <key> has.",
        "HELP",
        "    Print this help.",
    ];
    Ok(Frame::Array(
        LINES
            .iter()
            .map(|l| Frame::Simple(Bytes::from_static(l.as_bytes())))
            .collect(),
    ))
}
