//! T-digest commands, RedisBloom's `TDIGEST.*` family: CREATE, ADD, RESET,
//! MERGE, MIN, MAX, QUANTILE, CDF, RANK, REVRANK, BYRANK, BYREVRANK,
//! TRIMMED_MEAN and INFO. The digest is `keel_store::tdigest::TDigest`; this
//! file owns argument parsing, reply shapes and RedisBloom's error texts.
//!
//! As in RedisBloom, the queries that read through the centroids (QUANTILE,
//! CDF, RANK, BYRANK, TRIMMED_MEAN and their reverse forms) first merge the
//! buffered points, which TDIGEST.INFO then shows; MERGE does so to its
//! sources too.

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::num::{parse_f64_in_range, parse_i64};
use keel_store::tdigest::{capacity_for, TDigest};
use keel_store::Value;

pub static COMMANDS: &[&CommandSpec] = &[
    &TDIGEST_CREATE,
    &TDIGEST_ADD,
    &TDIGEST_RESET,
    &TDIGEST_MERGE,
    &TDIGEST_MIN,
    &TDIGEST_MAX,
    &TDIGEST_QUANTILE,
    &TDIGEST_CDF,
    &TDIGEST_RANK,
    &TDIGEST_REVRANK,
    &TDIGEST_BYRANK,
    &TDIGEST_BYREVRANK,
    &TDIGEST_TRIMMED_MEAN,
    &TDIGEST_INFO,
];

const WRITE: Flags = Flags::WRITE.union(Flags::DENYOOM);
const READ: Flags = Flags::READONLY;

const DEFAULT_COMPRESSION: i64 = 100;

fn missing() -> CmdError {
    CmdError::err("T-Digest: key does not exist")
}

/// The digest at `key`. Reads take it mutably too: answering merges the
/// buffered points, as RedisBloom's queries do.
fn digest<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<&'t mut TDigest, CmdError> {
    let now = ctx.now_ms();
    match ctx.table(key)?.get_mut(key, now) {
        Some(e) => match &mut e.value {
            Value::TDigest(t) => Ok(t),
            _ => Err(CmdError::WrongType),
        },
        None => Err(missing()),
    }
}

fn parse_compression(raw: &[u8]) -> Result<i64, CmdError> {
    let c = parse_i64(raw).ok_or(CmdError::err(
        "T-Digest: error parsing compression parameter",
    ))?;
    if c <= 0 {
        return Err(CmdError::err(
            "T-Digest: compression parameter needs to be a positive integer",
        ));
    }
    Ok(c)
}

fn doubles(values: Vec<f64>) -> Frame {
    Frame::Array(values.into_iter().map(Frame::Double).collect())
}

macro_rules! spec {
    ($id:ident, $name:literal, $arity:expr, $flags:expr, $summary:literal, $complexity:literal, $run:ident) => {
        pub(crate) const $id: CommandSpec = CommandSpec {
            name: $name,
            group: Group::TDigest,
            arity: $arity,
            flags: $flags,
            keys: Keys::single(1),
            summary: $summary,
            since: "2.4.0",
            complexity: $complexity,
            subcommands: &[],
            run: $run,
        };
    };
}

// ---------------------------------------------------------------------------

spec!(
    TDIGEST_CREATE,
    "TDIGEST.CREATE",
    -2,
    WRITE,
    "Allocates memory and initializes a new t-digest sketch",
    "O(1)",
    tdigest_create
);

fn tdigest_create(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    if argv.len() != 2 && argv.len() != 4 {
        return Err(CmdError::WrongArity("tdigest.create".into()));
    }
    let key = args.next_key()?;
    let now = ctx.now_ms();
    match ctx.table(key)?.peek(key, now) {
        Some(e) if matches!(e.value, Value::TDigest(_)) => {
            return Err(CmdError::err("T-Digest: key already exists"))
        }
        Some(_) => return Err(CmdError::WrongType),
        None => {}
    }
    let mut compression = DEFAULT_COMPRESSION;
    if argv.len() == 4 {
        // RedisBloom looks for the keyword in either of the two places.
        if !is(&argv[2], "COMPRESSION") && !is(&argv[3], "COMPRESSION") {
            return Err(CmdError::err("T-Digest: wrong keyword"));
        }
        compression = parse_compression(&argv[3])?;
    }
    let t = TDigest::new(compression as u64)
        .map_err(|_| CmdError::err("T-Digest: allocation failed"))?;
    ctx.table(key)?
        .insert(key, Value::TDigest(Box::new(t)), 0, now);
    ctx.dirty(1);
    Ok(Frame::ok())
}

