//! Keel's probabilistic structures, served natively with RedisBloom's commands
//! and replies: Bloom and cuckoo filters, Count-Min sketches, Top-K and
//! t-digest.
//!
//! Owns: these commands' specs and handlers, each file listing its commands in
//! its `COMMANDS` table for the server to assemble. Depends on the kernel
//! (`keel-engine`) and `keel-store`.
//!
//! Must not: name another family's module; the structures themselves live in
//! `keel-store`.

pub mod bloom;
pub mod cms;
pub mod cuckoo;
pub mod tdigest;
pub mod topk;
