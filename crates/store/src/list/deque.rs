//! The general form of a list (`Value::List`): a deque of compact strings.
//! Knows nothing of `Value`; `list` holds the operations on list values,
//! whichever their encoding.

use crate::bytes::CompactBytes;
use std::collections::VecDeque;

/// The general form of a list: O(1) push and pop at both ends, O(1) access
/// by index (so LRANGE of a few elements on a long list costs only those).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListDeque {
    pub(super) items: VecDeque<CompactBytes>,
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

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Give back memory after the list shrank to a small part of its capacity,
    /// keeping room to grow again without reallocating at once.
    pub(super) fn settle(&mut self) {
        let cap = self.items.capacity();
        if cap > 64 && self.items.len() * 4 < cap {
            self.items.shrink_to(self.items.len() * 2);
        }
    }
}