spec!(
    TDIGEST_ADD,
    "TDIGEST.ADD",
    -3,
    WRITE,
    "Adds one or more observations to a t-digest sketch",
    "O(N), where N is the number of samples to add",
    tdigest_add
);

fn tdigest_add(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let raw = args.rest();
    let t = digest(ctx, key)?;
    let mut values = Vec::with_capacity(raw.len());
    for r in raw {
        let v =
            parse_f64_in_range(r).ok_or(CmdError::err("T-Digest: error parsing val parameter"))?;
        if !v.is_finite() {
            return Err(CmdError::err(
                "T-Digest: val parameter needs to be a finite number",
            ));
        }
        values.push(v);
    }
    let mut result = Ok(Frame::ok());
    let mut added = 0;
    for v in values {
        if t.add(v, 1).is_err() {
            result = Err(CmdError::err("T-Digest: overflow detected"));
            break;
        }
        added += 1;
    }
    ctx.dirty(added);
    result
}

spec!(
    TDIGEST_RESET,
    "TDIGEST.RESET",
    2,
    WRITE,
    "Resets a t-digest sketch: empties the sketch and re-initializes it.",
    "O(1)",
    tdigest_reset
);

fn tdigest_reset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    digest(ctx, key)?.reset();
    ctx.dirty(1);
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------

pub(crate) const TDIGEST_MERGE: CommandSpec = CommandSpec {
    name: "TDIGEST.MERGE",
    group: Group::TDigest,
    arity: -4,
    flags: WRITE,
    keys: Keys::NumKeys {
        numkeys: 2,
        extra: 1,
    },
    summary: "Merges multiple t-digest sketches into a single sketch",
    since: "2.4.0",
    complexity: "O(N*K), where N is the number of centroids and K being the number of input \
                 sketches",
    subcommands: &[],
    run: tdigest_merge,
};

