//! The keyspace: shards of per-database hash tables, with an expiry index.
//!
//! A key's hash picks its shard; each shard holds one [`Table`] per database, so a
//! key lives in the same shard in every database (MOVE and COPY ... DB lock one
//! shard). Callers lock shards through [`Keyspace::lock`]; this module does no
//! locking of its own beyond the shard mutexes and never blocks on I/O.
//!
//! Invariants:
//! - an entry's `expires_at_ms` is non-zero exactly when it is counted under
//!   `(expires_at_ms, hash of its key)` in its table's expiry index;
//! - an expired entry is never returned: reads remove it first and record the key in
//!   `lazy_expired` so the executor can log the deletion;
//! - `scan_hash` is a pure function of the key, so SCAN's order is stable across
//!   rehashing.

use crate::bytes::CompactBytes;
use crate::value::Value;
use hashbrown::HashTable;
use parking_lot::{Mutex, MutexGuard};
use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::sync::OnceLock;

static HASHER: OnceLock<foldhash::fast::FixedState> = OnceLock::new();

fn hasher() -> &'static foldhash::fast::FixedState {
    HASHER.get_or_init(|| {
        // A per-process seed keeps bucket placement unpredictable to clients.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9e37_79b9_7f4a_7c15)
            ^ u64::from(std::process::id()).rotate_left(32);
        foldhash::fast::FixedState::with_seed(seed)
    })
}

/// The process-wide hash of a key: picks the shard and the bucket.
#[inline]
pub fn hash_key(key: &[u8]) -> u64 {
    hasher().hash_one(key)
}

/// One key and its value. 64 bytes, one allocation for short keys and values.
#[derive(Debug)]
pub struct Entry {
    key: CompactBytes,
    pub value: Value,
    /// Absolute Unix time in ms at which the key expires; 0 for none.
    expires_at_ms: u64,
    /// Seconds clock of the last access, for OBJECT IDLETIME.
    access_s: u32,
    /// Order key for SCAN within a table.
    scan_hash: u32,
}

impl Entry {
    pub fn key(&self) -> &[u8] {
        self.key.as_slice()
    }

    pub fn key_bytes(&self) -> &CompactBytes {
        &self.key
    }

    /// Expiry as absolute Unix ms, if any.
    pub fn expires_at_ms(&self) -> Option<u64> {
        (self.expires_at_ms != 0).then_some(self.expires_at_ms)
    }

    pub fn idle_seconds(&self, now_ms: u64) -> u64 {
        u64::from(seconds_clock(now_ms).wrapping_sub(self.access_s))
    }

    fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms != 0 && self.expires_at_ms <= now_ms
    }

    /// Approximate bytes this entry costs, for MEMORY USAGE and accounting.
    pub fn memory_usage(&self) -> usize {
        std::mem::size_of::<Entry>() + 16 + self.key.heap_bytes() + self.value.heap_bytes()
    }
}

fn seconds_clock(now_ms: u64) -> u32 {
    (now_ms / 1000) as u32
}

/// Position of a SCAN over one table: the smallest `scan_hash` not yet returned.
/// `None` once the table has been walked to its end.
pub type ScanCursor = Option<u32>;

/// The volatile keys of a table, ordered by deadline. A key is named by its
/// 64-bit hash rather than a copy of its bytes, which halves what each volatile
/// key costs here; the count covers two keys sharing a hash and a deadline.
#[derive(Default)]
struct ExpiryIndex {
    by_deadline: BTreeMap<(u64, u64), u32>,
    len: usize,
}

impl ExpiryIndex {
    /// Count `key` as expiring at `at` (nothing for 0, "no expiry").
    fn add(&mut self, at: u64, key: &[u8]) {
        if at != 0 {
            *self.by_deadline.entry((at, hash_key(key))).or_insert(0) += 1;
            self.len += 1;
        }
    }

    fn remove(&mut self, at: u64, key: &[u8]) {
        if at == 0 {
            return;
        }
        let slot = (at, hash_key(key));
        if let Some(n) = self.by_deadline.get_mut(&slot) {
            *n -= 1;
            if *n == 0 {
                self.by_deadline.remove(&slot);
            }
            self.len -= 1;
        }
    }

