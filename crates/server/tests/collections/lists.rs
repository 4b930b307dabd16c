//! `keel-collections`'s `lists` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_collections::lists::*;
use keel_engine::args::{parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::list::{self, End};
use keel_store::Value;

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn arr(items: &[&str]) -> Frame {
        Frame::Array(items.iter().map(|s| bulk(s)).collect())
    }

    #[test]
    fn push_pop_range_len() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["LPUSH", "l", "a", "b"]), int(2));
        assert_eq!(t.run(&["RPUSH", "l", "c", "1"]), int(4));
        assert_eq!(
            t.run(&["LRANGE", "l", "0", "-1"]),
            arr(&["b", "a", "c", "1"])
        );
        assert_eq!(t.run(&["LRANGE", "l", "-2", "100"]), arr(&["c", "1"]));
        assert_eq!(t.run(&["LRANGE", "l", "3", "1"]), arr(&[]));
        assert_eq!(t.run(&["LLEN", "l"]), int(4));
        assert_eq!(t.run(&["LPOP", "l"]), bulk("b"));
        assert_eq!(t.run(&["RPOP", "l", "2"]), arr(&["1", "c"]));
        assert_eq!(t.run(&["LPOP", "l", "0"]), arr(&[]));
        assert_eq!(t.run(&["RPOP", "l", "5"]), arr(&["a"]));
        assert_eq!(t.run(&["EXISTS", "l"]), int(0));
        assert_eq!(t.run(&["LPOP", "l"]), Frame::Null);
        assert_eq!(t.run(&["LPOP", "l", "0"]), Frame::NullArray);
        assert_eq!(t.run(&["LLEN", "l"]), int(0));
        assert_eq!(t.run(&["LRANGE", "l", "0", "-1"]), arr(&[]));
        assert_eq!(
            t.run(&["LPOP", "l", "-1"]),
            error("ERR value is out of range, must be positive")
        );
        assert_eq!(
            t.run(&["LPOP", "l", "1", "2"]),
            error("ERR wrong number of arguments for 'lpop' command")
        );
        assert_eq!(
            t.run(&["LRANGE", "l", "a", "1"]),
            error("ERR value is not an integer or out of range")
        );
    }

    #[test]
    fn wrong_type() {
        let mut t = TestEngine::new();
        t.run(&["SET", "s", "v"]);
        t.run(&["RPUSH", "l", "x"]);
        let wt = error("WRONGTYPE Operation against a key holding the wrong kind of value");
        for cmd in [
            &["LPUSH", "s", "a"][..],
            &["RPUSH", "s", "a"],
            &["LPOP", "s"],
            &["RPOP", "s", "2"],
            &["LLEN", "s"],
            &["LRANGE", "s", "0", "1"],
            &["LMOVE", "s", "l", "LEFT", "LEFT"],
            &["LMOVE", "l", "s", "LEFT", "LEFT"],
        ] {
            assert_eq!(t.run(cmd), wt, "{cmd:?}");
        }
        assert_eq!(t.run(&["LRANGE", "l", "0", "-1"]), arr(&["x"]));
        // A missing source answers nil before the destination is looked at.
        assert_eq!(t.run(&["LMOVE", "nope", "s", "LEFT", "LEFT"]), Frame::Null);
    }

    #[test]
    fn lmove_between_and_within_lists() {
        let mut t = TestEngine::new();
        t.run(&["RPUSH", "a", "1", "2", "3"]);
        assert_eq!(t.run(&["LMOVE", "a", "b", "LEFT", "RIGHT"]), bulk("1"));
        assert_eq!(t.run(&["LMOVE", "a", "b", "right", "left"]), bulk("3"));
        assert_eq!(t.run(&["LRANGE", "b", "0", "-1"]), arr(&["3", "1"]));
        assert_eq!(t.run(&["LMOVE", "a", "a", "LEFT", "RIGHT"]), bulk("2"));
        t.run(&["PEXPIRE", "a", "5000"]);
        // A one-element rotation keeps the key and its expiry.
        assert_eq!(t.run(&["LMOVE", "a", "a", "LEFT", "RIGHT"]), bulk("2"));
        assert_eq!(t.run(&["PTTL", "a"]), int(5000));
        assert_eq!(t.run(&["LMOVE", "a", "b", "LEFT", "LEFT"]), bulk("2"));
        assert_eq!(t.run(&["EXISTS", "a"]), int(0));
        assert_eq!(t.run(&["LMOVE", "a", "b", "LEFT", "LEFT"]), Frame::Null);
        assert_eq!(
            t.run(&["LMOVE", "a", "b", "UP", "LEFT"]),
            error("ERR syntax error")
        );
    }

    #[test]
    fn mpop_arguments() {
        use bytes::Bytes;
        use keel_engine::args::Args;
        let parse = |line: &[&str]| {
            let argv: Vec<Bytes> = line.iter().map(|s| Bytes::from(s.to_string())).collect();
            let mut args = Args::new(&argv, 1);
            super::parse_mpop(&mut args).map(|m| (m.keys.len(), m.end, m.count))
        };
        use keel_store::list::End;
        assert_eq!(
            parse(&["LMPOP", "2", "a", "b", "LEFT"]),
            Ok((2, End::Left, 1))
        );
        assert_eq!(
            parse(&["LMPOP", "1", "a", "right", "COUNT", "7"]),
            Ok((1, End::Right, 7))
        );
        let numkeys = Err(keel_engine::error::CmdError::err(
            "numkeys should be greater than 0",
        ));
        assert_eq!(parse(&["LMPOP", "0", "a", "LEFT"]), numkeys);
        assert_eq!(parse(&["LMPOP", "x", "a", "LEFT"]), numkeys);
        let syntax = Err(keel_engine::error::CmdError::Syntax);
        assert_eq!(parse(&["LMPOP", "2", "a", "LEFT"]), syntax);
        assert_eq!(parse(&["LMPOP", "1", "a", "MIDDLE"]), syntax);
        assert_eq!(parse(&["LMPOP", "1", "a", "LEFT", "COUNT"]), syntax);
        assert_eq!(
            parse(&["LMPOP", "1", "a", "LEFT", "COUNT", "1", "COUNT", "1"]),
            syntax
        );
        let count = Err(keel_engine::error::CmdError::err(
            "count should be greater than 0",
        ));
        assert_eq!(parse(&["LMPOP", "1", "a", "LEFT", "COUNT", "0"]), count);
        assert_eq!(parse(&["LMPOP", "1", "a", "LEFT", "COUNT", "x"]), count);
    }

    #[test]
    fn lmpop_pops_from_the_first_non_empty_list() {
        let mut t = TestEngine::new();
        t.run(&["RPUSH", "b", "1", "2", "3"]);
        t.run(&["SET", "s", "v"]);
        assert_eq!(
            t.run(&["LMPOP", "3", "a", "b", "s", "LEFT", "COUNT", "2"]),
            Frame::Array(vec![bulk("b"), arr(&["1", "2"])])
        );
        assert_eq!(
            t.run(&["LMPOP", "2", "a", "b", "RIGHT", "COUNT", "9"]),
            Frame::Array(vec![bulk("b"), arr(&["3"])])
        );
        assert_eq!(t.run(&["EXISTS", "b"]), int(0));
        assert_eq!(t.run(&["LMPOP", "2", "a", "b", "LEFT"]), Frame::NullArray);
        assert_eq!(
            t.run(&["LMPOP", "2", "a", "s", "LEFT"]),
            error("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
    }

    #[test]
    fn edits_in_the_middle() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["LPUSHX", "l", "a"]), int(0));
        t.run(&["RPUSH", "l", "a", "b", "a", "c"]);
        assert_eq!(t.run(&["RPUSHX", "l", "a"]), int(5));
        assert_eq!(t.run(&["LINDEX", "l", "-2"]), bulk("c"));
        assert_eq!(t.run(&["LINDEX", "nokey", "x"]), Frame::Null);
        assert_eq!(t.run(&["LSET", "l", "1", "B"]), ok());
        assert_eq!(
            t.run(&["LSET", "l", "5", "B"]),
            error("ERR index out of range")
        );
        assert_eq!(
            t.run(&["LSET", "nokey", "x", "B"]),
            error("ERR no such key")
        );
        assert_eq!(t.run(&["LINSERT", "l", "AFTER", "c", "d"]), int(6));
        assert_eq!(t.run(&["LINSERT", "l", "BEFORE", "zz", "d"]), int(-1));
        assert_eq!(t.run(&["LREM", "l", "-2", "a"]), int(2));
        assert_eq!(
            t.run(&["LRANGE", "l", "0", "-1"]),
            arr(&["a", "B", "c", "d"])
        );
        assert_eq!(t.run(&["LPOS", "l", "c"]), int(2));
        assert_eq!(
            t.run(&["LPOS", "l", "a", "COUNT", "0", "RANK", "-1"]),
            Frame::Array(vec![int(0)])
        );
        assert_eq!(t.run(&["LTRIM", "l", "1", "2"]), ok());
        assert_eq!(t.run(&["LRANGE", "l", "0", "-1"]), arr(&["B", "c"]));
        assert_eq!(t.run(&["RPOPLPUSH", "l", "m"]), bulk("c"));
        assert_eq!(t.run(&["LTRIM", "l", "3", "4"]), ok());
        assert_eq!(t.run(&["EXISTS", "l"]), int(0));
    }

    #[test]
    fn lmpop_is_logged_as_the_pop_it_made() {
        let sink = std::sync::Arc::new(keel_engine::testing::Recorder::default());
        let engine = keel_engine::engine::EngineBuilder {
            commands: keel_server::families::table(),
            families: Box::new(keel_server::families::AllFamilies),
            sink: Some(sink.clone()),
            ..Default::default()
        }
        .build();
        let mut s = engine.connect("127.0.0.1:1".into(), "127.0.0.1:6379".into());
        let mut run = |argv: &[&str]| {
            let argv = argv
                .iter()
                .map(|a| bytes::Bytes::copy_from_slice(a.as_bytes()))
                .collect();
            engine.execute(&mut s, argv)
        };
        run(&["RPUSH", "b", "1", "2"]);
        run(&["LMPOP", "2", "a", "b", "RIGHT", "COUNT", "5"]);
        run(&["LMPOP", "2", "a", "b", "RIGHT"]);
        let log = sink.commands();
        assert_eq!(
            log,
            vec![vec!["RPUSH", "b", "1", "2"], vec!["RPOP", "b", "2"],]
        );
    }

    /// Random sequences of list commands over two keys agree with a model of
    /// two deques, on both forms (the size limit of 2 converts early), and a
    /// list that empties always takes its key with it.
    #[test]
    fn commands_match_a_model() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        use std::collections::VecDeque;

        #[derive(Debug, Clone)]
        enum Op {
            Push(usize, bool, Vec<&'static str>),
            Pop(usize, bool, Option<usize>),
            Rem(usize, i64, &'static str),
            Trim(usize, i64, i64),
            Set(usize, i64, &'static str),
            Insert(usize, bool, &'static str, &'static str),
            Move(usize, bool, bool),
            Mpop(bool, usize),
        }
        let key = 0usize..2;
        let elem = prop::sample::select(vec!["a", "b", "1", "-7"]);
        let op = prop_oneof![
            3 => (key.clone(), any::<bool>(), prop::collection::vec(elem.clone(), 1..4))
                .prop_map(|(k, l, e)| Op::Push(k, l, e)),
            1 => (key.clone(), any::<bool>(), prop::option::of(0usize..4))
                .prop_map(|(k, l, c)| Op::Pop(k, l, c)),
            1 => (key.clone(), -2i64..3, elem.clone()).prop_map(|(k, c, e)| Op::Rem(k, c, e)),
            1 => (key.clone(), -4i64..4, -4i64..4).prop_map(|(k, a, b)| Op::Trim(k, a, b)),
            1 => (key.clone(), -4i64..4, elem.clone()).prop_map(|(k, i, e)| Op::Set(k, i, e)),
            1 => (key.clone(), any::<bool>(), elem.clone(), elem)
                .prop_map(|(k, a, p, e)| Op::Insert(k, a, p, e)),
            1 => (key, any::<bool>(), any::<bool>()).prop_map(|(k, f, t)| Op::Move(k, f, t)),
            1 => (any::<bool>(), 1usize..4).prop_map(|(l, c)| Op::Mpop(l, c)),
        ];
        let keys = ["k", "k2"];
        let side = |left: bool| if left { "LEFT" } else { "RIGHT" };
        let mut runner = TestRunner::new(Config {
            cases: 150,
            ..Config::default()
        });
        runner
            .run(&prop::collection::vec(op, 1..40), |ops| {
                let mut t = TestEngine::new();
                t.run(&["CONFIG", "SET", "list-max-listpack-size", "2"]);
                let mut model: [VecDeque<&str>; 2] = [VecDeque::new(), VecDeque::new()];
                for op in &ops {
                    match op.clone() {
                        Op::Push(k, left, elems) => {
                            let mut argv = vec![if left { "LPUSH" } else { "RPUSH" }, keys[k]];
                            argv.extend(&elems);
                            t.run(&argv);
                            for e in elems {
                                if left {
                                    model[k].push_front(e)
                                } else {
                                    model[k].push_back(e)
                                }
                            }
                        }
                        Op::Pop(k, left, count) => {
                            let n = count.unwrap_or(1).to_string();
                            let mut argv = vec![if left { "LPOP" } else { "RPOP" }, keys[k]];
                            if count.is_some() {
                                argv.push(&n);
                            }
                            t.run(&argv);
                            for _ in 0..count.unwrap_or(1) {
                                if left {
                                    model[k].pop_front();
                                } else {
                                    model[k].pop_back();
                                }
                            }
                        }
                        Op::Rem(k, count, e) => {
                            t.run(&["LREM", keys[k], &count.to_string(), e]);
                            let mut idx: Vec<usize> =
                                (0..model[k].len()).filter(|&i| model[k][i] == e).collect();
                            if count < 0 {
                                idx.reverse();
                            }
                            if count != 0 {
                                idx.truncate(count.unsigned_abs() as usize);
                            }
                            idx.sort_unstable();
                            for i in idx.into_iter().rev() {
                                model[k].remove(i);
                            }
                        }
                        Op::Trim(k, a, b) => {
                            t.run(&["LTRIM", keys[k], &a.to_string(), &b.to_string()]);
                            let n = model[k].len() as i64;
                            let s = if a < 0 { (a + n).max(0) } else { a };
                            let e = if b < 0 { b + n } else { b.min(n - 1) };
                            model[k] = if s <= e && s < n {
                                model[k].range(s as usize..=e as usize).copied().collect()
                            } else {
                                VecDeque::new()
                            };
                        }
                        Op::Set(k, i, e) => {
                            t.run(&["LSET", keys[k], &i.to_string(), e]);
                            let n = model[k].len() as i64;
                            let at = if i < 0 { i + n } else { i };
                            if (0..n).contains(&at) {
                                model[k][at as usize] = e;
                            }
                        }
                        Op::Insert(k, after, pivot, e) => {
                            let place = if after { "AFTER" } else { "BEFORE" };
                            t.run(&["LINSERT", keys[k], place, pivot, e]);
                            if let Some(p) = model[k].iter().position(|m| *m == pivot) {
                                model[k].insert(p + usize::from(after), e);
                            }
                        }
                        Op::Move(k, from, to) => {
                            let got = t.run(&["LMOVE", keys[k], keys[1 - k], side(from), side(to)]);
                            let popped = if from {
                                model[k].pop_front()
                            } else {
                                model[k].pop_back()
                            };
                            prop_assert_eq!(got, popped.map_or(Frame::Null, bulk));
                            if let Some(e) = popped {
                                if to {
                                    model[1 - k].push_front(e)
                                } else {
                                    model[1 - k].push_back(e)
                                }
                            }
                        }
                        Op::Mpop(left, count) => {
                            let c = count.to_string();
                            t.run(&["LMPOP", "2", "k", "k2", side(left), "COUNT", &c]);
                            if let Some(m) = model.iter_mut().find(|m| !m.is_empty()) {
                                for _ in 0..count {
                                    if left {
                                        m.pop_front();
                                    } else {
                                        m.pop_back();
                                    }
                                }
                            }
                        }
                    }
                    for (k, m) in model.iter().enumerate() {
                        let expect: Vec<&str> = m.iter().copied().collect();
                        prop_assert_eq!(t.run(&["LRANGE", keys[k], "0", "-1"]), arr(&expect));
                        prop_assert_eq!(
                            t.run(&["EXISTS", keys[k]]),
                            int(i64::from(!m.is_empty())),
                            "after {:?}",
                            op
                        );
                    }
                }
                Ok(())
            })
            .expect("list commands agree with the model");
    }

    #[test]
    fn lmpop_invalidates_only_the_key_it_popped() {
        let mut t = TestEngine::new();
        let mut other = t.other_session();
        t.run(&["RPUSH", "a", "1"]);
        t.run(&["RPUSH", "b", "1"]);
        t.run_as(&mut other, &["WATCH", "b"]);
        t.run_as(&mut other, &["MULTI"]);
        t.run_as(&mut other, &["PING"]);
        assert_eq!(
            t.run(&["LMPOP", "2", "a", "b", "LEFT"]),
            Frame::Array(vec![bulk("a"), arr(&["1"])])
        );
        assert_eq!(
            t.run_as(&mut other, &["EXEC"]),
            Frame::Array(vec![Frame::Simple("PONG".into())])
        );
        t.run_as(&mut other, &["WATCH", "b"]);
        t.run_as(&mut other, &["MULTI"]);
        t.run_as(&mut other, &["PING"]);
        t.run(&["LMPOP", "2", "a", "b", "LEFT"]);
        assert_eq!(t.run_as(&mut other, &["EXEC"]), Frame::NullArray);
    }
}
