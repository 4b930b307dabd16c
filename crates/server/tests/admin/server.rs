//! `keel-admin`'s `server` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_admin::server::*;
use keel_engine::args::{is, Args};
use keel_engine::config;
use keel_engine::ctx::Ctx;
use keel_engine::engine::{Engine, FastRng, Rng};
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::Value;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;
    use std::sync::atomic::Ordering;

    fn text(f: Frame) -> String {
        match f {
            Frame::Verbatim("txt", b) | Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("not text: {other:?}"),
        }
    }

    fn headers(s: &str) -> Vec<&str> {
        s.split("\r\n").filter(|l| l.starts_with('#')).collect()
    }

    #[test]
    fn info_sections() {
        let mut t = TestEngine::new();
        t.run(&["SET", "a", "1"]);
        t.run(&["SET", "b", "1", "PX", "1000"]);
        t.session.set_db(2);
        let all = text(t.run(&["INFO"]));
        assert_eq!(
            headers(&all),
            [
                "# Server",
                "# Clients",
                "# Memory",
                "# Persistence",
                "# Stats",
                "# Replication",
                "# CPU",
                "# Modules",
                "# Errorstats",
                "# Cluster",
                "# Keyspace"
            ]
        );
        assert!(all.contains("\r\nredis_version:7.0.15\r\n"));
        assert!(all.contains("\r\nkeel_version:"));
        assert!(all.contains("\r\nrole:master\r\n"));
        assert!(all.contains("\r\nrdb_changes_since_last_save:2\r\n"));
        assert!(all.contains("\r\nuptime_in_seconds:0\r\n"));
        assert!(all.ends_with("db0:keys=2,expires=1,avg_ttl=0\r\n"));
        // Sections are separated by exactly one blank line.
        assert!(all.contains("io_threads_active:0\r\n\r\n# Clients\r\n"));
        assert_eq!(headers(&text(t.run(&["INFO", "default"]))), headers(&all));
        t.clock.advance(90_000);
        let server = text(t.run(&["info", "SERVER"]));
        assert!(server.starts_with("# Server\r\n"));
        assert!(server.contains("\r\nuptime_in_seconds:90\r\n"));
        assert!(server.contains("\r\nserver_time_usec:1700000090000000\r\n"));
        assert_eq!(text(t.run(&["INFO", "nosuchsection"])), "");
        let two = text(t.run(&["INFO", "keyspace", "cpu", "bogus"]));
        assert_eq!(headers(&two), ["# CPU", "# Keyspace"]);
        assert!(two.contains("used_cpu_user:"));
        let every = text(t.run(&["INFO", "everything"]));
        assert!(headers(&every).contains(&"# Commandstats"));
        assert_eq!(headers(&text(t.run(&["INFO", "all"]))).len(), 13);
    }

    #[test]
    fn info_commandstats() {
        let mut t = TestEngine::new();
        t.run(&["GET", "a"]);
        t.run(&["GET", "a"]);
        t.run(&["CONFIG", "GET", "port"]);
        t.run(&["SET", "a", "1", "EX", "0"]);
        let s = text(t.run(&["INFO", "commandstats"]));
        assert!(s.starts_with("# Commandstats\r\n"));
        let line = |name: &str| {
            s.split("\r\n")
                .find(|l| l.starts_with(&format!("cmdstat_{name}:")))
                .map(str::to_string)
        };
        assert!(line("get").is_some_and(
            |l| l.contains(":calls=2,usec=") && l.ends_with(",rejected_calls=0,failed_calls=0")
        ));
        assert!(line("config|get").is_some());
        assert!(line("set").is_some_and(|l| l.ends_with("failed_calls=1")));
        assert!(line("del").is_none());
        assert_eq!(t.run(&["CONFIG", "RESETSTAT"]), ok());
        let s = text(t.run(&["INFO", "commandstats"]));
        assert!(!s.contains("cmdstat_get"));
        let stats = text(t.run(&["INFO", "stats"]));
        // RESETSTAT itself and the INFO after it; this INFO is counted when it ends.
        assert!(stats.contains("\r\ntotal_commands_processed:2\r\n"));
    }

    #[test]
    fn info_memory_peak_and_rates() {
        let t = TestEngine::new();
        t.engine.stats.memory_peak.store(0, Ordering::Relaxed);
        assert_eq!(super::human_bytes(1023), "1023B");
        assert_eq!(super::human_bytes(1536), "1.50K");
        assert_eq!(super::human_bytes(3 << 20), "3.00M");
        let st = &t.engine.stats;
        st.rates.sample(1000, [0, 0, 0]);
        st.rates.sample(1100, [16 * 10, 16 * 1024, 0]);
        let [ops, input, _] = st.rates.per_second();
        assert_eq!(ops, 100.0);
        assert_eq!(input, 10240.0);
        // Samples closer than the period are ignored.
        st.rates.sample(1150, [1_000_000, 0, 0]);
        assert_eq!(st.rates.per_second()[0], 100.0);
    }

    #[test]
    fn config_get_and_set() {
        let mut t = TestEngine::new();
        assert_eq!(
            t.run(&["CONFIG", "GET", "maxclients"]),
            Frame::Map(vec![(bulk("maxclients"), bulk("10000"))])
        );
        let Frame::Map(m) = t.run(&["CONFIG", "GET", "save", "appendonly", "SAVE", "app*"]) else {
            panic!()
        };
        // save and appendonly once each, plus appenddirname, appendfilename
        // and appendfsync.
        assert_eq!(m.len(), 5, "{m:?}");
        assert_eq!(
            t.run(&["CONFIG", "GET", "MaxClients", "maxc*"]),
            Frame::Map(vec![(bulk("MaxClients"), bulk("10000"))])
        );
        assert_eq!(t.run(&["CONFIG", "GET", "nosuch"]), Frame::Map(vec![]));
        assert_eq!(
            t.run(&["CONFIG", "SET", "maxclients", "50", "timeout", "7"]),
            ok()
        );
        assert_eq!(t.engine.config.maxclients(), 50);
        assert_eq!(t.engine.config.get("timeout"), "7");
        // All or nothing: the bad hz leaves maxclients as it was.
        assert_eq!(
            t.run(&["CONFIG", "SET", "maxclients", "60", "HZ", "x"]),
            error("ERR CONFIG SET failed (possibly related to argument 'hz') - argument couldn't be parsed into an integer")
        );
        assert_eq!(t.engine.config.maxclients(), 50);
        assert_eq!(
            t.run(&["CONFIG", "SET", "nope", "1", "port", "2"]),
            error("ERR Unknown option or number of arguments for CONFIG SET - 'nope'")
        );
        assert_eq!(
            t.run(&["CONFIG", "SET", "Databases", "1", "nope", "2"]),
            error("ERR CONFIG SET failed (possibly related to argument 'Databases') - can't set immutable config")
        );
        assert_eq!(
            t.run(&["CONFIG", "SET", "hz", "5", "HZ", "6"]),
            error(
                "ERR CONFIG SET failed (possibly related to argument 'HZ') - duplicate parameter"
            )
        );
        assert_eq!(
            t.run(&["CONFIG", "SET", "hz", "5", "timeout"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["CONFIG", "SET", "save", "10"]),
            error("ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters")
        );
        assert_eq!(t.run(&["CONFIG", "SET", "save", "10 1  20 2"]), ok());
        assert_eq!(t.engine.config.get("save"), "10 1 20 2");
        assert_eq!(t.run(&["CONFIG", "SET", "save", ""]), ok());
        assert_eq!(
            t.run(&["CONFIG", "SET", "dir", "/no/such/dir/keel"]),
            error("ERR CONFIG SET failed (possibly related to argument 'dir') - No such file or directory")
        );
        assert_eq!(
            t.run(&["CONFIG", "SET", "appendfsync", "sometimes"]),
            error("ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: everysec, always, no")
        );
        assert_eq!(
            t.run(&["CONFIG", "SET", "hz"]),
            error("ERR wrong number of arguments for 'config|set' command")
        );
        assert_eq!(
            t.run(&["CONFIG", "REWRITE"]),
            error("ERR The server is running without a config file")
        );
        assert_eq!(
            t.run(&["CONFIG", "FOO"]),
            error("ERR unknown subcommand 'FOO'. Try CONFIG HELP.")
        );
        let Frame::Array(h) = t.run(&["CONFIG", "HELP"]) else {
            panic!()
        };
        assert!(h.len() > 4);
    }

    #[test]
    fn time_lastsave() {
        let mut t = TestEngine::new();
        assert_eq!(
            t.run(&["TIME"]),
            Frame::Array(vec![bulk("1700000000"), bulk("0")])
        );
        t.clock.advance(1_500);
        assert_eq!(
            t.run(&["TIME"]),
            Frame::Array(vec![bulk("1700000001"), bulk("500000")])
        );
        assert_eq!(t.run(&["LASTSAVE"]), int(1_700_000_000));
        assert_eq!(
            t.run(&["TIME", "x"]),
            error("ERR wrong number of arguments for 'time' command")
        );
    }

    #[test]
    fn swapdb() {
        let mut t = TestEngine::new();
        t.run(&["SET", "a", "0"]);
        t.session.set_db(1);
        t.run(&["SET", "b", "1"]);
        let mut w = t.other_session();
        t.run_as(&mut w, &["WATCH", "a"]);
        t.run_as(&mut w, &["MULTI"]);
        t.run_as(&mut w, &["GET", "a"]);
        assert_eq!(t.run(&["SWAPDB", "0", "1"]), ok());
        assert_eq!(t.run_as(&mut w, &["EXEC"]), Frame::NullArray);
        assert_eq!(t.run(&["GET", "a"]), bulk("0"));
        assert_eq!(t.run(&["GET", "b"]), Frame::Null);
        assert_eq!(t.run(&["SWAPDB", "1", "1"]), ok());
        assert_eq!(
            t.run(&["SWAPDB", "x", "1"]),
            error("ERR invalid first DB index")
        );
        assert_eq!(
            t.run(&["SWAPDB", "0", "x"]),
            error("ERR invalid second DB index")
        );
        assert_eq!(
            t.run(&["SWAPDB", "x", "y"]),
            error("ERR invalid first DB index")
        );
        assert_eq!(
            t.run(&["SWAPDB", "0", "16"]),
            error("ERR DB index is out of range")
        );
        assert_eq!(
            t.run(&["SWAPDB", "-1", "0"]),
            error("ERR DB index is out of range")
        );
    }

    #[test]
    fn shutdown_flags() {
        let mut t = TestEngine::new();
        let down = |t: &TestEngine| t.engine.shutdown_requested.load(Ordering::SeqCst);
        assert_eq!(t.run(&["SHUTDOWN", "bogus"]), error("ERR syntax error"));
        assert_eq!(
            t.run(&["SHUTDOWN", "NOSAVE", "SAVE"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["SHUTDOWN", "ABORT", "NOW"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["SHUTDOWN", "ABORT"]),
            error("ERR No shutdown in progress.")
        );
        // (A save that fails refusing SHUTDOWN is tested against the real
        // server, tests/python/test_server.py: a unit test must not write
        // files.)
        assert!(!down(&t));
        t.run(&["MULTI"]);
        assert_eq!(
            t.run(&["SHUTDOWN", "NOSAVE"]),
            error("ERR Command not allowed inside a transaction")
        );
        t.run(&["DISCARD"]);
        t.run(&["SHUTDOWN", "NOSAVE", "NOW"]);
        assert!(down(&t));
        assert!(t.session.handle.is_killed());

        let mut t = TestEngine::new();
        t.run(&["SHUTDOWN", "NOSAVE", "FORCE"]);
        assert!(down(&t));
    }

    #[test]
    fn debug_populate_and_sleep() {
        let mut t = TestEngine::new();
        t.run(&["SET", "key:1", "mine"]);
        assert_eq!(t.run(&["DEBUG", "POPULATE", "3"]), ok());
        assert_eq!(t.run(&["DBSIZE"]), int(3));
        assert_eq!(t.run(&["GET", "key:0"]), bulk("value:0"));
        assert_eq!(t.run(&["GET", "key:1"]), bulk("mine"));
        assert_eq!(t.run(&["DEBUG", "POPULATE", "2", "p", "3"]), ok());
        assert_eq!(t.run(&["GET", "p:1"]), bulk("val"));
        assert_eq!(t.run(&["DEBUG", "populate", "1", "z", "9"]), ok());
        assert_eq!(
            t.run(&["GET", "z:0"]),
            Frame::Bulk(Bytes::from_static(b"value:0\0\0"))
        );
        assert_eq!(t.run(&["DEBUG", "POPULATE", "1", ""]), ok());
        assert_eq!(t.run(&["GET", ":0"]), bulk("value:0"));
        let long = "x".repeat(200);
        assert_eq!(t.run(&["DEBUG", "POPULATE", "1", &long]), ok());
        assert_eq!(t.run(&["GET", &long[..127]]), bulk("value:0"));
        assert_eq!(t.run(&["DEBUG", "POPULATE", "0"]), ok());
        for bad in [
            &["DEBUG", "POPULATE", "-1"][..],
            &["DEBUG", "POPULATE", "x"],
            &["DEBUG", "POPULATE", "1", "p", "-5"],
        ] {
            assert_eq!(
                t.run(bad),
                error("ERR value is out of range, must be positive")
            );
        }
        assert_eq!(
            t.run(&["DEBUG", "POPULATE"]),
            error("ERR unknown subcommand or wrong number of arguments for 'POPULATE'. Try DEBUG HELP.")
        );
        assert_eq!(
            t.run(&["DEBUG", "nope"]),
            error(
                "ERR unknown subcommand or wrong number of arguments for 'nope'. Try DEBUG HELP."
            )
        );
        assert_eq!(t.run(&["DEBUG", "SLEEP", "0"]), ok());
        assert_eq!(t.run(&["DEBUG", "SLEEP", "junk"]), ok());
        assert_eq!(t.run(&["DEBUG", "SLEEP", "-1"]), ok());
        assert_eq!(super::strtod_prefix(b"0.25s"), 0.25);
        assert_eq!(super::strtod_prefix(b"x"), 0.0);
        let Frame::Array(h) = t.run(&["DEBUG", "HELP"]) else {
            panic!()
        };
        assert!(!h.is_empty());
    }

    #[test]
    fn debug_permission() {
        let refusal = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";
        let mut t = TestEngine::new();
        t.engine
            .config
            .set("enable-debug-command", &["no"], true)
            .expect("valid directive");
        assert_eq!(t.run(&["DEBUG", "SLEEP", "0"]), error(refusal));
        t.engine
            .config
            .set("enable-debug-command", &["local"], true)
            .expect("valid directive");
        assert_eq!(t.run(&["DEBUG", "SLEEP", "0"]), ok());
        let mut remote = t
            .engine
            .connect("10.1.2.3:4000".into(), "10.1.2.4:6379".into());
        assert_eq!(
            t.run_as(&mut remote, &["DEBUG", "SLEEP", "0"]),
            error(refusal)
        );
        let mut v6 = t.engine.connect("[::1]:4000".into(), "[::1]:6379".into());
        assert_eq!(t.run_as(&mut v6, &["DEBUG", "SLEEP", "0"]), ok());
        assert!(!super::is_local_peer("127.0.0.2:1"));
    }

    #[test]
    fn memory_commands() {
        let mut t = TestEngine::new();
        t.run(&["SET", "k", "v"]);
        let Frame::Integer(n) = t.run(&["MEMORY", "USAGE", "k"]) else {
            panic!()
        };
        // At least the entry's slot and its share of the index.
        assert!(n >= 56);
        assert_eq!(t.run(&["MEMORY", "USAGE", "k", "SAMPLES", "0"]), int(n));
        assert_eq!(t.run(&["MEMORY", "USAGE", "missing"]), Frame::Null);
        assert_eq!(
            t.run(&["MEMORY", "USAGE", "k", "SAMPLES", "-1"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["MEMORY", "USAGE", "k", "SAMPLES"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["MEMORY", "USAGE", "k", "foo"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["MEMORY", "USAGE", "k", "SAMPLES", "x"]),
            error("ERR value is not an integer or out of range")
        );
        assert_eq!(
            t.run(&["MEMORY", "USAGE"]),
            error("ERR wrong number of arguments for 'memory|usage' command")
        );
        let Frame::Map(m) = t.run(&["MEMORY", "STATS"]) else {
            panic!()
        };
        assert!(m.contains(&(bulk("keys.count"), int(1))));
        assert!(m.iter().any(|(k, _)| *k == bulk("db.0")));
        assert!(matches!(
            t.run(&["MEMORY", "DOCTOR"]),
            Frame::Verbatim("txt", _)
        ));
        assert_eq!(t.run(&["MEMORY", "PURGE"]), ok());
        assert_eq!(
            t.run(&["MEMORY", "nope"]),
            error("ERR unknown subcommand 'nope'. Try MEMORY HELP.")
        );
    }

    #[test]
    fn flush_and_dbsize() {
        let mut t = TestEngine::new();
        t.run(&["SET", "a", "1"]);
        t.session.set_db(1);
        t.run(&["SET", "b", "1"]);
        assert_eq!(
            t.run(&["FLUSHDB", "ASYNC", "SYNC"]),
            error("ERR syntax error")
        );
        assert_eq!(t.run(&["FLUSHDB", "x"]), error("ERR syntax error"));
        assert_eq!(t.run(&["FLUSHDB", "sync"]), ok());
        assert_eq!(t.run(&["DBSIZE"]), int(0));
        t.session.set_db(0);
        assert_eq!(t.run(&["DBSIZE"]), int(1));
        assert_eq!(t.run(&["FLUSHALL", "SYNC", "x"]), error("ERR syntax error"));
        assert_eq!(t.run(&["FLUSHALL", "ASYNC"]), ok());
        assert_eq!(t.run(&["DBSIZE"]), int(0));
    }
}
