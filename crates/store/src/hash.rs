//! Hashes: field -> value maps. Small hashes are a `Packed` of alternating
//! fields and values (`Value::HashPacked`); past `hash-max-listpack-entries`
//! fields or a field or value longer than `hash-max-listpack-value` bytes
//! they become a `HashTable` (`Value::Hash`), and never go back, as in Redis.
//!
//! Readers go through [`HashRef`], writers through [`HashMut`], so callers
//! never match on the encoding. Every operation on the general form is O(1)
//! except iteration; a random field is an O(1) pick (HRANDFIELD), and HSCAN
//! walks the table's dense entry vector by position.
//!
//! `HashTable` itself is in `hash::table`, which knows nothing of `Value`.

pub(crate) mod table;

use crate::limits::CompactLimits;
use crate::packed::{Elem, Packed, Put};
use crate::value::Value;
use std::borrow::Cow;
pub use table::HashTable;
use table::EMPTY;

fn elem_bytes(e: Elem<'_>) -> Cow<'_, [u8]> {
    match e {
        Elem::Bytes(b) => Cow::Borrowed(b),
        other => Cow::Owned(other.to_vec()),
    }
}

/// Alternating elements of a packed hash as (field, value) pairs.
fn packed_pairs(p: &Packed) -> impl Iterator<Item = (Elem<'_>, Elem<'_>)> {
    let mut it = p.iter();
    std::iter::from_fn(move || Some((it.next()?, it.next()?)))
}

/// A field and its value, borrowed where the encoding allows.
pub type Pair<'a> = (Cow<'a, [u8]>, Cow<'a, [u8]>);

/// A hash borrowed for reading, whichever its encoding.
#[derive(Clone, Copy, Debug)]
pub enum HashRef<'a> {
    Packed(&'a Packed),
    Table(&'a HashTable),
}

impl<'a> HashRef<'a> {
    /// The hash held by `v`, or `None` when `v` is another type.
    pub fn of(v: &'a Value) -> Option<HashRef<'a>> {
        match v {
            Value::HashPacked(p) => Some(HashRef::Packed(p)),
            Value::Hash(t) => Some(HashRef::Table(t)),
            _ => None,
        }
    }

    pub fn len(self) -> usize {
        match self {
            HashRef::Packed(p) => p.len() / 2,
            HashRef::Table(t) => t.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        match self {
            HashRef::Packed(p) => p.is_empty(),
            HashRef::Table(t) => t.is_empty(),
        }
    }

    pub fn get(self, field: &[u8]) -> Option<Cow<'a, [u8]>> {
        match self {
            HashRef::Packed(p) => packed_pairs(p)
                .find(|(f, _)| f.eq_bytes(field))
                .map(|(_, v)| elem_bytes(v)),
            HashRef::Table(t) => t.get(field).map(Cow::Borrowed),
        }
    }

    pub fn contains(self, field: &[u8]) -> bool {
        match self {
            HashRef::Packed(p) => p.find(field, 0, 2).is_some(),
            HashRef::Table(t) => t.position(field).is_some(),
        }
    }

    /// Every (field, value) pair, in storage order.
    pub fn for_each(self, mut f: impl FnMut(&[u8], &[u8])) {
        match self {
            HashRef::Packed(p) => {
                for (k, v) in packed_pairs(p) {
                    f(&elem_bytes(k), &elem_bytes(v));
                }
            }
            HashRef::Table(t) => t.iter().for_each(|(k, v)| f(k, v)),
        }
    }

    /// The pair at position `i` of the storage order (random picks).
    pub fn pair_at(self, i: usize) -> Option<Pair<'a>> {
        match self {
            HashRef::Packed(p) => {
                let mut it = p.iter().skip(i.checked_mul(2)?);
                let k = it.next()?;
                let v = it.next()?;
                Some((elem_bytes(k), elem_bytes(v)))
            }
            HashRef::Table(t) => t
                .entry_at(i)
                .map(|(k, v)| (Cow::Borrowed(k), Cow::Borrowed(v))),
        }
    }

    /// One HSCAN step (see [`HashTable::scan`]). A packed hash is small, so
    /// it is returned whole with cursor 0, as Redis does for listpacks.
    pub fn scan(self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], &[u8])) -> u64 {
        match self {
            HashRef::Packed(_) => {
                self.for_each(f);
                0
            }
            HashRef::Table(t) => t.scan(cursor, count, &mut f),
        }
    }
}

