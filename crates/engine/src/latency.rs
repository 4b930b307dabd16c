//! The latency monitor (LATENCY LATEST/HISTORY/RESET/GRAPH/DOCTOR): with
//! `latency-monitor-threshold` above zero, events that took at least that many
//! milliseconds are sampled per event class ("command", "fast-command",
//! "expire-cycle"), keeping the worst latency of each second and the last
//! [`HISTORY_LEN`] seconds that had one, plus the all-time maximum.
//!
//! Like the slow log, the lock is taken only for an event over the threshold.

use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write;

/// Samples kept per event, as in Redis.
pub const HISTORY_LEN: usize = 160;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub time_s: u64,
    pub latency_ms: u64,
}

#[derive(Default, Clone)]
pub struct Series {
    /// Oldest first.
    pub samples: VecDeque<Sample>,
    pub max_ms: u64,
}

#[derive(Default)]
pub struct LatencyMonitor {
    events: Mutex<BTreeMap<String, Series>>,
}

impl LatencyMonitor {
    /// Record `latency_ms` for `event` at `time_s` if the threshold (ms, 0 =
    /// off) says it is a spike.
    #[inline]
    pub fn sample_if_needed(&self, threshold_ms: i64, event: &str, time_s: u64, latency_ms: u64) {
        if threshold_ms > 0 && latency_ms >= threshold_ms as u64 {
            self.add(event, time_s, latency_ms);
        }
    }

    pub fn add(&self, event: &str, time_s: u64, latency_ms: u64) {
        let mut events = self.events.lock();
        let series = match events.get_mut(event) {
            Some(s) => s,
            None => events.entry(event.to_string()).or_default(),
        };
        series.max_ms = series.max_ms.max(latency_ms);
        if let Some(last) = series.samples.back_mut() {
            if last.time_s == time_s {
                last.latency_ms = last.latency_ms.max(latency_ms);
                return;
            }
        }
        if series.samples.len() == HISTORY_LEN {
            series.samples.pop_front();
        }
        series.samples.push_back(Sample { time_s, latency_ms });
    }

