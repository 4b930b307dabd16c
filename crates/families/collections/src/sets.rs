//! Sets: SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SPOP,
//! SRANDMEMBER, SMOVE, SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE,
//! SDIFF, SDIFFSTORE and SSCAN. The encodings and their conversions live in
//! `keel_store::set`; these handlers parse, check types and build replies.

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::scan::parse_cursor;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::glob::glob_match;
use keel_store::packed::Packed;
use keel_store::{Value, ValueType};

pub static COMMANDS: &[&CommandSpec] = &[
    &SADD,
    &SREM,
    &SMEMBERS,
    &SISMEMBER,
    &SMISMEMBER,
    &SCARD,
    &SPOP,
    &SRANDMEMBER,
    &SMOVE,
    &SINTER,
    &SINTERCARD,
    &SINTERSTORE,
    &SUNION,
    &SUNIONSTORE,
    &SDIFF,
    &SDIFFSTORE,
    &SSCAN,
];

fn is_set(v: &Value) -> bool {
    v.value_type() == ValueType::Set
}

/// The set at `key` for reading: `None` if absent, WRONGTYPE for another type.
fn read_set<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t Value>, CmdError> {
    ctx.read_value(key, keel_store::ValueType::Set)
}

/// Like `read_set`, counting the lookup as a keyspace hit or miss.
fn read_set_counted<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(&Value) -> R,
) -> Result<Option<R>, CmdError> {
    let out = read_set(ctx, key)?.map(f);
    ctx.hit_key(key, out.is_some());
    Ok(out)
}

