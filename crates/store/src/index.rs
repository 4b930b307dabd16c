//! The bitmap index behind the `IDX.*` commands, usable in-process as well: entities, each an id
//! with a set of (attribute, value) pairs and an optional payload, found by ANDing pairs.
//!
//! Every entity gets a `u32` slot (freed slots are reused); every distinct pair owns one Roaring
//! bitmap of the slots that carry it. A search intersects the bitmaps of its conditions, smallest
//! first, without building intermediate sets, and names hits in ascending slot order.
//!
//! Memory is the point of the layout. An entity is one allocation, `[id length][pair count and
//! payload flag][pair numbers][id][payload]`, and the id map is a table of slot numbers hashed by
//! the id stored in that allocation, so an id is kept once. A pair's attribute and value are kept
//! once, in its bitmap's record; entities refer to it by number. Removing or replacing an entity
//! clears exactly the bits it set, and a pair whose bitmap empties is dropped.
//!
//! Invariants: a pair's bitmap holds exactly the live slots whose records list that pair; every
//! live entity has at least one pair; ids and pairs are unique. Empty ids, attributes and values
//! are ordinary byte strings. Images loaded from outside go through [`BitmapIndex::from_parts`],
//! which checks all of this before building anything.

use crate::hashing::hash_key;
use crate::roaring::{intersect, Bitmap32};
use hashbrown::HashTable;
use std::fmt;

/// The most entities one index holds: slots are `u32`, and `u32::MAX` stays free as a marker.
pub const MAX_ENTITIES: usize = u32::MAX as usize - 1;
/// The most distinct (attribute, value) pairs one index holds.
pub const MAX_PAIRS: usize = u32::MAX as usize - 1;
/// The most pairs one entity may carry (its count shares a word with the payload flag).
pub const MAX_PAIRS_PER_ENTITY: usize = (1 << 31) - 1;

/// Bit of an entity record's second word saying a payload follows the id.
const HAS_PAYLOAD: u32 = 1 << 31;
/// An entity record's fixed header: the id length and the pair count word.
const RECORD_HEADER: usize = 8;

/// Why an index refused a change or an image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("ERR an entity needs at least one attribute value pair")]
    NoPairs,
    #[error("ERR too many attribute value pairs for one entity")]
    TooManyPairs,
    #[error("ERR the index is full")]
    Full,
    #[error("ERR entity too large")]
    TooLarge,
    /// A loaded image breaks an invariant; the text says which.
    #[error("ERR invalid index image: {0}")]
    Invalid(&'static str),
}

/// A search: every condition must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query<'a> {
    /// (attribute, value) pairs, all of which must hold (AND).
    pub conditions: Vec<(&'a [u8], &'a [u8])>,
    /// A pair applied only when more than one candidate remains after the conditions.
    pub default: Option<(&'a [u8], &'a [u8])>,
    /// At most this many hits.
    pub limit: Option<usize>,
}

/// One entity a search found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit<'s> {
    pub id: &'s [u8],
    pub payload: Option<&'s [u8]>,
}

/// One pair's record: its attribute and value (`[attribute length][attribute][value]`) and the
/// slots that carry it.
#[derive(Clone)]
struct Pair {
    key: Box<[u8]>,
    bits: Bitmap32,
}

impl Pair {
    fn attr_value(&self) -> (&[u8], &[u8]) {
        let attr_len = read_u32(&self.key, 0) as usize;
        let rest = self.key.get(4..).unwrap_or_default();
        rest.split_at(attr_len.min(rest.len()))
    }
}

/// An entity to build an index from (see [`BitmapIndex::from_parts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedEntity {
    /// Its slot in the image; the bitmaps of the image's pairs name entities by it.
    pub slot: u32,
    pub id: Vec<u8>,
    pub payload: Option<Vec<u8>>,
}

/// A pair to build an index from, with the image slots that carry it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedPair {
    pub attr: Vec<u8>,
    pub value: Vec<u8>,
    pub bits: Bitmap32,
}

/// A bitmap index: see the module documentation.
#[derive(Clone, Default)]
pub struct BitmapIndex {
    /// Entity records by slot; `None` for a free slot.
    slots: Vec<Option<Box<[u8]>>>,
    /// Free slots, reused last freed first.
    free_slots: Vec<u32>,
    /// Slots of live entities, hashed by the id in their record.
    ids: HashTable<u32>,
    entities: usize,
    /// Bytes of all entity records (for `heap_bytes`) and of the payloads within them.
    record_bytes: usize,
    payload_bytes: usize,
    /// Pair records by number; `None` for a free number.
    pairs: Vec<Option<Pair>>,
    free_pairs: Vec<u32>,
    /// Pair numbers, hashed by attribute and value.
    pair_map: HashTable<u32>,
    live_pairs: usize,
    pair_key_bytes: usize,
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    bytes
        .get(at..at + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, u32::from_le_bytes)
}

fn pair_hash(attr: &[u8], value: &[u8]) -> u64 {
    hash_key(attr)
        .rotate_left(29)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ hash_key(value)
}

