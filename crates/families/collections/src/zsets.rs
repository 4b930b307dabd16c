//! Sorted sets: ZADD, ZRANGE and the rest of the sorted-set commands. The
//! store's `zset` module does the work; this file parses, checks types and
//! shapes replies (RESP2 flat member/score lists, RESP3 [member, double] pairs).

use bytes::Bytes;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::zset::{self, AddFlags, AddOutcome, LexRange, ScoreRange};
use keel_store::{Value, ValueType};

pub static COMMANDS: &[&CommandSpec] = &[
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
    &ZRANGESTORE,
    &ZREM,
    &ZMSCORE,
    &ZINCRBY,
    &ZCOUNT,
    &ZLEXCOUNT,
    &ZRANK,
    &ZREVRANK,
    &ZREMRANGEBYRANK,
    &ZREMRANGEBYSCORE,
    &ZREMRANGEBYLEX,
    &ZUNION,
    &ZINTER,
    &ZDIFF,
    &ZUNIONSTORE,
    &ZINTERSTORE,
    &ZDIFFSTORE,
    &ZINTERCARD,
    &ZRANDMEMBER,
    &ZSCAN,
];

/// Members with their scores, as a command gets them from the store.
pub(crate) type Pairs = Vec<(Vec<u8>, f64)>;

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

