//! The general form of a hash (`Value::Hash`): a dense entry vector found
//! through a table of positions. Knows nothing of `Value`; `hash` holds the
//! operations on hash values, whichever their encoding.

use crate::bytes::CompactBytes;
use crate::hashing::hash_key;

/// The general form of a hash: fields and values in a dense vector, found
/// through a table of positions.
///
/// Removal swaps the last entry into the hole, which keeps the vector dense
/// (random picks are one index) and lets a scan that walks positions from the
/// end downwards return every entry present for the whole scan: an entry only
/// ever moves from the last position, which such a scan has already passed.
#[derive(Clone, Default)]
pub struct HashTable {
    entries: Vec<(CompactBytes, CompactBytes)>,
    index: hashbrown::HashTable<u32>,
}

impl std::fmt::Debug for HashTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

impl PartialEq for HashTable {
    /// Same fields with the same values, whatever the order.
    fn eq(&self, other: &HashTable) -> bool {
        self.len() == other.len()
            && self
                .entries
                .iter()
                .all(|(k, v)| other.get(k.as_slice()) == Some(v.as_slice()))
    }
}

impl HashTable {
    pub fn with_capacity(n: usize) -> HashTable {
        HashTable {
            entries: Vec::with_capacity(n),
            index: hashbrown::HashTable::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn position(&self, field: &[u8]) -> Option<usize> {
        let entries = &self.entries;
        self.index
            .find(hash_key(field), |&i| {
                entries
                    .get(i as usize)
                    .is_some_and(|e| e.0.as_slice() == field)
            })
            .map(|&i| i as usize)
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        let i = self.position(field)?;
        self.entries.get(i).map(|e| e.1.as_slice())
    }

    /// Set `field` to `value`; true when the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Some(i) = self.position(field) {
            if let Some(e) = self.entries.get_mut(i) {
                e.1 = CompactBytes::new(value);
            }
            return false;
        }
        let at = self.entries.len() as u32;
        self.entries
            .push((CompactBytes::new(field), CompactBytes::new(value)));
        let entries = &self.entries;
        self.index.insert_unique(hash_key(field), at, |&i| {
            entries
                .get(i as usize)
                .map_or(0, |e| hash_key(e.0.as_slice()))
        });
        true
    }

    /// Remove `field`; true when it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let entries = &self.entries;
        let Ok(slot) = self.index.find_entry(hash_key(field), |&i| {
            entries
                .get(i as usize)
                .is_some_and(|e| e.0.as_slice() == field)
        }) else {
            return false;
        };
        let (at, _) = slot.remove();
        let at = at as usize;
        let last = self.entries.len() - 1;
        self.entries.swap_remove(at);
        if at != last {
            // The former last entry now lives at `at`: repoint its slot.
            if let Some(moved) = self.entries.get(at) {
                let h = hash_key(moved.0.as_slice());
                if let Some(slot) = self.index.find_mut(h, |&i| i as usize == last) {
                    *slot = at as u32;
                }
            }
        }
        if self.entries.capacity() > 64 && self.entries.len() * 4 < self.entries.capacity() {
            self.entries.shrink_to(self.entries.len() * 2);
            let entries = &self.entries;
            self.index.shrink_to(entries.len() * 2, |&i| {
                entries
                    .get(i as usize)
                    .map_or(0, |e| hash_key(e.0.as_slice()))
            });
        }
        true
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.entries
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
    }

    /// The entry at position `i` (0 to len-1), for random picks.
    pub fn entry_at(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.entries
            .get(i)
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
    }

    /// One step of a scan: `cursor` 0 starts at the end, any other value is
    /// the position below which entries remain. Visits up to `count` entries
    /// and returns the cursor to continue with, 0 when done.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], &[u8])) -> u64 {
        let len = self.entries.len();
        let hi = if cursor == 0 {
            len
        } else {
            usize::try_from(cursor).unwrap_or(usize::MAX).min(len)
        };
        let lo = hi.saturating_sub(count.max(1));
        for (k, v) in self.entries[lo..hi].iter().rev() {
            f(k.as_slice(), v.as_slice());
        }
        lo as u64
    }

    /// Heap bytes owned, approximately: the entry vector, the position table
    /// (four bytes and a control byte per bucket) and out-of-line bytes.
    pub fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(CompactBytes, CompactBytes)>();
        let buckets = (self.index.capacity() * 8 / 7).next_power_of_two();
        self.entries.capacity() * entry
            + buckets * (std::mem::size_of::<u32>() + 1)
            + self
                .entries
                .iter()
                .map(|(k, v)| k.heap_bytes() + v.heap_bytes())
                .sum::<usize>()
    }
}

/// An empty table, what `HashMut::view` falls back on.
pub(super) static EMPTY: HashTable = HashTable {
    entries: Vec::new(),
    index: hashbrown::HashTable::new(),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_shrinks_after_mass_removal() {
        let mut t = HashTable::default();
        for i in 0..1000 {
            t.insert(format!("f{i}").as_bytes(), b"v");
        }
        let big = t.heap_bytes();
        for i in 0..990 {
            assert!(t.remove(format!("f{i}").as_bytes()));
        }
        assert!(t.heap_bytes() * 4 < big);
        for i in 990..1000 {
            assert_eq!(t.get(format!("f{i}").as_bytes()), Some(&b"v"[..]));
        }
    }
}