/// An entity record's parts.
fn record_id(rec: &[u8]) -> &[u8] {
    let id_len = read_u32(rec, 0) as usize;
    let start = RECORD_HEADER + 4 * record_pair_count(rec);
    rec.get(start..start + id_len).unwrap_or_default()
}

fn record_pair_count(rec: &[u8]) -> usize {
    (read_u32(rec, 4) & !HAS_PAYLOAD) as usize
}

fn record_pairs(rec: &[u8]) -> impl Iterator<Item = u32> + '_ {
    (0..record_pair_count(rec)).map(move |i| read_u32(rec, RECORD_HEADER + 4 * i))
}

fn record_payload(rec: &[u8]) -> Option<&[u8]> {
    if read_u32(rec, 4) & HAS_PAYLOAD == 0 {
        return None;
    }
    let start = RECORD_HEADER + 4 * record_pair_count(rec) + read_u32(rec, 0) as usize;
    Some(rec.get(start..).unwrap_or_default())
}

/// Builds a record; `pairs` must be sorted, distinct and at most [`MAX_PAIRS_PER_ENTITY`].
fn make_record(id: &[u8], pairs: &[u32], payload: Option<&[u8]>) -> Result<Box<[u8]>, IndexError> {
    let id_len = u32::try_from(id.len()).map_err(|_| IndexError::TooLarge)?;
    let count = u32::try_from(pairs.len())
        .ok()
        .filter(|&c| c & HAS_PAYLOAD == 0)
        .ok_or(IndexError::TooManyPairs)?;
    let flag = if payload.is_some() { HAS_PAYLOAD } else { 0 };
    let len = RECORD_HEADER + 4 * pairs.len() + id.len() + payload.map_or(0, <[u8]>::len);
    let mut rec = Vec::with_capacity(len);
    rec.extend_from_slice(&id_len.to_le_bytes());
    rec.extend_from_slice(&(count | flag).to_le_bytes());
    for p in pairs {
        rec.extend_from_slice(&p.to_le_bytes());
    }
    rec.extend_from_slice(id);
    if let Some(p) = payload {
        rec.extend_from_slice(p);
    }
    Ok(rec.into_boxed_slice())
}

/// A live entity, as iteration and lookup yield it.
#[derive(Clone, Copy)]
pub struct EntityRef<'s> {
    index: &'s BitmapIndex,
    slot: u32,
    record: &'s [u8],
}

impl<'s> EntityRef<'s> {
    /// Its internal slot: what search order and the pairs' bitmaps refer to.
    pub fn slot(&self) -> u32 {
        self.slot
    }

    pub fn id(&self) -> &'s [u8] {
        record_id(self.record)
    }

    pub fn payload(&self) -> Option<&'s [u8]> {
        record_payload(self.record)
    }

    /// Its (attribute, value) pairs.
    pub fn pairs(&self) -> impl Iterator<Item = (&'s [u8], &'s [u8])> + 's {
        let index = self.index;
        record_pairs(self.record).filter_map(move |p| index.pair_ref(p).map(Pair::attr_value))
    }
}

impl fmt::Debug for EntityRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entity")
            .field("id", &String::from_utf8_lossy(self.id()))
            .field("pairs", &self.pairs().count())
            .field("payload", &self.payload().map(<[u8]>::len))
            .finish()
    }
}

impl fmt::Debug for BitmapIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BitmapIndex")
            .field("entities", &self.entities)
            .field("pairs", &self.live_pairs)
            .field("payload_bytes", &self.payload_bytes)
            .finish()
    }
}

impl PartialEq for BitmapIndex {
    /// Equal as sets of entities (id, pairs, payload): which slots they happen to occupy is not
    /// part of the value.
    fn eq(&self, other: &Self) -> bool {
        if self.len() != other.len() || self.pair_count() != other.pair_count() {
            return false;
        }
        self.entities().all(|e| {
            other.get(e.id()).is_some_and(|o| {
                let mut a: Vec<_> = e.pairs().collect();
                let mut b: Vec<_> = o.pairs().collect();
                a.sort_unstable();
                b.sort_unstable();
                o.payload() == e.payload() && a == b
            })
        })
    }
}

impl BitmapIndex {
    pub fn new() -> BitmapIndex {
        BitmapIndex::default()
    }

    /// Entities held.
    pub fn len(&self) -> usize {
        self.entities
    }

    pub fn is_empty(&self) -> bool {
        self.entities == 0
    }

    /// Distinct (attribute, value) pairs, i.e. bitmaps.
    pub fn pair_count(&self) -> usize {
        self.live_pairs
    }

    /// Distinct attributes among the pairs.
    pub fn attribute_count(&self) -> usize {
        let mut attrs: Vec<&[u8]> = self.pairs().map(|(a, _, _)| a).collect();
        attrs.sort_unstable();
        attrs.dedup();
        attrs.len()
    }

