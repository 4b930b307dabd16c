//! CLIENT PAUSE: hold back clients' commands until CLIENT UNPAUSE or a deadline.
//!
//! Redis 7.0's rules: one pause in force, whose mode and deadline are the most
//! restrictive and the latest asked for; `WRITE` holds commands that may change
//! data or replicate (flags `write` or `may_replicate`, and EXEC when it queued
//! one), `ALL` holds every command of every normal client, including
//! CLIENT UNPAUSE itself (the pause then ends at its deadline). A held command
//! waits before MULTI could queue it; the commands pipelined behind it wait too,
//! so a connection's order is kept. Monitors are never held, and keys are not
//! expired by the active cycle while a pause is in force.
//!
//! The executor pays one relaxed atomic load per command when nothing is
//! paused ([`Pause::active`]). A held command is handed back to the network
//! layer in `Session::postponed`; the connection waits for [`Pause::wait`] or the
//! deadline and then runs it again.

use crate::declare::{Flags, Keys};
use crate::guards::Guards;
use crate::kernel::CommandSpec;
use crate::kernel::Engine;
use crate::session::Session;

pub(crate) mod state;
pub use self::state::{HoldGuard, Pause, PauseMode, PauseWait};

/// Whether the pause in force holds `spec` from `session` at `now_ms`. Called
/// by the executor only when [`Pause::active`].
pub(crate) fn holds(engine: &Engine, session: &Session, spec: &CommandSpec, now_ms: u64) -> bool {
    // Monitors are replicas to Redis, and replicas are never paused; a blocked
    // command being served was admitted when it was sent.
    if session.monitor.is_some() || session.serving.is_some() {
        return false;
    }
    match engine.pause.current(now_ms) {
        None => false,
        Some((PauseMode::All, _)) => true,
        Some((PauseMode::Write, _)) => {
            may_replicate(spec)
                || (spec.keys == Keys::Queued
                    && session.multi.iter().flatten().any(|argv| {
                        engine
                            .resolve(argv)
                            .is_ok_and(|id| may_replicate(engine.commands.specs[id]))
                    }))
        }
    }
}

/// While a pause is in force, keys a command finds expired read as missing but
/// stay stored, as in Redis: nothing is deleted (or logged as deleted) until the
/// pause ends. Returns whether it held the command's tables.
pub(crate) fn hold_expired(engine: &Engine, guards: &mut Guards<'_>, now_ms: u64) -> bool {
    if !engine.pause.holds_expiry(now_ms) {
        return false;
    }
    set_hold(guards, true);
    true
}

/// Undo [`hold_expired`] once the command is done.
pub(crate) fn release_expired(guards: &mut Guards<'_>) {
    set_hold(guards, false);
}

fn set_hold(guards: &mut Guards<'_>, on: bool) {
    guards.for_each(|shard| {
        for db in 0..shard.databases() {
            shard.db(db).set_hold_expired(on);
        }
    });
}

fn may_replicate(spec: &CommandSpec) -> bool {
    spec.flags.contains(Flags::WRITE) || spec.flags.contains(Flags::MAY_REPLICATE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientHandle;
    use std::sync::atomic::Ordering;

    #[test]
    fn strictest_mode_and_latest_deadline_win() {
        let p = Pause::default();
        assert!(!p.active());
        p.pause(PauseMode::All, 1_150, 1_000);
        p.pause(PauseMode::Write, 1_400, 1_000);
        assert_eq!(p.current(1_200), Some((PauseMode::All, 1_400)));
        assert_eq!(p.current(1_400), None);
        assert!(!p.active());
        // An expired pause does not lend its mode to the next one.
        p.pause(PauseMode::All, 1_500, 1_400);
        p.pause(PauseMode::Write, 2_000, 1_600);
        assert_eq!(p.current(1_700), Some((PauseMode::Write, 2_000)));
        p.unpause();
        assert_eq!(p.current(1_700), None);
        // A deadline in the past (timeout 0, or one that overflowed) pauses nothing.
        p.pause(PauseMode::All, 0, 1_700);
        assert_eq!(p.current(1_700), None);
    }

    #[test]
    fn hold_guard_counts() {
        let p = Pause::default();
        let c = ClientHandle::new(1, String::new(), String::new(), 0);
        {
            let _a = p.hold(&c);
            let _b = p.hold(&c);
            assert_eq!(p.waiting(), 2);
            assert!(c.paused.load(Ordering::Relaxed));
        }
        assert_eq!(p.waiting(), 0);
        assert!(!c.paused.load(Ordering::Relaxed));
    }
}
