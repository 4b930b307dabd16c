//! [`ConvertError`]: why a snapshot value cannot become a store value. It lives below every
//! module that reports it: the conversion itself, the module-data reader and each module type's
//! loader (Bloom, Roaring, bitmap index, cuckoo, count-min, top-k, t-digest).

use thiserror::Error;

/// Why a snapshot value cannot become a store value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConvertError {
    /// A collection with no elements: Redis skips such keys when loading and refuses them in
    /// RESTORE.
    #[error("empty collection")]
    Empty,
    #[error("duplicate {0} in a collection")]
    Duplicate(&'static str),
    #[error("sorted set score is NaN")]
    NanScore,
    /// A module type Keel has no implementation of.
    #[error("module type {name} is not supported by Keel yet{what}")]
    UnsupportedModule { name: String, what: String },
    #[error("unsupported encoding version {version} of module type {name}")]
    ModuleVersion { name: String, version: u64 },
    #[error("invalid Bloom filter: {0}")]
    BadBloom(&'static str),
    #[error("invalid Roaring bitmap: {0}")]
    BadRoaring(String),
    #[error("invalid bitmap index: {0}")]
    BadIndex(&'static str),
    #[error("invalid cuckoo filter: {0}")]
    BadCuckoo(&'static str),
    #[error("invalid count-min sketch: {0}")]
    BadCms(&'static str),
    #[error("invalid top-k sketch: {0}")]
    BadTopK(&'static str),
    #[error("invalid t-digest: {0}")]
    BadTDigest(&'static str),
}