/// The sorted set at `key` for reading: `None` when absent, WRONGTYPE for another type.
fn read<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t Value>, CmdError> {
    ctx.read_value(key, ValueType::ZSet)
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

/// Delete `key` if its sorted set has become empty (Redis never keeps empty
/// collections); whether it did. The caller publishes `del` after its own
/// event (see [`notify_del`]).
fn drop_if_empty(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, CmdError> {
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    if table
        .peek(key, now)
        .is_some_and(|e| zset::len(&e.value) == 0)
    {
        table.remove(key, now);
        return Ok(true);
    }
    Ok(false)
}

/// Publish `del` for a key the command emptied.
fn notify_del(ctx: &mut Ctx<'_>, key: &[u8], deleted: bool) {
    if deleted {
        ctx.notify(Class::GENERIC, "del", key);
    }
}

fn member_frame(m: Vec<u8>) -> Frame {
    Frame::Bulk(Bytes::from(m))
}

/// Members, with their scores if asked: a flat list in RESP2, pairs in RESP3.
pub(crate) fn pairs_reply(resp3: bool, pairs: Pairs, withscores: bool) -> Frame {
    if !withscores {
        // Members alone encode alike in both protocols: straight into one buffer.
        let mut out = keel_resp::BulkArray::new();
        for (m, _) in &pairs {
            out.push(m);
        }
        return out.finish();
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
        let db = ctx.db();
        ctx.modified(db, key);
        let deleted = drop_if_empty(ctx, key)?;
        ctx.notify(Class::ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
        notify_del(ctx, key, deleted);
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
    let numkeys = keel_engine::args::parse_i64(args.next_arg()?)
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
            let n = keel_engine::args::parse_i64(opts.next_arg()?)
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
    keel_store::num::parse_f64_in_range(a).ok_or(CmdError::NotFloat)
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

pub fn zadd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
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
    // Only a set just created for this command can be left empty (every
    // pair skipped, or an INCR to NaN): the set in hand says so, without
    // a third lookup of the key.
    if zset::len(v) == 0 {
        ctx.table(key)?.remove(key, now);
    }
    ctx.dirty((added + changed) as u64);
    if added + changed > 0 {
        ctx.notify(Class::ZSET, if flags.incr { "zincr" } else { "zadd" }, key);
    }
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
    ctx.hit_key(key, found.is_some());
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
    ctx.hit_key(key, n.is_some());
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
    ctx.hit_key(key, found.is_some());
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

// ---------------------------------------------------------------------------
// ZRANGESTORE
// ---------------------------------------------------------------------------

/// Replace `dst` with a sorted set of `pairs` (deleting it when there are
/// none); returns how many members it holds. Counts as a change of `dst` only.
pub fn store_result(
    ctx: &mut Ctx<'_>,
    dst: &[u8],
    pairs: &[(Vec<u8>, f64)],
    event: &str,
) -> Result<i64, CmdError> {
    let now = ctx.now_ms();
    let limits = ctx.limits();
    let db = ctx.db();
    let table = ctx.table(dst)?;
    if pairs.is_empty() {
        if table.remove_any(dst).is_some() {
            ctx.dirty(1);
            ctx.modified(db, dst);
            ctx.notify(Class::GENERIC, "del", dst);
        }
        return Ok(0);
    }
    table.insert(dst, zset::from_pairs(pairs, &limits), 0, now);
    ctx.dirty(1);
    ctx.modified(db, dst);
    ctx.notify(Class::ZSET, event, dst);
    Ok(pairs.len() as i64)
}

pub(crate) const ZRANGESTORE: CommandSpec = CommandSpec {
    name: "ZRANGESTORE",
    group: Group::SortedSet,
    arity: -5,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(1, 2, 1),
    summary: "Stores a range of members from sorted set in a key.",
    since: "6.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
    subcommands: &[],
    run: zrangestore,
};

fn zrangestore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let dst = args.next_key()?;
    let src = args.next_key()?;
    let q = parse_range(args, RangeForm::Unified)?;
    if q.withscores {
        return Err(CmdError::Syntax);
    }
    let found = read(ctx, src)?.map(|v| run_query(v, &q));
    ctx.hit_key(src, found.is_some());
    let pairs = found.unwrap_or_default();
    Ok(Frame::Integer(store_result(
        ctx,
        dst,
        &pairs,
        "zrangestore",
    )?))
}

// ---------------------------------------------------------------------------
// ZREM, ZMSCORE, ZINCRBY, ZCOUNT, ZLEXCOUNT, ZRANK, ZREVRANK
// ---------------------------------------------------------------------------

pub(crate) const ZREM: CommandSpec = CommandSpec {
    name: "ZREM",
    group: Group::SortedSet,
    arity: -3,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.",
    since: "1.2.0",
    complexity: "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
    subcommands: &[],
    run: zrem,
};

fn zrem(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let members = args.rest();
    let Some(v) = write(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    let removed = members.iter().filter(|m| zset::remove(v, m)).count();
    if removed > 0 {
        ctx.dirty(removed as u64);
        let deleted = drop_if_empty(ctx, key)?;
        ctx.notify(Class::ZSET, "zrem", key);
        notify_del(ctx, key, deleted);
    }
    Ok(Frame::Integer(removed as i64))
}

pub(crate) const ZMSCORE: CommandSpec = CommandSpec {
    name: "ZMSCORE",
    group: Group::SortedSet,
    arity: -3,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the score of one or more members in a sorted set.",
    since: "6.2.0",
    complexity: "O(N) where N is the number of members being requested.",
    subcommands: &[],
    run: zmscore,
};

fn zmscore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let members = args.rest();
    let v = read(ctx, key)?;
    let found = v.is_some();
    let scores = members
        .iter()
        .map(|m| {
            v.and_then(|v| zset::score(v, m))
                .map_or(Frame::Null, Frame::Double)
        })
        .collect();
    ctx.hit_key(key, found);
    Ok(Frame::Array(scores))
}

pub(crate) const ZINCRBY: CommandSpec = CommandSpec {
    name: "ZINCRBY",
    group: Group::SortedSet,
    arity: 4,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Increments the score of a member in a sorted set.",
    since: "1.2.0",
    complexity: "O(log(N)) where N is the number of elements in the sorted set.",
    subcommands: &[],
    run: zincrby,
};

fn zincrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let by = parse_score(args.next_arg()?)?;
    let member = args.next_arg()?;
    let limits = ctx.limits();
    let now = ctx.now_ms();
    if write(ctx, key)?.is_none() {
        let fresh = zset::create(1, member.len(), &limits);
        ctx.table(key)?.insert(key, fresh, 0, now);
    }
    let Some(v) = write(ctx, key)? else {
        return Err(CmdError::Internal("ZINCRBY".into()));
    };
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    let outcome = zset::add(v, member, by, flags, &limits);
    drop_if_empty(ctx, key)?;
    match outcome {
        AddOutcome::Added(s) | AddOutcome::Updated(s) => {
            ctx.dirty(1);
            ctx.notify(Class::ZSET, "zincr", key);
            Ok(Frame::Double(s))
        }
        AddOutcome::Unchanged(s) => Ok(Frame::Double(s)),
        AddOutcome::NotANumber => Err(nan_error()),
        AddOutcome::Skipped => Ok(Frame::Null),
    }
}

pub(crate) const ZCOUNT: CommandSpec = CommandSpec {
    name: "ZCOUNT",
    group: Group::SortedSet,
    arity: 4,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the count of members in a sorted set that have scores within a range.",
    since: "2.0.0",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    subcommands: &[],
    run: zcount,
};

fn score_range_arg(args: &mut Args<'_>) -> Result<ScoreRange, CmdError> {
    let min = args.next_arg()?;
    let max = args.next_arg()?;
    ScoreRange::parse(min, max).ok_or_else(|| CmdError::err("min or max is not a float"))
}

fn lex_range_arg(args: &mut Args<'_>) -> Result<LexRange, CmdError> {
    let min = args.next_arg()?;
    let max = args.next_arg()?;
    LexRange::parse(min, max).ok_or_else(|| CmdError::err("min or max not valid string range item"))
}

fn zcount(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let range = score_range_arg(args)?;
    let n = read(ctx, key)?.map(|v| {
        let (a, b) = zset::score_span(v, &range);
        b - a
    });
    ctx.hit_key(key, n.is_some());
    Ok(Frame::Integer(n.unwrap_or(0) as i64))
}

pub(crate) const ZLEXCOUNT: CommandSpec = CommandSpec {
    name: "ZLEXCOUNT",
    group: Group::SortedSet,
    arity: 4,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the number of members in a sorted set within a lexicographical range.",
    since: "2.8.9",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    subcommands: &[],
    run: zlexcount,
};

fn zlexcount(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let range = lex_range_arg(args)?;
    let n = read(ctx, key)?.map(|v| {
        let (a, b) = zset::lex_span(v, &range);
        b - a
    });
    ctx.hit_key(key, n.is_some());
    Ok(Frame::Integer(n.unwrap_or(0) as i64))
}

pub(crate) const ZRANK: CommandSpec = CommandSpec {
    name: "ZRANK",
    group: Group::SortedSet,
    arity: -3,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the index of a member in a sorted set ordered by ascending scores.",
    since: "2.0.0",
    complexity: "O(log(N))",
    subcommands: &[],
    run: zrank,
};

fn zrank(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    rank_command(ctx, args, false)
}

pub(crate) const ZREVRANK: CommandSpec = CommandSpec {
    name: "ZREVRANK",
    group: Group::SortedSet,
    arity: -3,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the index of a member in a sorted set ordered by descending scores.",
    since: "2.0.0",
    complexity: "O(log(N))",
    subcommands: &[],
    run: zrevrank,
};

fn zrevrank(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    rank_command(ctx, args, true)
}

/// ZRANK / ZREVRANK with Redis 7.2's optional WITHSCORE.
fn rank_command(ctx: &mut Ctx<'_>, args: &mut Args<'_>, rev: bool) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let member = args.next_arg()?;
    let withscore = match args.next_opt() {
        None => false,
        Some(a) if is(a, "WITHSCORE") => true,
        Some(_) => return Err(CmdError::Syntax),
    };
    args.finish()?;
    let found = read(ctx, key)?.map(|v| {
        let len = zset::len(v);
        zset::rank(v, member).map(|(r, s)| (if rev { len - 1 - r } else { r }, s))
    });
    ctx.hit_key(key, found.is_some());
    Ok(match (found.flatten(), withscore) {
        (None, false) => Frame::Null,
        (None, true) => Frame::NullArray,
        (Some((r, _)), false) => Frame::Integer(r as i64),
        (Some((r, s)), true) => Frame::Array(vec![Frame::Integer(r as i64), Frame::Double(s)]),
    })
}

// ---------------------------------------------------------------------------
// ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX
// ---------------------------------------------------------------------------

fn remove_range(ctx: &mut Ctx<'_>, key: &[u8], by: RangeBy) -> Result<Frame, CmdError> {
    let Some(v) = write(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    let (a, b) = match &by {
        RangeBy::Rank(s, e) => rank_span(*s, *e, zset::len(v), false),
        RangeBy::Score(r) => zset::score_span(v, r),
        RangeBy::Lex(r) => zset::lex_span(v, r),
    };
    let removed = zset::remove_span(v, a, b);
    if removed > 0 {
        ctx.dirty(removed as u64);
        let deleted = drop_if_empty(ctx, key)?;
        let event = match by {
            RangeBy::Rank(..) => "zremrangebyrank",
            RangeBy::Score(_) => "zremrangebyscore",
            RangeBy::Lex(_) => "zremrangebylex",
        };
        ctx.notify(Class::ZSET, event, key);
        notify_del(ctx, key, deleted);
    }
    Ok(Frame::Integer(removed as i64))
}

pub(crate) const ZREMRANGEBYRANK: CommandSpec = CommandSpec {
    name: "ZREMRANGEBYRANK",
    group: Group::SortedSet,
    arity: 4,
    flags: Flags::WRITE,
    keys: Keys::single(1),
    summary: "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.",
    since: "2.0.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
    subcommands: &[],
    run: zremrangebyrank,
};

fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let start = parse_i64(args.next_arg()?)?;
    let stop = parse_i64(args.next_arg()?)?;
    remove_range(ctx, key, RangeBy::Rank(start, stop))
}

pub(crate) const ZREMRANGEBYSCORE: CommandSpec = CommandSpec {
    name: "ZREMRANGEBYSCORE",
    group: Group::SortedSet,
    arity: 4,
    flags: Flags::WRITE,
    keys: Keys::single(1),
    summary: "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.",
    since: "1.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
    subcommands: &[],
    run: zremrangebyscore,
};

fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let range = score_range_arg(args)?;
    remove_range(ctx, key, RangeBy::Score(range))
}

pub(crate) const ZREMRANGEBYLEX: CommandSpec = CommandSpec {
    name: "ZREMRANGEBYLEX",
    group: Group::SortedSet,
    arity: 4,
    flags: Flags::WRITE,
    keys: Keys::single(1),
    summary: "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.",
    since: "2.8.9",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
    subcommands: &[],
    run: zremrangebylex,
};

fn zremrangebylex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let range = lex_range_arg(args)?;
    remove_range(ctx, key, RangeBy::Lex(range))
}

