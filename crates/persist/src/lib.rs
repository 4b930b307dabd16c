//! Keel's persistence file formats.
//!
//! This crate only turns bytes into owned values (and, for the building blocks, back): the RDB
//! snapshot reader, Redis's CRC-64 and LZF, and the append-only file formats ([`aof`]: commands,
//! the multi-part manifest, file names). It opens no sockets and knows nothing of the engine;
//! the engine will build store values from what [`rdb::RdbReader`] yields and replay what
//! [`aof::CommandReader`] yields. The `keel-check-aof` binary checks AOF files like
//! `redis-check-aof`.

pub mod aof;
pub mod crc64;
pub mod lzf;
pub mod rdb;