/// The set at `key` for changing: `None` if absent, WRONGTYPE for another type.
fn write_set<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t mut Value>, CmdError> {
    let now = ctx.now_ms();
    match ctx.table(key)?.get_mut(key, now) {
        None => Ok(None),
        Some(e) if is_set(&e.value) => Ok(Some(&mut e.value)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// Delete `key` if its set was emptied, as Redis never keeps empty sets. The
/// caller publishes `del` after its own event (see [`notify_del`]).
fn drop_if_empty(ctx: &mut Ctx<'_>, key: &[u8], empty: bool) -> Result<(), CmdError> {
    if empty {
        let now = ctx.now_ms();
        ctx.table(key)?.remove(key, now);
    }
    Ok(())
}

/// Publish `del` for a key the command emptied.
fn notify_del(ctx: &mut Ctx<'_>, key: &[u8], emptied: bool) {
    if emptied {
        ctx.notify(Class::GENERIC, "del", key);
    }
}

fn bulks(members: Vec<Vec<u8>>) -> Vec<Frame> {
    members
        .into_iter()
        .map(|m| Frame::Bulk(Bytes::from(m)))
        .collect()
}

pub(crate) const SADD: CommandSpec = CommandSpec {
    name: "SADD",
    group: Group::Set,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Adds one or more members to a set, creating the key if needed.",
    since: "1.0.0",
    complexity: "O(1) for each member added, so O(N) for N members.",
    subcommands: &[],
    run: sadd,
};

fn sadd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let members = args.rest();
    let first = members.first().ok_or(CmdError::Syntax)?;
    let limits = ctx.limits();
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    let added = match table.get_mut(key, now) {
        Some(e) => {
            if !is_set(&e.value) {
                return Err(CmdError::WrongType);
            }
            e.value.set_reserve(members.len(), &limits);
            members
                .iter()
                .filter(|m| e.value.set_add(m, &limits))
                .count()
        }
        None => {
            let mut set = Value::new_set(first, members.len(), &limits);
            let n = members.iter().filter(|m| set.set_add(m, &limits)).count();
            table.insert(key, set, 0, now);
            n
        }
    };
    ctx.dirty(added as u64);
    if added > 0 {
        ctx.notify(Class::SET, "sadd", key);
    }
    Ok(Frame::Integer(added as i64))
}

pub(crate) const SREM: CommandSpec = CommandSpec {
    name: "SREM",
    group: Group::Set,
    arity: -3,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Removes one or more members from a set, deleting the key when it empties.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of members to be removed.",
    subcommands: &[],
    run: srem,
};

fn srem(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let members = args.rest();
    let Some(set) = write_set(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    let mut removed = 0u64;
    for m in members {
        if set.set_remove(m) {
            removed += 1;
            if set.set_len() == 0 {
                break;
            }
        }
    }
    let empty = set.set_len() == 0;
    drop_if_empty(ctx, key, empty)?;
    ctx.dirty(removed);
    if removed > 0 {
        ctx.notify(Class::SET, "srem", key);
        notify_del(ctx, key, empty);
    }
    Ok(Frame::Integer(removed as i64))
}

pub(crate) const SMEMBERS: CommandSpec = CommandSpec {
    name: "SMEMBERS",
    group: Group::Set,
    arity: 2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns every member of a set.",
    since: "1.0.0",
    complexity: "O(N) where N is the set cardinality.",
    subcommands: &[],
    run: smembers,
};

fn smembers(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let members = read_set_counted(ctx, key, Value::set_members)?.unwrap_or_default();
    Ok(Frame::Set(bulks(members)))
}

pub(crate) const SISMEMBER: CommandSpec = CommandSpec {
    name: "SISMEMBER",
    group: Group::Set,
    arity: 3,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Tells whether a value is a member of a set.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: sismember,
};

fn sismember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let member = args.next_arg()?;
    let found = read_set_counted(ctx, key, |s| s.set_contains(member))?;
    Ok(Frame::Integer(i64::from(found == Some(true))))
}

pub(crate) const SMISMEMBER: CommandSpec = CommandSpec {
    name: "SMISMEMBER",
    group: Group::Set,
    arity: -3,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Tells, for each of several values, whether it is a member of a set.",
    since: "6.2.0",
    complexity: "O(N) where N is the number of values checked.",
    subcommands: &[],
    run: smismember,
};

fn smismember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let members = args.rest();
    let flags = read_set_counted(ctx, key, |s| {
        members
            .iter()
            .map(|m| Frame::Integer(i64::from(s.set_contains(m))))
            .collect::<Vec<_>>()
    })?;
    // A missing key is an empty set: every answer is 0.
    Ok(Frame::Array(flags.unwrap_or_else(|| {
        members.iter().map(|_| Frame::Integer(0)).collect()
    })))
}

pub(crate) const SCARD: CommandSpec = CommandSpec {
    name: "SCARD",
    group: Group::Set,
    arity: 2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the number of members in a set.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: scard,
};

fn scard(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let n = read_set_counted(ctx, key, Value::set_len)?.unwrap_or(0);
    Ok(Frame::Integer(n as i64))
}

pub(crate) const SPOP: CommandSpec = CommandSpec {
    name: "SPOP",
    group: Group::Set,
    arity: -2,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Removes and returns one or more random members of a set.",
    since: "1.0.0",
    complexity:
        "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
    subcommands: &[],
    run: spop,
};

fn spop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let count = match args.next_opt() {
        None => None,
        Some(raw) => {
            args.finish()?;
            let n = keel_store::num::parse_i64(raw)
                .filter(|n| *n >= 0)
                .ok_or_else(|| CmdError::err("value is out of range, must be positive"))?;
            Some(usize::try_from(n).unwrap_or(usize::MAX))
        }
    };
    let limits = ctx.limits();
    let engine = ctx.engine;
    let mut rng = || engine.rng.next_u64();
    let Some(set) = write_set(ctx, key)? else {
        return Ok(match count {
            None => Frame::Null,
            Some(_) => Frame::Set(Vec::new()),
        });
    };
    let Some(count) = count else {
        let popped = set.set_pop(1, &mut rng, &limits);
        let empty = set.set_len() == 0;
        drop_if_empty(ctx, key, empty)?;
        let Some(member) = popped.into_iter().next() else {
            return Ok(Frame::Null);
        };
        let member = Bytes::from(member);
        ctx.dirty(1);
        ctx.notify(Class::SET, "spop", key);
        notify_del(ctx, key, empty);
        ctx.rewrite(vec![
            Bytes::from_static(b"SREM"),
            Bytes::copy_from_slice(key),
            member.clone(),
        ]);
        return Ok(Frame::Bulk(member));
    };
    if count == 0 {
        return Ok(Frame::Set(Vec::new()));
    }
    let popped = set.set_pop(count, &mut rng, &limits);
    let empty = set.set_len() == 0;
    drop_if_empty(ctx, key, empty)?;
    ctx.dirty(popped.len() as u64);
    ctx.notify(Class::SET, "spop", key);
    notify_del(ctx, key, empty);
    let popped: Vec<Bytes> = popped.into_iter().map(Bytes::from).collect();
    // Replay must not pick again: log what went, or the key's deletion.
    let effect = if empty {
        vec![Bytes::from_static(b"DEL"), Bytes::copy_from_slice(key)]
    } else {
        let mut argv = Vec::with_capacity(popped.len() + 2);
        argv.push(Bytes::from_static(b"SREM"));
        argv.push(Bytes::copy_from_slice(key));
        argv.extend(popped.iter().cloned());
        argv
    };
    ctx.rewrite(effect);
    Ok(Frame::Set(popped.into_iter().map(Frame::Bulk).collect()))
}

