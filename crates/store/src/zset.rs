//! Sorted sets. Small ones are a `Packed` of (member, score) pairs in score
//! order (`Value::ZSetPacked`) within `zset-max-listpack-entries` and
//! `zset-max-listpack-value`; larger ones a `ZSetIndex` (`Value::ZSet`,
//! reported as Redis's skiplist).

use crate::bytes::CompactBytes;

/// The general form of a sorted set: scores by member, and members in
/// (score, member) order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ZSetIndex {
    pub scores: hashbrown::HashMap<CompactBytes, f64>,
}

impl ZSetIndex {
    pub fn heap_bytes(&self) -> usize {
        let slot = std::mem::size_of::<(CompactBytes, f64)>() + 1;
        self.scores.capacity() * slot
            + self
                .scores
                .keys()
                .map(CompactBytes::heap_bytes)
                .sum::<usize>()
    }
}
