//! The keyspace: shards of per-database hash tables, with an expiry index.
//!
//! A key's hash picks its shard; each shard holds one [`Table`] per database, so a
//! key lives in the same shard in every database (MOVE and COPY ... DB lock one
//! shard). Callers lock shards through [`Keyspace::lock`]; this module does no
//! locking of its own beyond the shard mutexes and never blocks on I/O.
//!
//! Invariants:
//! - an entry has a deadline handle exactly when its table holds its deadline
//!   and counts `(deadline, its slab index)` in the expiry order;
//! - an expired entry is never returned: reads remove it first and record the key in
//!   `lazy_expired` so the executor can log the deletion;
//! - an entry keeps its slab index while its key exists, which is what SCAN's
//!   cursor walks.

use crate::bytes::CompactBytes;
use crate::slab::Slab;
use crate::value::Value;
use hashbrown::HashTable;
use parking_lot::{Mutex, MutexGuard};
use std::collections::BTreeSet;
use std::hash::BuildHasher;
use std::num::NonZeroU64;
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

/// One key and its value: 56 bytes, stored in its table's slab. Short keys and
/// values live inline; a deadline lives beside the entry, in the table, so
/// only keys that have one pay for it.
#[derive(Debug)]
pub struct Entry {
    key: CompactBytes,
    pub value: Value,
    /// Seconds clock of the last access, for OBJECT IDLETIME.
    access_s: u32,
    /// 1 + the index of this key's deadline in its table; 0 for none.
    deadline: u32,
}

impl Entry {
    pub fn key(&self) -> &[u8] {
        self.key.as_slice()
    }

    pub fn key_bytes(&self) -> &CompactBytes {
        &self.key
    }

    pub fn idle_seconds(&self, now_ms: u64) -> u64 {
        u64::from(seconds_clock(now_ms).wrapping_sub(self.access_s))
    }

    /// Approximate bytes this entry costs, for MEMORY USAGE and accounting:
    /// its slab slot, its share of the hash table (a 4-byte index and a
    /// control byte per bucket, at about half load), and what it owns.
    pub fn memory_usage(&self) -> usize {
        const TABLE_SHARE: usize = 10;
        std::mem::size_of::<Entry>() + TABLE_SHARE + self.key.heap_bytes() + self.value.heap_bytes()
    }
}

fn seconds_clock(now_ms: u64) -> u32 {
    (now_ms / 1000) as u32
}

/// Position of a SCAN over one table: the slab index to continue from.
/// `None` once the table has been walked to its end.
pub type ScanCursor = Option<u32>;

/// An entry taken out of its table with its deadline (0 for none), to be put
/// back under another name or database (RENAME, MOVE).
#[derive(Debug)]
pub struct Detached {
    pub entry: Entry,
    pub expires_at_ms: u64,
}

/// The deadlines of a table's volatile keys: each in a slab slot named by its
/// entry, and ordered by time (with the entry's slab index) for active expiry.
#[derive(Default)]
struct Deadlines {
    at: Slab<NonZeroU64>,
    order: BTreeSet<(u64, u32)>,
}

impl Deadlines {
    /// The entry's deadline in Unix ms, 0 for none.
    #[inline]
    fn of(&self, e: &Entry) -> u64 {
        match e.deadline {
            0 => 0,
            h => self.at.get(h - 1).map_or(0, |d| d.get()),
        }
    }

    #[inline]
    fn expired(&self, e: &Entry, now_ms: u64) -> bool {
        let at = self.of(e);
        at != 0 && at <= now_ms
    }

    /// Give the entry at slab index `slot` the deadline `at` (0 clears it).
    fn set(&mut self, slot: u32, e: &mut Entry, at: u64) {
        self.clear(slot, e);
        if let Some(nz) = NonZeroU64::new(at) {
            e.deadline = self.at.insert(nz).saturating_add(1);
            self.order.insert((at, slot));
        }
    }

    /// Drop the entry's deadline; returns what it was (0 for none).
    fn clear(&mut self, slot: u32, e: &mut Entry) -> u64 {
        let at = self.of(e);
        if e.deadline != 0 {
            self.at.remove(e.deadline - 1);
            self.order.remove(&(at, slot));
            e.deadline = 0;
        }
        at
    }

