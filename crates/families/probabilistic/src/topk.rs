//! Top-k commands, RedisBloom's `TOPK.*` family: TOPK.RESERVE, TOPK.ADD,
//! TOPK.INCRBY, TOPK.QUERY, TOPK.COUNT, TOPK.LIST and TOPK.INFO. The sketch
//! is `keel_store::topk::TopK`; this file owns argument parsing, reply shapes
//! and RedisBloom's error texts (which carry no `ERR` prefix).

use bytes::Bytes;
use keel_engine::args::is;
use keel_engine::args::Args;
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::num::{parse_f64_in_range, parse_i64};
use keel_store::topk::{TopK, MAX_INCREMENT};
use keel_store::{Value, ValueType};

pub static COMMANDS: &[&CommandSpec] = &[
    &TOPK_RESERVE,
    &TOPK_ADD,
    &TOPK_INCRBY,
    &TOPK_QUERY,
    &TOPK_COUNT,
    &TOPK_LIST,
    &TOPK_INFO,
];

const WRITE: Flags = Flags::WRITE.union(Flags::DENYOOM);
const READ: Flags = Flags::READONLY;

/// RedisBloom's TOPK.RESERVE defaults when only `topk` is given.
const DEFAULT_WIDTH: u32 = 8;
const DEFAULT_DEPTH: u32 = 7;
const DEFAULT_DECAY: f64 = 0.9;

fn missing() -> CmdError {
    CmdError::msg("TopK: key does not exist")
}

/// An item in a reply: a simple string, as RedisBloom sends it, unless the
/// item holds a line break a simple string cannot carry.
fn item_frame(item: &[u8]) -> Frame {
    if item.iter().any(|&b| b == b'\r' || b == b'\n') {
        Frame::Bulk(Bytes::copy_from_slice(item))
    } else {
        Frame::Simple(Bytes::copy_from_slice(item))
    }
}

fn read_topk<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<&'t TopK, CmdError> {
    match ctx.read_value(key, ValueType::TopK)? {
        Some(Value::TopK(t)) => Ok(t),
        Some(_) => Err(CmdError::WrongType),
        None => Err(missing()),
    }
}

fn write_topk<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<&'t mut TopK, CmdError> {
    let now = ctx.now_ms();
    match ctx.table(key)?.get_mut(key, now) {
        Some(e) => match &mut e.value {
            Value::TopK(t) => Ok(t),
            _ => Err(CmdError::WrongType),
        },
        None => Err(missing()),
    }
}

// ---------------------------------------------------------------------------

pub(crate) const TOPK_RESERVE: CommandSpec = CommandSpec {
    name: "TOPK.RESERVE",
    group: Group::TopK,
    arity: -3,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Initializes a TopK with specified parameters",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: topk_reserve,
};

fn topk_reserve(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    if argv.len() != 3 && argv.len() != 6 {
        return Err(CmdError::WrongArity("topk.reserve".into()));
    }
    let key = args.next_key()?;
    let now = ctx.now_ms();
    if ctx.table(key)?.peek(key, now).is_some() {
        return Err(CmdError::msg("TopK: key already exists"));
    }
    let k = parse_i64(&argv[2])
        .filter(|k| *k >= 1)
        .and_then(|k| u32::try_from(k).ok())
        .ok_or(CmdError::msg("TopK: invalid k"))?;
    let (width, depth, decay) = if argv.len() == 6 {
        let dim = |raw: &[u8], what: &str| {
            parse_i64(raw)
                .filter(|n| *n >= 1)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or(CmdError::msg(format!("TopK: invalid {what}")))
        };
        let width = dim(&argv[3], "width")?;
        let depth = dim(&argv[4], "depth")?;
        let decay = parse_f64_in_range(&argv[5])
            .filter(|d| *d > 0.0 && *d <= 1.0)
            .ok_or(CmdError::msg(
                "TopK: invalid decay value. must be '<= 1' & '> 0'",
            ))?;
        (width, depth, decay)
    } else {
        (DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_DECAY)
    };
    let topk = TopK::new(k, width, depth, decay)
        .map_err(|_| CmdError::err("Insufficient memory to create topk data structure"))?;
    ctx.table(key)?
        .insert(key, Value::TopK(Box::new(topk)), 0, now);
    ctx.dirty(1);
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------

pub(crate) const TOPK_ADD: CommandSpec = CommandSpec {
    name: "TOPK.ADD",
    group: Group::TopK,
    arity: -3,
    flags: WRITE,
    keys: Keys::single(1),
    summary:
        "Increases the count of one or more items by increment (as current RedisBloom does: a \
              counter already holding the item's fingerprint always grows, where older releases stopped it \
              at the heap's minimum for items outside the list)",
    since: "2.0.0",
    complexity: "O(n * k) where n is the number of items and k is the depth",
    subcommands: &[],
    run: topk_add,
};

fn expelled_frame(e: Option<Box<[u8]>>) -> Frame {
    e.map_or(Frame::Null, |i| item_frame(&i))
}

fn topk_add(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let items = args.rest();
    let topk = write_topk(ctx, key)?;
    let out = items
        .iter()
        .map(|i| expelled_frame(topk.add(i, 1)))
        .collect();
    ctx.dirty(items.len() as u64);
    Ok(Frame::Array(out))
}

pub(crate) const TOPK_INCRBY: CommandSpec = CommandSpec {
    name: "TOPK.INCRBY",
    group: Group::TopK,
    arity: -4,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Increases the count of one or more items by increment (at most 100,000 per item, as \
              current RedisBloom limits it)",
    since: "2.0.0",
    complexity:
        "O(n * k * incr) where n is the number of items, k is the depth and incr is the increment",
    subcommands: &[],
    run: topk_incrby,
};

/// RedisBloom's text, including the run of spaces its C source leaves inside
/// the string (a line continuation); clients match on the whole sentence.
const BAD_INCREMENT: &str = "TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000";

fn topk_incrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    if args.argv().len() % 2 == 1 {
        return Err(CmdError::WrongArity("topk.incrby".into()));
    }
    let key = args.next_key()?;
    let pairs = args.rest();
    let topk = write_topk(ctx, key)?;
    let mut out = Vec::with_capacity(pairs.len() / 2);
    // Like RedisBloom, a bad increment ends the reply with its error after
    // the items before it were added. (RedisBloom has announced the full
    // array length by then; Keel's array ends at the error.)
    for pair in pairs.chunks_exact(2) {
        let Some(incr) = parse_i64(&pair[1])
            .filter(|n| (0..=i64::from(MAX_INCREMENT)).contains(n))
            .map(|n| n as u32)
        else {
            out.push(Frame::Error(Bytes::from_static(BAD_INCREMENT.as_bytes())));
            break;
        };
        out.push(expelled_frame(topk.add(&pair[0], incr)));
    }
    ctx.dirty(out.len() as u64);
    Ok(Frame::Array(out))
}

