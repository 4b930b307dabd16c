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
//!   cursor walks, and what a snapshot's cursor walks;
//! - while a table has an unfinished snapshot, every change to an entry first
//!   saves the version the snapshot still owes (the rule is written out above
//!   `SnapshotState`).

use crate::bytes::CompactBytes;
pub use crate::hashing::hash_key;
use crate::slab::Slab;
use crate::value::Value;
use hashbrown::HashTable;
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::collections::BTreeSet;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU32, Ordering};

/// A shard held exclusively: what a command that may change it holds.
pub type ShardGuard<'a> = RwLockWriteGuard<'a, Shard>;
/// A shard held shared: readers of one shard run side by side.
pub type ShardReadGuard<'a> = RwLockReadGuard<'a, Shard>;

/// What [`Table::read`] found.
pub enum Read<'a> {
    Missing,
    Live(&'a Entry),
    /// The key's time has passed: only a holder of the exclusive lock may
    /// remove it (and log its deletion).
    Expired,
}

/// One key and its value: 48 bytes, stored in its table's slab. Short keys and
/// values live inline; a deadline lives beside the entry, in the table, so
/// only keys that have one pay for it.
#[derive(Debug)]
pub struct Entry {
    key: CompactBytes,
    pub value: Value,
    /// Last access and LFU counter, packed (see [`crate::access`]). Atomic
    /// so that readers sharing the shard's lock can record their access.
    access: AtomicU32,
    /// 1 + the index of this key's deadline in its table; 0 for none.
    deadline: u32,
}

impl Entry {
    #[inline]
    fn access(&self) -> u32 {
        self.access.load(Ordering::Relaxed)
    }

    /// Record an access through a shared reference. The word is written only
    /// when it changes, so readers of one hot key on many threads keep its
    /// cache line shared; two readers racing may lose one LFU increment,
    /// which the counter's approximation already allows.
    #[inline]
    fn touch_shared(&self, now_ms: u64) {
        let old = self.access();
        let new = crate::access::touched(old, now_ms);
        if new != old {
            self.access.store(new, Ordering::Relaxed);
        }
    }

    pub fn key(&self) -> &[u8] {
        self.key.as_slice()
    }

    pub fn key_bytes(&self) -> &CompactBytes {
        &self.key
    }

    pub fn idle_seconds(&self, now_ms: u64) -> u64 {
        crate::access::idle_seconds(self.access(), now_ms)
    }

    /// The LFU counter after decay (OBJECT FREQ).
    pub fn frequency(&self, now_ms: u64) -> u8 {
        crate::access::frequency(self.access(), now_ms)
    }

    /// Set the LFU counter (RESTORE ... FREQ).
    pub fn set_frequency(&mut self, freq: u8) {
        *self.access.get_mut() = crate::access::with_counter(self.access(), freq);
    }

    /// Make the key look idle for `idle_s` seconds (RESTORE ... IDLETIME).
    pub fn set_idle_seconds(&mut self, idle_s: u64, now_ms: u64) {
        *self.access.get_mut() = crate::access::with_idle(self.access(), idle_s, now_ms);
    }

    /// Approximate bytes this entry costs, for MEMORY USAGE and accounting:
    /// its slab slot, its share of the hash table (a 4-byte index and a
    /// control byte per bucket, at about half load), and what it owns.
    pub fn memory_usage(&self) -> usize {
        const TABLE_SHARE: usize = 10;
        std::mem::size_of::<Entry>() + TABLE_SHARE + self.key.heap_bytes() + self.value.heap_bytes()
    }
}