/// A hash borrowed for writing. Converts itself to the general form when a
/// write crosses the compact limits.
pub struct HashMut<'a>(&'a mut Value);

impl<'a> HashMut<'a> {
    /// The hash held by `v`, or `None` when `v` is another type.
    pub fn of(v: &'a mut Value) -> Option<HashMut<'a>> {
        matches!(v, Value::HashPacked(_) | Value::Hash(_)).then_some(HashMut(v))
    }

    pub fn view(&self) -> HashRef<'_> {
        match &*self.0 {
            Value::Hash(t) => HashRef::Table(t),
            Value::HashPacked(p) => HashRef::Packed(p),
            // `of` admits only the two hash encodings.
            _ => HashRef::Table(&EMPTY),
        }
    }

    pub fn len(&self) -> usize {
        self.view().len()
    }

    pub fn is_empty(&self) -> bool {
        self.view().is_empty()
    }

    fn convert(&mut self) {
        if let Value::HashPacked(p) = &*self.0 {
            let mut t = HashTable::with_capacity(p.len() / 2 + 1);
            for (k, v) in packed_pairs(p) {
                t.insert(&elem_bytes(k), &elem_bytes(v));
            }
            *self.0 = Value::Hash(Box::new(t));
        }
    }

    /// Set `field` to `value`; true when the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: &CompactLimits) -> bool {
        if field.len() > limits.hash_value || value.len() > limits.hash_value {
            self.convert();
        }
        let added = match &mut *self.0 {
            Value::Hash(t) => return t.insert(field, value),
            Value::HashPacked(p) => match p.find(field, 0, 2) {
                Some(i) => {
                    p.splice(i + 1, 1, &[Put::Bytes(value)]);
                    false
                }
                None => {
                    p.push_back(&[Put::Bytes(field), Put::Bytes(value)]);
                    true
                }
            },
            _ => false,
        };
        if added && self.len() > limits.hash_entries {
            self.convert();
        }
        added
    }

    /// Remove `field`; true when it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut *self.0 {
            Value::Hash(t) => t.remove(field),
            Value::HashPacked(p) => match p.find(field, 0, 2) {
                Some(i) => {
                    p.splice(i, 2, &[]);
                    true
                }
                None => false,
            },
            _ => false,
        }
    }
}

