//! Hashes: HSET, HGET and the rest of the hash commands. Handlers parse and
//! reply; the encodings and their conversion live in `keel_store::hash`.

use bytes::Bytes;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::scan::parse_cursor;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::glob::glob_match;
use keel_store::hash::{new_hash, HashMut, HashRef};
use keel_store::CompactLimits;
use std::borrow::Cow;

pub static COMMANDS: &[&CommandSpec] = &[
    &HSET,
    &HSETNX,
    &HMSET,
    &HGET,
    &HMGET,
    &HGETALL,
    &HKEYS,
    &HVALS,
    &HLEN,
    &HEXISTS,
    &HDEL,
    &HINCRBY,
    &HINCRBYFLOAT,
    &HSTRLEN,
    &HRANDFIELD,
    &HSCAN,
];

fn bulk(b: Cow<'_, [u8]>) -> Frame {
    Frame::Bulk(match b {
        Cow::Borrowed(s) => Bytes::copy_from_slice(s),
        Cow::Owned(v) => Bytes::from(v),
    })
}

fn bulk_of(s: &[u8]) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s))
}

/// Run `f` on the hash at `key` (`None` when absent) and count the lookup as
/// a keyspace hit or miss. WRONGTYPE for a key of another type.
fn read_hash<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(Option<HashRef<'_>>) -> R,
) -> Result<R, CmdError> {
    let (found, out) = match ctx.read_value(key, keel_store::ValueType::Hash) {
        Ok(None) => (false, Ok(f(None))),
        Ok(Some(v)) => (true, Ok(f(HashRef::of(v)))),
        Err(e) => (true, Err(e)),
    };
    ctx.hit_key(key, found);
    out
}

/// Run `f` on the hash at `key` for writing, creating an empty one if the key
/// is absent. The key is stored only if the hash ends up non-empty and is
/// deleted if `f` empties it, so an error from `f` (which must come before
/// any change) leaves the keyspace untouched.
fn write_hash<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(&mut HashMut<'_>, &CompactLimits) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    let now = ctx.now_ms();
    let limits = ctx.limits();
    let table = ctx.table(key)?;
    if let Some(e) = table.get_mut(key, now) {
        let mut h = HashMut::of(&mut e.value).ok_or(CmdError::WrongType)?;
        let out = f(&mut h, &limits);
        if h.is_empty() {
            table.remove(key, now);
        }
        return out;
    }
    let mut v = new_hash();
    let Some(mut h) = HashMut::of(&mut v) else {
        return Err(CmdError::Internal("HSET".into()));
    };
    let out = f(&mut h, &limits);
    if !h.is_empty() {
        table.insert(key, v, 0, now);
    }
    out
}

/// Field/value pairs after the key: an odd count is an arity error, as in Redis.
fn pairs<'a>(args: &mut Args<'a>, name: &str) -> Result<&'a [Bytes], CmdError> {
    let rest = args.rest();
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity(name.into()));
    }
    Ok(rest)
}

fn set_pairs(ctx: &mut Ctx<'_>, key: &[u8], pairs: &[Bytes]) -> Result<i64, CmdError> {
    let added = write_hash(ctx, key, |h, limits| {
        Ok(pairs
            .chunks_exact(2)
            .filter(|p| h.set(&p[0], &p[1], limits))
            .count())
    })?;
    ctx.dirty((pairs.len() / 2) as u64);
    ctx.notify(Class::HASH, "hset", key);
    Ok(added as i64)
}

pub(crate) const HSET: CommandSpec = CommandSpec {
    name: "HSET",
    group: Group::Hash,
    arity: -4,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Sets one or more fields of a hash, creating the hash if needed.",
    since: "2.0.0",
    complexity: "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
    subcommands: &[],
    run: hset,
};

fn hset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let pairs = pairs(args, "hset")?;
    Ok(Frame::Integer(set_pairs(ctx, key, pairs)?))
}

pub(crate) const HMSET: CommandSpec = CommandSpec {
    name: "HMSET",
    group: Group::Hash,
    arity: -4,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Sets several fields of a hash (HSET does the same and counts new fields).",
    since: "2.0.0",
    complexity: "O(N) where N is the number of fields being set.",
    subcommands: &[],
    run: hmset,
};

fn hmset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let pairs = pairs(args, "hmset")?;
    set_pairs(ctx, key, pairs)?;
    Ok(Frame::ok())
}

pub(crate) const HSETNX: CommandSpec = CommandSpec {
    name: "HSETNX",
    group: Group::Hash,
    arity: 4,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Sets a field of a hash only when the field does not exist yet.",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: hsetnx,
};

