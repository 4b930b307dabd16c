//! The kernel's `pause` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use keel_engine::ctx::Guards;
use keel_engine::engine::Engine;
use keel_engine::pause::*;
use keel_engine::session::{ClientHandle, Session};
use keel_engine::spec::{CommandSpec, Flags, Keys};
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

#[cfg(test)]
mod engine_tests {
    use bytes::Bytes;
    use keel_engine::clock::Clock;
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    /// Run `argv` as `session`; `None` when CLIENT PAUSE held it back.
    fn try_run(t: &TestEngine, s: &mut keel_engine::Session, argv: &[&str]) -> Option<Frame> {
        let argv: Vec<Bytes> = argv
            .iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        let reply = decoded(t.engine.execute(s, argv));
        match s.postponed.take() {
            Some(_) => None,
            None => Some(reply),
        }
    }

    #[test]
    fn pause_errors() {
        let mut t = TestEngine::new();
        for (args, e) in [
            (&["x"][..], "ERR timeout is not an integer or out of range"),
            (&["1.5"], "ERR timeout is not an integer or out of range"),
            (&["+5"], "ERR timeout is not an integer or out of range"),
            (&["-1"], "ERR timeout is negative"),
            (&["x", "READ"], "ERR CLIENT PAUSE mode must be WRITE or ALL"),
        ] {
            let mut argv = vec!["CLIENT", "PAUSE"];
            argv.extend_from_slice(args);
            assert_eq!(t.run(&argv), error(e), "{argv:?}");
        }
        assert_eq!(
            t.run(&["CLIENT", "Pause", "1", "WRITE", "x"]),
            error(
                "ERR unknown subcommand or wrong number of arguments for 'Pause'. Try CLIENT HELP."
            )
        );
        assert_eq!(
            t.run(&["CLIENT", "UNPAUSE", "x"]),
            error("ERR wrong number of arguments for 'client|unpause' command")
        );
        assert!(!t.engine.pause.active());
        // Zero, and a deadline that overflows, pause nothing.
        assert_eq!(t.run(&["CLIENT", "PAUSE", "0"]), ok());
        assert_eq!(t.run(&["CLIENT", "PAUSE", "9223372036854775807"]), ok());
        let mut other = t.other_session();
        assert_eq!(try_run(&t, &mut other, &["SET", "k", "v"]), Some(ok()));
    }

    #[test]
    fn write_pause_holds_writes_only() {
        let mut t = TestEngine::new();
        let mut other = t.other_session();
        assert_eq!(t.run(&["CLIENT", "PAUSE", "1000", "WRITE"]), ok());
        assert_eq!(try_run(&t, &mut other, &["GET", "k"]), Some(Frame::Null));
        assert_eq!(
            try_run(&t, &mut other, &["PING"]),
            Some(Frame::simple("PONG"))
        );
        assert_eq!(try_run(&t, &mut other, &["SET", "k", "v"]), None);
        // Held before MULTI could queue it.
        try_run(&t, &mut other, &["MULTI"]);
        assert_eq!(try_run(&t, &mut other, &["SET", "k", "v"]), None);
        assert_eq!(
            try_run(&t, &mut other, &["GET", "k"]),
            Some(Frame::simple("QUEUED"))
        );
        // EXEC of reads runs; an EXEC that would write waits.
        assert_eq!(
            try_run(&t, &mut other, &["EXEC"]),
            Some(Frame::Array(vec![Frame::Null]))
        );
        try_run(&t, &mut other, &["MULTI"]);
        t.run(&["CLIENT", "UNPAUSE"]);
        try_run(&t, &mut other, &["INCR", "n"]);
        t.run(&["CLIENT", "PAUSE", "1000", "WRITE"]);
        assert_eq!(try_run(&t, &mut other, &["EXEC"]), None);
        // The deadline ends it.
        t.clock.advance(1000);
        assert_eq!(
            try_run(&t, &mut other, &["EXEC"]),
            Some(Frame::Array(vec![int(1)]))
        );
        assert!(!t.engine.pause.active());
    }

    #[test]
    fn all_pause_holds_everything_but_monitors() {
        let mut t = TestEngine::new();
        let mut other = t.other_session();
        let mut monitor = t.other_session();
        try_run(&t, &mut monitor, &["MONITOR"]);
        assert_eq!(t.run(&["CLIENT", "PAUSE", "500", "ALL"]), ok());
        // Even the pausing client, and even CLIENT UNPAUSE.
        assert_eq!(try_run(&t, &mut other, &["PING"]), None);
        assert_eq!(try_run(&t, &mut other, &["CLIENT", "UNPAUSE"]), None);
        assert_eq!(
            try_run(&t, &mut monitor, &["PING"]),
            Some(Frame::simple("PONG"))
        );
        // A shorter, milder pause does not shorten or soften it.
        t.engine
            .pause
            .pause(super::PauseMode::Write, 0, t.clock.now_ms());
        t.clock.advance(499);
        assert_eq!(try_run(&t, &mut other, &["GET", "k"]), None);
        t.clock.advance(1);
        assert_eq!(try_run(&t, &mut other, &["GET", "k"]), Some(Frame::Null));
        t.engine.disconnect(&mut monitor);
    }

    #[test]
    fn active_expiry_waits_for_the_pause() {
        let mut t = TestEngine::new();
        t.run(&["SET", "k", "v", "PX", "10"]);
        t.run(&["CLIENT", "PAUSE", "1000", "WRITE"]);
        t.clock.advance(20);
        // Time enough to walk every shard on a loaded machine: the cycle
        // returns once it has, so this costs nothing when it is fast.
        let budget = std::time::Duration::from_secs(10);
        let mut cursor = keel_engine::expire::ExpireCursor::default();
        assert_eq!(
            keel_engine::expire::active_expire_cycle(&t.engine, &mut cursor, budget),
            0
        );
        // Readers see it gone, but it stays stored until the pause ends.
        assert_eq!(t.run(&["GET", "k"]), Frame::Null);
        assert_eq!(t.run(&["EXISTS", "k"]), int(0));
        assert_eq!(t.run(&["DBSIZE"]), int(1));
        t.run(&["CLIENT", "UNPAUSE"]);
        assert_eq!(
            keel_engine::expire::active_expire_cycle(&t.engine, &mut cursor, budget),
            1
        );
    }
}
