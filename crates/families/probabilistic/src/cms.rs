//! Count-min sketch commands, RedisBloom's `CMS.*` family: CMS.INITBYDIM,
//! CMS.INITBYPROB, CMS.INCRBY, CMS.QUERY, CMS.MERGE and CMS.INFO. The sketch
//! is `keel_store::cms::CountMinSketch`; this file owns argument parsing,
//! reply shapes and RedisBloom's error texts (all `CMS: ...`).

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::cms::{dims_for, CountMinSketch};
use keel_store::num::{parse_f64_in_range, parse_i64};
use keel_store::{Value, ValueType};

pub static COMMANDS: &[&CommandSpec] = &[
    &CMS_INITBYDIM,
    &CMS_INITBYPROB,
    &CMS_INCRBY,
    &CMS_QUERY,
    &CMS_MERGE,
    &CMS_INFO,
];

const WRITE: Flags = Flags::WRITE.union(Flags::DENYOOM);
const READ: Flags = Flags::READONLY.union(Flags::FAST);

fn cms_err(text: &str) -> CmdError {
    CmdError::msg(format!("CMS: {text}"))
}

/// The sketch at `key` for a read; a missing key is `CMS: key does not exist`.
fn read_sketch<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<&'t CountMinSketch, CmdError> {
    match ctx.read_value(key, ValueType::Cms)? {
        Some(Value::Cms(c)) => Ok(c),
        Some(_) => Err(CmdError::WrongType),
        None => Err(cms_err("key does not exist")),
    }
}

fn int(n: u64) -> Frame {
    Frame::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

// ---------------------------------------------------------------------------
// CMS.INITBYDIM, CMS.INITBYPROB

/// Creates the sketch at `key` once its dimensions are known; the key must be
/// free (checked first, as RedisBloom does).
fn create(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    dims: impl FnOnce() -> Result<(u64, u64), CmdError>,
) -> Result<Frame, CmdError> {
    let now = ctx.now_ms();
    if ctx.table(key)?.peek(key, now).is_some() {
        return Err(cms_err("key already exists"));
    }
    let (width, depth) = dims()?;
    if width.checked_mul(depth).is_none_or(|n| n > i64::MAX as u64) {
        return Err(cms_err("invalid init arguments"));
    }
    // Keel's cap on the counters a client may ask for.
    let cms = CountMinSketch::new(width, depth).ok_or(cms_err("invalid init arguments"))?;
    ctx.table(key)?
        .insert(key, Value::Cms(Box::new(cms)), 0, now);
    ctx.dirty(1);
    Ok(Frame::ok())
}

pub(crate) const CMS_INITBYDIM: CommandSpec = CommandSpec {
    name: "CMS.INITBYDIM",
    group: Group::Cms,
    arity: 4,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Initializes a Count-Min Sketch to dimensions specified by user (width * depth at most 2^30 in Keel)",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: cms_initbydim,
};

fn cms_initbydim(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let (w, d) = (args.next_arg()?, args.next_arg()?);
    create(ctx, key, || {
        let dim = |raw: &[u8], what: &str| {
            parse_i64(raw)
                .filter(|&n| n >= 1)
                .map(|n| n as u64)
                .ok_or_else(|| cms_err(&format!("invalid {what}")))
        };
        Ok((dim(w, "width")?, dim(d, "depth")?))
    })
}

pub(crate) const CMS_INITBYPROB: CommandSpec = CommandSpec {
    name: "CMS.INITBYPROB",
    group: Group::Cms,
    arity: 4,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Initializes a Count-Min Sketch to accommodate requested tolerances.",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: cms_initbyprob,
};

fn cms_initbyprob(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let (e, p) = (args.next_arg()?, args.next_arg()?);
    create(ctx, key, || {
        let frac = |raw: &[u8], what: &str| {
            parse_f64_in_range(raw)
                .filter(|&x| x > 0.0 && x < 1.0)
                .ok_or_else(|| cms_err(&format!("invalid {what} value")))
        };
        let error = frac(e, "overestimation")?;
        let prob = frac(p, "prob")?;
        Ok(dims_for(error, prob))
    })
}

// ---------------------------------------------------------------------------
// CMS.INCRBY

pub(crate) const CMS_INCRBY: CommandSpec = CommandSpec {
    name: "CMS.INCRBY",
    group: Group::Cms,
    arity: -4,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Increases the count of one or more items by increment (an increment that would overflow a counter is refused per item with `CMS: INCRBY overflow`, as the current RedisBloom)",
    since: "2.0.0",
    complexity: "O(n) where n is the number of items",
    subcommands: &[],
    run: cms_incrby,
};

fn cms_incrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let pairs = args.rest();
    if !pairs.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity("cms.incrby".into()));
    }
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    let cms = match table.get_mut(key, now).map(|e| &mut e.value) {
        Some(Value::Cms(c)) => c,
        Some(_) => return Err(CmdError::WrongType),
        None => return Err(cms_err("key does not exist")),
    };
    // Every increment is parsed before any is applied.
    let mut incs = Vec::with_capacity(pairs.len() / 2);
    for pair in pairs.chunks_exact(2) {
        let n = parse_i64(&pair[1]).ok_or(cms_err("Cannot parse number"))?;
        if n < 0 {
            return Err(cms_err("Number cannot be negative"));
        }
        incs.push((&pair[0], n as u64));
    }
    let mut changed = 0;
    let replies = incs
        .into_iter()
        .map(|(item, by)| match cms.incr_by(item, by) {
            Ok(n) => {
                changed += 1;
                int(n)
            }
            Err(_) => Frame::Error(Bytes::from_static(b"CMS: INCRBY overflow")),
        })
        .collect();
    ctx.dirty(changed);
    Ok(Frame::Array(replies))
}