pub(crate) const SRANDMEMBER: CommandSpec = CommandSpec {
    name: "SRANDMEMBER",
    group: Group::Set,
    arity: -2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns one or more random members of a set without removing them.",
    since: "1.0.0",
    complexity: "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
    subcommands: &[],
    run: srandmember,
};

fn srandmember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let engine = ctx.engine;
    let mut rng = || engine.rng.next_u64();
    let Some(raw) = args.next_opt() else {
        let member = read_set_counted(ctx, key, |s| s.set_random(&mut rng))?.flatten();
        return Ok(member.map_or(Frame::Null, |m| Frame::Bulk(Bytes::from(m))));
    };
    args.finish()?;
    let n = keel_engine::args::parse_random_count(raw)?;
    let count = usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX);
    if n < 0 {
        // Repeats allowed: encoded as drawn.
        let limit = u64::try_from(ctx.engine.config.proto_max_bulk_len()).unwrap_or(0);
        let reply = read_set_counted(ctx, key, |s| {
            // A compact set is decoded once rather than walked per pick.
            let decoded = (!matches!(s, Value::Set(_))).then(|| s.set_members());
            keel_engine::args::random_repeats(n.unsigned_abs(), 1, limit, |buf| match &decoded {
                Some(all) if !all.is_empty() => {
                    let i = (rng() % all.len() as u64) as usize;
                    keel_engine::args::put_bulk(buf, &all[i]);
                }
                Some(_) => {}
                None => {
                    if let Some(m) = s.set_random(&mut rng) {
                        keel_engine::args::put_bulk(buf, &m);
                    }
                }
            })
        })?;
        return reply.unwrap_or(Ok(Frame::Array(Vec::new())));
    }
    let picked = read_set_counted(ctx, key, |s| {
        if count == 0 {
            Vec::new()
        } else {
            s.set_random_distinct(count, &mut rng)
        }
    })?
    .unwrap_or_default();
    Ok(Frame::Array(bulks(picked)))
}

pub(crate) const SMOVE: CommandSpec = CommandSpec {
    name: "SMOVE",
    group: Group::Set,
    arity: 4,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::range(1, 2, 1),
    summary: "Moves a member from one set to another.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: smove,
};

