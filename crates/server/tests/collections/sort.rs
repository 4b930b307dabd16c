//! `keel-collections`'s `sort` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_collections::sort::*;
use keel_engine::args::is;
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, KeyFinder, Keys};
use keel_resp::Frame;
use keel_store::hash::HashRef;
use keel_store::list::{self, End};
use keel_store::{zset, Value, ValueType};
use std::cmp::Ordering;

#[cfg(test)]
mod tests {
    use keel_engine::testing::TestEngine;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn bulks(items: &[&str]) -> Frame {
        Frame::Array(
            items
                .iter()
                .map(|s| Frame::Bulk(bytes::Bytes::copy_from_slice(s.as_bytes())))
                .collect(),
        )
    }

    #[test]
    fn numeric_alpha_and_limit() {
        let mut e = TestEngine::new();
        e.run(&["RPUSH", "l", "3", "10", "1", "2.5"]);
        assert_eq!(e.run(&["SORT", "l"]), bulks(&["1", "2.5", "3", "10"]));
        assert_eq!(
            e.run(&["SORT", "l", "ALPHA", "DESC", "LIMIT", "1", "2"]),
            bulks(&["2.5", "10"])
        );
        e.run(&["RPUSH", "l", "x"]);
        assert_eq!(
            e.run(&["SORT", "l"]),
            Frame::error("ERR One or more scores can't be converted into double")
        );
    }

    #[test]
    fn by_and_get_patterns() {
        let mut e = TestEngine::new();
        e.run(&["RPUSH", "l", "a", "b", "c"]);
        e.run(&["MSET", "w_a", "3", "w_b", "1", "w_c", "2", "v_a", "A"]);
        e.run(&["HSET", "h_b", "f", "B"]);
        assert_eq!(
            e.run(&["SORT", "l", "BY", "w_*", "GET", "#", "GET", "v_*", "GET", "h_*->f"]),
            Frame::Array(vec![
                Frame::Bulk("b".into()),
                Frame::Null,
                Frame::Bulk("B".into()),
                Frame::Bulk("c".into()),
                Frame::Null,
                Frame::Null,
                Frame::Bulk("a".into()),
                Frame::Bulk("A".into()),
                Frame::Null,
            ])
        );
        assert_eq!(
            e.run(&["SORT", "l", "BY", "nosort", "DESC"]),
            bulks(&["c", "b", "a"])
        );
    }

    #[test]
    fn store_writes_a_list_and_empty_deletes() {
        let mut e = TestEngine::new();
        e.run(&["SADD", "s", "2", "1"]);
        assert_eq!(e.run(&["SORT", "s", "STORE", "d"]), Frame::Integer(2));
        assert_eq!(e.run(&["LRANGE", "d", "0", "-1"]), bulks(&["1", "2"]));
        assert_eq!(e.run(&["SORT", "nokey", "STORE", "d"]), Frame::Integer(0));
        assert_eq!(e.run(&["EXISTS", "d"]), Frame::Integer(0));
        assert_eq!(
            e.run(&["SORT_RO", "s", "STORE", "d"]),
            Frame::error("ERR syntax error")
        );
    }

    /// Without BY or GET patterns SORT holds only its key's (and STORE's)
    /// shards: it runs while another shard is locked. With a pattern it
    /// waits for every shard.
    #[test]
    fn only_patterns_take_every_shard() {
        let mut e = TestEngine::new();
        e.run(&["RPUSH", "l", "2", "1"]);
        let ks = &e.engine.keyspace;
        let mine = [ks.shard_of(b"l"), ks.shard_of(b"dst")];
        let other = (0..ks.shard_count())
            .find(|s| !mine.contains(s))
            .expect("more than two shards");
        let run_while_locked =
            |argv: &[&str]| e.finishes_while_held(e.engine.keyspace.lock(other), argv);
        assert!(run_while_locked(&[
            "SORT", "l", "LIMIT", "0", "1", "DESC", "GET", "#"
        ]));
        assert!(run_while_locked(&[
            "SORT", "l", "BY", "nosort", "STORE", "dst"
        ]));
        assert!(run_while_locked(&["SORT_RO", "l", "ALPHA"]));
        assert!(!run_while_locked(&["SORT", "l", "BY", "w_*"]));
        assert!(!run_while_locked(&["SORT_RO", "l", "GET", "h_*->f"]));
        assert_eq!(e.run(&["LRANGE", "dst", "0", "-1"]), bulks(&["2", "1"]));
    }

    #[test]
    fn names_other_keys_errs_towards_yes() {
        let argv = |a: &[&str]| -> Vec<bytes::Bytes> {
            a.iter()
                .map(|s| bytes::Bytes::copy_from_slice(s.as_bytes()))
                .collect()
        };
        let f = super::names_other_keys;
        assert!(!f(&argv(&["SORT", "k"])));
        assert!(!f(&argv(&["SORT", "k", "BY", "nosort", "GET", "#"])));
        assert!(!f(&argv(&["SORT", "*", "STORE", "*"])));
        assert!(f(&argv(&["sort", "k", "by", "w_*"])));
        assert!(f(&argv(&["SORT", "k", "LIMIT", "0", "1", "get", "*"])));
        // A key named GET before a starred pattern: taken to name keys.
        assert!(f(&argv(&["SORT", "k", "STORE", "GET", "*"])));
    }

    /// SORT refuses the weights glibc's strtod flags as out of range, tiny
    /// inexact ones included (redis-server 7.0.15 replies).
    #[test]
    fn tiny_weights_follow_strtod() {
        use super::weight;
        assert_eq!(weight(b"1e-310"), None);
        assert_eq!(weight(b"-4.9406564584124654e-324"), None);
        assert_eq!(weight(b"0x1.0000000000001p-1060"), None);
        assert_eq!(weight(b"0x1p-1074"), Some(f64::from_bits(1)));
        assert_eq!(weight(b"0x1.8p-1070"), Some(f64::from_bits(24)));
        assert_eq!(weight(b"2.2250738585072014e-308"), Some(f64::MIN_POSITIVE));
        assert_eq!(weight(b" 0x10"), Some(16.0));
    }
}
