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