    /// Bytes of payload held.
    pub fn payload_bytes(&self) -> usize {
        self.payload_bytes
    }

    fn pair_ref(&self, p: u32) -> Option<&Pair> {
        self.pairs.get(p as usize).and_then(Option::as_ref)
    }

    fn record(&self, slot: u32) -> Option<&[u8]> {
        self.slots.get(slot as usize).and_then(|r| r.as_deref())
    }

    fn find_slot(&self, id: &[u8]) -> Option<u32> {
        let slots = &self.slots;
        self.ids
            .find(hash_key(id), |&s| {
                slots
                    .get(s as usize)
                    .and_then(|r| r.as_deref())
                    .is_some_and(|r| record_id(r) == id)
            })
            .copied()
    }

    fn find_pair(&self, attr: &[u8], value: &[u8]) -> Option<u32> {
        let pairs = &self.pairs;
        self.pair_map
            .find(pair_hash(attr, value), |&p| {
                pairs
                    .get(p as usize)
                    .and_then(Option::as_ref)
                    .is_some_and(|pair| pair.attr_value() == (attr, value))
            })
            .copied()
    }

    /// The bitmap of slots carrying `attr` = `value`, if any entity does.
    pub fn bitmap(&self, attr: &[u8], value: &[u8]) -> Option<&Bitmap32> {
        self.find_pair(attr, value)
            .and_then(|p| self.pair_ref(p))
            .map(|p| &p.bits)
    }

    /// The pair's number, creating an empty pair when it is new. The caller sets a bit in it
    /// at once, so no empty pair survives.
    fn intern_pair(&mut self, attr: &[u8], value: &[u8]) -> Result<u32, IndexError> {
        if let Some(p) = self.find_pair(attr, value) {
            return Ok(p);
        }
        if self.live_pairs >= MAX_PAIRS {
            return Err(IndexError::Full);
        }
        let attr_len = u32::try_from(attr.len()).map_err(|_| IndexError::TooLarge)?;
        let mut key = Vec::with_capacity(4 + attr.len() + value.len());
        key.extend_from_slice(&attr_len.to_le_bytes());
        key.extend_from_slice(attr);
        key.extend_from_slice(value);
        let pair = Pair {
            key: key.into_boxed_slice(),
            bits: Bitmap32::new(),
        };
        self.pair_key_bytes += pair.key.len();
        let p = match self.free_pairs.pop() {
            Some(p) => {
                self.pairs[p as usize] = Some(pair);
                p
            }
            None => {
                self.pairs.push(Some(pair));
                (self.pairs.len() - 1) as u32
            }
        };
        let pairs = &self.pairs;
        self.pair_map
            .insert_unique(pair_hash(attr, value), p, |&q| {
                pairs
                    .get(q as usize)
                    .and_then(Option::as_ref)
                    .map_or(0, |pair| {
                        let (a, v) = pair.attr_value();
                        pair_hash(a, v)
                    })
            });
        self.live_pairs += 1;
        Ok(p)
    }

    /// Clears `slot` from pair `p`, dropping the pair when no entity carries it any more.
    fn unset_pair(&mut self, p: u32, slot: u32) {
        let Some(pair) = self.pairs.get_mut(p as usize).and_then(Option::as_mut) else {
            return;
        };
        pair.bits.remove(slot);
        if !pair.bits.is_empty() {
            return;
        }
        let (attr, value) = pair.attr_value();
        let hash = pair_hash(attr, value);
        if let Ok(entry) = self.pair_map.find_entry(hash, |&q| q == p) {
            entry.remove();
        }
        if let Some(pair) = self.pairs[p as usize].take() {
            self.pair_key_bytes -= pair.key.len();
        }
        self.free_pairs.push(p);
        self.live_pairs -= 1;
    }

