//! Keel's collection commands: hashes, lists, sets and sorted sets, the blocking
//! list and sorted-set pops (BLPOP, BLMOVE, BZPOPMIN, ...), and SORT over them.
//!
//! Owns: these commands' specs and handlers, each file listing its commands in
//! its `COMMANDS` table for the server to assemble. Depends on the kernel
//! (`keel-engine`) and `keel-store`.
//!
//! Must not: name a family of another crate; blocking goes through the kernel's
//! blocking registry, never through a connection.

pub mod blocking;
pub mod hashes;
pub mod lists;
pub mod sets;
pub mod sort;
pub mod zsets;
