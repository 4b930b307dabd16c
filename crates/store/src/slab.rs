//! `Slab`: values stored in pages and named by a 4-byte index.
//!
//! A database table keeps its entries here and only their indexes in its hash
//! table, so each bucket costs 4 bytes plus a control byte instead of an 8-byte
//! pointer plus a control byte, and entries sit side by side in pages instead of
//! one allocation each. Tables sit anywhere between 44% and 87% load, so the
//! bucket is the part of a key's cost that is paid about twice.
//!
//! Pages start small (a table with one key does not hold a thousand slots) and
//! grow by a factor of about 1.4 (4, 4, 8, 8, 16, 16, ...) up to
//! [`PAGE_SLOTS`], so the unused end of the newest page stays a small share of
//! a small table (doubling left up to half of it empty: 1,000 keys over 64
//! shards cost 17% more than with boxed entries); a page never reallocates, so
//! an index names the same slot for as long as the value lives. Freed slots are
//! reused first.
//!
//! A full page is small (128 slots, 7 KiB of entries): the slots a table holds
//! beyond its keys are paid in every shard, so with 64 shards 1,024-slot pages
//! could leave 3.6 MiB of empty slots, memory that under `maxmemory` holds no
//! keys. A sorted list of where each page starts keeps a random draw
//! O(log pages).

/// Slots in a full page; an index is `page << PAGE_SHIFT | slot`.
const PAGE_SHIFT: u32 = 7;
pub const PAGE_SLOTS: usize = 1 << PAGE_SHIFT;
const FIRST_PAGE: usize = 4;

/// Slots in page number `page`: two pages of each power of two from
/// [`FIRST_PAGE`], then [`PAGE_SLOTS`].
fn page_slots(page: usize) -> usize {
    match FIRST_PAGE.checked_shl((page / 2) as u32) {
        Some(n) if n < PAGE_SLOTS => n,
        _ => PAGE_SLOTS,
    }
}

pub struct Slab<T> {
    pages: Vec<Vec<Option<T>>>,
    /// Slots filled in the pages before each page: only the last page grows,
    /// so these never change once pushed.
    starts: Vec<u32>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            pages: Vec::new(),
            starts: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

#[inline]
fn split(index: u32) -> (usize, usize) {
    (
        (index >> PAGE_SHIFT) as usize,
        (index as usize) & (PAGE_SLOTS - 1),
    )
}

impl<T> Slab<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Store `value` and return its index.
    pub fn insert(&mut self, value: T) -> u32 {
        self.len += 1;
        if let Some(index) = self.free.pop() {
            let (p, s) = split(index);
            self.pages[p][s] = Some(value);
            return index;
        }
        // A slot index must fit below PAGE_SLOTS whatever capacity the
        // allocator granted.
        let room = self
            .pages
            .last()
            .is_some_and(|p| p.len() < p.capacity().min(PAGE_SLOTS));
        if !room {
            let before = self.filled() as u32;
            self.starts.push(before);
            self.pages
                .push(Vec::with_capacity(page_slots(self.pages.len())));
        }
        let p = self.pages.len() - 1;
        let page = &mut self.pages[p];
        let s = page.len();
        page.push(Some(value));
        ((p as u32) << PAGE_SHIFT) | s as u32
    }

    /// Slots ever filled since the slab was last empty, freed or not.
    fn filled(&self) -> usize {
        match (self.starts.last(), self.pages.last()) {
            (Some(&start), Some(page)) => start as usize + page.len(),
            _ => 0,
        }
    }

    #[inline]
    pub fn get(&self, index: u32) -> Option<&T> {
        let (p, s) = split(index);
        self.pages.get(p)?.get(s)?.as_ref()
    }

    #[inline]
    pub fn get_mut(&mut self, index: u32) -> Option<&mut T> {
        let (p, s) = split(index);
        self.pages.get_mut(p)?.get_mut(s)?.as_mut()
    }

    /// Take the value out of its slot; the slot is reused by a later insert.
    pub fn remove(&mut self, index: u32) -> Option<T> {
        let (p, s) = split(index);
        let value = self.pages.get_mut(p)?.get_mut(s)?.take()?;
        self.len -= 1;
        if self.len == 0 {
            // An emptied table gives its pages back.
            *self = Slab::default();
        } else {
            self.free.push(index);
        }
        Some(value)
    }

