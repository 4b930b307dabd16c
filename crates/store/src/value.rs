//! Values a key can hold. Each data type lives in its own module and is exposed here
//! as variants, one per encoding; this module knows only how to name and size them.
//! The general forms of hashes, sets, lists and sorted sets are in child modules of
//! their types' (`hash::table`, `set::table`, `list::deque`, `zset::treap`) that never
//! name `Value`, so this module depends on them and the operations in `hash`, `set`,
//! `list` and `zset` depend on this one, never the other way.
//!
//! Encodings are variants of `Value` itself rather than of a per-type enum:
//! nested enums would need their own tag and grow `Value` (and every entry).
//! Every variant's payload is one word, except the string's 16 bytes whose tag
//! byte leaves room for the others' tags: a test keeps `Value` at 16 bytes.

use crate::bloom::Chain;
use crate::bytes::StrBytes;
use crate::cms::CountMinSketch;
use crate::cuckoo::CuckooFilter;
use crate::hash::table::HashTable;
use crate::index::BitmapIndex;
use crate::list::deque::ListDeque;
use crate::packed::Packed;
use crate::roaring::{Bitmap32, Bitmap64, RoaringSet};
use crate::set::table::SetTable;
use crate::stream::Stream;
use crate::tdigest::TDigest;
use crate::topk::TopK;
use crate::zset::treap::ZSetIndex;

// A leaf module of its own, so the type modules need not name this one for it;
// re-exported so that `keel_store::value::CompactLimits` still names it.
pub use crate::limits::CompactLimits;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(StrBytes),
    /// Alternating fields and values.
    HashPacked(Packed),
    Hash(Box<HashTable>),
    /// Integers in ascending order (Redis's intset).
    SetInts(Packed),
    SetPacked(Packed),
    Set(Box<SetTable>),
    ListPacked(Packed),
    List(Box<ListDeque>),
    /// Alternating members and scores, in (score, member) order.
    ZSetPacked(Packed),
    ZSet(Box<ZSetIndex>),
    /// A scalable Bloom filter (the `BF.*` commands).
    Bloom(Box<Chain>),
    /// A 32-bit Roaring bitmap (the `R.*` commands).
    Roaring(Box<Bitmap32>),
    /// A 64-bit Roaring bitmap (the `R64.*` commands).
    Roaring64(Box<Bitmap64>),
    /// A bitmap index (the `IDX.*` commands).
    Index(Box<BitmapIndex>),
    /// A cuckoo filter (the `CF.*` commands).
    Cuckoo(Box<CuckooFilter>),
    /// A count-min sketch (the `CMS.*` commands).
    Cms(Box<CountMinSketch>),
    /// A top-k sketch (the `TOPK.*` commands).
    TopK(Box<TopK>),
    /// A t-digest (the `TDIGEST.*` commands).
    TDigest(Box<TDigest>),
    /// A stream (the `X*` commands).
    Stream(Box<Stream>),
}

/// The type names TYPE and SCAN ... TYPE use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    String,
    Hash,
    Set,
    List,
    ZSet,
    Bloom,
    Roaring,
    Roaring64,
    Index,
    Cuckoo,
    Cms,
    TopK,
    TDigest,
    Stream,
}

impl ValueType {
    const ALL: [ValueType; 14] = [
        ValueType::String,
        ValueType::Hash,
        ValueType::Set,
        ValueType::List,
        ValueType::ZSet,
        ValueType::Bloom,
        ValueType::Roaring,
        ValueType::Roaring64,
        ValueType::Index,
        ValueType::Cuckoo,
        ValueType::Cms,
        ValueType::TopK,
        ValueType::TDigest,
        ValueType::Stream,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::Hash => "hash",
            ValueType::Set => "set",
            ValueType::List => "list",
            ValueType::ZSet => "zset",
            // RedisBloom's module type name, which TYPE reports for its keys.
            ValueType::Bloom => "MBbloom--",
            // redis-roaring's module type names.
            ValueType::Roaring => "reroaring",
            ValueType::Roaring64 => "roaring64",
            // The bitmap index's module type name (nine characters, as module names are).
            ValueType::Index => "keelindex",
            // RedisBloom's cuckoo filter and count-min sketch types.
            ValueType::Cuckoo => "MBbloomCF",
            ValueType::Cms => "CMSk-TYPE",
            // RedisBloom's module type names.
            ValueType::TopK => "TopK-TYPE",
            ValueType::TDigest => "TDIS-TYPE",
            ValueType::Stream => "stream",
        }
    }

    pub fn from_name(name: &[u8]) -> Option<ValueType> {
        ValueType::ALL
            .into_iter()
            .find(|t| name.eq_ignore_ascii_case(t.name().as_bytes()))
    }
}

