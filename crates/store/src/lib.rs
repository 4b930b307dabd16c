//! Keel's data types and keyspace.
//!
//! Owns how keys and values live in memory: the sharded [`Keyspace`], per-database
//! [`Table`]s with their expiry index, the compact byte strings that hold keys and
//! values, and the pure operations on them (glob matching, bit operations, numeric
//! parsing). Knows nothing about sockets, async, RESP or commands: every function
//! here takes plain bytes and numbers, and time is always passed in by the caller.

pub mod access;
pub mod bits;
pub mod bloom;
pub mod bytes;
pub mod cms;
pub mod cuckoo;
pub mod geo;
pub mod glob;
pub mod hash;
pub mod hashing;
pub mod hll;
pub mod index;
pub mod keyspace;
pub mod limits;
pub mod list;
pub mod longdouble;
pub mod murmur;
pub mod num;
pub mod packed;
pub mod pqsort;
pub mod prefetch;
pub mod roaring;
pub mod set;
pub mod slab;
pub mod slim;
pub mod stream;
pub mod tdigest;
pub mod topk;
pub mod value;
pub mod zset;

pub use crate::bytes::{CompactBytes, StrBytes};
pub use keyspace::{
    Entry, Keyspace, Read, Sample, ScanCursor, Shard, ShardGuard, ShardReadGuard, Table,
};
pub use value::{CompactLimits, Value, ValueType};
