//! The bitmap index (`Value::Index`) as an RDB module value of Keel's own type `keelindex`,
//! encoding version 1; the layout is in `crates/persist/RDB.md`.
//!
//! The reader trusts nothing: every count is checked against the bytes left before anything is
//! sized from it, every string is read from bytes present, each bitmap is deserialized from its
//! own bytes (which must be exactly one serialized bitmap), and the store's
//! [`BitmapIndex::from_parts`] checks the image's invariants before the index is built.

use keel_store::index::{BitmapIndex, LoadedEntity, LoadedPair};
use keel_store::roaring::Bitmap32;
use keel_store::Value;

use super::convert_error::ConvertError;
use super::encoding::{put_len, put_string};
use super::module::{ModReader, MOD_EOF, MOD_STRING, MOD_UINT};
use super::types::{module_id, module_name};

/// The module type name TYPE reports and the RDB records, and its encoding version.
pub const INDEX_TYPE_NAME: &[u8; 9] = b"keelindex";
pub const INDEX_ENCODING_VERSION: u64 = 1;

/// The fewest bytes one entity takes (slot, id and payload flag, each an opcode and a one-byte
/// datum) and one pair (attribute, value and bitmap, each an opcode and a one-byte length).
const MIN_ENTITY_BYTES: usize = 6;
const MIN_PAIR_BYTES: usize = 6;

/// The module value of an index: module id, then as module opcodes the entity count, the pair
/// count, each entity (slot, id, payload flag, payload when flagged) in slot order, each pair
/// (attribute, value, bitmap of slots in Roaring's portable format), and the end opcode.
pub(crate) fn put_index(out: &mut Vec<u8>, index: &BitmapIndex, compress: bool) {
    let id = module_id(INDEX_TYPE_NAME, INDEX_ENCODING_VERSION).unwrap_or_default();
    put_len(out, id);
    let uint = |out: &mut Vec<u8>, n: u64| {
        put_len(out, MOD_UINT);
        put_len(out, n);
    };
    let string = |out: &mut Vec<u8>, s: &[u8]| {
        put_len(out, MOD_STRING);
        put_string(out, s, compress);
    };
    uint(out, index.len() as u64);
    uint(out, index.pair_count() as u64);
    for e in index.entities() {
        uint(out, u64::from(e.slot()));
        string(out, e.id());
        match e.payload() {
            Some(p) => {
                uint(out, 1);
                string(out, p);
            }
            None => uint(out, 0),
        }
    }
    let mut bits = Vec::new();
    for (attr, value, bitmap) in index.pairs() {
        string(out, attr);
        string(out, value);
        bits.clear();
        // Writing into a Vec cannot fail.
        let _ = bitmap.serialize_into(&mut bits);
        string(out, &bits);
    }
    put_len(out, MOD_EOF);
}

/// The store value for a `keelindex` module value of id `id` (the bytes after the id in `raw`).
pub(crate) fn index_value(id: u64, raw: &[u8]) -> Result<Value, ConvertError> {
    if Some(id) != module_id(INDEX_TYPE_NAME, INDEX_ENCODING_VERSION) {
        let (name, version) = module_name(id);
        return Err(ConvertError::ModuleVersion { name, version });
    }
    index_from_module(raw).map(|i| Value::Index(Box::new(i)))
}

/// A count of items each at least `min_bytes` long, refused if the bytes left cannot hold that
/// many.
fn count(r: &mut ModReader<'_>, min_bytes: usize) -> Result<usize, ConvertError> {
    let n = r.uint()?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= r.remaining() / min_bytes)
        .ok_or(ConvertError::BadIndex("a count larger than the data"))
}

