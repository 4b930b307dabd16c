//! Keel's stream commands: XADD, XRANGE, XREAD, XTRIM, ... and consumer groups
//! (XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO).
//!
//! Owns: these commands' specs and handlers, each file listing its commands in
//! its `COMMANDS` table for the server to assemble. Depends on the kernel
//! (`keel-engine`) and `keel-store`.
//!
//! Must not: name another family's module.

pub mod streams;
pub mod xgroups;