fn hsetnx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let field = args.next_arg()?;
    let value = args.next_arg()?;
    // Redis checks for the field before touching the encoding, so a refused
    // long value leaves a compact hash compact.
    let set = write_hash(ctx, key, |h, limits| {
        Ok(!h.view().contains(field) && h.set(field, value, limits))
    })?;
    if set {
        ctx.dirty(1);
        ctx.notify(Class::HASH, "hset", key);
    }
    Ok(Frame::Integer(i64::from(set)))
}

pub(crate) const HGET: CommandSpec = CommandSpec {
    name: "HGET",
    group: Group::Hash,
    arity: 3,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the value of one field of a hash.",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: hget,
};

fn hget(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let field = args.next_arg()?;
    read_hash(ctx, key, |h| {
        h.and_then(|h| h.get(field)).map_or(Frame::Null, bulk)
    })
}

pub(crate) const HMGET: CommandSpec = CommandSpec {
    name: "HMGET",
    group: Group::Hash,
    arity: -3,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the values of several fields of a hash.",
    since: "2.0.0",
    complexity: "O(N) where N is the number of fields being requested.",
    subcommands: &[],
    run: hmget,
};

fn hmget(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let fields = args.rest();
    read_hash(ctx, key, |h| {
        Frame::Array(
            fields
                .iter()
                .map(|f| h.and_then(|h| h.get(f)).map_or(Frame::Null, bulk))
                .collect(),
        )
    })
}

/// Which parts of each pair a whole-hash read returns.
#[derive(Clone, Copy)]
enum Part {
    Fields,
    Values,
}

fn all_of(ctx: &mut Ctx<'_>, args: &mut Args<'_>, part: Option<Part>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let resp3 = ctx.resp3();
    read_hash(ctx, key, |h| {
        // Flat arrays of bulks are encoded as they are read (one copy per
        // field); only RESP3's HGETALL map needs a frame per element.
        if resp3 && part.is_none() {
            let mut out = Vec::with_capacity(h.map_or(0, |h| h.len()));
            if let Some(h) = h {
                h.for_each(|k, v| out.push((bulk_of(k), bulk_of(v))));
            }
            return Frame::Map(out);
        }
        let mut out = keel_resp::BulkArray::new();
        if let Some(h) = h {
            h.for_each(|k, v| match part {
                None => {
                    out.push(k);
                    out.push(v);
                }
                Some(Part::Fields) => out.push(k),
                Some(Part::Values) => out.push(v),
            });
        }
        out.finish()
    })
}

pub(crate) const HGETALL: CommandSpec = CommandSpec {
    name: "HGETALL",
    group: Group::Hash,
    arity: 2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns every field and value of a hash.",
    since: "2.0.0",
    complexity: "O(N) where N is the size of the hash.",
    subcommands: &[],
    run: hgetall,
};

fn hgetall(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    all_of(ctx, args, None)
}

pub(crate) const HKEYS: CommandSpec = CommandSpec {
    name: "HKEYS",
    group: Group::Hash,
    arity: 2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns every field name of a hash.",
    since: "2.0.0",
    complexity: "O(N) where N is the size of the hash.",
    subcommands: &[],
    run: hkeys,
};

fn hkeys(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    all_of(ctx, args, Some(Part::Fields))
}

pub(crate) const HVALS: CommandSpec = CommandSpec {
    name: "HVALS",
    group: Group::Hash,
    arity: 2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns every value of a hash.",
    since: "2.0.0",
    complexity: "O(N) where N is the size of the hash.",
    subcommands: &[],
    run: hvals,
};

fn hvals(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    all_of(ctx, args, Some(Part::Values))
}

pub(crate) const HLEN: CommandSpec = CommandSpec {
    name: "HLEN",
    group: Group::Hash,
    arity: 2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the number of fields of a hash.",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: hlen,
};

fn hlen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    read_hash(
        ctx,
        key,
        |h| Frame::Integer(h.map_or(0, |h| h.len()) as i64),
    )
}

pub(crate) const HEXISTS: CommandSpec = CommandSpec {
    name: "HEXISTS",
    group: Group::Hash,
    arity: 3,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Tells whether a field exists in a hash.",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: hexists,
};

fn hexists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let field = args.next_arg()?;
    read_hash(ctx, key, |h| {
        Frame::Integer(i64::from(h.is_some_and(|h| h.contains(field))))
    })
}

pub(crate) const HSTRLEN: CommandSpec = CommandSpec {
    name: "HSTRLEN",
    group: Group::Hash,
    arity: 3,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the length in bytes of the value of a hash field.",
    since: "3.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: hstrlen,
};

fn hstrlen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let field = args.next_arg()?;
    read_hash(ctx, key, |h| {
        Frame::Integer(h.and_then(|h| h.get(field)).map_or(0, |v| v.len()) as i64)
    })
}

