//! Cuckoo filters, laid out and hashed as RedisBloom's `MBbloomCF` type so that
//! its SCANDUMP chunks and RDB values load here and back byte for byte, and
//! CF.COUNT / CF.EXISTS answer as RedisBloom does for the same history.
//!
//! A filter is a chain of sub-filters. Sub-filter `i` holds
//! `num_buckets * expansion^i` buckets of `bucket_size` one-byte fingerprints
//! (0 is an empty slot); `num_buckets` is a power of two. An item's 64-bit hash
//! `h` (MurmurHash64A, seed 0) gives its fingerprint `h % 255 + 1` and two
//! candidate buckets, `h` and `h ^ (fp * 0x5bd1e995)`, each taken modulo the
//! sub-filter's bucket count. Inserting looks for a free slot in the newest
//! sub-filter first, then older ones; when none has room it relocates
//! ("kicks") fingerprints inside the newest sub-filter, rotating the victim
//! slot, undoes the kicks when they fail and, if the filter may expand, adds a
//! sub-filter. Deleting clears one matching slot, newest sub-filter first, and
//! once deletions pass a tenth of the items tries to move fingerprints of the
//! newer sub-filters into older ones, freeing the newest when it empties.
//!
//! Dump layout (CF.SCANDUMP / CF.LOADCHUNK): chunk 1 is a 38-byte header, all
//! little-endian: items u64, base bucket count u64, deletes u64, sub-filter
//! count u64, bucket size u16, max iterations u16, expansion u16. Then the
//! sub-filters' slot bytes, in order, as chunks of at most 16 MiB, a chunk's
//! iterator being one more than the byte offset of its end in that stream.
//!
//! Pure data structure: no RESP, no engine.

use crate::bloom::murmur64a;

/// RedisBloom's defaults for a filter created by CF.ADD / CF.INSERT.
pub const DEFAULT_CAPACITY: u64 = 1024;
pub const DEFAULT_BUCKET_SIZE: u16 = 2;
pub const DEFAULT_MAX_ITERATIONS: u16 = 20;
pub const DEFAULT_EXPANSION: u16 = 1;
/// Ranges RedisBloom accepts.
pub const MAX_CAPACITY: u64 = 1 << 30;
pub const MAX_BUCKET_SIZE: u16 = 255;
pub const MAX_ITERATIONS: u16 = u16::MAX;
pub const MAX_EXPANSION: u16 = 32768;
/// The sub-filter count past which RedisBloom refuses further adds
/// ("Maximum expansions reached").
pub const MAX_FILTERS: usize = 32;
/// A dump chunk's size limit, as RedisBloom's.
pub const MAX_CHUNK_BYTES: usize = 16 << 20;
/// The dump header's length.
pub const HEADER_LEN: usize = 38;
/// Keel's cap on the slot bytes of one filter (all its sub-filters), so that
/// neither a header nor runaway growth can ask for more memory than this.
pub const MAX_TOTAL_BYTES: u64 = 1 << 32;
/// The memory RedisBloom accounts per filter and per sub-filter (its struct
/// sizes), which CF.INFO's Size and MEMORY USAGE include.
pub const FILTER_OVERHEAD: u64 = 40;
pub const SUBFILTER_OVERHEAD: u64 = 16;

const ALT_MULTIPLIER: u64 = 0x5bd1_e995;

/// What an insert did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Insert {
    Inserted,
    /// CF.ADDNX / CF.INSERTNX: the item (or a fingerprint twin) is present.
    Exists,
    /// No room, and the filter may not (or can no longer) expand.
    NoSpace,
}

/// Why a dump header or chunk was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadError {
    BadHeader,
    BadChunk,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct SubFilter {
    num_buckets: u64,
    slots: Vec<u8>,
}

