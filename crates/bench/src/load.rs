//! The load engine. A `Workload` says what to send and how to judge replies;
//! a `LoadSpec` says where, how many connections or callers, how deep the
//! pipeline, for how long, and whether to pace requests (open loop).
//! `run` drives it and returns one `Measure`; `run_together` drives several
//! at once (a scenario's concurrent steps) and returns one each.

use crate::model::Measure;
use crate::rng::Rng;
use keel_resp::Frame;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

/// What a reply means for the step.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Ok,
    /// Counted as a failure under this reason (e.g. "false positive").
    Fail(Cow<'static, str>),
}

/// What one step sends, request by request.
pub trait Workload: Send + Sync + 'static {
    /// Append the next request, RESP-encoded, to `out`; the returned tag is
    /// handed back to `judge` with its reply.
    fn next(&self, rng: &mut Rng, out: &mut Vec<u8>) -> u32;

    /// Whether `judge` needs parsed replies. When false the engine only looks
    /// at each reply's first byte (an error reply fails with its text) and
    /// skips the rest unparsed, as redis-benchmark does.
    fn parses_replies(&self) -> bool {
        false
    }

    /// Judge one reply. The default fails error replies and accepts the rest.
    fn judge(&self, _tag: u32, reply: &Frame) -> Verdict {
        match reply {
            Frame::Error(e) => Verdict::Fail(String::from_utf8_lossy(e).into_owned().into()),
            _ => Verdict::Ok,
        }
    }
}

/// When a load stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Until {
    /// After this many requests in total (redis-benchmark's -n).
    Requests(u64),
    /// After this long (--test-time, scenario durations).
    Time(Duration),
}

/// How requests reach the server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// `connections` plain connections, each keeping up to `pipeline`
    /// requests in flight and waiting for all their replies before sending
    /// more (redis-benchmark's -c and -P). `pipeline` 1 is request/response.
    Raw { connections: usize, pipeline: usize },
    /// `workers` closed-loop callers, each sending one request and awaiting
    /// its reply, all sharing keel-client's multiplexed connections
    /// (`connections` of them): automatic pipelining.
    Batched { workers: usize, connections: usize },
}

#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// `host:port`.
    pub addr: String,
    /// Sent with AUTH on every new connection (-a).
    pub password: Option<String>,
    pub mode: Mode,
    /// Event-loop threads driving the connections (--threads); 1 by default.
    pub threads: usize,
    pub until: Until,
    /// Open loop: requests per second in total, sent on schedule whether or
    /// not replies have come back; latency is measured from each request's
    /// intended send time, so a stalled server cannot hide its stall
    /// (no coordinated omission). `None` is closed loop.
    pub rate: Option<f64>,
    /// Width of a throughput-over-time bucket.
    pub interval: Duration,
    /// Label of the live progress line; `None` prints nothing.
    pub progress: Option<String>,
    /// Seed for the workers' generators (each worker derives its own).
    pub seed: u64,
}

impl LoadSpec {
    pub fn new(addr: &str, mode: Mode, until: Until) -> LoadSpec {
        LoadSpec {
            addr: addr.to_string(),
            password: None,
            mode,
            threads: 1,
            until,
            rate: None,
            interval: Duration::from_secs(1),
            progress: None,
            seed: 0x6b65_656c,
        }
    }
}

/// Drive one workload to completion.
pub fn run(spec: &LoadSpec, workload: Arc<dyn Workload>) -> anyhow::Result<Measure> {
    run_together(vec![(spec.clone(), workload)])
        .into_iter()
        .next()
        .unwrap_or_else(|| Err(anyhow::anyhow!("no load was run")))
}

/// Drive several workloads at the same time; one result each, in order.
pub fn run_together(parts: Vec<(LoadSpec, Arc<dyn Workload>)>) -> Vec<anyhow::Result<Measure>> {
    parts
        .into_iter()
        .map(|_| Err(anyhow::anyhow!("the load engine is not built yet")))
        .collect()
}
