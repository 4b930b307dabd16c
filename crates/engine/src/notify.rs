//! Keyspace notifications: `notify-keyspace-events` and the messages commands
//! publish when they change (or miss) keys.
//!
//! A handler calls [`crate::Ctx::notify`] at the point Redis emits its event,
//! while the command runs and still holds its shard locks. When the event's
//! class is enabled, a message goes through the pub/sub registry to
//! `__keyspace@<db>__:<key>` (the event name, with `K`) and to
//! `__keyevent@<db>__:<event>` (the key, with `E`). Publishing while the
//! command runs keeps the messages in command order, as in Redis.
//!
//! Cost when off: one relaxed load of the enabled classes per call.

use crate::ctx::Ctx;
use crate::engine::Engine;
use crate::pubsub::Kind;
use crate::spec::CommandSpec;
use std::sync::atomic::{AtomicU32, Ordering};

/// A class of events, with Redis's bit for it (`notify-keyspace-events`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Class(pub u32);

impl Class {
    /// `K`: publish on `__keyspace@<db>__:<key>`.
    pub const KEYSPACE: Class = Class(1 << 0);
    /// `E`: publish on `__keyevent@<db>__:<event>`.
    pub const KEYEVENT: Class = Class(1 << 1);
    /// `g`: DEL, EXPIRE, RENAME, ...
    pub const GENERIC: Class = Class(1 << 2);
    /// `$`
    pub const STRING: Class = Class(1 << 3);
    /// `l`
    pub const LIST: Class = Class(1 << 4);
    /// `s`
    pub const SET: Class = Class(1 << 5);
    /// `h`
    pub const HASH: Class = Class(1 << 6);
    /// `z`
    pub const ZSET: Class = Class(1 << 7);
    /// `x`: a key reached its deadline and was removed.
    pub const EXPIRED: Class = Class(1 << 8);
    /// `e`: a key was evicted for maxmemory.
    pub const EVICTED: Class = Class(1 << 9);
    /// `t`: streams.
    pub const STREAM: Class = Class(1 << 10);
    /// `m`: a read found no key. Not part of `A`.
    pub const KEY_MISS: Class = Class(1 << 11);
    /// `d`: module types.
    pub const MODULE: Class = Class(1 << 13);
    /// `n`: a key was created. Not part of `A`.
    pub const NEW: Class = Class(1 << 14);
    /// `A`: every class but `m` and `n`.
    pub const ALL: Class = Class(
        Self::GENERIC.0
            | Self::STRING.0
            | Self::LIST.0
            | Self::SET.0
            | Self::HASH.0
            | Self::ZSET.0
            | Self::EXPIRED.0
            | Self::EVICTED.0
            | Self::STREAM.0
            | Self::MODULE.0,
    );
}

/// Redis's refusal of a character that names no class.
pub const INVALID_CLASS: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// The classes named by a `notify-keyspace-events` value, `None` when a
/// character names none.
pub fn parse_flags(s: &str) -> Option<u32> {
    let mut flags = 0;
    for c in s.chars() {
        flags |= match c {
            'A' => Class::ALL.0,
            'g' => Class::GENERIC.0,
            '$' => Class::STRING.0,
            'l' => Class::LIST.0,
            's' => Class::SET.0,
            'h' => Class::HASH.0,
            'z' => Class::ZSET.0,
            'x' => Class::EXPIRED.0,
            'e' => Class::EVICTED.0,
            'K' => Class::KEYSPACE.0,
            'E' => Class::KEYEVENT.0,
            't' => Class::STREAM.0,
            'm' => Class::KEY_MISS.0,
            'd' => Class::MODULE.0,
            'n' => Class::NEW.0,
            _ => return None,
        };
    }
    Some(flags)
}

/// The form CONFIG GET prints: `A` for every class of `A` (then `n` is not
/// shown, as in Redis), else the classes in a fixed order; then `K`, `E`, `m`.
pub fn flags_to_string(flags: u32) -> String {
    let mut out = String::new();
    if flags & Class::ALL.0 == Class::ALL.0 {
        out.push('A');
    } else {
        for (class, c) in [
            (Class::GENERIC, 'g'),
            (Class::STRING, '$'),
            (Class::LIST, 'l'),
            (Class::SET, 's'),
            (Class::HASH, 'h'),
            (Class::ZSET, 'z'),
            (Class::EXPIRED, 'x'),
            (Class::EVICTED, 'e'),
            (Class::STREAM, 't'),
            (Class::MODULE, 'd'),
            (Class::NEW, 'n'),
        ] {
            if flags & class.0 != 0 {
                out.push(c);
            }
        }
    }
    for (class, c) in [
        (Class::KEYSPACE, 'K'),
        (Class::KEYEVENT, 'E'),
        (Class::KEY_MISS, 'm'),
    ] {
        if flags & class.0 != 0 {
            out.push(c);
        }
    }
    out
}