fn tdigest_merge(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let dest = args.next_key()?;
    let now = ctx.now_ms();
    let dest_compression = match ctx.table(dest)?.peek(dest, now) {
        Some(e) => match &e.value {
            Value::TDigest(t) => Some(t.compression() as i64),
            _ => return Err(CmdError::WrongType),
        },
        None => None,
    };
    let numkeys = parse_i64(&argv[2]).ok_or(CmdError::err("T-Digest: error parsing numkeys"))?;
    if numkeys <= 0 {
        return Err(CmdError::err(
            "T-Digest: numkeys needs to be a positive integer",
        ));
    }
    if numkeys > argv.len() as i64 - 3 {
        return Err(CmdError::WrongArity("tdigest.merge".into()));
    }
    let numkeys = numkeys as usize;
    let sources = &argv[3..3 + numkeys];
    let opts = &argv[3 + numkeys..];
    let mut compression = dest_compression.unwrap_or(0);
    let mut use_max = dest_compression.is_none();
    let mut override_dest = false;
    if !opts.is_empty() {
        let at = opts.iter().position(|a| is(a, "COMPRESSION"));
        if let Some(at) = at {
            use_max = false;
            let raw = opts
                .get(at + 1)
                .ok_or(CmdError::WrongArity("tdigest.merge".into()))?;
            compression = parse_compression(raw)?;
        }
        if opts.iter().any(|a| is(a, "OVERRIDE")) {
            override_dest = true;
            if at.is_none() {
                use_max = true;
                compression = 0;
            }
        } else if at.is_none() {
            return Err(CmdError::err("T-Digest: wrong keyword"));
        }
    }
    // Every source must be a digest before any is touched.
    for key in sources {
        if key.as_ref() == dest && dest_compression.is_none() {
            return Err(missing());
        }
        let c = digest(ctx, key)?.compression() as i64;
        if use_max {
            compression = compression.max(c);
        }
    }
    // Each source is merged in place first, as RedisBloom's merge leaves it.
    let mut inputs: Vec<TDigest> = Vec::with_capacity(numkeys);
    for key in sources {
        let t = digest(ctx, key)?;
        let _ = t.compress();
        inputs.push(t.clone());
    }
    if capacity_for(compression as u64).is_none() {
        return Err(CmdError::err(
            "T-Digest: allocation of destination digest failed",
        ));
    }
    let mut merged = TDigest::new(compression as u64)
        .map_err(|_| CmdError::err("T-Digest: allocation of destination digest failed"))?;
    if dest_compression.is_some() && !override_dest {
        let start = digest(ctx, dest)?;
        let _ = start.compress();
        let mut start = start.clone();
        merged
            .merge_from(&mut start)
            .map_err(|_| CmdError::err("T-Digest: overflow detected"))?;
    }
    for mut t in inputs {
        merged
            .merge_from(&mut t)
            .map_err(|_| CmdError::err("T-Digest: overflow detected"))?;
    }
    let table = ctx.table(dest)?;
    match table.get_mut(dest, now) {
        Some(e) => e.value = Value::TDigest(Box::new(merged)),
        None => {
            table.insert(dest, Value::TDigest(Box::new(merged)), 0, now);
        }
    }
    ctx.dirty(1);
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------

spec!(
    TDIGEST_MIN,
    "TDIGEST.MIN",
    2,
    READ,
    "Returns the minimum observation value from a t-digest sketch",
    "O(1)",
    tdigest_min
);

fn tdigest_min(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let t = digest(ctx, key)?;
    Ok(Frame::Double(if t.size() > 0 { t.min() } else { f64::NAN }))
}

spec!(
    TDIGEST_MAX,
    "TDIGEST.MAX",
    2,
    READ,
    "Returns the maximum observation value from a t-digest sketch",
    "O(1)",
    tdigest_max
);

fn tdigest_max(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let t = digest(ctx, key)?;
    Ok(Frame::Double(if t.size() > 0 { t.max() } else { f64::NAN }))
}

spec!(
    TDIGEST_QUANTILE,
    "TDIGEST.QUANTILE",
    -3,
    READ,
    "Returns, for each input fraction, an estimation of the value (floating point) that is \
     smaller than the given fraction of observations",
    "O(N) where N is the number of quantiles specified.",
    tdigest_quantile
);

fn tdigest_quantile(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let raw = args.rest();
    let t = digest(ctx, key)?;
    // Every fraction is checked before any is answered; the reply's array
    // holds them until each is replaced by its answer.
    let mut out = Vec::with_capacity(raw.len());
    for r in raw {
        let q = parse_f64_in_range(r).ok_or(CmdError::err("T-Digest: error parsing quantile"))?;
        if !(0.0..=1.0).contains(&q) {
            return Err(CmdError::err("T-Digest: quantile should be in [0,1]"));
        }
        out.push(Frame::Double(q));
    }
    // RedisBloom answers each ascending run in one walk over the centroids;
    // each quantile alone gets the same answer from the digest.
    for f in &mut out {
        if let Frame::Double(q) = f {
            *q = t.quantile_in_batch(*q);
        }
    }
    Ok(Frame::Array(out))
}

spec!(
    TDIGEST_CDF,
    "TDIGEST.CDF",
    -3,
    READ,
    "Returns, for each input value, an estimation of the fraction (floating-point) of \
     (observations smaller than the given value + half the observations equal to the given \
     value)",
    "O(N) where N is the number of values specified.",
    tdigest_cdf
);

fn tdigest_cdf(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let raw = args.rest();
    let t = digest(ctx, key)?;
    let mut vals = Vec::with_capacity(raw.len());
    for r in raw {
        vals.push(parse_f64_in_range(r).ok_or(CmdError::err("T-Digest: error parsing cdf"))?);
    }
    Ok(doubles(vals.into_iter().map(|v| t.cdf(v)).collect()))
}

/// C's `modf`-based rounding RedisBloom uses for RANK: halves go toward zero.
fn half_round_down(f: f64) -> f64 {
    let int = f.trunc();
    let frac = f - int;
    if frac.abs() <= 0.5 {
        int
    } else if int >= 0.0 {
        int + 1.0
    } else {
        int - 1.0
    }
}

fn rank(ctx: &mut Ctx<'_>, args: &mut Args<'_>, reverse: bool) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let raw = args.rest();
    let t = digest(ctx, key)?;
    let mut vals = Vec::with_capacity(raw.len());
    for r in raw {
        vals.push(parse_f64_in_range(r).ok_or(CmdError::err("T-Digest: error parsing value"))?);
    }
    let size = t.size() as f64;
    let (min, max) = (t.min(), t.max());
    let out = vals
        .into_iter()
        .map(|v| {
            let r = if size == 0.0 {
                -2.0
            } else if v < min {
                if reverse {
                    size
                } else {
                    -1.0
                }
            } else if v > max {
                if reverse {
                    -1.0
                } else {
                    size
                }
            } else {
                let c = t.cdf(v) * size;
                if reverse {
                    (size - c.round()).round()
                } else {
                    half_round_down(c)
                }
            };
            Frame::Integer(r as i64)
        })
        .collect();
    Ok(Frame::Array(out))
}

spec!(
    TDIGEST_RANK,
    "TDIGEST.RANK",
    -3,
    READ,
    "Returns, for each input value (floating-point), the estimated rank of the value (the \
     number of observations in the sketch that are smaller than the value + half the number \
     of observations that are equal to the value)",
    "O(N) where N is the number of values specified.",
    tdigest_rank
);

