//! `keel-keyspace`'s `keys` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::scan::{parse_cursor, scan_options, scan_reply, ScanOptions};
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_keyspace::keys::*;
use keel_resp::Frame;
use keel_store::glob::glob_match;
use keel_store::{Keyspace, ValueType};

#[cfg(test)]
mod tests {
    use keel_engine::clock::Clock;
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn arr(items: &[&str]) -> Frame {
        Frame::Array(items.iter().map(|s| bulk(s)).collect())
    }

    fn sorted_keys(f: Frame) -> Vec<String> {
        let Frame::Array(items) = f else {
            panic!("not an array: {f:?}")
        };
        let mut v: Vec<String> = items
            .into_iter()
            .map(|i| match i {
                Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
                other => panic!("not a bulk: {other:?}"),
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn expiry_effects_are_absolute_or_deletions() {
        let clock = std::sync::Arc::new(keel_engine::clock::ManualClock::new(1_700_000_000_000));
        let sink = std::sync::Arc::new(keel_engine::testing::Recorder::default());
        let engine = keel_engine::engine::EngineBuilder {
            commands: keel_server::families::table(),
            families: Box::new(keel_server::families::AllFamilies),
            clock: clock.clone(),
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
        run(&["SET", "k", "v"]);
        assert_eq!(run(&["EXPIRE", "k", "10", "NX"]), int(1));
        assert_eq!(run(&["EXPIRE", "k", "10", "NX"]), int(0));
        assert_eq!(run(&["PEXPIREAT", "k", "1700000005000"]), int(1));
        assert_eq!(run(&["PERSIST", "k"]), int(1));
        assert_eq!(run(&["EXPIRE", "k", "-1"]), int(1));
        run(&["SET", "j", "v", "PX", "5"]);
        clock.advance(5);
        assert_eq!(run(&["TTL", "j"]), int(-2));
        let log: Vec<Vec<String>> = sink.commands();
        let expect: Vec<Vec<&str>> = vec![
            vec!["SET", "k", "v"],
            vec!["PEXPIREAT", "k", "1700000010000"],
            vec!["PEXPIREAT", "k", "1700000005000"],
            vec!["PERSIST", "k"],
            vec!["DEL", "k"],
            vec!["SET", "j", "v", "PXAT", "1700000000005"],
            vec!["DEL", "j"],
        ];
        assert_eq!(log, expect);
    }

    #[test]
    fn move_and_copy_invalidate_watchers_of_the_target_db() {
        let mut t = TestEngine::new();
        let mut other = t.other_session();
        other.set_db(1);
        t.run(&["SET", "k", "v"]);
        // Only db 1's "k" is watched, so only a write to the target db can abort.
        t.run_as(&mut other, &["WATCH", "k"]);
        t.run_as(&mut other, &["MULTI"]);
        t.run_as(&mut other, &["PING"]);
        assert_eq!(t.run(&["COPY", "k", "k", "DB", "1"]), int(1));
        assert_eq!(t.run_as(&mut other, &["EXEC"]), Frame::NullArray);
        t.run_as(&mut other, &["DEL", "k"]);
        t.run_as(&mut other, &["WATCH", "k"]);
        t.run_as(&mut other, &["MULTI"]);
        t.run_as(&mut other, &["PING"]);
        assert_eq!(t.run(&["MOVE", "k", "1"]), int(1));
        assert_eq!(t.run_as(&mut other, &["EXEC"]), Frame::NullArray);
    }

    #[test]
    fn scan_returns_keys_present_throughout_despite_writes() {
        let mut t = TestEngine::new();
        for i in 0..300 {
            t.run(&["SET", &format!("stay{i}"), "v"]);
            t.run(&["SET", &format!("churn{i}"), "v"]);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = "0".to_string();
        let mut round = 0;
        loop {
            let Frame::Array(reply) = t.run(&["SCAN", &cursor, "COUNT", "5"]) else {
                panic!()
            };
            let [Frame::Bulk(c), keys] = &reply[..] else {
                panic!()
            };
            seen.extend(sorted_keys(keys.clone()));
            cursor = String::from_utf8_lossy(c).into_owned();
            if cursor == "0" {
                break;
            }
            t.run(&["DEL", &format!("churn{round}")]);
            t.run(&["SET", &format!("new{round}"), "v"]);
            round += 1;
        }
        for i in 0..300 {
            assert!(seen.contains(&format!("stay{i}")), "missed stay{i}");
        }
    }

    #[test]
    fn del_exists_unlink_touch_type() {
        let mut t = TestEngine::new();
        for k in ["a", "b", "c"] {
            t.run(&["SET", k, "v"]);
        }
        assert_eq!(t.run(&["EXISTS", "a", "a", "b", "zz"]), int(3));
        assert_eq!(t.run(&["TOUCH", "a", "zz", "b"]), int(2));
        assert_eq!(t.run(&["TYPE", "a"]), Frame::simple("string"));
        assert_eq!(t.run(&["TYPE", "zz"]), Frame::simple("none"));
        assert_eq!(t.run(&["DEL", "a", "a", "zz"]), int(1));
        assert_eq!(t.run(&["UNLINK", "b", "c"]), int(2));
        assert_eq!(t.run(&["EXISTS", "a", "b", "c"]), int(0));
        assert_eq!(
            t.run(&["DEL"]),
            error("ERR wrong number of arguments for 'del' command")
        );
        assert_eq!(
            t.run(&["TYPE", "a", "b"]),
            error("ERR wrong number of arguments for 'type' command")
        );
    }

    #[test]
    fn expire_sets_and_reports_ttl() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["EXPIRE", "k", "10"]), int(0));
        assert_eq!(t.run(&["TTL", "k"]), int(-2));
        assert_eq!(t.run(&["PTTL", "k"]), int(-2));
        assert_eq!(t.run(&["EXPIRETIME", "k"]), int(-2));
        t.run(&["SET", "k", "v"]);
        assert_eq!(t.run(&["TTL", "k"]), int(-1));
        assert_eq!(t.run(&["PEXPIRETIME", "k"]), int(-1));
        assert_eq!(t.run(&["EXPIRE", "k", "10"]), int(1));
        let now = t.clock.now_ms() as i64;
        assert_eq!(t.run(&["PTTL", "k"]), int(10_000));
        assert_eq!(t.run(&["PEXPIRETIME", "k"]), int(now + 10_000));
        assert_eq!(t.run(&["EXPIRETIME", "k"]), int((now + 10_000) / 1000));
        t.clock.advance(500);
        // 9.5 s rounds up, 9.499 s rounds down.
        assert_eq!(t.run(&["TTL", "k"]), int(10));
        t.clock.advance(1);
        assert_eq!(t.run(&["TTL", "k"]), int(9));
        assert_eq!(t.run(&["PEXPIRE", "k", "100"]), int(1));
        assert_eq!(t.run(&["PTTL", "k"]), int(100));
        assert_eq!(
            t.run(&["PEXPIREAT", "k", &(now + 2000).to_string()]),
            int(1)
        );
        assert_eq!(
            t.run(&["EXPIREAT", "k", &(now / 1000 + 100).to_string()]),
            int(1)
        );
        assert_eq!(t.run(&["EXPIRETIME", "k"]), int(now / 1000 + 100));
        assert_eq!(t.run(&["PERSIST", "k"]), int(1));
        assert_eq!(t.run(&["PERSIST", "k"]), int(0));
        assert_eq!(t.run(&["PERSIST", "nokey"]), int(0));
        assert_eq!(t.run(&["TTL", "k"]), int(-1));
        t.run(&["PEXPIRE", "k", "10"]);
        t.clock.advance(10);
        assert_eq!(t.run(&["TTL", "k"]), int(-2));
        assert_eq!(t.run(&["EXISTS", "k"]), int(0));
    }

    #[test]
    fn expire_options_follow_redis7() {
        let mut t = TestEngine::new();
        t.run(&["SET", "k", "v"]);
        assert_eq!(t.run(&["EXPIRE", "k", "100", "XX"]), int(0));
        assert_eq!(t.run(&["EXPIRE", "k", "100", "GT"]), int(0));
        assert_eq!(t.run(&["EXPIRE", "k", "100", "LT"]), int(1));
        assert_eq!(t.run(&["EXPIRE", "k", "50", "NX"]), int(0));
        assert_eq!(t.run(&["EXPIRE", "k", "200", "LT"]), int(0));
        assert_eq!(t.run(&["EXPIRE", "k", "100", "GT"]), int(0));
        assert_eq!(t.run(&["EXPIRE", "k", "200", "gt"]), int(1));
        assert_eq!(t.run(&["EXPIRE", "k", "50", "xx", "lt"]), int(1));
        assert_eq!(t.run(&["TTL", "k"]), int(50));
        assert_eq!(t.run(&["EXPIRE", "k", "60", "nx", "nx"]), int(0));
        assert_eq!(
            t.run(&["EXPIRE", "k", "10", "NX", "GT"]),
            error("ERR NX and XX, GT or LT options at the same time are not compatible")
        );
        assert_eq!(
            t.run(&["EXPIRE", "k", "10", "GT", "LT"]),
            error("ERR GT and LT options at the same time are not compatible")
        );
        // Options are checked before the number.
        assert_eq!(
            t.run(&["EXPIRE", "k", "abc", "foo"]),
            error("ERR Unsupported option foo")
        );
        assert_eq!(
            t.run(&["EXPIRE", "k", "abc"]),
            error("ERR value is not an integer or out of range")
        );
        assert_eq!(
            t.run(&["EXPIRE", "k", "9223372036854776"]),
            error("ERR invalid expire time in 'expire' command")
        );
        assert_eq!(
            t.run(&["EXPIRE", "k", "-9223372036854776"]),
            error("ERR invalid expire time in 'expire' command")
        );
        assert_eq!(
            t.run(&["PEXPIRE", "k", "9223372036854775807"]),
            error("ERR invalid expire time in 'pexpire' command")
        );
        assert_eq!(
            t.run(&["EXPIREAT", "k", "9223372036854776"]),
            error("ERR invalid expire time in 'expireat' command")
        );
        assert_eq!(t.run(&["PEXPIREAT", "k", "9223372036854775807"]), int(1));
        assert_eq!(t.run(&["PEXPIRETIME", "k"]), int(i64::MAX));
        assert_eq!(
            t.run(&["EXPIRE", "k"]),
            error("ERR wrong number of arguments for 'expire' command")
        );
    }

    #[test]
    fn past_deadline_deletes() {
        let mut t = TestEngine::new();
        t.run(&["SET", "a", "v"]);
        t.run(&["SET", "b", "v"]);
        t.run(&["SET", "c", "v"]);
        assert_eq!(t.run(&["EXPIRE", "a", "0"]), int(1));
        assert_eq!(t.run(&["PEXPIRE", "b", "-5"]), int(1));
        assert_eq!(t.run(&["EXPIREAT", "c", "1"]), int(1));
        assert_eq!(t.run(&["EXISTS", "a", "b", "c"]), int(0));
        // GT with no current expiry refuses even a past time.
        t.run(&["SET", "d", "v"]);
        assert_eq!(t.run(&["EXPIRE", "d", "-1", "GT"]), int(0));
        assert_eq!(t.run(&["EXISTS", "d"]), int(1));
        // LT with no current expiry accepts it.
        assert_eq!(t.run(&["EXPIRE", "d", "-1", "LT"]), int(1));
        assert_eq!(t.run(&["EXISTS", "d"]), int(0));
    }

    #[test]
    fn keys_and_scan() {
        let mut t = TestEngine::new();
        for i in 0..50 {
            t.run(&["SET", &format!("user:{i}"), "v"]);
        }
        t.run(&["SET", "other", "v"]);
        t.run(&["SET", "gone", "v", "PX", "5"]);
        t.clock.advance(5);
        assert_eq!(sorted_keys(t.run(&["KEYS", "*"])).len(), 51);
        assert_eq!(sorted_keys(t.run(&["KEYS", "user:1?"])).len(), 10);
        assert_eq!(t.run(&["KEYS", "oth[e]r"]), arr(&["other"]));
        assert_eq!(t.run(&["KEYS", "nomatch*"]), arr(&[]));
        let mut seen = Vec::new();
        let mut cursor = "0".to_string();
        let mut calls = 0;
        loop {
            let Frame::Array(reply) = t.run(&["SCAN", &cursor, "COUNT", "7"]) else {
                panic!("scan reply")
            };
            let [Frame::Bulk(c), keys] = &reply[..] else {
                panic!("scan shape")
            };
            seen.extend(sorted_keys(keys.clone()));
            cursor = String::from_utf8_lossy(c).into_owned();
            calls += 1;
            if cursor == "0" {
                break;
            }
        }
        assert!(calls > 2, "COUNT should split the walk");
        seen.sort();
        assert_eq!(seen.len(), 51);
        seen.dedup();
        assert_eq!(seen.len(), 51);
        let Frame::Array(reply) = t.run(&[
            "SCAN", "0", "MATCH", "oth*", "COUNT", "1000", "TYPE", "STRING",
        ]) else {
            panic!()
        };
        assert_eq!(reply, vec![bulk("0"), arr(&["other"])]);
        let Frame::Array(reply) = t.run(&["SCAN", "0", "COUNT", "1000", "TYPE", "nosuch"]) else {
            panic!()
        };
        assert_eq!(reply, vec![bulk("0"), arr(&[])]);
        assert_eq!(t.run(&["SCAN", "x"]), error("ERR invalid cursor"));
        assert_eq!(t.run(&["SCAN", " 0"]), error("ERR invalid cursor"));
        assert_eq!(
            t.run(&["SCAN", "18446744073709551616"]),
            error("ERR invalid cursor")
        );
        assert_eq!(
            t.run(&["SCAN", "0", "COUNT", "0"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["SCAN", "0", "COUNT", "x"]),
            error("ERR value is not an integer or out of range")
        );
        assert_eq!(t.run(&["SCAN", "0", "MATCH"]), error("ERR syntax error"));
        assert_eq!(t.run(&["SCAN", "0", "FOO", "x"]), error("ERR syntax error"));
        // A cursor past the last shard ends the walk.
        let Frame::Array(reply) = t.run(&["SCAN", "-1"]) else {
            panic!()
        };
        assert_eq!(reply, vec![bulk("0"), arr(&[])]);
    }

    #[test]
    fn rename_and_renamenx() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["RENAME", "a", "b"]), error("ERR no such key"));
        assert_eq!(t.run(&["RENAMENX", "a", "b"]), error("ERR no such key"));
        assert_eq!(t.run(&["RENAME", "a", "a"]), error("ERR no such key"));
        t.run(&["SET", "a", "1", "EX", "100"]);
        assert_eq!(t.run(&["RENAME", "a", "a"]), ok());
        assert_eq!(t.run(&["RENAMENX", "a", "a"]), int(0));
        t.run(&["SET", "b", "2"]);
        assert_eq!(t.run(&["RENAMENX", "a", "b"]), int(0));
        assert_eq!(t.run(&["RENAME", "a", "b"]), ok());
        assert_eq!(t.run(&["GET", "b"]), bulk("1"));
        assert_eq!(t.run(&["TTL", "b"]), int(100));
        assert_eq!(t.run(&["EXISTS", "a"]), int(0));
        assert_eq!(t.run(&["RENAMENX", "b", "c"]), int(1));
        assert_eq!(t.run(&["GET", "c"]), bulk("1"));
        assert_eq!(t.run(&["TTL", "c"]), int(100));
        t.clock.advance(100_000);
        assert_eq!(t.run(&["GET", "c"]), Frame::Null);
        assert_eq!(t.run(&["RENAME", "c", "d"]), error("ERR no such key"));
    }

