//! A cheap monotonic clock for timing every command.
//!
//! INFO commandstats needs each command's duration, which means reading a clock
//! once per command. `clock_gettime` through the vDSO costs tens of nanoseconds
//! here, a measurable share of a pipelined GET; the CPU's invariant time-stamp
//! counter costs a few. Where the TSC is not known to be invariant (or on other
//! architectures) this falls back to `Instant`.
#![allow(unsafe_code)]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

struct Calibration {
    /// TSC ticks per microsecond; `None` when the TSC is not used.
    tsc_per_us: Option<f64>,
    origin: Instant,
}

static CAL: OnceLock<Calibration> = OnceLock::new();

#[cfg(target_arch = "x86_64")]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC reads a counter register; it has no memory operands and no
    // preconditions, and every x86_64 CPU implements it.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.contains(" constant_tsc") && s.contains(" nonstop_tsc"))
        .unwrap_or(false)
}

fn calibrate() -> Calibration {
    let origin = Instant::now();
    #[cfg(target_arch = "x86_64")]
    if invariant_tsc() {
        let t0 = rdtsc();
        let i0 = Instant::now();
        std::thread::sleep(Duration::from_millis(10));
        let t1 = rdtsc();
        let us = i0.elapsed().as_secs_f64() * 1e6;
        let rate = (t1.wrapping_sub(t0)) as f64 / us;
        if rate.is_finite() && rate > 1.0 {
            return Calibration {
                tsc_per_us: Some(rate),
                origin,
            };
        }
    }
    Calibration {
        tsc_per_us: None,
        origin,
    }
}

fn cal() -> &'static Calibration {
    CAL.get_or_init(calibrate)
}

/// Measure the clock now, so the first command does not pay for it.
pub fn init() {
    cal();
}

/// An opaque monotonic reading; only differences are meaningful.
pub fn now() -> u64 {
    let c = cal();
    #[cfg(target_arch = "x86_64")]
    if c.tsc_per_us.is_some() {
        return rdtsc();
    }
    c.origin.elapsed().as_nanos() as u64
}

/// Microseconds between two readings of [`now`].
pub fn micros_between(earlier: u64, later: u64) -> u64 {
    let d = later.saturating_sub(earlier);
    match cal().tsc_per_us {
        Some(rate) => (d as f64 / rate) as u64,
        None => d / 1000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_sleep() {
        init();
        let a = now();
        std::thread::sleep(Duration::from_millis(20));
        let us = micros_between(a, now());
        assert!((15_000..200_000).contains(&us), "{us}");
    }
}