// ---------------------------------------------------------------------------

pub(crate) const TOPK_QUERY: CommandSpec = CommandSpec {
    name: "TOPK.QUERY",
    group: Group::TopK,
    arity: -3,
    flags: READ,
    keys: Keys::single(1),
    summary: "Checks whether one or more items are in a sketch",
    since: "2.0.0",
    complexity: "O(n) where n is the number of items",
    subcommands: &[],
    run: topk_query,
};

fn topk_query(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let items = args.rest();
    let topk = read_topk(ctx, key)?;
    Ok(Frame::Array(
        items
            .iter()
            .map(|i| Frame::Integer(i64::from(topk.query(i))))
            .collect(),
    ))
}

pub(crate) const TOPK_COUNT: CommandSpec = CommandSpec {
    name: "TOPK.COUNT",
    group: Group::TopK,
    arity: -3,
    flags: READ,
    keys: Keys::single(1),
    summary: "Return the count for one or more items are in a sketch (deprecated: the counts \
              are estimates, often lower than the real ones; served as RedisBloom still does)",
    since: "2.0.0",
    complexity: "O(n) where n is the number of items",
    subcommands: &[],
    run: topk_count,
};

fn topk_count(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let items = args.rest();
    let topk = read_topk(ctx, key)?;
    Ok(Frame::Array(
        items
            .iter()
            .map(|i| Frame::Integer(i64::from(topk.count(i))))
            .collect(),
    ))
}

pub(crate) const TOPK_LIST: CommandSpec = CommandSpec {
    name: "TOPK.LIST",
    group: Group::TopK,
    arity: -2,
    flags: READ,
    keys: Keys::single(1),
    summary: "Return full list of items in Top K list (heaviest first; WITHCOUNT adds each \
              count)",
    since: "2.0.0",
    complexity: "O(k*log(k)) where k is the value of top-k",
    subcommands: &[],
    run: topk_list,
};

fn topk_list(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    if argv.len() > 3 {
        return Err(CmdError::WrongArity("topk.list".into()));
    }
    // RedisBloom compares only as many letters as were given: any prefix of
    // WITHCOUNT (even an empty word) counts.
    let with_count = match argv.get(2) {
        None => false,
        Some(w) if w.len() <= 9 && is(w, &"WITHCOUNT"[..w.len()]) => true,
        Some(_) => return Err(CmdError::msg("WITHCOUNT keyword expected")),
    };
    let key = args.next_key()?;
    let topk = read_topk(ctx, key)?;
    let mut out = Vec::new();
    for (item, count) in topk.list() {
        out.push(item_frame(item));
        if with_count {
            out.push(Frame::Integer(i64::from(count)));
        }
    }
    Ok(Frame::Array(out))
}

pub(crate) const TOPK_INFO: CommandSpec = CommandSpec {
    name: "TOPK.INFO",
    group: Group::TopK,
    arity: 2,
    flags: READ,
    keys: Keys::single(1),
    summary: "Returns information about a sketch",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: topk_info,
};

fn topk_info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let t = read_topk(ctx, key)?;
    let field = |s: &'static str| Frame::Simple(Bytes::from_static(s.as_bytes()));
    Ok(Frame::Array(vec![
        field("k"),
        Frame::Integer(i64::from(t.k())),
        field("width"),
        Frame::Integer(i64::from(t.width())),
        field("depth"),
        Frame::Integer(i64::from(t.depth())),
        field("decay"),
        Frame::Double(t.decay()),
    ]))
}
