//! `keel-admin`'s `pubsub` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use keel_admin::pubsub::*;
use keel_engine::args::Args;
use keel_engine::ctx::Ctx;
use keel_engine::engine::Engine;
use keel_engine::error::CmdError;
use keel_engine::pubsub::Kind;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    /// What the client is sent for `argv`, CRLF shown as spaces.
    fn wire(t: &mut TestEngine, argv: &[&str]) -> String {
        let argv = argv.iter().map(|a| a.to_string().into()).collect();
        let f = t.engine.execute(&mut t.session, argv);
        let mut out = BytesMut::new();
        keel_resp::encode(&f, keel_resp::Protocol::Resp2, &mut out);
        String::from_utf8_lossy(&out).replace("\r\n", " ")
    }

    #[test]
    fn subscribe_publish_and_subscribed_mode() {
        let mut t = TestEngine::new();
        let mut other = t.other_session();
        assert_eq!(
            wire(&mut t, &["SUBSCRIBE", "a", "b", "a"]),
            "*3 $9 subscribe $1 a :1 *3 $9 subscribe $1 b :2 *3 $9 subscribe $1 a :2 "
        );
        assert_eq!(
            wire(&mut t, &["PSUBSCRIBE", "a*"]),
            "*3 $10 psubscribe $2 a* :3 "
        );
        assert_eq!(t.run(&["GET", "k"]), error("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"));
        assert_eq!(t.run(&["PING"]), Frame::Array(vec![bulk("pong"), bulk("")]));
        assert_eq!(
            t.run_as(&mut other, &["PUBLISH", "a", "hi"]),
            Frame::Integer(2)
        );
        assert_eq!(
            t.run_as(&mut other, &["PUBSUB", "NUMSUB", "a", "z"]),
            Frame::Array(vec![
                bulk("a"),
                Frame::Integer(1),
                bulk("z"),
                Frame::Integer(0)
            ])
        );
        assert_eq!(
            t.run_as(&mut other, &["PUBSUB", "NUMPAT"]),
            Frame::Integer(1)
        );
        let feed = t.session.push_feed().expect("subscribed");
        let mut out = BytesMut::new();
        feed.take_into(&mut out);
        assert_eq!(
            String::from_utf8_lossy(&out).replace("\r\n", " "),
            "*3 $7 message $1 a $2 hi *4 $8 pmessage $2 a* $1 a $2 hi "
        );
        assert_eq!(
            wire(&mut t, &["UNSUBSCRIBE"]),
            "*3 $11 unsubscribe $1 a :2 *3 $11 unsubscribe $1 b :1 "
        );
        assert_eq!(t.run(&["RESET"]), Frame::simple("RESET"));
        assert_eq!(
            wire(&mut t, &["PUNSUBSCRIBE"]),
            "*3 $12 punsubscribe $-1 :0 "
        );
        assert_eq!(t.run(&["GET", "k"]), Frame::Null);
        assert_eq!(
            t.run_as(&mut other, &["PUBLISH", "a", "hi"]),
            Frame::Integer(0)
        );
        t.run_as(&mut other, &["SSUBSCRIBE", "s"]);
        assert_eq!(t.run(&["SPUBLISH", "s", "x"]), Frame::Integer(1));
        t.engine.disconnect(&mut other);
        assert_eq!(t.run(&["SPUBLISH", "s", "x"]), Frame::Integer(0));
    }
}