// ---------------------------------------------------------------------------
// ZUNION, ZINTER, ZDIFF and their STORE forms, ZINTERCARD
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

impl SetOp {
    fn name(self, store: bool) -> &'static str {
        match (self, store) {
            (SetOp::Union, false) => "zunion",
            (SetOp::Inter, false) => "zinter",
            (SetOp::Diff, false) => "zdiff",
            (SetOp::Union, true) => "zunionstore",
            (SetOp::Inter, true) => "zinterstore",
            (SetOp::Diff, true) => "zdiffstore",
        }
    }
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, acc: f64, v: f64) -> f64 {
        match self {
            // Redis turns inf + -inf into 0 rather than NaN.
            Aggregate::Sum => {
                let s = acc + v;
                if s.is_nan() {
                    0.0
                } else {
                    s
                }
            }
            Aggregate::Min => acc.min(v),
            Aggregate::Max => acc.max(v),
        }
    }
}

/// Members and scores of a ZUNION-like input: a sorted set, or a set whose
/// members all score 1. Missing keys are empty; other types are WRONGTYPE.
fn read_input(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Pairs>, CmdError> {
    let now = ctx.now_ms();
    if !ctx.table(key)?.contains(key, now) {
        // A missing input counts as a miss, as Redis's read lookup does.
        ctx.hit_key(key, false);
        return Ok(None);
    }
    ctx.hit(true);
    let Some(e) = ctx.table(key)?.get(key, now) else {
        return Ok(None);
    };
    match &e.value {
        v @ (Value::ZSetPacked(_) | Value::ZSet(_)) => Ok(Some(zset::to_vec(v))),
        v @ (Value::SetInts(_) | Value::SetPacked(_) | Value::Set(_)) => Ok(Some(
            v.set_members().into_iter().map(|m| (m, 1.0)).collect(),
        )),
        _ => Err(CmdError::WrongType),
    }
}

/// Parse `numkeys key...` from a ZUNION-like command; the error for a count
/// below 1 names the command.
fn numkeys_and_keys<'a>(args: &mut Args<'a>, name: &str) -> Result<&'a [Bytes], CmdError> {
    let n = parse_i64(args.next_arg()?)?;
    if n < 1 {
        return Err(CmdError::err(format!(
            "at least 1 input key is needed for '{name}' command"
        )));
    }
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    if n > args.remaining() {
        return Err(CmdError::Syntax);
    }
    let all = args.rest();
    let (keys, rest) = all.split_at(n);
    *args = Args::new(rest, 0);
    Ok(keys)
}

