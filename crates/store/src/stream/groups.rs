//! Consumer groups of a stream: each group's last delivered id, its pending
//! entries list (PEL) and its consumers.
//!
//! Fields are public so that loaders (RDB, RESTORE) can rebuild a group
//! exactly as it was written; the operations the commands need live here too.

use std::collections::{BTreeMap, BTreeSet};

use super::id::StreamId;

/// A stream's consumer groups, by name in byte order (the order XINFO GROUPS lists).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Groups {
    pub groups: BTreeMap<Vec<u8>, Group>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Group {
    /// The last id delivered to any consumer of the group.
    pub last_id: StreamId,
    /// How many entries the group has read (Redis 7's `entries-read`); `None` when unknown.
    pub entries_read: Option<u64>,
    /// Delivered but unacknowledged entries, in id order.
    pub pel: BTreeMap<StreamId, Pending>,
    pub consumers: BTreeMap<Vec<u8>, Consumer>,
}

/// One entry of a group's PEL.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    /// Name of the consumer that owns the entry.
    pub consumer: Vec<u8>,
    /// Unix time in milliseconds of the last delivery.
    pub delivery_time: i64,
    pub delivery_count: u64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Consumer {
    /// Unix time in milliseconds of the consumer's last attempted interaction.
    pub seen_time: i64,
    /// Unix time in milliseconds of the consumer's last successful interaction.
    pub active_time: i64,
    /// The ids of the group's PEL that this consumer owns.
    pub pending: BTreeSet<StreamId>,
}

/// What the group counters need to know about their stream: Redis 7's
/// `entries-read` and `lag` are computed from these.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamCounters {
    /// Entries in the stream now.
    pub length: u64,
    /// The first entry's id (`recorded-first-entry-id`), `0-0` when empty.
    pub first_id: StreamId,
    /// The last id ever generated.
    pub last_id: StreamId,
    /// The largest id ever deleted, `0-0` when none.
    pub max_deleted_id: StreamId,
    /// How many entries were ever added.
    pub entries_added: u64,
}

impl StreamCounters {
    /// Whether a deleted entry may lie at or after `from`, so that counting
    /// entries by their position is no longer exact.
    pub fn has_tombstones_from(&self, from: StreamId) -> bool {
        if self.length == 0 || self.max_deleted_id == StreamId::MIN {
            return false;
        }
        if self.first_id > self.max_deleted_id {
            return false;
        }
        from <= self.max_deleted_id
    }

    /// How many entries were added up to and including `id`, where that
    /// can be told from the counters alone; `None` where it cannot.
    pub fn entries_up_to(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        // An empty stream: every id up to the last one counts them all.
        if self.length == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return Some(self.entries_added),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
        let no_fragmentation =
            self.max_deleted_id == StreamId::MIN || self.max_deleted_id < self.first_id;
        if no_fragmentation {
            let before_first = self.entries_added.saturating_sub(self.length);
            match id.cmp(&self.first_id) {
                std::cmp::Ordering::Less => return Some(before_first),
                std::cmp::Ordering::Equal => return Some(before_first + 1),
                std::cmp::Ordering::Greater => {}
            }
        }
        None
    }
}

/// How XCLAIM stamps an entry it claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimStamp {
    /// The new delivery time (from IDLE or TIME, or now).
    pub delivery_time: i64,
    /// RETRYCOUNT: the new delivery count; `None` counts one more delivery
    /// (or leaves the count alone with JUSTID).
    pub retry_count: Option<u64>,
    pub justid: bool,
}

/// What happened to one id handed to [`Group::claim`].
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    /// The entry now belongs to the claiming consumer.
    Claimed,
    /// The stream no longer holds the entry: its PEL entry was dropped (the
    /// entry as it was is returned, for logging).
    Deleted(Pending),
    /// Not pending (and not forced), or not idle long enough.
    Skipped,
}

/// One step of an XAUTOCLAIM scan, in PEL order.
#[derive(Clone, Debug, PartialEq)]
pub enum AutoClaimed {
    Claimed(StreamId),
    /// The entry was deleted from the stream; its PEL entry was dropped.
    Deleted(StreamId, Pending),
}

/// The outcome of an XAUTOCLAIM scan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AutoClaim {
    pub steps: Vec<AutoClaimed>,
    /// Where the next scan starts; `0-0` once the PEL was walked to its end.
    pub next: StreamId,
    /// Whether the claiming consumer was created by this scan.
    pub created_consumer: bool,
}

