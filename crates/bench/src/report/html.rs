//! `--html FILE`: one self-contained page (inline CSS and SVG, nothing
//! fetched): per step, a results table, throughput over time per target, the
//! latency percentile spectrum per target (x axis in "nines": p50, p90, p99,
//! p99.9, p99.99, then max), and, when several targets ran, a bar per target
//! and metric (throughput, p50, p99, server CPU per request) with the ratio
//! to the first target. Unsupported and failed outcomes are shown as such.

use crate::model::{Measure, Outcome, Run, Step};
use std::fmt::Write;
use std::path::Path;

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Escape text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

fn color(i: usize) -> &'static str {
    COLORS[i % COLORS.len()]
}

pub fn write(run: &Run, path: &Path) -> anyhow::Result<()> {
    std::fs::write(path, render(run))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:right}\
td:first-child,th:first-child{text-align:left}.unsupported{color:#8a6d3b}.failed{color:#b00}\
.charts{display:flex;flex-wrap:wrap;gap:1em}.charts figure{margin:0}figcaption{font-size:.85em;color:#555}\
svg text{font-size:11px;fill:#333}.key span{display:inline-block;margin-right:1em}\
.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:middle}\
pre{background:#f6f6f6;padding:.5em;font-size:.85em;overflow-x:auto}";

pub fn render(run: &Run) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        esc(&run.title)
    );
    let _ = writeln!(h, "<h1>{}</h1>", esc(&run.title));
    h.push_str("<p class=\"key\">");
    for (i, t) in run.targets.iter().enumerate() {
        let _ = write!(
            h,
            "<span><span class=\"swatch\" style=\"background:{}\"></span>{} <small>{}</small></span>",
            color(i),
            esc(&t.name),
            esc(&t.addr)
        );
    }
    h.push_str("</p>\n");
    for step in &run.steps {
        step_section(&mut h, run, step);
    }
    if !run.notes.is_empty() {
        h.push_str("<h2>Notes</h2><ul>");
        for n in &run.notes {
            let _ = write!(h, "<li><pre>{}</pre></li>", esc(n));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("</body></html>\n");
    h
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn step_section(h: &mut String, run: &Run, step: &Step) {
    let _ = writeln!(h, "<h2>{}</h2>", esc(&step.name));
    h.push_str("<table><tr><th>target</th><th>req/s</th><th>ratio</th><th>p50 ms</th><th>p99 ms</th><th>p99.99 ms</th><th>max ms</th><th>ok</th><th>failed</th></tr>\n");
    let base = match step.outcomes.first() {
        Some(Outcome::Done(m)) => Some(m.rps()),
        _ => None,
    };
    for (i, o) in step.outcomes.iter().enumerate() {
        let name = run.targets.get(i).map(|t| t.name.as_str()).unwrap_or("?");
        match o {
            Outcome::Done(m) => {
                let ratio = match base {
                    Some(b) if b > 0.0 => format!("{:.2}x", m.rps() / b),
                    _ => "-".into(),
                };
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{:.0}</td><td>{ratio}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td><td>{}</td></tr>",
                    esc(name),
                    m.rps(),
                    ms(m.latency.percentile(50.0)),
                    ms(m.latency.percentile(99.0)),
                    ms(m.latency.percentile(99.99)),
                    ms(m.latency.max()),
                    m.ok,
                    m.failed
                );
            }
            Outcome::Unsupported { reason } => {
                let _ = writeln!(
                    h,
                    "<tr class=\"unsupported\"><td>{}</td><td colspan=\"8\">unsupported: {}</td></tr>",
                    esc(name),
                    esc(reason)
                );
            }
            Outcome::Failed { reason } => {
                let _ = writeln!(
                    h,
                    "<tr class=\"failed\"><td>{}</td><td colspan=\"8\">failed: {}</td></tr>",
                    esc(name),
                    esc(reason)
                );
            }
        }
    }
    h.push_str("</table>\n");
    // Failures and step-specific figures, per target.
    for (i, o) in step.outcomes.iter().enumerate() {
        if let Outcome::Done(m) = o {
            extras(
                h,
                run.targets.get(i).map(|t| t.name.as_str()).unwrap_or("?"),
                m,
            );
        }
    }
    let done: Vec<(usize, &Measure)> = step
        .outcomes
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            Outcome::Done(m) => Some((i, m.as_ref())),
            _ => None,
        })
        .collect();
    if done.is_empty() {
        return;
    }
    h.push_str("<div class=\"charts\">");
    let _ = write!(
        h,
        "<figure>{}<figcaption>throughput over time (requests/s)</figcaption></figure>",
        timeline_svg(&done)
    );
    let _ = write!(
        h,
        "<figure>{}<figcaption>latency percentile spectrum (ms)</figcaption></figure>",
        spectrum_svg(&done)
    );
    if step.outcomes.len() > 1 {
        for (label, f) in METRICS {
            let vals: Vec<Option<f64>> = step
                .outcomes
                .iter()
                .map(|o| match o {
                    Outcome::Done(m) => f(m),
                    _ => None,
                })
                .collect();
            if vals.iter().flatten().count() > 0 {
                let _ = write!(
                    h,
                    "<figure>{}<figcaption>{}</figcaption></figure>",
                    bars_svg(run, &vals),
                    esc(label)
                );
            }
        }
    }
    h.push_str("</div>\n");
}

type MetricFn = fn(&Measure) -> Option<f64>;

const METRICS: [(&str, MetricFn); 4] = [
    ("throughput (requests/s)", |m| Some(m.rps())),
    ("p50 latency (ms)", |m| {
        (m.latency.count() > 0).then(|| ms(m.latency.percentile(50.0)))
    }),
    ("p99 latency (ms)", |m| {
        (m.latency.count() > 0).then(|| ms(m.latency.percentile(99.0)))
    }),
    ("server CPU per request (µs)", |m| {
        m.server_cpu_per_request().map(|d| d.as_secs_f64() * 1e6)
    }),
];

fn extras(h: &mut String, target: &str, m: &Measure) {
    if m.failure_kinds.is_empty() && m.metrics.is_empty() && m.info.is_empty() {
        return;
    }
    let _ = write!(h, "<p><b>{}</b>:", esc(target));
    for (k, n) in &m.failure_kinds {
        let _ = write!(h, " <span class=\"failed\">failed {n}: {}</span>;", esc(k));
    }
    for (k, v) in &m.metrics {
        let _ = write!(h, " {} = {};", esc(k), esc(&crate::scenario::fmt_num(*v)));
    }
    h.push_str("</p>");
    for (k, v) in &m.info {
        let _ = write!(h, "<p>{}</p><pre>{}</pre>", esc(k), esc(v));
    }
    h.push('\n');
}

const W: f64 = 340.0;
const H: f64 = 200.0;
const PAD_L: f64 = 56.0;
const PAD_B: f64 = 24.0;
const PAD_T: f64 = 8.0;
const PAD_R: f64 = 10.0;

fn frame(h: &mut String, y_max: f64) {
    let _ = write!(
        h,
        "<svg width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\">\
<rect x=\"{PAD_L}\" y=\"{PAD_T}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
        W - PAD_L - PAD_R,
        H - PAD_T - PAD_B
    );
    for k in 0..=4 {
        let v = y_max * k as f64 / 4.0;
        let y = H - PAD_B - (H - PAD_T - PAD_B) * k as f64 / 4.0;
        let _ = write!(
            h,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            PAD_L - 4.0,
            y + 4.0,
            esc(&short_num(v))
        );
    }
}

fn short_num(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn polyline(h: &mut String, pts: &[(f64, f64)], color: &str) {
    let p: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
    let _ = write!(
        h,
        "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>",
        p.join(" ")
    );
}

fn timeline_svg(done: &[(usize, &Measure)]) -> String {
    let rate = |m: &Measure, c: u64| c as f64 / m.interval.as_secs_f64().max(1e-9);
    let y_max = done
        .iter()
        .flat_map(|(_, m)| m.timeline.iter().map(move |&c| rate(m, c)))
        .fold(0.0, f64::max)
        .max(1.0);
    let t_max = done
        .iter()
        .map(|(_, m)| m.timeline.len() as f64 * m.interval.as_secs_f64())
        .fold(0.0, f64::max)
        .max(1e-9);
    let mut h = String::new();
    frame(&mut h, y_max);
    let (pw, ph) = (W - PAD_L - PAD_R, H - PAD_T - PAD_B);
    for (i, m) in done {
        let step = m.interval.as_secs_f64();
        let pts: Vec<(f64, f64)> = m
            .timeline
            .iter()
            .enumerate()
            .map(|(k, &c)| {
                let t = (k as f64 + 0.5) * step;
                (PAD_L + pw * t / t_max, H - PAD_B - ph * rate(m, c) / y_max)
            })
            .collect();
        polyline(&mut h, &pts, color(*i));
    }
    let _ = write!(
        h,
        "<text x=\"{PAD_L}\" y=\"{}\">0 s</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.1} s</text></svg>",
        H - 8.0,
        W - PAD_R,
        H - 8.0,
        t_max
    );
    h
}

/// Position of percentile `p` on the "nines" axis: -log10(1 - p/100), so
/// p90 is 1, p99 is 2, p99.99 is 4; the maximum is drawn half a nine
/// after p99.999.
pub fn nines(p: f64) -> f64 {
    if p >= 100.0 {
        5.5
    } else {
        (-(1.0 - p / 100.0).log10()).clamp(0.0, 5.0)
    }
}

fn spectrum_svg(done: &[(usize, &Measure)]) -> String {
    let series: Vec<(usize, Vec<(f64, f64)>)> = done
        .iter()
        .filter(|(_, m)| m.latency.count() > 0)
        .map(|(i, m)| {
            let pts = m
                .latency
                .spectrum()
                .into_iter()
                .filter(|(p, _)| *p >= 50.0)
                .map(|(p, d)| (nines(p), ms(d)))
                .collect();
            (*i, pts)
        })
        .collect();
    let y_max = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|(_, y)| *y))
        .fold(0.0, f64::max)
        .max(1e-6);
    let x_max = 5.5;
    let x_min = nines(50.0);
    let mut h = String::new();
    frame(&mut h, y_max);
    let (pw, ph) = (W - PAD_L - PAD_R, H - PAD_T - PAD_B);
    let x_of = |x: f64| PAD_L + pw * (x - x_min) / (x_max - x_min);
    for (label, p) in [
        ("p50", 50.0),
        ("p90", 90.0),
        ("p99", 99.0),
        ("p99.9", 99.9),
        ("p99.99", 99.99),
        ("max", 100.0),
    ] {
        let x = x_of(nines(p));
        let _ = write!(
            h,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{PAD_T}\" y2=\"{}\" stroke=\"#eee\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{label}</text>",
            H - PAD_B,
            H - 8.0
        );
    }
    for (i, s) in &series {
        let pts: Vec<(f64, f64)> = s
            .iter()
            .map(|(x, y)| (x_of(*x), H - PAD_B - ph * y / y_max))
            .collect();
        polyline(&mut h, &pts, color(*i));
    }
    h.push_str("</svg>");
    h
}

