//! Keel's persistence file formats.
//!
//! This crate turns bytes into owned values and store values back into bytes: the RDB snapshot
//! reader and writer (keys and function libraries), the conversion of what the reader yields
//! into store values, DUMP and FUNCTION DUMP payloads, Redis's CRC-64 and LZF, and the
//! append-only file formats ([`aof`]: commands, the multi-part manifest, file names, a base in
//! command form). It opens no sockets, decides no
//! policy and knows nothing of the engine, which calls it. The `keel-check-rdb` and
//! `keel-check-aof` binaries check files like Redis's checkers.

pub mod aof;
pub mod crc64;
pub mod lzf;
pub mod rdb;
