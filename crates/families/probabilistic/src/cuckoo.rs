//! Cuckoo filter commands, RedisBloom's `CF.*` family: CF.RESERVE, CF.ADD,
//! CF.ADDNX, CF.INSERT, CF.INSERTNX, CF.EXISTS, CF.MEXISTS, CF.DEL, CF.COUNT,
//! CF.INFO, CF.SCANDUMP and CF.LOADCHUNK. The filter is
//! `keel_store::cuckoo::CuckooFilter`; this file owns argument parsing, reply
//! shapes and the error texts, which follow the current RedisBloom's (most
//! carry no `ERR` prefix there).

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::cuckoo::{
    CuckooFilter, Insert, DEFAULT_BUCKET_SIZE, DEFAULT_CAPACITY, DEFAULT_EXPANSION,
    DEFAULT_MAX_ITERATIONS, HEADER_LEN, MAX_BUCKET_SIZE, MAX_CAPACITY, MAX_CHUNK_BYTES,
    MAX_EXPANSION, MAX_FILTERS, MAX_ITERATIONS,
};
use keel_store::num::parse_i64;
use keel_store::{Value, ValueType};

pub static COMMANDS: &[&CommandSpec] = &[
    &CF_RESERVE,
    &CF_ADD,
    &CF_ADDNX,
    &CF_INSERT,
    &CF_INSERTNX,
    &CF_EXISTS,
    &CF_MEXISTS,
    &CF_DEL,
    &CF_COUNT,
    &CF_INFO,
    &CF_SCANDUMP,
    &CF_LOADCHUNK,
];

const WRITE: Flags = Flags::WRITE.union(Flags::DENYOOM);
const READ: Flags = Flags::READONLY.union(Flags::FAST);

fn not_found() -> CmdError {
    CmdError::err("not found")
}

fn arity(name: &str) -> CmdError {
    CmdError::WrongArity(name.into())
}

/// The filter at `key` for a read: `None` when absent, WRONGTYPE for another
/// type.
fn read_filter<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t CuckooFilter>, CmdError> {
    match ctx.read_value(key, ValueType::Cuckoo)? {
        Some(Value::Cuckoo(cf)) => Ok(Some(cf)),
        Some(_) => Err(CmdError::WrongType),
        None => Ok(None),
    }
}

// ---------------------------------------------------------------------------
// CF.RESERVE

pub(crate) const CF_RESERVE: CommandSpec = CommandSpec {
    name: "CF.RESERVE",
    group: Group::Cuckoo,
    arity: -3,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Creates a new Cuckoo Filter (ranges and error texts as the current RedisBloom)",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: cf_reserve,
};

/// One of CF.RESERVE's numeric options: found wherever it appears (as
/// RedisBloom looks its keywords up), parsed, and range-checked.
fn reserve_option(
    argv: &[Bytes],
    name: &str,
    default: i64,
    range: (i64, i64),
) -> Result<i64, CmdError> {
    let Some(at) = argv.iter().skip(1).position(|a| is(a, name)) else {
        return Ok(default);
    };
    let raw = argv.get(at + 2).ok_or_else(|| arity("cf.reserve"))?;
    let n = parse_i64(raw).ok_or_else(|| CmdError::msg(format!("Couldn't parse {name}")))?;
    if n < range.0 || n > range.1 {
        return Err(CmdError::msg(format!(
            "{name}: value must be in the range [{}, {}]",
            range.0, range.1
        )));
    }
    Ok(n)
}

