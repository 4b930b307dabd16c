//! Keel's Roaring-bitmap commands (R.*) and the secondary indexes built on them
//! (IDX.*).
//!
//! Owns: these commands' specs and handlers, each file listing its commands in
//! its `COMMANDS` table for the server to assemble. Depends on the kernel
//! (`keel-engine`) and `keel-store`.
//!
//! Must not: name another family's module.

pub mod index;
pub mod roaring;
