//! Throughput over time: completions counted in buckets whose width follows
//! the step. Buckets start narrow (the widest width divided by a power of
//! two, about 100 µs) and double, adjacent pairs merged, whenever a step
//! outgrows `MAX_BUCKETS` of them, up to the widest width (the scenario's
//! `interval`, 1 s by default). A 20 ms step therefore gets a line of
//! 100-odd points and a three-minute step one point per second. Every width
//! is the widest divided by a power of two and buckets start at the common
//! start of the load, so timelines of different threads always merge
//! exactly.
//!
//! The last bucket is usually partial (the step ended inside it); `rates`
//! divides it by the time it covered, so a step never ends in a false drop.

use std::time::Duration;

/// Buckets kept before the width doubles.
pub const MAX_BUCKETS: usize = 256;
/// The narrowest bucket is the widest halved until it is at most this.
const FINEST: Duration = Duration::from_micros(100);

#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// The widest the buckets may grow.
    pub max_width: Duration,
    /// Buckets are `max_width / 2^shift` wide (kept as a shift, so the
    /// boundaries are exact even where the width is no whole nanosecond).
    pub shift: u32,
    pub counts: Vec<u64>,
}

impl Default for Timeline {
    fn default() -> Timeline {
        Timeline::new(Duration::from_secs(1))
    }
}

impl Timeline {
    pub fn new(max_width: Duration) -> Timeline {
        let max_width = max_width.max(Duration::from_micros(1));
        let mut shift = 0;
        while shift < 40 && max_width / 2u32.pow(shift.min(31)) > FINEST {
            shift += 1;
        }
        Timeline {
            max_width,
            shift,
            counts: Vec::new(),
        }
    }

    /// Width of the buckets now (to the nanosecond).
    pub fn width(&self) -> Duration {
        Duration::from_nanos((self.max_width.as_nanos() >> self.shift) as u64)
    }

    /// Count `n` completions `at` this long after the start.
    pub fn add(&mut self, at: Duration, n: u64) {
        let mut index = self.index_of(at);
        while index >= MAX_BUCKETS && self.shift > 0 {
            self.coarsen();
            index = self.index_of(at);
        }
        if self.counts.len() <= index {
            self.counts.resize(index + 1, 0);
        }
        self.counts[index] += n;
    }

    fn index_of(&self, at: Duration) -> usize {
        let at = at.as_nanos().min(u128::from(u64::MAX));
        ((at << self.shift) / self.max_width.as_nanos().max(1)) as usize
    }

    /// Double the width, merging adjacent pairs.
    fn coarsen(&mut self) {
        self.counts = self.counts.chunks(2).map(|c| c.iter().sum()).collect();
        self.shift = self.shift.saturating_sub(1);
    }

    /// Add another timeline of the same load (same start, same widest).
    pub fn merge(&mut self, other: &Timeline) {
        if other.counts.is_empty() {
            return;
        }
        if self.counts.is_empty() {
            *self = other.clone();
            return;
        }
        let mut other = other.clone();
        while other.shift > self.shift {
            other.coarsen();
        }
        while self.shift > other.shift {
            self.coarsen();
        }
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }
}

/// Coarsen `counts` of `width` to `to` (a power-of-two multiple of it).
pub fn rebucket(counts: &[u64], width: Duration, to: Duration) -> Vec<u64> {
    let k = (to.as_nanos() / width.as_nanos().max(1)).max(1) as usize;
    counts.chunks(k).map(|c| c.iter().sum()).collect()
}

/// Append `tail` (buckets of `width`, starting `offset` after the start of
/// `head`) to `head`: each tail bucket is shared between the two head
/// buckets it straddles, in proportion to the overlap.
pub fn append_at(head: &mut Vec<u64>, tail: &[u64], width: Duration, offset: Duration) {
    let w = width.as_nanos().max(1);
    for (j, &c) in tail.iter().enumerate() {
        let start = offset.as_nanos() + j as u128 * w;
        let index = (start / w) as usize;
        let into_next = (start % w) as f64 / w as f64;
        let second = (c as f64 * into_next).round() as u64;
        let first = c - second.min(c);
        let need = index + if second > 0 { 2 } else { 1 };
        if head.len() < need {
            head.resize(need, 0);
        }
        head[index] += first;
        if second > 0 {
            head[index + 1] += second;
        }
    }
}

/// One point of throughput over time: the bucket's start and end (seconds
/// from the step's start) and its rate (completions per second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub from_s: f64,
    pub to_s: f64,
    pub per_s: f64,
}