    /// The slab index of the entry whose deadline is earliest, if it is due.
    fn first_due(&self, now_ms: u64) -> Option<u32> {
        self.order
            .first()
            .filter(|&&(at, _)| at <= now_ms)
            .map(|&(_, slot)| slot)
    }

    fn len(&self) -> usize {
        self.order.len()
    }
}

/// One database's keys within one shard. Entries live in a [`Slab`]; the hash
/// table holds their 4-byte indexes.
#[derive(Default)]
pub struct Table {
    map: HashTable<u32>,
    slab: Slab<Entry>,
    deadlines: Deadlines,
    /// Keys removed because they were found expired on access; drained by the
    /// executor, which logs each as a DEL.
    lazy_expired: Vec<CompactBytes>,
    /// Expired keys read as missing but stay stored (CLIENT PAUSE keeps the
    /// dataset still); set by the executor around one command.
    hold_expired: bool,
}

/// The hash table's callback for moving an index when it grows: the hash of
/// the key at that index.
fn rehasher(slab: &Slab<Entry>) -> impl Fn(&u32) -> u64 + '_ {
    move |&i| slab.get(i).map_or(0, |e| hash_key(e.key.as_slice()))
}

/// The hash table's equality callback: the index holds `key`.
fn holds<'a>(slab: &'a Slab<Entry>, key: &'a [u8]) -> impl Fn(&u32) -> bool + 'a {
    move |&i| slab.get(i).is_some_and(|e| e.key.as_slice() == key)
}

impl Table {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn volatile_len(&self) -> usize {
        self.deadlines.len()
    }

    /// The slab index of `key`, if present (live or not).
    fn index_of(&self, hash: u64, key: &[u8]) -> Option<u32> {
        self.map.find(hash, holds(&self.slab, key)).copied()
    }

    /// Take the entry for `key` out of the table, with its deadline.
    fn take(&mut self, hash: u64, key: &[u8]) -> Option<Detached> {
        let occ = self.map.find_entry(hash, holds(&self.slab, key)).ok()?;
        let (slot, _) = occ.remove();
        let mut entry = self.slab.remove(slot)?;
        let expires_at_ms = self.deadlines.clear(slot, &mut entry);
        Some(Detached {
            entry,
            expires_at_ms,
        })
    }

    /// Remove an expired entry and record it for the executor.
    fn expire_now(&mut self, hash: u64, key: &[u8]) {
        if let Some(d) = self.take(hash, key) {
            self.lazy_expired.push(d.entry.key);
        }
    }

    /// Start loading the entries `key` may be in, without waiting for them, so a
    /// command that runs a little later finds its entry in cache. Probing the
    /// control bytes and indexes is cheap; the entry itself is the usual cache miss.
    pub fn prefetch(&self, key: &[u8]) {
        let hash = hash_key(key);
        let slab = &self.slab;
        let _ = self.map.find(hash, |&i| {
            if let Some(e) = slab.get(i) {
                crate::prefetch::prefetch::<Entry>(e);
            }
            false
        });
    }

    /// The entry stored under `key`, expired or not, without touching it: for
    /// hints such as prefetching what a later command will read.
    pub fn find_for_hint(&self, key: &[u8]) -> Option<&Entry> {
        let i = self.index_of(hash_key(key), key)?;
        self.slab.get(i)
    }

    /// Look up a live key without touching its access time.
    pub fn peek(&mut self, key: &[u8], now_ms: u64) -> Option<&Entry> {
        self.lookup(key, now_ms).map(|(_, e)| &*e)
    }

    /// One probe of the table: the live entry for `key` and its slab index,
    /// removing it first if its time has passed.
    fn lookup(&mut self, key: &[u8], now_ms: u64) -> Option<(u32, &mut Entry)> {
        let hash = hash_key(key);
        let slot = self.index_of(hash, key)?;
        let e = self.slab.get(slot)?;
        if e.deadline != 0 && self.deadlines.expired(e, now_ms) {
            if !self.hold_expired {
                self.expire_now(hash, key);
            }
            return None;
        }
        Some((slot, self.slab.get_mut(slot)?))
    }