/// A new, empty hash in the compact form.
pub fn new_hash() -> Value {
    Value::HashPacked(Packed::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn small_limits() -> CompactLimits {
        CompactLimits {
            hash_entries: 4,
            hash_value: 6,
            ..CompactLimits::default()
        }
    }

    fn contents(h: HashRef<'_>) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut m = BTreeMap::new();
        h.for_each(|k, v| {
            m.insert(k.to_vec(), v.to_vec());
        });
        m
    }

    #[test]
    fn five_short_fields_are_one_small_allocation() {
        let mut v = new_hash();
        let mut h = HashMut::of(&mut v).expect("hash");
        for i in 1..=5 {
            h.set(
                format!("field{i}").as_bytes(),
                format!("val{i}").as_bytes(),
                &CompactLimits::default(),
            );
        }
        assert_eq!(v.encoding(), "listpack");
        // 5 x (1 + 6) for the fields and 5 x (1 + 4) for the values.
        assert_eq!(v.heap_bytes(), 60);
        let Value::HashPacked(p) = &v else {
            panic!("not packed")
        };
        assert_eq!(p.encoded_len(), 60);
    }

    #[test]
    fn integers_read_back_as_their_text() {
        let mut v = new_hash();
        let mut h = HashMut::of(&mut v).expect("hash");
        h.set(b"1", b"-42", &CompactLimits::default());
        h.set(b"01", b"7", &CompactLimits::default());
        let r = HashRef::of(&v).expect("hash");
        assert_eq!(r.get(b"1").as_deref(), Some(&b"-42"[..]));
        assert_eq!(r.get(b"01").as_deref(), Some(&b"7"[..]));
        assert!(r.get(b"+1").is_none());
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn conversion_on_long_value_and_on_count() {
        let l = small_limits();
        let mut v = new_hash();
        let mut h = HashMut::of(&mut v).expect("hash");
        h.set(b"a", b"123456", &l);
        assert_eq!(v.encoding(), "listpack");
        let mut h = HashMut::of(&mut v).expect("hash");
        h.set(b"a", b"1234567", &l);
        assert_eq!(v.encoding(), "hashtable");

        let mut v = new_hash();
        let mut h = HashMut::of(&mut v).expect("hash");
        for f in ["a", "b", "c", "d"] {
            h.set(f.as_bytes(), b"v", &l);
        }
        // Overwriting keeps the count at the limit.
        h.set(b"d", b"w", &l);
        assert_eq!(h.len(), 4);
        assert_eq!(v.encoding(), "listpack");
        let mut h = HashMut::of(&mut v).expect("hash");
        h.set(b"e", b"v", &l);
        // Removing fields never converts back.
        h.remove(b"e");
        h.remove(b"d");
        assert_eq!(v.encoding(), "hashtable");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(u8, usize),
        Del(u8),
        Scan(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..12, 0usize..9).prop_map(|(f, n)| Op::Set(f, n)),
            2 => (0u8..12).prop_map(Op::Del),
            1 => (1usize..4).prop_map(Op::Scan),
        ]
    }

    fn field(f: u8) -> Vec<u8> {
        // Some fields are integers, stored as such in the packed form.
        if f.is_multiple_of(3) {
            (i64::from(f) * 1000 - 5000).to_string().into_bytes()
        } else {
            format!("f{f}").into_bytes()
        }
    }

    proptest! {
        /// A hash behaves like a BTreeMap across the packed -> table conversion,
        /// converts exactly when a limit is first crossed, and a scan running
        /// alongside the writes returns every field present throughout.
        #[test]
        fn hash_matches_a_btreemap(ops in proptest::collection::vec(op(), 1..120)) {
            let l = small_limits();
            let mut v = new_hash();
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            let mut converted = false;
            let mut cursor: Option<u64> = Some(0);
            let mut seen = BTreeSet::new();
            let mut throughout: Option<BTreeSet<Vec<u8>>> = None;
            for op in ops {
                match op {
                    Op::Set(f, n) => {
                        let (k, val) = (field(f), vec![b'x'; n]);
                        converted |= k.len() > l.hash_value || val.len() > l.hash_value;
                        let mut h = HashMut::of(&mut v).expect("hash");
                        let added = h.set(&k, &val, &l);
                        prop_assert_eq!(added, model.insert(k, val).is_none());
                        converted |= model.len() > l.hash_entries;
                    }
                    Op::Del(f) => {
                        let k = field(f);
                        let mut h = HashMut::of(&mut v).expect("hash");
                        prop_assert_eq!(h.remove(&k), model.remove(&k).is_some());
                    }
                    Op::Scan(count) => {
                        if let Some(c) = cursor {
                            let h = HashRef::of(&v).expect("hash");
                            let next = h.scan(c, count, |k, _| { seen.insert(k.to_vec()); });
                            cursor = (next != 0).then_some(next);
                        }
                    }
                }
                prop_assert_eq!(v.encoding(), if converted { "hashtable" } else { "listpack" });
                let keys: BTreeSet<Vec<u8>> = model.keys().cloned().collect();
                throughout = Some(match throughout {
                    None => keys,
                    Some(t) => t.intersection(&keys).cloned().collect(),
                });
                let h = HashRef::of(&v).expect("hash");
                prop_assert_eq!(h.len(), model.len());
                prop_assert_eq!(&contents(h), &model);
                for f in 0u8..12 {
                    let k = field(f);
                    prop_assert_eq!(h.get(&k).map(|c| c.into_owned()), model.get(&k).cloned());
                    prop_assert_eq!(h.contains(&k), model.contains_key(&k));
                }
                for i in 0..model.len() {
                    let (k, val) = h.pair_at(i).expect("in range");
                    prop_assert_eq!(model.get(k.as_ref()).map(Vec::as_slice), Some(val.as_ref()));
                }
                prop_assert!(h.pair_at(model.len()).is_none());
            }
            while let Some(c) = cursor {
                let h = HashRef::of(&v).expect("hash");
                let next = h.scan(c, 2, |k, _| { seen.insert(k.to_vec()); });
                cursor = (next != 0).then_some(next);
            }
            for k in throughout.unwrap_or_default() {
                prop_assert!(seen.contains(&k), "scan missed {:?}", k);
            }
        }
    }
}
