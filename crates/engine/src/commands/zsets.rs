//! Sorted sets: ZADD, ZRANGE and the rest of the sorted-set commands. The
//! store's `zset` module does the work; this file parses, checks types and
//! shapes replies (RESP2 flat member/score lists, RESP3 [member, double] pairs).

use crate::args::{is, parse_i64, Args};
use crate::ctx::Ctx;
use crate::error::CmdError;
use crate::spec::{CommandSpec, Flags, Group, Keys};
use bytes::Bytes;
use keel_resp::Frame;
use keel_store::zset::{self, AddFlags, AddOutcome, LexRange, ScoreRange};
use keel_store::{Value, ValueType};

pub(crate) static COMMANDS: &[&CommandSpec] = &[
    &ZADD,
    &ZSCORE,
    &ZCARD,
    &ZPOPMIN,
    &ZPOPMAX,
    &ZMPOP,
    &ZRANGE,
    &ZREVRANGE,
    &ZRANGEBYSCORE,
    &ZREVRANGEBYSCORE,
    &ZRANGEBYLEX,
    &ZREVRANGEBYLEX,
];

/// Members with their scores, as a command gets them from the store.
pub(crate) type Pairs = Vec<(Vec<u8>, f64)>;

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

/// The sorted set at `key` for reading: `None` when absent, WRONGTYPE for another type.
fn read<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t Value>, CmdError> {
    let now = ctx.now_ms();
    let no_touch = ctx.session.no_touch;
    let table = ctx.table(key)?;
    let entry = if no_touch {
        table.peek(key, now)
    } else {
        table.get(key, now)
    };
    match entry {
        None => Ok(None),
        Some(e) if e.value.value_type() == ValueType::ZSet => Ok(Some(&e.value)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// The sorted set at `key` for a write: `None` when absent, WRONGTYPE for another type.
fn write<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t mut Value>, CmdError> {
    let now = ctx.now_ms();
    match ctx.table(key)?.get_mut(key, now) {
        None => Ok(None),
        Some(e) if e.value.value_type() == ValueType::ZSet => Ok(Some(&mut e.value)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// Delete `key` if its sorted set has become empty (Redis never keeps empty collections).
fn drop_if_empty(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<(), CmdError> {
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    if table
        .peek(key, now)
        .is_some_and(|e| zset::len(&e.value) == 0)
    {
        table.remove(key, now);
    }
    Ok(())
}

fn member_frame(m: Vec<u8>) -> Frame {
    Frame::Bulk(Bytes::from(m))
}

/// Members, with their scores if asked: a flat list in RESP2, pairs in RESP3.
pub(crate) fn pairs_reply(resp3: bool, pairs: Pairs, withscores: bool) -> Frame {
    if !withscores {
        return Frame::Array(pairs.into_iter().map(|(m, _)| member_frame(m)).collect());
    }
    if resp3 {
        Frame::Array(
            pairs
                .into_iter()
                .map(|(m, s)| Frame::Array(vec![member_frame(m), Frame::Double(s)]))
                .collect(),
        )
    } else {
        flat_pairs(pairs)
    }
}

/// member, score, member, score... whatever the protocol.
fn flat_pairs(pairs: Pairs) -> Frame {
    let mut out = Vec::with_capacity(pairs.len() * 2);
    for (m, s) in pairs {
        out.push(member_frame(m));
        out.push(Frame::Double(s));
    }
    Frame::Array(out)
}

/// Pop up to `count` members from the sorted set at `key`, deleting the key if
/// it empties. `None` when the key is absent; WRONGTYPE for another type. For
/// the blocking pops too.
pub(crate) fn pop_from(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Option<Pairs>, CmdError> {
    let Some(v) = write(ctx, key)? else {
        return Ok(None);
    };
    let popped = zset::pop(v, max, count);
    if !popped.is_empty() {
        ctx.dirty(popped.len() as u64);
        drop_if_empty(ctx, key)?;
    }
    Ok(Some(popped))
}

/// ZMPOP's (and BZMPOP's) arguments after the timeout: `numkeys key... MIN|MAX [COUNT n]`.
pub(crate) struct MpopArgs<'a> {
    pub keys: &'a [Bytes],
    pub max: bool,
    pub count: usize,
}

pub(crate) fn parse_mpop<'a>(args: &mut Args<'a>) -> Result<MpopArgs<'a>, CmdError> {
    let numkeys = crate::args::parse_i64(args.next_arg()?)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| CmdError::err("numkeys should be greater than 0"))?;
    let rest = args.rest();
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys >= rest.len() {
        return Err(CmdError::Syntax);
    }
    let (keys, rest) = rest.split_at(numkeys);
    let mut opts = Args::new(rest, 0);
    let dir = opts.next_arg()?;
    let max = if is(dir, "MAX") {
        true
    } else if is(dir, "MIN") {
        false
    } else {
        return Err(CmdError::Syntax);
    };
    let mut count = None;
    while let Some(opt) = opts.next_opt() {
        if is(opt, "COUNT") && count.is_none() {
            let n = crate::args::parse_i64(opts.next_arg()?)
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| CmdError::err("count should be greater than 0"))?;
            count = Some(usize::try_from(n).unwrap_or(usize::MAX));
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok(MpopArgs {
        keys,
        max,
        count: count.unwrap_or(1),
    })
}

/// ZMPOP's reply: the key and its popped [member, score] pairs (nested in both protocols).
pub(crate) fn mpop_reply(key: &[u8], pairs: Pairs) -> Frame {
    Frame::Array(vec![
        Frame::bulk_from_slice(key),
        Frame::Array(
            pairs
                .into_iter()
                .map(|(m, s)| Frame::Array(vec![member_frame(m), Frame::Double(s)]))
                .collect(),
        ),
    ])
}

fn parse_score(a: &[u8]) -> Result<f64, CmdError> {
    keel_store::num::parse_f64(a).ok_or(CmdError::NotFloat)
}

fn nan_error() -> CmdError {
    CmdError::err("resulting score is not a number (NaN)")
}

// ---------------------------------------------------------------------------
// ZADD, ZSCORE, ZCARD
// ---------------------------------------------------------------------------

pub(crate) const ZADD: CommandSpec = CommandSpec {
    name: "ZADD",
    group: Group::SortedSet,
    arity: -4,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.",
    since: "1.2.0",
    complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
    subcommands: &[],
    run: zadd,
};

fn zadd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let mut flags = AddFlags::default();
    let mut ch = false;
    while let Some(opt) = args.peek() {
        let o = opt.as_ref();
        if is(o, "NX") {
            flags.nx = true;
        } else if is(o, "XX") {
            flags.xx = true;
        } else if is(o, "GT") {
            flags.gt = true;
        } else if is(o, "LT") {
            flags.lt = true;
        } else if is(o, "CH") {
            ch = true;
        } else if is(o, "INCR") {
            flags.incr = true;
        } else {
            break;
        }
        args.next_opt();
    }
    let rest = args.rest();
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    if flags.nx && flags.xx {
        return Err(CmdError::err(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if [flags.gt, flags.lt, flags.nx]
        .iter()
        .filter(|&&f| f)
        .count()
        > 1
    {
        return Err(CmdError::err(
            "GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if flags.incr && rest.len() > 2 {
        return Err(CmdError::err(
            "INCR option supports a single increment-element pair",
        ));
    }
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for pair in rest.chunks_exact(2) {
        pairs.push((parse_score(&pair[0])?, &pair[1]));
    }
    let limits = ctx.limits();
    let now = ctx.now_ms();
    let exists = write(ctx, key)?.is_some();
    if !exists {
        if flags.xx {
            return Ok(if flags.incr {
                Frame::Null
            } else {
                Frame::Integer(0)
            });
        }
        let max_len = pairs.iter().map(|(_, m)| m.len()).max().unwrap_or(0);
        let fresh = zset::create(pairs.len(), max_len, &limits);
        ctx.table(key)?.insert(key, fresh, 0, now);
    }
    let Some(v) = write(ctx, key)? else {
        return Err(CmdError::Internal("ZADD".into()));
    };
    let (mut added, mut changed) = (0i64, 0i64);
    let mut incr_reply = Frame::Null;
    let mut nan = false;
    for (score, member) in pairs {
        match zset::add(v, member, score, flags, &limits) {
            AddOutcome::Added(s) => {
                added += 1;
                incr_reply = Frame::Double(s);
            }
            AddOutcome::Updated(s) => {
                changed += 1;
                incr_reply = Frame::Double(s);
            }
            AddOutcome::Unchanged(s) => incr_reply = Frame::Double(s),
            AddOutcome::Skipped => incr_reply = Frame::Null,
            AddOutcome::NotANumber => {
                nan = true;
                break;
            }
        }
    }
    drop_if_empty(ctx, key)?;
    ctx.dirty((added + changed) as u64);
    if nan {
        return Err(nan_error());
    }
    Ok(if flags.incr {
        incr_reply
    } else if ch {
        Frame::Integer(added + changed)
    } else {
        Frame::Integer(added)
    })
}

pub(crate) const ZSCORE: CommandSpec = CommandSpec {
    name: "ZSCORE",
    group: Group::SortedSet,
    arity: 3,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the score of a member in a sorted set.",
    since: "1.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: zscore,
};

fn zscore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let member = args.next_arg()?;
    let found = read(ctx, key)?.map(|v| zset::score(v, member));
    ctx.hit(found.is_some());
    Ok(found.flatten().map_or(Frame::Null, Frame::Double))
}

pub(crate) const ZCARD: CommandSpec = CommandSpec {
    name: "ZCARD",
    group: Group::SortedSet,
    arity: 2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the number of members in a sorted set.",
    since: "1.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: zcard,
};

fn zcard(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let n = read(ctx, key)?.map(zset::len);
    ctx.hit(n.is_some());
    Ok(Frame::Integer(n.unwrap_or(0) as i64))
}

// ---------------------------------------------------------------------------
// Pops
// ---------------------------------------------------------------------------

pub(crate) const ZPOPMIN: CommandSpec = CommandSpec {
    name: "ZPOPMIN",
    group: Group::SortedSet,
    arity: -2,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
    since: "5.0.0",
    complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
    subcommands: &[],
    run: zpopmin,
};

fn zpopmin(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    zpop(ctx, args, false)
}

pub(crate) const ZPOPMAX: CommandSpec = CommandSpec {
    name: "ZPOPMAX",
    group: Group::SortedSet,
    arity: -2,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
    since: "5.0.0",
    complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
    subcommands: &[],
    run: zpopmax,
};

fn zpopmax(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    zpop(ctx, args, true)
}

fn zpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>, max: bool) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let count = match args.next_opt() {
        None => None,
        Some(a) => {
            let n = keel_store::num::parse_i64(a)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| CmdError::err("value is out of range, must be positive"))?;
            Some(n)
        }
    };
    args.finish()?;
    let popped = pop_from(ctx, key, max, count.unwrap_or(1))?.unwrap_or_default();
    // Redis 7 nests the pairs in RESP3 only when COUNT was given.
    Ok(match count {
        Some(_) => pairs_reply(ctx.resp3(), popped, true),
        None => flat_pairs(popped),
    })
}

pub(crate) const ZMPOP: CommandSpec = CommandSpec {
    name: "ZMPOP",
    group: Group::SortedSet,
    arity: -4,
    flags: Flags::WRITE,
    keys: Keys::NumKeys {
        numkeys: 1,
        extra: 0,
    },
    summary: "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.",
    since: "7.0.0",
    complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
    subcommands: &[],
    run: zmpop,
};

fn zmpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let m = parse_mpop(args)?;
    for key in m.keys {
        if let Some(popped) = pop_from(ctx, key, m.max, m.count)? {
            if !popped.is_empty() {
                return Ok(mpop_reply(key, popped));
            }
        }
    }
    Ok(Frame::NullArray)
}

// ---------------------------------------------------------------------------
// ZRANGE and its older forms
// ---------------------------------------------------------------------------

/// What a ZRANGE-like command selects.
enum RangeBy {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

struct RangeQuery {
    by: RangeBy,
    rev: bool,
    /// LIMIT offset and count (a negative count means no limit).
    limit: Option<(i64, i64)>,
    withscores: bool,
}

/// Which ZRANGE variant parses: the unified one takes BYSCORE/BYLEX/REV.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeForm {
    Unified,
    Rank { rev: bool },
    Score { rev: bool },
    Lex { rev: bool },
}

/// Parse `start stop [options]` as the command form allows; `min`/`max` come
/// in reverse order for the REV forms, as in Redis.
fn parse_range(args: &mut Args<'_>, form: RangeForm) -> Result<RangeQuery, CmdError> {
    let a = args.next_arg()?;
    let b = args.next_arg()?;
    let (mut by_score, mut by_lex, mut rev) = match form {
        RangeForm::Unified => (false, false, false),
        RangeForm::Rank { rev } => (false, false, rev),
        RangeForm::Score { rev } => (true, false, rev),
        RangeForm::Lex { rev } => (false, true, rev),
    };
    let mut withscores = false;
    let mut limit = None;
    while let Some(opt) = args.next_opt() {
        let lex_form = matches!(form, RangeForm::Lex { .. });
        let rank_form = matches!(form, RangeForm::Rank { .. });
        if is(opt, "WITHSCORES") && !lex_form {
            withscores = true;
        } else if is(opt, "LIMIT") && !rank_form {
            let off = args.next_arg().map_err(|_| CmdError::Syntax)?;
            let cnt = args.next_arg().map_err(|_| CmdError::Syntax)?;
            limit = Some((parse_i64(off)?, parse_i64(cnt)?));
        } else if form == RangeForm::Unified && is(opt, "BYSCORE") && !by_lex {
            by_score = true;
        } else if form == RangeForm::Unified && is(opt, "BYLEX") && !by_score {
            by_lex = true;
        } else if form == RangeForm::Unified && is(opt, "REV") {
            rev = true;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    if withscores && by_lex {
        return Err(CmdError::err(
            "syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    if limit.is_some() && !by_score && !by_lex {
        return Err(CmdError::err(
            "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    let (lo, hi) = if rev && (by_score || by_lex) {
        (b, a)
    } else {
        (a, b)
    };
    let by = if by_score {
        RangeBy::Score(
            ScoreRange::parse(lo, hi).ok_or_else(|| CmdError::err("min or max is not a float"))?,
        )
    } else if by_lex {
        RangeBy::Lex(
            LexRange::parse(lo, hi)
                .ok_or_else(|| CmdError::err("min or max not valid string range item"))?,
        )
    } else {
        RangeBy::Rank(parse_i64(a)?, parse_i64(b)?)
    };
    Ok(RangeQuery {
        by,
        rev,
        limit,
        withscores,
    })
}

/// Ascending-rank interval `[start, end)` of a rank range given as Redis
/// indexes (negative from the end), for a set of `len` members.
pub(crate) fn rank_span(start: i64, stop: i64, len: usize, rev: bool) -> (usize, usize) {
    let n = len as i64;
    let mut s = if start < 0 { start + n } else { start };
    let mut e = if stop < 0 { stop + n } else { stop };
    if s < 0 {
        s = 0;
    }
    if s > e || s >= n {
        return (0, 0);
    }
    if e >= n {
        e = n - 1;
    }
    if rev {
        ((n - 1 - e) as usize, (n - s) as usize)
    } else {
        (s as usize, (e + 1) as usize)
    }
}

/// The members a query selects, in reply order.
fn run_query(v: &Value, q: &RangeQuery) -> Pairs {
    let (first, end) = match &q.by {
        RangeBy::Rank(s, e) => rank_span(*s, *e, zset::len(v), q.rev),
        RangeBy::Score(r) => zset::score_span(v, r),
        RangeBy::Lex(r) => zset::lex_span(v, r),
    };
    let (first, end) = match q.limit {
        None => (first, end),
        Some((off, _)) if off < 0 => (0, 0),
        Some((off, cnt)) => {
            let off = usize::try_from(off).unwrap_or(usize::MAX);
            let avail = end - first;
            if off >= avail {
                (0, 0)
            } else {
                let take = if cnt < 0 {
                    avail - off
                } else {
                    usize::try_from(cnt).unwrap_or(usize::MAX).min(avail - off)
                };
                if q.rev {
                    (end - off - take, end - off)
                } else {
                    (first + off, first + off + take)
                }
            }
        }
    };
    zset::range(v, first, end, q.rev)
}

pub(crate) const ZRANGE: CommandSpec = CommandSpec {
    name: "ZRANGE",
    group: Group::SortedSet,
    arity: -4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns members in a sorted set within a range of indexes.",
    since: "1.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    subcommands: &[],
    run: zrange,
};

fn zrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    range_command(ctx, args, RangeForm::Unified)
}

fn range_command(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    form: RangeForm,
) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let q = parse_range(args, form)?;
    let found = read(ctx, key)?.map(|v| run_query(v, &q));
    ctx.hit(found.is_some());
    Ok(pairs_reply(
        ctx.resp3(),
        found.unwrap_or_default(),
        q.withscores,
    ))
}

pub(crate) const ZREVRANGE: CommandSpec = CommandSpec {
    name: "ZREVRANGE",
    group: Group::SortedSet,
    arity: -4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns members in a sorted set within a range of indexes in reverse order.",
    since: "1.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    subcommands: &[],
    run: zrevrange,
};

fn zrevrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    range_command(ctx, args, RangeForm::Rank { rev: true })
}

pub(crate) const ZRANGEBYSCORE: CommandSpec = CommandSpec {
    name: "ZRANGEBYSCORE",
    group: Group::SortedSet,
    arity: -4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns members in a sorted set within a range of scores.",
    since: "1.0.5",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    subcommands: &[],
    run: zrangebyscore,
};

fn zrangebyscore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    range_command(ctx, args, RangeForm::Score { rev: false })
}

pub(crate) const ZREVRANGEBYSCORE: CommandSpec = CommandSpec {
    name: "ZREVRANGEBYSCORE",
    group: Group::SortedSet,
    arity: -4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns members in a sorted set within a range of scores in reverse order.",
    since: "2.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    subcommands: &[],
    run: zrevrangebyscore,
};

fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    range_command(ctx, args, RangeForm::Score { rev: true })
}

pub(crate) const ZRANGEBYLEX: CommandSpec = CommandSpec {
    name: "ZRANGEBYLEX",
    group: Group::SortedSet,
    arity: -4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns members in a sorted set within a lexicographical range.",
    since: "2.8.9",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    subcommands: &[],
    run: zrangebylex,
};

fn zrangebylex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    range_command(ctx, args, RangeForm::Lex { rev: false })
}

pub(crate) const ZREVRANGEBYLEX: CommandSpec = CommandSpec {
    name: "ZREVRANGEBYLEX",
    group: Group::SortedSet,
    arity: -4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns members in a sorted set within a lexicographical range in reverse order.",
    since: "2.8.9",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
    subcommands: &[],
    run: zrevrangebylex,
};

fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    range_command(ctx, args, RangeForm::Lex { rev: true })
}

#[cfg(test)]
mod tests {
    use crate::testing::*;
    use keel_resp::Frame;

    fn arr(items: &[&str]) -> Frame {
        Frame::Array(items.iter().map(|s| bulk(s)).collect())
    }

    fn d(v: f64) -> Frame {
        Frame::Double(v)
    }

    #[test]
    fn zadd_and_read_back() {
        let mut t = TestEngine::new();
        assert_eq!(
            t.run(&["ZADD", "z", "1", "a", "2", "b", "0.5", "c"]),
            int(3)
        );
        assert_eq!(t.run(&["ZADD", "z", "CH", "3", "a", "2", "b"]), int(1));
        assert_eq!(t.run(&["ZCARD", "z"]), int(3));
        assert_eq!(t.run(&["ZSCORE", "z", "a"]), d(3.0));
        assert_eq!(t.run(&["ZSCORE", "z", "x"]), Frame::Null);
        assert_eq!(t.run(&["ZRANGE", "z", "0", "-1"]), arr(&["c", "b", "a"]));
        assert_eq!(t.run(&["ZADD", "z", "INCR", "1", "a"]), d(4.0));
        assert_eq!(t.run(&["ZADD", "z", "NX", "INCR", "1", "a"]), Frame::Null);
        assert_eq!(
            t.run(&["ZADD", "z", "XX", "NX", "1", "a"]),
            error("ERR XX and NX options at the same time are not compatible")
        );
        assert_eq!(
            t.run(&["ZADD", "z", "1", "a", "2"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["ZADD", "z", "nan", "a"]),
            error("ERR value is not a valid float")
        );
        t.run(&["ZADD", "inf", "+inf", "x"]);
        assert_eq!(
            t.run(&["ZADD", "inf", "INCR", "-inf", "x"]),
            error("ERR resulting score is not a number (NaN)")
        );
        assert_eq!(t.run(&["ZADD", "nx", "XX", "1", "a"]), int(0));
        assert_eq!(t.run(&["EXISTS", "nx"]), int(0));
        t.run(&["SET", "s", "v"]);
        assert_eq!(
            t.run(&["ZADD", "s", "1", "a"]),
            error("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
    }

    #[test]
    fn pops_and_deletes_when_empty() {
        let mut t = TestEngine::new();
        t.run(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
        assert_eq!(
            t.run(&["ZPOPMIN", "z"]),
            Frame::Array(vec![bulk("a"), d(1.0)])
        );
        assert_eq!(
            t.run(&["ZPOPMAX", "z", "5"]),
            Frame::Array(vec![bulk("c"), d(3.0), bulk("b"), d(2.0)])
        );
        assert_eq!(t.run(&["EXISTS", "z"]), int(0));
        assert_eq!(
            t.run(&["ZPOPMIN", "z", "-1"]),
            error("ERR value is out of range, must be positive")
        );
        t.run(&["ZADD", "y", "1", "a", "2", "b"]);
        assert_eq!(
            t.run(&["ZMPOP", "2", "z", "y", "MAX", "COUNT", "1"]),
            Frame::Array(vec![
                bulk("y"),
                Frame::Array(vec![Frame::Array(vec![bulk("b"), d(2.0)])])
            ])
        );
        assert_eq!(t.run(&["ZMPOP", "1", "z", "MIN"]), Frame::NullArray);
        assert_eq!(
            t.run(&["ZMPOP", "0", "z", "MIN"]),
            error("ERR numkeys should be greater than 0")
        );
        assert_eq!(
            t.run(&["ZMPOP", "1", "z", "MIN", "COUNT", "0"]),
            error("ERR count should be greater than 0")
        );
        assert_eq!(
            t.run(&["ZMPOP", "2", "z", "MIN"]),
            error("ERR syntax error")
        );
    }

    #[test]
    fn large_sets_convert_and_rank() {
        let mut t = TestEngine::new();
        for i in 0..300 {
            let s = i.to_string();
            let m = format!("m{i:03}");
            t.run(&["ZADD", "z", &s, &m]);
        }
        assert_eq!(t.run(&["OBJECT", "ENCODING", "z"]), bulk("skiplist"));
        assert_eq!(t.run(&["ZRANGE", "z", "10", "11"]), arr(&["m010", "m011"]));
        assert_eq!(
            t.run(&["ZRANGE", "z", "0", "1", "REV"]),
            arr(&["m299", "m298"])
        );
        assert_eq!(
            t.run(&["ZRANGE", "z", "(5", "7", "BYSCORE", "WITHSCORES"]),
            Frame::Array(vec![bulk("m006"), d(6.0), bulk("m007"), d(7.0)])
        );
        assert_eq!(
            t.run(&["ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "1", "2"]),
            arr(&["m298", "m297"])
        );
    }
}
