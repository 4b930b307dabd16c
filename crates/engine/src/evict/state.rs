//! Eviction's data: the policy and `maxmemory` limits configuration holds
//! ([`Limits`]) and the pool and counters the Engine holds ([`Evictor`]).
//! Names nothing above it; the parent module evicts.

use keel_store::Sample;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// Candidates the eviction pool keeps, as Redis's `EVPOOL_SIZE`.
pub const POOL_SIZE: usize = 16;

/// Shards sampled per round, from a random one; the pool carries the best
/// across rounds.
pub(crate) const SHARDS_PER_ROUND: usize = 4;

/// Redis's reply when memory is full and nothing can be evicted.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Policy {
    NoEviction,
    AllKeysLru,
    AllKeysLfu,
    AllKeysRandom,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
}

impl Policy {
    pub fn parse(name: &str) -> Policy {
        match name.to_ascii_lowercase().as_str() {
            "allkeys-lru" => Policy::AllKeysLru,
            "allkeys-lfu" => Policy::AllKeysLfu,
            "allkeys-random" => Policy::AllKeysRandom,
            "volatile-lru" => Policy::VolatileLru,
            "volatile-lfu" => Policy::VolatileLfu,
            "volatile-random" => Policy::VolatileRandom,
            "volatile-ttl" => Policy::VolatileTtl,
            _ => Policy::NoEviction,
        }
    }

    pub(crate) fn from_u8(v: u8) -> Policy {
        [
            Policy::NoEviction,
            Policy::AllKeysLru,
            Policy::AllKeysLfu,
            Policy::AllKeysRandom,
            Policy::VolatileLru,
            Policy::VolatileLfu,
            Policy::VolatileRandom,
            Policy::VolatileTtl,
        ]
        .get(usize::from(v))
        .copied()
        .unwrap_or(Policy::NoEviction)
    }

    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    pub(crate) fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    pub(crate) fn random(self) -> bool {
        matches!(self, Policy::AllKeysRandom | Policy::VolatileRandom)
    }

    /// How much a sampled key deserves eviction: higher goes first.
    pub(crate) fn score(self, s: &Sample) -> u64 {
        match self {
            Policy::AllKeysLfu | Policy::VolatileLfu => 255 - u64::from(s.freq),
            Policy::VolatileTtl => u64::MAX - s.expires_at_ms,
            _ => s.idle_s,
        }
    }
}

/// The eviction settings, mirrored from the config for the hot path.
#[derive(Default)]
pub struct Limits {
    /// `maxmemory` in bytes; 0 for no limit.
    pub maxmemory: AtomicU64,
    pub(crate) policy: AtomicU8,
    pub(crate) samples: AtomicUsize,
    pub(crate) tenacity: AtomicU64,
}

impl Limits {
    #[inline]
    pub fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Ordering::Relaxed)
    }

    pub fn policy(&self) -> Policy {
        Policy::from_u8(self.policy.load(Ordering::Relaxed))
    }
}

/// One key the pool holds.
#[derive(Clone, Debug)]
pub(crate) struct Candidate {
    pub(crate) score: u64,
    pub(crate) db: usize,
    pub(crate) key: keel_store::CompactBytes,
}

/// The best candidates seen so far, best last, at most [`POOL_SIZE`].
#[derive(Default)]
pub struct Pool {
    pub(crate) items: Vec<Candidate>,
}

impl Pool {
    /// Offer a key; it stays if it beats the worst one kept. A key already
    /// held is updated rather than held twice.
    pub(crate) fn offer(&mut self, score: u64, db: usize, key: &keel_store::CompactBytes) {
        if let Some(i) = self
            .items
            .iter()
            .position(|c| c.db == db && c.key.as_slice() == key.as_slice())
        {
            self.items.remove(i);
        } else if self.items.len() == POOL_SIZE {
            if self.items.first().is_some_and(|w| w.score >= score) {
                return;
            }
            self.items.remove(0);
        }
        let at = self.items.partition_point(|c| c.score <= score);
        self.items.insert(
            at,
            Candidate {
                score,
                db,
                key: key.clone(),
            },
        );
    }

    pub(crate) fn pop_best(&mut self) -> Option<Candidate> {
        self.items.pop()
    }

    pub(crate) fn clear(&mut self) {
        self.items.clear();
    }
}

/// The engine's eviction state.
#[derive(Default)]
pub struct Evictor {
    pub(crate) pool: Mutex<Pool>,
    /// The policy the pool was filled under (its scores mean nothing under another).
    pub(crate) pool_policy: AtomicU8,
    /// Evictions stopped for lack of time with memory still over the limit.
    pub lagging: AtomicBool,
    /// INFO stats `evicted_keys`.
    pub evicted_keys: AtomicU64,
    /// Since when (µs after start, plus one; 0 for not) memory has stayed
    /// over the limit, and the total of past such periods.
    pub(crate) exceeded_since_us: AtomicU64,
    pub(crate) exceeded_total_us: AtomicU64,
}