fn cf_reserve(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    if argv.len().is_multiple_of(2) {
        return Err(arity("cf.reserve"));
    }
    let key = args.next_key()?;
    let capacity = parse_i64(args.next_arg()?).ok_or(CmdError::msg("Bad capacity"))?;
    let max_iterations = reserve_option(
        argv,
        "MAXITERATIONS",
        i64::from(DEFAULT_MAX_ITERATIONS),
        (1, i64::from(MAX_ITERATIONS)),
    )?;
    let bucket_size = reserve_option(
        argv,
        "BUCKETSIZE",
        i64::from(DEFAULT_BUCKET_SIZE),
        (1, i64::from(MAX_BUCKET_SIZE)),
    )?;
    let expansion = reserve_option(
        argv,
        "EXPANSION",
        i64::from(DEFAULT_EXPANSION),
        (0, i64::from(MAX_EXPANSION)),
    )?;
    if capacity < bucket_size * 2 || capacity > MAX_CAPACITY as i64 {
        return Err(CmdError::msg(
            "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
        ));
    }
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    match table.peek(key, now) {
        Some(e) if matches!(e.value, Value::Cuckoo(_)) => return Err(CmdError::err("item exists")),
        Some(_) => return Err(CmdError::WrongType),
        None => {}
    }
    // The ranges were checked above, so the conversions hold.
    let cf = CuckooFilter::new(
        capacity as u64,
        bucket_size as u16,
        max_iterations as u16,
        expansion as u16,
    )
    .ok_or(CmdError::msg("Couldn't create Cuckoo Filter"))?;
    table.insert(key, Value::Cuckoo(Box::new(cf)), 0, now);
    ctx.dirty(1);
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------
// CF.ADD, CF.ADDNX, CF.INSERT, CF.INSERTNX

/// The write behind every add: put `items` into the filter at `key`,
/// creating it with `capacity` (and the default shape) when missing, unless
/// `capacity` is `None` (NOCREATE).
fn add_items(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    items: &[Bytes],
    capacity: Option<u64>,
    unique: bool,
) -> Result<Vec<Insert>, CmdError> {
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    let apply = |cf: &mut CuckooFilter| -> Vec<Insert> {
        items
            .iter()
            .map(|i| if unique { cf.add_unique(i) } else { cf.add(i) })
            .collect()
    };
    let (results, created) = match table.get_mut(key, now) {
        Some(entry) => {
            let Value::Cuckoo(cf) = &mut entry.value else {
                return Err(CmdError::WrongType);
            };
            if cf.num_filters() >= MAX_FILTERS {
                return Err(CmdError::msg("Maximum expansions reached"));
            }
            (apply(cf), false)
        }
        None => {
            let capacity = capacity.ok_or_else(not_found)?;
            let mut cf = CuckooFilter::new(
                capacity,
                DEFAULT_BUCKET_SIZE,
                DEFAULT_MAX_ITERATIONS,
                DEFAULT_EXPANSION,
            )
            .ok_or(CmdError::msg("Could not create filter"))?;
            let results = apply(&mut cf);
            table.insert(key, Value::Cuckoo(Box::new(cf)), 0, now);
            (results, true)
        }
    };
    let added = results.iter().filter(|r| **r == Insert::Inserted).count() as u64;
    ctx.dirty(added + u64::from(created));
    Ok(results)
}

fn add_one(ctx: &mut Ctx<'_>, args: &mut Args<'_>, unique: bool) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let item = args.next_arg()?;
    let results = add_items(
        ctx,
        key,
        std::slice::from_ref(item),
        Some(DEFAULT_CAPACITY),
        unique,
    )?;
    match results.first() {
        Some(Insert::Inserted) => Ok(Frame::Boolean(true)),
        Some(Insert::Exists) => Ok(Frame::Boolean(false)),
        _ => Err(CmdError::msg("Filter is full")),
    }
}

pub(crate) const CF_ADD: CommandSpec = CommandSpec {
    name: "CF.ADD",
    group: Group::Cuckoo,
    arity: 3,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Adds an item to a Cuckoo Filter",
    since: "1.0.0",
    complexity: "O(k + i), where k is the number of sub-filters and i is maxIterations",
    subcommands: &[],
    run: cf_add,
};

fn cf_add(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    add_one(ctx, args, false)
}

pub(crate) const CF_ADDNX: CommandSpec = CommandSpec {
    name: "CF.ADDNX",
    group: Group::Cuckoo,
    arity: 3,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Adds an item to a Cuckoo Filter if the item did not exist previously.",
    since: "1.0.0",
    complexity: "O(k + i), where k is the number of sub-filters and i is maxIterations",
    subcommands: &[],
    run: cf_addnx,
};

fn cf_addnx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    add_one(ctx, args, true)
}

/// CF.INSERT / CF.INSERTNX: `[CAPACITY n] [NOCREATE] ITEMS item...`, the
/// options told apart by their first letter as RedisBloom does.
fn insert(ctx: &mut Ctx<'_>, args: &mut Args<'_>, unique: bool) -> Result<Frame, CmdError> {
    let name = if unique { "cf.insertnx" } else { "cf.insert" };
    let key = args.next_key()?;
    let mut capacity = Some(DEFAULT_CAPACITY as i64);
    let mut nocreate = false;
    loop {
        let word = args.next_opt().ok_or_else(|| arity(name))?;
        match word.first().map(u8::to_ascii_lowercase) {
            Some(b'c') => {
                let raw = args.next_opt().ok_or_else(|| arity(name))?;
                let n = parse_i64(raw).ok_or(CmdError::msg("Bad capacity"))?;
                if n < i64::from(DEFAULT_BUCKET_SIZE) * 2 || n > MAX_CAPACITY as i64 {
                    return Err(CmdError::msg(
                        "Capacity must be in the range [cf-bucket-size * 2, 1073741824]",
                    ));
                }
                capacity = Some(n);
            }
            Some(b'i') => break,
            Some(b'n') => nocreate = true,
            _ => return Err(CmdError::msg("Unknown argument received")),
        }
    }
    let items = args.rest();
    if items.is_empty() {
        return Err(arity(name));
    }
    let capacity = if nocreate {
        None
    } else {
        capacity.map(|c| c as u64)
    };
    let results = add_items(ctx, key, items, capacity, unique)?;
    Ok(Frame::Array(
        results
            .into_iter()
            .map(|r| match r {
                Insert::Inserted => Frame::Boolean(true),
                Insert::Exists => Frame::Boolean(false),
                Insert::NoSpace => Frame::Integer(-1),
            })
            .collect(),
    ))
}

