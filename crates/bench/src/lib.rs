//! keel-bench: one load tool for Keel, Redis or any RESP server.
//!
//! - `model`: what a run measured (targets, steps, outcomes), shared by every
//!   mode and every report format.
//! - `hist`: latency histograms (HDR, nanosecond resolution).
//! - `load`: the load engine: connections, pipelining, closed and open loop.
//! - `classic`: redis-benchmark's flags, test names and output.
//! - `mixed`: memtier-like mixed workloads (ratios, key patterns, rates).
//! - `pubsub`: publish/subscribe fan-out and fan-in throughput.
//! - `scenario`: TOML scenario files, server processes, the seed scenarios.
//! - `report`: the final table, JSON, self-contained HTML, live progress.
//! - `timeline`: throughput over time in buckets sized to the step.
//!
//! Must not: know any server's internals; it speaks RESP through `keel-client`
//! and `keel-resp` only.

pub mod classic;
pub mod hist;
pub mod load;
pub mod mixed;
pub mod model;
pub mod pubsub;
pub mod report;
pub mod rng;
pub mod scenario;
pub mod timeline;
