//! Keel's connection and server commands: HELLO, AUTH, CLIENT, SELECT, INFO,
//! CONFIG, DEBUG, MEMORY, the ACL, COMMAND, SLOWLOG and LATENCY commands, pub/sub,
//! MULTI/EXEC, EVAL and FUNCTION, SAVE and BGREWRITEAOF, and the replication and
//! cluster commands Keel refuses by name.
//!
//! Owns: these commands' specs and handlers, each file listing its commands in
//! its `COMMANDS` table for the server to assemble. Depends on the kernel
//! (`keel-engine`) and `keel-store`.
//!
//! Must not: name a data family's module; what it reports about values (INFO,
//! MEMORY USAGE, DEBUG) comes through the kernel and `keel-store`.

pub mod acl;
pub mod connection;
pub mod introspection;
pub mod operator;
pub mod persistence;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod transactions;
