//! The kernel's `pubsub` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::{Bytes, BytesMut};
use hashbrown::HashMap;
use keel_engine::monitor::MonitorFeed;
use keel_engine::pubsub::*;
use keel_engine::session::{ClientHandle, Session};
use keel_resp::{encode, Frame, Protocol};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[cfg(test)]
mod tests {
    use super::*;
    use keel_engine::testing::TestEngine;
    use keel_server::testing::Assembled;

    fn taken(feed: &MonitorFeed) -> String {
        let mut out = BytesMut::new();
        feed.take_into(&mut out);
        String::from_utf8_lossy(&out).replace("\r\n", " ")
    }

    #[test]
    fn each_receiver_gets_its_protocol_and_patterns_match_by_glob() {
        let t = TestEngine::new();
        let mut a = t.other_session();
        let mut b = t.other_session();
        b.set_proto(Protocol::Resp3);
        let ps = &t.engine.pubsub;
        ps.subscribe(&mut a, Kind::Channel, &[Bytes::from_static(b"news")]);
        ps.subscribe(&mut b, Kind::Pattern, &[Bytes::from_static(b"n[a-e]ws")]);
        assert_eq!(ps.publish(Kind::Channel, b"news", b"x"), 2);
        assert_eq!(ps.publish(Kind::Channel, b"nzws", b"y"), 0);
        // A shard channel of the same name is another channel.
        assert_eq!(ps.publish(Kind::Shard, b"news", b"z"), 0);
        let fa = a.push_feed().expect("a subscribed");
        let fb = b.push_feed().expect("b subscribed");
        assert_eq!(taken(&fa), "*3 $7 message $4 news $1 x ");
        assert_eq!(taken(&fb), ">4 $8 pmessage $8 n[a-e]ws $4 news $1 x ");
        assert_eq!(ps.active(Kind::Pattern), 1);
        ps.drop_all(&mut b);
        assert_eq!(ps.active(Kind::Pattern), 0);
        assert!(!subscribed(&b));
        assert!(subscribed(&a));
        assert_eq!(a.handle.subs[0].load(Ordering::Relaxed), 1);
    }

    #[test]
    fn publish_skips_the_lock_only_while_nobody_listens() {
        let t = TestEngine::new();
        let mut a = t.other_session();
        let ps = &t.engine.pubsub;
        assert!(!ps.may_deliver(Kind::Channel) && !ps.may_deliver(Kind::Shard));
        ps.subscribe(&mut a, Kind::Pattern, &[Bytes::from_static(b"p*")]);
        // A pattern makes every channel publication look; shard ones still skip.
        assert!(ps.may_deliver(Kind::Channel) && !ps.may_deliver(Kind::Shard));
        assert_eq!(ps.publish(Kind::Channel, b"px", b"m"), 1);
        ps.subscribe(&mut a, Kind::Shard, &[Bytes::from_static(b"s")]);
        assert!(ps.may_deliver(Kind::Shard));
        ps.unsubscribe(&mut a, Kind::Pattern, &[]);
        assert!(!ps.may_deliver(Kind::Channel));
        assert_eq!(ps.publish(Kind::Channel, b"px", b"m"), 0);
        ps.drop_all(&mut a);
        assert!(!ps.may_deliver(Kind::Shard));
        assert_eq!(ps.active(Kind::Shard), 0);
    }
}
