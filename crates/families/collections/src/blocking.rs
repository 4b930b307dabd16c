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

#[cfg(test)]
mod tests {
    use crate::testing::*;
    use bytes::Bytes;
    use keel_resp::Frame;
    use std::sync::Arc;

    fn arr(items: &[&str]) -> Frame {
        Frame::Array(items.iter().map(|s| bulk(s)).collect())
    }

    #[test]
    fn pops_are_logged_as_their_non_blocking_form() {
        let sink = Arc::new(crate::testing::Recorder::default());
        let engine = keel_engine::engine::EngineBuilder {
            commands: keel_server::families::table(),
            families: Box::new(keel_server::families::AllFamilies),
            sink: Some(sink.clone()),
            ..Default::default()
        }
        .build();
        let mut a = engine.connect("127.0.0.1:1".into(), "127.0.0.1:6379".into());
        let mut b = engine.connect("127.0.0.1:2".into(), "127.0.0.1:6379".into());
        let run = |s: &mut keel_engine::session::Session, argv: &[&str]| {
            let argv = argv.iter().map(|x| Bytes::copy_from_slice(x.as_bytes()));
            engine.execute(s, argv.collect())
        };
        run(&mut b, &["RPUSH", "l", "x", "y"]);
        assert_eq!(run(&mut a, &["BLPOP", "none", "l", "0"]), arr(&["l", "x"]));
        run(&mut a, &["BLMOVE", "l", "d", "LEFT", "RIGHT", "0"]);
        run(&mut a, &["SELECT", "1"]);
        run(&mut a, &["BZPOPMAX", "z", "0"]);
        assert!(a.blocked.is_some());
        run(&mut b, &["SELECT", "1"]);
        run(&mut b, &["ZADD", "z", "1", "m", "2", "n"]);
        assert_eq!(
            engine.block_reply(&mut a),
            Some(Frame::Array(vec![bulk("z"), bulk("n"), Frame::Double(2.0)]))
        );
        run(&mut b, &["BZMPOP", "0", "1", "z", "MIN", "COUNT", "3"]);
        let log = sink.entries();
        let expect: Vec<(usize, Vec<&str>)> = vec![
            (0, vec!["RPUSH", "l", "x", "y"]),
            (0, vec!["LPOP", "l"]),
            (0, vec!["LMOVE", "l", "d", "LEFT", "RIGHT"]),
            (1, vec!["ZADD", "z", "1", "m", "2", "n"]),
            (1, vec!["ZPOPMAX", "z"]),
            (1, vec!["ZPOPMIN", "z", "1"]),
        ];
        let expect: Vec<(usize, Vec<String>)> = expect
            .into_iter()
            .map(|(db, v)| (db, v.into_iter().map(String::from).collect()))
            .collect();
        assert_eq!(log, expect);
    }

    #[test]
    fn a_served_pop_invalidates_watchers_of_the_popped_key_only() {
        let mut t = TestEngine::new();
        let mut watcher = t.other_session();
        let mut pusher = t.other_session();
        t.run(&["BLPOP", "a", "b", "0"]);
        t.run_as(&mut watcher, &["WATCH", "a"]);
        // Pushing to b serves the client; a is not touched.
        t.run_as(&mut pusher, &["RPUSH", "b", "v"]);
        assert_eq!(t.engine.block_reply(&mut t.session), Some(arr(&["b", "v"])));
        t.run_as(&mut watcher, &["MULTI"]);
        t.run_as(&mut watcher, &["LLEN", "a"]);
        assert_eq!(
            t.run_as(&mut watcher, &["EXEC"]),
            Frame::Array(vec![int(0)])
        );
        t.run(&["BLPOP", "a", "0"]);
        t.run_as(&mut watcher, &["WATCH", "a"]);
        t.run_as(&mut pusher, &["RPUSH", "a", "v"]);
        assert_eq!(t.engine.block_reply(&mut t.session), Some(arr(&["a", "v"])));
        t.run_as(&mut watcher, &["MULTI"]);
        t.run_as(&mut watcher, &["LLEN", "a"]);
        assert_eq!(t.run_as(&mut watcher, &["EXEC"]), Frame::NullArray);
    }

    #[test]
    fn blmove_chain_serves_the_destination_waiter() {
        let mut t = TestEngine::new();
        let mut mover = t.other_session();
        let mut pusher = t.other_session();
        t.run(&["BRPOP", "dst", "0"]);
        t.run_as(&mut mover, &["BRPOPLPUSH", "src", "dst", "0"]);
        assert_eq!(t.engine.blocking.blocked_clients(), 2);
        assert_eq!(t.run_as(&mut pusher, &["LPUSH", "src", "e"]), int(1));
        assert_eq!(t.engine.block_reply(&mut mover), Some(bulk("e")));
        assert_eq!(
            t.engine.block_reply(&mut t.session),
            Some(arr(&["dst", "e"]))
        );
        assert_eq!(t.run(&["EXISTS", "src", "dst"]), int(0));
        assert_eq!(t.engine.blocking.blocked_clients(), 0);
    }