pub(crate) const HDEL: CommandSpec = CommandSpec {
    name: "HDEL",
    group: Group::Hash,
    arity: -3,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Removes fields from a hash; the key goes when its last field does.",
    since: "2.0.0",
    complexity: "O(N) where N is the number of fields to be removed.",
    subcommands: &[],
    run: hdel,
};

fn hdel(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let fields = args.rest();
    let now = ctx.now_ms();
    // A missing key is not created and then dropped: nothing happens at all.
    if !ctx.table(key)?.contains(key, now) {
        return Ok(Frame::Integer(0));
    }
    let removed = write_hash(ctx, key, |h, _| {
        Ok(fields.iter().filter(|f| h.remove(f)).count())
    })?;
    ctx.dirty(removed as u64);
    if removed > 0 {
        ctx.notify(Class::HASH, "hdel", key);
        if !ctx.table(key)?.contains(key, now) {
            ctx.notify(Class::GENERIC, "del", key);
        }
    }
    Ok(Frame::Integer(removed as i64))
}

pub(crate) const HINCRBY: CommandSpec = CommandSpec {
    name: "HINCRBY",
    group: Group::Hash,
    arity: 4,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary:
        "Adds an integer to the integer value of a hash field, which starts at 0 when missing.",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: hincrby,
};

fn hincrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let field = args.next_arg()?;
    // The increment is checked before the key, as Redis does.
    let incr = parse_i64(args.next_arg()?)?;
    let result = write_hash(ctx, key, |h, limits| {
        let current = match h.view().get(field) {
            None => 0,
            Some(v) => keel_store::num::parse_i64(&v)
                .ok_or_else(|| CmdError::err("hash value is not an integer"))?,
        };
        let sum = current.checked_add(incr).ok_or(CmdError::Overflow)?;
        h.set(field, sum.to_string().as_bytes(), limits);
        Ok(sum)
    })?;
    ctx.dirty(1);
    ctx.notify(Class::HASH, "hincrby", key);
    Ok(Frame::Integer(result))
}

pub(crate) const HINCRBYFLOAT: CommandSpec = CommandSpec {
    name: "HINCRBYFLOAT",
    group: Group::Hash,
    arity: 4,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary:
        "Adds a floating point number to the value of a hash field, which starts at 0 when missing.",
    since: "2.6.0",
    complexity: "O(1)",
    subcommands: &[],
    run: hincrbyfloat,
};

fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    use keel_store::longdouble::{incr_by_float, parse, IncrFloatError, Parsed};
    let key = args.next_key()?;
    let field = args.next_arg()?;
    let incr = args.next_arg()?;
    // The increment is checked before the key, as Redis does.
    match parse(incr) {
        None => return Err(CmdError::NotFloat),
        Some(Parsed::Infinite) => return Err(CmdError::err("value is NaN or Infinity")),
        Some(Parsed::Finite(_)) => {}
    }
    let result = write_hash(ctx, key, |h, limits| {
        let current = h.view().get(field).unwrap_or(Cow::Borrowed(b"0"));
        // Redis sums in long double; the model gives its exact digits.
        let sum = incr_by_float(&current, incr).map_err(|e| match e {
            IncrFloatError::NotFloat => CmdError::err("hash value is not a float"),
            IncrFloatError::NanOrInfinity => {
                CmdError::err("increment would produce NaN or Infinity")
            }
        })?;
        h.set(field, sum.as_bytes(), limits);
        Ok(Bytes::from(sum))
    })?;
    ctx.dirty(1);
    ctx.notify(Class::HASH, "hincrbyfloat", key);
    // Replayed as the value it produced, so replicas never redo float maths.
    ctx.rewrite(vec![
        Bytes::from_static(b"HSET"),
        key.clone(),
        field.clone(),
        result.clone(),
    ]);
    Ok(Frame::Bulk(result))
}

pub(crate) const HRANDFIELD: CommandSpec = CommandSpec {
    name: "HRANDFIELD",
    group: Group::Hash,
    arity: -2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns random fields of a hash, distinct for a positive count, possibly repeated for a negative one.",
    since: "6.2.0",
    complexity: "O(N) where N is the number of fields returned",
    subcommands: &[],
    run: hrandfield,
};

