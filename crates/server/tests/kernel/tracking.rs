//! The kernel's `tracking` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::{BufMut, Bytes, BytesMut};
use hashbrown::HashMap;
use keel_engine::ctx::Ctx;
use keel_engine::engine::Engine;
use keel_engine::error::CmdError;
use keel_engine::session::{ClientHandle, Session};
use keel_engine::spec::{CommandSpec, Flags, Group};
use keel_engine::tracking::*;
use keel_resp::Frame;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

#[cfg(test)]
mod tests {
    use super::*;
    use keel_engine::testing::TestEngine;
    use keel_resp::Protocol;
    use keel_server::testing::Assembled;

    fn taken(handle: &Arc<ClientHandle>) -> String {
        let mut out = BytesMut::new();
        handle.push_feed().0.take_into(&mut out);
        String::from_utf8_lossy(&out).replace("\r\n", " ")
    }

    fn run(t: &TestEngine, s: &mut Session, argv: &[&str]) -> Frame {
        let argv = argv
            .iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        t.engine.execute(s, argv)
    }

    #[test]
    fn a_read_key_is_invalidated_once_then_forgotten() {
        let t = TestEngine::new();
        let mut reader = t.other_session();
        reader.set_proto(Protocol::Resp3);
        let mut writer = t.other_session();
        run(&t, &mut reader, &["CLIENT", "TRACKING", "ON"]);
        run(&t, &mut reader, &["GET", "k"]);
        run(&t, &mut reader, &["MGET", "k", "j"]);
        assert_eq!(t.engine.tracking.counts(), (1, 2, 2, 0));
        run(&t, &mut writer, &["SET", "k", "1"]);
        assert_eq!(taken(&reader.handle), ">2 $10 invalidate *1 $1 k ");
        run(&t, &mut writer, &["SET", "k", "2"]);
        assert_eq!(taken(&reader.handle), "");
        assert_eq!(t.engine.tracking.counts(), (1, 1, 1, 0));
        // Writes to keys in another database invalidate too: the table
        // knows key names only.
        run(&t, &mut writer, &["SELECT", "1"]);
        run(&t, &mut writer, &["SET", "j", "1"]);
        assert_eq!(taken(&reader.handle), ">2 $10 invalidate *1 $1 j ");
    }

    #[test]
    fn noloop_optin_and_flush() {
        let t = TestEngine::new();
        let mut c = t.other_session();
        c.set_proto(Protocol::Resp3);
        run(&t, &mut c, &["CLIENT", "TRACKING", "ON", "OPTIN", "NOLOOP"]);
        run(&t, &mut c, &["GET", "a"]);
        run(&t, &mut c, &["CLIENT", "CACHING", "YES"]);
        run(&t, &mut c, &["GET", "b"]);
        run(&t, &mut c, &["GET", "c"]);
        assert_eq!(t.engine.tracking.counts().1, 1);
        run(&t, &mut c, &["SET", "b", "1"]);
        assert_eq!(taken(&c.handle), "");
        run(&t, &mut c, &["FLUSHALL"]);
        assert_eq!(taken(&c.handle), ">2 $10 invalidate _ ");
        assert_eq!(t.engine.tracking.counts(), (1, 0, 0, 0));
        run(&t, &mut c, &["CLIENT", "TRACKING", "OFF"]);
        assert!(!t.engine.tracking.active());
    }

    #[test]
    fn bcast_sends_matching_keys_per_prefix_sorted() {
        let t = TestEngine::new();
        let mut c = t.other_session();
        c.set_proto(Protocol::Resp3);
        let mut w = t.other_session();
        let on = [
            "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "b", "PREFIX", "a",
        ];
        assert_eq!(run(&t, &mut c, &on), Frame::ok());
        run(
            &t,
            &mut w,
            &["MSET", "a2", "1", "c", "1", "b1", "1", "a1", "1"],
        );
        assert_eq!(taken(&c.handle), "");
        t.engine.tracking.broadcast(&t.engine);
        assert_eq!(
            taken(&c.handle),
            ">2 $10 invalidate *2 $2 a1 $2 a2 >2 $10 invalidate *1 $2 b1 "
        );
        assert_eq!(t.engine.tracking.counts(), (1, 0, 0, 2));
    }