fn tdigest_rank(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    rank(ctx, args, false)
}

spec!(
    TDIGEST_REVRANK,
    "TDIGEST.REVRANK",
    -3,
    READ,
    "Returns, for each input value (floating-point), the estimated reverse rank of the value \
     (the number of observations in the sketch that are larger than the value + half the \
     number of observations that are equal to the value)",
    "O(N) where N is the number of values specified.",
    tdigest_revrank
);

fn tdigest_revrank(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    rank(ctx, args, true)
}

fn by_rank(ctx: &mut Ctx<'_>, args: &mut Args<'_>, reverse: bool) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let raw = args.rest();
    let t = digest(ctx, key)?;
    let mut ranks = Vec::with_capacity(raw.len());
    for r in raw {
        let n = parse_i64(r).ok_or(CmdError::err("T-Digest: error parsing rank"))?;
        if n < 0 {
            return Err(CmdError::err("T-Digest: rank needs to be non negative"));
        }
        ranks.push(n);
    }
    let size = t.size() as f64;
    let (min, max) = (t.min(), t.max());
    let out = ranks
        .into_iter()
        .map(|n| {
            let rank = n as f64;
            if size == 0.0 {
                f64::NAN
            } else if rank == 0.0 {
                if reverse {
                    max
                } else {
                    min
                }
            } else if rank >= size {
                if reverse {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }
            } else {
                let r = if reverse { size - rank - 1.0 } else { rank };
                t.quantile(r / size)
            }
        })
        .collect();
    Ok(doubles(out))
}

spec!(
    TDIGEST_BYRANK,
    "TDIGEST.BYRANK",
    -3,
    READ,
    "Returns, for each input rank, an estimation of the value (floating-point) with that rank",
    "O(N) where N is the number of ranks specified.",
    tdigest_byrank
);

fn tdigest_byrank(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    by_rank(ctx, args, false)
}

spec!(
    TDIGEST_BYREVRANK,
    "TDIGEST.BYREVRANK",
    -3,
    READ,
    "Returns, for each input reverse rank, an estimation of the value (floating-point) with \
     that reverse rank",
    "O(N) where N is the number of reverse ranks specified.",
    tdigest_byrevrank
);

fn tdigest_byrevrank(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    by_rank(ctx, args, true)
}

spec!(
    TDIGEST_TRIMMED_MEAN,
    "TDIGEST.TRIMMED_MEAN",
    4,
    READ,
    "Returns an estimation of the mean value from the sketch, excluding observation values \
     outside the low and high cutoff quantiles",
    "O(N) where N is the number of centroids",
    tdigest_trimmed_mean
);

fn tdigest_trimmed_mean(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let low_raw = args.next_arg()?;
    let high_raw = args.next_arg()?;
    let t = digest(ctx, key)?;
    let low = parse_f64_in_range(low_raw)
        .ok_or(CmdError::err("T-Digest: error parsing low_cut_percentile"))?;
    let high = parse_f64_in_range(high_raw)
        .ok_or(CmdError::err("T-Digest: error parsing high_cut_percentile"))?;
    if !(0.0..=1.0).contains(&low) || !(0.0..=1.0).contains(&high) {
        return Err(CmdError::err(
            "T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]",
        ));
    }
    if low >= high {
        return Err(CmdError::err(
            "T-Digest: low_cut_percentile should be lower than high_cut_percentile",
        ));
    }
    Ok(Frame::Double(t.trimmed_mean(low, high)))
}

spec!(
    TDIGEST_INFO,
    "TDIGEST.INFO",
    2,
    READ,
    "Returns information and statistics about a t-digest sketch",
    "O(1)",
    tdigest_info
);

fn tdigest_info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let t = digest(ctx, key)?;
    let field = |s: &'static str| Frame::Simple(Bytes::from_static(s.as_bytes()));
    let int = |n: i64| Frame::Integer(n);
    Ok(Frame::Array(vec![
        field("Compression"),
        int(t.compression() as i64),
        field("Capacity"),
        int(t.capacity() as i64),
        field("Merged nodes"),
        int(t.merged_nodes() as i64),
        field("Unmerged nodes"),
        int(t.unmerged_nodes() as i64),
        field("Merged weight"),
        int(t.merged_weight()),
        field("Unmerged weight"),
        int(t.unmerged_weight()),
        field("Observations"),
        int(t.size()),
        field("Total compressions"),
        int(t.total_compressions()),
        field("Memory usage"),
        int(t.reported_bytes() as i64),
    ]))
}