    /// Look up a live key for reading or in-place change, recording the access.
    pub fn get_mut(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        let (_, e) = self.lookup(key, now_ms)?;
        e.access_s = seconds_clock(now_ms);
        Some(e)
    }

    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Option<&Entry> {
        self.get_mut(key, now_ms).map(|e| &*e)
    }

    pub fn contains(&mut self, key: &[u8], now_ms: u64) -> bool {
        self.peek(key, now_ms).is_some()
    }

    /// The deadline of a live key: `None` if the key is missing, `Some(None)`
    /// if it has no expiry. Does not touch the key's access time.
    pub fn expiry(&mut self, key: &[u8], now_ms: u64) -> Option<Option<u64>> {
        let (slot, _) = self.lookup(key, now_ms)?;
        let at = self.slab.get(slot).map_or(0, |e| self.deadlines.of(e));
        Some((at != 0).then_some(at))
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
        if let Some(slot) = self.index_of(hash, key) {
            let e = self.slab.get_mut(slot)?;
            let was_expired = self.deadlines.expired(e, now_ms);
            let old = std::mem::replace(&mut e.value, value);
            e.access_s = access_s;
            if self.deadlines.of(e) != expires_at_ms {
                self.deadlines.set(slot, e, expires_at_ms);
            }
            return (!was_expired).then_some(old);
        }
        self.add(
            hash,
            Detached {
                entry: Entry {
                    key: CompactBytes::new(key),
                    value,
                    access_s,
                    deadline: 0,
                },
                expires_at_ms,
            },
        );
        None
    }

    /// Put a new entry (its key absent) into the slab and the hash table.
    fn add(&mut self, hash: u64, d: Detached) {
        let slot = self.slab.insert(d.entry);
        if d.expires_at_ms != 0 {
            if let Some(e) = self.slab.get_mut(slot) {
                self.deadlines.set(slot, e, d.expires_at_ms);
            }
        }
        self.map.insert_unique(hash, slot, rehasher(&self.slab));
    }

    /// Remove a live key, returning its entry and deadline.
    pub fn remove(&mut self, key: &[u8], now_ms: u64) -> Option<Detached> {
        let d = self.take(hash_key(key), key)?;
        if d.expires_at_ms != 0 && d.expires_at_ms <= now_ms {
            self.lazy_expired.push(d.entry.key);
            return None;
        }
        Some(d)
    }

    /// Put back an entry taken with [`Table::remove`] (RENAME, MOVE, SWAPDB),
    /// keeping its expiry and access time. Replaces any entry with the same key.
    pub fn put_entry(&mut self, d: Detached, now_ms: u64) {
        let hash = hash_key(d.entry.key.as_slice());
        self.remove(d.entry.key.as_slice(), now_ms);
        self.add(hash, d);
    }

    /// Put back an entry taken with [`Table::remove`] under a new key (RENAME),
    /// keeping its value, expiry and access time. Replaces any entry at `key`.
    pub fn put_entry_as(&mut self, mut d: Detached, key: &[u8], now_ms: u64) {
        d.entry.key = CompactBytes::new(key);
        self.put_entry(d, now_ms);
    }

    /// Set or clear (0) the expiry of a live key. Returns false if the key is absent.
    pub fn set_expire(&mut self, key: &[u8], expires_at_ms: u64, now_ms: u64) -> bool {
        let Some((slot, _)) = self.lookup(key, now_ms) else {
            return false;
        };
        if let Some(e) = self.slab.get_mut(slot) {
            self.deadlines.set(slot, e, expires_at_ms);
        }
        true
    }

    /// Remove every key; returns how many there were.
    pub fn clear(&mut self) -> usize {
        let n = self.map.len();
        self.map = HashTable::new();
        self.slab.clear();
        self.deadlines = Deadlines::default();
        n
    }

    /// While on, a key found expired on access reads as missing but is not
    /// removed.
    pub fn set_hold_expired(&mut self, on: bool) {
        self.hold_expired = on;
    }

