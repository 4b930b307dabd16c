//! Per-command latency histograms for `INFO latencystats` and `LATENCY
//! HISTOGRAM`.
//!
//! The layout is an HDR histogram with Redis's parameters (values in
//! nanoseconds from 1 to 10^9, two significant digits), so percentiles and
//! bucket bounds come out as the same numbers Redis prints: 256 exact slots for
//! the smallest values, then 128 slots per power of two, each covering
//! `2^(bucket)` nanoseconds. Only the owning worker thread records into a
//! histogram; INFO sums the threads' copies into a plain array first.

use crate::counter::bump;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Values below this many nanoseconds are recorded as this.
pub const MIN_NS: u64 = 1;
/// Values above one second are recorded as one second.
pub const MAX_NS: u64 = 1_000_000_000;
/// log2 of half the sub-bucket count (two significant digits need 200
/// distinguishable steps per magnitude, rounded up to 256).
const HALF_MAG: u32 = 7;
const HALF: usize = 1 << HALF_MAG;
/// Enough buckets for `MAX_NS`: (23 buckets + 1) * 128 slots.
pub const SLOTS: usize = 24 * HALF;

fn bucket_of(v: u64) -> u32 {
    (63 - (v | 255).leading_zeros()) - HALF_MAG
}

/// The slot a value is counted in.
pub fn slot_of(v: u64) -> usize {
    let b = bucket_of(v);
    let sub = (v >> b) as usize;
    (((b + 1) as usize) << HALF_MAG) + sub - HALF
}

/// The lowest value counted in `slot`.
pub fn slot_value(slot: usize) -> u64 {
    let mut bucket = (slot >> HALF_MAG) as i64 - 1;
    let mut sub = ((slot & (HALF - 1)) + HALF) as u64;
    if bucket < 0 {
        sub -= HALF as u64;
        bucket = 0;
    }
    sub << bucket
}

/// The lowest value that shares `v`'s slot.
pub fn lowest_equivalent(v: u64) -> u64 {
    let b = bucket_of(v);
    (v >> b) << b
}

/// The highest value that shares `v`'s slot.
pub fn highest_equivalent(v: u64) -> u64 {
    lowest_equivalent(v) + (1u64 << bucket_of(v)) - 1
}

/// One thread's counts for one command. The slots are kept in chunks of 128
/// (one power of two each), allocated when first hit: a command whose
/// latencies span a few magnitudes costs a few KiB per thread, not the whole
/// 24 KiB range.
pub struct Histogram {
    chunks: [OnceLock<Box<[AtomicU64]>>; SLOTS / HALF],
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            chunks: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl Histogram {
    /// Record one command that took `usec` microseconds (owning thread only).
    #[inline]
    pub fn record_usec(&self, usec: u64) {
        let ns = usec.saturating_mul(1000).clamp(MIN_NS, MAX_NS);
        let slot = slot_of(ns);
        if let Some(chunk) = self.chunks.get(slot >> HALF_MAG) {
            let chunk = chunk.get_or_init(|| (0..HALF).map(|_| AtomicU64::new(0)).collect());
            if let Some(c) = chunk.get(slot & (HALF - 1)) {
                bump(c, 1);
            }
        }
    }

    /// Add this histogram's counts into `into` (INFO, any thread).
    pub fn add_to(&self, into: &mut Counts) {
        for (i, chunk) in self.chunks.iter().enumerate() {
            let Some(chunk) = chunk.get() else { continue };
            for (t, c) in into.0[i * HALF..].iter_mut().zip(chunk.iter()) {
                *t += c.load(Ordering::Relaxed);
            }
        }
    }

    pub fn reset(&self) {
        for chunk in self.chunks.iter().filter_map(OnceLock::get) {
            for c in chunk.iter() {
                c.store(0, Ordering::Relaxed);
            }
        }
    }
}

/// Summed counts of one command over all threads.
pub struct Counts(pub Vec<u64>);

impl Default for Counts {
    fn default() -> Self {
        Counts(vec![0; SLOTS])
    }
}

impl Counts {
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The value (ns) at percentile `p` (0..=100), as HDR reports it: the
    /// highest value of the slot where the cumulative count reaches the rank.
    pub fn value_at_percentile(&self, p: f64) -> u64 {
        let total = self.total();
        let p = p.min(100.0);
        let rank = (((p / 100.0) * total as f64) + 0.5) as u64;
        let rank = rank.max(1);
        let mut seen = 0u64;
        let mut at = 0u64;
        for (slot, &c) in self.0.iter().enumerate() {
            seen += c;
            if seen >= rank {
                at = slot_value(slot);
                break;
            }
        }
        if p == 0.0 {
            lowest_equivalent(at)
        } else {
            highest_equivalent(at)
        }
    }

    /// Cumulative counts at power-of-two bounds from 1024 ns, each bound
    /// reported as the highest value of its slot in microseconds, only where
    /// the cumulative count grew: `LATENCY HISTOGRAM`'s `histogram_usec`.
    pub fn log_buckets(&self) -> Vec<(u64, u64)> {
        let total = self.total();
        let mut out = Vec::new();
        let mut level: u64 = 1024;
        let mut seen = 0u64;
        let mut reported = 0u64;
        for (slot, &c) in self.0.iter().enumerate() {
            if reported >= total {
                break;
            }
            seen += c;
            let v = slot_value(slot);
            if v >= lowest_equivalent(level) {
                if seen > reported {
                    out.push((highest_equivalent(v) / 1000, seen));
                    reported = seen;
                }
                level *= 2;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(usecs: &[u64]) -> Counts {
        let h = Histogram::default();
        for &u in usecs {
            h.record_usec(u);
        }
        let mut c = Counts::default();
        h.add_to(&mut c);
        c
    }

    #[test]
    fn slots_round_trip_and_cover_the_range() {
        for v in [1u64, 255, 256, 1000, 1023, 1024, 50_000_000, MAX_NS] {
            let s = slot_of(v);
            assert!(s < SLOTS, "{v}");
            assert!(slot_value(s) <= v && v <= highest_equivalent(slot_value(s)));
        }
        assert_eq!(highest_equivalent(1000), 1003);
        assert_eq!(highest_equivalent(32768), 33023);
    }

    /// The figures Redis 7.0 prints for the same samples.
    #[test]
    fn percentiles_and_buckets_match_redis() {
        let c = counts(&[1]);
        assert_eq!(c.value_at_percentile(50.0), 1003);
        let c = counts(&[10]);
        assert_eq!(c.value_at_percentile(99.9), 10047);
        assert_eq!(counts(&[16]).log_buckets(), vec![(16, 1)]);
        assert_eq!(counts(&[8]).log_buckets(), vec![(8, 1)]);
        // Three calls: 8 µs, then two at 50 ms.
        let c = counts(&[8, 50_000, 50_000]);
        assert_eq!(c.log_buckets(), vec![(8, 1), (67633, 3)]);
        let c = counts(&[0, 3, 17]);
        assert_eq!(c.log_buckets(), vec![(1, 1), (4, 2), (33, 3)]);
        assert_eq!(c.total(), 3);
        // Over a second is recorded as a second.
        let c = counts(&[5_000_000]);
        assert_eq!(c.value_at_percentile(100.0), highest_equivalent(MAX_NS));
    }
}