// ---------------------------------------------------------------------------
// CMS.QUERY, CMS.INFO

pub(crate) const CMS_QUERY: CommandSpec = CommandSpec {
    name: "CMS.QUERY",
    group: Group::Cms,
    arity: -3,
    flags: READ,
    keys: Keys::single(1),
    summary: "Returns the count for one or more items in a sketch",
    since: "2.0.0",
    complexity: "O(n) where n is the number of items",
    subcommands: &[],
    run: cms_query,
};

fn cms_query(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let items = args.rest();
    let cms = read_sketch(ctx, key)?;
    Ok(Frame::Array(
        items.iter().map(|i| int(cms.query(i))).collect(),
    ))
}

pub(crate) const CMS_INFO: CommandSpec = CommandSpec {
    name: "CMS.INFO",
    group: Group::Cms,
    arity: 2,
    flags: READ,
    keys: Keys::single(1),
    summary: "Returns information about a sketch",
    since: "2.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: cms_info,
};

fn cms_info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let cms = read_sketch(ctx, key)?;
    // A map in RESP3; the encoder flattens it for RESP2.
    Ok(Frame::Map(vec![
        (Frame::simple("width"), int(cms.width())),
        (Frame::simple("depth"), int(cms.depth())),
        (Frame::simple("count"), int(cms.count())),
    ]))
}

// ---------------------------------------------------------------------------
// CMS.MERGE

pub(crate) const CMS_MERGE: CommandSpec = CommandSpec {
    name: "CMS.MERGE",
    group: Group::Cms,
    arity: -4,
    flags: WRITE,
    keys: Keys::NumKeys {
        numkeys: 2,
        extra: 1,
    },
    summary: "Merges several sketches into one sketch (refused with `CMS: MERGE overflow` when a counter would leave its range, as the current RedisBloom)",
    since: "2.0.0",
    complexity: "O(n) where n is the number of sketches",
    subcommands: &[],
    run: cms_merge,
};

fn cms_merge(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let dest = args.next_key()?;
    let raw_numkeys = args.next_arg()?;
    let rest = args.rest();
    let (width, depth) = {
        let d = read_sketch(ctx, dest)?;
        (d.width(), d.depth())
    };
    let numkeys = parse_i64(raw_numkeys).ok_or(cms_err("invalid numkeys"))?;
    if numkeys <= 0 {
        return Err(cms_err("Number of keys must be positive"));
    }
    let weights_at = rest.iter().position(|a| is(a, "WEIGHTS"));
    let n = match weights_at {
        None if numkeys as u64 != rest.len() as u64 => return Err(cms_err("wrong number of keys")),
        Some(at) if at as u64 != numkeys as u64 || rest.len() as u64 != 1 + 2 * numkeys as u64 => {
            return Err(cms_err("wrong number of keys/weights"))
        }
        _ => numkeys as usize,
    };
    let mut sources: Vec<(CountMinSketch, i64)> = Vec::with_capacity(n);
    for (i, key) in rest[..n].iter().enumerate() {
        let weight = match weights_at {
            None => 1,
            Some(_) => parse_i64(&rest[n + 1 + i]).ok_or(cms_err("invalid weight value"))?,
        };
        let s = read_sketch(ctx, key)?;
        if s.width() != width || s.depth() != depth {
            return Err(cms_err("width/depth is not equal"));
        }
        // Sources may include the destination: take them by value.
        sources.push((s.clone(), weight));
    }
    let now = ctx.now_ms();
    let Some(Value::Cms(d)) = ctx.table(dest)?.get_mut(dest, now).map(|e| &mut e.value) else {
        return Err(cms_err("key does not exist"));
    };
    let refs: Vec<(&CountMinSketch, i64)> = sources.iter().map(|(s, w)| (s, *w)).collect();
    d.merge(&refs).map_err(|_| cms_err("MERGE overflow"))?;
    ctx.dirty(1);
    ctx.modified(ctx.db(), dest);
    Ok(Frame::ok())
}