/// The enabled classes, one atomic read on every event.
#[derive(Default)]
pub struct Notifications {
    flags: AtomicU32,
}

impl Notifications {
    pub fn set(&self, flags: u32) {
        self.flags.store(flags, Ordering::Relaxed);
    }

    pub fn get(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// Whether events of `class` are published now.
    #[inline]
    pub fn enabled(&self, class: Class) -> bool {
        self.get() & class.0 != 0
    }
}

/// Publish `event` on `key` in database `db` if its class is enabled.
#[inline]
pub fn notify(engine: &Engine, class: Class, event: &str, db: usize, key: &[u8]) {
    let flags = engine.config.ops.notify.get();
    if flags & class.0 == 0 {
        return;
    }
    publish(engine, flags, event, db, key);
}

/// Before a command runs: while `n` is on, have the tables it holds record
/// the keys it creates, for `new`. DEBUG is left out: what DEBUG RELOAD
/// loads is not created by a client, and Redis publishes nothing for it.
/// Returns whether tracking was started (one atomic load when `n` is off).
#[inline]
pub(crate) fn track_created(ctx: &mut Ctx<'_>, spec: &CommandSpec) -> bool {
    if !ctx.engine.config.ops.notify.enabled(Class::NEW) || spec.name == "DEBUG" {
        return false;
    }
    ctx.guards.for_each(|shard| {
        for db in 0..shard.databases() {
            shard.db(db).set_track_created(true);
        }
    });
    true
}

/// Publish `new` for each key created since the last call, in creation order
/// per table; unless `keep`, stop tracking (the command is over).
pub(crate) fn publish_created(ctx: &mut Ctx<'_>, keep: bool) {
    let engine = ctx.engine;
    if keep && !engine.config.ops.notify.enabled(Class::NEW) {
        return;
    }
    ctx.guards.for_each(|shard| {
        for db in 0..shard.databases() {
            let table = shard.db(db);
            for key in table.drain_created() {
                notify(engine, Class::NEW, "new", db, key.as_slice());
            }
            if !keep {
                table.set_track_created(false);
            }
        }
    });
}

/// The hook for eviction (`maxmemory`), which Keel does not have yet: each key
/// removed to free memory is to be published here, while its shard is locked.
pub fn evicted(engine: &Engine, db: usize, key: &[u8]) {
    notify(engine, Class::EVICTED, "evicted", db, key);
}

#[cold]
fn publish(engine: &Engine, flags: u32, event: &str, db: usize, key: &[u8]) {
    // With no subscriber at all the channel names are not even built: the
    // same test `publish` makes, before the two allocations.
    if !engine.pubsub.may_deliver(Kind::Channel) {
        return;
    }
    if flags & Class::KEYSPACE.0 != 0 {
        let mut channel = format!("__keyspace@{db}__:").into_bytes();
        channel.extend_from_slice(key);
        engine
            .pubsub
            .publish(Kind::Channel, &channel, event.as_bytes());
    }
    if flags & Class::KEYEVENT.0 != 0 {
        let channel = format!("__keyevent@{db}__:{event}");
        engine
            .pubsub
            .publish(Kind::Channel, channel.as_bytes(), key);
    }
}

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

    use crate::testing::*;
    use bytes::{Bytes, BytesMut};

    /// A session psubscribed to every keyspace and keyevent channel.
    fn listener(t: &TestEngine) -> crate::session::Session {
        let mut s = t.other_session();
        let pattern = [Bytes::from_static(b"__key*__:*")];
        t.engine
            .pubsub
            .subscribe(&mut s, crate::pubsub::Kind::Pattern, &pattern);
        s
    }

    /// The (channel, message) pairs queued for `s`, from RESP2 pmessages.
    fn messages(s: &crate::session::Session) -> Vec<(String, String)> {
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
        let mut cursor = crate::expire::ExpireCursor::default();
        let budget = std::time::Duration::from_secs(1);
        assert_eq!(
            crate::expire::active_expire_cycle(&t.engine, &mut cursor, budget),
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