/// Reads the module value `put_index` writes and rebuilds the index.
pub fn index_from_module(raw: &[u8]) -> Result<BitmapIndex, ConvertError> {
    let mut r = ModReader::new(raw, ConvertError::BadIndex);
    let n_entities = count(&mut r, MIN_ENTITY_BYTES)?;
    let n_pairs = count(&mut r, MIN_PAIR_BYTES)?;
    let mut entities = Vec::with_capacity(n_entities);
    for _ in 0..n_entities {
        let slot = u32::try_from(r.uint()?).map_err(|_| ConvertError::BadIndex("entity slot"))?;
        let id = r.string()?;
        let payload = match r.uint()? {
            0 => None,
            1 => Some(r.string()?),
            _ => return Err(ConvertError::BadIndex("payload flag")),
        };
        entities.push(LoadedEntity { slot, id, payload });
    }
    // Pairs are counted against what is left after the entities, not before them.
    if n_pairs > r.remaining() / MIN_PAIR_BYTES {
        return Err(ConvertError::BadIndex("a count larger than the data"));
    }
    let mut pairs = Vec::with_capacity(n_pairs);
    for _ in 0..n_pairs {
        let attr = r.string()?;
        // IDX.ADD reads this word as its payload option, so no command could have added such
        // a pair, and an AOF rewrite could not express it.
        if attr.eq_ignore_ascii_case(b"PAYLOAD") {
            return Err(ConvertError::BadIndex("an attribute named PAYLOAD"));
        }
        let value = r.string()?;
        let bytes = r.string()?;
        let bits = Bitmap32::deserialize_from(bytes.as_slice())
            .ok()
            .filter(|b| b.serialized_size() == bytes.len())
            .ok_or(ConvertError::BadIndex("bitmap"))?;
        pairs.push(LoadedPair { attr, value, bits });
    }
    if r.plain_len()? != MOD_EOF || r.remaining() != 0 {
        return Err(ConvertError::BadIndex("data after the last pair"));
    }
    BitmapIndex::from_parts(entities, pairs).map_err(|e| match e {
        keel_store::index::IndexError::Invalid(why) => ConvertError::BadIndex(why),
        _ => ConvertError::BadIndex("too large"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BitmapIndex {
        let mut idx = BitmapIndex::new();
        for i in 0..300u32 {
            let id = format!("entity-{i}");
            let colour: &[u8] = if i % 3 == 0 { b"red" } else { b"blue" };
            let payload = format!("{{\"price\":{i}}}");
            idx.add(
                id.as_bytes(),
                &[(b"colour", colour), (b"n", i.to_string().as_bytes())],
                (i % 2 == 0).then_some(payload.as_bytes()),
            )
            .expect("add");
        }
        for i in (0..300).step_by(7) {
            idx.remove(format!("entity-{i}").as_bytes());
        }
        idx
    }

    fn body(idx: &BitmapIndex, compress: bool) -> (u64, Vec<u8>) {
        let mut out = Vec::new();
        put_index(&mut out, idx, compress);
        // Split the module id (a 64-bit length) from the opcodes.
        let mut r = ModReader::new(&out, ConvertError::BadIndex);
        let id = r.plain_len().expect("id");
        (id, out[r.pos..].to_vec())
    }

    #[test]
    fn round_trips_and_keeps_search_order() {
        for compress in [false, true] {
            let idx = sample();
            let (id, raw) = body(&idx, compress);
            assert_eq!(module_name(id), ("keelindex".to_string(), 1));
            let Value::Index(back) = index_value(id, &raw).expect("loads") else {
                panic!("not an index");
            };
            assert_eq!(*back, idx);
            let order = |i: &BitmapIndex| i.entities().map(|e| e.id().to_vec()).collect::<Vec<_>>();
            assert_eq!(order(&back), order(&idx));
        }
        let empty = BitmapIndex::new();
        let (id, raw) = body(&empty, true);
        assert_eq!(index_value(id, &raw), Ok(Value::Index(Box::new(empty))));
    }

    #[test]
    fn damage_and_other_versions_are_refused() {
        let (id, raw) = body(&sample(), false);
        assert!(matches!(
            index_value(id + 1, &raw),
            Err(ConvertError::ModuleVersion { .. })
        ));
        for cut in 0..raw.len() {
            assert!(index_from_module(&raw[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = raw.clone();
        longer.push(0);
        assert!(index_from_module(&longer).is_err());
        // A huge entity count in a short value is refused before anything is sized from it.
        let mut huge = Vec::new();
        put_len(&mut huge, MOD_UINT);
        put_len(&mut huge, u64::MAX);
        put_len(&mut huge, MOD_UINT);
        put_len(&mut huge, 0);
        put_len(&mut huge, MOD_EOF);
        assert_eq!(
            index_from_module(&huge),
            Err(ConvertError::BadIndex("a count larger than the data"))
        );
    }

    #[test]
    fn an_attribute_no_command_could_add_is_refused() {
        let mut idx = BitmapIndex::new();
        idx.add(b"e", &[(b"Payload", b"v")], None)
            .expect("the store allows it");
        let (id, raw) = body(&idx, false);
        assert_eq!(
            index_value(id, &raw),
            Err(ConvertError::BadIndex("an attribute named PAYLOAD"))
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = index_from_module(&raw);
        }
    }
}
