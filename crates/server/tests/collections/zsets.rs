//! `keel-collections`'s `zsets` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_collections::zsets::*;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::zset::{self, AddFlags, AddOutcome, LexRange, ScoreRange};
use keel_store::{Value, ValueType};

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

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
    #[test]
    fn stores_invalidate_only_the_destination() {
        let mut t = TestEngine::new();
        t.run(&["ZADD", "src", "1", "a", "2", "b"]);
        let mut other = t.other_session();
        t.run(&["WATCH", "src"]);
        assert_eq!(
            t.run_as(&mut other, &["ZUNIONSTORE", "d", "1", "src"]),
            int(2)
        );
        t.run(&["MULTI"]);
        t.run(&["PING"]);
        assert_eq!(t.run(&["EXEC"]), Frame::Array(vec![Frame::simple("PONG")]));
        t.run(&["WATCH", "d"]);
        assert_eq!(
            t.run_as(&mut other, &["ZRANGESTORE", "d", "src", "0", "0"]),
            int(1)
        );
        t.run(&["MULTI"]);
        t.run(&["PING"]);
        assert_eq!(t.run(&["EXEC"]), Frame::NullArray);
        t.run(&["ZADD", "other", "5", "x"]);
        t.run(&["WATCH", "other"]);
        assert_eq!(
            t.run_as(&mut other, &["ZMPOP", "2", "src", "other", "MIN"]),
            Frame::Array(vec![
                bulk("src"),
                Frame::Array(vec![Frame::Array(vec![bulk("a"), d(1.0)])])
            ])
        );
        t.run(&["MULTI"]);
        t.run(&["PING"]);
        assert_eq!(t.run(&["EXEC"]), Frame::Array(vec![Frame::simple("PONG")]));
    }

    #[test]
    fn combine_and_remove_ranges() {
        let mut t = TestEngine::new();
        t.run(&["ZADD", "a", "1", "x", "2", "y"]);
        t.run(&["ZADD", "b", "3", "y", "4", "z"]);
        assert_eq!(
            t.run(&["ZINTER", "2", "a", "b", "WITHSCORES"]),
            Frame::Array(vec![bulk("y"), d(5.0)])
        );
        assert_eq!(
            t.run(&["ZUNION", "2", "a", "b", "AGGREGATE", "MAX"]),
            arr(&["x", "y", "z"])
        );
        assert_eq!(t.run(&["ZDIFF", "2", "b", "a"]), arr(&["z"]));
        assert_eq!(t.run(&["ZINTERCARD", "2", "a", "b"]), int(1));
        assert_eq!(t.run(&["ZREMRANGEBYSCORE", "b", "(3", "+inf"]), int(1));
        assert_eq!(t.run(&["ZREMRANGEBYLEX", "b", "-", "+"]), int(1));
        assert_eq!(t.run(&["EXISTS", "b"]), int(0));
        assert_eq!(
            t.run(&["ZRANK", "a", "y", "WITHSCORE"]),
            Frame::Array(vec![int(1), d(2.0)])
        );
        assert_eq!(t.run(&["ZREVRANK", "a", "y"]), int(0));
        assert_eq!(
            t.run(&["ZSCAN", "a", "0"]),
            Frame::Array(vec![bulk("0"), arr(&["x", "1", "y", "2"])])
        );
    }
}
