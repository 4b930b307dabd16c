//! CLIENT PAUSE's data: the [`Pause`] the Engine holds and what waits on it.
//! Names no session or engine; the parent module decides what it holds.

use crate::client::ClientHandle;
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
