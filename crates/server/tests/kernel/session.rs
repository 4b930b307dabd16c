//! The kernel's `session` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::session::*;
use keel_resp::{Frame, Protocol};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    /// Run `argv` and say what the client receives: `None` when CLIENT REPLY
    /// holds the reply back (or the reply writes nothing).
    fn sent(t: &mut TestEngine, argv: &[&str]) -> Option<Frame> {
        let argv: Vec<Bytes> = argv
            .iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        let before = t.session.reply_flags;
        let reply = t.engine.execute(&mut t.session, argv);
        let send = (before | t.session.reply_flags) == 0 || t.session.take_reply_turn(before);
        match reply {
            Frame::Encoded(b) if b.is_empty() => None,
            r if send => Some(decoded(r)),
            _ => None,
        }
    }

    #[test]
    fn client_reply_off_on_skip() {
        let mut t = TestEngine::new();
        let pong = Some(Frame::simple("PONG"));
        assert_eq!(
            sent(&mut t, &["CLIENT", "REPLY", "x"]),
            Some(error("ERR syntax error"))
        );
        assert_eq!(sent(&mut t, &["CLIENT", "REPLY", "ON"]), Some(ok()));
        assert_eq!(sent(&mut t, &["CLIENT", "REPLY", "OFF"]), None);
        assert_eq!(sent(&mut t, &["PING"]), None);
        assert_eq!(sent(&mut t, &["NOPE"]), None);
        // SKIP does nothing while replies are off.
        assert_eq!(sent(&mut t, &["CLIENT", "REPLY", "SKIP"]), None);
        assert_eq!(sent(&mut t, &["CLIENT", "REPLY", "on"]), Some(ok()));
        assert_eq!(sent(&mut t, &["PING"]), pong);
        assert_eq!(sent(&mut t, &["CLIENT", "REPLY", "skip"]), None);
        assert_eq!(sent(&mut t, &["PING"]), None);
        assert_eq!(sent(&mut t, &["PING"]), pong);
        // A skipped SKIP still skips the command after it.
        sent(&mut t, &["CLIENT", "REPLY", "skip"]);
        assert_eq!(sent(&mut t, &["CLIENT", "REPLY", "skip"]), None);
        assert_eq!(sent(&mut t, &["PING"]), None);
        assert_eq!(sent(&mut t, &["PING"]), pong);
        // ON is answered even when it is the skipped command.
        sent(&mut t, &["CLIENT", "REPLY", "skip"]);
        assert_eq!(sent(&mut t, &["CLIENT", "REPLY", "ON"]), Some(ok()));
        // An error counts as the skipped command.
        sent(&mut t, &["CLIENT", "REPLY", "skip"]);
        assert_eq!(sent(&mut t, &["GET"]), None);
        assert_eq!(sent(&mut t, &["PING"]), pong);
        // In a transaction, what comes after OFF is dropped, the header is not.
        sent(&mut t, &["MULTI"]);
        sent(&mut t, &["CLIENT", "REPLY", "OFF"]);
        sent(&mut t, &["PING"]);
        let exec = t.engine.execute(&mut t.session, vec!["EXEC".into()]);
        let mut wire = bytes::BytesMut::new();
        keel_resp::encode(&exec, keel_resp::Protocol::Resp2, &mut wire);
        assert_eq!(&wire[..], b"*2\r\n");
        sent(&mut t, &["MULTI"]);
        sent(&mut t, &["CLIENT", "REPLY", "ON"]);
        sent(&mut t, &["PING"]);
        let exec = t.engine.execute(&mut t.session, vec!["EXEC".into()]);
        assert_eq!(
            exec,
            Frame::Encoded(Bytes::from_static(b"+OK\r\n+PONG\r\n"))
        );
        // RESET turns replies back on and answers.
        sent(&mut t, &["CLIENT", "REPLY", "OFF"]);
        assert_eq!(sent(&mut t, &["RESET"]), Some(Frame::simple("RESET")));
        assert_eq!(sent(&mut t, &["PING"]), pong);
    }
}
