//! Keel's string commands: GET/SET and their variants, counters, ranges, LCS,
//! and the two families stored in strings, bitmaps (SETBIT, BITCOUNT, BITFIELD,
//! BITOP) and HyperLogLog (PFADD, PFCOUNT, PFMERGE).
//!
//! Owns: these commands' specs and handlers, each file listing its commands in
//! its `COMMANDS` table for the server to assemble. Depends on the kernel
//! (`keel-engine`) and `keel-store`.
//!
//! Must not: name another family's module or reach the network or files.

pub mod bitmap;
pub mod hll;
pub mod strings;
