//! Time, injected: handlers ask the engine's clock so tests can drive expiry exactly.

use std::sync::atomic::{AtomicU64, Ordering};

pub trait Clock: Send + Sync {
    /// Unix time in milliseconds.
    fn now_ms(&self) -> u64;

    /// Whether time moves on its own; a manual clock returns false so that tests
    /// see exactly the time they set.
    fn advances_by_itself(&self) -> bool {
        true
    }

    /// Unix time in microseconds (TIME, INFO's server_time_usec). Clocks that
    /// only keep milliseconds report whole milliseconds.
    fn now_us(&self) -> u64 {
        self.now_ms().saturating_mul(1000)
    }
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }

    fn now_us(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to.
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn new(start_ms: u64) -> ManualClock {
        ManualClock(AtomicU64::new(start_ms))
    }

    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    fn advances_by_itself(&self) -> bool {
        false
    }
}

/// The time for a batch of commands (everything one read brought in). Wall time
/// is read once per batch and carried forward by the cycle counter, which is read
/// once per command, both for the command's duration (INFO commandstats) and to
/// keep `now_ms` current. Reading the system clock three times per command cost
/// a measurable share of a pipelined GET.
#[derive(Clone, Copy)]
pub struct Tick {
    base_ms: u64,
    base: u64,
    /// When the previous command finished (or the batch began), in cycles.
    pub(crate) last: u64,
    drift: bool,
}

impl Tick {
    pub fn new(clock: &dyn Clock) -> Tick {
        let now = crate::cycles::now();
        Tick {
            base_ms: clock.now_ms(),
            base: now,
            last: now,
            drift: clock.advances_by_itself(),
        }
    }

    /// Unix ms as of the end of the previous command.
    pub fn now_ms(&self) -> u64 {
        if self.drift {
            self.base_ms + crate::cycles::micros_between(self.base, self.last) / 1000
        } else {
            self.base_ms
        }
    }
}