    pub fn clear(&mut self) {
        *self = Slab::default();
    }

    /// One past the highest index ever filled since the slab was last empty:
    /// every stored value's index is below it, and a value inserted later
    /// either reuses a freed index or gets one at or above it.
    pub fn end(&self) -> u32 {
        self.pages.last().map_or(0, |page| {
            (((self.pages.len() - 1) as u32) << PAGE_SHIFT).saturating_add(page.len() as u32)
        })
    }

    /// Every stored value, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.pages.iter().flatten().filter_map(Option::as_ref)
    }

    /// Every stored value at or after index `from`, with its index, in index
    /// order.
    pub fn iter_from(&self, from: u32) -> impl Iterator<Item = (u32, &T)> {
        let (first_page, first_slot) = split(from);
        self.pages
            .iter()
            .enumerate()
            .skip(first_page)
            .flat_map(move |(p, page)| {
                let skip = if p == first_page { first_slot } else { 0 };
                page.iter()
                    .enumerate()
                    .skip(skip)
                    .filter_map(move |(s, v)| {
                        v.as_ref()
                            .map(|v| (((p as u32) << PAGE_SHIFT) | s as u32, v))
                    })
            })
    }

    /// A uniformly random stored value with its index; `pick(n)` draws below
    /// `n`. Draws a slot among those ever filled and retries on a freed one,
    /// so it costs O(log pages) per draw while most slots are in use, and falls
    /// back to counting through the values when most are free.
    pub fn random(&self, pick: &mut dyn FnMut(usize) -> usize) -> Option<(u32, &T)> {
        if self.len == 0 {
            return None;
        }
        let filled = self.filled();
        if self.len * 4 >= filled {
            for _ in 0..32 {
                let r = pick(filled);
                // The first page starts at 0, so some page starts at or before r.
                let Some(p) = self
                    .starts
                    .partition_point(|&s| s as usize <= r)
                    .checked_sub(1)
                else {
                    break;
                };
                let s = r - self.starts[p] as usize;
                if let Some(v) = self.pages.get(p).and_then(|page| page.get(s)?.as_ref()) {
                    return Some((((p as u32) << PAGE_SHIFT) | s as u32, v));
                }
            }
        }
        self.iter_from(0).nth(pick(self.len))
    }

    /// Bytes of the pages and the free list.
    pub fn heap_bytes(&self) -> usize {
        self.pages
            .iter()
            .map(|p| p.capacity() * std::mem::size_of::<Option<T>>())
            .sum::<usize>()
            + self.pages.capacity() * std::mem::size_of::<Vec<Option<T>>>()
            + self.starts.capacity() * 4
            + self.free.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn pages_grow_then_stay_full_size() {
        let mut s = Slab::default();
        let ids: Vec<u32> = (0..5000u32).map(|i| s.insert(i)).collect();
        assert_eq!(s.len(), 5000);
        let caps: Vec<usize> = s.pages.iter().map(|p| p.capacity()).collect();
        assert_eq!(&caps[..11], &[4, 4, 8, 8, 16, 16, 32, 32, 64, 64, 128]);
        assert!(caps[10..].iter().all(|&c| c == PAGE_SLOTS));
        // What a slab holds beyond its values is less than one full page.
        let slot = std::mem::size_of::<Option<u32>>();
        assert!(
            s.heap_bytes() - 5000 * slot < PAGE_SLOTS * slot + 4096,
            "{}",
            s.heap_bytes()
        );
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(s.get(*id), Some(&(i as u32)));
        }
        assert_eq!(s.get(u32::MAX), None);
        assert_eq!(s.end(), ids[4999] + 1);
        let last = s.insert(0);
        assert_eq!(last, ids[4999] + 1);
        assert_eq!(s.end(), last + 1);
        // A full page at the end: the bound is the next page's first index.
        let mut full = Slab::default();
        let last = (0..4088u32).map(|i| full.insert(i)).last();
        assert_eq!(full.pages.last().map(Vec::len), Some(PAGE_SLOTS));
        assert_eq!(Some(full.end()), last.map(|i| i + 1));
    }

    #[test]
    fn freed_slots_are_reused_and_empty_slab_frees_pages() {
        let mut s = Slab::default();
        let a = s.insert("a");
        let b = s.insert("b");
        assert_eq!(s.remove(a), Some("a"));
        assert_eq!(s.remove(a), None);
        assert_eq!(s.insert("c"), a);
        assert_eq!(s.remove(b), Some("b"));
        assert_eq!(s.remove(a), Some("c"));
        assert!(s.is_empty());
        assert_eq!(s.heap_bytes(), 0);
    }

    #[test]
    fn random_reaches_every_value_and_skips_freed_slots() {
        let mut s = Slab::default();
        let ids: Vec<u32> = (0..100u32).map(|i| s.insert(i)).collect();
        for id in ids.iter().filter(|&&id| id % 3 != 0) {
            s.remove(*id);
        }
        let mut seed = 7usize;
        let mut draw = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..2000 {
            let (id, v) = s.random(&mut draw).expect("not empty");
            assert_eq!(id % 3, 0);
            assert_eq!(s.get(id), Some(v));
            seen.insert(*v);
        }
        assert_eq!(seen.len(), ids.iter().filter(|&&id| id % 3 == 0).count());
        let mut empty: Slab<u8> = Slab::default();
        assert!(empty.random(&mut draw).is_none());
        // Over many pages of every size, draws fall evenly on every page.
        let mut big = Slab::default();
        for i in 0..20_000u32 {
            big.insert(i);
        }
        let mut per_page = vec![0u32; big.pages.len()];
        for _ in 0..200_000 {
            let (id, v) = big.random(&mut draw).expect("not empty");
            assert_eq!(big.get(id), Some(v));
            per_page[split(id).0] += 1;
        }
        for (p, n) in per_page.iter().enumerate() {
            let want = 200_000.0 * big.pages[p].len() as f64 / 20_000.0;
            assert!(
                (f64::from(*n) - want).abs() < 5.0 * want.sqrt() + 5.0,
                "page {p}: {n} vs {want}"
            );
        }
        empty.insert(1);
        assert_eq!(empty.random(&mut draw).map(|(_, v)| *v), Some(1));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16),
        Remove(usize),
        Set(usize, u16),
    }

    proptest! {
        /// Against a HashMap from index to value: every index stays valid until
        /// removed, no two live values share an index, iteration sees them all.
        #[test]
        fn slab_matches_model(ops in proptest::collection::vec(prop_oneof![
            any::<u16>().prop_map(Op::Insert),
            any::<usize>().prop_map(Op::Remove),
            (any::<usize>(), any::<u16>()).prop_map(|(i, v)| Op::Set(i, v)),
        ], 1..600)) {
            let mut s = Slab::default();
            let mut model: HashMap<u32, u16> = HashMap::new();
            let mut ids: Vec<u32> = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(v) => {
                        let id = s.insert(v);
                        prop_assert!(model.insert(id, v).is_none());
                        ids.push(id);
                    }
                    Op::Remove(i) if !ids.is_empty() => {
                        let id = ids.swap_remove(i % ids.len());
                        prop_assert_eq!(s.remove(id), model.remove(&id));
                    }
                    Op::Set(i, v) if !ids.is_empty() => {
                        let id = ids[i % ids.len()];
                        *s.get_mut(id).unwrap() = v;
                        model.insert(id, v);
                    }
                    _ => {}
                }
                prop_assert_eq!(s.len(), model.len());
            }
            prop_assert!(model.keys().all(|&i| i < s.end()));
            let seen: Vec<(u32, u16)> = s.iter_from(0).map(|(i, v)| (i, *v)).collect();
            let mut want: Vec<(u32, u16)> = model.into_iter().collect();
            want.sort_unstable();
            prop_assert_eq!(s.iter().count(), want.len());
            prop_assert_eq!(&seen, &want);
            // Starting part-way gives exactly the later indexes.
            for &(from, _) in want.iter().step_by(7) {
                let tail: Vec<(u32, u16)> = s.iter_from(from).map(|(i, v)| (i, *v)).collect();
                let expect: Vec<(u32, u16)> = want.iter().copied().filter(|&(i, _)| i >= from).collect();
                prop_assert_eq!(tail, expect);
            }
        }
    }
}
