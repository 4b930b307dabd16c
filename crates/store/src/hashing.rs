//! The process-wide hashing of keys and members: one per-process seed, mixed
//! differently for each use, and the [`hash_key`] that picks a key's shard and
//! bucket and that the collection types' own tables share.

use std::hash::BuildHasher;
use std::sync::OnceLock;

static HASHER: OnceLock<foldhash::fast::FixedState> = OnceLock::new();

fn hasher() -> &'static foldhash::fast::FixedState {
    HASHER.get_or_init(|| foldhash::fast::FixedState::with_seed(process_seed(0)))
}

/// A per-process seed for the hash tables, different for each use (`mix`):
/// it keeps bucket placement unpredictable to clients. `KEEL_HASH_SEED` in
/// the environment fixes it, so that two runs place keys alike and the cost
/// guard counts the same probes each time.
pub(crate) fn process_seed(mix: u64) -> u64 {
    let fixed = std::env::var("KEEL_HASH_SEED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    let seed = fixed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9e37_79b9_7f4a_7c15)
            ^ u64::from(std::process::id()).rotate_left(32)
    });
    seed ^ mix
}

/// The process-wide hash of a key: picks the shard and the bucket.
#[inline]
pub fn hash_key(key: &[u8]) -> u64 {
    hasher().hash_one(key)
}