    /// Readers and writers on many threads, in every mode at once: no lock
    /// order can deadlock, and every key a reader read after its last
    /// invalidation is either still in the table or was invalidated.
    #[test]
    fn threads_track_and_write_without_deadlock() {
        let t = std::sync::Arc::new(TestEngine::new());
        let modes: [&[&str]; 4] = [
            &["CLIENT", "TRACKING", "ON"],
            &["CLIENT", "TRACKING", "ON", "NOLOOP"],
            &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "k1"],
            &["CLIENT", "TRACKING", "ON", "OPTOUT"],
        ];
        let workers: Vec<_> = (0..8)
            .map(|w| {
                let t = t.clone();
                let mode = modes[w % 4];
                std::thread::spawn(move || {
                    let mut s = t.other_session();
                    s.set_proto(Protocol::Resp3);
                    run(&t, &mut s, mode);
                    for i in 0..400 {
                        let key = format!("k{}", (i * 7 + w) % 23);
                        match i % 5 {
                            0 => run(&t, &mut s, &["SET", &key, "v"]),
                            1 => run(&t, &mut s, &["FLUSHALL"]),
                            2 => run(&t, &mut s, &["CLIENT", "TRACKING", "OFF"]),
                            3 => run(&t, &mut s, mode),
                            _ => run(&t, &mut s, &["MGET", &key, "k1", "k2"]),
                        };
                        t.engine.tracking.broadcast(&t.engine);
                        t.engine.tracking.cron(&t.engine);
                        let _ = taken(&s.handle);
                    }
                    t.engine.disconnect(&mut s);
                })
            })
            .collect();
        for w in workers {
            w.join().expect("worker");
        }
        let (clients, keys, items, prefixes) = t.engine.tracking.counts();
        assert_eq!((clients, prefixes), (0, 0));
        assert!(items >= keys);
    }

    #[test]
    fn expiry_lazy_or_active_invalidates() {
        let t = TestEngine::new();
        let mut c = t.other_session();
        c.set_proto(Protocol::Resp3);
        let mut other = t.other_session();
        run(&t, &mut c, &["CLIENT", "TRACKING", "ON"]);
        run(&t, &mut c, &["SET", "lazy", "1", "PX", "100"]);
        run(&t, &mut c, &["SET", "active", "1", "PX", "100"]);
        run(&t, &mut c, &["MGET", "lazy", "active"]);
        t.clock.advance(200);
        // Another client finds `lazy` expired: its reader is told.
        assert_eq!(run(&t, &mut other, &["GET", "lazy"]), Frame::Null);
        assert_eq!(taken(&c.handle), ">2 $10 invalidate *1 $4 lazy ");
        let mut cursor = keel_engine::expire::ExpireCursor::default();
        keel_engine::expire::active_expire_cycle(
            &t.engine,
            &mut cursor,
            std::time::Duration::from_secs(1),
        );
        assert_eq!(taken(&c.handle), ">2 $10 invalidate *1 $6 active ");
        assert_eq!(t.engine.tracking.counts().1, 0);
    }

    #[test]
    fn the_table_is_kept_within_its_limit() {
        let t = TestEngine::new();
        t.engine
            .config
            .ops
            .tracking_max_keys
            .store(2, Ordering::Relaxed);
        let mut c = t.other_session();
        c.set_proto(Protocol::Resp3);
        run(&t, &mut c, &["CLIENT", "TRACKING", "ON"]);
        run(&t, &mut c, &["MGET", "a", "b", "c"]);
        assert_eq!(t.engine.tracking.counts().1, 2);
        assert!(taken(&c.handle).starts_with(">2 $10 invalidate *1 $1 "));
    }
}
