//! Turning what a snapshot holds ([`RdbValue`]) into store values, in the encoding Keel's own
//! commands would pick for the same content.

use std::collections::HashSet;

use keel_store::bloom::{Chain, MAX_LINKS};
use keel_store::hash::{new_hash, HashMut};
use keel_store::list::End;
use keel_store::value::CompactLimits;
use keel_store::Value;

use super::convert_error::ConvertError;
use super::module::{ModReader, MOD_EOF};
use super::types::{
    module_id, module_name, BLOOM_ENCODING_VERSION, BLOOM_TYPE_NAME, ROARING64_TYPE_NAME,
    ROARING_ENCODING_VERSION, ROARING_TYPE_NAME,
};
use super::RdbValue;

/// Builds the store value for `v`, choosing the compact or general form as Keel's commands do
/// under `limits`. Checks everything it relies on: duplicates, empty collections, scores, and
/// every field of a Bloom filter before allocating its bit arrays.
pub fn to_store_value(v: RdbValue, limits: &CompactLimits) -> Result<Value, ConvertError> {
    match v {
        RdbValue::String(s) => Ok(Value::str(&s)),
        RdbValue::List(items) => {
            if items.is_empty() {
                return Err(ConvertError::Empty);
            }
            let mut v = keel_store::list::new_value();
            keel_store::list::push(&mut v, End::Right, &items, limits);
            Ok(v)
        }
        RdbValue::Set(members) => {
            let first = members.first().ok_or(ConvertError::Empty)?;
            let mut v = Value::new_set(first, members.len(), limits);
            for m in &members {
                if !v.set_add(m, limits) {
                    return Err(ConvertError::Duplicate("set member"));
                }
            }
            Ok(v)
        }
        RdbValue::Hash(pairs) => {
            if pairs.is_empty() {
                return Err(ConvertError::Empty);
            }
            let mut v = new_hash();
            let mut h = HashMut::of(&mut v).ok_or(ConvertError::Empty)?;
            for (f, x) in &pairs {
                if !h.set(f, x, limits) {
                    return Err(ConvertError::Duplicate("hash field"));
                }
            }
            Ok(v)
        }
        RdbValue::ZSet(pairs) => {
            if pairs.is_empty() {
                return Err(ConvertError::Empty);
            }
            let mut pairs = pairs;
            let mut seen = HashSet::with_capacity(pairs.len());
            for (m, s) in &mut pairs {
                // ZADD stores a score of -0 as 0.
                if *s == 0.0 {
                    *s = 0.0;
                }
                if s.is_nan() {
                    return Err(ConvertError::NanScore);
                }
                if !seen.insert(m.clone()) {
                    return Err(ConvertError::Duplicate("sorted set member"));
                }
            }
            Ok(keel_store::zset::from_pairs(&pairs, limits))
        }
        RdbValue::Module { id, raw } => module_value(id, &raw),
        RdbValue::Stream(s) => Ok(Value::Stream(s)),
    }
}

/// What Keel's users would know a module type by.
fn module_description(name: &str) -> Option<&'static str> {
    Some(match name {
        "MBbloomCF" => "RedisBloom cuckoo filters",
        "CMSk-TYPE" => "RedisBloom count-min sketches",
        "TopK-TYPE" => "RedisBloom top-k",
        "TDIS-TYPE" => "RedisBloom t-digests",
        "ReJSON-RL" => "RedisJSON documents",
        "ft_index0" => "RediSearch indexes",
        "TSDB-TYPE" => "RedisTimeSeries series",
        "graphdata" => "RedisGraph graphs",
        _ => return None,
    })
}

fn module_value(id: u64, raw: &[u8]) -> Result<Value, ConvertError> {
    let (name, version) = module_name(id);
    if name.as_bytes() == ROARING_TYPE_NAME || name.as_bytes() == ROARING64_TYPE_NAME {
        return roaring_from_module(id, &name, version, raw);
    }
    if name.as_bytes() == super::index::INDEX_TYPE_NAME {
        return super::index::index_value(id, raw);
    }
    if let Some(v) = super::sketch::sketch_value(id, &name, version, raw) {
        return v;
    }
    if let Some(v) = super::topk_tdigest::sketch_value(&name, id, raw) {
        return v;
    }
    if name.as_bytes() != BLOOM_TYPE_NAME {
        return Err(ConvertError::UnsupportedModule {
            what: module_description(&name)
                .map(|d| format!(" ({d})"))
                .unwrap_or_default(),
            name,
        });
    }
    if Some(id) != module_id(BLOOM_TYPE_NAME, BLOOM_ENCODING_VERSION) {
        return Err(ConvertError::ModuleVersion { name, version });
    }
    bloom_from_module(raw).map(|c| Value::Bloom(Box::new(c)))
}