    /// Take one key due at or before `now_ms`, earliest first.
    fn pop_due(&mut self, now_ms: u64) -> Option<(u64, u64)> {
        let mut first = self.by_deadline.first_entry()?;
        let slot = *first.key();
        if slot.0 > now_ms {
            return None;
        }
        *first.get_mut() -= 1;
        if *first.get() == 0 {
            first.remove();
        }
        self.len -= 1;
        Some(slot)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn clear(&mut self) {
        self.by_deadline.clear();
        self.len = 0;
    }
}

/// One database's keys within one shard.
#[derive(Default)]
pub struct Table {
    map: HashTable<Box<Entry>>,
    expires: ExpiryIndex,
    /// Keys removed because they were found expired on access; drained by the
    /// executor, which logs each as a DEL.
    lazy_expired: Vec<CompactBytes>,
}

// The table stores boxes, so its hasher callback receives `&Box<Entry>`.
#[allow(clippy::borrowed_box)]
fn rehash(e: &Box<Entry>) -> u64 {
    hash_key(e.key.as_slice())
}

impl Table {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn volatile_len(&self) -> usize {
        self.expires.len()
    }

    fn expire_now(&mut self, hash: u64, key: &[u8]) {
        if let Ok(occ) = self.map.find_entry(hash, |e| e.key.as_slice() == key) {
            let (e, _) = occ.remove();
            self.expires.remove(e.expires_at_ms, e.key.as_slice());
            self.lazy_expired.push(e.key);
        }
    }

    /// Start loading the entries `key` may be in, without waiting for them, so a
    /// command that runs a little later finds its entry in cache. Probing the
    /// control bytes and slots is cheap; the entry itself is the usual cache miss.
    pub fn prefetch(&self, key: &[u8]) {
        let hash = hash_key(key);
        let _ = self.map.find(hash, |e| {
            crate::prefetch::prefetch::<Entry>(&**e);
            false
        });
    }

    /// Look up a live key without touching its access time.
    pub fn peek(&mut self, key: &[u8], now_ms: u64) -> Option<&Entry> {
        self.lookup(key, now_ms).map(|e| &*e)
    }

    /// One probe of the table: the live entry for `key`, removing it first if
    /// its time has passed.
    fn lookup(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        let hash = hash_key(key);
        let occ = self
            .map
            .find_entry(hash, |e| e.key.as_slice() == key)
            .ok()?;
        if occ.get().is_expired(now_ms) {
            let (e, _) = occ.remove();
            self.expires.remove(e.expires_at_ms, e.key.as_slice());
            self.lazy_expired.push(e.key);
            return None;
        }
        Some(&mut **occ.into_mut())
    }

    /// Look up a live key for reading or in-place change, recording the access.
    pub fn get_mut(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        let e = self.lookup(key, now_ms)?;
        e.access_s = seconds_clock(now_ms);
        Some(e)
    }

    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Option<&Entry> {
        self.get_mut(key, now_ms).map(|e| &*e)
    }

    pub fn contains(&mut self, key: &[u8], now_ms: u64) -> bool {
        self.peek(key, now_ms).is_some()
    }

    /// Store `value` under `key` with the given expiry (0 for none), replacing any
    /// previous value and expiry. Returns the previous live value.
    pub fn insert(
        &mut self,
        key: &[u8],
        value: Value,
        expires_at_ms: u64,
        now_ms: u64,
    ) -> Option<Value> {
        let hash = hash_key(key);
        let access_s = seconds_clock(now_ms);
        match self.map.find_mut(hash, |e| e.key.as_slice() == key) {
            Some(e) => {
                let was_expired = e.is_expired(now_ms);
                let old_exp = e.expires_at_ms;
                let old = std::mem::replace(&mut e.value, value);
                e.expires_at_ms = expires_at_ms;
                e.access_s = access_s;
                if old_exp != expires_at_ms {
                    self.expires.remove(old_exp, key);
                    self.expires.add(expires_at_ms, key);
                }
                (!was_expired).then_some(old)
            }
            None => {
                let key = CompactBytes::new(key);
                self.expires.add(expires_at_ms, key.as_slice());
                let entry = Box::new(Entry {
                    key,
                    value,
                    expires_at_ms,
                    access_s,
                    scan_hash: hash as u32,
                });
                self.map.insert_unique(hash, entry, rehash);
                None
            }
        }
    }

    /// Remove a live key, returning its entry.
    pub fn remove(&mut self, key: &[u8], now_ms: u64) -> Option<Box<Entry>> {
        let hash = hash_key(key);
        let occ = self
            .map
            .find_entry(hash, |e| e.key.as_slice() == key)
            .ok()?;
        let (e, _) = occ.remove();
        self.expires.remove(e.expires_at_ms, e.key.as_slice());
        if e.is_expired(now_ms) {
            self.lazy_expired.push(e.key);
            return None;
        }
        Some(e)
    }