struct Combined {
    pairs: Pairs,
    withscores: bool,
}

fn combine(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    op: SetOp,
    store: bool,
) -> Result<Combined, CmdError> {
    let keys = numkeys_and_keys(args, op.name(store))?;
    let mut weights: Option<Vec<f64>> = None;
    let mut aggregate = Aggregate::Sum;
    let mut withscores = false;
    while let Some(opt) = args.next_opt() {
        if op != SetOp::Diff && is(opt, "WEIGHTS") {
            if args.remaining() < keys.len() {
                return Err(CmdError::Syntax);
            }
            let mut w = Vec::with_capacity(keys.len());
            for _ in 0..keys.len() {
                let raw = args.next_arg()?;
                w.push(
                    keel_store::num::parse_f64_in_range(raw)
                        .ok_or_else(|| CmdError::err("weight value is not a float"))?,
                );
            }
            weights = Some(w);
        } else if op != SetOp::Diff && is(opt, "AGGREGATE") {
            let a = args.next_arg()?;
            aggregate = if is(a, "SUM") {
                Aggregate::Sum
            } else if is(a, "MIN") {
                Aggregate::Min
            } else if is(a, "MAX") {
                Aggregate::Max
            } else {
                return Err(CmdError::Syntax);
            };
        } else if !store && is(opt, "WITHSCORES") {
            withscores = true;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    // Every input is type-checked before any work, as in Redis.
    let mut inputs = Vec::with_capacity(keys.len());
    for key in keys {
        inputs.push(read_input(ctx, key)?.unwrap_or_default());
    }
    let weight = |i: usize| {
        weights
            .as_ref()
            .and_then(|w| w.get(i))
            .copied()
            .unwrap_or(1.0)
    };
    let weighted = |w: f64, s: f64| {
        let v = w * s;
        // 0 * inf: Redis scores it 0.
        if v.is_nan() {
            0.0
        } else {
            v
        }
    };
    let mut acc: hashbrown::HashMap<Vec<u8>, f64> = hashbrown::HashMap::new();
    match op {
        SetOp::Union => {
            for (i, input) in inputs.into_iter().enumerate() {
                let w = weight(i);
                for (m, s) in input {
                    let v = weighted(w, s);
                    acc.entry(m)
                        .and_modify(|a| *a = aggregate.apply(*a, v))
                        .or_insert(v);
                }
            }
        }
        SetOp::Inter => {
            let mut iter = inputs.into_iter().enumerate();
            if let Some((_, first)) = iter.next() {
                let w = weight(0);
                acc = first
                    .into_iter()
                    .map(|(m, s)| (m, weighted(w, s)))
                    .collect();
            }
            for (i, input) in iter {
                let w = weight(i);
                let other: hashbrown::HashMap<Vec<u8>, f64> = input.into_iter().collect();
                acc.retain(|m, a| match other.get(m) {
                    Some(&s) => {
                        *a = aggregate.apply(*a, weighted(w, s));
                        true
                    }
                    None => false,
                });
            }
        }
        SetOp::Diff => {
            let mut iter = inputs.into_iter();
            if let Some(first) = iter.next() {
                acc = first.into_iter().collect();
            }
            for input in iter {
                for (m, _) in input {
                    acc.remove(&m);
                }
            }
        }
    }
    let mut pairs: Pairs = acc.into_iter().collect();
    pairs.sort_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    });
    Ok(Combined { pairs, withscores })
}

