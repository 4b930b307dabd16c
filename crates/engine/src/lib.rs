//! Keel's kernel: the one execution path every command runs through, and what
//! commands run against. No sockets and no async: the network layer hands argv
//! in and gets a reply frame back; tests do the same without a server.
//!
//! Owns: `Engine` and its builder, the executor (`exec`), `Ctx`, the command
//! spec and table types, sessions, configuration, clock, stats, blocking,
//! watch, keyspace notifications, the pub/sub and tracking registries, ACL,
//! eviction, expiry, persistence driving and the scripting host interface.
//!
//! Must not: name a command family. The families (`crates/families/*`) depend
//! on this crate; what the kernel needs from them it declares in [`families`],
//! and the server hands it the assembled table and those hooks. Nor may its
//! modules form a cycle (`scripts/check_modules.py`): data at the bottom
//! (`declare`, `guards`, `client`, each registry's `state`), then `session`
//! and `config`, then [`kernel`], then what drives them, which re-exports the
//! types it drives under their usual paths.

pub mod acl;
mod aclcats;
pub mod args;
pub mod blocking;
pub mod client;
pub mod client_evict;
pub mod clients;
pub mod clock;
pub mod config;
pub mod counter;
pub mod ctx;
pub mod cycles;
pub mod declare;
pub mod engine;
pub mod error;
pub mod evict;
pub mod exec;
pub mod expire;
pub mod families;
pub mod guards;
pub mod histogram;
pub mod kernel;
pub mod keyspec;
pub mod keyspecs;
pub mod latency;
pub mod logging;
pub mod monitor;
pub mod notify;
pub mod outbuf;
pub mod pause;
pub mod persistence;
pub mod pubsub;
pub mod replication;
pub mod scan;
pub mod scripting;
pub mod session;
pub mod slowlog;
pub mod spec;
pub mod stats;
pub mod subcommands;
pub mod table;
pub mod tracking;
pub mod transaction;
pub mod version;
pub mod watch;

pub use client::ClientHandle;
pub use declare::{Flags, Group, Keys};
pub use engine::EngineBuilder;
pub use error::CmdError;
pub use kernel::CommandSpec;
pub use kernel::{Ctx, EffectSink, Engine};
pub use session::Session;

pub mod testing;
