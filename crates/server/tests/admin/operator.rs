//! `keel-admin`'s `operator` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_admin::operator::*;
use keel_engine::args::Args;
use keel_engine::config::format_percentile;
use keel_engine::ctx::Ctx;
use keel_engine::engine::Engine;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_engine::version::REDIS_VERSION;
use keel_resp::Frame;
use std::fmt::Write;
use std::sync::atomic::Ordering;

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn text(f: Frame) -> String {
        match f {
            Frame::Verbatim(_, b) | Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("not text: {other:?}"),
        }
    }

    #[test]
    fn slowlog_records_and_trims() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["SLOWLOG", "LEN"]), int(0));
        assert_eq!(
            t.run(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]),
            ok()
        );
        t.run(&["SET", "k", "v"]);
        let Frame::Array(entries) = t.run(&["SLOWLOG", "GET", "1"]) else {
            panic!("array")
        };
        assert_eq!(entries.len(), 1);
        let Frame::Array(e) = &entries[0] else {
            panic!("entry")
        };
        assert_eq!(e.len(), 6);
        assert_eq!(e[3], Frame::Array(vec![bulk("SET"), bulk("k"), bulk("v")]));
        assert_eq!(
            t.run(&["SLOWLOG", "GET", "-2"]),
            error("ERR count should be greater than or equal to -1")
        );
        assert_eq!(
            t.run(&["SLOWLOG", "GET", "1", "2"]),
            error(
                "ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP."
            )
        );
        assert_eq!(t.run(&["SLOWLOG", "RESET"]), ok());
        // RESET itself was slow enough to be logged.
        assert_eq!(t.run(&["SLOWLOG", "LEN"]), int(1));
        // EXEC is not logged, the commands it runs are.
        t.run(&["SLOWLOG", "RESET"]);
        t.run(&["MULTI"]);
        t.run(&["GET", "k"]);
        t.run(&["EXEC"]);
        let Frame::Array(entries) = t.run(&["SLOWLOG", "GET", "-1"]) else {
            panic!("array")
        };
        let names: Vec<Frame> = entries
            .iter()
            .map(|e| match e {
                Frame::Array(f) => match &f[3] {
                    Frame::Array(a) => a[0].clone(),
                    _ => panic!("args"),
                },
                _ => panic!("entry"),
            })
            .collect();
        assert_eq!(
            names,
            [bulk("GET"), bulk("MULTI"), bulk("SLOWLOG")],
            "{entries:?}"
        );
        t.run(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
        t.run(&["SLOWLOG", "RESET"]);
        t.run(&["GET", "k"]);
        assert_eq!(t.run(&["SLOWLOG", "LEN"]), int(0));
    }

    #[test]
    fn errorstats_and_rejected_calls() {
        let mut t = TestEngine::new();
        t.run(&["SET", "a", "b"]);
        t.run(&["NOSUCH"]);
        t.run(&["GET"]);
        t.run(&["SET", "a", "b", "c", "d"]);
        t.run(&["LPUSH", "a", "x"]);
        let info = text(t.run(&["INFO", "errorstats"]));
        assert_eq!(
            info,
            "# Errorstats\r\nerrorstat_ERR:count=3\r\nerrorstat_WRONGTYPE:count=1\r\n"
        );
        let stats = text(t.run(&["INFO", "stats"]));
        assert!(stats.contains("\r\ntotal_error_replies:4\r\n"), "{stats}");
        let cs = text(t.run(&["INFO", "commandstats"]));
        assert!(cs.contains(
            "cmdstat_get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0"
        ));
        assert!(cs.contains(",rejected_calls=0,failed_calls=1\r\n"));
        assert_eq!(t.run(&["CONFIG", "RESETSTAT"]), ok());
        assert_eq!(text(t.run(&["INFO", "errorstats"])), "# Errorstats\r\n");
        // Inside MULTI: the queued arity error counts once, EXECABORT once.
        t.run(&["MULTI"]);
        t.run(&["GET"]);
        t.run(&["EXEC"]);
        let info = text(t.run(&["INFO", "errorstats"]));
        assert_eq!(
            info,
            "# Errorstats\r\nerrorstat_ERR:count=1\r\nerrorstat_EXECABORT:count=1\r\n"
        );
    }

    #[test]
    fn latencystats_and_histogram() {
        let mut t = TestEngine::new();
        t.run(&["SET", "k", "v"]);
        t.run(&["GET", "k"]);
        let info = text(t.run(&["INFO", "latencystats"]));
        let line = info
            .lines()
            .find(|l| l.starts_with("latency_percentiles_usec_get:"))
            .expect("get line");
        assert!(line.contains(":p50=") && line.contains(",p99=") && line.contains(",p99.9="));
        let Frame::Map(h) = t.run(&["LATENCY", "HISTOGRAM", "get", "nosuch", "client"]) else {
            panic!("map")
        };
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].0, bulk("get"));
        let Frame::Map(entry) = &h[0].1 else {
            panic!("entry")
        };
        assert_eq!(entry[0], (bulk("calls"), int(1)));
        t.run(&["CONFIG", "SET", "latency-tracking-info-percentiles", "50"]);
        let info = text(t.run(&["INFO", "latencystats"]));
        assert!(info.contains("latency_percentiles_usec_get:p50="));
        assert!(!info.contains("p99"));
        t.run(&["CONFIG", "SET", "latency-tracking", "no"]);
        assert_eq!(text(t.run(&["INFO", "latencystats"])), "# Latencystats\r\n");
        t.run(&["CONFIG", "RESETSTAT"]);
        assert_eq!(t.run(&["LATENCY", "HISTOGRAM"]), Frame::Map(vec![]));
        // Not part of the default sections.
        assert!(!text(t.run(&["INFO"])).contains("# Latencystats"));
        assert!(text(t.run(&["INFO"])).contains("# Errorstats"));
    }

    #[test]
    fn latency_monitor_commands() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["LATENCY", "LATEST"]), Frame::Array(vec![]));
        assert_eq!(
            t.run(&["LATENCY", "HISTORY", "command"]),
            Frame::Array(vec![])
        );
        assert_eq!(
            t.run(&["LATENCY", "GRAPH", "nope"]),
            error("ERR No samples available for event 'nope'")
        );
        t.engine.latency.add("command", 1000, 50);
        let Frame::Array(latest) = t.run(&["LATENCY", "LATEST"]) else {
            panic!("array")
        };
        assert_eq!(
            latest[0],
            Frame::Array(vec![bulk("command"), int(1000), int(50), int(50)])
        );
        assert_eq!(
            t.run(&["LATENCY", "HISTORY", "command"]),
            Frame::Array(vec![Frame::Array(vec![int(1000), int(50)])])
        );
        assert!(text(t.run(&["LATENCY", "GRAPH", "command"])).starts_with("command - high 50 ms"));
        assert!(text(t.run(&["LATENCY", "DOCTOR"])).contains("command"));
        assert_eq!(t.run(&["LATENCY", "RESET", "nope"]), int(0));
        assert_eq!(t.run(&["LATENCY", "RESET"]), int(1));
        assert!(matches!(t.run(&["LATENCY", "HELP"]), Frame::Array(l) if l.len() > 10));
    }

    #[test]
    fn role_lolwut_module() {
        let mut t = TestEngine::new();
        assert_eq!(
            t.run(&["ROLE"]),
            Frame::Array(vec![bulk("master"), int(0), Frame::Array(vec![])])
        );
        assert_eq!(text(t.run(&["LOLWUT"])), "Redis ver. 7.0.15\n");
        let art = text(t.run(&["LOLWUT", "VERSION", "5", "20", "4", "3"]));
        assert!(art.lines().count() > 3 && art.ends_with("\nRedis ver. 7.0.15\n"));
        let art = text(t.run(&["LOLWUT", "VERSION", "6"]));
        assert!(art.contains('#') && art.ends_with("Redis ver. 7.0.15\n"));
        assert_eq!(
            t.run(&["LOLWUT", "VERSION", "x"]),
            error("ERR value is not an integer or out of range")
        );
        let Frame::Array(mods) = t.run(&["MODULE", "LIST"]) else {
            panic!("array")
        };
        assert_eq!(
            mods[0],
            Frame::Map(vec![
                (bulk("name"), bulk("bf")),
                (bulk("ver"), int(20612)),
                (bulk("path"), bulk("")),
                (bulk("args"), Frame::Array(vec![])),
            ])
        );
        let Frame::Error(e) = t.run(&["MODULE", "LOAD", "/x.so"]) else {
            panic!("refused")
        };
        assert!(String::from_utf8_lossy(&e).contains("built in"));
        assert!(matches!(
            t.run(&["MODULE", "UNLOAD", "bf"]),
            Frame::Error(_)
        ));
        assert!(matches!(t.run(&["MODULE", "HELP"]), Frame::Array(_)));
    }
}
