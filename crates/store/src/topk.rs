//! A top-k sketch: RedisBloom's HeavyKeeper (the `TOPK.*` commands).
//!
//! `depth` rows of `width` buckets each hold a fingerprint and a counter; a
//! min-heap of `k` slots holds the heaviest items seen with their estimated
//! counts. Adding an item bumps its bucket in every row where the bucket is
//! empty or already holds its fingerprint; in a row where another item sits,
//! the counter decays by one with probability `decay^count` per unit added,
//! and the item takes the bucket over when it reaches zero. The largest of
//! the item's counters is its estimate; if that reaches the heap's minimum,
//! the item enters the heap (pushing the minimum out) or updates its count.
//!
//! Everything follows RedisBloom so that replies match: MurmurHash2 (32-bit)
//! with row `i` hashed under seed `i` and the fingerprint under seed 1919, the
//! 256-entry decay table, the heap's sift-down with its exact tie handling,
//! and LIST's ordering (a stable sort of the heap array by count,
//! descending). The probabilistic decay draws from glibc's `rand()`
//! generator, reproduced here bit for bit ([`LibcRand`]) and seeded with 1,
//! glibc's default seed. RedisBloom draws from the process-wide `rand()`,
//! which Redis seeds from the clock and process id at start-up and which all
//! sketches share, so its own replies differ from run to run wherever a decay
//! decision was close; Keel gives each sketch its own generator, so the same
//! commands always give the same sketch.

use crate::murmur::murmur2;
use std::cmp::Reverse;

/// Entries in the decay lookup table (`decay^0 ..= decay^255`).
pub const DECAY_TABLE: usize = 256;
/// The largest increment `TOPK.INCRBY` accepts.
pub const MAX_INCREMENT: u32 = 100_000;
/// The hash seed of fingerprints.
const FINGERPRINT_SEED: u32 = 1919;
/// RedisBloom's `sizeof(TopK)`: three 32-bit sizes, the decay, two pointers
/// and the decay table.
pub const STRUCT_BYTES: usize = 16 + 8 + 8 + 8 + DECAY_TABLE * 8;
/// RedisBloom's `sizeof(Bucket)` and `sizeof(HeapBucket)`.
pub const BUCKET_BYTES: usize = 8;
pub const HEAP_SLOT_BYTES: usize = 24;
/// The most bytes of counters and heap one sketch may ask for; above it
/// creation fails as RedisBloom's does when its allocation fails.
pub const MAX_SKETCH_BYTES: u64 = 1 << 32;

/// glibc's `rand()`: the additive feedback generator of `random()` with its
/// default 31-word state (TYPE_3), seeded the way `srandom` seeds it.
#[derive(Clone, Debug)]
pub struct LibcRand {
    state: [u32; 31],
    front: usize,
    rear: usize,
}

/// glibc's `RAND_MAX`.
pub const RAND_MAX: u32 = 2_147_483_647;

impl LibcRand {
    pub fn new(seed: u32) -> LibcRand {
        let mut state = [0u32; 31];
        let mut word: i64 = if seed == 0 { 1 } else { i64::from(seed) };
        state[0] = word as u32;
        for slot in state.iter_mut().skip(1) {
            // 16807 * word % (2^31 - 1), by Schrage's method as glibc does.
            let hi = word / 127_773;
            let lo = word % 127_773;
            word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            *slot = word as u32;
        }
        let mut r = LibcRand {
            state,
            front: 3,
            rear: 0,
        };
        for _ in 0..310 {
            r.next();
        }
        r
    }

    /// The next value, in `0..=RAND_MAX`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u32 {
        let sum = self.state[self.front].wrapping_add(self.state[self.rear]);
        self.state[self.front] = sum;
        self.front = (self.front + 1) % 31;
        self.rear = (self.rear + 1) % 31;
        sum >> 1
    }
}

impl Default for LibcRand {
    fn default() -> Self {
        LibcRand::new(1)
    }
}

