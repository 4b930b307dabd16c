//! keel-client: an async RESP client that pipelines automatically.
//!
//! Every clone of a [`Client`] shares one connection. Requests go onto a queue;
//! one writer drains whatever is queued into a single write, and replies are
//! matched to callers in order. Callers write ordinary one-request-at-a-time
//! code and get pipelining's throughput when many of them run at once.
//! Must not: depend on anything but `keel-resp`.

mod client;
mod commands;
mod error;
mod mux;
mod url;

pub use client::{Client, Options, Pipeline};
pub use error::{Error, Result};
pub use keel_resp::Frame;
pub use url::{parse as parse_url, ConnectInfo};
