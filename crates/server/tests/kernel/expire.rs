//! The kernel's `expire` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::engine::Engine;
use keel_engine::expire::*;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

#[cfg(test)]
mod tests {
    use super::*;
    use keel_engine::testing::*;
    use keel_server::testing::Assembled;

    #[test]
    fn removes_due_keys_without_reads() {
        let mut t = TestEngine::new();
        for i in 0..1000 {
            t.run(&["SET", &format!("k{i}"), "v", "PX", "100"]);
        }
        t.run(&["SET", "keep", "v"]);
        let mut cur = ExpireCursor::default();
        assert_eq!(
            active_expire_cycle(&t.engine, &mut cur, Duration::from_secs(1)),
            0
        );
        t.clock.advance(100);
        assert_eq!(
            active_expire_cycle(&t.engine, &mut cur, Duration::from_secs(1)),
            1000
        );
        assert_eq!(t.run(&["GET", "keep"]), bulk("v"));
    }

    #[test]
    fn zero_budget_still_makes_progress() {
        let mut t = TestEngine::new();
        for i in 0..5000 {
            t.run(&["SET", &format!("k{i}"), "v", "PX", "1"]);
        }
        t.clock.advance(2);
        let mut cur = ExpireCursor::default();
        let mut total = 0;
        for _ in 0..10_000 {
            let n = active_expire_cycle(&t.engine, &mut cur, Duration::ZERO);
            total += n;
            if total == 5000 {
                break;
            }
        }
        assert_eq!(total, 5000);
    }
}
