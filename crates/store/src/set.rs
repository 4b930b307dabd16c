//! Sets. Sets of integers are a sorted `Packed` of integers
//! (`Value::SetInts`, Redis's intset) up to `set-max-intset-entries`; other
//! small sets are a `Packed` of members (`Value::SetPacked`) up to
//! `set-max-listpack-entries` members of at most `set-max-listpack-value`
//! bytes; beyond that a `SetTable` (`Value::Set`).

use crate::bytes::CompactBytes;

/// The general form of a set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetTable {
    pub members: hashbrown::HashSet<CompactBytes>,
}

impl SetTable {
    pub fn heap_bytes(&self) -> usize {
        let slot = std::mem::size_of::<CompactBytes>() + 1;
        self.members.capacity() * slot
            + self
                .members
                .iter()
                .map(CompactBytes::heap_bytes)
                .sum::<usize>()
    }
}
