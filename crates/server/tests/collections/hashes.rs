//! `keel-collections`'s `hashes` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_collections::hashes::*;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::scan::parse_cursor;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::glob::glob_match;
use keel_store::hash::{new_hash, HashMut, HashRef};
use keel_store::CompactLimits;
use std::borrow::Cow;

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn arr(items: &[&str]) -> Frame {
        Frame::Array(items.iter().map(|s| bulk(s)).collect())
    }

    #[test]
    fn set_get_and_delete_to_empty() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["HSET", "h", "a", "1", "b", "2"]), int(2));
        assert_eq!(t.run(&["HSET", "h", "a", "3", "c", "4"]), int(1));
        assert_eq!(t.run(&["HGET", "h", "a"]), bulk("3"));
        assert_eq!(t.run(&["HGET", "h", "zz"]), Frame::Null);
        assert_eq!(t.run(&["HLEN", "h"]), int(3));
        assert_eq!(t.run(&["HKEYS", "h"]), arr(&["a", "b", "c"]));
        assert_eq!(t.run(&["HVALS", "h"]), arr(&["3", "2", "4"]));
        assert_eq!(t.run(&["OBJECT", "ENCODING", "h"]), bulk("listpack"));
        assert_eq!(t.run(&["HDEL", "h", "a", "b", "zz"]), int(2));
        assert_eq!(t.run(&["HDEL", "h", "c"]), int(1));
        assert_eq!(t.run(&["EXISTS", "h"]), int(0));
        assert_eq!(t.run(&["HDEL", "h", "c"]), int(0));
    }

    #[test]
    fn errors_match_redis() {
        let mut t = TestEngine::new();
        t.run(&["SET", "s", "x"]);
        let wrong = error("WRONGTYPE Operation against a key holding the wrong kind of value");
        assert_eq!(t.run(&["HGET", "s", "a"]), wrong);
        assert_eq!(t.run(&["HSET", "s", "a", "1"]), wrong);
        assert_eq!(
            t.run(&["HSET", "h", "a", "1", "b"]),
            error("ERR wrong number of arguments for 'hset' command")
        );
        assert_eq!(
            t.run(&["HINCRBY", "s", "a", "x"]),
            error("ERR value is not an integer or out of range")
        );
        assert_eq!(
            t.run(&["HINCRBYFLOAT", "s", "a", "inf"]),
            error("ERR value is NaN or Infinity")
        );
        t.run(&["HSET", "h", "t", "text", "m", "9223372036854775807"]);
        assert_eq!(
            t.run(&["HINCRBY", "h", "t", "1"]),
            error("ERR hash value is not an integer")
        );
        assert_eq!(
            t.run(&["HINCRBY", "h", "m", "1"]),
            error("ERR increment or decrement would overflow")
        );
        assert_eq!(
            t.run(&["HINCRBYFLOAT", "h", "t", "1"]),
            error("ERR hash value is not a float")
        );
        assert_eq!(
            t.run(&["HRANDFIELD", "h", "1", "x"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"]),
            error("ERR value is out of range")
        );
        assert_eq!(
            t.run(&["HSCAN", "h", "0", "COUNT", "0"]),
            error("ERR syntax error")
        );
        assert_eq!(t.run(&["HSCAN", "h", "x"]), error("ERR invalid cursor"));
    }

    #[test]
    fn increments_and_their_logged_effects() {
        let (mut t, rec) = keel_engine::testing::TestEngine::recording(1_000_000);
        let mut run = |argv: &[&str]| t.run(argv);
        assert_eq!(run(&["HINCRBYFLOAT", "h", "f", "0.1"]), bulk("0.1"));
        assert_eq!(run(&["HINCRBYFLOAT", "h", "f", "0.2"]), bulk("0.3"));
        assert_eq!(run(&["HINCRBY", "h", "n", "-5"]), int(-5));
        assert_eq!(run(&["HINCRBY", "h", "n", "7"]), int(2));
        assert_eq!(run(&["HSTRLEN", "h", "f"]), int(3));
        assert_eq!(run(&["HSETNX", "h", "n", "9"]), int(0));
        assert_eq!(run(&["HDEL", "h", "zz"]), int(0));
        assert_eq!(run(&["HDEL", "h", "n"]), int(1));
        let log = rec.commands();
        let expect: Vec<Vec<&str>> = vec![
            vec!["HSET", "h", "f", "0.1"],
            vec!["HSET", "h", "f", "0.3"],
            vec!["HINCRBY", "h", "n", "-5"],
            vec!["HINCRBY", "h", "n", "7"],
            vec!["HDEL", "h", "n"],
        ];
        assert_eq!(log, expect);
    }

    #[test]
    fn big_hash_converts_and_scans_completely() {
        let mut t = TestEngine::new();
        t.run(&["CONFIG", "SET", "hash-max-listpack-entries", "4"]);
        for i in 0..50 {
            let f = format!("f{i}");
            assert_eq!(t.run(&["HSET", "h", &f, "v"]), int(1));
        }
        assert_eq!(t.run(&["OBJECT", "ENCODING", "h"]), bulk("hashtable"));
        let mut seen = std::collections::BTreeSet::new();
        let mut cursor = "0".to_string();
        loop {
            let Frame::Array(reply) = t.run(&["HSCAN", "h", &cursor, "COUNT", "7"]) else {
                panic!("not an array")
            };
            let [Frame::Bulk(next), Frame::Array(items)] = &reply[..] else {
                panic!("bad shape")
            };
            for pair in items.chunks(2) {
                if let Frame::Bulk(f) = &pair[0] {
                    seen.insert(f.clone());
                }
            }
            cursor = String::from_utf8_lossy(next).into_owned();
            if cursor == "0" {
                break;
            }
        }
        assert_eq!(seen.len(), 50);
        let Frame::Array(picks) = t.run(&["HRANDFIELD", "h", "10"]) else {
            panic!("not an array")
        };
        let distinct: std::collections::BTreeSet<String> =
            picks.iter().map(|f| format!("{f:?}")).collect();
        assert_eq!(distinct.len(), 10);
        let Frame::Array(picks) = t.run(&["HRANDFIELD", "h", "-200", "WITHVALUES"]) else {
            panic!("not an array")
        };
        assert_eq!(picks.len(), 400);
    }
}