impl SubFilter {
    fn bucket(&self, hash: u64, bucket_size: usize) -> usize {
        // The slot count fits in usize (it was allocated), so this does too.
        (hash % self.num_buckets) as usize * bucket_size
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CuckooFilter {
    num_buckets: u64,
    num_items: u64,
    num_deletes: u64,
    bucket_size: u16,
    max_iterations: u16,
    expansion: u16,
    filters: Vec<SubFilter>,
}

#[derive(Clone, Copy)]
struct Lookup {
    fp: u8,
    h1: u64,
    h2: u64,
}

fn alt_hash(fp: u8, index: u64) -> u64 {
    index ^ (u64::from(fp).wrapping_mul(ALT_MULTIPLIER))
}

impl Lookup {
    fn of(item: &[u8]) -> Lookup {
        let h = murmur64a(item, 0);
        let fp = (h % 255 + 1) as u8;
        Lookup {
            fp,
            h1: h,
            h2: alt_hash(fp, h),
        }
    }
}

fn next_pow2(n: u64) -> u64 {
    if n <= 1 {
        // RedisBloom's bit trick maps 0 to 0 (then to one bucket) and 1 to 1.
        return 1;
    }
    n.checked_next_power_of_two().unwrap_or(1 << 63)
}

/// Buckets of sub-filter `index` for a base of `base` buckets, or `None`
/// past what fits.
fn sub_buckets(base: u64, expansion: u16, index: usize) -> Option<u64> {
    let exp = u64::from(expansion);
    let mut n = base;
    for _ in 0..index {
        n = n.checked_mul(exp)?;
    }
    Some(n)
}

impl CuckooFilter {
    /// CF.RESERVE's filter. The caller has checked the ranges
    /// (`capacity >= 2 * bucket_size`, at most [`MAX_CAPACITY`]).
    pub fn new(
        capacity: u64,
        bucket_size: u16,
        max_iterations: u16,
        expansion: u16,
    ) -> Option<CuckooFilter> {
        if bucket_size == 0 || max_iterations == 0 || capacity > MAX_CAPACITY {
            return None;
        }
        let num_buckets = next_pow2(capacity / u64::from(bucket_size));
        let expansion = if expansion == 0 {
            0
        } else {
            next_pow2(u64::from(expansion)) as u16
        };
        let mut cf = CuckooFilter {
            num_buckets,
            num_items: 0,
            num_deletes: 0,
            bucket_size,
            max_iterations,
            expansion,
            filters: Vec::new(),
        };
        cf.grow().then_some(cf)
    }

    pub fn num_buckets(&self) -> u64 {
        self.num_buckets
    }
    pub fn num_items(&self) -> u64 {
        self.num_items
    }
    pub fn num_deletes(&self) -> u64 {
        self.num_deletes
    }
    pub fn num_filters(&self) -> usize {
        self.filters.len()
    }
    pub fn bucket_size(&self) -> u16 {
        self.bucket_size
    }
    pub fn max_iterations(&self) -> u16 {
        self.max_iterations
    }
    pub fn expansion(&self) -> u16 {
        self.expansion
    }

    /// The slot bytes of every sub-filter.
    pub fn slot_bytes(&self) -> u64 {
        self.filters.iter().map(|f| f.slots.len() as u64).sum()
    }

    /// CF.INFO's Size, RedisBloom's memory figure for the filter.
    pub fn size_bytes(&self) -> u64 {
        FILTER_OVERHEAD + SUBFILTER_OVERHEAD * self.filters.len() as u64 + self.slot_bytes()
    }

    /// Each sub-filter's bucket count and slots, in order (RDB).
    pub fn sub_filters(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.filters
            .iter()
            .map(|f| (f.num_buckets, f.slots.as_slice()))
    }

    /// Adds a sub-filter; false when it would pass Keel's size cap.
    fn grow(&mut self) -> bool {
        let Some(n) = sub_buckets(self.num_buckets, self.expansion, self.filters.len()) else {
            return false;
        };
        let Some(bytes) = n.checked_mul(u64::from(self.bucket_size)) else {
            return false;
        };
        if self.slot_bytes().saturating_add(bytes) > MAX_TOTAL_BYTES {
            return false;
        }
        self.filters.push(SubFilter {
            num_buckets: n,
            slots: vec![0; bytes as usize],
        });
        true
    }

    fn bs(&self) -> usize {
        usize::from(self.bucket_size)
    }

    /// The first empty slot of bucket `h1`, then of bucket `h2`, in `f`.
    fn free_slot(f: &SubFilter, bs: usize, h1: u64, h2: u64) -> Option<usize> {
        [f.bucket(h1, bs), f.bucket(h2, bs)]
            .into_iter()
            .find_map(|at| (at..at + bs).find(|&i| f.slots[i] == 0))
    }

    fn contains(&self, l: &Lookup) -> bool {
        let bs = self.bs();
        self.filters.iter().any(|f| {
            [f.bucket(l.h1, bs), f.bucket(l.h2, bs)]
                .into_iter()
                .any(|at| f.slots[at..at + bs].contains(&l.fp))
        })
    }

    /// Starts loading the buckets a lookup of `item` reads in the newest
    /// sub-filter, for a command a batch is about to run (a hint only).
    pub fn prefetch(&self, item: &[u8]) {
        let l = Lookup::of(item);
        let bs = self.bs();
        if let Some(f) = self.filters.last() {
            for at in [f.bucket(l.h1, bs), f.bucket(l.h2, bs)] {
                if let Some(slot) = f.slots.get(at) {
                    crate::prefetch::prefetch(slot);
                }
            }
        }
    }

    /// CF.EXISTS.
    pub fn exists(&self, item: &[u8]) -> bool {
        self.contains(&Lookup::of(item))
    }

    /// CF.COUNT: the fingerprint's copies in both candidate buckets of every
    /// sub-filter (a bucket that is both candidates counts twice, as in
    /// RedisBloom).
    pub fn count(&self, item: &[u8]) -> u64 {
        let l = Lookup::of(item);
        let bs = self.bs();
        self.filters
            .iter()
            .map(|f| {
                [f.bucket(l.h1, bs), f.bucket(l.h2, bs)]
                    .into_iter()
                    .map(|at| f.slots[at..at + bs].iter().filter(|&&s| s == l.fp).count() as u64)
                    .sum::<u64>()
            })
            .sum()
    }

    /// CF.ADD.
    pub fn add(&mut self, item: &[u8]) -> Insert {
        self.insert(&Lookup::of(item))
    }

    /// CF.ADDNX.
    pub fn add_unique(&mut self, item: &[u8]) -> Insert {
        let l = Lookup::of(item);
        if self.contains(&l) {
            return Insert::Exists;
        }
        self.insert(&l)
    }

    fn insert(&mut self, l: &Lookup) -> Insert {
        let bs = self.bs();
        loop {
            for f in self.filters.iter_mut().rev() {
                if let Some(i) = Self::free_slot(f, bs, l.h1, l.h2) {
                    f.slots[i] = l.fp;
                    self.num_items += 1;
                    return Insert::Inserted;
                }
            }
            if self.kick_insert(l) {
                self.num_items += 1;
                return Insert::Inserted;
            }
            if self.expansion == 0 || !self.grow() {
                return Insert::NoSpace;
            }
        }
    }

    /// Relocation inside the newest sub-filter: swap the fingerprint into
    /// bucket `h1`'s victim slot, carry the evicted one to its other bucket,
    /// and so on, the victim slot advancing by one each step. On failure
    /// every swap is undone, in reverse.
    fn kick_insert(&mut self, l: &Lookup) -> bool {
        let bs = self.bs();
        let max = self.max_iterations;
        let Some(f) = self.filters.last_mut() else {
            return false;
        };
        let n = f.num_buckets;
        let mut fp = l.fp;
        let mut victim = 0usize;
        let mut ii = l.h1 % n;
        for _ in 0..max {
            let at = ii as usize * bs + victim;
            std::mem::swap(&mut f.slots[at], &mut fp);
            ii = alt_hash(fp, ii) % n;
            let base = ii as usize * bs;
            if let Some(i) = (base..base + bs).find(|&i| f.slots[i] == 0) {
                f.slots[i] = fp;
                return true;
            }
            victim = (victim + 1) % bs;
        }
        for _ in 0..max {
            victim = (victim + bs - 1) % bs;
            ii = alt_hash(fp, ii) % n;
            let at = ii as usize * bs + victim;
            std::mem::swap(&mut f.slots[at], &mut fp);
        }
        false
    }

    /// CF.DEL: true when a copy of the fingerprint was removed.
    pub fn delete(&mut self, item: &[u8]) -> bool {
        let l = Lookup::of(item);
        let bs = self.bs();
        let mut removed = false;
        for f in self.filters.iter_mut().rev() {
            let slot = [f.bucket(l.h1, bs), f.bucket(l.h2, bs)]
                .into_iter()
                .find_map(|at| (at..at + bs).find(|&i| f.slots[i] == l.fp));
            if let Some(i) = slot {
                f.slots[i] = 0;
                removed = true;
                break;
            }
        }
        if !removed {
            return false;
        }
        self.num_items = self.num_items.wrapping_sub(1);
        self.num_deletes += 1;
        if self.filters.len() > 1 && self.num_deletes as f64 > self.num_items as f64 * 0.10 {
            self.compact(false);
        }
        true
    }

    /// Moves fingerprints of newer sub-filters into older ones, newest
    /// first, freeing the newest when it empties; without `cont` it stops at
    /// the first sub-filter that cannot be emptied.
    pub fn compact(&mut self, cont: bool) {
        let mut ix = self.filters.len();
        while ix > 1 {
            let emptied = self.compact_one(ix - 1);
            if !emptied && !cont {
                break;
            }
            ix -= 1;
        }
        self.num_deletes = 0;
    }

    fn compact_one(&mut self, ix: usize) -> bool {
        let bs = self.bs();
        let (older, rest) = self.filters.split_at_mut(ix);
        let cur = &mut rest[0];
        let mut ok = true;
        for bucket in 0..cur.num_buckets {
            for s in 0..bs {
                let at = bucket as usize * bs + s;
                let fp = cur.slots[at];
                if fp == 0 {
                    continue;
                }
                let h2 = alt_hash(fp, bucket);
                let home = older
                    .iter_mut()
                    .find_map(|f| Self::free_slot(f, bs, bucket, h2).map(|i| (f, i)));
                match home {
                    Some((f, i)) => {
                        f.slots[i] = fp;
                        cur.slots[at] = 0;
                    }
                    None => ok = false,
                }
            }
        }
        if ok && ix == self.filters.len() - 1 {
            self.filters.pop();
        }
        ok
    }

    /// The dump header (chunk 1).
    pub fn header_bytes(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(&self.num_items.to_le_bytes());
        h[8..16].copy_from_slice(&self.num_buckets.to_le_bytes());
        h[16..24].copy_from_slice(&self.num_deletes.to_le_bytes());
        h[24..32].copy_from_slice(&(self.filters.len() as u64).to_le_bytes());
        h[32..34].copy_from_slice(&self.bucket_size.to_le_bytes());
        h[34..36].copy_from_slice(&self.max_iterations.to_le_bytes());
        h[36..38].copy_from_slice(&self.expansion.to_le_bytes());
        h
    }

    /// The chunk CF.SCANDUMP returns for iterator `iter` (at least 1), with
    /// the next iterator; `None` past the end.
    pub fn chunk_at(&self, iter: i64, limit: usize) -> Option<(i64, &[u8])> {
        let mut offset = u64::try_from(iter.checked_sub(1)?).ok()?;
        let f = self.filters.iter().find(|f| {
            let size = f.slots.len() as u64;
            if offset < size {
                true
            } else {
                offset -= size;
                false
            }
        })?;
        let size = f.slots.len();
        let (start, len) = if size <= limit {
            // RedisBloom hands a sub-filter that fits the limit over whole.
            (0, size)
        } else {
            let start = offset as usize;
            (start, (size - start).min(limit))
        };
        Some((iter.checked_add(len as i64)?, &f.slots[start..start + len]))
    }

    /// A filter from a dump header, its slots empty until the chunks come.
    /// Everything is checked before anything is allocated.
    pub fn from_header(h: &[u8]) -> Result<CuckooFilter, LoadError> {
        let h: &[u8; HEADER_LEN] = h.try_into().map_err(|_| LoadError::BadHeader)?;
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let u16_at = |at: usize| u16::from_le_bytes([h[at], h[at + 1]]);
        let nfilters = u64_at(24);
        let mut cf = CuckooFilter {
            num_items: u64_at(0),
            num_buckets: u64_at(8),
            num_deletes: u64_at(16),
            bucket_size: u16_at(32),
            max_iterations: u16_at(34),
            expansion: u16_at(36),
            filters: Vec::new(),
        };
        let sizes = cf.check_shape(nfilters)?;
        cf.filters = sizes
            .into_iter()
            .map(|n| SubFilter {
                num_buckets: n,
                slots: vec![0; (n * u64::from(cf.bucket_size)) as usize],
            })
            .collect();
        Ok(cf)
    }

    /// The bucket count of each of `nfilters` sub-filters when the scalar
    /// fields are sound: a power-of-two base, bucket size 1 to 255, a
    /// non-zero iteration budget, a power-of-two (or zero) expansion, at most
    /// [`MAX_FILTERS`] sub-filters (more only with an expansion), and no more
    /// than [`MAX_TOTAL_BYTES`] in all.
    fn check_shape(&self, nfilters: u64) -> Result<Vec<u64>, LoadError> {
        let bad = LoadError::BadHeader;
        if !self.num_buckets.is_power_of_two()
            || self.bucket_size == 0
            || self.bucket_size > MAX_BUCKET_SIZE
            || self.max_iterations == 0
            || self.expansion > MAX_EXPANSION
            || (self.expansion != 0 && !self.expansion.is_power_of_two())
            || nfilters == 0
            || nfilters > u64::from(u16::MAX)
        {
            return Err(bad);
        }
        let mut total = 0u64;
        let mut out = Vec::new();
        for i in 0..nfilters as usize {
            let n = sub_buckets(self.num_buckets, self.expansion.max(1), i).ok_or(bad)?;
            total = n
                .checked_mul(u64::from(self.bucket_size))
                .and_then(|b| total.checked_add(b))
                .ok_or(bad)?;
            if total > MAX_TOTAL_BYTES {
                return Err(bad);
            }
            out.push(n);
        }
        Ok(out)
    }

    /// CF.LOADCHUNK past the header: `data` ends at byte `iter - 1` of the
    /// slot stream and must lie inside one sub-filter. Nothing is written
    /// unless it fits.
    pub fn load_chunk(&mut self, iter: i64, data: &[u8]) -> Result<(), LoadError> {
        let bad = LoadError::BadChunk;
        if data.is_empty() {
            return Err(bad);
        }
        let len = i64::try_from(data.len()).map_err(|_| bad)?;
        let mut offset = u64::try_from(iter.checked_sub(len + 1).ok_or(bad)?).map_err(|_| bad)?;
        for f in &mut self.filters {
            let size = f.slots.len() as u64;
            if offset < size {
                let start = offset as usize;
                let end = start.checked_add(data.len()).ok_or(bad)?;
                let dst = f.slots.get_mut(start..end).ok_or(bad)?;
                dst.copy_from_slice(data);
                return Ok(());
            }
            offset -= size;
        }
        Err(bad)
    }

    /// A filter from RDB fields (RedisBloom's encoding version 4): every
    /// field and slot length checked before use.
    pub fn from_parts(
        num_buckets: u64,
        num_items: u64,
        num_deletes: u64,
        bucket_size: u64,
        max_iterations: u64,
        expansion: u64,
        subs: Vec<(u64, Vec<u8>)>,
    ) -> Result<CuckooFilter, LoadError> {
        let bad = LoadError::BadHeader;
        let mut cf = CuckooFilter {
            num_buckets,
            num_items,
            num_deletes,
            bucket_size: u16::try_from(bucket_size).map_err(|_| bad)?,
            max_iterations: u16::try_from(max_iterations).map_err(|_| bad)?,
            expansion: u16::try_from(expansion).map_err(|_| bad)?,
            filters: Vec::new(),
        };
        // The sub-filters carry their own counts; check them against the
        // byte lengths and the overall cap rather than the expansion.
        if !cf.num_buckets.is_power_of_two()
            || cf.bucket_size == 0
            || cf.bucket_size > MAX_BUCKET_SIZE
            || cf.max_iterations == 0
            || cf.expansion > MAX_EXPANSION
            || subs.is_empty()
            || subs.len() > usize::from(u16::MAX)
        {
            return Err(bad);
        }
        let mut total = 0u64;
        for (n, slots) in subs {
            if n == 0 || n.checked_mul(bucket_size) != Some(slots.len() as u64) {
                return Err(bad);
            }
            total = total.saturating_add(slots.len() as u64);
            if total > MAX_TOTAL_BYTES {
                return Err(bad);
            }
            cf.filters.push(SubFilter {
                num_buckets: n,
                slots,
            });
        }
        Ok(cf)
    }

    /// Heap bytes owned (MEMORY USAGE).
    pub fn heap_bytes(&self) -> usize {
        self.filters.capacity() * std::mem::size_of::<SubFilter>()
            + self
                .filters
                .iter()
                .map(|f| f.slots.capacity())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn item(i: usize) -> Vec<u8> {
        format!("item{i}").into_bytes()
    }

    #[test]
    fn reserve_rounds_buckets_and_sizes_as_redisbloom() {
        let cf = CuckooFilter::new(1000, 2, 20, 1).expect("new");
        assert_eq!(cf.num_buckets(), 512);
        assert_eq!(cf.size_bytes(), 40 + 16 + 1024);
        let cf = CuckooFilter::new(500, 4, 50, 2).expect("new");
        assert_eq!(cf.num_buckets(), 128);
        assert_eq!(
            CuckooFilter::new(100, 2, 20, 3).expect("new").expansion(),
            4
        );
    }

    #[test]
    fn the_golden_history_gives_redisbloom_figures() {
        // CF.RESERVE cf:default 1000; CF.ADD item(i % 1200) for i < 1500;
        // CF.DEL item0..item99 (RedisBloom 2.4.23's replies).
        let mut cf = CuckooFilter::new(1000, 2, 20, 1).expect("new");
        for i in 0..1500 {
            assert_eq!(cf.add(&item(i % 1200)), Insert::Inserted);
        }
        for i in 0..100 {
            assert!(cf.delete(&item(i)));
        }
        assert_eq!(cf.size_bytes(), 2120);
        assert_eq!(cf.num_filters(), 2);
        assert_eq!(cf.num_items(), 1400);
        assert_eq!(cf.num_deletes(), 100);
        assert_eq!(cf.count(b"item150"), 2);
        assert!(cf.exists(b"item50"));
        let mut t = CuckooFilter::new(500, 4, 50, 2).expect("new");
        for i in 0..600 {
            t.add(&item(i));
        }
        assert_eq!(t.size_bytes(), 1608);
        assert_eq!(t.num_filters(), 2);
        assert_eq!(t.count(b"item150"), 1);
    }

    #[test]
    fn a_full_filter_without_expansion_says_so_and_is_unchanged() {
        let mut cf = CuckooFilter::new(4, 1, 5, 0).expect("new");
        let mut added = 0;
        for i in 0..64 {
            let before = cf.clone();
            match cf.add(&item(i)) {
                Insert::Inserted => added += 1,
                Insert::NoSpace => assert_eq!(cf, before, "a failed insert undoes its kicks"),
                Insert::Exists => unreachable!(),
            }
        }
        assert!(added <= 4);
        assert_eq!(cf.num_filters(), 1);
    }

    #[test]
    fn dump_round_trips_through_chunks() {
        let mut cf = CuckooFilter::new(1000, 2, 20, 1).expect("new");
        for i in 0..1300 {
            cf.add(&item(i));
        }
        let mut copy = CuckooFilter::from_header(&cf.header_bytes()).expect("header");
        let mut iter = 1;
        while let Some((next, chunk)) = cf.chunk_at(iter, 300) {
            copy.load_chunk(next, chunk).expect("chunk");
            iter = next;
        }
        assert_eq!(copy, cf);
        assert_eq!(copy.load_chunk(5, b""), Err(LoadError::BadChunk));
        assert_eq!(copy.load_chunk(1, b"xy"), Err(LoadError::BadChunk));
        assert_eq!(copy.load_chunk(1 << 40, b"xy"), Err(LoadError::BadChunk));
    }

    #[test]
    fn headers_claiming_too_much_are_refused() {
        let cf = CuckooFilter::new(1000, 2, 20, 1).expect("new");
        let mut h = cf.header_bytes();
        h[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(CuckooFilter::from_header(&h).is_err());
        let mut h = cf.header_bytes();
        h[24..32].copy_from_slice(&0u64.to_le_bytes());
        assert!(CuckooFilter::from_header(&h).is_err());
        let mut h = cf.header_bytes();
        h[8..16].copy_from_slice(&1000u64.to_le_bytes());
        assert!(CuckooFilter::from_header(&h).is_err());
        assert!(CuckooFilter::from_header(&h[..37]).is_err());
    }

    proptest! {
        #[test]
        fn no_false_negatives_and_counts_cover_the_truth(
            ops in proptest::collection::vec((0u8..3, 0usize..300), 1..600),
            bucket in 1u16..5,
            expansion in 0u16..3,
        ) {
            let mut cf = CuckooFilter::new(64, bucket, 20, expansion).expect("new");
            let mut model: std::collections::HashMap<usize, u64> = Default::default();
            for (op, i) in ops {
                match op {
                    0 | 1 => {
                        if cf.add(&item(i)) == Insert::Inserted {
                            *model.entry(i).or_default() += 1;
                        }
                    }
                    _ => {
                        // Deleting only what was added, and only when no other
                        // live item shares the fingerprint: removing a twin's copy
                        // is the one way a cuckoo filter forgets an item.
                        let fp = Lookup::of(&item(i)).fp;
                        let twin = model
                            .iter()
                            .any(|(j, n)| *j != i && *n > 0 && Lookup::of(&item(*j)).fp == fp);
                        if !twin && model.get(&i).copied().unwrap_or(0) > 0 && cf.delete(&item(i)) {
                            *model.entry(i).or_default() -= 1;
                        }
                    }
                }
            }
            for (i, n) in &model {
                if *n > 0 {
                    prop_assert!(cf.exists(&item(*i)));
                }
                prop_assert!(cf.count(&item(*i)) >= *n);
            }
        }
    }
}
