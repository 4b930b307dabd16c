//! Turning what a snapshot holds ([`RdbValue`]) into store values, in the encoding Keel's own
//! commands would pick for the same content.

use std::collections::HashSet;

use keel_store::bloom::{Chain, MAX_LINKS};
use keel_store::hash::{new_hash, HashMut};
use keel_store::list::End;
use keel_store::value::CompactLimits;
use keel_store::Value;
use thiserror::Error;

use super::write::{module_id, module_name, BLOOM_ENCODING_VERSION, BLOOM_TYPE_NAME};
use super::RdbValue;
use crate::lzf;

/// Why a snapshot value cannot become a store value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConvertError {
    /// A collection with no elements: Redis skips such keys when loading and refuses them in
    /// RESTORE.
    #[error("empty collection")]
    Empty,
    #[error("duplicate {0} in a collection")]
    Duplicate(&'static str),
    #[error("sorted set score is NaN")]
    NanScore,
    /// A module type Keel has no implementation of.
    #[error("module type {name} is not supported by Keel yet{what}")]
    UnsupportedModule { name: String, what: String },
    #[error("unsupported encoding version {version} of module type {name}")]
    ModuleVersion { name: String, version: u64 },
    #[error("invalid Bloom filter: {0}")]
    BadBloom(&'static str),
    #[error("invalid bitmap index: {0}")]
    BadIndex(&'static str),
}

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
    if name.as_bytes() == super::index::INDEX_TYPE_NAME {
        return super::index::index_value(id, raw);
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

/// Reads module opcodes and their data.
struct ModReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

const BAD: ConvertError = ConvertError::BadBloom("truncated or malformed module data");

impl<'a> ModReader<'a> {
    fn byte(&mut self) -> Result<u8, ConvertError> {
        let b = *self.buf.get(self.pos).ok_or(BAD)?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ConvertError> {
        let end = self.pos.checked_add(n).ok_or(BAD)?;
        let s = self.buf.get(self.pos..end).ok_or(BAD)?;
        self.pos = end;
        Ok(s)
    }

    /// A length, or the special-encoding number when the top bits are `11`.
    fn len(&mut self) -> Result<(u64, bool), ConvertError> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => (u64::from(b & 0x3f), false),
            1 => ((u64::from(b & 0x3f) << 8) | u64::from(self.byte()?), false),
            2 if b == 0x80 => (
                u64::from(u32::from_be_bytes(
                    self.take(4)?.try_into().map_err(|_| BAD)?,
                )),
                false,
            ),
            2 if b == 0x81 => (
                u64::from_be_bytes(self.take(8)?.try_into().map_err(|_| BAD)?),
                false,
            ),
            2 => return Err(BAD),
            _ => (u64::from(b & 0x3f), true),
        })
    }

    fn plain_len(&mut self) -> Result<u64, ConvertError> {
        match self.len()? {
            (n, false) => Ok(n),
            _ => Err(BAD),
        }
    }

    fn opcode(&mut self, want: u64) -> Result<(), ConvertError> {
        if self.plain_len()? == want {
            Ok(())
        } else {
            Err(ConvertError::BadBloom("unexpected field type"))
        }
    }

    fn uint(&mut self) -> Result<u64, ConvertError> {
        self.opcode(2)?;
        self.plain_len()
    }

    fn double(&mut self) -> Result<f64, ConvertError> {
        self.opcode(4)?;
        Ok(f64::from_le_bytes(
            self.take(8)?.try_into().map_err(|_| BAD)?,
        ))
    }

    fn string(&mut self) -> Result<Vec<u8>, ConvertError> {
        self.opcode(5)?;
        match self.len()? {
            (n, false) => Ok(self.take(usize::try_from(n).map_err(|_| BAD)?)?.to_vec()),
            (0, true) => Ok((self.byte()? as i8).to_string().into_bytes()),
            (1, true) => Ok(
                i16::from_le_bytes(self.take(2)?.try_into().map_err(|_| BAD)?)
                    .to_string()
                    .into_bytes(),
            ),
            (2, true) => Ok(
                i32::from_le_bytes(self.take(4)?.try_into().map_err(|_| BAD)?)
                    .to_string()
                    .into_bytes(),
            ),
            (3, true) => {
                let clen = usize::try_from(self.plain_len()?).map_err(|_| BAD)?;
                let ulen = usize::try_from(self.plain_len()?).map_err(|_| BAD)?;
                let data = self.take(clen)?;
                // LZF expands at most about 264 times: refuse a claim beyond that before
                // allocating the output.
                if ulen / 264 > clen + 1 {
                    return Err(BAD);
                }
                lzf::decompress(data, ulen).map_err(|_| BAD)
            }
            _ => Err(BAD),
        }
    }
}

/// A RedisBloom `MBbloom--` value (encoding version 4): checks every field, builds the dump
/// header the store validates, then copies each link's bits in.
fn bloom_from_module(raw: &[u8]) -> Result<Chain, ConvertError> {
    let mut r = ModReader { buf: raw, pos: 0 };
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
