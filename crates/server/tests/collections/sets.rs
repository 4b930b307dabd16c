//! `keel-collections`'s `sets` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_collections::sets::*;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::scan::parse_cursor;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::glob::glob_match;
use keel_store::packed::Packed;
use keel_store::{Value, ValueType};

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn members(f: Frame) -> Vec<String> {
        let items = match f {
            Frame::Set(v) | Frame::Array(v) => v,
            other => panic!("not a collection: {other:?}"),
        };
        let mut out: Vec<String> = items
            .into_iter()
            .map(|i| match i {
                Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
                other => panic!("not a bulk: {other:?}"),
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn add_remove_and_delete_when_empty() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["SADD", "s", "b", "a", "b", "7"]), int(3));
        assert_eq!(members(t.run(&["SMEMBERS", "s"])), ["7", "a", "b"]);
        assert_eq!(t.run(&["SISMEMBER", "s", "7"]), int(1));
        assert_eq!(t.run(&["SISMEMBER", "s", "07"]), int(0));
        assert_eq!(t.run(&["SREM", "s", "a", "b", "7", "x"]), int(3));
        assert_eq!(t.run(&["EXISTS", "s"]), int(0));
        t.run(&["SET", "str", "v"]);
        assert_eq!(
            t.run(&["SADD", "str", "a"]),
            error("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
    }

    #[test]
    fn spop_and_srandmember_on_a_large_set() {
        let mut t = TestEngine::new();
        let many: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
        let mut argv = vec!["SADD", "s"];
        argv.extend(many.iter().map(String::as_str));
        assert_eq!(t.run(&argv), int(1000));
        assert_eq!(t.run(&["OBJECT", "ENCODING", "s"]), bulk("hashtable"));
        let got = members(t.run(&["SPOP", "s", "400"]));
        assert_eq!(got.len(), 400);
        got.windows(2).for_each(|w| assert_ne!(w[0], w[1]));
        assert_eq!(t.run(&["SCARD", "s"]), int(600));
        let picked = members(t.run(&["SRANDMEMBER", "s", "599"]));
        assert_eq!(picked.len(), 599);
        picked.windows(2).for_each(|w| assert_ne!(w[0], w[1]));
        assert_eq!(members(t.run(&["SRANDMEMBER", "s", "-2000"])).len(), 2000);
        // Answered with repeats, as Redis does, up to what proto-max-bulk-len
        // lets the reply hold.
        assert_eq!(
            members(t.run(&["SRANDMEMBER", "s", "-200000"])).len(),
            200_000
        );
        assert!(matches!(
            t.run(&["SRANDMEMBER", "s", "-9223372036854775807"]),
            Frame::Error(e) if e.starts_with(b"ERR reply too large")
        ));
        // Popping most of what is left rebuilds a small remainder compactly.
        assert_eq!(members(t.run(&["SPOP", "s", "590"])).len(), 590);
        assert_eq!(t.run(&["OBJECT", "ENCODING", "s"]), bulk("listpack"));
        assert_eq!(t.run(&["SCARD", "s"]), int(10));
    }

    #[test]
    fn spop_is_logged_as_what_it_removed() {
        let (mut t, rec) = keel_engine::testing::TestEngine::recording(1_700_000_000_000);
        let mut run = |argv: &[&str]| t.run(argv);
        run(&["SADD", "s", "a", "b", "c", "d"]);
        let one = members(Frame::Array(vec![run(&["SPOP", "s"])]));
        let two = members(run(&["SPOP", "s", "2"]));
        run(&["SPOP", "s", "5"]);
        run(&["SPOP", "s", "0"]);
        run(&["SPOP", "missing"]);
        let log = rec.commands();
        let mut srem_two = vec!["SREM".to_string(), "s".to_string()];
        let mut logged_two = log[2][2..].to_vec();
        logged_two.sort();
        assert_eq!(logged_two, two);
        srem_two.extend(log[2][2..].iter().cloned());
        let expect = vec![
            vec!["SADD", "s", "a", "b", "c", "d"]
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>(),
            vec!["SREM".to_string(), "s".to_string(), one[0].clone()],
            srem_two,
            vec!["DEL".to_string(), "s".to_string()],
        ];
        assert_eq!(log, expect);
    }

    #[test]
    fn store_commands_touch_only_the_destination() {
        let mut t = TestEngine::new();
        t.run(&["SADD", "a", "1", "2"]);
        t.run(&["SADD", "b", "2"]);
        let mut other = t.other_session();
        t.run_as(&mut other, &["WATCH", "a", "b"]);
        t.run(&["SINTERSTORE", "d", "a", "b"]);
        t.run_as(&mut other, &["MULTI"]);
        t.run_as(&mut other, &["SET", "x", "1"]);
        assert_eq!(t.run_as(&mut other, &["EXEC"]), Frame::Array(vec![ok()]));
        t.run_as(&mut other, &["WATCH", "d"]);
        t.run(&["SDIFFSTORE", "d", "a", "b"]);
        t.run_as(&mut other, &["MULTI"]);
        t.run_as(&mut other, &["SET", "x", "1"]);
        assert_eq!(t.run_as(&mut other, &["EXEC"]), Frame::NullArray);
        assert_eq!(members(t.run(&["SMEMBERS", "d"])), ["1"]);
    }

    #[test]
    fn reads_count_hits_and_misses() {
        let mut t = TestEngine::new();
        t.run(&["SADD", "s", "a"]);
        t.run(&["SCARD", "s"]);
        t.run(&["SISMEMBER", "nope", "a"]);
        t.run(&["SINTER", "s", "nope"]);
        let stats = &t.engine.stats;
        assert_eq!(stats.keyspace_hits(), 2);
        assert_eq!(stats.keyspace_misses(), 2);
    }
}