pub(crate) const CF_INSERT: CommandSpec = CommandSpec {
    name: "CF.INSERT",
    group: Group::Cuckoo,
    arity: -4,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist",
    since: "1.0.0",
    complexity: "O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations",
    subcommands: &[],
    run: cf_insert,
};

fn cf_insert(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    insert(ctx, args, false)
}

pub(crate) const CF_INSERTNX: CommandSpec = CommandSpec {
    name: "CF.INSERTNX",
    group: Group::Cuckoo,
    arity: -4,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Adds one or more items to a Cuckoo Filter if the items did not exist previously. A filter will be created if it does not exist",
    since: "1.0.0",
    complexity: "O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations",
    subcommands: &[],
    run: cf_insertnx,
};

fn cf_insertnx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    insert(ctx, args, true)
}

// ---------------------------------------------------------------------------
// CF.EXISTS, CF.MEXISTS, CF.COUNT

/// `f` of each item against the filter at `key`; a missing key, or one of
/// another type, answers 0 for each (RedisBloom does not say WRONGTYPE here).
fn probe_each(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    items: &[Bytes],
    f: fn(&CuckooFilter, &[u8]) -> u64,
) -> Result<Vec<u64>, CmdError> {
    let found = match read_filter(ctx, key) {
        Ok(Some(cf)) => Some(items.iter().map(|i| f(cf, i)).collect::<Vec<_>>()),
        Ok(None) | Err(CmdError::WrongType) => None,
        Err(e) => return Err(e),
    };
    ctx.hit_key(key, found.is_some());
    Ok(found.unwrap_or_else(|| vec![0; items.len()]))
}

fn exists(cf: &CuckooFilter, item: &[u8]) -> u64 {
    u64::from(cf.exists(item))
}

pub(crate) const CF_EXISTS: CommandSpec = CommandSpec {
    name: "CF.EXISTS",
    group: Group::Cuckoo,
    arity: 3,
    flags: READ,
    keys: Keys::single(1),
    summary: "Checks whether one or more items exist in a Cuckoo Filter",
    since: "1.0.0",
    complexity: "O(k), where k is the number of sub-filters",
    subcommands: &[],
    run: cf_exists,
};

fn cf_exists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let found = probe_each(ctx, key, args.rest(), exists)?;
    Ok(Frame::Boolean(found.first().is_some_and(|&n| n > 0)))
}

pub(crate) const CF_MEXISTS: CommandSpec = CommandSpec {
    name: "CF.MEXISTS",
    group: Group::Cuckoo,
    arity: -3,
    flags: READ,
    keys: Keys::single(1),
    summary: "Checks whether one or more items exist in a Cuckoo Filter",
    since: "1.0.0",
    complexity: "O(k * n), where k is the number of sub-filters and n is the number of items",
    subcommands: &[],
    run: cf_mexists,
};

fn cf_mexists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let found = probe_each(ctx, key, args.rest(), exists)?;
    Ok(Frame::Array(
        found.into_iter().map(|n| Frame::Boolean(n > 0)).collect(),
    ))
}

pub(crate) const CF_COUNT: CommandSpec = CommandSpec {
    name: "CF.COUNT",
    group: Group::Cuckoo,
    arity: 3,
    flags: READ,
    keys: Keys::single(1),
    summary: "Return the number of times an item might be in a Cuckoo Filter",
    since: "1.0.0",
    complexity: "O(k), where k is the number of sub-filters",
    subcommands: &[],
    run: cf_count,
};

fn cf_count(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let counts = probe_each(ctx, key, args.rest(), CuckooFilter::count)?;
    let n = counts.first().copied().unwrap_or(0);
    Ok(Frame::Integer(i64::try_from(n).unwrap_or(i64::MAX)))
}

// ---------------------------------------------------------------------------
// CF.DEL

pub(crate) const CF_DEL: CommandSpec = CommandSpec {
    name: "CF.DEL",
    group: Group::Cuckoo,
    arity: 3,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Deletes an item from a Cuckoo Filter",
    since: "1.0.0",
    complexity: "O(k), where k is the number of sub-filters",
    subcommands: &[],
    run: cf_del,
};