fn combine_reply(ctx: &mut Ctx<'_>, args: &mut Args<'_>, op: SetOp) -> Result<Frame, CmdError> {
    let c = combine(ctx, args, op, false)?;
    Ok(pairs_reply(ctx.resp3(), c.pairs, c.withscores))
}

fn combine_store(ctx: &mut Ctx<'_>, args: &mut Args<'_>, op: SetOp) -> Result<Frame, CmdError> {
    let dst = args.next_key()?;
    let c = combine(ctx, args, op, true)?;
    let event = match op {
        SetOp::Union => "zunionstore",
        SetOp::Inter => "zinterstore",
        SetOp::Diff => "zdiffstore",
    };
    Ok(Frame::Integer(store_result(ctx, dst, &c.pairs, event)?))
}

const SOURCES: Keys = Keys::NumKeys {
    numkeys: 1,
    extra: 0,
};

const DST_AND_SOURCES: Keys = Keys::NumKeys {
    numkeys: 2,
    extra: 1,
};

pub(crate) const ZUNION: CommandSpec = CommandSpec {
    name: "ZUNION",
    group: Group::SortedSet,
    arity: -3,
    flags: Flags::READONLY,
    keys: SOURCES,
    summary: "Returns the union of multiple sorted sets.",
    since: "6.2.0",
    complexity: "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
    subcommands: &[],
    run: zunion,
};