/// Bar lengths for `vals`, the largest filling `full`.
pub fn bar_lengths(vals: &[Option<f64>], full: f64) -> Vec<f64> {
    let max = vals.iter().flatten().fold(0.0_f64, |a, &b| a.max(b));
    vals.iter()
        .map(|v| match v {
            Some(v) if max > 0.0 => full * v.max(0.0) / max,
            _ => 0.0,
        })
        .collect()
}

fn bars_svg(run: &Run, vals: &[Option<f64>]) -> String {
    let row = 22.0;
    let label_w = 110.0;
    let full = W - label_w - 90.0;
    let height = row * vals.len() as f64 + 6.0;
    let lens = bar_lengths(vals, full);
    let base = vals.first().copied().flatten();
    let mut h = format!(
        "<svg width=\"{W}\" height=\"{height}\" viewBox=\"0 0 {W} {height}\" role=\"img\">"
    );
    for (i, (v, len)) in vals.iter().zip(&lens).enumerate() {
        let y = 3.0 + row * i as f64;
        let name = run.targets.get(i).map(|t| t.name.as_str()).unwrap_or("?");
        let _ = write!(
            h,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            label_w - 6.0,
            y + 14.0,
            esc(name)
        );
        match v {
            Some(v) => {
                let ratio = match base {
                    Some(b) if b > 0.0 => format!(" ({:.2}x)", v / b),
                    _ => String::new(),
                };
                let _ = write!(
                    h,
                    "<rect x=\"{label_w}\" y=\"{y:.1}\" width=\"{len:.1}\" height=\"{}\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}{}</text>",
                    row - 6.0,
                    color(i),
                    label_w + len + 4.0,
                    y + 14.0,
                    esc(&short_num(*v)),
                    esc(&ratio)
                );
            }
            None => {
                let _ = write!(
                    h,
                    "<text x=\"{label_w}\" y=\"{:.1}\" class=\"unsupported\">n/a</text>",
                    y + 14.0
                );
            }
        }
    }
    h.push_str("</svg>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Target;
    use std::time::Duration;

    fn measure(scale: u64) -> Measure {
        let mut m = Measure::empty();
        m.ok = 1000 * scale;
        m.elapsed = Duration::from_secs(1);
        m.interval = Duration::from_millis(100);
        m.timeline = vec![100 * scale; 10];
        for i in 1..=1000u64 {
            m.latency.record(Duration::from_micros(i * 10 / scale));
        }
        m.server_cpu = Some(Duration::from_millis(100));
        m.metrics.push(("memory <bytes>".into(), 1234.0));
        m
    }

    fn run() -> Run {
        Run {
            title: "t <&> \"x\"".into(),
            targets: vec![
                Target {
                    name: "redis".into(),
                    addr: "127.0.0.1:1".into(),
                },
                Target {
                    name: "keel<1>".into(),
                    addr: "127.0.0.1:2".into(),
                },
                Target {
                    name: "gone".into(),
                    addr: "-".into(),
                },
            ],
            steps: vec![
                Step {
                    name: "SET 3B -c 50".into(),
                    outcomes: vec![
                        Outcome::Done(Box::new(measure(1))),
                        Outcome::Done(Box::new(measure(2))),
                        Outcome::Failed {
                            reason: "cannot reach 127.0.0.1:3".into(),
                        },
                    ],
                },
                Step {
                    name: "EVAL_SET".into(),
                    outcomes: vec![
                        Outcome::Done(Box::new(measure(1))),
                        Outcome::Unsupported {
                            reason: "server does not know EVAL".into(),
                        },
                        Outcome::Failed { reason: "x".into() },
                    ],
                },
            ],
            notes: vec!["a note with <tags>".into()],
        }
    }

    #[test]
    fn page_is_self_contained_and_well_formed() {
        let page = render(&run());
        assert_eq!(page.matches("<svg").count(), page.matches("</svg>").count());
        assert!(page.matches("<svg").count() >= 4 + 4);
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(!page.contains("<script"));
        for name in ["redis", "keel&lt;1&gt;", "gone", "SET 3B -c 50", "EVAL_SET"] {
            assert!(page.contains(name), "{name}");
        }
        assert!(!page.contains("keel<1>"));
        assert!(page.contains("t &lt;&amp;&gt; &quot;x&quot;"));
        assert!(page.contains("unsupported: server does not know EVAL"));
        assert!(page.contains("failed: cannot reach"));
        assert!(page.contains("memory &lt;bytes&gt;"));
        assert!(page.contains("a note with &lt;tags&gt;"));
        assert!(page.contains("(2.00x)"), "ratio against the first target");
        assert_eq!(
            page.matches("<table").count(),
            page.matches("</table>").count()
        );
    }

    #[test]
    fn bars_scale_to_the_largest_value() {
        let l = bar_lengths(&[Some(50.0), Some(100.0), None, Some(25.0)], 200.0);
        assert_eq!(l, [100.0, 200.0, 0.0, 50.0]);
        assert_eq!(bar_lengths(&[Some(0.0)], 10.0), [0.0]);
    }

    #[test]
    fn nines_axis() {
        assert!((nines(90.0) - 1.0).abs() < 1e-9);
        assert!((nines(99.0) - 2.0).abs() < 1e-9);
        assert!((nines(99.99) - 4.0).abs() < 1e-6);
        assert_eq!(nines(100.0), 5.5);
        assert!(nines(50.0) < nines(75.0));
    }

    #[test]
    fn writes_a_file() {
        let p = std::env::temp_dir().join(format!("keel-bench-html-{}.html", std::process::id()));
        write(&run(), &p).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("<!DOCTYPE html>"));
        let _ = std::fs::remove_file(&p);
    }
}