/// A key drawn for eviction, with what the policies compare.
#[derive(Debug, Clone)]
pub struct Sample {
    pub key: CompactBytes,
    pub idle_s: u64,
    /// The decayed LFU counter.
    pub freq: u8,
    /// Unix ms, 0 for none.
    pub expires_at_ms: u64,
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
    /// Keys created since the last drain, while the executor asks for them
    /// (keyspace notifications' `new` event); `None` otherwise.
    created: Option<Vec<CompactBytes>>,
    /// The unfinished point-in-time snapshot, if any. Boxed so that a table
    /// without one pays a null pointer and one branch per write.
    snapshot: Option<Box<SnapshotState>>,
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
        keep_for_snapshot(&mut self.snapshot, &self.slab, &self.deadlines, *occ.get());
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
        self.prefetch_hashed(hash_key(key));
    }

    /// [`Table::prefetch`] for a key whose [`hash_key`] the caller has.
    pub fn prefetch_hashed(&self, hash: u64) {
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
        self.peek_hashed(key, hash_key(key), now_ms)
    }

    /// [`Table::peek`] of a key whose [`hash_key`] the caller has.
    #[inline]
    pub fn peek_hashed(&mut self, key: &[u8], hash: u64, now_ms: u64) -> Option<&Entry> {
        self.lookup_hashed(key, hash, now_ms).map(|(_, e)| &*e)
    }

    /// One probe of the table: the live entry for `key` and its slab index,
    /// removing it first if its time has passed.
    #[inline]
    fn lookup(&mut self, key: &[u8], now_ms: u64) -> Option<(u32, &mut Entry)> {
        self.lookup_hashed(key, hash_key(key), now_ms)
    }

    fn lookup_hashed(&mut self, key: &[u8], hash: u64, now_ms: u64) -> Option<(u32, &mut Entry)> {
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

    /// Look up a live key for in-place change, recording the access. While a
    /// snapshot is under way the entry is treated as changed: the snapshot's
    /// version is saved first, so prefer [`Table::get`] for reading.
    pub fn get_mut(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        let (slot, _) = self.lookup(key, now_ms)?;
        keep_for_snapshot(&mut self.snapshot, &self.slab, &self.deadlines, slot);
        let e = self.slab.get_mut(slot)?;
        let word = e.access.get_mut();
        *word = crate::access::touched(*word, now_ms);
        Some(e)
    }

    /// Look up a live key for reading, recording the access.
    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Option<&Entry> {
        self.get_hashed(key, hash_key(key), now_ms)
    }

    /// [`Table::get`] of a key whose [`hash_key`] the caller has.
    #[inline]
    pub fn get_hashed(&mut self, key: &[u8], hash: u64, now_ms: u64) -> Option<&Entry> {
        let (_, e) = self.lookup_hashed(key, hash, now_ms)?;
        let word = e.access.get_mut();
        *word = crate::access::touched(*word, now_ms);
        Some(e)
    }

    /// Look up `key` through a shared borrow, for a reader that holds its
    /// shard's lock shared: recording the access (unless `touch` is false)
    /// but never removing anything, so an expired key is reported as such
    /// and the caller retries holding the lock exclusively.
    #[inline]
    pub fn read(&self, key: &[u8], now_ms: u64, touch: bool) -> Read<'_> {
        self.read_hashed(key, hash_key(key), now_ms, touch)
    }

    /// [`Table::read`] of a key whose [`hash_key`] the caller has.
    #[inline]
    pub fn read_hashed(&self, key: &[u8], hash: u64, now_ms: u64, touch: bool) -> Read<'_> {
        let Some(slot) = self.index_of(hash, key) else {
            return Read::Missing;
        };
        let Some(e) = self.slab.get(slot) else {
            return Read::Missing;
        };
        if e.deadline != 0 && self.deadlines.expired(e, now_ms) {
            return Read::Expired;
        }
        if touch {
            e.touch_shared(now_ms);
        }
        Read::Live(e)
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
        if let Some(slot) = self.index_of(hash, key) {
            keep_for_snapshot(&mut self.snapshot, &self.slab, &self.deadlines, slot);
            let e = self.slab.get_mut(slot)?;
            let was_expired = self.deadlines.expired(e, now_ms);
            if was_expired && !self.hold_expired {
                // The old key expired before this write replaced it, as when
                // Redis looks the key up first: report it like a read would.
                self.lazy_expired.push(CompactBytes::new(key));
                if let Some(created) = self.created.as_mut() {
                    created.push(CompactBytes::new(key));
                }
            }
            let old = std::mem::replace(&mut e.value, value);
            // Redis keeps an overwritten key's LFU counter.
            *e.access.get_mut() = if was_expired {
                crate::access::fresh(now_ms)
            } else {
                crate::access::touched(*e.access.get_mut(), now_ms)
            };
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
                    access: AtomicU32::new(crate::access::fresh(now_ms)),
                    deadline: 0,
                },
                expires_at_ms,
            },
        );
        None
    }

    /// Put a new entry (its key absent) into the slab and the hash table.
    fn add(&mut self, hash: u64, d: Detached) {
        if let Some(created) = self.created.as_mut() {
            created.push(d.entry.key.clone());
        }
        let slot = self.slab.insert(d.entry);
        if let Some(snap) = self.snapshot.as_deref_mut() {
            if let Some(e) = self.slab.get(slot) {
                snap.created(hash, &e.key, slot);
            }
        }
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

    /// Remove `key` whether or not its time has passed, as Redis deletes the
    /// destination a command leaves empty (SUNIONSTORE, BITOP, SORT STORE,
    /// ...): an expired one goes as deleted, not as expired.
    pub fn remove_any(&mut self, key: &[u8]) -> Option<Detached> {
        self.take(hash_key(key), key)
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
        keep_for_snapshot(&mut self.snapshot, &self.slab, &self.deadlines, slot);
        if let Some(e) = self.slab.get_mut(slot) {
            self.deadlines.set(slot, e, expires_at_ms);
        }
        true
    }

    /// Remove every key; returns how many there were. While a snapshot still
    /// walks this table's slab, the old entries move into it whole (no entry is
    /// copied or visited) and the snapshot reads them from there.
    pub fn clear(&mut self) -> usize {
        let n = self.map.len();
        self.map = HashTable::new();
        match self.snapshot.as_deref_mut() {
            Some(snap) if snap.walks_live() => {
                snap.frozen = Some(Box::new(Frozen {
                    slab: std::mem::take(&mut self.slab),
                    deadlines: std::mem::take(&mut self.deadlines),
                }));
            }
            _ => {
                self.slab.clear();
                self.deadlines = Deadlines::default();
            }
        }
        n
    }

    /// While on, a key found expired on access reads as missing but is not
    /// removed.
    pub fn set_hold_expired(&mut self, on: bool) {
        self.hold_expired = on;
    }

    /// Record the keys created from now on (on) or stop recording and forget
    /// them (off).
    pub fn set_track_created(&mut self, on: bool) {
        if on {
            self.created.get_or_insert_with(Vec::new);
        } else {
            self.created = None;
        }
    }

    /// Keys created since the last drain, while tracking is on.
    pub fn drain_created(&mut self) -> Vec<CompactBytes> {
        self.created
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
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

    /// Draw up to `n` keys for eviction into `out`: random keys of the whole
    /// table, or with `volatile` only keys with a deadline (a random point in
    /// the deadline order, so spread over the TTLs, plus the earliest).
    pub fn sample(
        &self,
        n: usize,
        volatile: bool,
        now_ms: u64,
        pick: &mut dyn FnMut(usize) -> usize,
        out: &mut Vec<Sample>,
    ) {
        let sample = |e: &Entry| Sample {
            key: e.key.clone(),
            idle_s: e.idle_seconds(now_ms),
            freq: e.frequency(now_ms),
            expires_at_ms: self.deadlines.of(e),
        };
        if !volatile {
            for _ in 0..n {
                if let Some((_, e)) = self.slab.random(pick) {
                    out.push(sample(e));
                }
            }
            return;
        }
        let order = &self.deadlines.order;
        let (Some(&(first, first_slot)), Some(&(last, _))) = (order.first(), order.last()) else {
            return;
        };
        if let Some(e) = self.slab.get(first_slot) {
            out.push(sample(e));
        }
        let span = usize::try_from(last - first).unwrap_or(usize::MAX - 1) + 1;
        for _ in 1..n {
            let at = first + pick(span) as u64;
            let slot = order
                .range((at, 0)..)
                .next()
                .map_or(first_slot, |&(_, s)| s);
            if let Some(e) = self.slab.get(slot) {
                out.push(sample(e));
            }
        }
    }

    /// Remove `key` for eviction, whether or not its time has passed.
    pub fn evict(&mut self, key: &[u8]) -> Option<Detached> {
        self.take(hash_key(key), key)
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
    /// The part of [`Table::overhead_bytes`] that indexes deadlines (Redis's
    /// expires table).
    pub fn expires_overhead_bytes(&self) -> usize {
        self.deadlines.at.heap_bytes()
            + self.deadlines.len() * (std::mem::size_of::<(u64, u32)>() + 8)
    }

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

// Point-in-time snapshots without fork(): per-entry copy-on-write behind a
// cursor.
//
// A snapshot walks the table's slab in index order. `cursor` is the next index
// it will visit; `side` maps a key to the version the snapshot still owes for
// it (`Some`), or to `None` for a key it must not emit (absent at the flip, or
// already emitted). The rule that makes the walk yield exactly the image at
// the flip, each key once:
//
//   a key that is not in `side` and is stored at an index >= `cursor` holds
//   its version from the flip, not yet emitted; any other key not in `side`
//   owes nothing (emitted already, or absent at the flip).
//
// It holds at the flip (cursor 0, side empty). A change to an entry at an
// index >= cursor that is not in `side` first saves the entry there; a key
// created at an index >= cursor that is not in `side` gets `None`. Nothing is
// needed below the cursor, nor at or above `end`, the slab's end at the flip:
// the walk stops there, as everything stored there was created after the
// flip (keys added to a full slab take the next new index, so they cost the
// snapshot nothing). An entry keeps its slab index while its key exists
// (the hash table stores indexes, so its growth, shrinking and rehashing move
// no entry), and the cursor only advances, so an entry below it is never
// visited again. Freed slots are reused by later inserts, above or below the
// cursor, and an emptied slab restarts at index 0; both are plain creations
// at some index and fall under the rule. The walk emits a visited key's side
// version if it has one (dropping it from `side`) and its stored version
// otherwise; once past the end of the slab the cursor is `None` (everything
// is below it) and the remaining `Some` versions in `side` are emitted: keys
// deleted, renamed or moved away before the walk reached them.
//
// Expired entries still stored are part of the image, with their deadline;
// whoever loads it drops them. The store reads no clock for this.

/// Where a snapshot step hands each entry of the image: key, value, and
/// deadline in Unix ms (`None` for none).
pub type SnapshotEmit<'a> = dyn FnMut(&[u8], &Value, Option<u64>) + 'a;

/// A key's version owed to (or withheld from) the snapshot.
struct SideEntry {
    key: CompactBytes,
    /// The value and deadline (0 for none) at the flip; `None`: emit nothing.
    version: Option<(Value, u64)>,
}

impl SideEntry {
    fn heap_bytes(&self) -> usize {
        self.key.heap_bytes() + self.version.as_ref().map_or(0, |(v, _)| v.heap_bytes())
    }
}

/// The old contents of a table cleared while its snapshot walked it.
struct Frozen {
    slab: Slab<Entry>,
    deadlines: Deadlines,
}

struct SnapshotState {
    /// The database number at the flip (SWAPDB moves the table, not this).
    db: usize,
    /// The next slab index to visit; `None` once the walk is over.
    cursor: Option<u32>,
    /// The slab's end at the flip: every entry at or above it was created
    /// later, so the walk stops there and such creations need no record.
    end: u32,
    side: HashTable<SideEntry>,
    /// Heap bytes owned by the keys and values in `side`.
    side_heap: usize,
    /// After a clear under way, the walk reads the old entries from here and
    /// the live table owes the snapshot nothing.
    frozen: Option<Box<Frozen>>,
    /// The side versions left to emit after the walk.
    drain: Option<hashbrown::hash_table::IntoIter<SideEntry>>,
}

impl SnapshotState {
    /// Whether writes to the live table may still owe the snapshot anything.
    fn walks_live(&self) -> bool {
        self.frozen.is_none() && self.cursor.is_some()
    }

    /// Whether the walk has yet to visit live index `slot`.
    fn ahead(&self, slot: u32) -> bool {
        self.frozen.is_none() && slot < self.end && self.cursor.is_some_and(|c| slot >= c)
    }

    /// Save the flip version of the entry at `slot` before it changes.
    fn save(&mut self, slot: u32, e: &Entry, deadlines: &Deadlines) {
        if !self.ahead(slot) {
            return;
        }
        let hash = hash_key(e.key.as_slice());
        if let hashbrown::hash_table::Entry::Vacant(v) =
            self.side
                .entry(hash, |s| s.key == e.key, |s| hash_key(s.key.as_slice()))
        {
            let saved = SideEntry {
                key: e.key.clone(),
                version: Some((e.value.clone(), deadlines.of(e))),
            };
            self.side_heap += saved.heap_bytes();
            v.insert(saved);
        }
    }

    /// A key absent from the live table was just stored at `slot`.
    fn created(&mut self, hash: u64, key: &CompactBytes, slot: u32) {
        if !self.ahead(slot) {
            return;
        }
        if let hashbrown::hash_table::Entry::Vacant(v) =
            self.side
                .entry(hash, |s| s.key == *key, |s| hash_key(s.key.as_slice()))
        {
            let withheld = SideEntry {
                key: key.clone(),
                version: None,
            };
            self.side_heap += withheld.heap_bytes();
            v.insert(withheld);
        }
    }
}

/// Save, for the table's unfinished snapshot, the entry at `slot` that is
/// about to change. One branch when there is no snapshot.
#[inline]
fn keep_for_snapshot(
    snapshot: &mut Option<Box<SnapshotState>>,
    slab: &Slab<Entry>,
    deadlines: &Deadlines,
    slot: u32,
) {
    if let Some(snap) = snapshot.as_deref_mut() {
        keep_slow(snap, slab, deadlines, slot);
    }
}

#[cold]
#[inline(never)]
fn keep_slow(snap: &mut SnapshotState, slab: &Slab<Entry>, deadlines: &Deadlines, slot: u32) {
    if let Some(e) = slab.get(slot) {
        snap.save(slot, e, deadlines);
    }
}

impl Table {
    /// Start a snapshot of this table as database `db` (the table may later be
    /// swapped by SWAPDB; the snapshot keeps the number it had at the flip).
    /// Cheap: no entry is copied here. A snapshot already under way is dropped.
    pub fn begin_snapshot(&mut self, db: usize) {
        self.snapshot = Some(Box::new(SnapshotState {
            db,
            cursor: Some(0),
            end: self.slab.end(),
            side: HashTable::new(),
            side_heap: 0,
            frozen: None,
            drain: None,
        }));
    }

    /// The database number this table's unfinished snapshot belongs to.
    pub fn snapshot_db(&self) -> Option<usize> {
        self.snapshot.as_ref().map(|s| s.db)
    }

    /// Hand up to `budget` entries of the image at the flip to
    /// `emit(key, value, expire_at_ms)`, in no particular order. A key the
    /// snapshot withholds counts against the budget too, so a step does
    /// O(budget) work plus the freed slots it passes. Returns true when the
    /// image is complete: the table then forgets the snapshot and frees its
    /// side copies. True at once for a table with no snapshot; a budget of 0
    /// only tells whether anything is left.
    pub fn snapshot_step(&mut self, budget: usize, emit: &mut SnapshotEmit<'_>) -> bool {
        let Some(snap) = self.snapshot.as_deref_mut() else {
            return true;
        };
        let mut left = budget;
        while let Some(from) = snap.cursor {
            let (slab, deadlines) = match snap.frozen.as_deref() {
                Some(f) => (&f.slab, &f.deadlines),
                None => (&self.slab, &self.deadlines),
            };
            let Some((slot, e)) = slab.iter_from(from).next().filter(|&(i, _)| i < snap.end) else {
                snap.cursor = None;
                break;
            };
            if left == 0 {
                return false;
            }
            left -= 1;
            snap.cursor = slot.checked_add(1);
            if snap.side.is_empty() {
                emit(e.key(), &e.value, expire_at(deadlines.of(e)));
                continue;
            }
            let hash = hash_key(e.key());
            match snap.side.find_entry(hash, |s| s.key == e.key) {
                Ok(occ) => {
                    let (s, _) = occ.remove();
                    snap.side_heap = snap.side_heap.saturating_sub(s.heap_bytes());
                    if let Some((value, at)) = &s.version {
                        emit(s.key.as_slice(), value, expire_at(*at));
                    }
                }
                Err(_) => emit(e.key(), &e.value, expire_at(deadlines.of(e))),
            }
        }
        // The walk is over: the frozen entries are no longer needed, and the
        // side versions left are keys that moved away before the walk met them.
        snap.frozen = None;
        let drain = snap
            .drain
            .get_or_insert_with(|| std::mem::take(&mut snap.side).into_iter());
        while left > 0 {
            let Some(s) = drain.next() else { break };
            left -= 1;
            snap.side_heap = snap.side_heap.saturating_sub(s.heap_bytes());
            if let Some((value, at)) = &s.version {
                emit(s.key.as_slice(), value, expire_at(*at));
            }
        }
        if drain.len() > 0 {
            return false;
        }
        self.snapshot = None;
        true
    }

    /// Drop an unfinished snapshot (a failed save, FLUSHALL ...).
    pub fn abort_snapshot(&mut self) {
        self.snapshot = None;
    }

    /// Bytes held by the unfinished snapshot's side copies right now: saved
    /// versions and their table, and the slots of a table cleared under it
    /// (what that table's values own is not counted: summing it would visit
    /// every entry).
    pub fn snapshot_side_bytes(&self) -> usize {
        let Some(snap) = self.snapshot.as_deref() else {
            return 0;
        };
        let slot = std::mem::size_of::<SideEntry>() + 1;
        let table = snap.side.capacity() * slot;
        let drain = snap.drain.as_ref().map_or(0, |d| d.len() * slot);
        let frozen = snap.frozen.as_deref().map_or(0, |f| {
            f.slab.heap_bytes()
                + f.deadlines.at.heap_bytes()
                + f.deadlines.len() * (std::mem::size_of::<(u64, u32)>() + 8)
        });
        snap.side_heap + table + drain + frozen
    }
}

fn expire_at(at: u64) -> Option<u64> {
    (at != 0).then_some(at)
}

/// One lock's worth of the keyspace: a table per database.
pub struct Shard {
    dbs: Box<[Table]>,
    /// Bit `min(db, 63)` is set when database `db` was reached mutably since
    /// the last `take_touched`: only such a table can hold lazily expired
    /// keys, so the executor looks at these and not at every database.
    touched: u64,
}

impl Shard {
    pub fn new(databases: usize) -> Shard {
        Shard {
            dbs: (0..databases.max(1)).map(|_| Table::default()).collect(),
            touched: 0,
        }
    }

    #[inline]
    pub fn db(&mut self, db: usize) -> &mut Table {
        self.touched |= 1 << db.min(63);
        &mut self.dbs[db]
    }

    /// Whether a database reached mutably since the last call holds keys
    /// found expired on access (only those can), forgetting which were
    /// reached. Costs a bit test per database a command reached.
    #[inline]
    pub fn take_lazy_expired_hint(&mut self) -> bool {
        let mut touched = std::mem::take(&mut self.touched);
        while touched != 0 {
            let bit = touched.trailing_zeros() as usize;
            touched &= touched - 1;
            // Bit 63 stands for every database from 63 up.
            let tables = if bit == 63 {
                self.dbs.get(63..).unwrap_or_default()
            } else {
                self.dbs.get(bit..=bit).unwrap_or_default()
            };
            if tables.iter().any(Table::has_lazy_expired) {
                return true;
            }
        }
        false
    }

    pub fn db_ref(&self, db: usize) -> &Table {
        &self.dbs[db]
    }

    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    /// Exchange two databases' contents in this shard (SWAPDB). A table's
    /// unfinished snapshot goes with it and keeps its database number.
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        self.touched = u64::MAX;
        self.dbs.swap(a, b);
    }

    /// The table carrying the unfinished snapshot of database `db`, wherever
    /// SWAPDB has moved it since the flip.
    pub fn snapshot_table(&mut self, db: usize) -> Option<&mut Table> {
        self.touched = u64::MAX;
        self.dbs.iter_mut().find(|t| t.snapshot_db() == Some(db))
    }
}

/// Every key of every database, split into `2^shard_bits` independently locked
/// shards. A shard's lock is a reader-writer lock: commands that only read
/// hold it shared, so readers of one hot key run on every thread at once.
pub struct Keyspace {
    shards: Box<[RwLock<Shard>]>,
    shard_bits: u32,
    databases: usize,
}

impl Keyspace {
    pub fn new(databases: usize, shard_bits: u32) -> Keyspace {
        let shard_bits = shard_bits.clamp(0, 12);
        let shards = (0..1usize << shard_bits)
            .map(|_| RwLock::new(Shard::new(databases)))
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
        self.shard_of_hash(hash_key(key))
    }

    /// The shard of a key whose [`hash_key`] is `hash`.
    #[inline]
    pub fn shard_of_hash(&self, hash: u64) -> usize {
        if self.shard_bits == 0 {
            return 0;
        }
        ((hash >> (57 - self.shard_bits)) as usize) & (self.shards.len() - 1)
    }

    /// The shard, held exclusively.
    pub fn lock(&self, shard: usize) -> ShardGuard<'_> {
        self.shards[shard].write()
    }

    /// The shard, held shared with other readers.
    pub fn read(&self, shard: usize) -> ShardReadGuard<'_> {
        self.shards[shard].read()
    }

    /// The shard's exclusive lock if it is free right now.
    pub fn try_lock(&self, shard: usize) -> Option<ShardGuard<'_>> {
        self.shards[shard].try_write()
    }

    /// The shard shared, if no writer holds it right now.
    pub fn try_read(&self, shard: usize) -> Option<ShardReadGuard<'_>> {
        self.shards[shard].try_read()
    }

    /// The shard's exclusive lock, waiting at most `wait` for it.
    pub fn try_lock_for(&self, shard: usize, wait: std::time::Duration) -> Option<ShardGuard<'_>> {
        self.shards[shard].try_write_for(wait)
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
    fn entry_is_48_bytes() {
        assert_eq!(std::mem::size_of::<Value>(), 16);
        assert_eq!(std::mem::size_of::<Entry>(), 48);
        assert_eq!(std::mem::size_of::<Option<Entry>>(), 48);
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
    fn overwriting_an_expired_key_records_its_expiry_and_creation() {
        let mut t = Table::default();
        t.insert(b"k", s("v"), 1000, 0);
        t.set_track_created(true);
        t.insert(b"k", s("w"), 0, 500);
        assert!(t.drain_created().is_empty(), "a live key is overwritten");
        t.insert(b"k", s("x"), 1000, 600);
        t.insert(b"k", s("y"), 0, 1000);
        assert_eq!(
            t.drain_lazy_expired().collect::<Vec<_>>(),
            vec![CompactBytes::new(b"k")]
        );
        t.insert(b"n", s("v"), 0, 1000);
        assert_eq!(
            t.drain_created(),
            vec![CompactBytes::new(b"k"), CompactBytes::new(b"n")]
        );
        t.set_track_created(false);
        t.insert(b"m", s("v"), 0, 1000);
        t.set_track_created(true);
        assert!(t.drain_created().is_empty(), "nothing recorded while off");
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

#[cfg(test)]
mod snapshot_tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    type Image = BTreeMap<Vec<u8>, (Value, Option<u64>)>;

    fn s(v: &str) -> Value {
        Value::str(v.as_bytes())
    }

    /// Every stored entry, expired or not, with its deadline.
    fn stored(t: &Table) -> Image {
        t.slab
            .iter()
            .map(|e| {
                let at = t.deadlines.of(e);
                (e.key().to_vec(), (e.value.clone(), expire_at(at)))
            })
            .collect()
    }

    /// Run one step into `image`, failing on a key emitted twice.
    fn step(t: &mut Table, budget: usize, image: &mut Image) -> bool {
        let mut twice = Vec::new();
        let mut emitted = 0;
        let done = t.snapshot_step(budget, &mut |k, v, at| {
            emitted += 1;
            if image.insert(k.to_vec(), (v.clone(), at)).is_some() {
                twice.push(k.to_vec());
            }
        });
        assert!(twice.is_empty(), "emitted twice: {twice:?}");
        assert!(emitted <= budget);
        done
    }

    fn finish(t: &mut Table, image: &mut Image) {
        for _ in 0..10_000 {
            if step(t, 3, image) {
                assert_eq!(t.snapshot_db(), None);
                assert_eq!(t.snapshot_side_bytes(), 0);
                return;
            }
        }
        panic!("snapshot never completed");
    }

    fn table(keys: &[&str]) -> Table {
        let mut t = Table::default();
        for k in keys {
            t.insert(k.as_bytes(), s(&format!("{k}0")), 0, 0);
        }
        t
    }

    #[test]
    fn no_snapshot_means_done_and_no_side_bytes() {
        let mut t = table(&["a"]);
        assert_eq!(t.snapshot_db(), None);
        assert!(t.snapshot_step(10, &mut |_, _, _| panic!("nothing to emit")));
        assert_eq!(t.snapshot_side_bytes(), 0);
    }

    #[test]
    fn untouched_table_yields_itself_with_expiries() {
        let mut t = table(&["a", "b"]);
        t.insert(b"gone", s("x"), 5, 0);
        let want = stored(&t);
        t.begin_snapshot(3);
        assert_eq!(t.snapshot_db(), Some(3));
        // Expired but still stored: part of the image, deadline included.
        let mut image = Image::new();
        finish(&mut t, &mut image);
        assert_eq!(image, want);
        assert_eq!(image[&b"gone".to_vec()].1, Some(5));
    }

    #[test]
    fn delete_then_recreate_in_a_reused_slot_ahead_of_the_cursor() {
        let mut t = table(&["a", "b", "c", "d"]);
        let want = stored(&t);
        t.begin_snapshot(0);
        let mut image = Image::new();
        assert!(!step(&mut t, 1, &mut image));
        // c's slot is ahead of the cursor: deleting saves c, and the new key
        // e that reuses the slot must be withheld.
        let c = t.index_of(hash_key(b"c"), b"c").expect("c");
        assert!(t.remove(b"c", 0).is_some());
        t.insert(b"e", s("e1"), 0, 0);
        assert_eq!(t.index_of(hash_key(b"e"), b"e"), Some(c));
        assert!(t.snapshot_side_bytes() > 0);
        // c comes back elsewhere with a new value: still the old one owed.
        t.insert(b"c", s("c1"), 0, 0);
        finish(&mut t, &mut image);
        assert_eq!(image, want);
        assert_eq!(t.peek(b"c", 0).map(|e| e.value.clone()), Some(s("c1")));
    }

    #[test]
    fn delete_then_recreate_in_a_reused_slot_behind_the_cursor() {
        let mut t = table(&["a", "b", "c", "d"]);
        let want = stored(&t);
        t.begin_snapshot(0);
        let mut image = Image::new();
        assert!(!step(&mut t, 2, &mut image));
        // a was emitted; its slot, behind the cursor, goes to new key e, which
        // the walk never visits; c's slot (ahead) then goes to a again, which
        // was emitted already and must not be emitted twice.
        let a = t.index_of(hash_key(b"a"), b"a").expect("a");
        let c = t.index_of(hash_key(b"c"), b"c").expect("c");
        assert!(t.remove(b"a", 0).is_some());
        t.insert(b"e", s("e1"), 0, 0);
        assert_eq!(t.index_of(hash_key(b"e"), b"e"), Some(a));
        assert!(t.remove(b"c", 0).is_some());
        t.insert(b"a", s("a1"), 0, 0);
        assert_eq!(t.index_of(hash_key(b"a"), b"a"), Some(c));
        finish(&mut t, &mut image);
        assert_eq!(image, want);
    }

    #[test]
    fn emptied_slab_restarts_below_the_cursor_and_grows_past_it() {
        let mut t = table(&["a", "b", "c"]);
        let want = stored(&t);
        t.begin_snapshot(0);
        let mut image = Image::new();
        assert!(!step(&mut t, 1, &mut image));
        for k in ["a", "b", "c"] {
            assert!(t.remove(k.as_bytes(), 0).is_some());
        }
        assert!(t.is_empty());
        for i in 0..20 {
            t.insert(format!("n{i}").as_bytes(), s("new"), 0, 0);
        }
        t.insert(b"b", s("b1"), 0, 0);
        finish(&mut t, &mut image);
        assert_eq!(image, want);
    }

    #[test]
    fn keys_added_past_the_flip_end_cost_nothing_and_are_not_emitted() {
        let mut t = table(&["a", "b"]);
        let want = stored(&t);
        t.begin_snapshot(0);
        for i in 0..100 {
            t.insert(format!("n{i}").as_bytes(), s("new"), 0, 0);
        }
        assert_eq!(t.snapshot_side_bytes(), 0);
        let mut image = Image::new();
        assert!(step(&mut t, 2, &mut image));
        assert_eq!(image, want);
    }

    #[test]
    fn in_place_change_and_expiry_change_keep_the_flip_version() {
        let mut t = table(&["a", "b", "c"]);
        t.insert(b"v", s("v0"), 1_000, 0);
        let want = stored(&t);
        t.begin_snapshot(0);
        let mut image = Image::new();
        if let Some(e) = t.get_mut(b"c", 0) {
            e.value = s("changed");
        }
        assert!(t.set_expire(b"a", 77, 0));
        assert!(t.set_expire(b"v", 0, 0));
        // Reading does not copy.
        let before = t.snapshot_side_bytes();
        assert!(t.get(b"b", 0).is_some());
        assert!(t.peek(b"b", 0).is_some());
        assert_eq!(t.snapshot_side_bytes(), before);
        finish(&mut t, &mut image);
        assert_eq!(image, want);
    }

    #[test]
    fn lazy_and_active_expiry_keep_the_flip_version() {
        let mut t = table(&["a"]);
        t.insert(b"x", s("x0"), 10, 0);
        t.insert(b"y", s("y0"), 10, 0);
        let want = stored(&t);
        t.begin_snapshot(0);
        assert!(t.get(b"x", 10).is_none());
        let mut out = Vec::new();
        assert_eq!(t.expire_due(10, 10, &mut out), 1);
        assert_eq!(t.len(), 1);
        let mut image = Image::new();
        finish(&mut t, &mut image);
        assert_eq!(image, want);
    }

    #[test]
    fn clear_moves_the_old_entries_to_the_snapshot() {
        let mut t = table(&["a", "b", "c", "d", "e"]);
        let want = stored(&t);
        t.begin_snapshot(0);
        let mut image = Image::new();
        assert!(!step(&mut t, 2, &mut image));
        assert!(t.remove(b"d", 0).is_some());
        assert_eq!(t.clear(), 4);
        assert!(t.is_empty());
        assert!(t.snapshot_side_bytes() > 0);
        // Writes after the clear owe nothing: no side copy is made.
        let before = t.snapshot_side_bytes();
        t.insert(b"a", s("a1"), 0, 0);
        t.insert(b"z", s("z1"), 0, 0);
        assert!(t.remove(b"a", 0).is_some());
        assert_eq!(t.snapshot_side_bytes(), before);
        assert_eq!(t.clear(), 1);
        t.insert(b"c", s("c1"), 0, 0);
        finish(&mut t, &mut image);
        assert_eq!(image, want);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn swapdb_moves_the_snapshot_with_its_table() {
        let mut shard = Shard {
            touched: 0,
            dbs: (0..3).map(|_| Table::default()).collect(),
        };
        shard.db(0).insert(b"k", s("zero"), 0, 0);
        shard.db(1).insert(b"k", s("one"), 0, 0);
        let want0 = stored(shard.db_ref(0));
        for db in 0..3 {
            shard.db(db).begin_snapshot(db);
        }
        shard.swap_dbs(0, 1);
        assert_eq!(shard.db_ref(1).snapshot_db(), Some(0));
        shard.db(1).insert(b"k", s("changed"), 0, 0);
        let mut image = Image::new();
        let t = shard.snapshot_table(0).expect("db 0's snapshot");
        finish(t, &mut image);
        assert_eq!(image, want0);
        assert!(shard.snapshot_table(0).is_none());
    }

    #[test]
    fn abort_forgets_the_side_copies() {
        let mut t = table(&["a", "b"]);
        t.begin_snapshot(0);
        assert!(t.remove(b"a", 0).is_some());
        assert!(t.snapshot_side_bytes() > 0);
        t.abort_snapshot();
        assert_eq!(t.snapshot_db(), None);
        assert_eq!(t.snapshot_side_bytes(), 0);
        assert!(t.snapshot_step(1, &mut |_, _, _| panic!("aborted")));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(usize, u8, u8, u64),
        Modify(usize, u8, u8),
        Remove(usize, u8),
        Rename(usize, u8, u8),
        Move(usize, u8),
        Expire(usize, u8, u64),
        Get(usize, u8),
        ExpireDue(usize, usize),
        Clear(usize),
        Swap,
        Tick(u64),
        Step(usize, usize),
    }

    const KEYS: u8 = 24;

    fn op() -> impl Strategy<Value = Op> {
        let db = 0usize..2;
        let key = 0..KEYS;
        prop_oneof![
            6 => (db.clone(), key.clone(), any::<u8>(), 0u64..30).prop_map(|(d, k, v, e)| Op::Insert(d, k, v, e)),
            3 => (db.clone(), key.clone(), any::<u8>()).prop_map(|(d, k, v)| Op::Modify(d, k, v)),
            4 => (db.clone(), key.clone()).prop_map(|(d, k)| Op::Remove(d, k)),
            2 => (db.clone(), key.clone(), key.clone()).prop_map(|(d, k, k2)| Op::Rename(d, k, k2)),
            2 => (db.clone(), key.clone()).prop_map(|(d, k)| Op::Move(d, k)),
            2 => (db.clone(), key.clone(), 0u64..30).prop_map(|(d, k, e)| Op::Expire(d, k, e)),
            2 => (db.clone(), key.clone()).prop_map(|(d, k)| Op::Get(d, k)),
            1 => (db.clone(), 1usize..5).prop_map(|(d, n)| Op::ExpireDue(d, n)),
            1 => db.clone().prop_map(Op::Clear),
            1 => Just(Op::Swap),
            2 => (0u64..4).prop_map(Op::Tick),
            5 => (db, 0usize..6).prop_map(|(d, b)| Op::Step(d, b)),
        ]
    }

    /// The live view a model of (value, deadline) per key gives at `now`.
    fn live(model: &BTreeMap<Vec<u8>, (Value, u64)>, now: u64) -> Image {
        model
            .iter()
            .filter(|(_, (_, at))| *at == 0 || *at > now)
            .map(|(k, (v, at))| (k.clone(), (v.clone(), expire_at(*at))))
            .collect()
    }

    fn live_table(t: &Table, now: u64) -> Image {
        t.iter_live(now)
            .map(|e| {
                let at = t.deadlines.of(e);
                (e.key().to_vec(), (e.value.clone(), expire_at(at)))
            })
            .collect()
    }

    proptest! {
        /// Flip two databases of a shard, then interleave every kind of write
        /// with snapshot steps: each snapshot yields exactly its table as it
        /// was at the flip (each key once, with its deadline), and the live
        /// tables match a model that saw only the writes.
        #[test]
        fn snapshot_yields_the_image_at_the_flip(
            setup in proptest::collection::vec((0usize..2, 0..KEYS, any::<u8>(), 0u64..30, any::<bool>()), 0..60),
            ops in proptest::collection::vec(op(), 0..150),
        ) {
            let mut shard = Shard::new(2);
            let mut model: [BTreeMap<Vec<u8>, (Value, u64)>; 2] = Default::default();
            let mut now = 5u64;
            // Build tables with holes in their slabs (deleted keys), some
            // deadlines, some of them already passed.
            for (db, k, v, e, del) in setup {
                let key = vec![k];
                if del {
                    shard.db(db).remove(&key, 0);
                    model[db].remove(&key);
                } else {
                    let at = if e == 0 { 0 } else { e };
                    shard.db(db).insert(&key, Value::str(&[v]), at, 0);
                    model[db].insert(key, (Value::str(&[v]), at));
                }
            }
            let want = [stored(shard.db_ref(0)), stored(shard.db_ref(1))];
            for db in 0..2 {
                shard.db(db).begin_snapshot(db);
            }
            let mut images = [Image::new(), Image::new()];
            let mut done = [false, false];
            for op in ops {
                match op {
                    Op::Insert(db, k, v, e) => {
                        let at = if e == 0 { 0 } else { now + e };
                        shard.db(db).insert(&[k], Value::str(&[v]), at, now);
                        model[db].insert(vec![k], (Value::str(&[v]), at));
                    }
                    Op::Modify(db, k, v) => {
                        if let Some(e) = shard.db(db).get_mut(&[k], now) {
                            e.value = Value::str(&[v, v]);
                            if let Some(m) = model[db].get_mut(&vec![k]) {
                                m.0 = Value::str(&[v, v]);
                            }
                        }
                    }
                    Op::Remove(db, k) => {
                        shard.db(db).remove(&[k], now);
                        model[db].remove(&vec![k]);
                    }
                    Op::Rename(db, k, k2) => {
                        if let Some(d) = shard.db(db).remove(&[k], now) {
                            shard.db(db).put_entry_as(d, &[k2], now);
                            if let Some(m) = model[db].remove(&vec![k]) {
                                model[db].insert(vec![k2], m);
                            }
                        }
                    }
                    Op::Move(db, k) => {
                        if let Some(d) = shard.db(db).remove(&[k], now) {
                            shard.db(1 - db).put_entry(d, now);
                            if let Some(m) = model[db].remove(&vec![k]) {
                                model[1 - db].insert(vec![k], m);
                            }
                        }
                    }
                    Op::Expire(db, k, e) => {
                        let at = if e == 0 { 0 } else { now + e };
                        if shard.db(db).set_expire(&[k], at, now) {
                            if let Some(m) = model[db].get_mut(&vec![k]) {
                                m.1 = at;
                            }
                        }
                    }
                    Op::Get(db, k) => {
                        let got = shard.db(db).get(&[k], now).map(|e| e.value.clone());
                        let want = live(&model[db], now).get(&vec![k]).map(|(v, _)| v.clone());
                        prop_assert_eq!(got, want);
                    }
                    Op::ExpireDue(db, n) => {
                        let mut out = Vec::new();
                        shard.db(db).expire_due(now, n, &mut out);
                    }
                    Op::Clear(db) => {
                        shard.db(db).clear();
                        model[db].clear();
                    }
                    Op::Swap => {
                        shard.swap_dbs(0, 1);
                        model.swap(0, 1);
                    }
                    Op::Tick(d) => now += d,
                    Op::Step(db, budget) => {
                        if !done[db] {
                            let t = shard.snapshot_table(db).expect("unfinished snapshot");
                            done[db] = step(t, budget, &mut images[db]);
                        }
                    }
                }
                for m in &mut model {
                    m.retain(|_, (_, at)| *at == 0 || *at > now);
                }
            }
            for (db, image) in images.iter_mut().enumerate() {
                if !done[db] {
                    let t = shard.snapshot_table(db).expect("unfinished snapshot");
                    finish(t, image);
                }
                prop_assert!(shard.snapshot_table(db).is_none());
            }
            prop_assert_eq!(&images, &want);
            for (db, m) in model.iter().enumerate() {
                prop_assert_eq!(live_table(shard.db_ref(db), now), live(m, now));
            }
        }
    }
}
