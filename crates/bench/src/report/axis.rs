//! Round axis ticks for the HTML charts: steps of 1, 2 or 5 times a power
//! of ten, from zero to the first tick at or above the largest value, with
//! labels that show as many decimals as the step needs and no more.

/// The smallest of 1, 2, 5 x 10^k that is at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        // A little slack so 0.3 / 3 does not round up to 0.2 x 10.
        if m * mag >= raw * (1.0 - 1e-9) {
            return m * mag;
        }
    }
    10.0 * mag
}

/// Ticks from 0 to the first round value at or above `max`, about
/// `count` of them (never fewer than 2, nor more than 2 x `count`).
pub fn ticks(max: f64, count: usize) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let step = nice_step(max / count.max(1) as f64);
    let n = (max / step - 1e-9).ceil().max(1.0) as usize;
    // Multiply rather than add, so 0.1 + 0.2 never shows as 0.30000000000000004.
    (0..=n).map(|k| round_to(k as f64 * step, step)).collect()
}

fn round_to(v: f64, step: f64) -> f64 {
    let d = decimals(step) as i32;
    let p = 10f64.powi(d);
    (v * p).round() / p
}

/// Decimals a label needs for ticks `step` apart.
pub fn decimals(step: f64) -> usize {
    if step >= 1.0 || step <= 0.0 {
        0
    } else {
        (-step.log10() - 1e-9).ceil() as usize
    }
}

/// A tick label: `k` for steps of thousands, `M` from 100,000, decimals as
/// the step needs; zero is `0`.
pub fn label(v: f64, step: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else if step >= 1e5 {
        format!("{:.*}M", decimals(step / 1e6), v / 1e6)
    } else if step >= 1e3 {
        format!("{:.*}k", decimals(step / 1e3), v / 1e3)
    } else {
        format!("{:.*}", decimals(step), v)
    }
}

/// Ticks for a time axis of `max_s` seconds: milliseconds below a second.
/// Returns (tick values in seconds, unit, factor from seconds to the unit).
pub fn time_ticks(max_s: f64, count: usize) -> (Vec<f64>, &'static str, f64) {
    let (unit, f) = if max_s < 1.0 { ("ms", 1e3) } else { ("s", 1.0) };
    let t = ticks(max_s * f, count).into_iter().map(|v| v / f).collect();
    (t, unit, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(2_300.0), 5_000.0);
        assert!((nice_step(0.03) - 0.05).abs() < 1e-12);
        assert!((nice_step(0.3) - 0.5).abs() < 1e-12);
        assert!((nice_step(0.2) - 0.2).abs() < 1e-12);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(nice_step(f64::NAN), 1.0);
    }

    #[test]
    fn ticks_start_at_zero_and_cover_the_maximum_roundly() {
        assert_eq!(
            ticks(87_345.0, 5),
            [0.0, 20_000.0, 40_000.0, 60_000.0, 80_000.0, 100_000.0]
        );
        assert_eq!(ticks(100.0, 4), [0.0, 50.0, 100.0]);
        assert_eq!(ticks(0.9, 4), [0.0, 0.5, 1.0]);
        assert_eq!(ticks(0.9, 5), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(ticks(0.0, 4), [0.0, 0.5, 1.0]);
        let t = ticks(0.3, 3);
        assert_eq!(t, [0.0, 0.1, 0.2, 0.3]);
        for max in [0.013, 1.7, 42.0, 999.0, 1234.5, 3.3e6] {
            let t = ticks(max, 4);
            assert_eq!(t[0], 0.0);
            assert!(*t.last().unwrap() >= max, "{max}: {t:?}");
            assert!(t.len() >= 2 && t.len() <= 9, "{max}: {t:?}");
            let step = t[1];
            assert_eq!(nice_step(step), step, "{max}: {t:?}");
        }
    }

    #[test]
    fn labels_show_the_decimals_the_step_needs() {
        assert_eq!(label(20_000.0, 20_000.0), "20k");
        assert_eq!(label(2_500.0, 500.0), "2500");
        assert_eq!(label(3_000.0, 1_000.0), "3k");
        assert_eq!(label(15_000.0, 2_500.0), "15k");
        assert_eq!(label(1_500_000.0, 500_000.0), "1.5M");
        assert_eq!(label(0.4, 0.2), "0.4");
        assert_eq!(label(0.05, 0.05), "0.05");
        assert_eq!(label(0.0, 0.05), "0");
        assert_eq!(label(0.1, 0.05), "0.10");
        assert_eq!(label(3.0, 1.0), "3");
    }

    #[test]
    fn short_times_are_in_milliseconds() {
        let (t, unit, f) = time_ticks(0.025, 4);
        assert_eq!(unit, "ms");
        assert_eq!(f, 1e3);
        assert!((t[1] - 0.01).abs() < 1e-12, "{t:?}");
        let (t, unit, _) = time_ticks(182.0, 4);
        assert_eq!(unit, "s");
        assert_eq!(t, [0.0, 50.0, 100.0, 150.0, 200.0]);
    }
}
