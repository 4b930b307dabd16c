//! Keel's generic key commands (DEL, EXISTS, TYPE, the EXPIRE and TTL families,
//! SCAN, RENAME, COPY, MOVE, OBJECT) and DUMP/RESTORE, which work on a key of any type.
//!
//! Owns: these commands' specs and handlers, each file listing its commands in
//! its `COMMANDS` table for the server to assemble. Depends on the kernel
//! (`keel-engine`) and `keel-store`.
//!
//! Must not: know any one value type's commands, or hold state outside the kernel's keyspace.

pub mod dump;
pub mod keys;