fn smove(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let src = args.next_key()?;
    let dst = args.next_key()?;
    let member = args.next_arg()?;
    let limits = ctx.limits();
    let now = ctx.now_ms();
    // Redis looks both keys up before any check, so an expired destination
    // goes (and says so) even when the source's type ends the command.
    ctx.table(dst)?.contains(dst, now);
    // A missing source answers 0 whatever the destination holds.
    if write_set(ctx, src)?.is_none() {
        return Ok(Frame::Integer(0));
    }
    let dst_exists = write_set(ctx, dst)?.is_some();
    if src == dst {
        let found = write_set(ctx, src)?.is_some_and(|s| s.set_contains(member));
        return Ok(Frame::Integer(i64::from(found)));
    }
    let Some(set) = write_set(ctx, src)? else {
        return Ok(Frame::Integer(0));
    };
    if !set.set_remove(member) {
        return Ok(Frame::Integer(0));
    }
    let empty = set.set_len() == 0;
    drop_if_empty(ctx, src, empty)?;
    let db = ctx.db();
    ctx.dirty(1);
    ctx.modified(db, src);
    ctx.notify(Class::SET, "srem", src);
    notify_del(ctx, src, empty);
    let added = if dst_exists {
        write_set(ctx, dst)?.is_some_and(|s| s.set_add(member, &limits))
    } else {
        let mut set = Value::new_set(member, 1, &limits);
        set.set_add(member, &limits);
        ctx.table(dst)?.insert(dst, set, 0, now);
        true
    };
    if added {
        ctx.dirty(1);
        ctx.modified(db, dst);
        ctx.notify(Class::SET, "sadd", dst);
    }
    Ok(Frame::Integer(1))
}

/// Check every key (WRONGTYPE wins over a missing key, as in Redis) and
/// return each one's size, `None` for a missing key.
fn sizes(ctx: &mut Ctx<'_>, keys: &[Bytes]) -> Result<Vec<Option<usize>>, CmdError> {
    keys.iter()
        .map(|k| read_set_counted(ctx, k, Value::set_len))
        .collect()
}

/// Members of the intersection of `keys`, stopping once `limit` (0: no
/// limit) were found.
fn intersection(ctx: &mut Ctx<'_>, keys: &[Bytes], limit: usize) -> Result<Vec<Vec<u8>>, CmdError> {
    let sizes = sizes(ctx, keys)?;
    let Some(sizes) = sizes.into_iter().collect::<Option<Vec<usize>>>() else {
        return Ok(Vec::new());
    };
    // Smallest first: its members are the candidates, checked against the
    // rest from the next smallest up so misses come early.
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let Some((&first, rest)) = order.split_first() else {
        return Ok(Vec::new());
    };
    let first_key = &keys[first];
    let candidates = read_set(ctx, first_key)?
        .map(Value::set_members)
        .unwrap_or_default();
    let others: Vec<&Bytes> = rest
        .iter()
        .map(|&i| &keys[i])
        .filter(|k| *k != first_key)
        .collect();
    // With a LIMIT, check candidates a batch at a time so the work stops
    // soon after enough are found.
    let batch = if limit == 0 { usize::MAX } else { 256 };
    let mut found = Vec::new();
    let mut candidates = candidates.into_iter();
    loop {
        let mut chunk: Vec<Vec<u8>> = candidates.by_ref().take(batch).collect();
        if chunk.is_empty() {
            break;
        }
        for key in &others {
            match read_set(ctx, key)? {
                Some(s) => chunk.retain(|m| s.set_contains(m)),
                None => chunk.clear(),
            }
            if chunk.is_empty() {
                break;
            }
        }
        found.extend(chunk);
        if limit > 0 && found.len() >= limit {
            found.truncate(limit);
            break;
        }
    }
    Ok(found)
}