    /// Put back an entry taken with [`Table::remove`] (RENAME, MOVE, SWAPDB),
    /// keeping its expiry and access time. Replaces any entry with the same key.
    pub fn put_entry(&mut self, entry: Box<Entry>, now_ms: u64) {
        let key = entry.key.clone();
        self.remove(key.as_slice(), now_ms);
        self.expires.add(entry.expires_at_ms, key.as_slice());
        self.map
            .insert_unique(hash_key(key.as_slice()), entry, rehash);
    }

    /// Set or clear (0) the expiry of a live key. Returns false if the key is absent.
    pub fn set_expire(&mut self, key: &[u8], expires_at_ms: u64, now_ms: u64) -> bool {
        let hash = hash_key(key);
        if self.peek(key, now_ms).is_none() {
            return false;
        }
        let Some(e) = self.map.find_mut(hash, |e| e.key.as_slice() == key) else {
            return false;
        };
        self.expires.remove(e.expires_at_ms, key);
        e.expires_at_ms = expires_at_ms;
        self.expires.add(expires_at_ms, key);
        true
    }

    /// Remove every key; returns how many there were.
    pub fn clear(&mut self) -> usize {
        let n = self.map.len();
        self.map = HashTable::new();
        self.expires.clear();
        n
    }

    /// Keys found expired on access since the last drain.
    pub fn drain_lazy_expired(&mut self) -> std::vec::Drain<'_, CompactBytes> {
        self.lazy_expired.drain(..)
    }

    pub fn has_lazy_expired(&self) -> bool {
        !self.lazy_expired.is_empty()
    }

    /// Every entry, expired or not (callers filter with `now_ms` as needed).
    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.map.iter().map(|b| &**b)
    }

    pub fn is_live(e: &Entry, now_ms: u64) -> bool {
        !e.is_expired(now_ms)
    }

    /// Remove up to `max` keys whose time has passed, earliest first. Returns the
    /// keys removed so the caller can log them.
    pub fn expire_due(&mut self, now_ms: u64, max: usize, out: &mut Vec<CompactBytes>) -> usize {
        let mut n = 0;
        while n < max {
            let Some((at, hash)) = self.expires.pop_due(now_ms) else {
                break;
            };
            // The index names the key by hash; the entry with that hash and
            // deadline is the one (full 64-bit hashes collide too rarely to
            // matter, and a collision with the same deadline is still right).
            if let Ok(occ) = self.map.find_entry(hash, |e| {
                e.expires_at_ms == at && hash_key(e.key.as_slice()) == hash
            }) {
                let (e, _) = occ.remove();
                out.push(e.key);
                n += 1;
            }
        }
        if n > 0 && self.map.capacity() > 64 && self.map.len() * 4 < self.map.capacity() {
            self.map.shrink_to_fit(rehash);
        }
        n
    }

    /// Walk live entries in `scan_hash` order starting at `from`, returning at least
    /// `count` (when that many remain) plus any sharing the last hash, and where
    /// to continue. Keys present for the whole walk are returned exactly once
    /// across calls, whatever is inserted or removed meanwhile.
    pub fn scan<'a>(
        &'a self,
        from: u32,
        count: usize,
        now_ms: u64,
        out: &mut Vec<&'a Entry>,
    ) -> ScanCursor {
        let mut cand: Vec<(u32, &Entry)> = self
            .map
            .iter()
            .filter(|e| e.scan_hash >= from && !e.is_expired(now_ms))
            .map(|e| (e.scan_hash, &**e))
            .collect();
        let count = count.max(1);
        if cand.len() <= count {
            out.extend(cand.into_iter().map(|(_, e)| e));
            return None;
        }
        cand.select_nth_unstable_by_key(count - 1, |c| c.0);
        let boundary = cand[count - 1].0;
        out.extend(cand.iter().filter(|c| c.0 <= boundary).map(|c| c.1));
        boundary.checked_add(1)
    }

    /// A uniformly random live entry, if any; `pick` draws an index below its bound.
    pub fn random_entry(
        &mut self,
        now_ms: u64,
        pick: &mut dyn FnMut(usize) -> usize,
    ) -> Option<&Entry> {
        for _ in 0..16 {
            if self.map.is_empty() {
                return None;
            }
            let i = pick(self.map.len());
            let (expired, key) = {
                let e = self.map.iter().nth(i)?;
                (e.is_expired(now_ms), e.key.clone())
            };
            if expired {
                self.expire_now(hash_key(key.as_slice()), key.as_slice());
                continue;
            }
            return self.map.iter().nth(i).map(|b| &**b);
        }
        None
    }

    /// Bytes used by the table's own structures (buckets and expiry index).
    pub fn overhead_bytes(&self) -> usize {
        self.map.capacity() * (std::mem::size_of::<Box<Entry>>() + 1)
            + self.expires.len() * (std::mem::size_of::<((u64, u64), u32)>() + 8)
    }
}

