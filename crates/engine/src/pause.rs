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

use crate::ctx::Guards;
use crate::engine::Engine;
use crate::session::{ClientHandle, Session};
use crate::spec::{CommandSpec, Flags, Keys};
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

/// What a pause holds back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseMode {
    /// Commands that write or may replicate.
    Write,
    /// Every command.
    All,
}

#[derive(Default)]
pub struct Pause {
    on: AtomicBool,
    state: Mutex<State>,
    /// Connections waiting for the pause to end (counted in `blocked_clients`).
    waiting: AtomicUsize,
}

#[derive(Default)]
struct State {
    mode: Option<PauseMode>,
    /// Unix milliseconds; the pause is over from this instant on.
    end_ms: i64,
    wakers: Vec<Waker>,
}

impl State {
    fn clear(&mut self) {
        self.mode = None;
        self.end_ms = 0;
        for w in self.wakers.drain(..) {
            w.wake();
        }
    }
}

impl Pause {
    /// Whether a pause may be in force: the one check on the request path.
    #[inline]
    pub fn active(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// CLIENT PAUSE: pause in `mode` until `end_ms`, keeping a stricter mode or
    /// later deadline already in force.
    pub fn pause(&self, mode: PauseMode, end_ms: i64, now_ms: u64) {
        let mut s = self.state.lock();
        expire(&mut s, now_ms);
        s.mode = Some(s.mode.map_or(mode, |m| m.max(mode)));
        s.end_ms = s.end_ms.max(end_ms);
        self.on.store(true, Ordering::Relaxed);
    }

    /// CLIENT UNPAUSE: release every held client now.
    pub fn unpause(&self) {
        let mut s = self.state.lock();
        s.clear();
        self.on.store(false, Ordering::Relaxed);
    }

    /// The pause in force at `now_ms` and its deadline; ends a pause whose
    /// deadline has passed.
    pub fn current(&self, now_ms: u64) -> Option<(PauseMode, i64)> {
        if !self.active() {
            return None;
        }
        let mut s = self.state.lock();
        if expire(&mut s, now_ms) {
            self.on.store(false, Ordering::Relaxed);
        }
        s.mode.map(|m| (m, s.end_ms))
    }

    /// Whether expiry must leave keys alone now (a pause of either mode).
    pub fn holds_expiry(&self, now_ms: u64) -> bool {
        self.current(now_ms).is_some()
    }

    /// A future that resolves once no pause is in force (UNPAUSE). A deadline
    /// wakes nobody: the waiting connection sleeps until it on its own.
    pub fn wait(&self) -> PauseWait<'_> {
        PauseWait(self)
    }

    /// Connections held by the pause right now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Count a held connection, and flag it for CLIENT LIST, for as long as
    /// the guard lives.
    pub fn hold<'a>(&'a self, client: &'a ClientHandle) -> HoldGuard<'a> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        client.paused.store(true, Ordering::Relaxed);
        HoldGuard(self, client)
    }
}

/// Ends a pause whose deadline has passed; returns whether it did.
fn expire(s: &mut State, now_ms: u64) -> bool {
    if s.mode.is_some() && s.end_ms <= i64::try_from(now_ms).unwrap_or(i64::MAX) {
        s.clear();
        return true;
    }
    false
}

/// See [`Pause::hold`].
pub struct HoldGuard<'a>(&'a Pause, &'a ClientHandle);

impl Drop for HoldGuard<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
        self.1.paused.store(false, Ordering::Relaxed);
    }
}

/// See [`Pause::wait`].
pub struct PauseWait<'a>(&'a Pause);

impl Future for PauseWait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.0.state.lock();
        if s.mode.is_none() {
            return Poll::Ready(());
        }
        if !s.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            s.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

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
