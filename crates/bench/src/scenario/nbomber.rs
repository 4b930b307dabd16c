//! Per-step tables in the layout of the Bloom study's load tool: for each
//! step and target an "ok stats" box (request count, RPS, latency min /
//! mean / max / stddev and p50/p75/p95/p99 in milliseconds) and, when any
//! request failed, a "fail stats" box with the failures' own latency.

use crate::hist::Latency;
use crate::model::{Measure, Outcome, Run};

fn ms(d: std::time::Duration) -> String {
    let v = d.as_secs_f64() * 1e3;
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() {
        "0".into()
    } else {
        s.to_string()
    }
}

fn boxed(title: &str, rows: &[(&str, String)]) -> String {
    let lw = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let rw = rows
        .iter()
        .map(|(_, r)| r.chars().count())
        .chain([title.chars().count()])
        .max()
        .unwrap_or(0);
    let bar = |l: char, m: char, r: char| {
        format!("{l}{}{m}{}{r}\n", "─".repeat(lw + 2), "─".repeat(rw + 2))
    };
    let mut s = bar('┌', '┬', '┐');
    s.push_str(&format!("│ {:>lw$} │ {:<rw$} │\n", "step", title));
    s.push_str(&bar('├', '┼', '┤'));
    for (l, r) in rows {
        s.push_str(&format!("│ {l:>lw$} │ {r:<rw$} │\n"));
    }
    s.push_str(&bar('└', '┴', '┘'));
    s
}

fn stats(name: &str, count: String, lat: &Latency) -> Vec<(&'static str, String)> {
    vec![
        ("name", name.to_string()),
        ("request count", count),
        (
            "latency",
            format!(
                "min = {}, mean = {}, max = {}, StdDev = {}",
                ms(lat.min()),
                ms(lat.mean()),
                ms(lat.max()),
                ms(lat.stddev())
            ),
        ),
        (
            "latency percentile",
            format!(
                "50% = {}, 75% = {}, 95% = {}, 99% = {}",
                ms(lat.percentile(50.0)),
                ms(lat.percentile(75.0)),
                ms(lat.percentile(95.0)),
                ms(lat.percentile(99.0))
            ),
        ),
    ]
}

/// The ok (and fail) boxes of one measured step.
pub fn step_tables(name: &str, m: &Measure) -> String {
    let secs = m.elapsed.as_secs_f64().max(1e-9);
    let all = m.ok + m.failed;
    let mut s = boxed(
        "ok stats",
        &stats(
            name,
            format!(
                "all = {all}, ok = {}, RPS = {:.1}",
                m.ok,
                m.ok as f64 / secs
            ),
            &m.latency,
        ),
    );
    if m.failed > 0 {
        s.push_str(&boxed(
            "fail stats",
            &stats(
                name,
                format!(
                    "all = {all}, fail = {}, RPS = {:.1}",
                    m.failed,
                    m.failed as f64 / secs
                ),
                &m.failed_latency,
            ),
        ));
    }
    s
}

/// Every step of the run, target by target, with the step's extra figures.
pub fn render(run: &Run) -> String {
    use crate::report::{refusals, Told};
    let told = refusals(run);
    let mut s = String::new();
    for (ti, t) in run.targets.iter().enumerate() {
        s.push_str(&format!("--- {} ({}) ---\n", t.name, t.addr));
        for (si, step) in run.steps.iter().enumerate() {
            // A reason shared by several steps is told at the first.
            match told.get(&(si, ti)) {
                Some(Told::Again { .. }) => continue,
                Some(Told::First { steps }) if *steps > 1 => {
                    if let Some(Outcome::Unsupported { reason } | Outcome::Failed { reason }) =
                        step.outcomes.get(ti)
                    {
                        let what = match step.outcomes.get(ti) {
                            Some(Outcome::Failed { .. }) => "FAILED",
                            _ => "unsupported",
                        };
                        s.push_str(&format!(
                            "{what} at {steps} steps from {} on: {reason}\n",
                            step.name
                        ));
                        continue;
                    }
                }
                _ => {}
            }
            match step.outcomes.get(ti) {
                Some(Outcome::Done(m)) => {
                    s.push_str(&step_tables(&step.name, m));
                    for (k, n) in &m.failure_kinds {
                        s.push_str(&format!(" * failed {n}: {k}\n"));
                    }
                    for (k, v) in &m.metrics {
                        s.push_str(&format!(" * {k} - {}\n", crate::report::fmt_num(*v)));
                    }
                    for (k, v) in &m.info {
                        s.push_str(&format!(" * {k}:\n"));
                        for l in v.lines() {
                            s.push_str(&format!("     {l}\n"));
                        }
                    }
                }
                Some(Outcome::Unsupported { reason }) => {
                    s.push_str(&format!("{}: unsupported: {reason}\n", step.name))
                }
                Some(Outcome::Failed { reason }) => {
                    s.push_str(&format!("{}: FAILED: {reason}\n", step.name))
                }
                None => {}
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ok_and_fail_boxes_carry_counts_and_percentiles() {
        let mut m = Measure::empty();
        m.ok = 900;
        m.failed = 100;
        m.elapsed = Duration::from_secs(10);
        for i in 1..=100u64 {
            m.latency.record(Duration::from_micros(i * 100));
        }
        m.failed_latency.record(Duration::from_millis(2));
        let t = step_tables("check-existence", &m);
        assert!(t.contains("ok stats") && t.contains("fail stats"), "{t}");
        assert!(t.contains("all = 1000, ok = 900, RPS = 90.0"), "{t}");
        assert!(t.contains("all = 1000, fail = 100, RPS = 10.0"), "{t}");
        assert!(t.contains("50% = 5, 75% = 7.5"), "{t}");
        assert!(t.contains("min = 0.1,"), "{t}");
        // Every row of a box has the same width.
        let widths: Vec<usize> = t.lines().map(|l| l.chars().count()).collect();
        assert!(widths[..7].iter().all(|&w| w == widths[0]), "{t}");
        m.failed = 0;
        assert!(!step_tables("x", &m).contains("fail stats"));
    }

    #[test]
    fn a_target_without_the_commands_is_told_once() {
        use crate::model::{Step, Target};
        let mut run = Run::new("t", vec![Target::new("redis", "a:1")]);
        for name in ["warm-up", "insert", "check"] {
            run.steps.push(Step {
                name: name.into(),
                outcomes: vec![Outcome::Unsupported {
                    reason: "server does not know BF.RESERVE".into(),
                }],
            });
        }
        let t = render(&run);
        assert_eq!(t.matches("BF.RESERVE").count(), 1, "{t}");
        assert!(t.contains("unsupported at 3 steps from warm-up on"), "{t}");
    }
}
