//! What a run measured. Every mode (classic, mixed, scenario) produces a
//! `Run`; every report (table, JSON, HTML) reads one. Targets are compared
//! side by side: each step holds one outcome per target, in target order, and
//! ratios are always taken against the first target.

use crate::hist::Latency;
use serde::Serialize;
use std::time::Duration;

/// A server under test, as named on the command line or in a scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub name: String,
    /// `host:port` as connected to.
    pub addr: String,
    /// What `INFO server` says the server is (`redis 7.0.15`,
    /// `keel 0.1.0 (redis_version 7.0.15)`), when it answered.
    pub version: Option<String>,
    /// Threads of the server process (from /proc), when it runs on this
    /// machine and its pid is known.
    pub threads: Option<u32>,
}

impl Target {
    pub fn new(name: &str, addr: &str) -> Target {
        Target {
            name: name.to_string(),
            addr: addr.to_string(),
            version: None,
            threads: None,
        }
    }
}

/// One invocation of the tool.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub title: String,
    /// How, when and where the run was made.
    pub meta: Meta,
    pub targets: Vec<Target>,
    pub steps: Vec<Step>,
    /// Free-form lines shown under the tables (configuration, skipped parts).
    pub notes: Vec<String>,
    /// Preformatted tables a scenario adds (the seed studies' own shapes),
    /// shown before the final table and in the HTML page.
    pub extra: String,
}

impl Run {
    pub fn new(title: &str, targets: Vec<Target>) -> Run {
        Run {
            title: title.to_string(),
            meta: Meta::now(),
            targets,
            steps: Vec::new(),
            notes: Vec::new(),
            extra: String::new(),
        }
    }
}

/// What every report records about the run itself.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Meta {
    /// keel-bench's own command line, quoted for a POSIX shell.
    pub command_line: String,
    /// When the run started, UTC, ISO 8601 (`2026-11-24T06:05:09Z`).
    pub date: String,
    pub keel_bench_version: String,
    pub host: Host,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Host {
    /// Logical CPUs the kernel lists.
    pub cores: usize,
    /// `model name` from /proc/cpuinfo (`unknown` elsewhere).
    pub model: String,
}

impl Meta {
    pub fn now() -> Meta {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Meta {
            command_line: command_line(std::env::args()),
            date: iso_date(secs),
            keel_bench_version: env!("CARGO_PKG_VERSION").to_string(),
            host: Host::this(),
        }
    }
}

impl Host {
    pub fn this() -> Host {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let (cores, model) = parse_cpuinfo(&info);
        let cores = if cores > 0 {
            cores
        } else {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        };
        Host {
            cores,
            model: model.unwrap_or_else(|| "unknown".into()),
        }
    }
}

/// (processors listed, first model name) of /proc/cpuinfo's text.
pub fn parse_cpuinfo(text: &str) -> (usize, Option<String>) {
    let field = |l: &str, name: &str| {
        l.split_once(':')
            .filter(|(k, _)| k.trim() == name)
            .map(|(_, v)| v.trim().to_string())
    };
    let cores = text
        .lines()
        .filter(|l| field(l, "processor").is_some())
        .count();
    let model = text.lines().find_map(|l| field(l, "model name"));
    (cores, model)
}