/// The union of `keys`, built as Redis builds it: every member added in
/// turn to a set that starts as an intset.
fn union(ctx: &mut Ctx<'_>, keys: &[Bytes]) -> Result<Value, CmdError> {
    sizes(ctx, keys)?;
    let limits = ctx.limits();
    let mut acc = Value::SetInts(Packed::new());
    for key in keys {
        if let Some(s) = read_set(ctx, key)? {
            s.set_visit(|m| {
                acc.set_add(m, &limits);
                true
            });
        }
    }
    Ok(acc)
}

/// Members of the first key's set found in none of the others.
fn difference(ctx: &mut Ctx<'_>, keys: &[Bytes]) -> Result<Vec<Vec<u8>>, CmdError> {
    sizes(ctx, keys)?;
    let Some((first, rest)) = keys.split_first() else {
        return Ok(Vec::new());
    };
    let mut left = read_set(ctx, first)?
        .map(Value::set_members)
        .unwrap_or_default();
    for key in rest {
        if left.is_empty() {
            break;
        }
        if key == first {
            left.clear();
            break;
        }
        if let Some(s) = read_set(ctx, key)? {
            left.retain(|m| !s.set_contains(m));
        }
    }
    Ok(left)
}

/// Write a computed set to `dst` (deleting it when empty) and reply its size.
fn store(ctx: &mut Ctx<'_>, dst: &[u8], set: Value, event: &str) -> Result<Frame, CmdError> {
    let n = set.set_len();
    let now = ctx.now_ms();
    let db = ctx.db();
    // Only the destination changes; the sources' watchers stay valid.
    ctx.modified(db, dst);
    let table = ctx.table(dst)?;
    if n == 0 {
        if table.remove_any(dst).is_some() {
            ctx.dirty(1);
            ctx.notify(Class::GENERIC, "del", dst);
        }
    } else {
        table.insert(dst, set, 0, now);
        ctx.dirty(1);
        ctx.notify(Class::SET, event, dst);
    }
    Ok(Frame::Integer(n as i64))
}

/// A set value holding `members` (distinct), encoded as Redis would after
/// adding them one by one and then trying an intset.
fn build(ctx: &Ctx<'_>, members: &[Vec<u8>]) -> Value {
    let limits = ctx.limits();
    let mut set = Value::SetPacked(Packed::new());
    set.set_reserve(members.len(), &limits);
    for m in members {
        set.set_add(m, &limits);
    }
    set.set_compact_ints(&limits);
    set
}

pub(crate) const SINTER: CommandSpec = CommandSpec {
    name: "SINTER",
    group: Group::Set,
    arity: -2,
    flags: Flags::READONLY,
    keys: Keys::range(1, -1, 1),
    summary: "Returns the members common to all the given sets.",
    since: "1.0.0",
    complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
    subcommands: &[],
    run: sinter,
};

fn sinter(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let keys = args.rest();
    let members = intersection(ctx, keys, 0)?;
    Ok(Frame::Set(bulks(members)))
}

pub(crate) const SINTERCARD: CommandSpec = CommandSpec {
    name: "SINTERCARD",
    group: Group::Set,
    arity: -3,
    flags: Flags::READONLY,
    keys: Keys::NumKeys {
        numkeys: 1,
        extra: 0,
    },
    summary: "Returns how many members the given sets have in common.",
    since: "7.0.0",
    complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
    subcommands: &[],
    run: sintercard,
};