fn zunion(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    combine_reply(ctx, args, SetOp::Union)
}

pub(crate) const ZINTER: CommandSpec = CommandSpec {
    name: "ZINTER",
    group: Group::SortedSet,
    arity: -3,
    flags: Flags::READONLY,
    keys: SOURCES,
    summary: "Returns the intersect of multiple sorted sets.",
    since: "6.2.0",
    complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
    subcommands: &[],
    run: zinter,
};

fn zinter(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    combine_reply(ctx, args, SetOp::Inter)
}

pub(crate) const ZDIFF: CommandSpec = CommandSpec {
    name: "ZDIFF",
    group: Group::SortedSet,
    arity: -3,
    flags: Flags::READONLY,
    keys: SOURCES,
    summary: "Returns the difference between multiple sorted sets.",
    since: "6.2.0",
    complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
    subcommands: &[],
    run: zdiff,
};

fn zdiff(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    combine_reply(ctx, args, SetOp::Diff)
}

pub(crate) const ZUNIONSTORE: CommandSpec = CommandSpec {
    name: "ZUNIONSTORE",
    group: Group::SortedSet,
    arity: -4,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: DST_AND_SOURCES,
    summary: "Stores the union of multiple sorted sets in a key.",
    since: "2.0.0",
    complexity: "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
    subcommands: &[],
    run: zunionstore,
};

