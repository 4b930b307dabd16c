//! The final table: every step, one row per target, with the columns of
//! `report::HEAD` (the HTML table shows the same). Failure reasons and step
//! metrics follow their step; a reason a target gives for several steps is
//! told once. The legend, the targets' versions and the run's date, host
//! and command line end the table, after the notes.

use super::{cells, ratio, refusals, Told, HEAD};
use crate::model::{Outcome, Run};
use std::fmt::Write;

/// The rendered table, ending with a newline.
pub fn render(run: &Run) -> String {
    let mut out = String::new();
    if !run.title.is_empty() {
        let _ = writeln!(out, "{}", run.title);
    }
    let mut head = vec!["step".to_string(), "target".to_string()];
    head.extend(HEAD.iter().map(|s| s.to_string()));
    let width = head.len();
    let mut rows: Vec<Vec<String>> = vec![head];
    let mut after: Vec<(usize, String)> = Vec::new();
    let told = refusals(run);
    for (si, step) in run.steps.iter().enumerate() {
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
                    let mut row = vec![step_name, target.clone()];
                    row.extend(cells(m, base));
                    rows.push(row);
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
                Outcome::Unsupported { reason } | Outcome::Failed { reason } => {
                    let what = if matches!(outcome, Outcome::Failed { .. }) {
                        "failed"
                    } else {
                        "unsupported"
                    };
                    let mut r = vec![step_name, target.clone(), what.into()];
                    r.resize(width, String::new());
                    rows.push(r);
                    match told.get(&(si, i)) {
                        Some(Told::Again { .. }) => {}
                        Some(Told::First { steps }) if *steps > 1 => after.push((
                            rows.len(),
                            format!(
                                "  {target}: {what} at {steps} steps from {} on: {reason}",
                                step.name
                            ),
                        )),
                        _ => after.push((
                            rows.len(),
                            format!("  {} on {target}: {what}: {reason}", step.name),
                        )),
                    }
                }
            }
        }
    }
    let widths: Vec<usize> = (0..width)
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
    for (k, v) in super::legend(run) {
        let _ = writeln!(out, "legend: {k}: {v}");
    }
    for t in &run.targets {
        let _ = writeln!(out, "target: {}", super::target_line(t));
    }
    let m = &run.meta;
    let _ = writeln!(
        out,
        "run: {} on {} cores ({}), keel-bench {}: {}",
        m.date, m.host.cores, m.host.model, m.keel_bench_version, m.command_line
    );
    out
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.6}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Measure, Step, Target};
    use std::time::Duration;

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
        let mut run = Run::new(
            "compare",
            vec![
                Target::new("redis", "a:1"),
                Target::new("keel", "b:2"),
                Target::new("other", "c:3"),
            ],
        );
        run.notes = vec!["50 clients".into()];
        run.steps = vec![Step {
            name: "SET".into(),
            outcomes: vec![
                Outcome::Done(Box::new(measure(1000, 0, 1))),
                Outcome::Done(Box::new(slow)),
                Outcome::Unsupported {
                    reason: "no BF.ADD".into(),
                },
            ],
        }];
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
        assert!(t.contains("\nnote: 50 clients\n"));
        assert!(t.contains("legend: srv us/req: "), "{t}");
        assert!(t.contains("target: keel at b:2"), "{t}");
        assert!(t.contains(&format!("run: {}", run.meta.date)), "{t}");
    }

    #[test]
    fn a_target_refusing_every_step_is_told_once() {
        let mut run = Run::new(
            "t",
            vec![
                Target::new("redis", "a:1"),
                Target::new("keel-always", "b:2"),
            ],
        );
        for name in ["PING", "SET", "GET"] {
            run.steps.push(Step {
                name: name.into(),
                outcomes: vec![
                    Outcome::Done(Box::new(measure(10, 0, 1))),
                    Outcome::Unsupported {
                        reason: "server refused its configuration: appendonly".into(),
                    },
                ],
            });
        }
        let t = render(&run);
        assert_eq!(t.matches("appendonly").count(), 1, "{t}");
        assert!(
            t.contains("keel-always: unsupported at 3 steps from PING on: server refused"),
            "{t}"
        );
        assert_eq!(t.matches("unsupported").count(), 4, "{t}");
    }
}