    /// A copy of every event's series, in event-name order.
    pub fn snapshot(&self) -> Vec<(String, Series)> {
        self.events
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    pub fn series(&self, event: &[u8]) -> Option<Series> {
        let name = std::str::from_utf8(event).ok()?;
        self.events.lock().get(name).cloned()
    }

    /// Forget the named events (all of them when `names` is empty); returns
    /// how many were forgotten.
    pub fn reset(&self, names: &[&[u8]]) -> usize {
        let mut events = self.events.lock();
        if names.is_empty() {
            let n = events.len();
            events.clear();
            return n;
        }
        names
            .iter()
            .filter(|n| {
                std::str::from_utf8(n)
                    .ok()
                    .and_then(|n| events.remove(n))
                    .is_some()
            })
            .count()
    }
}

/// LATENCY GRAPH: a header with the range of the kept samples, a rule, and a
/// column chart of the samples, oldest on the left, each column labelled with
/// how long ago its sample was taken.
pub fn graph(event: &str, s: &Series, now_s: u64) -> String {
    let high = s.samples.iter().map(|x| x.latency_ms).max().unwrap_or(0);
    let low = s.samples.iter().map(|x| x.latency_ms).min().unwrap_or(0);
    let mut out = format!(
        "{event} - high {high} ms, low {low} ms (all time high {} ms)\n",
        s.max_ms
    );
    out.push_str(&"-".repeat(80));
    out.push('\n');
    const ROWS: u64 = 4;
    // Keep the newest samples that fit the 80 columns.
    let shown: Vec<&Sample> = s
        .samples
        .iter()
        .skip(s.samples.len().saturating_sub(80))
        .collect();
    let height = |ms: u64| -> u64 {
        if high == low {
            ROWS
        } else {
            1 + (ms - low) * (ROWS - 1) / (high - low)
        }
    };
    for row in (1..=ROWS).rev() {
        let line: String = shown
            .iter()
            .map(|x| {
                let h = height(x.latency_ms);
                if h > row {
                    '|'
                } else if h == row {
                    if row == ROWS {
                        '#'
                    } else {
                        '_'
                    }
                } else {
                    ' '
                }
            })
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    // Age labels, written vertically: number then unit (s/m/h).
    let labels: Vec<String> = shown
        .iter()
        .map(|x| {
            let age = now_s.saturating_sub(x.time_s);
            if age < 60 {
                format!("{age}s")
            } else if age < 3600 {
                format!("{}m", age / 60)
            } else {
                format!("{}h", age / 3600)
            }
        })
        .collect();
    let tallest = labels.iter().map(String::len).max().unwrap_or(0);
    for i in 0..tallest {
        let line: String = labels
            .iter()
            .map(|l| l.as_bytes().get(i).map_or(' ', |&b| char::from(b)))
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// LATENCY DOCTOR: a plain-language reading of what the monitor holds.
pub fn doctor(threshold_ms: i64, slowlog_us: i64, events: &[(String, Series)]) -> String {
    let mut out = String::new();
    if threshold_ms <= 0 && events.is_empty() {
        out.push_str(
            "The latency monitor is off, so there is nothing to analyse. Turn it on with \
             \"CONFIG SET latency-monitor-threshold <milliseconds>\" and run LATENCY DOCTOR \
             again once the server has seen some load.\n",
        );
        return out;
    }
    if events.is_empty() {
        out.push_str(
            "No latency spike has been recorded since the server started: every monitored \
             event finished within the configured threshold.\n",
        );
        return out;
    }
    out.push_str("Latency spikes were recorded for these events:\n\n");
    for (i, (name, s)) in events.iter().enumerate() {
        let n = s.samples.len().max(1) as u64;
        let sum: u64 = s.samples.iter().map(|x| x.latency_ms).sum();
        let avg = sum / n;
        let dev = s
            .samples
            .iter()
            .map(|x| x.latency_ms.abs_diff(avg))
            .sum::<u64>()
            / n;
        let span = match (s.samples.front(), s.samples.back()) {
            (Some(a), Some(b)) => b.time_s.saturating_sub(a.time_s),
            _ => 0,
        };
        let _ = writeln!(
            out,
            "{}. {name}: {} spike(s), average {avg} ms, mean deviation {dev} ms, over {span} s; \
             worst ever {} ms.",
            i + 1,
            s.samples.len(),
            s.max_ms
        );
    }
    out.push_str("\nSuggestions:\n\n");
    if events
        .iter()
        .any(|(n, _)| n == "command" || n == "fast-command")
    {
        if slowlog_us < 0 || (threshold_ms > 0 && slowlog_us > threshold_ms * 1000) {
            out.push_str(
                "- The slow log is off or its threshold is above the latency monitor's: lower \
                 slowlog-log-slower-than to see which commands are slow.\n",
            );
        }
        out.push_str(
            "- Check SLOWLOG GET for the commands behind the spikes; commands that walk large \
             collections or the whole keyspace (KEYS, SMEMBERS, large ranges) are the usual \
             cause.\n",
        );
    }
    if events.iter().any(|(n, _)| n == "expire-cycle") {
        out.push_str(
            "- Many keys expiring at the same moment make the active expire cycle work \
             longer: spread expiry times out.\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_worst_per_second_and_a_bounded_history() {
        let m = LatencyMonitor::default();
        m.sample_if_needed(0, "command", 1, 500);
        assert!(m.snapshot().is_empty(), "threshold 0 is off");
        m.sample_if_needed(10, "command", 1, 9);
        assert!(m.snapshot().is_empty(), "under the threshold");
        m.sample_if_needed(10, "command", 1, 20);
        m.sample_if_needed(10, "command", 1, 50);
        m.sample_if_needed(10, "command", 1, 30);
        let s = m.series(b"command").expect("series");
        assert_eq!(
            s.samples,
            [Sample {
                time_s: 1,
                latency_ms: 50
            }]
        );
        for t in 2..300 {
            m.add("command", t, 11);
        }
        let s = m.series(b"command").expect("series");
        assert_eq!(s.samples.len(), HISTORY_LEN);
        assert_eq!(s.max_ms, 50);
        assert_eq!(s.samples.back().map(|x| x.time_s), Some(299));
        m.add("fast-command", 1, 12);
        assert_eq!(m.reset(&[b"command", b"nope"]), 1);
        assert_eq!(m.reset(&[]), 1);
        assert!(m.snapshot().is_empty());
    }

    #[test]
    fn graph_and_doctor_describe_the_samples() {
        let m = LatencyMonitor::default();
        m.add("command", 100, 20);
        m.add("command", 101, 50);
        let s = m.series(b"command").expect("series");
        let g = graph("command", &s, 102);
        assert!(g.starts_with("command - high 50 ms, low 20 ms (all time high 50 ms)\n"));
        assert!(g.contains(&"-".repeat(80)));
        assert!(g.contains("21\nss\n"), "{g}");
        let d = doctor(10, 10000, &m.snapshot());
        assert!(d.contains("command: 2 spike(s)"), "{d}");
        assert!(doctor(0, 10000, &[]).contains("off"));
    }
}
