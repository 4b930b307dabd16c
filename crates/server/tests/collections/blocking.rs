//! `keel-collections`'s `blocking` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_collections::blocking::*;
use keel_collections::lists::{list_mut, move_element, mpop, mpop_reply, parse_mpop, pop_from};
use keel_collections::zsets;
use keel_engine::args::Args;
use keel_engine::blocking::parse_timeout;
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::list::End;

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;
    use std::sync::Arc;

    fn arr(items: &[&str]) -> Frame {
        Frame::Array(items.iter().map(|s| bulk(s)).collect())
    }

    #[test]
    fn pops_are_logged_as_their_non_blocking_form() {
        let sink = Arc::new(keel_engine::testing::Recorder::default());
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
