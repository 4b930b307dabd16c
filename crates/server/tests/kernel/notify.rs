//! The kernel's `notify` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use keel_engine::ctx::Ctx;
use keel_engine::engine::Engine;
use keel_engine::notify::*;
use keel_engine::pubsub::Kind;
use keel_engine::spec::CommandSpec;
use std::sync::atomic::{AtomicU32, Ordering};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_back_in_redis_form() {
        for (set, get) in [
            ("KEA", "AKE"),
            ("", ""),
            ("Agm", "Am"),
            ("EKn", "nKE"),
            ("Ax", "A"),
            ("gxKE", "gxKE"),
            ("KEg$lshzxetd", "AKE"),
            ("mn", "nm"),
            ("An", "A"),
            ("AnmKE", "AKEm"),
            ("dn", "dn"),
            ("$lshz", "$lshz"),
            ("te", "et"),
        ] {
            let flags = parse_flags(set).expect(set);
            assert_eq!(flags_to_string(flags), get, "{set}");
            // The printed form parses back to the same classes, except that
            // `n` hidden behind `A` is not printed.
            let again = parse_flags(get).expect(get);
            assert_eq!(
                again,
                flags & !(Class::NEW.0 * u32::from(set.contains('A')))
            );
        }
    }

    #[test]
    fn unknown_characters_are_refused() {
        for bad in ["Q", "K E", "a", "KEA!", "é"] {
            assert_eq!(parse_flags(bad), None, "{bad}");
        }
        assert_eq!(parse_flags("A"), Some(Class::ALL.0));
        assert_eq!(
            parse_flags("KE"),
            Some(Class::KEYSPACE.0 | Class::KEYEVENT.0)
        );
    }

    use keel_engine::testing::*;

    use bytes::{Bytes, BytesMut};
    use keel_server::testing::Assembled;

    /// A session psubscribed to every keyspace and keyevent channel.
    fn listener(t: &TestEngine) -> keel_engine::session::Session {
        let mut s = t.other_session();
        let pattern = [Bytes::from_static(b"__key*__:*")];
        t.engine
            .pubsub
            .subscribe(&mut s, keel_engine::pubsub::Kind::Pattern, &pattern);
        s
    }

    /// The (channel, message) pairs queued for `s`, from RESP2 pmessages.
    fn messages(s: &keel_engine::session::Session) -> Vec<(String, String)> {
        let mut out = BytesMut::new();
        if let Some(feed) = s.push_feed() {
            feed.take_into(&mut out);
        }
        let text = String::from_utf8_lossy(&out).to_string();
        let parts: Vec<&str> = text.split("\r\n").collect();
        // *4 $8 pmessage $n pattern $n channel $n message
        parts
            .chunks(9)
            .filter(|c| c.len() == 9)
            .map(|c| (c[6].to_string(), c[8].to_string()))
            .collect()
    }

    #[test]
    fn commands_publish_keyspace_and_keyevent_messages_in_order() {
        let mut t = TestEngine::new();
        let s = listener(&t);
        t.run(&["RPUSH", "l", "a"]);
        assert!(messages(&s).is_empty(), "nothing while off");
        t.run(&["CONFIG", "SET", "notify-keyspace-events", "KEl"]);
        t.run(&["RPUSH", "l", "b"]);
        t.run(&["SET", "s", "v"]);
        t.run(&["LPOP", "l", "2"]);
        let pair = |c: &str, m: &str| (c.to_string(), m.to_string());
        assert_eq!(
            messages(&s),
            vec![
                pair("__keyspace@0__:l", "rpush"),
                pair("__keyevent@0__:rpush", "l"),
                pair("__keyspace@0__:l", "lpop"),
                pair("__keyevent@0__:lpop", "l"),
            ],
            "lists only; the emptied list's `del` is generic"
        );
        t.run(&["CONFIG", "SET", "notify-keyspace-events", "Egx"]);
        t.run(&["SET", "k", "v", "PX", "10"]);
        t.clock.advance(20);
        t.run(&["GET", "k"]);
        assert_eq!(
            messages(&s),
            vec![
                pair("__keyevent@0__:expire", "k"),
                pair("__keyevent@0__:expired", "k"),
            ]
        );
    }

    #[test]
    fn active_expiry_publishes_expired() {
        let mut t = TestEngine::new();
        let s = listener(&t);
        t.run(&["CONFIG", "SET", "notify-keyspace-events", "Ex"]);
        t.run(&["SELECT", "3"]);
        t.run(&["SET", "k", "v", "PX", "10"]);
        t.clock.advance(20);
        let mut cursor = keel_engine::expire::ExpireCursor::default();
        let budget = std::time::Duration::from_secs(1);
        assert_eq!(
            keel_engine::expire::active_expire_cycle(&t.engine, &mut cursor, budget),
            1
        );
        assert_eq!(
            messages(&s),
            vec![("__keyevent@3__:expired".to_string(), "k".to_string())]
        );
    }

    #[test]
    fn new_is_published_before_the_event_that_created_the_key() {
        let mut t = TestEngine::new();
        let s = listener(&t);
        t.run(&["CONFIG", "SET", "notify-keyspace-events", "Eng$"]);
        t.run(&["SET", "a", "1"]);
        t.run(&["SET", "a", "2"]);
        t.run(&["RENAME", "a", "b"]);
        let got: Vec<String> = messages(&s)
            .into_iter()
            .map(|(c, m)| format!("{} {m}", c.trim_start_matches("__keyevent@0__:")))
            .collect();
        assert_eq!(
            got,
            [
                "new a",
                "set a",
                "set a",
                "new b",
                "rename_from a",
                "rename_to b"
            ]
        );
    }

    #[test]
    fn enabled_checks_the_class() {
        let n = Notifications::default();
        assert!(!n.enabled(Class::GENERIC));
        n.set(parse_flags("Kl").unwrap_or(0));
        assert!(n.enabled(Class::LIST));
        assert!(!n.enabled(Class::GENERIC));
    }
}
