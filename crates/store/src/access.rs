//! A key's access word: when it was last touched and, under an LFU eviction
//! policy, how often it is used, packed into the 32 bits every entry carries.
//!
//! Layout: the low 24 bits are the seconds clock of the last access (they
//! wrap after 194 days, as Redis's 24-bit LRU clock does), the high 8 bits a
//! logarithmic access counter in Redis's LFU scheme: a new key starts at
//! [`LFU_INIT_VAL`], an access raises the counter with probability
//! `1 / ((counter - LFU_INIT_VAL) * lfu-log-factor + 1)`, and the counter
//! loses one per `lfu-decay-time` minutes the key was not touched, minutes
//! counted on the clock as Redis's minutes clock counts them.
//!
//! The counter is kept only while an LFU policy is selected ([`set_lfu`]),
//! so LRU workloads pay one relaxed load per access. The settings are
//! process-wide, as Redis's are.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The counter a new key starts with, so it is not evicted before it had a
/// chance to be used.
pub const LFU_INIT_VAL: u8 = 5;

const CLOCK_BITS: u32 = 24;
const CLOCK_MASK: u32 = (1 << CLOCK_BITS) - 1;

static LFU_ON: AtomicBool = AtomicBool::new(false);
static LOG_FACTOR: AtomicU32 = AtomicU32::new(10);
static DECAY_MINUTES: AtomicU32 = AtomicU32::new(1);

/// Select whether access counters are kept, and their parameters.
pub fn set_lfu(on: bool, log_factor: u32, decay_minutes: u32) {
    LOG_FACTOR.store(log_factor, Ordering::Relaxed);
    DECAY_MINUTES.store(decay_minutes, Ordering::Relaxed);
    LFU_ON.store(on, Ordering::Relaxed);
}

/// Whether access counters are kept.
#[inline]
pub fn lfu_on() -> bool {
    LFU_ON.load(Ordering::Relaxed)
}

#[inline]
fn clock(now_ms: u64) -> u32 {
    ((now_ms / 1000) as u32) & CLOCK_MASK
}

/// The access word of a key created at `now_ms`.
#[inline]
pub fn fresh(now_ms: u64) -> u32 {
    (u32::from(LFU_INIT_VAL) << CLOCK_BITS) | clock(now_ms)
}

/// The access word after an access at `now_ms`.
#[inline]
pub fn touched(word: u32, now_ms: u64) -> u32 {
    let now = clock(now_ms);
    if !lfu_on() {
        return (word & !CLOCK_MASK) | now;
    }
    let decay = DECAY_MINUTES.load(Ordering::Relaxed);
    let counter = decayed(word, now_ms, decay);
    let counter = log_incr(counter, LOG_FACTOR.load(Ordering::Relaxed), random_unit());
    (u32::from(counter) << CLOCK_BITS) | now
}

/// Seconds since the last access.
#[inline]
pub fn idle_seconds(word: u32, now_ms: u64) -> u64 {
    u64::from(clock(now_ms).wrapping_sub(word) & CLOCK_MASK)
}

/// The word of a key made to look idle for `idle_s` seconds.
pub fn with_idle(word: u32, idle_s: u64, now_ms: u64) -> u32 {
    let at = clock(now_ms).wrapping_sub(idle_s as u32) & CLOCK_MASK;
    (word & !CLOCK_MASK) | at
}

/// The word with its counter set to `freq` (RESTORE ... FREQ).
pub fn with_counter(word: u32, freq: u8) -> u32 {
    (word & CLOCK_MASK) | (u32::from(freq) << CLOCK_BITS)
}

/// The counter with the decay for the time since the last access applied:
/// what OBJECT FREQ reports and eviction compares.
pub fn frequency(word: u32, now_ms: u64) -> u8 {
    decayed(word, now_ms, DECAY_MINUTES.load(Ordering::Relaxed))
}

