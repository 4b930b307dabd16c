//! The live progress line: on stderr, rewritten in place about four times a
//! second while a load runs, with the label, requests per second over the
//! last refresh, elapsed time and an estimate of the time left. Prints
//! nothing when stderr is not a terminal, so logs and pipes stay clean.

use std::io::{IsTerminal, Write};
use std::time::Duration;

#[derive(Debug)]
pub struct Progress {
    label: String,
    /// Request limit, for the ETA of a counted run.
    total: Option<u64>,
    /// Length of a timed run.
    length: Option<Duration>,
    enabled: bool,
    last: (u64, Duration),
    shown: bool,
}

impl Progress {
    pub fn new(label: &str, total: Option<u64>, length: Option<Duration>) -> Progress {
        Progress {
            label: label.to_string(),
            total,
            length,
            enabled: std::io::stderr().is_terminal(),
            last: (0, Duration::ZERO),
            shown: false,
        }
    }

    /// The line for `done` requests after `elapsed`; also what `update` prints.
    pub fn line(&mut self, done: u64, elapsed: Duration) -> String {
        let (prev_done, prev_at) = self.last;
        let span = elapsed.saturating_sub(prev_at).as_secs_f64();
        let now_rps = if span > 0.0 {
            done.saturating_sub(prev_done) as f64 / span
        } else {
            0.0
        };
        self.last = (done, elapsed);
        let eta = match (self.total, self.length) {
            (Some(total), _) if done > 0 => {
                let per = elapsed.as_secs_f64() / done as f64;
                Some(Duration::from_secs_f64(
                    per * total.saturating_sub(done) as f64,
                ))
            }
            (_, Some(len)) => Some(len.saturating_sub(elapsed)),
            _ => None,
        };
        let eta = eta
            .map(|d| format!(", ETA {:.0}s", d.as_secs_f64().ceil()))
            .unwrap_or_default();
        format!(
            "{}: {:.0} requests/s, {} done, {:.1}s elapsed{}",
            self.label,
            now_rps,
            done,
            elapsed.as_secs_f64(),
            eta
        )
    }

    pub fn update(&mut self, done: u64, elapsed: Duration) {
        if !self.enabled {
            return;
        }
        let line = self.line(done, elapsed);
        let mut err = std::io::stderr().lock();
        // Pad so a shorter line fully covers the previous one.
        let _ = write!(err, "\r{line:<78}");
        let _ = err.flush();
        self.shown = true;
    }

    /// Clear the line so the final report starts on a clean row.
    pub fn finish(&mut self) {
        if self.enabled && self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{:<78}\r", "");
            let _ = err.flush();
        }
        self.shown = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_runs_estimate_from_progress_so_far() {
        let mut p = Progress::new("SET", Some(1000), None);
        let l = p.line(250, Duration::from_secs(1));
        assert!(
            l.starts_with("SET: 250 requests/s, 250 done, 1.0s elapsed"),
            "{l}"
        );
        assert!(l.ends_with("ETA 3s"), "{l}");
        let l = p.line(500, Duration::from_millis(1500));
        assert!(l.starts_with("SET: 500 requests/s"), "{l}");
    }

    #[test]
    fn timed_runs_count_down_the_duration() {
        let mut p = Progress::new("mixed", None, Some(Duration::from_secs(10)));
        let l = p.line(10, Duration::from_secs(4));
        assert!(l.ends_with("ETA 6s"), "{l}");
    }
}
