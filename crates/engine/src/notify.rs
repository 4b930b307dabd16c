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