/// The generator is not part of a sketch's value: two sketches with the same
/// counters and heap are equal whatever their generators will draw next.
impl PartialEq for LibcRand {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// One counter of a row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bucket {
    pub fp: u32,
    pub count: u32,
}

/// One slot of the heap; `item` is `None` until an item takes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeapSlot {
    pub fp: u32,
    pub count: u32,
    pub item: Option<Box<[u8]>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopKError {
    /// The counters and heap would exceed [`MAX_SKETCH_BYTES`].
    TooLarge,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TopK {
    k: u32,
    width: u32,
    depth: u32,
    decay: f64,
    buckets: Vec<Bucket>,
    heap: Vec<HeapSlot>,
    table: Box<[f64; DECAY_TABLE]>,
    rand: LibcRand,
}

fn decay_table(decay: f64) -> Box<[f64; DECAY_TABLE]> {
    let mut t = Box::new([0.0; DECAY_TABLE]);
    for (i, slot) in t.iter_mut().enumerate() {
        *slot = decay.powf(i as f64);
    }
    t
}

impl TopK {
    /// A sketch of the `k` heaviest items over `depth` rows of `width`
    /// counters. The caller checks the ranges (all positive, decay in
    /// `(0, 1]`); only the total size is checked here.
    pub fn new(k: u32, width: u32, depth: u32, decay: f64) -> Result<TopK, TopKError> {
        let cells = u64::from(width) * u64::from(depth);
        let bytes = cells
            .saturating_mul(BUCKET_BYTES as u64)
            .saturating_add(u64::from(k) * HEAP_SLOT_BYTES as u64);
        if bytes > MAX_SKETCH_BYTES {
            return Err(TopKError::TooLarge);
        }
        let mut buckets = Vec::new();
        buckets
            .try_reserve_exact(cells as usize)
            .map_err(|_| TopKError::TooLarge)?;
        buckets.resize(cells as usize, Bucket::default());
        let mut heap = Vec::new();
        heap.try_reserve_exact(k as usize)
            .map_err(|_| TopKError::TooLarge)?;
        heap.resize(k as usize, HeapSlot::default());
        Ok(TopK {
            k,
            width,
            depth,
            decay,
            buckets,
            heap,
            table: decay_table(decay),
            rand: LibcRand::default(),
        })
    }

    /// A sketch from its parts, as a loader found them; `None` when they do
    /// not fit together.
    pub fn from_parts(
        k: u32,
        width: u32,
        depth: u32,
        decay: f64,
        buckets: Vec<Bucket>,
        heap: Vec<HeapSlot>,
    ) -> Option<TopK> {
        let valid = k > 0
            && width > 0
            && depth > 0
            && decay > 0.0
            && decay <= 1.0
            && buckets.len() as u64 == u64::from(width) * u64::from(depth)
            && heap.len() as u64 == u64::from(k);
        valid.then(|| TopK {
            k,
            width,
            depth,
            decay,
            buckets,
            heap,
            table: decay_table(decay),
            rand: LibcRand::default(),
        })
    }

    pub fn k(&self) -> u32 {
        self.k
    }
    pub fn width(&self) -> u32 {
        self.width
    }
    pub fn depth(&self) -> u32 {
        self.depth
    }
    pub fn decay(&self) -> f64 {
        self.decay
    }
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }
    pub fn heap(&self) -> &[HeapSlot] {
        &self.heap
    }

    /// What RedisBloom's MEMORY USAGE callback reports for this sketch.
    pub fn reported_bytes(&self) -> usize {
        STRUCT_BYTES + self.buckets.len() * BUCKET_BYTES + self.heap.len() * HEAP_SLOT_BYTES
    }

    /// Heap bytes Keel holds for it.
    pub fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<Bucket>()
            + self.heap.capacity() * std::mem::size_of::<HeapSlot>()
            + self
                .heap
                .iter()
                .map(|s| s.item.as_ref().map_or(0, |i| i.len()))
                .sum::<usize>()
            + std::mem::size_of::<[f64; DECAY_TABLE]>()
    }

    fn find(&self, fp: u32, item: &[u8]) -> Option<usize> {
        self.heap
            .iter()
            .position(|s| s.fp == fp && s.item.as_deref() == Some(item))
    }

    /// The chance that a counter at `count` decays by one.
    fn decay_at(&self, count: u32) -> f64 {
        let n = count as usize;
        if n < DECAY_TABLE {
            self.table[n]
        } else {
            let last = DECAY_TABLE - 1;
            self.table[last].powf((n / last) as f64) * self.table[n % last]
        }
    }

    /// Adds `increment` occurrences of `item`. Returns the item pushed out of
    /// the heap, if one was (taking over an empty slot expels nothing).
    pub fn add(&mut self, item: &[u8], increment: u32) -> Option<Box<[u8]>> {
        let fp = murmur2(item, FINGERPRINT_SEED);
        let heap_min = self.heap[0].count;
        let mut max_count = 0u32;
        let width = self.width as usize;
        for row in 0..self.depth {
            let at = row as usize * width + (murmur2(item, row) % self.width) as usize;
            let bucket = self.buckets[at];
            if bucket.count == 0 {
                self.buckets[at] = Bucket {
                    fp,
                    count: increment,
                };
                max_count = max_count.max(increment);
            } else if bucket.fp == fp {
                let count = bucket.count.wrapping_add(increment);
                self.buckets[at].count = count;
                max_count = max_count.max(count);
            } else {
                let mut count = bucket.count;
                let mut left = increment;
                while left > 0 {
                    let chance = f64::from(self.rand.next()) / f64::from(RAND_MAX);
                    if chance < self.decay_at(count) {
                        count -= 1;
                        if count == 0 {
                            self.buckets[at].fp = fp;
                            count = left;
                            max_count = max_count.max(count);
                            break;
                        }
                    }
                    left -= 1;
                }
                self.buckets[at].count = count;
            }
        }
        if max_count < heap_min {
            return None;
        }
        if let Some(pos) = self.find(fp, item) {
            self.heap[pos].count = max_count;
            self.sift_down(pos);
            return None;
        }
        let expelled = std::mem::replace(
            &mut self.heap[0],
            HeapSlot {
                fp,
                count: max_count,
                item: Some(item.into()),
            },
        );
        self.sift_down(0);
        expelled.item
    }

    /// RedisBloom's heapify-down, with its comparisons exactly: equal counts
    /// decide where items sit, and so LIST's order among ties.
    fn sift_down(&mut self, start: usize) {
        let h = &mut self.heap;
        let len = h.len();
        if len < 2 || (len - 2) / 2 < start {
            return;
        }
        let mut child = 2 * start + 1;
        if child + 1 < len && h[child].count > h[child + 1].count {
            child += 1;
        }
        if h[child].count > h[start].count {
            return;
        }
        let mut start = start;
        let top = std::mem::take(&mut h[start]);
        loop {
            h[start] = std::mem::take(&mut h[child]);
            start = child;
            if (len - 2) / 2 < child {
                break;
            }
            child = 2 * child + 1;
            if child + 1 < len && h[child].count > h[child + 1].count {
                child += 1;
            }
            if h[child].count >= top.count {
                break;
            }
        }
        h[start] = top;
    }

    /// Whether `item` is in the heap.
    pub fn query(&self, item: &[u8]) -> bool {
        self.find(murmur2(item, FINGERPRINT_SEED), item).is_some()
    }

    /// The estimated count of `item` (TOPK.COUNT).
    pub fn count(&self, item: &[u8]) -> u32 {
        let fp = murmur2(item, FINGERPRINT_SEED);
        let heap_min = self.heap[0].count;
        let in_heap = self.find(fp, item).is_some();
        let width = self.width as usize;
        (0..self.depth)
            .map(|row| {
                self.buckets[row as usize * width + (murmur2(item, row) % self.width) as usize]
            })
            .filter(|b| b.fp == fp && (!in_heap || b.count >= heap_min))
            .map(|b| b.count)
            .max()
            .unwrap_or(0)
    }

    /// The heap's items with their counts, heaviest first, ties in heap
    /// order; slots with a zero count end the list.
    pub fn list(&self) -> Vec<(&[u8], u32)> {
        let mut slots: Vec<&HeapSlot> = self.heap.iter().collect();
        slots.sort_by_key(|s| Reverse(s.count));
        slots
            .into_iter()
            .take_while(|s| s.count != 0)
            .map(|s| (s.item.as_deref().unwrap_or(b""), s.count))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn murmur2_tail_and_seed() {
        // An empty input with seed 0 hashes to 0; every tail length and the
        // seed change the hash.
        assert_eq!(murmur2(b"", 0), 0);
        let hashes: Vec<u32> = [&b"a"[..], b"ab", b"abc", b"abcd", b"abcde"]
            .iter()
            .map(|d| murmur2(d, 0))
            .collect();
        for (i, h) in hashes.iter().enumerate() {
            assert!(!hashes[i + 1..].contains(h));
        }
        assert_ne!(murmur2(b"abc", 0), murmur2(b"abc", 1919));
    }

    #[test]
    fn libc_rand_matches_glibc_seed_1() {
        // The first values of glibc's rand() without srand.
        let mut r = LibcRand::new(1);
        let first: Vec<u32> = (0..5).map(|_| r.next()).collect();
        assert_eq!(
            first,
            vec![
                1_804_289_383,
                846_930_886,
                1_681_692_777,
                1_714_636_915,
                1_957_747_793
            ]
        );
    }

    #[test]
    fn heavy_item_enters_and_expels() {
        let mut t = TopK::new(2, 50, 4, 0.9).unwrap();
        assert_eq!(t.add(b"a", 1), None);
        assert_eq!(t.add(b"b", 1), None);
        for _ in 0..10 {
            t.add(b"c", 1);
        }
        assert!(t.query(b"c"));
        assert_eq!(t.list()[0], (&b"c"[..], 10));
        assert_eq!(t.count(b"c"), 10);
        assert!(!t.query(b"zzz"));
    }

    #[test]
    fn incrby_adds_at_once() {
        let mut t = TopK::new(3, 8, 7, 0.9).unwrap();
        t.add(b"foo", 3);
        t.add(b"bar", 2);
        t.add(b"42", 30);
        let l = t.list();
        assert_eq!(l[0], (&b"42"[..], 30));
        assert_eq!(t.count(b"foo"), 3);
    }

    #[test]
    fn too_large_is_refused() {
        assert_eq!(
            TopK::new(u32::MAX, u32::MAX, u32::MAX, 0.9).err(),
            Some(TopKError::TooLarge)
        );
    }

    proptest! {
        /// An item added far more often than all others together ends up
        /// first in the list, and no count exceeds the true count of an item
        /// whose counters no other item shares (the sketch only loses counts
        /// to decay; a bucket taken over starts from the new item's own adds).
        #[test]
        fn a_dominant_item_leads(noise in proptest::collection::vec(0u8..40, 0..200)) {
            let mut t = TopK::new(5, 64, 5, 0.9).unwrap();
            let heavy = noise.len() * 2 + 10;
            for x in &noise {
                t.add(format!("n{x}").as_bytes(), 1);
                t.add(b"heavy", 1);
                t.add(b"heavy", 1);
            }
            for _ in 0..10 {
                t.add(b"heavy", 1);
            }
            prop_assert!(t.query(b"heavy"));
            prop_assert_eq!(t.list()[0].0, &b"heavy"[..]);
            prop_assert!(t.count(b"heavy") as usize <= heavy);
        }
    }
}