    #[test]
    fn a_waiter_of_another_type_stays_and_does_not_hold_up_the_queue() {
        let mut t = TestEngine::new();
        let mut zwaiter = t.other_session();
        let mut pusher = t.other_session();
        t.run_as(&mut zwaiter, &["BZPOPMIN", "k", "0"]);
        t.run(&["BLPOP", "k", "0"]);
        t.run_as(&mut pusher, &["RPUSH", "k", "v"]);
        assert_eq!(t.engine.block_reply(&mut t.session), Some(arr(&["k", "v"])));
        assert_eq!(t.engine.block_reply(&mut zwaiter), None);
        t.run_as(&mut pusher, &["ZADD", "k", "3", "m"]);
        assert_eq!(
            t.engine.block_reply(&mut zwaiter),
            Some(Frame::Array(vec![bulk("k"), bulk("m"), Frame::Double(3.0)]))
        );
    }

    #[test]
    fn count_pops_serve_waiters_in_turn() {
        let mut t = TestEngine::new();
        let mut second = t.other_session();
        let mut pusher = t.other_session();
        t.run(&["BLMPOP", "0", "1", "k", "LEFT", "COUNT", "2"]);
        t.run_as(
            &mut second,
            &["BLMPOP", "0", "1", "k", "RIGHT", "COUNT", "5"],
        );
        t.run_as(&mut pusher, &["RPUSH", "k", "a", "b", "c", "d"]);
        let first = Frame::Array(vec![bulk("k"), arr(&["a", "b"])]);
        let rest = Frame::Array(vec![bulk("k"), arr(&["d", "c"])]);
        assert_eq!(t.engine.block_reply(&mut t.session), Some(first));
        assert_eq!(t.engine.block_reply(&mut second), Some(rest));
    }

    #[test]
    fn in_multi_the_blocking_forms_answer_their_nil_at_once() {
        let mut t = TestEngine::new();
        t.run(&["MULTI"]);
        t.run(&["BLMOVE", "a", "b", "LEFT", "LEFT", "0"]);
        t.run(&["BZMPOP", "0", "1", "z", "MIN"]);
        assert_eq!(
            t.run(&["EXEC"]),
            Frame::Array(vec![Frame::Null, Frame::NullArray])
        );
        assert!(t.session.blocked.is_none());
        assert_eq!(t.engine.blocking.blocked_clients(), 0);
    }

    /// A write to a BLMOVE's source reaches the waiters on its destination
    /// too: their shards are locked with the writer's, and forgotten once
    /// nobody waits.
    #[test]
    fn a_write_reaches_the_shards_of_waiters_behind_a_move() {
        let mut t = TestEngine::new();
        let ks = &t.engine.keyspace;
        let mut names = Vec::new();
        let mut shards = Vec::new();
        for i in 0.. {
            let k = format!("k{i}");
            let s = ks.shard_of(k.as_bytes());
            if !shards.contains(&s) {
                shards.push(s);
                names.push(k);
            }
            if names.len() == 3 {
                break;
            }
        }
        let (src, dst, other) = (&names[0], &names[1], &names[2]);
        let mut mover = t.other_session();
        let mut popper = t.other_session();
        t.run_as(&mut mover, &["BLMOVE", src, dst, "LEFT", "LEFT", "0"]);
        t.run_as(&mut popper, &["BLPOP", other, dst, "0"]);
        let reach = |t: &TestEngine, key: &str| {
            let mut out = Vec::new();
            t.engine.blocking.reachable_shards(
                std::iter::once(key.as_bytes()),
                t.engine.databases(),
                &mut out,
            );
            out.sort_unstable();
            out.dedup();
            out
        };
        let mut all = shards.clone();
        all.sort_unstable();
        assert_eq!(reach(&t, src), all);
        assert_eq!(reach(&t, "unrelated"), Vec::<usize>::new());
        t.run(&["RPUSH", src, "e"]);
        assert_eq!(t.engine.block_reply(&mut mover), Some(bulk("e")));
        assert_eq!(
            t.engine.block_reply(&mut popper),
            Some(arr(&[dst.as_str(), "e"]))
        );
        assert_eq!(reach(&t, src), Vec::<usize>::new());
        assert_eq!(reach(&t, dst), Vec::<usize>::new());
    }

