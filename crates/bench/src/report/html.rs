//! `--html FILE`: one self-contained page (inline CSS and SVG, nothing
//! fetched): the run's date, command line, host and the targets' versions;
//! a legend; per step, a results table with the terminal table's columns,
//! throughput over time per target (buckets sized to the step), the
//! latency percentile spectrum per target (x axis in "nines": p50, p90, p99,
//! p99.9, p99.99, then max), and, when several targets ran, a bar per target
//! and metric (throughput, p50, p99, server CPU per request) with the ratio
//! to the first target. Axes have round ticks. Unsupported and failed
//! outcomes are shown as such, their reason once per target.

use super::axis;
use super::{cells, refusals, Told, HEAD};
use crate::model::{Measure, Outcome, Run, Step};
use std::collections::HashMap;
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
td:first-child,th:first-child{text-align:left}.meta th{text-align:left}\
dl.legend{font-size:.85em}dl.legend dt{font-weight:bold;float:left;clear:left;margin-right:.5em}dl.legend dd{margin:0 0 .2em 7em}.unsupported{color:#8a6d3b}.failed{color:#b00}\
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
    let m = &run.meta;
    let _ = writeln!(
        h,
        "<table class=\"meta\"><tr><th>date</th><td>{}</td></tr><tr><th>host</th><td>{} cores, {}</td></tr>\
<tr><th>command</th><td><code>{}</code></td></tr><tr><th>keel-bench</th><td>{}</td></tr>",
        esc(&m.date),
        m.host.cores,
        esc(&m.host.model),
        esc(&m.command_line),
        esc(&m.keel_bench_version)
    );
    for t in &run.targets {
        let _ = writeln!(
            h,
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(&t.name),
            esc(&super::target_line(t))
        );
    }
    h.push_str("</table>\n<dl class=\"legend\">");
    for (k, v) in super::legend(run) {
        let _ = write!(h, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    }
    h.push_str("</dl>\n");
    if !run.extra.is_empty() {
        let _ = writeln!(h, "<h2>Tables</h2><pre>{}</pre>", esc(&run.extra));
    }
    let told = refusals(run);
    for (si, step) in run.steps.iter().enumerate() {
        step_section(&mut h, run, si, step, &told);
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

fn step_section(
    h: &mut String,
    run: &Run,
    si: usize,
    step: &Step,
    told: &HashMap<(usize, usize), Told>,
) {
    let _ = writeln!(h, "<h2>{}</h2>", esc(&step.name));
    h.push_str("<table><tr><th>target</th>");
    for c in HEAD {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr>\n");
    let base = match step.outcomes.first() {
        Some(Outcome::Done(m)) => Some(m.as_ref()),
        _ => None,
    };
    for (i, o) in step.outcomes.iter().enumerate() {
        let name = run.targets.get(i).map(|t| t.name.as_str()).unwrap_or("?");
        match o {
            Outcome::Done(m) => {
                let _ = write!(h, "<tr><td>{}</td>", esc(name));
                for c in cells(m, base) {
                    let _ = write!(h, "<td>{}</td>", esc(&c));
                }
                h.push_str("</tr>\n");
            }
            Outcome::Unsupported { reason } | Outcome::Failed { reason } => {
                let what = if matches!(o, Outcome::Failed { .. }) {
                    "failed"
                } else {
                    "unsupported"
                };
                let text = match told.get(&(si, i)) {
                    Some(Told::Again { step }) => format!("{what}: as at {step}"),
                    Some(Told::First { steps }) if *steps > 1 => {
                        format!("{what} at {steps} steps from here on: {reason}")
                    }
                    _ => format!("{what}: {reason}"),
                };
                let _ = writeln!(
                    h,
                    "<tr class=\"{what}\"><td>{}</td><td colspan=\"{}\">{}</td></tr>",
                    esc(name),
                    HEAD.len(),
                    esc(&text)
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
        let _ = write!(h, " {} = {};", esc(k), esc(&super::fmt_num(*v)));
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

/// The plot's box and its y axis, ticked roundly from 0; returns the top
/// of the axis (the last tick), which the plot scales to.
fn frame(h: &mut String, y_max: f64) -> f64 {
    let _ = write!(
        h,
        "<svg width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\">\
<rect x=\"{PAD_L}\" y=\"{PAD_T}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
        W - PAD_L - PAD_R,
        H - PAD_T - PAD_B
    );
    let ticks = axis::ticks(y_max, 4);
    let top = ticks.last().copied().unwrap_or(1.0).max(f64::MIN_POSITIVE);
    let step = ticks.get(1).copied().unwrap_or(top);
    for &v in &ticks {
        let y = H - PAD_B - (H - PAD_T - PAD_B) * v / top;
        let _ = write!(
            h,
            "<line x1=\"{PAD_L}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - PAD_R,
            PAD_L - 4.0,
            y + 4.0,
            esc(&axis::label(v, step))
        );
    }
    top
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

/// Each bucket is drawn as a level segment over the time it covered, so
/// a step of one bucket still has its line and a partial last bucket keeps
/// its rate.
fn timeline_svg(done: &[(usize, &Measure)]) -> String {
    let series: Vec<(usize, Vec<crate::timeline::Rate>)> =
        done.iter().map(|(i, m)| (*i, m.rates())).collect();
    let y_max = series
        .iter()
        .flat_map(|(_, r)| r.iter().map(|p| p.per_s))
        .fold(0.0, f64::max);
    let t_max = series
        .iter()
        .flat_map(|(_, r)| r.last().map(|p| p.to_s))
        .fold(0.0, f64::max)
        .max(1e-6);
    let mut h = String::new();
    let top = frame(&mut h, y_max);
    let (pw, ph) = (W - PAD_L - PAD_R, H - PAD_T - PAD_B);
    let (ticks, unit, f) = axis::time_ticks(t_max, 4);
    let x_top = ticks.last().copied().unwrap_or(t_max).max(1e-9);
    let x_step = ticks.get(1).copied().unwrap_or(x_top) * f;
    let x_of = |t: f64| PAD_L + pw * t / x_top;
    for &t in &ticks {
        let x = x_of(t);
        let _ = write!(
            h,
            "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            H - 8.0,
            esc(&axis::label(t * f, x_step))
        );
    }
    let _ = write!(
        h,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{unit}</text>",
        W - PAD_R,
        PAD_T + 12.0
    );
    for (i, r) in &series {
        let y_of = |v: f64| H - PAD_B - ph * v / top;
        let pts: Vec<(f64, f64)> = r
            .iter()
            .flat_map(|p| {
                [
                    (x_of(p.from_s), y_of(p.per_s)),
                    (x_of(p.to_s), y_of(p.per_s)),
                ]
            })
            .collect();
        polyline(&mut h, &pts, color(*i));
    }
    h.push_str("</svg>");
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
    let top = frame(&mut h, y_max);
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
            .map(|(x, y)| (x_of(*x), H - PAD_B - ph * y / top))
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
        let mut r = Run::new(
            "t <&> \"x\"",
            vec![
                Target::new("redis", "127.0.0.1:1"),
                Target::new("keel<1>", "127.0.0.1:2"),
                Target::new("gone", "-"),
            ],
        );
        r.steps = vec![
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
                    Outcome::Failed {
                        reason: "cannot reach 127.0.0.1:3".into(),
                    },
                ],
            },
        ];
        r.notes = vec!["a note with <tags>".into()];
        r.targets[0].version = Some("redis 7.0.15".into());
        r.targets[0].threads = Some(5);
        r
    }

    #[test]
    fn page_is_self_contained_and_well_formed() {
        let r = run();
        let page = render(&r);
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
        assert_eq!(page.matches("cannot reach").count(), 1, "told once");
        assert!(page.contains("failed: as at SET 3B -c 50"));
        for c in crate::report::HEAD {
            assert!(page.contains(&format!("<th>{c}</th>")), "{c}");
        }
        assert!(page.contains("<dt>srv us/req</dt>") && page.contains("<dt>cpu us/req</dt>"));
        let meta = &r.meta;
        assert!(page.contains(&meta.date));
        assert!(page.contains(&format!("{} cores", meta.host.cores)));
        assert!(page.contains("redis 7.0.15, 5 threads"));
        assert!(page.contains("memory &lt;bytes&gt;"));
        assert!(page.contains("a note with &lt;tags&gt;"));
        assert!(page.contains("(2.00x)"), "ratio against the first target");
        assert_eq!(
            page.matches("<table").count(),
            page.matches("</table>").count()
        );
    }

    #[test]
    fn a_step_of_one_bucket_still_has_a_line() {
        let mut m = Measure::empty();
        m.ok = 1;
        m.elapsed = Duration::from_micros(300);
        m.interval = Duration::from_micros(61);
        m.timeline = vec![0, 0, 0, 0, 1];
        m.latency.record(Duration::from_micros(290));
        let svg = timeline_svg(&[(0, &m)]);
        let points = svg
            .split("points=\"")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .unwrap();
        assert!(points.split(' ').count() >= 2, "{svg}");
        // Round ticks in milliseconds for a step under a second.
        assert!(svg.contains(">ms</text>"), "{svg}");
        assert!(svg.contains(">0</text>"), "{svg}");
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