fn zunionstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    combine_store(ctx, args, SetOp::Union)
}

pub(crate) const ZINTERSTORE: CommandSpec = CommandSpec {
    name: "ZINTERSTORE",
    group: Group::SortedSet,
    arity: -4,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: DST_AND_SOURCES,
    summary: "Stores the intersect of multiple sorted sets in a key.",
    since: "2.0.0",
    complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
    subcommands: &[],
    run: zinterstore,
};

fn zinterstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    combine_store(ctx, args, SetOp::Inter)
}

pub(crate) const ZDIFFSTORE: CommandSpec = CommandSpec {
    name: "ZDIFFSTORE",
    group: Group::SortedSet,
    arity: -4,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: DST_AND_SOURCES,
    summary: "Stores the difference of multiple sorted sets in a key.",
    since: "6.2.0",
    complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
    subcommands: &[],
    run: zdiffstore,
};

fn zdiffstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    combine_store(ctx, args, SetOp::Diff)
}

pub(crate) const ZINTERCARD: CommandSpec = CommandSpec {
    name: "ZINTERCARD",
    group: Group::SortedSet,
    arity: -3,
    flags: Flags::READONLY,
    keys: SOURCES,
    summary: "Returns the number of members of the intersect of multiple sorted sets.",
    since: "7.0.0",
    complexity: "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
    subcommands: &[],
    run: zintercard,
};