/// A redis-roaring `reroaring` or `roaring64` value (encoding version 1): one string opcode
/// holding the serialized bitmap, then the end opcode. The bitmap decoder checks every count
/// against the bytes present.
fn roaring_from_module(
    id: u64,
    name: &str,
    version: u64,
    raw: &[u8],
) -> Result<Value, ConvertError> {
    let wide = name.as_bytes() == ROARING64_TYPE_NAME;
    let type_name = if wide {
        ROARING64_TYPE_NAME
    } else {
        ROARING_TYPE_NAME
    };
    if Some(id) != module_id(type_name, ROARING_ENCODING_VERSION) {
        return Err(ConvertError::ModuleVersion {
            name: name.to_string(),
            version,
        });
    }
    let mut r = ModReader::new(raw, |why| ConvertError::BadRoaring(why.into()));
    let bytes = r.string()?;
    r.opcode(MOD_EOF)?;
    if r.pos != raw.len() {
        return Err(ConvertError::BadRoaring("data after the end opcode".into()));
    }
    let loaded = |e: keel_store::roaring::LoadError| ConvertError::BadRoaring(e.to_string());
    Ok(if wide {
        Value::Roaring64(Box::new(
            keel_store::roaring::load64(&bytes).map_err(loaded)?,
        ))
    } else {
        Value::Roaring(Box::new(
            keel_store::roaring::load32(&bytes).map_err(loaded)?,
        ))
    })
}

const BAD: ConvertError = ConvertError::BadBloom("truncated or malformed module data");

/// A RedisBloom `MBbloom--` value (encoding version 4): checks every field, builds the dump
/// header the store validates, then copies each link's bits in.
fn bloom_from_module(raw: &[u8]) -> Result<Chain, ConvertError> {
    let mut r = ModReader::new(raw, ConvertError::BadBloom);
    let to_u32 = |n: u64| u32::try_from(n).map_err(|_| BAD);
    let size = r.uint()?;
    let nfilters = r.uint()?;
    let options = to_u32(r.uint()?)?;
    let growth = to_u32(r.uint()?)?;
    let n = usize::try_from(nfilters)
        .ok()
        .filter(|&n| (1..=MAX_LINKS).contains(&n))
        .ok_or(ConvertError::BadBloom("link count"))?;
    let mut header = Vec::new();
    header.extend_from_slice(&size.to_le_bytes());
    header.extend_from_slice(&(n as u32).to_le_bytes());
    header.extend_from_slice(&options.to_le_bytes());
    header.extend_from_slice(&growth.to_le_bytes());
    let mut arrays = Vec::new();
    for _ in 0..n {
        let capacity = r.uint()?;
        let error = r.double()?;
        let hashes = to_u32(r.uint()?)?;
        let bpe = r.double()?;
        let bits = r.uint()?;
        let n2 = u8::try_from(r.uint()?).map_err(|_| BAD)?;
        let bytes = r.string()?;
        let link_size = r.uint()?;
        header.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        header.extend_from_slice(&bits.to_le_bytes());
        header.extend_from_slice(&link_size.to_le_bytes());
        header.extend_from_slice(&error.to_le_bytes());
        header.extend_from_slice(&bpe.to_le_bytes());
        header.extend_from_slice(&hashes.to_le_bytes());
        header.extend_from_slice(&capacity.to_le_bytes());
        header.push(n2);
        arrays.push(bytes);
    }
    if r.plain_len()? != 0 || r.pos != raw.len() {
        return Err(ConvertError::BadBloom("data after the last link"));
    }
    // Every bit array is already in hand, so the zeroed arrays `from_header` allocates are no
    // larger than bytes the input held.
    let mut chain = Chain::from_header(&header).map_err(|_| ConvertError::BadBloom("header"))?;
    let mut offset = 0u64;
    for a in &arrays {
        offset += a.len() as u64;
        chain
            .load_chunk(offset + 1, a)
            .map_err(|_| ConvertError::BadBloom("bit array"))?;
    }
    Ok(chain)
}
