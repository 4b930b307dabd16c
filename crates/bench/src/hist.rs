//! Latency histograms: HDR histograms in nanoseconds with three significant
//! digits, so percentiles are exact to 0.1% from sub-microsecond to minutes.
//! Workers record into their own `Latency` and the results are merged.

use hdrhistogram::Histogram;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use std::time::Duration;

/// Percentiles every report shows (the HTML page draws the whole spectrum).
pub const REPORTED: [f64; 8] = [50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0];

#[derive(Debug, Clone)]
pub struct Latency {
    h: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Latency::new()
    }
}

impl Latency {
    pub fn new() -> Latency {
        // Auto-resizing: no upper bound to configure, nothing recorded is lost.
        let mut h = Histogram::new(3).unwrap_or_else(|_| unreachable_sigfig());
        h.auto(true);
        Latency { h }
    }

    pub fn record(&mut self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
        // Cannot fail with auto-resize on.
        let _ = self.h.record(ns);
    }

    pub fn merge(&mut self, other: &Latency) {
        let _ = self.h.add(&other.h);
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    fn ns(v: f64) -> Duration {
        Duration::from_nanos(v.max(0.0) as u64)
    }

    pub fn min(&self) -> Duration {
        Duration::from_nanos(if self.count() == 0 { 0 } else { self.h.min() })
    }

    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.h.max())
    }

    pub fn mean(&self) -> Duration {
        Self::ns(self.h.mean())
    }

    pub fn stddev(&self) -> Duration {
        Self::ns(self.h.stdev())
    }

    /// The latency at or below which `p` percent of requests completed.
    pub fn percentile(&self, p: f64) -> Duration {
        Duration::from_nanos(self.h.value_at_percentile(p.clamp(0.0, 100.0)))
    }

    /// (percentile, latency) points for a percentile spectrum plot, from p0
    /// up to p99.999 and the maximum.
    pub fn spectrum(&self) -> Vec<(f64, Duration)> {
        let mut points = Vec::new();
        // Halve the remaining tail each step: 0, 50, 75, 87.5, ... 99.999.
        let mut remaining = 100.0_f64;
        let mut p = 0.0_f64;
        while p < 99.999 {
            points.push((p, self.percentile(p)));
            remaining /= 2.0;
            p = 100.0 - remaining;
        }
        points.push((100.0, self.max()));
        points
    }
}

#[cold]
fn unreachable_sigfig() -> Histogram<u64> {
    // Histogram::new only fails for more than 5 significant digits.
    panic!("3 significant digits is a valid HDR precision")
}

impl Serialize for Latency {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let mut st = s.serialize_struct("Latency", 6)?;
        st.serialize_field("count", &self.count())?;
        st.serialize_field("min_us", &us(self.min()))?;
        st.serialize_field("mean_us", &us(self.mean()))?;
        st.serialize_field("max_us", &us(self.max()))?;
        st.serialize_field("stddev_us", &us(self.stddev()))?;
        let pct: Vec<(f64, f64)> = REPORTED
            .iter()
            .map(|&p| (p, us(self.percentile(p))))
            .collect();
        st.serialize_field("percentiles_us", &pct)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: u64) -> Duration {
        Duration::from_micros(v)
    }

    /// Within HDR's 3-significant-digit resolution (0.1%, plus one unit).
    fn close(got: Duration, want: Duration) -> bool {
        let (g, w) = (got.as_nanos() as f64, want.as_nanos() as f64);
        (g - w).abs() <= w * 0.001 + 1.0
    }

    #[test]
    fn uniform_percentiles_are_the_order_statistics() {
        let mut h = Latency::new();
        for v in 1..=10_000u64 {
            h.record(us(v));
        }
        assert_eq!(h.count(), 10_000);
        for (p, want) in [
            (50.0, 5_000),
            (90.0, 9_000),
            (99.0, 9_900),
            (99.9, 9_990),
            (100.0, 10_000),
        ] {
            assert!(
                close(h.percentile(p), us(want)),
                "p{p}: {:?}",
                h.percentile(p)
            );
        }
        assert!(close(h.min(), us(1)));
        assert!(close(h.max(), us(10_000)));
        assert!(close(h.mean(), Duration::from_nanos(5_000_500)));
        // Standard deviation of 1..=N is sqrt((N^2 - 1) / 12).
        let sd = ((10_000f64.powi(2) - 1.0) / 12.0).sqrt() * 1000.0;
        assert!((h.stddev().as_nanos() as f64 - sd).abs() < sd * 0.002);
    }

    #[test]
    fn a_bimodal_mix_splits_where_the_modes_do() {
        let mut h = Latency::new();
        for _ in 0..900 {
            h.record(us(100));
        }
        for _ in 0..100 {
            h.record(Duration::from_millis(50));
        }
        assert!(close(h.percentile(50.0), us(100)));
        assert!(close(h.percentile(90.0), us(100)));
        assert!(close(h.percentile(90.1), Duration::from_millis(50)));
        assert!(close(h.percentile(99.0), Duration::from_millis(50)));
        assert!(close(h.mean(), us(900 * 100 / 1000 + 5_000)));
    }

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let mut all = Latency::new();
        let mut parts = vec![Latency::new(), Latency::new(), Latency::new()];
        let mut x = 12345u64;
        for i in 0..30_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let d = Duration::from_nanos(500 + (x >> 40) % 5_000_000);
            all.record(d);
            parts[(i % 3) as usize].record(d);
        }
        let mut merged = Latency::new();
        for p in &parts {
            merged.merge(p);
        }
        assert_eq!(merged.count(), all.count());
        for p in [0.0, 25.0, 50.0, 90.0, 99.0, 99.99, 100.0] {
            assert_eq!(merged.percentile(p), all.percentile(p));
        }
        assert_eq!(merged.min(), all.min());
        assert_eq!(merged.max(), all.max());
        assert_eq!(merged.spectrum(), all.spectrum());
    }

    #[test]
    fn the_spectrum_rises_to_the_maximum() {
        let mut h = Latency::new();
        for v in 1..=1000u64 {
            h.record(us(v));
        }
        let s = h.spectrum();
        assert_eq!(s.first().map(|p| p.0), Some(0.0));
        assert_eq!(s.last().map(|p| p.0), Some(100.0));
        assert!(s.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert!(close(s.last().unwrap().1, us(1000)));
        let empty = Latency::new();
        assert_eq!(empty.min(), Duration::ZERO);
        assert_eq!(empty.count(), 0);
    }
}
