//! `keel-streams`'s `xgroups` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::stream::groups::{AutoClaimed, Claim, ClaimStamp, StreamCounters};
use keel_store::stream::{Group as CGroup, Stream, StreamId};
use keel_store::Value;
use keel_streams::streams::BLOCKED_DEFAULT_COUNT;
use keel_streams::xgroups::*;
use std::time::Duration;

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;
    use keel_store::stream::{NodeLimits, Stream, StreamId};
    use keel_store::Value;

    /// A stream `key` holding entries `1-0` .. `n-0`, each `f vN`, put in
    /// place directly (the commands under test only read and group it).
    fn seed(t: &TestEngine, key: &str, n: u64) {
        let mut s = Stream::new();
        for i in 1..=n {
            let v = format!("v{i}");
            s.append(
                StreamId::new(i, 0),
                &[(b"f".as_slice(), v.as_bytes())],
                NodeLimits::default(),
            );
        }
        let shard = t.engine.keyspace.shard_of(key.as_bytes());
        let now = keel_engine::clock::Clock::now_ms(&*t.clock);
        t.engine.keyspace.lock(shard).db(0).insert(
            key.as_bytes(),
            Value::Stream(Box::new(s)),
            0,
            now,
        );
    }

    fn arr(items: Vec<Frame>) -> Frame {
        Frame::Array(items)
    }

    fn entry(i: u64) -> Frame {
        arr(vec![
            bulk(&format!("{i}-0")),
            arr(vec![bulk("f"), bulk(&format!("v{i}"))]),
        ])
    }

    #[test]
    fn read_ack_and_pending() {
        let mut t = TestEngine::new();
        seed(&t, "s", 3);
        assert_eq!(t.run(&["XGROUP", "CREATE", "s", "g", "0"]), ok());
        let r = t.run(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "COUNT",
            "2",
            "STREAMS",
            "s",
            ">",
        ]);
        assert_eq!(
            r,
            arr(vec![arr(vec![bulk("s"), arr(vec![entry(1), entry(2)])])])
        );
        assert_eq!(
            t.run(&["XPENDING", "s", "g"]),
            arr(vec![
                int(2),
                bulk("1-0"),
                bulk("2-0"),
                arr(vec![arr(vec![bulk("c"), bulk("2")])])
            ])
        );
        t.clock.advance(30);
        let rows = t.run(&["XPENDING", "s", "g", "IDLE", "30", "-", "+", "10", "c"]);
        assert_eq!(
            rows,
            arr(vec![
                arr(vec![bulk("1-0"), bulk("c"), int(30), int(1)]),
                arr(vec![bulk("2-0"), bulk("c"), int(30), int(1)]),
            ])
        );
        assert_eq!(t.run(&["XACK", "s", "g", "1-0", "1-0", "7"]), int(1));
        assert_eq!(
            t.run(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"]),
            arr(vec![arr(vec![bulk("s"), arr(vec![entry(2)])])])
        );
        assert_eq!(
            t.run(&["XINFO", "CONSUMERS", "s", "g"]),
            arr(vec![Frame::Map(vec![
                (bulk("name"), bulk("c")),
                (bulk("pending"), int(1)),
                (bulk("idle"), int(0)),
            ])])
        );
        assert_eq!(
            t.run(&["XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"]),
            error(
                "NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option"
            )
        );
    }

    #[test]
    fn claims_are_logged_as_xclaim_force_justid() {
        let (mut t, rec) = TestEngine::recording(1_000);
        seed(&t, "s", 2);
        t.run(&["XGROUP", "CREATE", "s", "g", "0"]);
        t.run(&["XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">"]);
        t.run(&["XREADGROUP", "GROUP", "g", "h", "STREAMS", "s", "0"]);
        t.clock.advance(5);
        assert_eq!(
            t.run(&["XCLAIM", "s", "g", "b", "0", "2-0", "JUSTID", "LASTID", "9-0"]),
            arr(vec![bulk("2-0")])
        );
        t.run(&["XCLAIM", "s", "g", "b", "0", "5-0", "LASTID", "10-0"]);
        t.run(&["XGROUP", "SETID", "s", "g", "0"]);
        t.run(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "n",
            "NOACK",
            "STREAMS",
            "s",
            ">",
        ]);
        let claim = |c: &str, id: &str, time: &str, n: &str, last: &str| {
            [
                "XCLAIM",
                "s",
                "g",
                c,
                "0",
                id,
                "TIME",
                time,
                "RETRYCOUNT",
                n,
                "FORCE",
                "JUSTID",
                "LASTID",
                last,
            ]
            .map(String::from)
            .to_vec()
        };
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            rec.commands(),
            vec![
                words(&["XGROUP", "CREATE", "s", "g", "0"]),
                words(&["MULTI"]),
                claim("a", "1-0", "1000", "1", "1-0"),
                claim("a", "2-0", "1000", "1", "2-0"),
                words(&["EXEC"]),
                claim("b", "2-0", "1005", "1", "9-0"),
                words(&["XGROUP", "SETID", "s", "g", "10-0", "ENTRIESREAD", "2"]),
                words(&["XGROUP", "SETID", "s", "g", "0"]),
                words(&["MULTI"]),
                words(&["XGROUP", "CREATECONSUMER", "s", "g", "n"]),
                words(&["XGROUP", "SETID", "s", "g", "2-0", "ENTRIESREAD", "2"]),
                words(&["EXEC"]),
            ]
        );
    }

    #[test]
    fn autoclaim_reports_deleted_entries() {
        let mut t = TestEngine::new();
        seed(&t, "s", 3);
        t.run(&["XGROUP", "CREATE", "s", "g", "0"]);
        t.run(&["XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">"]);
        // Drop entry 2-0 from the stream behind the group's back.
        let shard = t.engine.keyspace.shard_of(b"s");
        let now = keel_engine::clock::Clock::now_ms(&*t.clock);
        if let Some(e) = t.engine.keyspace.lock(shard).db(0).get_mut(b"s", now) {
            if let Value::Stream(s) = &mut e.value {
                assert!(s.delete(StreamId::new(2, 0)));
            }
        }
        assert_eq!(
            t.run(&[
                "XAUTOCLAIM",
                "s",
                "g",
                "b",
                "0",
                "0",
                "COUNT",
                "2",
                "JUSTID"
            ]),
            arr(vec![
                bulk("3-0"),
                arr(vec![bulk("1-0")]),
                arr(vec![bulk("2-0")])
            ])
        );
        assert_eq!(
            t.run(&["XAUTOCLAIM", "s", "g", "b", "0", "3-0"]),
            arr(vec![bulk("0-0"), arr(vec![entry(3)]), arr(vec![])])
        );
        assert_eq!(
            t.run(&["XAUTOCLAIM", "s", "g", "b", "0", "0", "COUNT", "0"]),
            error("ERR COUNT must be > 0")
        );
    }

    #[test]
    fn blocked_readers_are_served_by_xadd_and_told_when_the_group_goes() {
        let mut t = TestEngine::new();
        t.run(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
        let mut a = t.other_session();
        let mut b = t.other_session();
        t.run_as(
            &mut a,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "a",
                "BLOCK",
                "0",
                "STREAMS",
                "s",
                ">",
            ],
        );
        t.run_as(
            &mut b,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "b",
                "BLOCK",
                "0",
                "STREAMS",
                "s",
                ">",
            ],
        );
        assert!(a.blocked.is_some() && b.blocked.is_some());
        // No consumer exists until one is served.
        assert_eq!(t.run(&["XINFO", "CONSUMERS", "s", "g"]), arr(vec![]));
        t.run(&["XADD", "s", "1-0", "f", "v1"]);
        assert_eq!(
            t.engine.block_reply(&mut a),
            Some(arr(vec![arr(vec![bulk("s"), arr(vec![entry(1)])])]))
        );
        // The entry went to the first reader; the second still waits.
        assert_eq!(t.engine.block_reply(&mut b), None);
        assert_eq!(t.run(&["XGROUP", "DESTROY", "s", "g"]), int(1));
        assert_eq!(
            t.engine.block_reply(&mut b),
            Some(error(
                "NOGROUP the consumer group this client was blocked on no longer exists"
            ))
        );
        assert_eq!(t.engine.blocking.blocked_clients(), 0);
    }

    #[test]
    fn xgroup_and_xinfo_errors_follow_redis() {
        let mut t = TestEngine::new();
        assert_eq!(
            t.run(&["XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "-2"]),
            error("ERR value for ENTRIESREAD must be positive or -1")
        );
        assert_eq!(
            t.run(&["XGROUP", "create", "s", "g", "0", "nope"]),
            error("ERR unknown subcommand or wrong number of arguments for 'create'. Try XGROUP HELP.")
        );
        assert_eq!(
            t.run(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]),
            ok()
        );
        assert_eq!(
            t.run(&["XGROUP", "CREATE", "s", "g", "$"]),
            error("BUSYGROUP Consumer Group name already exists")
        );
        assert_eq!(
            t.run(&["XINFO", "STREAM", "nokey"]),
            error("ERR no such key")
        );
        assert_eq!(
            t.run(&["XINFO", "CONSUMERS", "s", "x"]),
            error("NOGROUP No such consumer group 'x' for key name 's'")
        );
        assert_eq!(t.run(&["XGROUP", "DESTROY", "s", "g"]), int(1));
        assert_eq!(t.run(&["XINFO", "GROUPS", "s"]), arr(vec![]));
    }
}
