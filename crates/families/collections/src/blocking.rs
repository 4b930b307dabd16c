//! The blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
//! BZPOPMAX and BZMPOP.
//!
//! Each parses its arguments, then hands its non-blocking form to
//! `Ctx::block_or_run` (see `keel_engine::blocking`), which runs it at once when
//! there is data, blocks the client otherwise, and re-runs the whole command
//! for the client when a write fills one of its keys. A pop that happens is
//! logged as the non-blocking command it amounts to (BLPOP as LPOP, BLMOVE as
//! LMOVE, BZPOPMIN as ZPOPMIN), as Redis propagates it.

use crate::lists::{list_mut, move_element, mpop, mpop_reply, parse_mpop, pop_from};
use crate::zsets;
use bytes::Bytes;
use keel_engine::args::Args;
use keel_engine::blocking::parse_timeout;
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::list::End;

pub static COMMANDS: &[&CommandSpec] = &[
    &BLPOP,
    &BRPOP,
    &BLMOVE,
    &BRPOPLPUSH,
    &BLMPOP,
    &BZPOPMIN,
    &BZPOPMAX,
    &BZMPOP,
];

fn end_word(end: End) -> Bytes {
    Bytes::from_static(match end {
        End::Left => b"LEFT",
        End::Right => b"RIGHT",
    })
}

pub(crate) const BLPOP: CommandSpec = CommandSpec {
    name: "BLPOP",
    group: Group::List,
    arity: -3,
    flags: Flags::WRITE.union(Flags::NOSCRIPT).union(Flags::BLOCKING),
    keys: Keys::range(1, -2, 1),
    summary: "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
    since: "2.0.0",
    complexity: "O(N) where N is the number of provided keys.",
    subcommands: &[],
    run: blpop,
};

fn blpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    blocking_pop(ctx, args, End::Left)
}

/// BLPOP/BRPOP: `[key, element]` from the first key holding a list, checked
/// in the order given.
fn blocking_pop(ctx: &mut Ctx<'_>, args: &mut Args<'_>, end: End) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let (timeout_arg, keys) = argv[1..].split_last().ok_or(CmdError::Syntax)?;
    let timeout = parse_timeout(timeout_arg)?;
    ctx.block_or_run(argv, keys, timeout, Frame::NullArray, |ctx| {
        for key in keys {
            let Some(mut popped) = pop_from(ctx, key, end, 1)? else {
                continue;
            };
            let Some(elem) = popped.pop() else {
                continue;
            };
            let name: &'static [u8] = match end {
                End::Left => b"LPOP",
                End::Right => b"RPOP",
            };
            ctx.rewrite(vec![Bytes::from_static(name), key.clone()]);
            let db = ctx.db();
            ctx.modified(db, key);
            return Ok(Some(Frame::Array(vec![
                Frame::Bulk(key.clone()),
                Frame::Bulk(Bytes::from(elem)),
            ])));
        }
        Ok(None)
    })
}

pub(crate) const BRPOP: CommandSpec = CommandSpec {
    name: "BRPOP",
    group: Group::List,
    arity: -3,
    flags: Flags::WRITE.union(Flags::NOSCRIPT).union(Flags::BLOCKING),
    keys: Keys::range(1, -2, 1),
    summary: "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
    since: "2.0.0",
    complexity: "O(N) where N is the number of provided keys.",
    subcommands: &[],
    run: brpop,
};

fn brpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    blocking_pop(ctx, args, End::Right)
}

pub(crate) const BLMOVE: CommandSpec = CommandSpec {
    name: "BLMOVE",
    group: Group::List,
    arity: 6,
    flags: Flags::WRITE
        .union(Flags::DENYOOM)
        .union(Flags::NOSCRIPT)
        .union(Flags::BLOCKING),
    keys: Keys::range(1, 2, 1),
    summary: "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.",
    since: "6.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: blmove,
};

fn blmove(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let src = args.next_key()?;
    let dst = args.next_key()?;
    let from = End::parse(args.next_arg()?).ok_or(CmdError::Syntax)?;
    let to = End::parse(args.next_arg()?).ok_or(CmdError::Syntax)?;
    let timeout = parse_timeout(args.next_arg()?)?;
    blocking_move(ctx, args.argv(), src, dst, from, to, timeout)
}

/// BLMOVE/BRPOPLPUSH: the moved element, logged as LMOVE.
fn blocking_move(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    src: &Bytes,
    dst: &Bytes,
    from: End,
    to: End,
    timeout: Option<std::time::Duration>,
) -> Result<Frame, CmdError> {
    ctx.block_or_run(
        argv,
        std::slice::from_ref(src),
        timeout,
        Frame::Null,
        |ctx| {
            let elem = match move_element(ctx, src, dst, from, to) {
                // Only the source decides whether the client waits (one of
                // another type keeps it waiting); once the source is a list, a
                // destination of another type is this client's answer and
                // nothing moves, as in Redis.
                Err(CmdError::WrongType) if list_mut(ctx, src).is_ok() => {
                    return Err(CmdError::msg(CmdError::WrongType.to_string()));
                }
                other => other?,
            };
            let Some(elem) = elem else {
                return Ok(None);
            };
            ctx.rewrite(vec![
                Bytes::from_static(b"LMOVE"),
                src.clone(),
                dst.clone(),
                end_word(from),
                end_word(to),
            ]);
            Ok(Some(Frame::Bulk(Bytes::from(elem))))
        },
    )
}

