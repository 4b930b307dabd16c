//! The kernel's `monitor` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::{Bytes, BytesMut};
use keel_engine::ctx::Ctx;
use keel_engine::engine::Engine;
use keel_engine::error::CmdError;
use keel_engine::monitor::*;
use keel_engine::session::{ClientHandle, Session};
use keel_engine::spec::{CommandSpec, Flags};
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

#[cfg(test)]
mod engine_tests {
    use bytes::BytesMut;
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn lines(feed: &super::MonitorFeed) -> Vec<String> {
        let mut out = BytesMut::new();
        feed.take_into(&mut out);
        String::from_utf8_lossy(&out)
            .split("\r\n")
            .filter(|l| !l.is_empty())
            // Drop the timestamp: "+<secs>.<usecs> ".
            .map(|l| l.split_once(' ').map_or(l, |(_, rest)| rest).to_string())
            .collect()
    }

    #[test]
    fn monitor_sees_what_ran_after_it_ran() {
        let mut t = TestEngine::new();
        let mut other = t.other_session();
        assert_eq!(t.run(&["MONITOR"]), ok());
        let feed = t.session.monitor.clone().expect("monitoring");
        t.run_as(&mut other, &["SET", "k", "v"]);
        t.run_as(&mut other, &["SELECT", "3"]);
        t.run_as(&mut other, &["AUTH", "pw"]);
        t.run_as(&mut other, &["AUTH", "a", "b", "c"]);
        t.run_as(&mut other, &["HELLO", "2", "AUTH", "default", "pw"]);
        // Refused before running: not shown.
        t.run_as(&mut other, &["NOPE"]);
        t.run_as(&mut other, &["GET"]);
        // Admin commands are hidden.
        t.run_as(&mut other, &["CONFIG", "GET", "hz"]);
        t.run_as(&mut other, &["MULTI"]);
        t.run_as(&mut other, &["INCR", "n"]);
        t.run_as(&mut other, &["EXEC"]);
        // An error raised by the command itself is shown.
        t.run_as(&mut other, &["EXEC"]);
        assert_eq!(
            lines(&feed),
            [
                "[0 127.0.0.1:2] \"SET\" \"k\" \"v\"",
                "[3 127.0.0.1:2] \"SELECT\" \"3\"",
                "[3 127.0.0.1:2] \"AUTH\" \"(redacted)\"",
                "[3 127.0.0.1:2] \"AUTH\" \"a\" \"b\" \"c\"",
                "[3 127.0.0.1:2] \"HELLO\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\"",
                "[3 127.0.0.1:2] \"MULTI\"",
                "[3 127.0.0.1:2] \"INCR\" \"n\"",
                "[3 127.0.0.1:2] \"EXEC\"",
                "[3 127.0.0.1:2] \"EXEC\"",
            ]
        );
        t.engine.disconnect(&mut other);
    }

    #[test]
    fn monitor_may_not_touch_keys_and_reset_ends_it() {
        let mut t = TestEngine::new();
        t.run(&["MONITOR"]);
        // A second MONITOR is ignored: no reply at all.
        let again = t.engine.execute(&mut t.session, vec!["MONITOR".into()]);
        assert_eq!(again, Frame::Encoded(bytes::Bytes::new()));
        assert_eq!(
            t.run(&["GET", "k"]),
            error("ERR Replica can't interact with the keyspace")
        );
        assert_eq!(
            t.run(&["SET", "k", "v"]),
            error("ERR Replica can't interact with the keyspace")
        );
        assert_eq!(t.run(&["PING"]), Frame::simple("PONG"));
        let Frame::Verbatim(_, info) = t.run(&["CLIENT", "INFO"]) else {
            panic!("CLIENT INFO is text")
        };
        assert!(String::from_utf8_lossy(&info).contains(" flags=O "));
        let feed = t.session.monitor.clone().expect("monitoring");
        assert_eq!(
            lines(&feed),
            [
                "[0 127.0.0.1:1] \"PING\"",
                "[0 127.0.0.1:1] \"CLIENT\" \"INFO\""
            ]
        );
        assert!(t.engine.monitors.active());
        assert_eq!(t.run(&["RESET"]), Frame::simple("RESET"));
        assert!(feed.is_closed());
        assert!(!t.engine.monitors.active());
        assert_eq!(t.run(&["GET", "k"]), Frame::Null);
    }

    #[test]
    fn monitor_is_refused_inside_exec_and_ends_on_disconnect() {
        let mut t = TestEngine::new();
        t.run(&["MULTI"]);
        t.run(&["MONITOR"]);
        assert_eq!(
            t.run(&["EXEC"]),
            Frame::Array(vec![error(
                "ERR MONITOR isn't allowed for DENY BLOCKING client"
            )])
        );
        assert!(t.session.monitor.is_none());
        let mut other = t.other_session();
        t.run_as(&mut other, &["MONITOR"]);
        assert!(t.engine.monitors.active());
        t.engine.disconnect(&mut other);
        assert!(!t.engine.monitors.active());
    }
}
