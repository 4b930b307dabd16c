//! `keel-roaring`'s `roaring` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::{BufMut, Bytes, BytesMut};
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_roaring::roaring::*;
use keel_store::num::parse_i64;
use keel_store::roaring::{self as store, Bitmap32, Bitmap64, RoaringSet};
use keel_store::{Value, ValueType};

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// An integer reply, plain or big number.
    fn num(f: &Frame) -> i64 {
        match f {
            Frame::Integer(n) => *n,
            Frame::BigNumber(b) => std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("not a number: {f:?}")),
            other => panic!("not a number: {other:?}"),
        }
    }

    fn nums(f: &Frame) -> Vec<u64> {
        match f {
            Frame::Array(v) => v.iter().map(|x| num_u(x) as u64).collect(),
            other => panic!("not an array: {other:?}"),
        }
    }

    fn err(f: &Frame) -> String {
        match f {
            Frame::Error(e) => String::from_utf8_lossy(e).into_owned(),
            other => panic!("not an error: {other:?}"),
        }
    }

    #[test]
    fn basic_bits_and_arrays() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["R.SETBIT", "k", "5", "1"]), int(0));
        assert_eq!(t.run(&["R.SETBIT", "k", "5", "1"]), int(1));
        assert_eq!(t.run(&["R.GETBIT", "k", "5"]), int(1));
        assert_eq!(t.run(&["R.GETBIT", "nokey", "5"]), int(0));
        assert_eq!(t.run(&["TYPE", "k"]), Frame::Simple("reroaring".into()));
        assert_eq!(t.run(&["R.APPENDINTARRAY", "k", "1", "2", "3"]), ok());
        assert_eq!(nums(&t.run(&["R.GETINTARRAY", "k"])), [1, 2, 3, 5]);
        assert_eq!(nums(&t.run(&["R.RANGEINTARRAY", "k", "1", "2"])), [2, 3]);
        assert_eq!(nums(&t.run(&["R.GETBITS", "k", "0", "1", "5"])), [0, 1, 1]);
        assert_eq!(t.run(&["R.GETBITARRAY", "k"]), bulk("011101"));
        assert_eq!(num(&t.run(&["R.BITCOUNT", "k"])), 4);
        assert_eq!(t.run(&["R.CLEARBITS", "k", "1", "9", "COUNT"]), int(1));
        assert_eq!(t.run(&["R.CLEARBITS", "nokey", "1"]), Frame::Null);
        assert_eq!(t.run(&["R.MIN", "k"]), int(2));
        assert_eq!(t.run(&["R.MAX", "k"]), int(5));
        assert_eq!(t.run(&["R.MIN", "nokey"]), int(-1));
        assert_eq!(t.run(&["R.BITPOS", "k", "0"]), int(0));
        assert_eq!(t.run(&["R.CLEAR", "k"]), int(3));
        assert_eq!(num(&t.run(&["R.BITCOUNT", "k"])), 0);
        assert_eq!(t.run(&["EXISTS", "k"]), int(1));
        assert_eq!(t.run(&["R.CLEAR", "nokey"]), Frame::Null);
        assert_eq!(
            t.run(&["R64.SETBIT", "w", "18446744073709551615", "1"]),
            int(0)
        );
        assert_eq!(
            t.run(&["R64.MAX", "w"]),
            Frame::BigNumber("18446744073709551615".into())
        );
        assert_eq!(t.run(&["TYPE", "w"]), Frame::Simple("roaring64".into()));
    }

    #[test]
    fn errors_follow_redis_roaring() {
        let mut t = TestEngine::new();
        t.run(&["SET", "s", "x"]);
        let e = err(&t.run(&["R.SETBIT", "k", "4294967296", "1"]));
        assert_eq!(e, "ERR invalid offset: must be an unsigned 32 bit integer");
        assert_eq!(
            err(&t.run(&["R.SETBIT", "k", "-1", "1"])),
            "ERR invalid offset: must be an unsigned 32 bit integer"
        );
        assert_eq!(
            err(&t.run(&["R.SETBIT", "k", "1", "2"])),
            "ERR invalid value: must be either 0 or 1"
        );
        assert_eq!(
            err(&t.run(&["R64.SETBIT", "k", "18446744073709551616", "1"])),
            "ERR invalid offset: must be an unsigned 64 bit integer"
        );
        assert!(err(&t.run(&["R.SETBIT", "s", "1", "1"])).starts_with("WRONGTYPE"));
        assert!(err(&t.run(&["R.GETBIT", "s", "1"])).starts_with("WRONGTYPE"));
        t.run(&["R.SETBIT", "k", "1", "1"]);
        assert!(err(&t.run(&["R64.GETBIT", "k", "1"])).starts_with("WRONGTYPE"));
        assert_eq!(
            err(&t.run(&["R.SETRANGE", "k", "5", "1"])),
            "ERR invalid end: must be >= start"
        );
        assert_eq!(
            err(&t.run(&["R64.SETRANGE", "w", "5", "1"])),
            "ERR invalid end: must >= start"
        );
        assert_eq!(
            err(&t.run(&["R.SETFULL", "k"])),
            "Roaring: key already exist"
        );
        assert_eq!(
            err(&t.run(&["R.DIFF", "d", "k", "nokey"])),
            "Roaring: key does not exist"
        );
        assert_eq!(
            err(&t.run(&["R.CONTAINS", "k", "k", "SOME"])),
            "ERR invalid mode argument: SOME"
        );
        assert_eq!(
            err(&t.run(&["R.RANGEINTARRAY", "k", "0", "100000000"])),
            "Roaring: range too large: maximum 100000000 elements"
        );
        assert!(err(&t.run(&["R.SETBITARRAY", "k", "0102"])).starts_with("ERR invalid bit array"));
        assert_eq!(
            err(&t.run(&["R.BITOP", "NAND", "d", "a", "b"])),
            "ERR syntax error"
        );
        assert!(err(&t.run(&["R.BITOP", "AND", "d", "a"])).starts_with("ERR wrong number"));
        assert!(
            err(&t.run(&["R.BITOP", "NOT", "d", "a", "1", "2"])).starts_with("ERR wrong number")
        );
        assert!(err(&t.run(&["R64.SETFULL", "full64"])).starts_with("ERR range too large"));
        assert!(
            err(&t.run(&["R64.SETRANGE", "w", "0", "18446744073709551615"]))
                .starts_with("ERR range too large")
        );
        assert_eq!(
            err(&t.run(&["R.OPTIMIZE", "nokey"])),
            "Roaring: key does not exist"
        );
        t.run(&["R.SETBIT", "far", "4294967295", "1"]);
        assert!(err(&t.run(&["R.GETBITARRAY", "far"])).contains("proto-max-bulk-len"));
    }

    #[test]
    fn huge_ranges_cost_containers_not_bits() {
        let mut t = TestEngine::new();
        let started = std::time::Instant::now();
        assert_eq!(t.run(&["R.SETFULL", "f"]), ok());
        assert_eq!(num(&t.run(&["R.BITCOUNT", "f"])), 1 << 32);
        assert_eq!(t.run(&["R.SETRANGE", "r", "0", "4294967295"]), ok());
        assert_eq!(num(&t.run(&["R.BITCOUNT", "r"])), (1 << 32) - 1);
        assert_eq!(t.run(&["R.BITPOS", "f", "0"]), int(-1));
        assert_eq!(t.run(&["R.BITPOS", "r", "0"]), int(4294967295));
        assert_eq!(num(&t.run(&["R.BITOP", "NOT", "n", "r"])), 0);
        assert_eq!(num(&t.run(&["R.BITOP", "NOT", "n", "r", "4294967295"])), 1);
        assert_eq!(
            err(&t.run(&["R.GETINTARRAY", "f"])),
            "Roaring: range too large: maximum 100000000 elements"
        );
        assert_eq!(t.run(&["R64.SETRANGE", "w", "0", "68719476735"]), ok());
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn intersect_ids_card_min_limit() {
        let mut t = TestEngine::new();
        t.run(&["R.SETINTARRAY", "a", "1", "2", "3", "10", "20"]);
        t.run(&["R.SETINTARRAY", "b", "2", "3", "20", "30"]);
        t.run(&["R.SETINTARRAY", "c", "3", "20", "2"]);
        assert_eq!(nums(&t.run(&["R.INTERSECT", "a", "b", "c"])), [2, 3, 20]);
        assert_eq!(t.run(&["R.INTERSECT", "a", "b", "c", "CARD"]), int(3));
        assert_eq!(t.run(&["R.INTERSECT", "a", "b", "c", "MIN"]), int(2));
        assert_eq!(
            nums(&t.run(&["R.INTERSECT", "a", "b", "c", "LIMIT", "2"])),
            [2, 3]
        );
        assert_eq!(t.run(&["R.INTERSECT", "a", "nokey", "MIN"]), int(-1));
        assert_eq!(t.run(&["R.INTERSECT", "a", "nokey", "CARD"]), int(0));
        assert_eq!(nums(&t.run(&["R.INTERSECT", "a"])), [1, 2, 3, 10, 20]);
        t.run(&["R64.SETBIT", "w", "1", "1"]);
        assert!(err(&t.run(&["R.INTERSECT", "a", "w"])).starts_with("WRONGTYPE"));
        assert!(err(&t.run(&["R.INTERSECT", "a", "LIMIT", "-1"])).starts_with("ERR"));
    }

    #[test]
    fn intersect_of_large_sets_ands_by_container() {
        let mut t = TestEngine::new();
        t.run(&["R.SETRANGE", "a", "0", "100000"]);
        let evens: Vec<String> = (0..100_000u32).step_by(2).map(|x| x.to_string()).collect();
        let threes: Vec<String> = (0..100_000u32).step_by(3).map(|x| x.to_string()).collect();
        for (key, ids) in [("b", &evens), ("c", &threes)] {
            let mut argv = vec!["R.SETINTARRAY", key];
            argv.extend(ids.iter().map(String::as_str));
            assert_eq!(t.run(&argv), ok());
        }
        let want: Vec<u64> = (0..100_000u64).step_by(6).collect();
        assert_eq!(nums(&t.run(&["R.INTERSECT", "a", "b", "c"])), want);
        assert_eq!(
            t.run(&["R.INTERSECT", "c", "b", "a", "CARD"]),
            int(want.len() as i64)
        );
        let limit = nums(&t.run(&["R.INTERSECT", "a", "b", "c", "LIMIT", "100000"]));
        assert_eq!(limit, want);
        assert_eq!(t.run(&["R.INTERSECT", "a", "b", "c", "MIN"]), int(0));
        t.run(&["R.SETINTARRAY", "d", "7"]);
        assert_eq!(t.run(&["R.INTERSECT", "a", "b", "d", "CARD"]), int(0));
    }

    #[derive(Clone, Debug)]
    enum Op {
        SetBit(u64, bool),
        Append(Vec<u64>),
        Delete(Vec<u64>),
        ClearBits(Vec<u64>),
        SetInts(Vec<u64>),
        SetRange(u64, u64),
        Clear,
        Bitop(&'static str, usize),
        Not(usize, u64),
    }

    fn id(wide: bool) -> impl Strategy<Value = u64> + Clone {
        let top = if wide { u64::MAX } else { u64::from(u32::MAX) };
        prop_oneof![
            4 => 0u64..3000,
            1 => (0u64..5).prop_map(move |d| top - d),
            1 => (0u64..70_000).prop_map(move |d| if wide { (1 << 40) + d } else { 1 << 20 | d }),
        ]
    }

    fn op(wide: bool) -> impl Strategy<Value = Op> {
        let ids = proptest::collection::vec(id(wide), 1..8);
        prop_oneof![
            (id(wide), any::<bool>()).prop_map(|(i, v)| Op::SetBit(i, v)),
            ids.clone().prop_map(Op::Append),
            ids.clone().prop_map(Op::Delete),
            ids.clone().prop_map(Op::ClearBits),
            ids.prop_map(Op::SetInts),
            (id(wide), 0u64..80_000).prop_map(|(a, n)| Op::SetRange(a, a.saturating_add(n))),
            Just(Op::Clear),
            (
                prop::sample::select(vec!["AND", "OR", "XOR", "ANDOR", "ONE", "DIFF", "DIFF1"]),
                0usize..3
            )
                .prop_map(|(o, k)| Op::Bitop(o, k)),
            (0usize..3, 0u64..3000).prop_map(|(k, l)| Op::Not(k, l)),
        ]
    }

    fn check_model(t: &mut TestEngine, p: &str, key: &str, m: &BTreeSet<u64>, top: u64) {
        let cmd = |c: &str| format!("{p}.{c}");
        assert_eq!(num(&t.run(&[&cmd("BITCOUNT"), key])), m.len() as i64);
        let min = m.first().map_or(-1i128, |x| i128::from(*x));
        let max = m.last().map_or(-1i128, |x| i128::from(*x));
        assert_eq!(num_u(&t.run(&[&cmd("MIN"), key])), min);
        assert_eq!(num_u(&t.run(&[&cmd("MAX"), key])), max);
        if m.len() < 200_000 {
            let got = nums(&t.run(&[&cmd("GETINTARRAY"), key]));
            assert_eq!(got, m.iter().copied().collect::<Vec<_>>());
        }
        let got = nums(&t.run(&[&cmd("RANGEINTARRAY"), key, "2", "6"]));
        let want: Vec<u64> = m.iter().copied().skip(2).take(5).collect();
        assert_eq!(got, want);
        let first_absent = (0..=top).find(|x| !m.contains(x));
        let pos = num_u(&t.run(&[&cmd("BITPOS"), key, "0"]));
        assert_eq!(pos, first_absent.map_or(-1, i128::from));
        for probe in [0u64, 1, 2999, top] {
            let got = num(&t.run(&[&cmd("GETBIT"), key, &probe.to_string()]));
            assert_eq!(got == 1, m.contains(&probe));
        }
    }

    /// A reply that may be an unsigned 64-bit big number or -1.
    fn num_u(f: &Frame) -> i128 {
        match f {
            Frame::Integer(n) => i128::from(*n),
            // A big number reaches a RESP2 client as a bulk string.
            Frame::BigNumber(b) | Frame::Bulk(b) => std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("not a number: {f:?}")),
            other => panic!("not a number: {other:?}"),
        }
    }

    fn run_model(ops: Vec<(usize, Op)>, wide: bool) -> Result<(), TestCaseError> {
        let p = if wide { "R64" } else { "R" };
        let top = if wide { u64::MAX } else { u64::from(u32::MAX) };
        let cmd = |c: &str| format!("{p}.{c}");
        let keys = ["k0", "k1", "k2"];
        let mut t = TestEngine::new();
        let mut models: Vec<Option<BTreeSet<u64>>> = vec![None, None, None];
        let s = |ids: &[u64]| ids.iter().map(u64::to_string).collect::<Vec<_>>();
        for (k, op) in ops {
            let key = keys[k];
            match op {
                Op::SetBit(i, v) => {
                    let m = models[k].get_or_insert_with(BTreeSet::new);
                    let old = if v { !m.insert(i) } else { m.remove(&i) };
                    let r = t.run(&[
                        &cmd("SETBIT"),
                        key,
                        &i.to_string(),
                        if v { "1" } else { "0" },
                    ]);
                    prop_assert_eq!(num(&r), i64::from(old));
                }
                Op::Append(ids) => {
                    models[k].get_or_insert_with(BTreeSet::new).extend(&ids);
                    let mut argv = vec![cmd("APPENDINTARRAY"), key.to_string()];
                    argv.extend(s(&ids));
                    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                    prop_assert_eq!(t.run(&argv), ok());
                }
                Op::Delete(ids) => {
                    let m = models[k].get_or_insert_with(BTreeSet::new);
                    for i in &ids {
                        m.remove(i);
                    }
                    let mut argv = vec![cmd("DELETEINTARRAY"), key.to_string()];
                    argv.extend(s(&ids));
                    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                    prop_assert_eq!(t.run(&argv), ok());
                }
                Op::ClearBits(ids) => {
                    let mut argv = vec![cmd("CLEARBITS"), key.to_string()];
                    argv.extend(s(&ids));
                    argv.push("COUNT".into());
                    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                    let r = t.run(&argv);
                    match models[k].as_mut() {
                        None => prop_assert_eq!(r, Frame::Null),
                        Some(m) => {
                            let n = ids.iter().filter(|i| m.remove(i)).count();
                            prop_assert_eq!(num(&r), n as i64);
                        }
                    }
                }
                Op::SetInts(ids) => {
                    models[k] = Some(ids.iter().copied().collect());
                    let mut argv = vec![cmd("SETINTARRAY"), key.to_string()];
                    argv.extend(s(&ids));
                    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                    prop_assert_eq!(t.run(&argv), ok());
                }
                Op::SetRange(a, b) => {
                    let b = b.min(top);
                    models[k].get_or_insert_with(BTreeSet::new).extend(a..b);
                    let r = t.run(&[&cmd("SETRANGE"), key, &a.to_string(), &b.to_string()]);
                    prop_assert_eq!(r, ok());
                }
                Op::Clear => {
                    let r = t.run(&[&cmd("CLEAR"), key]);
                    match models[k].as_mut() {
                        None => prop_assert_eq!(r, Frame::Null),
                        Some(m) => {
                            prop_assert_eq!(num(&r), m.len() as i64);
                            m.clear();
                        }
                    }
                }
                Op::Bitop(o, dest) => {
                    let src: Vec<BTreeSet<u64>> = (0..3)
                        .filter(|i| *i != dest)
                        .map(|i| models[i].clone().unwrap_or_default())
                        .collect();
                    let names: Vec<&str> = (0..3).filter(|i| *i != dest).map(|i| keys[i]).collect();
                    let (x, y) = (&src[0], &src[1]);
                    let result: BTreeSet<u64> = match o {
                        "AND" => x & y,
                        "OR" => x | y,
                        "XOR" | "ONE" => x ^ y,
                        "ANDOR" => x & y,
                        "DIFF" => x - y,
                        _ => y - x,
                    };
                    let r = t.run(&[&cmd("BITOP"), o, keys[dest], names[0], names[1]]);
                    prop_assert_eq!(num(&r), result.len() as i64);
                    models[dest] = Some(result);
                }
                Op::Not(dest, last) => {
                    let srck = (dest + 1) % 3;
                    let src = models[srck].clone().unwrap_or_default();
                    let upto = src.last().copied().unwrap_or(0).max(last);
                    if upto > 10_000_000 {
                        continue;
                    }
                    let result: BTreeSet<u64> = (0..=upto).filter(|x| !src.contains(x)).collect();
                    let r = t.run(&[
                        &cmd("BITOP"),
                        "NOT",
                        keys[dest],
                        keys[srck],
                        &last.to_string(),
                    ]);
                    prop_assert_eq!(num(&r), result.len() as i64);
                    models[dest] = Some(result);
                }
            }
            for (i, m) in models.iter().enumerate() {
                if let Some(m) = m {
                    check_model(&mut t, p, keys[i], m, top);
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn r32_matches_a_set_model(ops in proptest::collection::vec((0usize..3, op(false)), 1..12)) {
            run_model(ops, false)?;
        }

        #[test]
        fn r64_matches_a_set_model(ops in proptest::collection::vec((0usize..3, op(true)), 1..12)) {
            run_model(ops, true)?;
        }
    }
}
