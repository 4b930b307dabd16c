//! The general form of a set (`Value::Set`): members in one array, found
//! through a table of positions. Knows nothing of `Value`; `set` holds the
//! operations on set values, whichever their encoding.

use crate::bytes::CompactBytes;
use crate::hashing::hash_key;

/// The general form of a set: members in a `Vec` and an index from a
/// member's hash to its position. Keeping members in one array makes a
/// random member an O(1) pick (hash tables cannot offer that) and lets SSCAN
/// walk positions; removal swaps the last member into the hole.
#[derive(Clone, Default)]
pub struct SetTable {
    members: Vec<CompactBytes>,
    /// Positions into `members`; sets are limited to `u32::MAX` members.
    index: hashbrown::HashTable<u32>,
}

impl std::fmt::Debug for SetTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.members.iter()).finish()
    }
}

impl PartialEq for SetTable {
    /// Equal as sets: the order members happen to be stored in is not part of
    /// the value.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|m| other.contains(m))
    }
}

impl SetTable {
    pub fn with_capacity(n: usize) -> SetTable {
        SetTable {
            members: Vec::with_capacity(n),
            index: hashbrown::HashTable::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The member stored at position `i` (positions are `0..len()`).
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.members.get(i).map(CompactBytes::as_slice)
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.members.iter().map(CompactBytes::as_slice)
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        let members = &self.members;
        self.index
            .find(hash_key(m), |&i| members[i as usize].as_slice() == m)
            .is_some()
    }

    /// Add `m`; false if it was already a member.
    pub fn insert(&mut self, m: &[u8]) -> bool {
        let hash = hash_key(m);
        let SetTable { members, index } = self;
        if index
            .find(hash, |&i| members[i as usize].as_slice() == m)
            .is_some()
        {
            return false;
        }
        let pos = members.len() as u32;
        members.push(CompactBytes::new(m));
        index.insert_unique(hash, pos, |&i| hash_key(members[i as usize].as_slice()));
        true
    }

    /// Remove `m`; false if it was not a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        let SetTable { members, index } = self;
        let Ok(slot) = index.find_entry(hash_key(m), |&i| members[i as usize].as_slice() == m)
        else {
            return false;
        };
        let (pos, _) = slot.remove();
        self.take_at(pos as usize);
        true
    }

    /// Remove and return the member at position `i`.
    pub fn remove_at(&mut self, i: usize) -> Option<CompactBytes> {
        let hash = hash_key(self.members.get(i)?.as_slice());
        if let Ok(slot) = self.index.find_entry(hash, |&j| j as usize == i) {
            slot.remove();
        }
        Some(self.take_at(i))
    }

    /// Take position `i` out of `members` (its index slot is already gone),
    /// moving the last member into the hole.
    fn take_at(&mut self, i: usize) -> CompactBytes {
        let last = self.members.len() - 1;
        let out = self.members.swap_remove(i);
        if i != last {
            let hash = hash_key(self.members[i].as_slice());
            if let Some(slot) = self.index.find_mut(hash, |&j| j as usize == last) {
                *slot = i as u32;
            }
        }
        self.shrink_if_sparse();
        out
    }

    /// Give memory back after many removals, as Redis resizes its dict when
    /// it falls under a tenth full.
    fn shrink_if_sparse(&mut self) {
        let len = self.members.len();
        if self.members.capacity() > 64 && len * 4 < self.members.capacity() {
            self.members.shrink_to(len * 2);
            let members = &self.members;
            self.index
                .shrink_to(len * 2, |&i| hash_key(members[i as usize].as_slice()));
        }
    }

    pub fn heap_bytes(&self) -> usize {
        let buckets = self.index.capacity() * 8 / 7;
        self.members.capacity() * std::mem::size_of::<CompactBytes>()
            + buckets * (std::mem::size_of::<u32>() + 1)
            + self
                .members
                .iter()
                .map(CompactBytes::heap_bytes)
                .sum::<usize>()
    }
}
