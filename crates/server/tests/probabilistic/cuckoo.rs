//! `keel-probabilistic`'s `cuckoo` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_probabilistic::cuckoo::*;
use keel_resp::Frame;
use keel_store::cuckoo::{
    CuckooFilter, Insert, DEFAULT_BUCKET_SIZE, DEFAULT_CAPACITY, DEFAULT_EXPANSION,
    DEFAULT_MAX_ITERATIONS, HEADER_LEN, MAX_BUCKET_SIZE, MAX_CAPACITY, MAX_CHUNK_BYTES,
    MAX_EXPANSION, MAX_FILTERS, MAX_ITERATIONS,
};
use keel_store::num::parse_i64;
use keel_store::{Value, ValueType};

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn int(n: i64) -> Frame {
        Frame::Integer(n)
    }

    fn b(v: bool) -> Frame {
        Frame::Boolean(v)
    }

    fn err(t: &mut TestEngine, argv: &[&str]) -> String {
        match t.run(argv) {
            Frame::Error(e) => String::from_utf8_lossy(&e).into_owned(),
            other => panic!("{argv:?}: {other:?}"),
        }
    }

    #[test]
    fn reserve_checks_options_in_redisbloom_order() {
        let mut t = TestEngine::new();
        for (args, want) in [
            (&["x"][..], "Bad capacity"),
            (
                &["3"][..],
                "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
            ),
            (
                &["1073741825"][..],
                "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
            ),
            (
                &["7", "BUCKETSIZE", "4"][..],
                "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
            ),
            (&["100", "BUCKETSIZE", "x"][..], "Couldn't parse BUCKETSIZE"),
            (
                &["100", "BUCKETSIZE", "256"][..],
                "BUCKETSIZE: value must be in the range [1, 255]",
            ),
            (
                &["100", "BUCKETSIZE", "0", "MAXITERATIONS", "0"][..],
                "MAXITERATIONS: value must be in the range [1, 65535]",
            ),
            (
                &["100", "EXPANSION", "-1"][..],
                "EXPANSION: value must be in the range [0, 32768]",
            ),
            (
                &["100", "EXPANSION"][..],
                "ERR wrong number of arguments for 'cf.reserve' command",
            ),
        ] {
            let mut argv = vec!["CF.RESERVE", "cf"];
            argv.extend_from_slice(args);
            assert_eq!(err(&mut t, &argv), want, "{args:?}");
        }
        assert_eq!(t.run(&["CF.RESERVE", "cf", "1000"]), Frame::ok());
        assert_eq!(
            err(&mut t, &["CF.RESERVE", "cf", "1000"]),
            "ERR item exists"
        );
        t.run(&["SET", "s", "v"]);
        assert!(err(&mut t, &["CF.RESERVE", "s", "1000"]).starts_with("WRONGTYPE"));
        assert!(err(&mut t, &["CF.ADD", "s", "a"]).starts_with("WRONGTYPE"));
        assert_eq!(t.run(&["CF.EXISTS", "s", "a"]), b(false));
    }

    #[test]
    fn adds_counts_deletes_and_info() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["CF.ADD", "cf", "a"]), b(true));
        assert_eq!(t.run(&["CF.ADD", "cf", "a"]), b(true));
        assert_eq!(t.run(&["CF.ADDNX", "cf", "a"]), b(false));
        assert_eq!(t.run(&["CF.COUNT", "cf", "a"]), int(2));
        assert_eq!(t.run(&["CF.DEL", "cf", "a"]), b(true));
        assert_eq!(t.run(&["CF.COUNT", "cf", "a"]), int(1));
        assert_eq!(err(&mut t, &["CF.DEL", "nope", "a"]), "Not found");
        assert_eq!(
            t.run(&["CF.INSERTNX", "cf", "ITEMS", "a", "b"]),
            Frame::Array(vec![b(false), b(true)])
        );
        assert_eq!(
            t.run(&["CF.MEXISTS", "cf", "a", "b", "c"]),
            Frame::Array(vec![b(true), b(true), b(false)])
        );
        assert_eq!(
            err(&mut t, &["CF.INSERT", "new", "NOCREATE", "ITEMS", "a"]),
            "ERR not found"
        );
        assert_eq!(
            err(&mut t, &["CF.INSERT", "new", "CAPACITY", "3", "ITEMS", "a"]),
            "Capacity must be in the range [cf-bucket-size * 2, 1073741824]"
        );
        assert_eq!(
            err(&mut t, &["CF.INSERT", "new", "BOGUS", "ITEMS", "a"]),
            "Unknown argument received"
        );
        let Frame::Map(info) = t.run(&["CF.INFO", "cf"]) else {
            panic!("map")
        };
        assert_eq!(info[0].1, int(40 + 16 + 1024));
        assert_eq!(info[1].1, int(512));
        assert_eq!(err(&mut t, &["CF.INFO", "nope"]), "ERR not found");
    }

    #[test]
    fn a_full_filter_without_expansion() {
        let mut t = TestEngine::new();
        t.run(&[
            "CF.RESERVE",
            "cf",
            "2",
            "BUCKETSIZE",
            "1",
            "EXPANSION",
            "0",
            "MAXITERATIONS",
            "1",
        ]);
        let mut full = 0;
        for i in 0..20 {
            if let Frame::Error(e) = t.run(&["CF.ADD", "cf", &format!("i{i}")]) {
                assert_eq!(&e[..], b"Filter is full");
                full += 1;
            }
        }
        assert!(full > 0);
        let Frame::Array(r) = t.run(&["CF.INSERT", "cf", "ITEMS", "x1", "x2", "x3", "x4"]) else {
            panic!("array")
        };
        assert!(r.contains(&int(-1)));
    }

    #[test]
    fn scandump_and_loadchunk_round_trip() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["CF.RESERVE", "cf", "100"]), Frame::ok());
        assert_eq!(
            t.run(&["CF.SCANDUMP", "cf", "0"]),
            Frame::Array(vec![int(0), Frame::Null])
        );
        for i in 0..150 {
            t.run(&["CF.ADD", "cf", &format!("i{i}")]);
        }
        let mut chunks = Vec::new();
        let mut iter = 0i64;
        loop {
            let Frame::Array(r) = t.run(&["CF.SCANDUMP", "cf", &iter.to_string()]) else {
                panic!("array")
            };
            let Frame::Integer(next) = r[0] else {
                panic!("int")
            };
            if next == 0 {
                break;
            }
            let Frame::Bulk(b) = &r[1] else {
                panic!("bulk")
            };
            chunks.push((next, b.clone()));
            iter = next;
        }
        assert!(chunks.len() >= 3, "header and a chunk per sub-filter");
        for (at, data) in &chunks {
            let argv: Vec<Bytes> = vec![
                Bytes::from_static(b"CF.LOADCHUNK"),
                Bytes::from_static(b"copy"),
                Bytes::from(at.to_string()),
                data.clone(),
            ];
            assert_eq!(decoded(t.engine.execute(&mut t.session, argv)), Frame::ok());
        }
        for i in 0..150 {
            assert_eq!(t.run(&["CF.EXISTS", "copy", &format!("i{i}")]), b(true));
        }
        assert_eq!(t.run(&["CF.INFO", "copy"]), t.run(&["CF.INFO", "cf"]));
        assert_eq!(
            err(&mut t, &["CF.LOADCHUNK", "x", "0", "a"]),
            "Invalid position"
        );
        assert_eq!(
            err(&mut t, &["CF.LOADCHUNK", "x", "1", "short"]),
            "Invalid header"
        );
        assert_eq!(
            err(&mut t, &["CF.LOADCHUNK", "x", "9", "short"]),
            "ERR not found"
        );
        assert_eq!(
            err(&mut t, &["CF.LOADCHUNK", "cf", "99999", "abc"]),
            "Couldn't load chunk!"
        );
        assert_eq!(
            err(&mut t, &["CF.LOADCHUNK", "cf", "1", "abc"]),
            "ERR item exists"
        );
    }
}
