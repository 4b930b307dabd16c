//! Lists. Small lists are a `Packed` of elements (`Value::ListPacked`)
//! within `list-max-listpack-size`; longer ones a `ListDeque`
//! (`Value::List`, reported as Redis's quicklist).

use crate::bytes::CompactBytes;
use std::collections::VecDeque;

/// The general form of a list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListDeque {
    pub items: VecDeque<CompactBytes>,
}

impl ListDeque {
    pub fn heap_bytes(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<CompactBytes>()
            + self
                .items
                .iter()
                .map(CompactBytes::heap_bytes)
                .sum::<usize>()
    }
}