fn sintercard(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let numkeys = keel_store::num::parse_i64(args.next_arg()?)
        .filter(|n| *n > 0)
        .ok_or_else(|| CmdError::err("numkeys should be greater than 0"))?;
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > args.remaining() {
        return Err(CmdError::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    let all = args.rest();
    let (keys, opts) = all.split_at(numkeys);
    let mut limit = 0usize;
    let mut opts = opts.iter();
    while let Some(opt) = opts.next() {
        match (is(opt, "LIMIT"), opts.next()) {
            (true, Some(raw)) => {
                let n = keel_store::num::parse_i64(raw)
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| CmdError::err("LIMIT can't be negative"))?;
                limit = usize::try_from(n).unwrap_or(usize::MAX);
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    let n = intersection(ctx, keys, limit)?.len();
    Ok(Frame::Integer(n as i64))
}

pub(crate) const SINTERSTORE: CommandSpec = CommandSpec {
    name: "SINTERSTORE",
    group: Group::Set,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(1, -1, 1),
    summary: "Stores the members common to all the given sets in a key.",
    since: "1.0.0",
    complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
    subcommands: &[],
    run: sinterstore,
};

fn sinterstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let dst = args.next_key()?;
    let keys = args.rest();
    let members = intersection(ctx, keys, 0)?;
    let set = build(ctx, &members);
    store(ctx, dst, set, "sinterstore")
}

pub(crate) const SUNION: CommandSpec = CommandSpec {
    name: "SUNION",
    group: Group::Set,
    arity: -2,
    flags: Flags::READONLY,
    keys: Keys::range(1, -1, 1),
    summary: "Returns the members found in any of the given sets.",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    subcommands: &[],
    run: sunion,
};

fn sunion(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let keys = args.rest();
    let set = union(ctx, keys)?;
    Ok(Frame::Set(bulks(set.set_members())))
}

pub(crate) const SUNIONSTORE: CommandSpec = CommandSpec {
    name: "SUNIONSTORE",
    group: Group::Set,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(1, -1, 1),
    summary: "Stores the members found in any of the given sets in a key.",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    subcommands: &[],
    run: sunionstore,
};

fn sunionstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let dst = args.next_key()?;
    let keys = args.rest();
    let set = union(ctx, keys)?;
    store(ctx, dst, set, "sunionstore")
}

pub(crate) const SDIFF: CommandSpec = CommandSpec {
    name: "SDIFF",
    group: Group::Set,
    arity: -2,
    flags: Flags::READONLY,
    keys: Keys::range(1, -1, 1),
    summary: "Returns the members of the first set found in none of the others.",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    subcommands: &[],
    run: sdiff,
};

fn sdiff(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let keys = args.rest();
    let members = difference(ctx, keys)?;
    Ok(Frame::Set(bulks(members)))
}

pub(crate) const SDIFFSTORE: CommandSpec = CommandSpec {
    name: "SDIFFSTORE",
    group: Group::Set,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(1, -1, 1),
    summary: "Stores the members of the first set found in none of the others in a key.",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of elements in all given sets.",
    subcommands: &[],
    run: sdiffstore,
};

fn sdiffstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let dst = args.next_key()?;
    let keys = args.rest();
    let members = difference(ctx, keys)?;
    // Redis adds the difference to a set that starts as an intset.
    let limits = ctx.limits();
    let mut set = Value::SetInts(Packed::new());
    set.set_reserve(members.len(), &limits);
    for m in &members {
        set.set_add(m, &limits);
    }
    store(ctx, dst, set, "sdiffstore")
}

pub(crate) const SSCAN: CommandSpec = CommandSpec {
    name: "SSCAN",
    group: Group::Set,
    arity: -3,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Iterates over the members of a set.",
    since: "2.8.0",
    complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
    subcommands: &[],
    run: sscan,
};

fn sscan(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let cursor = parse_cursor(args.next_arg()?)?;
    let empty = || keel_engine::scan::scan_reply(0, Vec::new());
    // Like Redis, a missing key answers before the options are looked at.
    if read_set_counted(ctx, key, |_| ())?.is_none() {
        return Ok(empty());
    }
    let (count, pattern) = keel_engine::scan::parse_scan_options(args)?;
    let mut found = Vec::new();
    let Some(next) = read_set(ctx, key)?.map(|s| s.set_scan(cursor, count, &mut found)) else {
        return Ok(empty());
    };
    if let Some(p) = pattern {
        found.retain(|m| glob_match(p, m, false));
    }
    Ok(keel_engine::scan::scan_reply(next, bulks(found)))
}
