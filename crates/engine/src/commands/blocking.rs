//! The blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
//! BZPOPMAX and BZMPOP.
//!
//! Each parses its arguments, then hands its non-blocking form to
//! `Ctx::block_or_run` (see `crate::blocking`), which runs it at once when
//! there is data, blocks the client otherwise, and re-runs the whole command
//! for the client when a write fills one of its keys. A pop that happens is
//! logged as the non-blocking command it amounts to (BLPOP as LPOP, BLMOVE as
//! LMOVE, BZPOPMIN as ZPOPMIN), as Redis propagates it.

use crate::args::Args;
use crate::blocking::parse_timeout;
use crate::commands::lists::{move_element, mpop, mpop_reply, parse_mpop, pop_from};
use crate::ctx::Ctx;
use crate::error::CmdError;
use crate::spec::{CommandSpec, Flags, Group, Keys};
use bytes::Bytes;
use keel_resp::Frame;
use keel_store::list::End;

pub(crate) static COMMANDS: &[&CommandSpec] = &[&BLPOP, &BRPOP, &BLMOVE, &BRPOPLPUSH, &BLMPOP];

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
    ctx.block_or_run(argv, std::slice::from_ref(src), timeout, Frame::Null, |ctx| {
        let Some(elem) = move_element(ctx, src, dst, from, to)? else {
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
    })
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