impl Value {
    pub fn str(data: &[u8]) -> Value {
        Value::Str(StrBytes::new(data))
    }

    /// The string inside, or `None` when the key holds another type.
    pub fn as_str(&self) -> Option<&StrBytes> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_str_mut(&mut self) -> Option<&mut StrBytes> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Str(_) => ValueType::String,
            Value::HashPacked(_) | Value::Hash(_) => ValueType::Hash,
            Value::SetInts(_) | Value::SetPacked(_) | Value::Set(_) => ValueType::Set,
            Value::ListPacked(_) | Value::List(_) => ValueType::List,
            Value::ZSetPacked(_) | Value::ZSet(_) => ValueType::ZSet,
            Value::Bloom(_) => ValueType::Bloom,
            Value::Roaring(_) => ValueType::Roaring,
            Value::Roaring64(_) => ValueType::Roaring64,
            Value::Index(_) => ValueType::Index,
            Value::Cuckoo(_) => ValueType::Cuckoo,
            Value::Cms(_) => ValueType::Cms,
            Value::TopK(_) => ValueType::TopK,
            Value::TDigest(_) => ValueType::TDigest,
            Value::Stream(_) => ValueType::Stream,
        }
    }

    /// The name OBJECT ENCODING reports, matching Redis's choice for the same value.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => {
                let b = s.as_slice();
                // A string changed in place (APPEND, SETRANGE, SETBIT) is raw in
                // Redis whatever it holds.
                if s.is_growable() {
                    "raw"
                } else if b.len() <= 20 && crate::num::parse_i64(b).is_some() {
                    "int"
                } else if b.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
            Value::HashPacked(_)
            | Value::SetPacked(_)
            | Value::ListPacked(_)
            | Value::ZSetPacked(_) => "listpack",
            Value::SetInts(_) => "intset",
            Value::Hash(_) | Value::Set(_) => "hashtable",
            Value::List(_) => "quicklist",
            Value::ZSet(_) => "skiplist",
            // Redis reports every module value as a raw object.
            Value::Bloom(_)
            | Value::Roaring(_)
            | Value::Roaring64(_)
            | Value::Index(_)
            | Value::Cuckoo(_)
            | Value::Cms(_)
            | Value::TopK(_)
            | Value::TDigest(_) => "raw",
            Value::Stream(_) => "stream",
        }
    }

    /// Whether Redis would hold this value as one of its shared integer objects
    /// (0 to 9999), which OBJECT REFCOUNT reports as referenced "forever".
    pub fn is_shared_integer(&self) -> bool {
        self.encoding() == "int"
            && self
                .as_str()
                .and_then(|s| crate::num::parse_i64(s.as_slice()))
                .is_some_and(|n| (0..10_000).contains(&n))
    }

    /// Heap bytes owned by the value beyond its inline part.
    pub fn heap_bytes(&self) -> usize {
        let boxed = |inner: usize, own: usize| own + inner;
        match self {
            Value::Str(s) => s.heap_bytes(),
            Value::HashPacked(p)
            | Value::SetInts(p)
            | Value::SetPacked(p)
            | Value::ListPacked(p)
            | Value::ZSetPacked(p) => p.heap_bytes(),
            Value::Hash(h) => boxed(h.heap_bytes(), std::mem::size_of::<HashTable>()),
            Value::Set(s) => boxed(s.heap_bytes(), std::mem::size_of::<SetTable>()),
            Value::List(l) => boxed(l.heap_bytes(), std::mem::size_of::<ListDeque>()),
            Value::ZSet(z) => boxed(z.heap_bytes(), std::mem::size_of::<ZSetIndex>()),
            Value::Bloom(b) => boxed(b.heap_bytes(), std::mem::size_of::<Chain>()),
            Value::Roaring(b) => boxed(b.stats().heap_bytes(), std::mem::size_of::<Bitmap32>()),
            Value::Roaring64(b) => boxed(b.stats().heap_bytes(), std::mem::size_of::<Bitmap64>()),
            Value::Index(i) => boxed(i.heap_bytes(), std::mem::size_of::<BitmapIndex>()),
            Value::Cuckoo(c) => boxed(c.heap_bytes(), std::mem::size_of::<CuckooFilter>()),
            Value::Cms(c) => boxed(c.heap_bytes(), std::mem::size_of::<CountMinSketch>()),
            Value::TopK(t) => boxed(t.heap_bytes(), std::mem::size_of::<TopK>()),
            Value::TDigest(t) => boxed(t.heap_bytes(), std::mem::size_of::<TDigest>()),
            Value::Stream(s) => boxed(s.heap_bytes(), std::mem::size_of::<Stream>()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_stays_16_bytes() {
        assert_eq!(std::mem::size_of::<Value>(), 16);
    }

    #[test]
    fn type_names_round_trip() {
        for t in ValueType::ALL {
            assert_eq!(
                ValueType::from_name(t.name().to_uppercase().as_bytes()),
                Some(t)
            );
        }
        assert_eq!(ValueType::from_name(b"STREAM"), Some(ValueType::Stream));
        assert_eq!(ValueType::from_name(b"streams"), None);
        assert_eq!(ValueType::from_name(b"mbbloom--"), Some(ValueType::Bloom));
    }

    #[test]
    fn a_bloom_filter_is_named_and_sized() {
        let chain = Chain::new(1000, 0.01, 2, false).expect("valid");
        let bits: usize = chain.links().iter().map(|l| l.bytes().len()).sum();
        let v = Value::Bloom(Box::new(chain));
        assert_eq!(v.value_type().name(), "MBbloom--");
        assert_eq!(v.encoding(), "raw");
        assert!(v.heap_bytes() >= bits + std::mem::size_of::<Chain>());
        assert!(!v.is_shared_integer());
    }

    #[test]
    fn roaring_bitmaps_are_named_and_sized() {
        let small = Value::Roaring(Box::new((0..10u32).collect()));
        let big = Value::Roaring(Box::new((0..100_000u32).step_by(3).collect()));
        assert_eq!(small.value_type().name(), "reroaring");
        assert_eq!(small.encoding(), "raw");
        assert!(big.heap_bytes() > small.heap_bytes());
        assert!(big.heap_bytes() >= 8192);
        let wide = Value::Roaring64(Box::new([1u64, 1 << 40].into_iter().collect()));
        assert_eq!(wide.value_type().name(), "roaring64");
        assert_eq!(ValueType::from_name(b"REROARING"), Some(ValueType::Roaring));
    }

    #[test]
    fn an_index_is_named_and_sized() {
        let mut idx = BitmapIndex::new();
        idx.add(b"e", &[(b"a", b"v")], Some(b"payload"))
            .expect("add");
        let own = idx.heap_bytes();
        let v = Value::Index(Box::new(idx));
        assert_eq!(v.value_type().name(), "keelindex");
        assert_eq!(ValueType::from_name(b"KEELINDEX"), Some(ValueType::Index));
        assert_eq!(v.encoding(), "raw");
        assert_eq!(v.heap_bytes(), own + std::mem::size_of::<BitmapIndex>());
    }

    #[test]
    fn cuckoo_filters_and_sketches_are_named_and_sized() {
        let cf = CuckooFilter::new(1000, 2, 20, 1).expect("new");
        let v = Value::Cuckoo(Box::new(cf));
        assert_eq!(v.value_type().name(), "MBbloomCF");
        assert_eq!(v.encoding(), "raw");
        assert!(v.heap_bytes() >= 1024);
        let v = Value::Cms(Box::new(CountMinSketch::new(200, 5).expect("new")));
        assert_eq!(v.value_type().name(), "CMSk-TYPE");
        assert_eq!(ValueType::from_name(b"cmsk-type"), Some(ValueType::Cms));
        assert_eq!(v.encoding(), "raw");
        assert!(v.heap_bytes() >= 4000);
    }
}