    /// Adds entity `id`, or replaces it whole (pairs and payload). Ok(true) when it is new.
    /// Repeated pairs count once; an attribute may have several values.
    pub fn add(
        &mut self,
        id: &[u8],
        pairs: &[(&[u8], &[u8])],
        payload: Option<&[u8]>,
    ) -> Result<bool, IndexError> {
        if pairs.is_empty() {
            return Err(IndexError::NoPairs);
        }
        if pairs.len() > MAX_PAIRS_PER_ENTITY {
            return Err(IndexError::TooManyPairs);
        }
        if u32::try_from(id.len()).is_err()
            || pairs.iter().any(|(a, _)| u32::try_from(a.len()).is_err())
        {
            return Err(IndexError::TooLarge);
        }
        let existing = self.find_slot(id);
        if existing.is_none() && self.entities >= MAX_ENTITIES {
            return Err(IndexError::Full);
        }
        let new_pairs = pairs.iter().filter(|(a, v)| self.find_pair(a, v).is_none());
        if self.live_pairs + new_pairs.count() > MAX_PAIRS {
            return Err(IndexError::Full);
        }
        // From here nothing fails: the checks above cover every error below.
        let mut numbers = Vec::with_capacity(pairs.len());
        for (a, v) in pairs {
            numbers.push(self.intern_pair(a, v)?);
        }
        numbers.sort_unstable();
        numbers.dedup();
        let record = make_record(id, &numbers, payload)?;
        self.record_bytes += record.len();
        self.payload_bytes += payload.map_or(0, <[u8]>::len);
        match existing {
            Some(slot) => {
                let old: Vec<u32> = self
                    .record(slot)
                    .map_or_else(Vec::new, |r| record_pairs(r).collect());
                // Set the new bits first, so a pair both old and new never empties on the way.
                for &p in &numbers {
                    if let Some(pair) = self.pairs[p as usize].as_mut() {
                        pair.bits.insert(slot);
                    }
                }
                for p in old {
                    if numbers.binary_search(&p).is_err() {
                        self.unset_pair(p, slot);
                    }
                }
                if let Some(old) = self.slots[slot as usize].take() {
                    self.forget_record(&old);
                }
                self.slots[slot as usize] = Some(record);
            }
            None => {
                let slot = match self.free_slots.pop() {
                    Some(s) => s,
                    None => {
                        self.slots.push(None);
                        (self.slots.len() - 1) as u32
                    }
                };
                for &p in &numbers {
                    if let Some(pair) = self.pairs[p as usize].as_mut() {
                        pair.bits.insert(slot);
                    }
                }
                self.slots[slot as usize] = Some(record);
                let slots = &self.slots;
                self.ids.insert_unique(hash_key(id), slot, |&s| {
                    slots
                        .get(s as usize)
                        .and_then(|r| r.as_deref())
                        .map_or(0, |r| hash_key(record_id(r)))
                });
                self.entities += 1;
            }
        }
        Ok(existing.is_none())
    }

    fn forget_record(&mut self, rec: &[u8]) {
        self.record_bytes -= rec.len();
        self.payload_bytes -= record_payload(rec).map_or(0, <[u8]>::len);
    }

    /// Removes entity `id`; false when there is none.
    pub fn remove(&mut self, id: &[u8]) -> bool {
        let hash = hash_key(id);
        let slots = &self.slots;
        let Ok(entry) = self.ids.find_entry(hash, |&s| {
            slots
                .get(s as usize)
                .and_then(|r| r.as_deref())
                .is_some_and(|r| record_id(r) == id)
        }) else {
            return false;
        };
        let (slot, _) = entry.remove();
        let Some(record) = self.slots.get_mut(slot as usize).and_then(Option::take) else {
            return false;
        };
        for p in record_pairs(&record) {
            self.unset_pair(p, slot);
        }
        self.forget_record(&record);
        self.entities -= 1;
        if self.entities == 0 {
            // Give everything back rather than keep a large empty shell.
            *self = BitmapIndex::new();
        } else {
            self.free_slots.push(slot);
        }
        true
    }

