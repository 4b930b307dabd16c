//! The per-thread counter increment every statistic uses.

use std::sync::atomic::{AtomicU64, Ordering};

/// Add to a counter that only the calling thread writes: no locked instruction
/// and no cache line bouncing between cores on the request path.
#[inline]
pub fn bump(counter: &AtomicU64, n: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}
