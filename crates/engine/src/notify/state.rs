//! Keyspace notifications' data: the event [`Class`]es, `notify-keyspace-events`
//! parsed and shown, and the enabled set ([`Notifications`]) configuration holds.
//! Names nothing above it; the parent module publishes.

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