/// The stored counter less one per `decay_minutes` minutes elapsed since the
/// last access. As in Redis, minutes are counted on the clock: a key touched
/// at 10:00:59 has one minute behind it at 10:01:00.
pub fn decayed(word: u32, now_ms: u64, decay_minutes: u32) -> u8 {
    let counter = (word >> CLOCK_BITS) as u8;
    if decay_minutes == 0 {
        return counter;
    }
    let now_s = now_ms / 1000;
    let then_s = now_s.saturating_sub(idle_seconds(word, now_ms));
    let minutes = now_s / 60 - then_s / 60;
    let periods = minutes / u64::from(decay_minutes);
    counter.saturating_sub(periods.min(255) as u8)
}

/// Raise `counter` by one with Redis's falling probability; `r` is uniform
/// in [0, 1).
pub fn log_incr(counter: u8, log_factor: u32, r: f64) -> u8 {
    if counter == u8::MAX {
        return counter;
    }
    let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
    let p = 1.0 / (base * f64::from(log_factor) + 1.0);
    if r < p {
        counter + 1
    } else {
        counter
    }
}

thread_local! {
    static RNG: Cell<u64> = const { Cell::new(0x2545_f491_4f6c_dd1d) };
}

/// A cheap per-thread uniform draw in [0, 1) for the counter's coin flips.
fn random_unit() -> f64 {
    RNG.with(|s| {
        // xorshift64*
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increments_get_rarer_as_the_counter_grows() {
        // At or below the initial value every access counts.
        assert_eq!(log_incr(0, 10, 0.999), 1);
        assert_eq!(log_incr(LFU_INIT_VAL, 10, 0.999), LFU_INIT_VAL + 1);
        // Above it, with factor 10 and counter 15, p = 1/101.
        assert_eq!(log_incr(15, 10, 0.0098), 16);
        assert_eq!(log_incr(15, 10, 0.0100), 15);
        assert_eq!(log_incr(255, 0, 0.0), 255);
    }

    #[test]
    fn counters_follow_redis_s_published_table() {
        // Redis's table for factor 10: about 142 after 100k hits; factor 0
        // counts every hit and saturates.
        let mut c = LFU_INIT_VAL;
        for _ in 0..100_000 {
            c = log_incr(c, 10, random_unit());
        }
        assert!((100..=200).contains(&c), "{c}");
        let mut c = LFU_INIT_VAL;
        for _ in 0..1_000_000 {
            c = log_incr(c, 0, random_unit());
        }
        assert_eq!(c, 255);
    }

    #[test]
    fn decay_takes_one_per_period() {
        // The start of a minute.
        let t0 = 16_667 * 60_000u64;
        let w = with_counter(fresh(t0), 20);
        assert_eq!(decayed(w, t0 + 59_000, 1), 20);
        assert_eq!(decayed(w, t0 + 60_000, 1), 19);
        assert_eq!(decayed(w, t0 + 10 * 60_000, 1), 10);
        assert_eq!(decayed(w, t0 + 10 * 60_000, 5), 18);
        assert_eq!(decayed(w, t0 + 100 * 60_000, 1), 0);
        assert_eq!(decayed(w, t0 + 100 * 60_000, 0), 20);
        // Minutes are counted on the clock, as Redis's minutes clock does:
        // touched in a minute's last second, one period two seconds later.
        let late = t0 + 59_500;
        let w = with_counter(fresh(late), 20);
        assert_eq!(decayed(w, late + 400, 1), 20);
        assert_eq!(decayed(w, late + 2_000, 1), 19);
        assert_eq!(decayed(w, late + 60_000, 1), 19);
        assert_eq!(decayed(w, late + 61_000, 1), 18);
    }

    #[test]
    fn the_clock_and_counter_share_the_word() {
        let t0 = 5_000_000u64;
        let w = fresh(t0);
        assert_eq!(idle_seconds(w, t0 + 7_500), 7);
        assert_eq!((w >> CLOCK_BITS) as u8, LFU_INIT_VAL);
        let w = with_idle(w, 100, t0);
        assert_eq!(idle_seconds(w, t0), 100);
        assert_eq!((w >> CLOCK_BITS) as u8, LFU_INIT_VAL);
        // The 24-bit clock wraps without breaking idle times.
        let near_wrap = u64::from(CLOCK_MASK) * 1000;
        let w = fresh(near_wrap);
        assert_eq!(idle_seconds(w, near_wrap + 3_000), 3);
    }
}