/// The XPENDING summary: count, smallest and largest id, and per consumer
/// (in name order) how many entries it owns, consumers owning none left out.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingSummary<'a> {
    pub count: usize,
    pub bounds: Option<(StreamId, StreamId)>,
    pub consumers: Vec<(&'a [u8], usize)>,
}

impl Groups {
    pub fn get(&self, name: &[u8]) -> Option<&Group> {
        self.groups.get(name)
    }

    pub fn get_mut(&mut self, name: &[u8]) -> Option<&mut Group> {
        self.groups.get_mut(name)
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// XGROUP CREATE: `false` when a group of that name exists already.
    pub fn create(&mut self, name: &[u8], last_id: StreamId, entries_read: Option<u64>) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        self.groups
            .insert(name.to_vec(), Group::new(last_id, entries_read));
        true
    }

    /// XGROUP DESTROY: whether the group existed.
    pub fn destroy(&mut self, name: &[u8]) -> bool {
        self.groups.remove(name).is_some()
    }

    /// Heap bytes held by the groups, for MEMORY USAGE and eviction.
    pub fn heap_bytes(&self) -> usize {
        self.groups
            .iter()
            .map(|(name, g)| {
                btree_entry_bytes(std::mem::size_of::<(Vec<u8>, Group)>())
                    + alloc_bytes(name.capacity())
                    + g.heap_bytes()
            })
            .sum()
    }
}

/// What one entry of `kv` bytes (key and value) costs a B-tree: its share
/// of a node. Nodes hold up to 11 entries and, filled in order as PELs and
/// streams are, split to about 6.
fn btree_entry_bytes(kv: usize) -> usize {
    kv * 11 / 6 + 2
}