/// One lock's worth of the keyspace: a table per database.
pub struct Shard {
    dbs: Box<[Table]>,
}

impl Shard {
    pub fn db(&mut self, db: usize) -> &mut Table {
        &mut self.dbs[db]
    }

    pub fn db_ref(&self, db: usize) -> &Table {
        &self.dbs[db]
    }

    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    /// Exchange two databases' contents in this shard (SWAPDB).
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        self.dbs.swap(a, b);
    }
}

/// Every key of every database, split into `2^shard_bits` independently locked shards.
pub struct Keyspace {
    shards: Box<[Mutex<Shard>]>,
    shard_bits: u32,
    databases: usize,
}

impl Keyspace {
    pub fn new(databases: usize, shard_bits: u32) -> Keyspace {
        let shard_bits = shard_bits.clamp(0, 12);
        let shards = (0..1usize << shard_bits)
            .map(|_| {
                Mutex::new(Shard {
                    dbs: (0..databases.max(1)).map(|_| Table::default()).collect(),
                })
            })
            .collect();
        Keyspace {
            shards,
            shard_bits,
            databases: databases.max(1),
        }
    }

    pub fn databases(&self) -> usize {
        self.databases
    }

    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The shard a key lives in. Uses hash bits that the tables' bucket index and
    /// control bytes do not, so every shard's table stays evenly spread.
    #[inline]
    pub fn shard_of(&self, key: &[u8]) -> usize {
        if self.shard_bits == 0 {
            return 0;
        }
        ((hash_key(key) >> (57 - self.shard_bits)) as usize) & (self.shards.len() - 1)
    }

    pub fn lock(&self, shard: usize) -> MutexGuard<'_, Shard> {
        self.shards[shard].lock()
    }

    /// The shard's lock if it is free right now.
    pub fn try_lock(&self, shard: usize) -> Option<MutexGuard<'_, Shard>> {
        self.shards[shard].try_lock()
    }

    /// Encode a SCAN position over shards as Redis's single cursor number.
    pub fn encode_cursor(shard: usize, pos: u32) -> u64 {
        ((shard as u64) << 32) | u64::from(pos)
    }

    pub fn decode_cursor(cursor: u64) -> (usize, u32) {
        ((cursor >> 32) as usize, cursor as u32)
    }
}

impl Table {
    /// Put back an entry taken with [`Table::remove`] under a new key (RENAME),
    /// keeping its value, expiry and access time. Replaces any entry at `key`.
    pub fn put_entry_as(&mut self, mut entry: Box<Entry>, key: &[u8], now_ms: u64) {
        entry.key = CompactBytes::new(key);
        entry.scan_hash = hash_key(key) as u32;
        self.put_entry(entry, now_ms);
    }
}

#[cfg(test)]
mod put_entry_as_tests {
    use super::*;

    #[test]
    fn renamed_entry_keeps_value_and_expiry() {
        let mut t = Table::default();
        t.insert(b"a", Value::str(b"1"), 500, 0);
        t.insert(b"b", Value::str(b"2"), 0, 0);
        let e = t.remove(b"a", 10).expect("live");
        t.put_entry_as(e, b"b", 10);
        assert!(t.peek(b"a", 10).is_none());
        let b = t.peek(b"b", 10).expect("renamed");
        assert_eq!(b.key(), b"b");
        assert_eq!(b.value, Value::str(b"1"));
        assert_eq!(b.expires_at_ms(), Some(500));
        assert_eq!(t.len(), 1);
        assert_eq!(t.volatile_len(), 1);
        let mut out = Vec::new();
        assert_eq!(t.scan(0, 10, 10, &mut out), None);
        assert_eq!(out.len(), 1);
        let mut gone = Vec::new();
        assert_eq!(t.expire_due(500, 10, &mut gone), 1);
        assert_eq!(gone, vec![CompactBytes::new(b"b")]);
        assert!(t.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn s(v: &str) -> Value {
        Value::str(v.as_bytes())
    }

    #[test]
    fn entry_is_64_bytes() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<Entry>(), 64);
    }

