//! `keel-strings`'s `strings` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::{StrBytes, Value};
use keel_strings::strings::*;

#[cfg(test)]
mod tests {
    use keel_engine::clock::Clock;
    use keel_engine::testing::*;
    use keel_server::testing::Assembled;

    #[test]
    fn get_set_basics() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["GET", "k"]), keel_resp::Frame::Null);
        assert_eq!(t.run(&["SET", "k", "v"]), ok());
        assert_eq!(t.run(&["GET", "k"]), bulk("v"));
        assert_eq!(t.run(&["SET", "k", "w", "NX"]), keel_resp::Frame::Null);
        assert_eq!(t.run(&["SET", "k", "w", "XX", "GET"]), bulk("v"));
        assert_eq!(
            t.run(&["SET", "k", "x", "NX", "XX"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["SET", "k", "x", "EX", "0"]),
            error("ERR invalid expire time in 'set' command")
        );
        assert_eq!(
            t.run(&["SET", "k", "x", "EX", "a"]),
            error("ERR value is not an integer or out of range")
        );
        assert_eq!(
            t.run(&["SET", "k", "x", "EX", "1", "PX", "5"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["get"]),
            error("ERR wrong number of arguments for 'get' command")
        );
    }

    #[test]
    fn set_expiry_with_manual_clock() {
        let mut t = TestEngine::new();
        t.run(&["SET", "k", "v", "PX", "100"]);
        t.clock.advance(99);
        assert_eq!(t.run(&["GET", "k"]), bulk("v"));
        t.run(&["SET", "k", "v2", "KEEPTTL"]);
        t.clock.advance(1);
        assert_eq!(t.run(&["GET", "k"]), keel_resp::Frame::Null);
    }

    /// The expiry of `key` in db 0, read straight from the keyspace.
    fn expiry(t: &TestEngine, key: &str) -> Option<u64> {
        let ks = &t.engine.keyspace;
        let mut shard = ks.lock(ks.shard_of(key.as_bytes()));
        let now = t.clock.now_ms();
        shard.db(0).expiry(key.as_bytes(), now).flatten()
    }

    #[test]
    fn in_place_writes_keep_ttl_and_replacing_writes_clear_it() {
        let mut t = TestEngine::new();
        let at = t.clock.now_ms() + 100_000;
        for (setup, write) in [
            (vec!["SET", "k", "1", "PX", "100000"], vec!["INCR", "k"]),
            (
                vec!["SET", "k", "1", "PX", "100000"],
                vec!["DECRBY", "k", "5"],
            ),
            (
                vec!["SET", "k", "1", "PX", "100000"],
                vec!["INCRBYFLOAT", "k", "0.5"],
            ),
            (
                vec!["SET", "k", "1", "PX", "100000"],
                vec!["APPEND", "k", "x"],
            ),
            (
                vec!["SET", "k", "1", "PX", "100000"],
                vec!["SETRANGE", "k", "3", "x"],
            ),
        ] {
            t.run(&setup);
            assert!(!t.run(&write).is_error(), "{write:?}");
            assert_eq!(expiry(&t, "k"), Some(at), "{write:?}");
        }
        for write in [
            vec!["GETSET", "k", "v"],
            vec!["MSET", "k", "v"],
            vec!["SET", "k", "v"],
        ] {
            t.run(&["SET", "k", "1", "PX", "100000"]);
            t.run(&write);
            assert_eq!(expiry(&t, "k"), None, "{write:?}");
        }
    }

    #[test]
    fn setex_and_getex_with_manual_clock() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["SETEX", "k", "10", "v"]), ok());
        t.clock.advance(9_999);
        assert_eq!(t.run(&["GET", "k"]), bulk("v"));
        t.clock.advance(1);
        assert_eq!(t.run(&["GET", "k"]), keel_resp::Frame::Null);
        t.run(&["SET", "k", "v"]);
        assert_eq!(t.run(&["GETEX", "k", "PX", "50"]), bulk("v"));
        assert_eq!(expiry(&t, "k"), Some(t.clock.now_ms() + 50));
        assert_eq!(t.run(&["GETEX", "k", "PERSIST"]), bulk("v"));
        assert_eq!(expiry(&t, "k"), None);
        let past = (t.clock.now_ms() - 1).to_string();
        assert_eq!(t.run(&["GETEX", "k", "PXAT", &past]), bulk("v"));
        assert_eq!(t.run(&["GET", "k"]), keel_resp::Frame::Null);
    }

    #[test]
    fn counters() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["INCRBY", "n", "5"]), int(5));
        assert_eq!(t.run(&["DECR", "n"]), int(4));
        assert_eq!(
            t.run(&["DECRBY", "n", "-9223372036854775808"]),
            error("ERR decrement would overflow")
        );
        t.run(&["SET", "n", "9223372036854775807"]);
        assert_eq!(
            t.run(&["INCR", "n"]),
            error("ERR increment or decrement would overflow")
        );
        t.run(&["SET", "n", "1.5"]);
        assert_eq!(
            t.run(&["INCR", "n"]),
            error("ERR value is not an integer or out of range")
        );
        assert_eq!(t.run(&["INCRBYFLOAT", "n", "0.1"]), bulk("1.6"));
        assert_eq!(
            t.run(&["INCRBYFLOAT", "n", "x"]),
            error("ERR value is not a valid float")
        );
        assert_eq!(
            t.run(&["INCRBYFLOAT", "n", "inf"]),
            error("ERR increment would produce NaN or Infinity")
        );
    }

    #[test]
    fn ranges_and_lcs() {
        let mut t = TestEngine::new();
        t.run(&["SET", "k", "Hello World"]);
        assert_eq!(t.run(&["GETRANGE", "k", "-5", "-1"]), bulk("World"));
        assert_eq!(t.run(&["GETRANGE", "k", "-1", "-5"]), bulk(""));
        assert_eq!(t.run(&["SETRANGE", "k", "6", "Keel!"]), int(11));
        assert_eq!(t.run(&["GET", "k"]), bulk("Hello Keel!"));
        assert_eq!(
            t.run(&["SETRANGE", "k", "-1", "x"]),
            error("ERR offset is out of range")
        );
        assert_eq!(
            t.run(&["SETRANGE", "big", "536870912", "x"]),
            error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
        );
        assert_eq!(t.run(&["GET", "big"]), keel_resp::Frame::Null);
        t.run(&["MSET", "a", "ohmytext", "b", "mynewtext"]);
        assert_eq!(t.run(&["LCS", "a", "b"]), bulk("mytext"));
        assert_eq!(t.run(&["LCS", "a", "b", "LEN"]), int(6));
    }

    #[test]
    fn mget_answers_nil_wherever_a_value_is_missing_or_not_a_string() {
        let mut t = TestEngine::new();
        t.run(&["MSET", "a", "1", "b", "2", "c", "3"]);
        t.run(&["RPUSH", "list", "x"]);
        let nil = keel_resp::Frame::Null;
        let arr = keel_resp::Frame::Array;
        assert_eq!(
            t.run(&["MGET", "a", "b", "c"]),
            arr(vec![bulk("1"), bulk("2"), bulk("3")])
        );
        assert_eq!(
            t.run(&["MGET", "nope", "a", "list", "b", "gone", "c"]),
            arr(vec![
                nil.clone(),
                bulk("1"),
                nil.clone(),
                bulk("2"),
                nil.clone(),
                bulk("3")
            ])
        );
        assert_eq!(
            t.run(&["MGET", "a", "b", "nope"]),
            arr(vec![bulk("1"), bulk("2"), nil.clone()])
        );
        // RESP3 reads the nils as its null, the strings as before.
        t.run(&["HELLO", "3"]);
        let mut wire = |args: &[&str]| {
            let argv = args
                .iter()
                .map(|s| bytes::Bytes::from(s.to_string()))
                .collect();
            let mut raw = bytes::BytesMut::new();
            keel_resp::encode(
                &t.engine.execute(&mut t.session, argv),
                keel_resp::Protocol::Resp3,
                &mut raw,
            );
            raw.to_vec()
        };
        assert_eq!(wire(&["MGET", "a", "nope"]), b"*2\r\n$1\r\n1\r\n_\r\n");
        assert_eq!(wire(&["MGET", "a", "b"]), b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
    }

    #[test]
    fn multi_key_commands_reach_every_shard() {
        let mut t = TestEngine::new();
        let keys: Vec<String> = (0..64).map(|i| format!("key:{i}")).collect();
        let mut mset = vec!["MSET".to_string()];
        for k in &keys {
            mset.push(k.clone());
            mset.push(format!("v{k}"));
        }
        let argv: Vec<&str> = mset.iter().map(String::as_str).collect();
        assert_eq!(t.run(&argv), ok());
        let mut mget = vec!["MGET"];
        mget.extend(keys.iter().map(String::as_str));
        let expect: Vec<_> = keys.iter().map(|k| bulk(&format!("v{k}"))).collect();
        assert_eq!(t.run(&mget), keel_resp::Frame::Array(expect));
        let mut msetnx = vec!["MSETNX", "fresh", "1"];
        msetnx.extend(["key:7", "x"]);
        assert_eq!(t.run(&msetnx), int(0));
        assert_eq!(t.run(&["GET", "fresh"]), keel_resp::Frame::Null);
    }

    #[test]
    fn reads_count_keyspace_hits_and_writes_do_not() {
        let mut t = TestEngine::new();
        t.run(&["SET", "a", "1"]);
        t.run(&["MGET", "a", "b", "c"]);
        t.run(&["STRLEN", "a"]);
        t.run(&["GETRANGE", "a", "0", "-1"]);
        t.run(&["BITCOUNT", "zz"]);
        t.run(&["GETBIT", "a", "1"]);
        t.run(&["INCR", "a"]);
        t.run(&["APPEND", "q", "x"]);
        t.run(&["SETBIT", "a", "1", "1"]);
        let stats = &t.engine.stats;
        assert_eq!(stats.keyspace_hits(), 4);
        assert_eq!(stats.keyspace_misses(), 3);
    }

    #[test]
    fn non_deterministic_writes_are_logged_as_their_effect() {
        let (mut t, rec) = keel_engine::testing::TestEngine::recording(1_000_000);
        let mut run = |argv: &[&str]| t.run(argv);
        run(&["SETEX", "a", "10", "v"]);
        run(&["INCRBYFLOAT", "f", "0.1"]);
        run(&["INCRBYFLOAT", "f", "0.2"]);
        run(&["GETEX", "a", "EX", "5"]);
        run(&["GETEX", "a", "PERSIST"]);
        run(&["GETEX", "a", "PERSIST"]);
        run(&["SETNX", "a", "w"]);
        run(&["GETDEL", "a"]);
        run(&["INCR", "n"]);
        let log = rec.commands();
        let expect: Vec<Vec<&str>> = vec![
            vec!["SET", "a", "v", "PXAT", "1010000"],
            vec!["SET", "f", "0.1", "KEEPTTL"],
            vec!["SET", "f", "0.3", "KEEPTTL"],
            vec!["PEXPIREAT", "a", "1005000"],
            vec!["PERSIST", "a"],
            vec!["DEL", "a"],
            vec!["INCR", "n"],
        ];
        assert_eq!(log, expect);
    }
}