fn zintercard(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let keys = numkeys_and_keys(args, "zintercard")?;
    let mut limit = 0usize;
    while let Some(opt) = args.next_opt() {
        if is(opt, "LIMIT") {
            limit = keel_store::num::parse_i64(args.next_arg()?)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| CmdError::err("LIMIT can't be negative"))?;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let mut inputs = Vec::with_capacity(keys.len());
    for key in keys {
        inputs.push(read_input(ctx, key)?.unwrap_or_default());
    }
    inputs.sort_by_key(Vec::len);
    let mut iter = inputs.into_iter();
    let Some(smallest) = iter.next() else {
        return Ok(Frame::Integer(0));
    };
    let others: Vec<hashbrown::HashSet<Vec<u8>>> = iter
        .map(|p| p.into_iter().map(|(m, _)| m).collect())
        .collect();
    let mut n = 0usize;
    for (m, _) in smallest {
        if others.iter().all(|o| o.contains(&m)) {
            n += 1;
            if limit > 0 && n >= limit {
                break;
            }
        }
    }
    Ok(Frame::Integer(n as i64))
}

// ---------------------------------------------------------------------------
// ZRANDMEMBER, ZSCAN
// ---------------------------------------------------------------------------

pub(crate) const ZRANDMEMBER: CommandSpec = CommandSpec {
    name: "ZRANDMEMBER",
    group: Group::SortedSet,
    arity: -2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns one or more random members from a sorted set.",
    since: "6.2.0",
    complexity: "O(N) where N is the number of members returned",
    subcommands: &[],
    run: zrandmember,
};

fn zrandmember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    use keel_engine::args::{check_random_pairs, parse_random_count, put_bulk, random_repeats};
    let key = args.next_key()?;
    let count = match args.next_opt() {
        None => None,
        Some(a) => Some(parse_random_count(a)?),
    };
    let withscores = count.is_some() && args.eat("WITHSCORES");
    args.finish()?;
    if let (Some(c), true) = (count, withscores) {
        check_random_pairs(c)?;
    }
    let engine = ctx.engine;
    let proto = ctx.proto();
    let Some(v) = read(ctx, key)? else {
        ctx.hit_key(key, false);
        return Ok(if count.is_some() {
            Frame::Array(Vec::new())
        } else {
            Frame::Null
        });
    };
    let n = zset::len(v);
    let pick = |bound: usize| (engine.rng.next_u64() % bound.max(1) as u64) as usize;
    let picked: Pairs = match count {
        None => zset::pick(v, pick(n)).into_iter().collect(),
        Some(c) if c < 0 => {
            // Negative: that many picks, repeats allowed, encoded as drawn.
            let resp3 = proto == keel_resp::Protocol::Resp3;
            let per_pick = if withscores && !resp3 { 2 } else { 1 };
            let limit = u64::try_from(engine.config.proto_max_bulk_len()).unwrap_or(0);
            let encode = |buf: &mut bytes::BytesMut, m: &[u8], s: f64| {
                if withscores && resp3 {
                    buf.extend_from_slice(b"*2\r\n");
                }
                put_bulk(buf, m);
                if withscores {
                    keel_resp::encode(&Frame::Double(s), proto, buf);
                }
            };
            // A compact set is encoded once rather than walked per pick.
            let encoded: Option<Vec<bytes::BytesMut>> =
                matches!(v, keel_store::Value::ZSetPacked(_)).then(|| {
                    zset::to_vec(v)
                        .into_iter()
                        .map(|(m, s)| {
                            let mut one = bytes::BytesMut::new();
                            encode(&mut one, &m, s);
                            one
                        })
                        .collect()
                });
            let reply = random_repeats(c.unsigned_abs(), per_pick, limit, |buf| {
                let i = pick(n);
                match &encoded {
                    Some(all) => {
                        if let Some(one) = all.get(i) {
                            buf.extend_from_slice(one);
                        }
                    }
                    None => {
                        if let Some((m, s)) = zset::pick(v, i) {
                            encode(buf, &m, s);
                        }
                    }
                }
            });
            ctx.hit(true);
            return reply;
        }
        Some(c) => {
            let c = usize::try_from(c).unwrap_or(usize::MAX);
            if c >= n {
                zset::to_vec(v)
            } else if c * 3 > n {
                // Many of them: a partial shuffle of every position.
                let mut idx: Vec<usize> = (0..n).collect();
                for i in 0..c {
                    let j = i + pick(n - i);
                    idx.swap(i, j);
                }
                idx[..c].iter().filter_map(|&i| zset::pick(v, i)).collect()
            } else {
                let mut seen = hashbrown::HashSet::with_capacity(c);
                let mut out = Vec::with_capacity(c);
                while out.len() < c {
                    let i = pick(n);
                    if seen.insert(i) {
                        out.extend(zset::pick(v, i));
                    }
                }
                out
            }
        }
    };
    ctx.hit(true);
    Ok(match count {
        None => picked
            .into_iter()
            .next()
            .map_or(Frame::Null, |(m, _)| member_frame(m)),
        Some(_) => pairs_reply(ctx.resp3(), picked, withscores),
    })
}

pub(crate) const ZSCAN: CommandSpec = CommandSpec {
    name: "ZSCAN",
    group: Group::SortedSet,
    arity: -3,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Iterates over members and scores of a sorted set.",
    since: "2.8.0",
    complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
    subcommands: &[],
    run: zscan,
};

fn zscan(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let cursor = keel_engine::scan::parse_cursor(args.next_arg()?)?;
    // Like Redis, a missing key answers an empty scan before the options
    // are read.
    let exists = read(ctx, key)?.is_some();
    ctx.hit_key(key, exists);
    if !exists {
        return Ok(keel_engine::scan::scan_reply(0, Vec::new()));
    }
    let (count, pattern) = keel_engine::scan::parse_scan_options(args)?;
    let mut found = Vec::new();
    let next = read(ctx, key)?.map_or(0, |v| zset::scan(v, cursor, count, &mut found));
    let mut items = Vec::with_capacity(found.len() * 2);
    for (m, s) in found {
        if pattern.is_some_and(|p| !keel_store::glob::glob_match(p, &m, false)) {
            continue;
        }
        items.push(member_frame(m));
        // ZSCAN sends scores as strings in both protocols.
        items.push(Frame::Bulk(Bytes::from(keel_resp::encode_double(s))));
    }
    Ok(keel_engine::scan::scan_reply(next, items))
}
