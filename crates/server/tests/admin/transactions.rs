//! `keel-admin`'s `transactions` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_admin::transactions::*;
use keel_engine::args::Args;
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use std::sync::atomic::Ordering;

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    #[test]
    fn exec_runs_queue() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["MULTI"]), ok());
        assert_eq!(t.run(&["SET", "a", "1"]), Frame::simple("QUEUED"));
        assert_eq!(t.run(&["GET", "a"]), Frame::simple("QUEUED"));
        assert_eq!(t.run(&["EXEC"]), Frame::Array(vec![ok(), bulk("1")]));
        assert_eq!(t.run(&["EXEC"]), error("ERR EXEC without MULTI"));
    }

    #[test]
    fn arity_error_aborts_exec() {
        let mut t = TestEngine::new();
        t.run(&["MULTI"]);
        assert_eq!(
            t.run(&["GET"]),
            error("ERR wrong number of arguments for 'get' command")
        );
        t.run(&["SET", "a", "1"]);
        assert_eq!(
            t.run(&["EXEC"]),
            error("EXECABORT Transaction discarded because of previous errors.")
        );
        assert_eq!(t.run(&["GET", "a"]), Frame::Null);
    }

    #[test]
    fn watch_detects_other_writer() {
        let mut t = TestEngine::new();
        let mut other = t.other_session();
        t.run(&["WATCH", "k"]);
        t.run(&["MULTI"]);
        t.run(&["SET", "k", "mine"]);
        t.run_as(&mut other, &["SET", "k", "theirs"]);
        assert_eq!(t.run(&["EXEC"]), Frame::NullArray);
        assert_eq!(t.run(&["GET", "k"]), bulk("theirs"));
        // Watches are gone after EXEC: the next transaction succeeds.
        t.run(&["MULTI"]);
        t.run(&["SET", "k", "mine"]);
        assert_eq!(t.run(&["EXEC"]), Frame::Array(vec![ok()]));
    }
}

#[cfg(test)]
mod expiry_tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    #[test]
    fn watched_key_expiring_unread_aborts_exec() {
        let mut t = TestEngine::new();
        t.run(&["SET", "k", "v", "PX", "100"]);
        t.run(&["WATCH", "k"]);
        t.run(&["MULTI"]);
        t.run(&["SET", "x", "1"]);
        t.clock.advance(100);
        assert_eq!(t.run(&["EXEC"]), Frame::NullArray);
        assert_eq!(t.run(&["GET", "x"]), Frame::Null);
    }

    #[test]
    fn watching_the_same_key_twice_is_one_watch() {
        let mut t = TestEngine::new();
        t.run(&["WATCH", "k", "k"]);
        t.run(&["WATCH", "k"]);
        assert_eq!(t.session.watched.len(), 1);
        t.run(&["UNWATCH"]);
        assert!(!t.engine.watches.any());
    }
}

#[cfg(test)]
mod shard_walk_tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    /// SCAN walks shards one lock at a time on its own, and inside EXEC (where
    /// every shard is already held) it reads the held shards instead.
    #[test]
    fn scan_inside_exec_sees_queued_writes() {
        let mut t = TestEngine::new();
        t.run(&["MULTI"]);
        for k in ["a", "b", "c"] {
            t.run(&["SET", k, "v"]);
        }
        t.run(&["SCAN", "0", "COUNT", "1000"]);
        let Frame::Array(replies) = t.run(&["EXEC"]) else {
            panic!("EXEC should reply an array")
        };
        let Some(Frame::Array(scan)) = replies.last() else {
            panic!("SCAN should reply an array")
        };
        let Some(Frame::Array(keys)) = scan.get(1) else {
            panic!("SCAN should list keys")
        };
        assert_eq!(scan[0], bulk("0"));
        assert_eq!(keys.len(), 3);
    }
}
