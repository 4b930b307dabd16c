//! Keel's persistence file formats.
//!
//! This crate turns bytes into owned values and store values back into bytes: the RDB snapshot
//! reader and writer, the conversion of what the reader yields into store values, DUMP
//! payloads, Redis's CRC-64 and LZF. It opens no sockets, decides no policy and knows nothing
//! of the engine, which calls it.

pub mod crc64;
pub mod lzf;
pub mod rdb;