    #[test]
    fn randomkey_returns_live_keys_only() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["RANDOMKEY"]), Frame::Null);
        for i in 0..20 {
            t.run(&["SET", &format!("tmp{i}"), "v", "PX", "10"]);
        }
        t.run(&["SET", "live", "v"]);
        t.clock.advance(10);
        for _ in 0..10 {
            assert_eq!(t.run(&["RANDOMKEY"]), bulk("live"));
        }
        t.run(&["DEL", "live"]);
        assert_eq!(t.run(&["RANDOMKEY"]), Frame::Null);
        let mut seen = std::collections::HashSet::new();
        for i in 0..4 {
            t.run(&["SET", &format!("k{i}"), "v"]);
        }
        for _ in 0..200 {
            if let Frame::Bulk(b) = t.run(&["RANDOMKEY"]) {
                seen.insert(b);
            }
        }
        assert_eq!(seen.len(), 4);
    }

    #[test]
    fn copy_and_move() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["COPY", "a", "b"]), int(0));
        t.run(&["SET", "a", "1", "EX", "100"]);
        assert_eq!(
            t.run(&["COPY", "a", "a"]),
            error("ERR source and destination objects are the same")
        );
        assert_eq!(
            t.run(&["COPY", "a", "a", "DB", "0"]),
            error("ERR source and destination objects are the same")
        );
        assert_eq!(t.run(&["COPY", "a", "b"]), int(1));
        assert_eq!(t.run(&["TTL", "b"]), int(100));
        t.run(&["SET", "b", "2"]);
        assert_eq!(t.run(&["COPY", "a", "b"]), int(0));
        assert_eq!(t.run(&["COPY", "a", "b", "REPLACE"]), int(1));
        assert_eq!(t.run(&["GET", "b"]), bulk("1"));
        assert_eq!(t.run(&["COPY", "a", "a", "DB", "1"]), int(1));
        assert_eq!(
            t.run(&["COPY", "a", "b", "DB", "16"]),
            error("ERR DB index is out of range")
        );
        assert_eq!(
            t.run(&["COPY", "a", "b", "DB", "-1"]),
            error("ERR DB index is out of range")
        );
        assert_eq!(
            t.run(&["COPY", "a", "b", "DB", "x"]),
            error("ERR value is not an integer or out of range")
        );
        assert_eq!(
            t.run(&["COPY", "a", "b", "DB", "2147483648"]),
            error("ERR value is out of range, value must between -2147483648 and 2147483647")
        );
        assert_eq!(t.run(&["COPY", "a", "b", "DB"]), error("ERR syntax error"));
        assert_eq!(t.run(&["COPY", "a", "b", "foo"]), error("ERR syntax error"));

        assert_eq!(
            t.run(&["MOVE", "a", "0"]),
            error("ERR source and destination objects are the same")
        );
        assert_eq!(
            t.run(&["MOVE", "a", "16"]),
            error("ERR DB index is out of range")
        );
        assert_eq!(
            t.run(&["MOVE", "a", "x"]),
            error("ERR value is not an integer or out of range")
        );
        // "a" already exists in db 1 from the COPY above.
        assert_eq!(t.run(&["MOVE", "a", "1"]), int(0));
        assert_eq!(t.run(&["MOVE", "b", "2"]), int(1));
        assert_eq!(t.run(&["MOVE", "nokey", "2"]), int(0));
        assert_eq!(t.run(&["EXISTS", "b"]), int(0));
        t.session.set_db(2);
        assert_eq!(t.run(&["GET", "b"]), bulk("1"));
        assert_eq!(t.run(&["TTL", "b"]), int(100));
        t.session.set_db(1);
        assert_eq!(t.run(&["GET", "a"]), bulk("1"));
        assert_eq!(t.run(&["TTL", "a"]), int(100));
    }

    #[test]
    fn object_subcommands() {
        let mut t = TestEngine::new();
        t.run(&["SET", "n", "12345"]);
        t.run(&["SET", "s", "hello"]);
        t.run(&["SET", "r", &"x".repeat(45)]);
        assert_eq!(t.run(&["OBJECT", "ENCODING", "n"]), bulk("int"));
        assert_eq!(t.run(&["object", "encoding", "s"]), bulk("embstr"));
        assert_eq!(t.run(&["OBJECT", "ENCODING", "r"]), bulk("raw"));
        assert_eq!(t.run(&["OBJECT", "ENCODING", "nokey"]), Frame::Null);
        assert_eq!(t.run(&["OBJECT", "REFCOUNT", "s"]), int(1));
        assert_eq!(t.run(&["OBJECT", "REFCOUNT", "nokey"]), Frame::Null);
        assert_eq!(t.run(&["OBJECT", "IDLETIME", "nokey"]), Frame::Null);
        assert_eq!(t.run(&["OBJECT", "FREQ", "nokey"]), Frame::Null);
        assert!(matches!(
            t.run(&["OBJECT", "FREQ", "s"]),
            Frame::Error(e) if e.starts_with(b"ERR An LFU maxmemory policy is not selected")
        ));
        t.clock.advance(5_000);
        assert_eq!(t.run(&["OBJECT", "IDLETIME", "s"]), int(5));
        // OBJECT and TTL do not count as accesses; GET does.
        assert_eq!(t.run(&["OBJECT", "IDLETIME", "s"]), int(5));
        t.run(&["GET", "s"]);
        assert_eq!(t.run(&["OBJECT", "IDLETIME", "s"]), int(0));
        t.clock.advance(3_000);
        t.run(&["TOUCH", "s"]);
        assert_eq!(t.run(&["OBJECT", "IDLETIME", "s"]), int(0));
        let Frame::Array(help) = t.run(&["OBJECT", "HELP"]) else {
            panic!()
        };
        assert!(help.len() > 8);
        assert_eq!(
            t.run(&["OBJECT", "foo"]),
            error("ERR unknown subcommand 'foo'. Try OBJECT HELP.")
        );
        assert_eq!(
            t.run(&["OBJECT", "ENCODING"]),
            error("ERR wrong number of arguments for 'object|encoding' command")
        );
    }
}