/// Arguments joined into one line a POSIX shell reads back the same.
pub fn command_line(args: impl IntoIterator<Item = String>) -> String {
    let quote = |a: String| {
        let plain = !a.is_empty()
            && a.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
        if plain {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    };
    args.into_iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn iso_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil: eras of 400 years from 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// One measured workload (a redis-benchmark test, a scenario step...).
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub name: String,
    /// One per target, in the order of `Run::targets`.
    pub outcomes: Vec<Outcome>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Done(Box<Measure>),
    /// The target does not serve a command the step needs (e.g. BF.* on a
    /// server without Bloom filters); the run goes on.
    Unsupported {
        reason: String,
    },
    /// The step could not run on this target (unreachable, aborted...).
    Failed {
        reason: String,
    },
}

/// What one step measured on one target.
#[derive(Debug, Clone, Serialize)]
pub struct Measure {
    /// Requests whose reply counted as success.
    pub ok: u64,
    /// Requests that failed: error replies, timeouts, replies the step judges
    /// wrong (a Bloom false positive). Never silently dropped.
    pub failed: u64,
    /// Up to a few distinct failure reasons with their counts.
    pub failure_kinds: Vec<(String, u64)>,
    #[serde(with = "secs")]
    pub elapsed: Duration,
    /// Latency of successful requests.
    pub latency: Latency,
    /// Latency of failed requests (NBomber's "fail stats").
    pub failed_latency: Latency,
    /// Completed requests per bucket of `interval`, from the start, for
    /// throughput over time (see `timeline`; the last bucket is partial).
    pub timeline: Vec<u64>,
    /// Width of a `timeline` bucket, sized to the step.
    #[serde(with = "secs")]
    pub interval: Duration,
    /// CPU time the load generator spent (user + system), if measured.
    #[serde(with = "opt_secs")]
    pub client_cpu: Option<Duration>,
    /// CPU time the server process spent during the step, if known (servers
    /// the scenario started, or a local pid).
    #[serde(with = "opt_secs")]
    pub server_cpu: Option<Duration>,
    /// Where `server_cpu` came from: `schedstat` (the scheduler's nanosecond
    /// run time of every thread) or `stat` (clock ticks, 10 ms each).
    pub server_cpu_source: Option<&'static str>,
    /// Step-specific figures shown after the standard ones (memory, measured
    /// error rate, BF.DEBUG...). Numbers that can be compared go in `metrics`.
    pub metrics: Vec<(String, f64)>,
    pub info: Vec<(String, String)>,
}

impl Measure {
    pub fn empty() -> Measure {
        Measure {
            ok: 0,
            failed: 0,
            failure_kinds: Vec::new(),
            elapsed: Duration::ZERO,
            latency: Latency::new(),
            failed_latency: Latency::new(),
            timeline: Vec::new(),
            interval: Duration::from_secs(1),
            client_cpu: None,
            server_cpu: None,
            server_cpu_source: None,
            metrics: Vec::new(),
            info: Vec::new(),
        }
    }

    /// Requests completed per second, successes and failures alike.
    pub fn rps(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs <= 0.0 {
            0.0
        } else {
            (self.ok + self.failed) as f64 / secs
        }
    }

    fn per_request(&self, cpu: Option<Duration>) -> Option<Duration> {
        let n = self.ok + self.failed;
        cpu.filter(|_| n > 0)
            .map(|c| c / n.min(u32::MAX as u64) as u32)
    }

    pub fn client_cpu_per_request(&self) -> Option<Duration> {
        self.per_request(self.client_cpu)
    }

    pub fn server_cpu_per_request(&self) -> Option<Duration> {
        self.per_request(self.server_cpu)
    }

    /// Set `server_cpu` from readings taken before and after the step.
    pub fn set_server_cpu(&mut self, before: Option<CpuTime>, after: Option<CpuTime>) {
        if let (Some(b), Some(a)) = (before, after) {
            if a.source == b.source {
                self.server_cpu = Some(a.total.saturating_sub(b.total));
                self.server_cpu_source = Some(a.source);
            }
        }
    }

    /// Throughput over time, the last (partial) bucket by the time it
    /// covered.
    pub fn rates(&self) -> Vec<crate::timeline::Rate> {
        crate::timeline::rates(&self.timeline, self.interval, self.elapsed)
    }

    /// Add a later load of the same step (another iteration): counts,
    /// latencies, times and CPU add up, and its timeline follows this one's.
    pub fn absorb(&mut self, other: &Measure) {
        use crate::timeline::{append_at, rebucket};
        let width = self.interval.max(other.interval);
        let mut head = rebucket(&self.timeline, self.interval, width);
        let tail = rebucket(&other.timeline, other.interval, width);
        if self.timeline.is_empty() && self.elapsed.is_zero() {
            head = tail;
        } else {
            append_at(&mut head, &tail, width, self.elapsed);
        }
        self.timeline = head;
        self.interval = width;
        self.ok += other.ok;
        self.failed += other.failed;
        for (k, n) in &other.failure_kinds {
            match self.failure_kinds.iter_mut().find(|(mk, _)| mk == k) {
                Some((_, mn)) => *mn += n,
                None => self.failure_kinds.push((k.clone(), *n)),
            }
        }
        self.elapsed += other.elapsed;
        self.latency.merge(&other.latency);
        self.failed_latency.merge(&other.failed_latency);
        let add = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.client_cpu = add(self.client_cpu, other.client_cpu);
        self.server_cpu = add(self.server_cpu, other.server_cpu);
        if self.server_cpu.is_none() {
            self.server_cpu_source = None;
        }
    }
}

/// A process's CPU time so far and where it was read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuTime {
    pub total: Duration,
    /// `schedstat` or `stat`.
    pub source: &'static str,
}

mod secs {
    use serde::Serializer;
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

mod opt_secs {
    use serde::Serializer;
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_iso_8601_utc() {
        assert_eq!(iso_date(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_date(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso_date(1_795_499_924), "2026-11-24T05:58:44Z");
        assert_eq!(iso_date(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let args = ["keel-bench", "run", "a b.toml", "--x=1", "it's", ""];
        assert_eq!(
            command_line(args.iter().map(|s| s.to_string())),
            r#"keel-bench run 'a b.toml' --x=1 'it'\''s' ''"#
        );
    }

    #[test]
    fn cpuinfo_gives_cores_and_model() {
        let text = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t: x\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n";
        assert_eq!(parse_cpuinfo(text), (2, Some("AMD EPYC".into())));
        assert_eq!(parse_cpuinfo(""), (0, None));
        let h = Host::this();
        assert!(h.cores >= 1 && !h.model.is_empty());
    }

    #[test]
    fn iterations_add_up() {
        let one = |ok: u64| {
            let mut m = Measure::empty();
            m.ok = ok;
            m.elapsed = Duration::from_millis(10);
            m.interval = Duration::from_millis(1);
            m.timeline = vec![ok / 10; 10];
            m.client_cpu = Some(Duration::from_millis(1));
            m.server_cpu = Some(Duration::from_millis(2));
            m.server_cpu_source = Some("schedstat");
            m.latency.record(Duration::from_micros(100));
            m
        };
        let mut a = one(100);
        a.absorb(&one(200));
        assert_eq!(a.ok, 300);
        assert_eq!(a.elapsed, Duration::from_millis(20));
        assert_eq!(a.timeline.iter().sum::<u64>(), 300);
        assert_eq!(a.timeline.len(), 20);
        assert_eq!(a.server_cpu, Some(Duration::from_millis(4)));
        assert_eq!(a.server_cpu_source, Some("schedstat"));
        assert_eq!(a.latency.count(), 2);
        let r = a.rates();
        assert!((r[0].per_s - 10_000.0).abs() < 1e-6 && (r[19].per_s - 20_000.0).abs() < 1e-6);
    }
}