    /// Keys found expired on access since the last drain.
    pub fn drain_lazy_expired(&mut self) -> std::vec::Drain<'_, CompactBytes> {
        self.lazy_expired.drain(..)
    }

    pub fn has_lazy_expired(&self) -> bool {
        !self.lazy_expired.is_empty()
    }

    /// Every entry whose time has not passed.
    pub fn iter_live(&self, now_ms: u64) -> impl Iterator<Item = &Entry> {
        self.slab
            .iter()
            .filter(move |e| !self.deadlines.expired(e, now_ms))
    }

    /// Remove up to `max` keys whose time has passed, earliest first. Returns the
    /// keys removed so the caller can log them.
    pub fn expire_due(&mut self, now_ms: u64, max: usize, out: &mut Vec<CompactBytes>) -> usize {
        let mut n = 0;
        while n < max {
            let Some(slot) = self.deadlines.first_due(now_ms) else {
                break;
            };
            let Some(key) = self.slab.get(slot).map(|e| e.key.clone()) else {
                // Unreachable by construction; drop the stray index entry.
                self.deadlines.order.pop_first();
                continue;
            };
            if let Some(d) = self.take(hash_key(key.as_slice()), key.as_slice()) {
                out.push(d.entry.key);
                n += 1;
            }
        }
        if n > 0 && self.map.capacity() > 64 && self.map.len() * 4 < self.map.capacity() {
            self.map.shrink_to_fit(rehasher(&self.slab));
        }
        n
    }

    /// Walk live entries in slab order starting at index `from`, returning up
    /// to `count` and where to continue. An entry keeps its slab index for as
    /// long as its key exists, so keys present for the whole walk are returned
    /// exactly once across calls, whatever is inserted or removed meanwhile,
    /// and each call costs O(count) plus the freed slots it passes.
    pub fn scan<'a>(
        &'a self,
        from: u32,
        count: usize,
        now_ms: u64,
        out: &mut Vec<&'a Entry>,
    ) -> ScanCursor {
        let count = count.max(1);
        let mut taken = 0;
        for (slot, e) in self.slab.iter_from(from) {
            if self.deadlines.expired(e, now_ms) {
                continue;
            }
            if taken == count {
                return Some(slot);
            }
            out.push(e);
            taken += 1;
        }
        None
    }

    /// A uniformly random live entry, if any; `pick` draws an index below its bound.
    pub fn random_entry(
        &mut self,
        now_ms: u64,
        pick: &mut dyn FnMut(usize) -> usize,
    ) -> Option<&Entry> {
        for _ in 0..16 {
            let (slot, expired, key) = {
                let (slot, e) = self.slab.random(pick)?;
                (slot, self.deadlines.expired(e, now_ms), e.key.clone())
            };
            if expired {
                self.expire_now(hash_key(key.as_slice()), key.as_slice());
                continue;
            }
            return self.slab.get(slot);
        }
        None
    }

    /// Bytes used by the table's own structures (buckets, slab pages beyond
    /// the entries' own size, and the deadlines).
    pub fn overhead_bytes(&self) -> usize {
        self.map.capacity() * (std::mem::size_of::<u32>() + 1)
            + self
                .slab
                .heap_bytes()
                .saturating_sub(self.slab.len() * std::mem::size_of::<Entry>())
            + self.deadlines.at.heap_bytes()
            + self.deadlines.len() * (std::mem::size_of::<(u64, u32)>() + 8)
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
        assert_eq!(t.expiry(b"b", 10), Some(Some(500)));
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
    fn entry_is_56_bytes() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<Entry>(), 56);
        assert_eq!(std::mem::size_of::<Option<Entry>>(), 56);
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
    fn held_expired_keys_read_missing_and_stay() {
        let mut t = Table::default();
        t.insert(b"k", s("v"), 1000, 0);
        t.set_hold_expired(true);
        assert!(t.get(b"k", 1000).is_none());
        assert_eq!(t.expiry(b"k", 1000), None);
        assert_eq!(t.len(), 1);
        assert!(!t.has_lazy_expired());
        t.set_hold_expired(false);
        assert!(t.get(b"k", 1000).is_none());
        assert_eq!(t.len(), 0);
        assert!(t.has_lazy_expired());
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