fn cf_del(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let item = args.next_arg()?;
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    // RedisBloom answers a missing key and one of another type alike.
    let Some(Value::Cuckoo(cf)) = table.get_mut(key, now).map(|e| &mut e.value) else {
        return Err(CmdError::msg("Not found"));
    };
    let removed = cf.delete(item);
    ctx.dirty(u64::from(removed));
    Ok(Frame::Boolean(removed))
}

// ---------------------------------------------------------------------------
// CF.INFO

pub(crate) const CF_INFO: CommandSpec = CommandSpec {
    name: "CF.INFO",
    group: Group::Cuckoo,
    arity: 2,
    flags: READ,
    keys: Keys::single(1),
    summary: "Returns information about a Cuckoo Filter",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: cf_info,
};

fn cf_info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let cf = read_filter(ctx, key)?.ok_or_else(not_found)?;
    let int = |n: u64| Frame::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    let fields = [
        ("Size", cf.size_bytes()),
        ("Number of buckets", cf.num_buckets()),
        ("Number of filters", cf.num_filters() as u64),
        ("Number of items inserted", cf.num_items()),
        ("Number of items deleted", cf.num_deletes()),
        ("Bucket size", u64::from(cf.bucket_size())),
        ("Expansion rate", u64::from(cf.expansion())),
        ("Max iterations", u64::from(cf.max_iterations())),
    ];
    // A map in RESP3; the encoder flattens it for RESP2.
    Ok(Frame::Map(
        fields
            .into_iter()
            .map(|(label, n)| (Frame::simple(label), int(n)))
            .collect(),
    ))
}

// ---------------------------------------------------------------------------
// CF.SCANDUMP, CF.LOADCHUNK

pub(crate) const CF_SCANDUMP: CommandSpec = CommandSpec {
    name: "CF.SCANDUMP",
    group: Group::Cuckoo,
    arity: 3,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Begins an incremental save of the bloom filter",
    since: "1.0.0",
    complexity: "O(n), where n is the capacity",
    subcommands: &[],
    run: cf_scandump,
};

/// Iterator 0 gives the header (and iterator 1), each later iterator the
/// next chunk; `[0, nil]` at the end, and at once for an empty filter.
fn cf_scandump(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let iter = parse_i64(args.next_arg()?).ok_or(CmdError::msg("Invalid position"))?;
    let cf = read_filter(ctx, key)?.ok_or_else(not_found)?;
    let end = || Frame::Array(vec![Frame::Integer(0), Frame::Null]);
    if cf.num_items() == 0 {
        return Ok(end());
    }
    if iter == 0 {
        return Ok(Frame::Array(vec![
            Frame::Integer(1),
            Frame::Bulk(Bytes::copy_from_slice(&cf.header_bytes())),
        ]));
    }
    Ok(match cf.chunk_at(iter, MAX_CHUNK_BYTES) {
        Some((next, chunk)) => Frame::Array(vec![
            Frame::Integer(next),
            Frame::Bulk(Bytes::copy_from_slice(chunk)),
        ]),
        None => end(),
    })
}

pub(crate) const CF_LOADCHUNK: CommandSpec = CommandSpec {
    name: "CF.LOADCHUNK",
    group: Group::Cuckoo,
    arity: 4,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Restores a filter previously saved using SCANDUMP",
    since: "1.0.0",
    complexity: "O(n), where n is the capacity",
    subcommands: &[],
    run: cf_loadchunk,
};

/// Iterator 1 is the header, which creates the filter (slots empty) on a
/// missing key; later iterators copy a chunk into an existing filter. The
/// header's fields and sizes, and a chunk's place, are checked before
/// anything is written.
fn cf_loadchunk(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let iter = parse_i64(args.next_arg()?)
        .filter(|&i| i != 0)
        .ok_or(CmdError::msg("Invalid position"))?;
    let data = args.next_arg()?;
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    let entry = table.get_mut(key, now);
    if iter == 1 {
        match entry {
            Some(e) if matches!(e.value, Value::Cuckoo(_)) => {
                return Err(CmdError::err("item exists"))
            }
            Some(_) => return Err(CmdError::WrongType),
            None => {}
        }
        if data.len() != HEADER_LEN {
            return Err(CmdError::msg("Invalid header"));
        }
        let cf = CuckooFilter::from_header(data)
            .map_err(|_| CmdError::msg("Couldn't create filter!"))?;
        table.insert(key, Value::Cuckoo(Box::new(cf)), 0, now);
    } else {
        let cf = match entry.map(|e| &mut e.value) {
            Some(Value::Cuckoo(cf)) => cf,
            Some(_) => return Err(CmdError::WrongType),
            None => return Err(not_found()),
        };
        cf.load_chunk(iter, data)
            .map_err(|_| CmdError::msg("Couldn't load chunk!"))?;
    }
    ctx.dirty(1);
    Ok(Frame::ok())
}
