//! Hashes: field -> value maps. Small hashes are a `Packed` of alternating
//! fields and values (`Value::HashPacked`); past `hash-max-listpack-entries`
//! fields or a field or value longer than `hash-max-listpack-value` bytes
//! they become a `HashTable` (`Value::Hash`), and never go back, as in Redis.

use crate::bytes::CompactBytes;

/// The general form of a hash.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HashTable {
    pub map: hashbrown::HashMap<CompactBytes, CompactBytes>,
}

impl HashTable {
    /// Heap bytes owned, approximately: the table's slots plus out-of-line bytes.
    pub fn heap_bytes(&self) -> usize {
        let slot = std::mem::size_of::<(CompactBytes, CompactBytes)>() + 1;
        self.map.capacity() * slot
            + self
                .map
                .iter()
                .map(|(k, v)| k.heap_bytes() + v.heap_bytes())
                .sum::<usize>()
    }
}