    /// The race a blocked client must never lose. Clients wait on six keys
    /// (BLPOP, BLMOVE to a destination elsewhere, BZPOPMIN); one thread fills
    /// all six in one transaction while another keeps taking from them, by
    /// plain pops (LPOP, ZPOPMIN) or by new blocking pops that give up at
    /// once. The waiters came first: each must get its element, and the other
    /// thread nothing.
    #[test]
    fn stress_waiters_win_over_other_threads() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Barrier;
        use std::time::{Duration, Instant};
        let t = TestEngine::new();
        let engine = &t.engine;
        let argv = |words: &[&str]| -> Vec<Bytes> {
            words
                .iter()
                .map(|w| Bytes::copy_from_slice(w.as_bytes()))
                .collect()
        };
        let keys: Vec<String> = (0..6).map(|i| format!("q{i}")).collect();
        // (wait, fill, take, take by a newcomer that gives up at once)
        let ops: Vec<[Vec<Bytes>; 4]> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| match i % 3 {
                0 => [
                    argv(&["BLPOP", k, "0"]),
                    argv(&["LPUSH", k, "x"]),
                    argv(&["LPOP", k]),
                    argv(&["BLPOP", k, "0"]),
                ],
                1 => [
                    argv(&["BLMOVE", k, &format!("dst{i}"), "LEFT", "RIGHT", "0"]),
                    argv(&["LPUSH", k, "x"]),
                    argv(&["RPOP", k]),
                    argv(&["BRPOP", k, "0"]),
                ],
                _ => [
                    argv(&["BZPOPMIN", k, "0"]),
                    argv(&["ZADD", k, "1", "m"]),
                    argv(&["ZPOPMIN", k]),
                    argv(&["BZPOPMAX", k, "0"]),
                ],
            })
            .collect();
        let mut waiters: Vec<_> = keys.iter().map(|_| t.other_session()).collect();
        let mut filler = t.other_session();
        let mut taker = t.other_session();
        let (mut rounds, mut taken, mut unserved) = (0u32, 0u32, 0u32);
        let deadline = Instant::now() + Duration::from_secs(2);
        while rounds < 2000 && Instant::now() < deadline {
            rounds += 1;
            for (w, op) in waiters.iter_mut().zip(&ops) {
                engine.execute(w, op[0].clone());
                assert!(w.blocked.is_some());
            }
            let start = Barrier::new(2);
            let filled = AtomicBool::new(false);
            let newcomers = rounds % 2 == 0;
            let (start, filled, ops) = (&start, &filled, &ops);
            let got = std::thread::scope(|s| {
                let filler = &mut filler;
                s.spawn(move || {
                    start.wait();
                    engine.execute(filler, argv(&["MULTI"]));
                    for op in ops {
                        engine.execute(filler, op[1].clone());
                    }
                    engine.execute(filler, argv(&["EXEC"]));
                    filled.store(true, Ordering::SeqCst);
                });
                let taker = &mut taker;
                s.spawn(move || {
                    start.wait();
                    let mut got = 0;
                    loop {
                        let done = filled.load(Ordering::SeqCst);
                        for op in ops.iter().rev() {
                            let reply = if newcomers {
                                let r = engine.execute(taker, op[3].clone());
                                if taker.blocked.is_some() {
                                    engine.cancel_block(taker);
                                }
                                engine.block_reply(taker).unwrap_or(r)
                            } else {
                                engine.execute(taker, op[2].clone())
                            };
                            let none = match &reply {
                                Frame::Null | Frame::NullArray => true,
                                Frame::Array(items) => items.is_empty(),
                                _ => false,
                            };
                            if !none {
                                got += 1;
                            }
                        }
                        if done {
                            return got;
                        }
                    }
                })
                .join()
                .unwrap_or(0)
            });
            taken += got;
            for w in waiters.iter_mut() {
                match engine.block_reply(w) {
                    Some(reply) => assert_ne!(reply, Frame::NullArray),
                    None => {
                        unserved += 1;
                        engine.cancel_block(w);
                        engine.block_reply(w);
                    }
                }
            }
            let mut del = argv(&["DEL"]);
            del.extend(keys.iter().map(|k| Bytes::copy_from_slice(k.as_bytes())));
            engine.execute(&mut filler, del);
        }
        assert_eq!(
            (taken, unserved),
            (0, 0),
            "{rounds} rounds: elements taken by the other thread, waiters left waiting"
        );
        // Every BLMOVE delivered its element to its destination.
        let moved = engine.execute(&mut filler, argv(&["LLEN", "dst1"]));
        assert_eq!(moved, Frame::Integer(i64::from(rounds)));
    }

    #[test]
    fn a_new_client_with_data_there_is_served_behind_earlier_waiters() {
        let mut t = TestEngine::new();
        let mut zwaiter = t.other_session();
        let mut pusher = t.other_session();
        t.run_as(&mut zwaiter, &["BZPOPMIN", "k", "0"]);
        t.run_as(&mut pusher, &["RPUSH", "k", "v"]);
        // The earlier waiter cannot take a list element; the new client
        // queues behind it and is served before its command returns.
        t.run(&["BLPOP", "k", "0"]);
        assert!(t.session.blocked.is_some());
        assert_eq!(t.engine.block_reply(&mut t.session), Some(arr(&["k", "v"])));
        assert_eq!(t.engine.blocking.blocked_clients(), 1);
    }
}
