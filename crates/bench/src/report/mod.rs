//! Reports of a `Run`: the final table on stdout, `--json FILE`, `--html FILE`
//! (one self-contained page, inline SVG), and the live progress line.
//!
//! The terminal table and the HTML table show the same columns (`HEAD`,
//! `cells`) and the same legend; an outcome that is not measured (a target
//! that refuses or cannot run a step) has its reason told once per target,
//! not once per step (`refusals`).

pub mod axis;
pub mod html;
pub mod json;
pub mod progress;
pub mod table;

use crate::model::{Measure, Outcome, Run};
use std::collections::HashMap;
use std::time::Duration;

/// Columns of every results table, after `step` and `target`.
pub const HEAD: [&str; 11] = [
    "req/s",
    "ok",
    "failed",
    "avg ms",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "max ms",
    "cpu us/req",
    "srv us/req",
    "ratio",
];

/// The cells of `HEAD` for one measured outcome; `base` is the first
/// target's measure of the same step, for the ratio.
pub fn cells(m: &Measure, base: Option<&Measure>) -> Vec<String> {
    let l = &m.latency;
    vec![
        format!("{:.2}", m.rps()),
        m.ok.to_string(),
        m.failed.to_string(),
        ms(l.mean()),
        ms(l.percentile(50.0)),
        ms(l.percentile(95.0)),
        ms(l.percentile(99.0)),
        ms(l.max()),
        us(m.client_cpu_per_request()),
        us(m.server_cpu_per_request()),
        ratio(m.rps(), base.map(|b| b.rps())),
    ]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn us(d: Option<Duration>) -> String {
    d.map(|d| format!("{:.2}", d.as_secs_f64() * 1e6))
        .unwrap_or_else(|| "-".into())
}

pub fn ratio(value: f64, base: Option<f64>) -> String {
    match base {
        Some(b) if b > 0.0 => format!("{:.2}x", value / b),
        _ => "-".into(),
    }
}

/// What the less obvious columns mean, as (column, meaning) pairs. The
/// server CPU line names the source this run's figures came from.
pub fn legend(run: &Run) -> Vec<(&'static str, String)> {
    let mut sources: Vec<&str> = run
        .steps
        .iter()
        .flat_map(|s| s.outcomes.iter())
        .filter_map(|o| match o {
            Outcome::Done(m) => m.server_cpu_source,
            _ => None,
        })
        .collect();
    sources.sort_unstable();
    sources.dedup();
    let source = match sources.as_slice() {
        [] => "not measured in this run: the server is not a process on this machine whose pid is known".to_string(),
        s => s
            .iter()
            .map(|s| match *s {
                "schedstat" => "the scheduler's per-thread run time in nanoseconds (/proc/PID/task/*/schedstat)",
                _ => "user + system time in 10 ms clock ticks (/proc/PID/stat; no schedstat on this kernel)",
            })
            .collect::<Vec<_>>()
            .join("; and "),
    };
    vec![
        (
            "cpu us/req",
            "CPU time (user + system) keel-bench itself spent per request, in microseconds: the load generator's cost, which shares the machine with the server".to_string(),
        ),
        (
            "srv us/req",
            format!("CPU time the server process (all its threads) spent during the step per request, in microseconds; from {source}"),
        ),
        ("ratio", "req/s against the first target's".to_string()),
    ]
}

/// How an outcome's reason is told.
#[derive(Debug, Clone, PartialEq)]
pub enum Told {
    /// First time for this target and reason; `steps` share it.
    First { steps: usize },
    /// Already told at `step`.
    Again { step: String },
}

/// For every outcome that is not measured, keyed by (step index, target
/// index): whether its reason is told there or was told before.
pub fn refusals(run: &Run) -> HashMap<(usize, usize), Told> {
    let mut first: HashMap<(usize, String), (usize, usize)> = HashMap::new();
    let mut out = HashMap::new();
    for (si, step) in run.steps.iter().enumerate() {
        for (ti, o) in step.outcomes.iter().enumerate() {
            let key = match o {
                Outcome::Done(_) => continue,
                Outcome::Unsupported { reason } => format!("u{reason}"),
                Outcome::Failed { reason } => format!("f{reason}"),
            };
            match first.get_mut(&(ti, key.clone())) {
                Some((at, n)) => {
                    *n += 1;
                    out.insert(
                        (si, ti),
                        Told::Again {
                            step: run.steps[*at].name.clone(),
                        },
                    );
                }
                None => {
                    first.insert((ti, key), (si, 1));
                }
            }
        }
    }
    for ((ti, _), (si, n)) in first {
        out.insert((si, ti), Told::First { steps: n });
    }
    out
}

/// One line per target: its version and threads.
/// A number with few decimals when large, more when small.
pub fn fmt_num(v: f64) -> String {
    if v.abs() >= 1000.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

pub fn target_line(t: &crate::model::Target) -> String {
    let mut s = format!("{} at {}", t.name, t.addr);
    match &t.version {
        Some(v) => s.push_str(&format!(": {v}")),
        None => s.push_str(": version unknown"),
    }
    if let Some(n) = t.threads {
        s.push_str(&format!(", {n} threads"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Step, Target};

    #[test]
    fn a_refusal_is_told_once_per_target() {
        let refused = || Outcome::Unsupported {
            reason: "server refused its configuration: appendonly".into(),
        };
        let mut run = Run::new("t", vec![Target::new("a", "h:1"), Target::new("b", "h:2")]);
        for name in ["s1", "s2", "s3"] {
            run.steps.push(Step {
                name: name.into(),
                outcomes: vec![Outcome::Done(Box::new(Measure::empty())), refused()],
            });
        }
        run.steps[2].outcomes[0] = Outcome::Failed { reason: "x".into() };
        let r = refusals(&run);
        assert_eq!(r.get(&(0, 1)), Some(&Told::First { steps: 3 }));
        assert_eq!(r.get(&(1, 1)), Some(&Told::Again { step: "s1".into() }));
        assert_eq!(r.get(&(2, 0)), Some(&Told::First { steps: 1 }));
        assert_eq!(r.get(&(0, 0)), None);
        assert_eq!(r.len(), 4);
    }

    #[test]
    fn the_legend_names_the_cpu_source() {
        let mut m = Measure::empty();
        m.server_cpu = Some(Duration::from_millis(1));
        m.server_cpu_source = Some("schedstat");
        let mut run = Run::new("t", vec![Target::new("a", "h:1")]);
        run.steps.push(Step {
            name: "s".into(),
            outcomes: vec![Outcome::Done(Box::new(m))],
        });
        let l = legend(&run);
        assert!(l
            .iter()
            .any(|(k, v)| *k == "srv us/req" && v.contains("schedstat")));
        assert!(l.iter().any(|(k, _)| *k == "cpu us/req"));
    }
}