/// An allocation of `n` bytes, rounded to the allocator's smallest classes.
fn alloc_bytes(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        n.next_multiple_of(16)
    }
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: Option<u64>) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// Heap bytes of the PEL and the consumers (each PEL entry holds its
    /// owner's name, and its id again in the owner's set).
    fn heap_bytes(&self) -> usize {
        let pel_entry = btree_entry_bytes(std::mem::size_of::<(StreamId, Pending)>());
        let pel = self
            .pel
            .values()
            .map(|p| pel_entry + alloc_bytes(p.consumer.capacity()));
        let owned = btree_entry_bytes(std::mem::size_of::<StreamId>());
        let consumers = self.consumers.iter().map(|(name, c)| {
            btree_entry_bytes(std::mem::size_of::<(Vec<u8>, Consumer)>())
                + alloc_bytes(name.capacity())
                + c.pending.len() * owned
        });
        pel.sum::<usize>() + consumers.sum::<usize>()
    }

    /// XGROUP SETID.
    pub fn set_id(&mut self, last_id: StreamId, entries_read: Option<u64>) {
        self.last_id = last_id;
        self.entries_read = entries_read;
    }

    /// XGROUP CREATECONSUMER: `false` when the consumer exists already.
    pub fn create_consumer(&mut self, name: &[u8], now_ms: i64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(
            name.to_vec(),
            Consumer {
                seen_time: now_ms,
                active_time: -1,
                pending: BTreeSet::new(),
            },
        );
        true
    }

    /// The consumer `name` for an interaction at `now_ms`: its seen time is
    /// refreshed, and it is created when missing (then `true`).
    pub fn touch_consumer(&mut self, name: &[u8], now_ms: i64) -> bool {
        match self.consumers.get_mut(name) {
            Some(c) => {
                c.seen_time = now_ms;
                false
            }
            None => self.create_consumer(name, now_ms),
        }
    }

    /// XGROUP DELCONSUMER: how many entries it still owned (they leave the
    /// PEL with it), or `None` when there is no such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let consumer = self.consumers.remove(name)?;
        for id in &consumer.pending {
            self.pel.remove(id);
        }
        Some(consumer.pending.len())
    }

    /// A new entry `id` read with `>`: the group's last id moves to it and its
    /// read counter follows as Redis 7 keeps it. Returns whether the group
    /// moved.
    pub fn advance(&mut self, id: StreamId, stream: &StreamCounters) -> bool {
        if id <= self.last_id {
            return false;
        }
        match self.entries_read {
            Some(n) if !stream.has_tombstones_from(id) => {
                self.entries_read = Some(n.saturating_add(1))
            }
            _ if stream.entries_added > 0 => self.entries_read = stream.entries_up_to(id),
            _ => {}
        }
        self.last_id = id;
        true
    }

    /// A new entry `id` delivered to `consumer` (which must exist): a fresh
    /// PEL entry, or one another consumer held reassigned (possible after
    /// XGROUP SETID moved the group back), with one delivery.
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now_ms: i64) {
        if let Some(old) = self.pel.get(&id) {
            if old.consumer != consumer {
                if let Some(c) = self.consumers.get_mut(&old.consumer) {
                    c.pending.remove(&id);
                }
            }
        }
        self.pel.insert(
            id,
            Pending {
                consumer: consumer.to_vec(),
                delivery_time: now_ms,
                delivery_count: 1,
            },
        );
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pending.insert(id);
            c.active_time = now_ms;
        }
    }

    /// An entry of a consumer's history delivered again: one more delivery,
    /// now.
    pub fn redeliver(&mut self, id: StreamId, now_ms: i64) {
        if let Some(p) = self.pel.get_mut(&id) {
            p.delivery_time = now_ms;
            p.delivery_count += 1;
        }
    }

    /// The ids `consumer` owns from `start` on, at most `count` (0: all).
    pub fn consumer_pending_from(
        &self,
        consumer: &[u8],
        start: StreamId,
        count: usize,
    ) -> Vec<StreamId> {
        let Some(c) = self.consumers.get(consumer) else {
            return Vec::new();
        };
        let it = c.pending.range(start..).copied();
        if count == 0 {
            it.collect()
        } else {
            it.take(count).collect()
        }
    }

    /// Drop `id` from the PEL (an XACK, or an entry found deleted): the entry
    /// as it was, or `None` when it was not pending.
    pub fn remove_pending(&mut self, id: StreamId) -> Option<Pending> {
        let p = self.pel.remove(&id)?;
        if let Some(c) = self.consumers.get_mut(&p.consumer) {
            c.pending.remove(&id);
        }
        Some(p)
    }

    /// XACK of one id: whether it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        self.remove_pending(id).is_some()
    }

    /// Hand the PEL entry `id` to `consumer`, creating the consumer when
    /// missing (then `true`).
    fn transfer(&mut self, id: StreamId, consumer: &[u8], now_ms: i64, stamp: ClaimStamp) -> bool {
        let created = self.touch_consumer(consumer, now_ms);
        let Some(p) = self.pel.get_mut(&id) else {
            return created;
        };
        if p.consumer != consumer {
            if let Some(old) = self.consumers.get_mut(&p.consumer) {
                old.pending.remove(&id);
            }
            p.consumer = consumer.to_vec();
        }
        p.delivery_time = stamp.delivery_time;
        match stamp.retry_count {
            Some(n) => p.delivery_count = n,
            None if !stamp.justid => p.delivery_count += 1,
            None => {}
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pending.insert(id);
            c.active_time = now_ms;
        }
        created
    }

    /// XCLAIM of one id. `exists` says whether the stream still holds the
    /// entry; `force` creates a PEL entry for an entry not pending;
    /// `min_idle_ms` skips entries delivered more recently. The second value
    /// is whether `consumer` was created.
    #[allow(clippy::too_many_arguments)]
    pub fn claim(
        &mut self,
        id: StreamId,
        consumer: &[u8],
        exists: bool,
        force: bool,
        min_idle_ms: i64,
        stamp: ClaimStamp,
        now_ms: i64,
    ) -> (Claim, bool) {
        if !exists {
            return match self.remove_pending(id) {
                Some(p) => (Claim::Deleted(p), false),
                None => (Claim::Skipped, false),
            };
        }
        match self.pel.get(&id) {
            None if !force => return (Claim::Skipped, false),
            None => {
                // A forced entry starts as one delivery with no owner yet, so
                // the idle test does not apply to it.
                self.pel.insert(
                    id,
                    Pending {
                        consumer: consumer.to_vec(),
                        delivery_time: now_ms,
                        delivery_count: 1,
                    },
                );
            }
            Some(p) => {
                if min_idle_ms > 0 && now_ms.saturating_sub(p.delivery_time) < min_idle_ms {
                    return (Claim::Skipped, false);
                }
            }
        }
        let created = self.transfer(id, consumer, now_ms, stamp);
        (Claim::Claimed, created)
    }

    /// XAUTOCLAIM: walk the PEL from `start`, claiming for `consumer` the
    /// entries idle at least `min_idle_ms`, until `count` entries were
    /// claimed or found deleted, or `count * 10` entries were looked at.
    #[allow(clippy::too_many_arguments)]
    pub fn autoclaim(
        &mut self,
        consumer: &[u8],
        start: StreamId,
        count: usize,
        min_idle_ms: i64,
        justid: bool,
        now_ms: i64,
        mut exists: impl FnMut(StreamId) -> bool,
    ) -> AutoClaim {
        let mut out = AutoClaim::default();
        let mut attempts = count.saturating_mul(10);
        let mut left = count;
        let mut cursor = Some(start);
        let stamp = ClaimStamp {
            delivery_time: now_ms,
            retry_count: None,
            justid,
        };
        while attempts > 0 && left > 0 {
            attempts -= 1;
            let Some(from) = cursor else { break };
            let Some((&id, p)) = self.pel.range(from..).next() else {
                cursor = None;
                break;
            };
            cursor = id.next();
            if !exists(id) {
                if let Some(p) = self.remove_pending(id) {
                    out.steps.push(AutoClaimed::Deleted(id, p));
                }
                left -= 1;
                continue;
            }
            if min_idle_ms > 0 && now_ms.saturating_sub(p.delivery_time) < min_idle_ms {
                continue;
            }
            if self.transfer(id, consumer, now_ms, stamp) {
                out.created_consumer = true;
            }
            out.steps.push(AutoClaimed::Claimed(id));
            left -= 1;
        }
        out.next = cursor
            .and_then(|from| self.pel.range(from..).next().map(|(&id, _)| id))
            .unwrap_or(StreamId::MIN);
        out
    }

    /// XPENDING without a range.
    pub fn pending_summary(&self) -> PendingSummary<'_> {
        let bounds = match (self.pel.keys().next(), self.pel.keys().next_back()) {
            (Some(&lo), Some(&hi)) => Some((lo, hi)),
            _ => None,
        };
        PendingSummary {
            count: self.pel.len(),
            bounds,
            consumers: self
                .consumers
                .iter()
                .filter(|(_, c)| !c.pending.is_empty())
                .map(|(name, c)| (name.as_slice(), c.pending.len()))
                .collect(),
        }
    }

    /// XPENDING with a range: the PEL entries (of `consumer` only, when
    /// given; none when it does not exist) between `start` and `end`
    /// inclusive, idle at least `min_idle_ms`, at most `count`.
    pub fn pending_range(
        &self,
        start: StreamId,
        end: StreamId,
        count: usize,
        min_idle_ms: i64,
        consumer: Option<&[u8]>,
        now_ms: i64,
    ) -> Vec<(StreamId, &Pending)> {
        if start > end || count == 0 {
            return Vec::new();
        }
        let idle_enough =
            |p: &Pending| min_idle_ms == 0 || now_ms.saturating_sub(p.delivery_time) >= min_idle_ms;
        match consumer {
            None => self
                .pel
                .range(start..=end)
                .filter(|(_, p)| idle_enough(p))
                .take(count)
                .map(|(&id, p)| (id, p))
                .collect(),
            Some(name) => {
                let Some(c) = self.consumers.get(name) else {
                    return Vec::new();
                };
                c.pending
                    .range(start..=end)
                    .filter_map(|id| self.pel.get(id).map(|p| (*id, p)))
                    .filter(|(_, p)| idle_enough(p))
                    .take(count)
                    .collect()
            }
        }
    }

    /// XINFO GROUPS' `lag`: entries added to the stream that the group has
    /// not read yet, where that can be told; `None` otherwise. Negative when
    /// XGROUP SETID claimed more reads than there were entries, as in Redis.
    pub fn lag(&self, stream: &StreamCounters) -> Option<i64> {
        let added = i64::try_from(stream.entries_added).unwrap_or(i64::MAX);
        let lag = |read: u64| added.wrapping_sub(i64::try_from(read).unwrap_or(i64::MAX));
        if stream.entries_added == 0 {
            return Some(0);
        }
        if let Some(read) = self.entries_read {
            if !stream.has_tombstones_from(self.last_id) {
                return Some(lag(read));
            }
        }
        stream.entries_up_to(self.last_id).map(lag)
    }

    /// Whether the PEL and the consumers' sets agree: every PEL entry is in
    /// its owner's set and nowhere else, and every consumer's id is in the
    /// PEL with that owner. Loaders check this before accepting groups.
    pub fn is_consistent(&self) -> bool {
        let owned: usize = self.consumers.values().map(|c| c.pending.len()).sum();
        owned == self.pel.len()
            && self.consumers.iter().all(|(name, c)| {
                c.pending
                    .iter()
                    .all(|id| self.pel.get(id).is_some_and(|p| &p.consumer == name))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn id(n: u64) -> StreamId {
        StreamId::new(n, 0)
    }

    const PLAIN: ClaimStamp = ClaimStamp {
        delivery_time: 50,
        retry_count: None,
        justid: false,
    };

    fn group_with(deliveries: &[(u64, &[u8])]) -> Group {
        let mut g = Group::new(StreamId::MIN, Some(0));
        for &(n, c) in deliveries {
            g.touch_consumer(c, 10);
            g.deliver(id(n), c, 10);
        }
        g
    }

    #[test]
    fn deliver_ack_and_delete_consumer_keep_both_views() {
        let mut g = group_with(&[(1, b"a"), (2, b"a"), (3, b"b")]);
        assert!(g.is_consistent());
        assert!(g.ack(id(2)));
        assert!(!g.ack(id(2)));
        assert_eq!(g.consumers[&b"a".to_vec()].pending.len(), 1);
        // Redelivering a pending id to another consumer moves it.
        g.deliver(id(1), b"b", 20);
        assert_eq!(g.pel[&id(1)].consumer, b"b");
        assert_eq!(g.pel[&id(1)].delivery_count, 1);
        assert!(g.consumers[&b"a".to_vec()].pending.is_empty());
        assert_eq!(g.delete_consumer(b"b"), Some(2));
        assert_eq!(g.delete_consumer(b"b"), None);
        assert!(g.pel.is_empty());
        assert!(g.is_consistent());
    }

    #[test]
    fn claim_honours_idle_force_retrycount_and_justid() {
        let mut g = group_with(&[(1, b"a")]);
        // Not idle long enough: skipped, and no consumer is created.
        assert_eq!(
            g.claim(id(1), b"b", true, false, 100, PLAIN, 50),
            (Claim::Skipped, false)
        );
        assert!(!g.consumers.contains_key(b"b".as_slice()));
        assert_eq!(
            g.claim(id(1), b"b", true, false, 30, PLAIN, 50),
            (Claim::Claimed, true)
        );
        assert_eq!(g.pel[&id(1)].delivery_count, 2);
        assert_eq!(g.pel[&id(1)].delivery_time, 50);
        let justid = ClaimStamp {
            justid: true,
            ..PLAIN
        };
        g.claim(id(1), b"a", true, false, 0, justid, 60);
        assert_eq!(g.pel[&id(1)].delivery_count, 2);
        let retry = ClaimStamp {
            retry_count: Some(9),
            ..PLAIN
        };
        g.claim(id(1), b"a", true, false, 0, retry, 60);
        assert_eq!(g.pel[&id(1)].delivery_count, 9);
        // Not pending: only FORCE creates it, counting the delivery twice as
        // Redis does (created with one, then claimed).
        assert_eq!(
            g.claim(id(5), b"a", true, false, 0, PLAIN, 60).0,
            Claim::Skipped
        );
        assert_eq!(
            g.claim(id(5), b"a", true, true, 0, PLAIN, 60).0,
            Claim::Claimed
        );
        assert_eq!(g.pel[&id(5)].delivery_count, 2);
        // Deleted from the stream: dropped from the PEL.
        assert!(matches!(
            g.claim(id(5), b"b", false, true, 0, PLAIN, 60).0,
            Claim::Deleted(_)
        ));
        assert!(!g.pel.contains_key(&id(5)));
        assert!(g.is_consistent());
    }

    #[test]
    fn autoclaim_counts_deleted_entries_and_returns_a_cursor() {
        let mut g = group_with(&[(1, b"a"), (2, b"a"), (3, b"a"), (4, b"a")]);
        let r = g.autoclaim(b"b", id(0), 2, 0, false, 100, |i| i != id(1));
        assert_eq!(
            r.steps,
            vec![
                AutoClaimed::Deleted(id(1), g_pending(b"a", 10, 1)),
                AutoClaimed::Claimed(id(2))
            ]
        );
        assert_eq!(r.next, id(3));
        assert!(r.created_consumer);
        let r = g.autoclaim(b"b", r.next, 5, 0, true, 100, |_| true);
        assert_eq!(r.steps.len(), 2);
        assert_eq!(r.next, StreamId::MIN);
        // JUSTID leaves the delivery count alone.
        assert_eq!(g.pel[&id(4)].delivery_count, 1);
        // Attempts are bounded by ten times COUNT.
        let mut g = group_with(&(1..=30).map(|n| (n, &b"a"[..])).collect::<Vec<_>>());
        let r = g.autoclaim(b"b", id(0), 1, 1000, false, 100, |_| true);
        assert!(r.steps.is_empty());
        assert_eq!(r.next, id(11));
        assert!(!r.created_consumer);
    }

    fn g_pending(c: &[u8], t: i64, n: u64) -> Pending {
        Pending {
            consumer: c.to_vec(),
            delivery_time: t,
            delivery_count: n,
        }
    }

    #[test]
    fn pending_summary_and_ranges() {
        let mut g = group_with(&[(1, b"a"), (2, b"b"), (3, b"a")]);
        g.create_consumer(b"idle", 0);
        let s = g.pending_summary();
        assert_eq!(s.count, 3);
        assert_eq!(s.bounds, Some((id(1), id(3))));
        assert_eq!(s.consumers, vec![(&b"a"[..], 2), (&b"b"[..], 1)]);
        let all = g.pending_range(StreamId::MIN, StreamId::MAX, 10, 0, None, 20);
        assert_eq!(all.len(), 3);
        let a = g.pending_range(id(2), StreamId::MAX, 10, 0, Some(b"a"), 20);
        assert_eq!(a.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![id(3)]);
        assert!(g
            .pending_range(StreamId::MIN, StreamId::MAX, 10, 0, Some(b"zz"), 20)
            .is_empty());
        assert!(g
            .pending_range(StreamId::MIN, StreamId::MAX, 10, 11, None, 20)
            .is_empty());
        assert_eq!(
            g.pending_range(StreamId::MIN, StreamId::MAX, 2, 10, None, 20)
                .len(),
            2
        );
    }

    #[test]
    fn entries_read_and_lag_follow_redis() {
        // Three entries added, none deleted.
        let s = StreamCounters {
            length: 3,
            first_id: id(1),
            last_id: id(3),
            max_deleted_id: StreamId::MIN,
            entries_added: 3,
        };
        let mut g = Group::new(StreamId::MIN, None);
        assert_eq!(g.lag(&s), Some(3));
        // SETID may claim more reads than entries: the lag goes negative.
        assert_eq!(Group::new(id(1), Some(7)).lag(&s), Some(-4));
        g.advance(id(1), &s);
        assert_eq!(g.entries_read, Some(1));
        g.advance(id(2), &s);
        assert_eq!((g.entries_read, g.lag(&s)), (Some(2), Some(1)));
        // An id in the middle of a fragmented stream cannot be counted.
        let frag = StreamCounters {
            length: 2,
            max_deleted_id: id(2),
            ..s
        };
        let g = Group::new(id(1), None);
        assert_eq!(g.lag(&frag), None);
        assert_eq!(Group::new(id(3), None).lag(&frag), Some(0));
        assert_eq!(frag.entries_up_to(id(9)), None);
        assert_eq!(StreamCounters::default().entries_up_to(id(9)), Some(0));
        // Emptied, even fragmented: anything up to the last id read them all.
        let empty = StreamCounters { length: 0, ..frag };
        assert_eq!(empty.entries_up_to(id(1)), Some(empty.entries_added));
        assert_eq!(empty.entries_up_to(StreamId::MAX), None);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Deliver(u8, u8),
        Ack(u8),
        Claim(u8, u8, bool, bool),
        DelConsumer(u8),
        AutoClaim(u8, u8, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..12u8, 0..4u8).prop_map(|(i, c)| Op::Deliver(i, c)),
            (0..12u8).prop_map(Op::Ack),
            (0..12u8, 0..4u8, any::<bool>(), any::<bool>())
                .prop_map(|(i, c, f, e)| Op::Claim(i, c, f, e)),
            (0..4u8).prop_map(Op::DelConsumer),
            (0..4u8, 0..12u8, 1..5u8).prop_map(|(c, s, n)| Op::AutoClaim(c, s, n)),
        ]
    }

    fn name(c: u8) -> Vec<u8> {
        vec![b'c', b'0' + c]
    }

    proptest! {
        /// The PEL and the consumers' sets stay one consistent view, equal to
        /// a plain map of id -> (owner, deliveries), under any sequence of
        /// deliveries, acks, claims, autoclaims and consumer deletions.
        #[test]
        fn pel_matches_model(ops in proptest::collection::vec(op(), 0..80)) {
            let mut g = Group::new(StreamId::MIN, Some(0));
            let mut model: HashMap<u64, (Vec<u8>, u64)> = HashMap::new();
            let mut consumers: BTreeSet<Vec<u8>> = BTreeSet::new();
            let deleted = |i: u64| i % 5 == 4;
            for op in ops {
                match op {
                    Op::Deliver(i, c) => {
                        g.touch_consumer(&name(c), 1);
                        consumers.insert(name(c));
                        g.deliver(id(i.into()), &name(c), 1);
                        model.insert(i.into(), (name(c), 1));
                    }
                    Op::Ack(i) => {
                        prop_assert_eq!(g.ack(id(i.into())), model.remove(&u64::from(i)).is_some());
                    }
                    Op::Claim(i, c, force, exists) => {
                        let i = u64::from(i);
                        let (r, _) = g.claim(id(i), &name(c), exists, force, 0, PLAIN, 2);
                        if !exists {
                            prop_assert_eq!(matches!(r, Claim::Deleted(_)), model.remove(&i).is_some());
                        } else if let Some(e) = model.get_mut(&i) {
                            prop_assert_eq!(r, Claim::Claimed);
                            *e = (name(c), e.1 + 1);
                            consumers.insert(name(c));
                        } else if force {
                            prop_assert_eq!(r, Claim::Claimed);
                            model.insert(i, (name(c), 2));
                            consumers.insert(name(c));
                        } else {
                            prop_assert_eq!(r, Claim::Skipped);
                        }
                    }
                    Op::DelConsumer(c) => {
                        let owned = model.values().filter(|(o, _)| *o == name(c)).count();
                        let expect = consumers.remove(&name(c)).then_some(owned);
                        prop_assert_eq!(g.delete_consumer(&name(c)), expect);
                        model.retain(|_, (o, _)| *o != name(c));
                    }
                    Op::AutoClaim(c, start, n) => {
                        let r = g.autoclaim(&name(c), id(start.into()), n.into(), 0, false, 3, |x| !deleted(x.ms));
                        let mut ids: Vec<u64> = model.keys().copied().filter(|&k| k >= start.into()).collect();
                        ids.sort_unstable();
                        let taken: Vec<u64> = ids.iter().copied().take(n.into()).collect();
                        let mut got = Vec::new();
                        for k in &taken {
                            if deleted(*k) {
                                model.remove(k);
                            } else {
                                let e = model.get_mut(k).expect("taken from the model");
                                *e = (name(c), e.1 + 1);
                                consumers.insert(name(c));
                            }
                            got.push(*k);
                        }
                        let steps: Vec<u64> = r.steps.iter().map(|s| match s {
                            AutoClaimed::Claimed(i) | AutoClaimed::Deleted(i, _) => i.ms,
                        }).collect();
                        prop_assert_eq!(steps, got);
                        let next = ids.get(taken.len()).map_or(StreamId::MIN, |&k| id(k));
                        prop_assert_eq!(r.next, next);
                    }
                }
                prop_assert!(g.is_consistent());
                let pel: HashMap<u64, (Vec<u8>, u64)> = g
                    .pel
                    .iter()
                    .map(|(i, p)| (i.ms, (p.consumer.clone(), p.delivery_count)))
                    .collect();
                prop_assert_eq!(&pel, &model);
                let names: BTreeSet<Vec<u8>> = g.consumers.keys().cloned().collect();
                prop_assert_eq!(&names, &consumers);
            }
        }
    }
}
