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

use crate::kernel::CommandSpec;
use crate::kernel::Ctx;
use crate::kernel::Engine;
use crate::pubsub::state::Kind;

pub(crate) mod state;
pub use self::state::{flags_to_string, parse_flags, Class, Notifications, INVALID_CLASS};

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
