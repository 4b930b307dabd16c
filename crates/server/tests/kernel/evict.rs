//! The kernel's `evict` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::config::Config;
use keel_engine::engine::Engine;
use keel_engine::error::CmdError;
use keel_engine::evict::*;
use keel_engine::session::Session;
use keel_engine::spec::{CommandSpec, Flags};
use keel_store::Sample;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;

#[cfg(test)]
mod tests {
    use super::*;

    static USED: AtomicU64 = AtomicU64::new(0);

    fn probe() -> u64 {
        USED.load(Ordering::Relaxed)
    }

    static USED_LONE: AtomicU64 = AtomicU64::new(0);

    fn probe_lone() -> u64 {
        USED_LONE.load(Ordering::Relaxed)
    }

    #[test]
    fn a_lone_volatile_key_is_found_wherever_rounds_start() {
        use keel_engine::testing::*;
        use keel_server::testing::Assembled;
        let (mut t, _rec) = TestEngine::recording(1_700_000_000_000);
        t.engine.used_memory = probe_lone;
        t.run(&["CONFIG", "SET", "maxmemory-policy", "volatile-lru"]);
        // No time budget: the outcome must not depend on this machine's speed.
        t.run(&["CONFIG", "SET", "maxmemory-eviction-tenacity", "100"]);
        t.run(&["CONFIG", "SET", "maxmemory", "1000"]);
        for i in 0..200 {
            t.run(&["SET", &format!("plain{i}"), "x"]);
        }
        // One key the policy may take, in one of the 64 shards: each time,
        // it is evicted rather than the write refused.
        for i in 0..40 {
            USED_LONE.store(0, Ordering::Relaxed);
            t.run(&["SET", &format!("v{i}"), "x", "EX", "100"]);
            USED_LONE.store(5000, Ordering::Relaxed);
            assert_eq!(t.run(&["SET", "more", "x"]), error(OOM), "round {i}");
            assert_eq!(t.run(&["EXISTS", &format!("v{i}")]), int(0), "round {i}");
        }
        USED_LONE.store(0, Ordering::Relaxed);
    }

    #[test]
    fn evicting_logs_dels_and_refuses_writes_once_nothing_is_left() {
        use keel_engine::testing::*;
        use keel_server::testing::Assembled;
        let (mut t, rec) = TestEngine::recording(1_700_000_000_000);
        t.engine.used_memory = probe;
        t.run(&["CONFIG", "SET", "maxmemory-policy", "volatile-ttl"]);
        t.run(&["CONFIG", "SET", "maxmemory", "1000"]);
        // No time budget: on a loaded machine the default one ran out before
        // the last volatile key went, and the next command found two keys.
        t.run(&["CONFIG", "SET", "maxmemory-eviction-tenacity", "100"]);
        for i in 0..10 {
            t.run(&["SET", &format!("v{i}"), "x", "EX", &format!("{}", 100 + i)]);
        }
        t.run(&["SET", "plain", "x"]);
        // The probe never falls: every volatile key goes, then writes are refused.
        USED.store(5000, Ordering::Relaxed);
        assert_eq!(t.run(&["GET", "plain"]), bulk("x"));
        assert_eq!(t.run(&["DBSIZE"]), int(1));
        assert_eq!(t.run(&["SET", "more", "x"]), error(OOM));
        assert_eq!(t.run(&["DEL", "plain"]), int(1));
        USED.store(0, Ordering::Relaxed);
        let dels: Vec<String> = rec
            .entries()
            .into_iter()
            .filter(|(_, argv)| argv[0] == "DEL")
            .map(|(_, argv)| argv[1].clone())
            .collect();
        assert_eq!(dels.len(), 11);
        assert!(dels[..10].iter().all(|k| k.starts_with('v')));
        assert_eq!(t.engine.evictor.evicted_keys.load(Ordering::Relaxed), 10);
    }
}