    #[test]
    fn lazy_expiry_removes_and_records() {
        let mut t = Table::default();
        t.insert(b"k", s("v"), 1000, 0);
        assert!(t.get(b"k", 999).is_some());
        assert!(t.get(b"k", 1000).is_none());
        assert_eq!(t.len(), 0);
        assert_eq!(t.volatile_len(), 0);
        assert_eq!(
            t.drain_lazy_expired().collect::<Vec<_>>(),
            vec![CompactBytes::new(b"k")]
        );
    }

    #[test]
    fn active_expiry_is_bounded_and_ordered() {
        let mut t = Table::default();
        for i in 0..100u64 {
            t.insert(format!("k{i}").as_bytes(), s("v"), 10 + i, 0);
        }
        t.insert(b"forever", s("v"), 0, 0);
        let mut out = Vec::new();
        assert_eq!(t.expire_due(50, 10, &mut out), 10);
        assert_eq!(out[0], CompactBytes::new(b"k0"));
        assert_eq!(t.expire_due(50, 1000, &mut out), 31);
        assert_eq!(t.len(), 60);
        assert_eq!(t.expire_due(1_000, 1000, &mut out), 59);
        assert_eq!(t.len(), 1);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(u8, u8, u64),
        Del(u8),
        Expire(u8, u64),
        Tick(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<u8>(), any::<u8>(), 0u64..50).prop_map(|(k, v, e)| Op::Set(k % 40, v, e)),
            any::<u8>().prop_map(|k| Op::Del(k % 40)),
            (any::<u8>(), 0u64..50).prop_map(|(k, e)| Op::Expire(k % 40, e)),
            (0u64..5).prop_map(Op::Tick),
        ]
    }

    proptest! {
        /// The table behaves like a BTreeMap of (value, expiry) filtered by time,
        /// and a SCAN walk interleaved with writes returns every key that was
        /// present throughout.
        #[test]
        fn table_matches_model(ops in proptest::collection::vec(op(), 1..200)) {
            let mut t = Table::default();
            let mut model: BTreeMap<Vec<u8>, (u8, u64)> = BTreeMap::new();
            let mut now = 1u64;
            let mut cursor: ScanCursor = Some(0);
            let mut seen = std::collections::HashSet::new();
            let mut present_throughout: Option<std::collections::BTreeSet<Vec<u8>>> = None;
            for op in ops {
                match op {
                    Op::Set(k, v, e) => {
                        let key = vec![k];
                        let at = if e == 0 { 0 } else { now + e };
                        t.insert(&key, Value::str(&[v]), at, now);
                        model.insert(key, (v, at));
                    }
                    Op::Del(k) => {
                        let live = model.get(&vec![k]).is_some_and(|&(_, at)| at == 0 || at > now);
                        prop_assert_eq!(t.remove(&[k], now).is_some(), live);
                        model.remove(&vec![k]);
                    }
                    Op::Expire(k, e) => {
                        let live = model.get(&vec![k]).is_some_and(|&(_, at)| at == 0 || at > now);
                        prop_assert_eq!(t.set_expire(&[k], now + e, now), live);
                        if live {
                            if let Some(m) = model.get_mut(&vec![k]) { m.1 = now + e; }
                        }
                    }
                    Op::Tick(d) => now += d,
                }
                model.retain(|_, &mut (_, at)| at == 0 || at > now);
                let live: std::collections::BTreeSet<Vec<u8>> = model.keys().cloned().collect();
                present_throughout = Some(match present_throughout {
                    None => live.clone(),
                    Some(p) => p.intersection(&live).cloned().collect(),
                });
                if let Some(pos) = cursor {
                    let mut out = Vec::new();
                    cursor = t.scan(pos, 3, now, &mut out);
                    seen.extend(out.iter().map(|e| e.key().to_vec()));
                }
                for (k, (v, _)) in &model {
                    let got = t.peek(k, now).map(|e| e.value.clone());
                    prop_assert_eq!(got, Some(Value::str(&[*v])));
                }
            }
            while let Some(pos) = cursor {
                let mut out = Vec::new();
                cursor = t.scan(pos, 3, now, &mut out);
                seen.extend(out.iter().map(|e| e.key().to_vec()));
            }
            for k in present_throughout.unwrap_or_default() {
                prop_assert!(seen.contains(&k), "scan missed {:?}", k);
            }
            let mut out = Vec::new();
            t.expire_due(now, usize::MAX, &mut out);
            prop_assert_eq!(t.len(), model.len());
        }
    }
}
