//! Keel's geospatial commands (GEOADD, GEOSEARCH, GEODIST, ...). A geo set is a
//! sorted set, so this crate builds on `keel-collections`' sorted-set commands.
//!
//! Owns: these commands' specs and handlers, each file listing its commands in
//! its `COMMANDS` table for the server to assemble. Depends on the kernel
//! (`keel-engine`) and `keel-store`.
//!
//! Must not: depend on any family but `keel-collections`.

pub mod geo;
