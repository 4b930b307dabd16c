//! The final table: every step, one row per target, with throughput,
//! successes and failures, latency (avg/p50/p95/p99/max in milliseconds),
//! CPU per request of the load tool and of the server when known, and the
//! ratio of each target's throughput to the first target's. Failure reasons
//! and step metrics follow their step, notes end the table.

use crate::model::{Measure, Outcome, Run};
use std::fmt::Write;
use std::time::Duration;

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn us(d: Option<Duration>) -> String {
    d.map(|d| format!("{:.2}", d.as_secs_f64() * 1e6))
        .unwrap_or_else(|| "-".into())
}

fn ratio(value: f64, base: Option<f64>) -> String {
    match base {
        Some(b) if b > 0.0 => format!("{:.2}x", value / b),
        _ => "-".into(),
    }
}

/// The rendered table, ending with a newline.
pub fn render(run: &Run) -> String {
    let mut out = String::new();
    if !run.title.is_empty() {
        let _ = writeln!(out, "{}", run.title);
    }
    let head = [
        "step",
        "target",
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
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    let mut after: Vec<(usize, String)> = Vec::new();
    for step in &run.steps {
        let base = match step.outcomes.first() {
            Some(Outcome::Done(m)) => Some(m.as_ref()),
            _ => None,
        };
        for (i, outcome) in step.outcomes.iter().enumerate() {
            let target = run
                .targets
                .get(i)
                .map(|t| t.name.clone())
                .unwrap_or_else(|| format!("#{}", i + 1));
            let step_name = if i == 0 {
                step.name.clone()
            } else {
                String::new()
            };
            match outcome {
                Outcome::Done(m) => {
                    rows.push(measure_row(step_name, target.clone(), m, base));
                    for (why, n) in &m.failure_kinds {
                        after.push((
                            rows.len(),
                            format!("  {} on {target}: {n} x {why}", step.name),
                        ));
                    }
                    for (k, v) in &m.metrics {
                        let base_v = base.and_then(|b| {
                            b.metrics.iter().find(|(bk, _)| bk == k).map(|(_, bv)| *bv)
                        });
                        let r = if i == 0 {
                            String::new()
                        } else {
                            format!(" ({})", ratio(*v, base_v))
                        };
                        after.push((
                            rows.len(),
                            format!("  {} on {target}: {k} = {}{r}", step.name, num(*v)),
                        ));
                    }
                    for (k, v) in &m.info {
                        after.push((rows.len(), format!("  {} on {target}: {k}: {v}", step.name)));
                    }
                }
                Outcome::Unsupported { reason } => {
                    let mut r = vec![step_name, target.clone(), "unsupported".into()];
                    r.resize(head.len(), String::new());
                    rows.push(r);
                    after.push((
                        rows.len(),
                        format!("  {} on {target}: unsupported: {reason}", step.name),
                    ));
                }
                Outcome::Failed { reason } => {
                    let mut r = vec![step_name, target.clone(), "failed".into()];
                    r.resize(head.len(), String::new());
                    rows.push(r);
                    after.push((
                        rows.len(),
                        format!("  {} on {target}: failed: {reason}", step.name),
                    ));
                }
            }
        }
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut notes_at = after.iter().peekable();
    for (n, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c < 2 {
                let _ = write!(line, "{cell:<w$}  ", w = widths[c]);
            } else {
                let _ = write!(line, "{cell:>w$}  ", w = widths[c]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
        while let Some((_, text)) = notes_at.next_if(|(at, _)| *at == n + 1) {
            let _ = writeln!(out, "{text}");
        }
    }
    for note in &run.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.6}")
    }
}

fn measure_row(step: String, target: String, m: &Measure, base: Option<&Measure>) -> Vec<String> {
    let l = &m.latency;
    vec![
        step,
        target,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Step, Target};

    fn measure(ok: u64, failed: u64, secs: u64) -> Measure {
        let mut m = Measure::empty();
        m.ok = ok;
        m.failed = failed;
        m.elapsed = Duration::from_secs(secs);
        m.client_cpu = Some(Duration::from_millis(ok + failed));
        for i in 1..=100 {
            m.latency.record(Duration::from_micros(i * 10));
        }
        m
    }

    #[test]
    fn rows_show_each_target_with_its_ratio_and_failures() {
        let mut slow = measure(500, 10, 1);
        slow.failure_kinds
            .push(("ERR unknown command 'LPUSH'".into(), 10));
        let run = Run {
            title: "compare".into(),
            targets: vec![
                Target {
                    name: "redis".into(),
                    addr: "a:1".into(),
                },
                Target {
                    name: "keel".into(),
                    addr: "b:2".into(),
                },
                Target {
                    name: "other".into(),
                    addr: "c:3".into(),
                },
            ],
            steps: vec![Step {
                name: "SET".into(),
                outcomes: vec![
                    Outcome::Done(Box::new(measure(1000, 0, 1))),
                    Outcome::Done(Box::new(slow)),
                    Outcome::Unsupported {
                        reason: "no BF.ADD".into(),
                    },
                ],
            }],
            notes: vec!["50 clients".into()],
        };
        let t = render(&run);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "compare");
        assert!(
            lines[1].starts_with("step") && lines[1].ends_with("ratio"),
            "{t}"
        );
        assert!(
            lines[2].starts_with("SET")
                && lines[2].contains("1000.00")
                && lines[2].ends_with("1.00x"),
            "{t}"
        );
        assert!(
            lines[3].contains("keel") && lines[3].contains("510.00") && lines[3].ends_with("0.51x"),
            "{t}"
        );
        assert!(lines[3].contains("1000.00"), "cpu per request in us: {t}");
        assert_eq!(
            lines[4].trim(),
            "SET on keel: 10 x ERR unknown command 'LPUSH'"
        );
        assert!(
            lines[5].contains("other") && lines[5].contains("unsupported"),
            "{t}"
        );
        assert!(t.contains("SET on other: unsupported: no BF.ADD"));
        assert!(t.ends_with("note: 50 clients\n"));
    }
}
