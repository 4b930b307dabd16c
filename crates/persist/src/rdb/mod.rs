//! RDB snapshots: the owned model a reader yields, and the reader itself.
//!
//! The byte layout is described in `crates/persist/RDB.md`.

mod convert;
mod convert_error;
mod dump;
mod encoding;
mod footer;
mod function;
mod index;
mod module;
mod read;
mod sketch;
mod stream;
mod topk_tdigest;
mod types;
mod write;

pub use convert::to_store_value;
pub use convert_error::ConvertError;
pub use dump::{dump_payload, dump_payload_with, parse_payload, DumpError};
pub use function::{
    decode_function_dump, encode_function_dump, encode_function_dump_with, function_dump_libraries,
    FunctionDumpError, FunctionDumpLibraries,
};
pub use index::{index_from_module, INDEX_ENCODING_VERSION, INDEX_TYPE_NAME};
pub use read::{read_all, RdbReader};
pub use sketch::{cms_from_module, cuckoo_from_module};
pub use topk_tdigest::{tdigest_from_module, topk_from_module};
pub use types::{module_id, module_name, BLOOM_ENCODING_VERSION, BLOOM_TYPE_NAME, RDB_VERSION};
pub use write::{RdbWriter, WriteOptions};

use thiserror::Error;

/// Name/value byte-string pairs: hash fields, AUX fields.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// One value as the snapshot holds it, whatever encoding it was stored in.
#[derive(Debug, Clone, PartialEq)]
pub enum RdbValue {
    String(Vec<u8>),
    /// Elements in list order.
    List(Vec<Vec<u8>>),
    /// Members in file order.
    Set(Vec<Vec<u8>>),
    /// Field/value pairs in file order.
    Hash(Pairs),
    /// Member/score pairs in rank order (by score, then member bytes), whatever the file order.
    ZSet(Vec<(Vec<u8>, f64)>),
    /// A module value, kept as the bytes that follow its 64-bit module id (up to and including
    /// its end-of-value opcode).
    Module {
        id: u64,
        raw: Vec<u8>,
    },
    /// A stream (RDB types 15, 19 and 21), already checked and built.
    Stream(Box<keel_store::stream::Stream>),
}

/// One key of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct RdbEntry {
    pub db: u64,
    pub key: Vec<u8>,
    /// Absolute expiry, Unix milliseconds.
    pub expire_at_ms: Option<i64>,
    pub value: RdbValue,
}

/// What a snapshot holds, in file order: keys, and the function libraries Redis 7.0 writes
/// before the first database.
#[derive(Debug, Clone, PartialEq)]
pub enum RdbItem {
    Entry(RdbEntry),
    /// A function library's whole code (`#!lua name=...` and its body).
    Library(bytes::Bytes),
}

/// What went wrong, without where.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RdbErrorKind {
    #[error("Wrong signature trying to load DB from file")]
    BadMagic,
    #[error("Can't handle RDB format version {0}")]
    BadVersion(u32),
    #[error("Unexpected EOF reading RDB file")]
    Truncated,
    #[error("Invalid object type: {0}")]
    UnknownType(u8),
    #[error("unsupported value type {0}")]
    Unsupported(u8),
    #[error("invalid encoding: {0}")]
    Invalid(&'static str),
    #[error("{0}")]
    Lzf(#[from] crate::lzf::LzfError),
    #[error("checksum mismatch: file says {expected:#018x}, content gives {actual:#018x}")]
    Checksum { expected: u64, actual: u64 },
    /// A function library record that does not read; the text is Redis's reason
    /// (`Failed loading library payload`, ...), which Redis logs after `Failed loading library, `.
    #[error("Failed loading library, {0}")]
    Library(&'static str),
}

/// A reading error and the byte offset in the file where it was found. Errors inside an
/// LZF-compressed blob name the offset where that blob starts.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{kind} at byte offset {offset}")]
pub struct RdbError {
    pub offset: usize,
    pub kind: RdbErrorKind,
}