    /// The live entity `id`.
    pub fn get(&self, id: &[u8]) -> Option<EntityRef<'_>> {
        let slot = self.find_slot(id)?;
        let record = self.record(slot)?;
        Some(EntityRef {
            index: self,
            slot,
            record,
        })
    }

    /// Entities in ascending slot order (the order searches name them in).
    pub fn entities(&self) -> impl Iterator<Item = EntityRef<'_>> {
        self.slots.iter().enumerate().filter_map(move |(slot, r)| {
            r.as_deref().map(|record| EntityRef {
                index: self,
                slot: slot as u32,
                record,
            })
        })
    }

    /// Every pair as (attribute, value, slots carrying it), in no particular order.
    pub fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8], &Bitmap32)> {
        self.pairs.iter().flatten().map(|p| {
            let (a, v) = p.attr_value();
            (a, v, &p.bits)
        })
    }

    /// The entities matching `q`: those carrying every condition's pair; of several, only those
    /// also carrying the default pair when one is given; at most `limit` of them, in ascending
    /// slot order. No conditions match nothing; an unknown pair matches nothing.
    pub fn search<'s>(&'s self, q: &Query<'_>) -> Vec<Hit<'s>> {
        let limit = q.limit.unwrap_or(usize::MAX);
        if q.conditions.is_empty() || limit == 0 {
            return Vec::new();
        }
        let mut sets: Vec<&'s Bitmap32> = Vec::with_capacity(q.conditions.len());
        for (a, v) in &q.conditions {
            match self.bitmap(a, v) {
                Some(b) => sets.push(b),
                None => return Vec::new(),
            }
        }
        let mut found = intersect(&mut sets);
        let slots: Vec<u32> = match q.default {
            None => found.take(limit).collect(),
            Some((a, v)) => match (found.next(), found.next()) {
                (Some(first), Some(second)) => match self.bitmap(a, v) {
                    Some(d) => [first, second]
                        .into_iter()
                        .chain(found)
                        .filter(|s| d.contains(*s))
                        .take(limit)
                        .collect(),
                    None => Vec::new(),
                },
                (only, _) => only.into_iter().collect(),
            },
        };
        slots
            .into_iter()
            .filter_map(|s| self.record(s))
            .map(|r| Hit {
                id: record_id(r),
                payload: record_payload(r),
            })
            .collect()
    }

    /// Heap bytes owned: the slot and pair arrays, the two hash tables, every record, every
    /// pair's name and every bitmap's containers.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        // A hashbrown table entry costs its value plus one control byte.
        let table = |cap: usize| cap * (size_of::<u32>() + 1);
        let bitmaps: usize = self
            .pairs
            .iter()
            .flatten()
            .map(|p| {
                let s = p.bits.statistics();
                // Each container: its 16-bit key, its store's header, its data.
                s.n_containers as usize * 32
                    + (s.n_bytes_array_containers
                        + s.n_bytes_run_containers
                        + s.n_bytes_bitset_containers) as usize
            })
            .sum();
        self.slots.capacity() * size_of::<Option<Box<[u8]>>>()
            + self.free_slots.capacity() * size_of::<u32>()
            + table(self.ids.capacity())
            + self.record_bytes
            + self.pairs.capacity() * size_of::<Option<Pair>>()
            + self.free_pairs.capacity() * size_of::<u32>()
            + table(self.pair_map.capacity())
            + self.pair_key_bytes
            + bitmaps
    }

    /// Builds an index from an image: entities named by their image slots (strictly ascending)
    /// and pairs with the image slots carrying them. Checks that ids and pairs are distinct,
    /// every bitmap is non-empty and names only entities of the image, and every entity carries
    /// a pair. Slots are renumbered densely in the same order, so searches list hits as before.
    pub fn from_parts(
        entities: Vec<LoadedEntity>,
        pairs: Vec<LoadedPair>,
    ) -> Result<BitmapIndex, IndexError> {
        if entities.len() > MAX_ENTITIES || pairs.len() > MAX_PAIRS {
            return Err(IndexError::Full);
        }
        if entities.windows(2).any(|w| w[0].slot >= w[1].slot) {
            return Err(IndexError::Invalid("entity slots out of order"));
        }
        let n = entities.len();
        let dense = entities.last().is_none_or(|e| e.slot as usize + 1 == n);
        let rank = |s: u32| -> Option<u32> {
            if dense {
                ((s as usize) < n).then_some(s)
            } else {
                entities
                    .binary_search_by_key(&s, |e| e.slot)
                    .ok()
                    .map(|i| i as u32)
            }
        };
        let mut index = BitmapIndex::new();
        let mut per_entity: Vec<Vec<u32>> = vec![Vec::new(); n];
        for pair in pairs {
            if pair.bits.is_empty() {
                return Err(IndexError::Invalid("a pair with no entities"));
            }
            if index.find_pair(&pair.attr, &pair.value).is_some() {
                return Err(IndexError::Invalid("a pair appears twice"));
            }
            let bits = if dense {
                if pair.bits.max().is_some_and(|m| m as usize >= n) {
                    return Err(IndexError::Invalid("a pair names a missing entity"));
                }
                pair.bits
            } else {
                let mut b = Bitmap32::new();
                for s in &pair.bits {
                    let r = rank(s).ok_or(IndexError::Invalid("a pair names a missing entity"))?;
                    b.insert(r);
                }
                b
            };
            let p = index.intern_pair(&pair.attr, &pair.value)?;
            for r in &bits {
                per_entity[r as usize].push(p);
            }
            if let Some(rec) = index.pairs[p as usize].as_mut() {
                rec.bits = bits;
            }
        }
        index.slots.reserve_exact(n);
        index.ids.reserve(n, |_| 0);
        for (e, mut numbers) in entities.into_iter().zip(per_entity) {
            if numbers.is_empty() {
                return Err(IndexError::Invalid("an entity with no pairs"));
            }
            if index.find_slot(&e.id).is_some() {
                return Err(IndexError::Invalid("an entity id appears twice"));
            }
            numbers.sort_unstable();
            let record = make_record(&e.id, &numbers, e.payload.as_deref())?;
            let slot = index.slots.len() as u32;
            index.record_bytes += record.len();
            index.payload_bytes += e.payload.as_ref().map_or(0, Vec::len);
            index.slots.push(Some(record));
            let slots = &index.slots;
            index.ids.insert_unique(hash_key(&e.id), slot, |&s| {
                slots
                    .get(s as usize)
                    .and_then(|r| r.as_deref())
                    .map_or(0, |r| hash_key(record_id(r)))
            });
            index.entities += 1;
        }
        Ok(index)
    }

    /// The image [`from_parts`](Self::from_parts) rebuilds this index from.
    pub fn to_parts(&self) -> (Vec<LoadedEntity>, Vec<LoadedPair>) {
        let entities = self
            .entities()
            .map(|e| LoadedEntity {
                slot: e.slot(),
                id: e.id().to_vec(),
                payload: e.payload().map(<[u8]>::to_vec),
            })
            .collect();
        let pairs = self
            .pairs()
            .map(|(a, v, b)| LoadedPair {
                attr: a.to_vec(),
                value: v.to_vec(),
                bits: b.clone(),
            })
            .collect();
        (entities, pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn q<'a>(conditions: &[(&'a str, &'a str)]) -> Query<'a> {
        Query {
            conditions: conditions
                .iter()
                .map(|(a, v)| (a.as_bytes(), v.as_bytes()))
                .collect(),
            default: None,
            limit: None,
        }
    }

    fn ids<'s>(hits: &[Hit<'s>]) -> Vec<&'s str> {
        hits.iter()
            .map(|h| std::str::from_utf8(h.id).expect("utf8 ids in tests"))
            .collect()
    }

    fn sample() -> BitmapIndex {
        let mut idx = BitmapIndex::new();
        for (id, color, size, payload) in [
            ("a", "red", "s", Some("pa")),
            ("b", "red", "m", None),
            ("c", "blue", "m", Some("")),
            ("d", "red", "m", Some("pd")),
        ] {
            let new = idx
                .add(
                    id.as_bytes(),
                    &[(b"color", color.as_bytes()), (b"size", size.as_bytes())],
                    payload.map(str::as_bytes),
                )
                .expect("add");
            assert!(new);
        }
        idx
    }

    #[test]
    fn search_ands_conditions_in_slot_order() {
        let idx = sample();
        assert_eq!(idx.len(), 4);
        assert_eq!(idx.pair_count(), 4);
        assert_eq!(idx.attribute_count(), 2);
        assert_eq!(ids(&idx.search(&q(&[("color", "red")]))), ["a", "b", "d"]);
        assert_eq!(
            ids(&idx.search(&q(&[("color", "red"), ("size", "m")]))),
            ["b", "d"]
        );
        assert!(idx.search(&q(&[("color", "green")])).is_empty());
        assert!(idx.search(&q(&[("shape", "red")])).is_empty());
        assert!(idx.search(&q(&[])).is_empty());
        let hits = idx.search(&q(&[("size", "m")]));
        let payloads: Vec<_> = hits.iter().map(|h| h.payload).collect();
        assert_eq!(payloads, [None, Some(&b""[..]), Some(&b"pd"[..])]);
    }

    #[test]
    fn default_applies_only_to_several_candidates() {
        let idx = sample();
        let mut query = q(&[("color", "red")]);
        query.default = Some((b"size", b"m"));
        assert_eq!(ids(&idx.search(&query)), ["b", "d"]);
        // One candidate: the default is not consulted.
        let mut query = q(&[("color", "blue")]);
        query.default = Some((b"size", b"s"));
        assert_eq!(ids(&idx.search(&query)), ["c"]);
        // Several candidates, none with the default: nothing.
        let mut query = q(&[("color", "red")]);
        query.default = Some((b"size", b"xl"));
        assert!(idx.search(&query).is_empty());
        let mut query = q(&[("color", "red")]);
        query.limit = Some(2);
        assert_eq!(ids(&idx.search(&query)), ["a", "b"]);
        query.limit = Some(0);
        assert!(idx.search(&query).is_empty());
    }

    #[test]
    fn replace_and_remove_clear_exactly_their_bits() {
        let mut idx = sample();
        let new = idx
            .add(b"a", &[(b"color", b"blue"), (b"color", b"blue")], None)
            .expect("replace");
        assert!(!new);
        assert_eq!(idx.len(), 4);
        // size=s had only "a": its bitmap is gone.
        assert_eq!(idx.pair_count(), 3);
        assert!(idx.bitmap(b"size", b"s").is_none());
        assert_eq!(ids(&idx.search(&q(&[("color", "blue")]))), ["a", "c"]);
        assert_eq!(idx.get(b"a").and_then(|e| e.payload()), None);
        assert!(idx.remove(b"c"));
        assert!(!idx.remove(b"c"));
        assert_eq!(ids(&idx.search(&q(&[("color", "blue")]))), ["a"]);
        // The freed slot is reused.
        idx.add(b"e", &[(b"color", b"blue")], Some(b"x"))
            .expect("add");
        assert_eq!(idx.get(b"e").map(|e| e.slot()), Some(2));
        for id in ["a", "b", "d", "e"] {
            assert!(idx.remove(id.as_bytes()));
        }
        assert!(idx.is_empty());
        assert_eq!(idx.pair_count(), 0);
        assert_eq!(idx.heap_bytes(), 0);
    }

    #[test]
    fn refuses_an_entity_without_pairs_and_keeps_empty_strings() {
        let mut idx = BitmapIndex::new();
        assert_eq!(idx.add(b"x", &[], None), Err(IndexError::NoPairs));
        assert!(idx.is_empty());
        assert_eq!(idx.add(b"", &[(b"", b"")], Some(b"")), Ok(true));
        assert_eq!(ids(&idx.search(&q(&[("", "")]))), [""]);
        assert_eq!(idx.get(b"").and_then(|e| e.payload()), Some(&b""[..]));
    }

    #[test]
    fn parts_round_trip_and_invalid_images_are_refused() {
        let mut idx = sample();
        idx.remove(b"b");
        let (entities, pairs) = idx.to_parts();
        assert_eq!(
            entities.iter().map(|e| e.slot).collect::<Vec<_>>(),
            [0, 2, 3]
        );
        let back = BitmapIndex::from_parts(entities.clone(), pairs.clone()).expect("valid");
        assert_eq!(back, idx);
        // Renumbered densely, in the same order.
        assert_eq!(ids(&back.search(&q(&[("color", "red")]))), ["a", "d"]);
        assert_eq!(back.get(b"d").map(|e| e.slot()), Some(2));

        let bad = |e: Vec<LoadedEntity>, p: Vec<LoadedPair>| BitmapIndex::from_parts(e, p).is_err();
        let mut e = entities.clone();
        e.swap(0, 1);
        assert!(bad(e, pairs.clone()));
        let mut e = entities.clone();
        e[1].id = b"a".to_vec();
        assert!(bad(e, pairs.clone()));
        let mut p = pairs.clone();
        p[0].bits.insert(1);
        assert!(bad(entities.clone(), p));
        let mut p = pairs.clone();
        p.push(p[0].clone());
        assert!(bad(entities.clone(), p));
        let mut p = pairs.clone();
        p[0].bits.clear();
        assert!(bad(entities.clone(), p));
        let mut e = entities.clone();
        e.push(LoadedEntity {
            slot: 9,
            id: b"lonely".to_vec(),
            payload: None,
        });
        assert!(bad(e, pairs.clone()));
        assert_eq!(
            BitmapIndex::from_parts(Vec::new(), Vec::new()),
            Ok(BitmapIndex::new())
        );
    }

    #[test]
    fn compact_against_a_naive_map() {
        // The shape the price service holds: 36-byte ids, 8 pairs, ~100-byte payloads.
        struct Naive {
            _id: String,
            _attrs: Vec<(String, String)>,
            _payload: String,
        }
        let n = 20_000;
        let mut idx = BitmapIndex::new();
        let mut naive_bytes = 0usize;
        for i in 0..n {
            let id = format!("{:08x}-0000-4000-8000-{:012x}", i, i * 7);
            let attrs: Vec<(String, String)> = (0..8)
                .map(|a| {
                    (
                        format!("attr{a}"),
                        format!("v{}", (i / (a + 1)) % (3 + a * 5)),
                    )
                })
                .collect();
            let payload = format!(
                "{{\"id\":\"{id}\",\"price\":{}.99,\"currency\":\"USD\",\"n\":{i:>20}}}",
                i % 500
            );
            let pairs: Vec<(&[u8], &[u8])> = attrs
                .iter()
                .map(|(a, v)| (a.as_bytes(), v.as_bytes()))
                .collect();
            idx.add(id.as_bytes(), &pairs, Some(payload.as_bytes()))
                .expect("add");
            // A HashMap<String, Naive> entry: the key, the struct, their heap strings.
            naive_bytes += std::mem::size_of::<(String, Naive)>()
                + 2 * id.len()
                + payload.len()
                + attrs.len() * std::mem::size_of::<(String, String)>()
                + attrs.iter().map(|(a, v)| a.len() + v.len()).sum::<usize>();
        }
        let ours = idx.heap_bytes();
        assert!(
            ours > n * (36 + 100),
            "heap_bytes counts the records: {ours}"
        );
        assert!(ours * 2 < naive_bytes, "ours {ours} vs naive {naive_bytes}");
    }

    #[test]
    fn updates_are_atomic_to_readers_under_a_lock() {
        // Writers move entities between two colours and in and out of the index; readers
        // holding the read lock must always see each present entity under exactly one colour.
        let idx = std::sync::Arc::new(parking_lot::RwLock::new(BitmapIndex::new()));
        let n: u32 = 200;
        for i in 0..n {
            idx.write()
                .add(
                    format!("e{i}").as_bytes(),
                    &[(b"colour", b"red"), (b"kind", b"k")],
                    None,
                )
                .expect("add");
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..2u32)
            .map(|w| {
                let idx = idx.clone();
                std::thread::spawn(move || {
                    for round in 0..300u32 {
                        let i = (round * 7 + w * 101) % n;
                        let id = format!("e{i}");
                        let mut g = idx.write();
                        if round % 5 == 0 {
                            g.remove(id.as_bytes());
                        } else {
                            let colour: &[u8] = if round % 2 == 0 { b"red" } else { b"blue" };
                            g.add(id.as_bytes(), &[(b"colour", colour), (b"kind", b"k")], None)
                                .expect("add");
                        }
                    }
                })
            })
            .collect();
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let idx = idx.clone();
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut checks = 0u32;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) || checks == 0 {
                        let g = idx.read();
                        let find = |c: &'static [u8]| -> BTreeSet<Vec<u8>> {
                            let q = Query {
                                conditions: vec![(b"kind", b"k"), (b"colour", c)],
                                default: None,
                                limit: None,
                            };
                            g.search(&q).iter().map(|h| h.id.to_vec()).collect()
                        };
                        let (red, blue) = (find(b"red"), find(b"blue"));
                        assert!(red.is_disjoint(&blue), "an entity under both colours");
                        assert_eq!(red.len() + blue.len(), g.len(), "counts not conserved");
                        checks += 1;
                    }
                    checks
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for r in readers {
            assert!(r.join().expect("reader") > 0);
        }
    }

    /// The model: id -> (pairs, payload), in insertion-order-free form; search order is
    /// checked against the index's own slot order.
    type Model = BTreeMap<Vec<u8>, (BTreeSet<(Vec<u8>, Vec<u8>)>, Option<Vec<u8>>)>;

    #[derive(Debug, Clone)]
    enum Op {
        Add(u8, Vec<(u8, u8)>, Option<u8>),
        Remove(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u8..24, proptest::collection::vec((0u8..4, 0u8..3), 1..5), proptest::option::of(0u8..4))
                .prop_map(|(id, p, pl)| Op::Add(id, p, pl)),
            1 => (0u8..24).prop_map(Op::Remove),
        ]
    }

    fn name(prefix: &str, n: u8) -> Vec<u8> {
        format!("{prefix}{n}").into_bytes()
    }

    proptest! {
        #[test]
        fn search_matches_a_brute_force_model(
            ops in proptest::collection::vec(op(), 0..80),
            conds in proptest::collection::vec((0u8..5, 0u8..3), 0..4),
            default in proptest::option::of((0u8..5, 0u8..3)),
            limit in proptest::option::of(0usize..6),
        ) {
            let mut idx = BitmapIndex::new();
            let mut model = Model::new();
            for op in ops {
                match op {
                    Op::Add(id, pairs, payload) => {
                        let owned: Vec<(Vec<u8>, Vec<u8>)> =
                            pairs.iter().map(|&(a, v)| (name("a", a), name("v", v))).collect();
                        let refs: Vec<(&[u8], &[u8])> =
                            owned.iter().map(|(a, v)| (a.as_slice(), v.as_slice())).collect();
                        let payload = payload.map(|p| name("p", p));
                        let new = idx.add(&name("e", id), &refs, payload.as_deref()).expect("add");
                        let old = model.insert(name("e", id), (owned.into_iter().collect(), payload));
                        prop_assert_eq!(new, old.is_none());
                    }
                    Op::Remove(id) => {
                        prop_assert_eq!(idx.remove(&name("e", id)), model.remove(&name("e", id)).is_some());
                    }
                }
            }
            prop_assert_eq!(idx.len(), model.len());
            let distinct: BTreeSet<_> = model.values().flat_map(|(p, _)| p.iter().cloned()).collect();
            prop_assert_eq!(idx.pair_count(), distinct.len());
            let pl: usize = model.values().map(|(_, p)| p.as_ref().map_or(0, Vec::len)).sum();
            prop_assert_eq!(idx.payload_bytes(), pl);

            let owned: Vec<(Vec<u8>, Vec<u8>)> = conds.iter().map(|&(a, v)| (name("a", a), name("v", v))).collect();
            let dflt = default.map(|(a, v)| (name("a", a), name("v", v)));
            let query = Query {
                conditions: owned.iter().map(|(a, v)| (a.as_slice(), v.as_slice())).collect(),
                default: dflt.as_ref().map(|(a, v)| (a.as_slice(), v.as_slice())),
                limit,
            };
            // Brute force, in the index's slot order.
            let has = |id: &[u8], pair: &(Vec<u8>, Vec<u8>)| model.get(id).is_some_and(|(p, _)| p.contains(pair));
            let mut want: Vec<Vec<u8>> = if owned.is_empty() {
                Vec::new()
            } else {
                idx.entities().map(|e| e.id().to_vec()).filter(|id| owned.iter().all(|c| has(id, c))).collect()
            };
            if let Some(d) = &dflt {
                if want.len() > 1 {
                    want.retain(|id| has(id, d));
                }
            }
            want.truncate(limit.unwrap_or(usize::MAX));
            let hits = idx.search(&query);
            let got: Vec<Vec<u8>> = hits.iter().map(|h| h.id.to_vec()).collect();
            prop_assert_eq!(&got, &want);
            for h in &hits {
                prop_assert_eq!(h.payload.map(<[u8]>::to_vec), model[h.id].1.clone());
            }

            // Every entity's pairs and the image round trip.
            for e in idx.entities() {
                let pairs: BTreeSet<(Vec<u8>, Vec<u8>)> = e.pairs().map(|(a, v)| (a.to_vec(), v.to_vec())).collect();
                prop_assert_eq!(&pairs, &model[e.id()].0);
            }
            let (e, p) = idx.to_parts();
            let back = BitmapIndex::from_parts(e, p).expect("own image is valid");
            prop_assert_eq!(&back, &idx);
            prop_assert_eq!(back.search(&query).len(), hits.len());
        }
    }
}