/// Rates of `counts` (buckets of `width`) for a step that lasted `elapsed`.
/// The last bucket counts for the time it covered; when that is under a
/// quarter of a bucket it is folded into the one before, so a few
/// stragglers neither vanish nor spike.
pub fn rates(counts: &[u64], width: Duration, elapsed: Duration) -> Vec<Rate> {
    let w = width.as_secs_f64();
    if counts.is_empty() || w <= 0.0 {
        return Vec::new();
    }
    let mut spans: Vec<(f64, f64, u64)> = counts
        .iter()
        .enumerate()
        .map(|(k, &c)| (k as f64 * w, (k + 1) as f64 * w, c))
        .collect();
    let end = elapsed.as_secs_f64();
    if let Some(last) = spans.last_mut() {
        if end > last.0 && end < last.1 {
            last.1 = end;
        }
    }
    if spans.len() > 1 {
        let (from, to, c) = spans[spans.len() - 1];
        if to - from < w / 4.0 {
            spans.pop();
            if let Some(prev) = spans.last_mut() {
                prev.1 = to;
                prev.2 += c;
            }
        }
    }
    spans
        .into_iter()
        .map(|(from_s, to_s, c)| Rate {
            from_s,
            to_s,
            per_s: if to_s > from_s {
                c as f64 / (to_s - from_s)
            } else {
                0.0
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn buckets_start_near_100us_and_divide_the_widest_evenly() {
        let t = Timeline::new(Duration::from_secs(1));
        assert!(
            t.width() <= FINEST && t.width() > FINEST / 2,
            "{:?}",
            t.width()
        );
        assert_eq!(t.shift, 14);
        let t = Timeline::new(Duration::from_micros(50));
        assert_eq!(t.width(), Duration::from_micros(50));
    }

    #[test]
    fn a_short_step_gets_many_buckets() {
        // 20 ms of steady completions, one every 10 µs.
        let mut t = Timeline::new(Duration::from_secs(1));
        for i in 0..2000u64 {
            t.add(Duration::from_micros(i * 10), 1);
        }
        assert!(t.counts.len() > MAX_BUCKETS / 4, "{}", t.counts.len());
        assert!(t.counts.len() <= MAX_BUCKETS);
        assert_eq!(t.counts.iter().sum::<u64>(), 2000);
        assert!(t.width() < ms(1));
    }

    #[test]
    fn a_long_step_stops_at_the_widest_bucket() {
        let mut t = Timeline::new(Duration::from_secs(1));
        for s in 0..600u64 {
            t.add(Duration::from_secs(s) + ms(500), 10);
        }
        assert_eq!(t.width(), Duration::from_secs(1));
        assert_eq!(t.counts.len(), 600);
        assert!(t.counts.iter().all(|&c| c == 10));
    }

    #[test]
    fn merging_threads_of_different_widths_is_exact() {
        let mut a = Timeline::new(Duration::from_secs(1));
        let mut b = Timeline::new(Duration::from_secs(1));
        let mut all = Timeline::new(Duration::from_secs(1));
        for i in 0..5000u64 {
            let at = Duration::from_micros(i * 37);
            a.add(at, 1);
            all.add(at, 1);
        }
        for i in 0..100u64 {
            let at = Duration::from_micros(i * 13);
            b.add(at, 2);
            all.add(at, 2);
        }
        assert_ne!(a.shift, b.shift);
        a.merge(&b);
        assert_eq!(a, all);
    }

    #[test]
    fn the_partial_last_bucket_keeps_its_rate() {
        // 1000/s for 2.5 s in 1 s buckets: the last holds 500 in 0.5 s.
        let r = rates(&[1000, 1000, 500], Duration::from_secs(1), ms(2500));
        assert_eq!(r.len(), 3);
        for p in &r {
            assert!((p.per_s - 1000.0).abs() < 1e-9, "{r:?}");
        }
        assert!((r[2].to_s - 2.5).abs() < 1e-9);
        // A sliver of a last bucket is folded into the one before.
        let r = rates(&[1000, 1000, 10], Duration::from_secs(1), ms(2010));
        assert_eq!(r.len(), 2);
        assert!((r[1].per_s - 1010.0 / 1.01).abs() < 1e-6, "{r:?}");
        // One bucket only: a line across the time it covered.
        let r = rates(&[30], ms(1), Duration::from_micros(300));
        assert_eq!(r.len(), 1);
        assert!((r[0].per_s - 100_000.0).abs() < 1e-6, "{r:?}");
        assert!(rates(&[], ms(1), ms(1)).is_empty());
    }

    #[test]
    fn appending_shares_straddling_buckets() {
        let mut head = vec![10, 10];
        append_at(&mut head, &[10, 10], ms(10), ms(15));
        assert_eq!(head, [10, 15, 10, 5]);
        assert_eq!(rebucket(&[1, 2, 3, 4, 5], ms(1), ms(2)), [3, 7, 5]);
    }
}