fn hrandfield(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let Some(raw) = args.next_opt() else {
        let pick = ctx.random();
        return read_hash(ctx, key, |h| match h {
            Some(h) if !h.is_empty() => {
                let i = (pick % h.len() as u64) as usize;
                h.pair_at(i).map_or(Frame::Null, |(k, _)| bulk(k))
            }
            _ => Frame::Null,
        });
    };
    let count = keel_engine::args::parse_random_count(raw)?;
    let with_values = match args.next_opt() {
        None => false,
        Some(w) if is(w, "WITHVALUES") && args.is_empty() => true,
        Some(_) => return Err(CmdError::Syntax),
    };
    if with_values {
        keel_engine::args::check_random_pairs(count)?;
    }
    let resp3 = ctx.resp3();
    let limit = u64::try_from(ctx.engine.config.proto_max_bulk_len()).unwrap_or(0);
    // The same generator `ctx.random()` draws from, reachable while the
    // hash is borrowed.
    let engine = ctx.engine;
    let mut rand = move |bound: usize| (engine.rng.next_u64() % bound as u64) as usize;
    read_hash(ctx, key, |h| {
        let Some(h) = h.filter(|h| !h.is_empty()) else {
            return Ok(Frame::Array(Vec::new()));
        };
        let len = h.len();
        if count < 0 {
            // Repeats allowed: encoded as drawn.
            let per_pick = if with_values && !resp3 { 2 } else { 1 };
            // A compact hash is decoded once rather than walked per pick.
            let decoded = matches!(h, HashRef::Packed(_)).then(|| {
                let mut all = Vec::with_capacity(len);
                h.for_each(|k, v| all.push((k.to_vec(), v.to_vec())));
                all
            });
            return keel_engine::args::random_repeats(
                count.unsigned_abs(),
                per_pick,
                limit,
                |buf| {
                    let i = rand(len);
                    let (k, v) = match &decoded {
                        Some(all) => match all.get(i) {
                            Some((k, v)) => (Cow::Borrowed(&k[..]), Cow::Borrowed(&v[..])),
                            None => return,
                        },
                        None => match h.pair_at(i) {
                            Some(pair) => pair,
                            None => return,
                        },
                    };
                    if with_values && resp3 {
                        buf.extend_from_slice(b"*2\r\n");
                    }
                    keel_engine::args::put_bulk(buf, &k);
                    if with_values {
                        keel_engine::args::put_bulk(buf, &v);
                    }
                },
            );
        }
        let picks = distinct(len, count as u64, &mut rand);
        let mut out = Vec::with_capacity(picks.len() * if with_values { 2 } else { 1 });
        for i in picks {
            let Some((k, v)) = h.pair_at(i) else { continue };
            match (with_values, resp3) {
                (false, _) => out.push(bulk(k)),
                (true, true) => out.push(Frame::Array(vec![bulk(k), bulk(v)])),
                (true, false) => {
                    out.push(bulk(k));
                    out.push(bulk(v));
                }
            }
        }
        Ok(Frame::Array(out))
    })?
}

/// `count` distinct positions below `len`, all of them in order when the
/// count covers the whole hash.
fn distinct(len: usize, count: u64, rand: &mut impl FnMut(usize) -> usize) -> Vec<usize> {
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    if count >= len {
        return (0..len).collect();
    }
    if count.saturating_mul(3) > len {
        // Near the size: a partial shuffle of every position.
        let mut all: Vec<usize> = (0..len).collect();
        for i in 0..count {
            let j = i + rand(len - i);
            all.swap(i, j);
        }
        all.truncate(count);
        all
    } else {
        // Far below the size: draw until enough distinct positions are seen.
        let mut seen = hashbrown::HashSet::with_capacity(count);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let i = rand(len);
            if seen.insert(i) {
                out.push(i);
            }
        }
        out
    }
}

pub(crate) const HSCAN: CommandSpec = CommandSpec {
    name: "HSCAN",
    group: Group::Hash,
    arity: -3,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Iterates over the fields and values of a hash with a cursor.",
    since: "2.8.0",
    complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
    subcommands: &[],
    run: hscan,
};

fn hscan(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let cursor = parse_cursor(args.next_arg()?)?;
    let empty = || keel_engine::scan::scan_reply(0, Vec::new());
    // Redis looks the key up before reading the options, so a missing key
    // answers an empty scan whatever follows.
    let now = ctx.now_ms();
    match ctx.table(key)?.peek(key, now) {
        None => {
            ctx.hit_key(key, false);
            return Ok(empty());
        }
        Some(e) if HashRef::of(&e.value).is_none() => return Err(CmdError::WrongType),
        Some(_) => {}
    }
    let (count, pattern) = keel_engine::scan::parse_scan_options(args)?;
    read_hash(ctx, key, |h| {
        let Some(h) = h else { return empty() };
        let mut items = Vec::new();
        let next = h.scan(cursor, count, |k, v| {
            if pattern.is_none_or(|p| glob_match(p, k, false)) {
                items.push(bulk_of(k));
                items.push(bulk_of(v));
            }
        });
        keel_engine::scan::scan_reply(next, items)
    })
}