pub(crate) const BRPOPLPUSH: CommandSpec = CommandSpec {
    name: "BRPOPLPUSH",
    group: Group::List,
    arity: 4,
    flags: Flags::WRITE
        .union(Flags::DENYOOM)
        .union(Flags::NOSCRIPT)
        .union(Flags::BLOCKING),
    keys: Keys::range(1, 2, 1),
    summary: "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.",
    since: "2.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: brpoplpush,
};

fn brpoplpush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let src = args.next_key()?;
    let dst = args.next_key()?;
    let timeout = parse_timeout(args.next_arg()?)?;
    blocking_move(ctx, args.argv(), src, dst, End::Right, End::Left, timeout)
}

pub(crate) const BLMPOP: CommandSpec = CommandSpec {
    name: "BLMPOP",
    group: Group::List,
    arity: -5,
    flags: Flags::WRITE.union(Flags::BLOCKING),
    keys: Keys::NumKeys {
        numkeys: 2,
        extra: 0,
    },
    summary: "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
    since: "7.0.0",
    complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
    subcommands: &[],
    run: blmpop,
};

fn blmpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    // Redis checks the pop arguments before the timeout.
    let timeout_arg = args.next_arg()?;
    let m = parse_mpop(args)?;
    let timeout = parse_timeout(timeout_arg)?;
    let argv = args.argv();
    ctx.block_or_run(argv, m.keys, timeout, Frame::NullArray, |ctx| {
        let Some((key, popped)) = mpop(ctx, &m)? else {
            return Ok(None);
        };
        let name: &'static [u8] = match m.end {
            End::Left => b"LPOP",
            End::Right => b"RPOP",
        };
        ctx.rewrite(vec![
            Bytes::from_static(name),
            key.clone(),
            Bytes::from(popped.len().to_string()),
        ]);
        let db = ctx.db();
        ctx.modified(db, &key);
        Ok(Some(mpop_reply(key, popped)))
    })
}

/// The name of the non-blocking sorted-set pop a blocking one is logged as.
fn zpop_name(max: bool) -> Bytes {
    Bytes::from_static(if max { b"ZPOPMAX" } else { b"ZPOPMIN" })
}

pub(crate) const BZPOPMIN: CommandSpec = CommandSpec {
    name: "BZPOPMIN",
    group: Group::SortedSet,
    arity: -3,
    flags: Flags::WRITE
        .union(Flags::NOSCRIPT)
        .union(Flags::BLOCKING)
        .union(Flags::FAST),
    keys: Keys::range(1, -2, 1),
    summary: "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
    since: "5.0.0",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    subcommands: &[],
    run: bzpopmin,
};

fn bzpopmin(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    blocking_zpop(ctx, args, false)
}

/// BZPOPMIN/BZPOPMAX: `[key, member, score]` from the first key holding a
/// sorted set, checked in the order given.
fn blocking_zpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>, max: bool) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let (timeout_arg, keys) = argv[1..].split_last().ok_or(CmdError::Syntax)?;
    let timeout = parse_timeout(timeout_arg)?;
    ctx.block_or_run(argv, keys, timeout, Frame::NullArray, |ctx| {
        for key in keys {
            let Some(popped) = zsets::pop_from(ctx, key, max, 1)? else {
                continue;
            };
            let Some((member, score)) = popped.into_iter().next() else {
                continue;
            };
            ctx.rewrite(vec![zpop_name(max), key.clone()]);
            let db = ctx.db();
            ctx.modified(db, key);
            return Ok(Some(Frame::Array(vec![
                Frame::Bulk(key.clone()),
                Frame::Bulk(Bytes::from(member)),
                Frame::Double(score),
            ])));
        }
        Ok(None)
    })
}

pub(crate) const BZPOPMAX: CommandSpec = CommandSpec {
    name: "BZPOPMAX",
    group: Group::SortedSet,
    arity: -3,
    flags: Flags::WRITE
        .union(Flags::NOSCRIPT)
        .union(Flags::BLOCKING)
        .union(Flags::FAST),
    keys: Keys::range(1, -2, 1),
    summary: "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise. Deletes the sorted set if the last element was popped.",
    since: "5.0.0",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    subcommands: &[],
    run: bzpopmax,
};

fn bzpopmax(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    blocking_zpop(ctx, args, true)
}

pub(crate) const BZMPOP: CommandSpec = CommandSpec {
    name: "BZMPOP",
    group: Group::SortedSet,
    arity: -5,
    flags: Flags::WRITE.union(Flags::BLOCKING),
    keys: Keys::NumKeys {
        numkeys: 2,
        extra: 0,
    },
    summary: "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
    since: "7.0.0",
    complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
    subcommands: &[],
    run: bzmpop,
};

fn bzmpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    // Redis checks the pop arguments before the timeout.
    let timeout_arg = args.next_arg()?;
    let m = zsets::parse_mpop(args)?;
    let timeout = parse_timeout(timeout_arg)?;
    let argv = args.argv();
    ctx.block_or_run(argv, m.keys, timeout, Frame::NullArray, |ctx| {
        for key in m.keys {
            let Some(popped) = zsets::pop_from(ctx, key, m.max, m.count)? else {
                continue;
            };
            if popped.is_empty() {
                continue;
            }
            ctx.rewrite(vec![
                zpop_name(m.max),
                key.clone(),
                Bytes::from(popped.len().to_string()),
            ]);
            let db = ctx.db();
            ctx.modified(db, key);
            return Ok(Some(zsets::mpop_reply(key, popped)));
        }
        Ok(None)
    })
}
