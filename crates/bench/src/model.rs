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
}

/// One invocation of the tool.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub title: String,
    pub targets: Vec<Target>,
    pub steps: Vec<Step>,
    /// Free-form lines shown under the tables (configuration, skipped parts).
    pub notes: Vec<String>,
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
    /// Completed requests per interval, for throughput over time.
    pub timeline: Vec<u64>,
    #[serde(with = "secs")]
    pub interval: Duration,
    /// CPU time the load generator spent (user + system), if measured.
    #[serde(with = "opt_secs")]
    pub client_cpu: Option<Duration>,
    /// CPU time the server process spent during the step, if known (servers
    /// the scenario started, or a local pid).
    #[serde(with = "opt_secs")]
    pub server_cpu: Option<Duration>,
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
