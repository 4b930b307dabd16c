//! RedisBloom's top-k (`TopK-TYPE`) and t-digest (`TDIS-TYPE`) module values, both at
//! encoding version 0, in the layout RedisBloom saves and loads, so either server reads the
//! other's files.
//!
//! Top-k, as module fields:
//!
//! ```text
//! uint k, uint width, uint depth, double decay
//! string  buckets: width * depth records of 8 bytes (fingerprint u32 LE, count u32 LE), row by row
//! string  heap: k records of 24 bytes (fingerprint u32, item length u32, an 8-byte pointer
//!         slot that readers ignore and Keel writes as zero, count u32, 4 bytes of padding)
//! k times string  the slot's item followed by a NUL byte; a lone NUL for an empty slot
//! end
//! ```
//!
//! T-digest (saved fully merged, so there are no buffered points):
//!
//! ```text
//! double compression, double min, double max
//! uint capacity (6 * compression + 10), uint merged nodes, uint unmerged nodes (0),
//! uint total compressions
//! double merged weight, double unmerged weight (0)
//! merged-nodes doubles: the centroid means, ascending
//! merged-nodes doubles: the centroid weights (whole numbers)
//! end
//! ```
//!
//! The loaders check every count against the bytes present and every field against the others
//! before building anything.

use keel_store::tdigest::TDigest;
use keel_store::topk::{Bucket, HeapSlot, TopK, BUCKET_BYTES, HEAP_SLOT_BYTES};
use keel_store::Value;

use super::convert_error::ConvertError;
use super::encoding::{put_len, put_string};
use super::module::{ModReader, MOD_DOUBLE, MOD_EOF, MOD_STRING, MOD_UINT};
use super::types::{module_id, module_name};

pub const TOPK_TYPE_NAME: &[u8; 9] = b"TopK-TYPE";
pub const TOPK_ENCODING_VERSION: u64 = 0;
pub const TDIGEST_TYPE_NAME: &[u8; 9] = b"TDIS-TYPE";
pub const TDIGEST_ENCODING_VERSION: u64 = 0;

fn uint(out: &mut Vec<u8>, n: u64) {
    put_len(out, MOD_UINT);
    put_len(out, n);
}

fn double(out: &mut Vec<u8>, d: f64) {
    put_len(out, MOD_DOUBLE);
    out.extend_from_slice(&d.to_le_bytes());
}

fn string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    put_len(out, MOD_STRING);
    put_string(out, s, compress);
}

pub(crate) fn put_topk(out: &mut Vec<u8>, t: &TopK, compress: bool) {
    put_len(
        out,
        module_id(TOPK_TYPE_NAME, TOPK_ENCODING_VERSION).unwrap_or_default(),
    );
    uint(out, u64::from(t.k()));
    uint(out, u64::from(t.width()));
    uint(out, u64::from(t.depth()));
    double(out, t.decay());
    let mut buckets = Vec::with_capacity(t.buckets().len() * BUCKET_BYTES);
    for b in t.buckets() {
        buckets.extend_from_slice(&b.fp.to_le_bytes());
        buckets.extend_from_slice(&b.count.to_le_bytes());
    }
    string(out, &buckets, compress);
    let mut heap = Vec::with_capacity(t.heap().len() * HEAP_SLOT_BYTES);
    for s in t.heap() {
        let len = s.item.as_ref().map_or(0, |i| i.len()) as u32;
        heap.extend_from_slice(&s.fp.to_le_bytes());
        heap.extend_from_slice(&len.to_le_bytes());
        heap.extend_from_slice(&[0; 8]);
        heap.extend_from_slice(&s.count.to_le_bytes());
        heap.extend_from_slice(&[0; 4]);
    }
    string(out, &heap, compress);
    for s in t.heap() {
        let mut item = s.item.as_deref().unwrap_or(b"").to_vec();
        item.push(0);
        string(out, &item, compress);
    }
    put_len(out, MOD_EOF);
}

pub(crate) fn put_tdigest(out: &mut Vec<u8>, t: &TDigest) {
    // Saved merged, as RedisBloom compresses before saving.
    let mut t = t.clone();
    let _ = t.compress();
    put_len(
        out,
        module_id(TDIGEST_TYPE_NAME, TDIGEST_ENCODING_VERSION).unwrap_or_default(),
    );
    double(out, t.compression());
    double(out, t.min());
    double(out, t.max());
    uint(out, t.capacity() as u64);
    let (means, weights) = t.centroids();
    uint(out, means.len() as u64);
    uint(out, t.unmerged_nodes() as u64);
    uint(out, t.total_compressions().max(0) as u64);
    double(out, t.merged_weight() as f64);
    double(out, t.unmerged_weight() as f64);
    for m in means {
        double(out, *m);
    }
    for w in weights {
        double(out, *w as f64);
    }
    put_len(out, MOD_EOF);
}

fn version_check(id: u64, name: &[u8; 9], version: u64) -> Result<(), ConvertError> {
    if Some(id) == module_id(name, version) {
        return Ok(());
    }
    let (name, version) = module_name(id);
    Err(ConvertError::ModuleVersion { name, version })
}

fn u32_le(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_le_bytes)
        .unwrap_or_default()
}

/// The store value for a top-k or t-digest module value named `name`; `None` for other types.
pub(crate) fn sketch_value(name: &str, id: u64, raw: &[u8]) -> Option<Result<Value, ConvertError>> {
    match name.as_bytes() {
        n if n == TOPK_TYPE_NAME => Some(topk_value(id, raw)),
        n if n == TDIGEST_TYPE_NAME => Some(tdigest_value(id, raw)),
        _ => None,
    }
}

/// The store value for a `TopK-TYPE` module value of id `id` (`raw`: the bytes after the id).
pub(crate) fn topk_value(id: u64, raw: &[u8]) -> Result<Value, ConvertError> {
    version_check(id, TOPK_TYPE_NAME, TOPK_ENCODING_VERSION)?;
    topk_from_module(raw).map(|t| Value::TopK(Box::new(t)))
}

/// A top-k sketch from its module fields.
pub fn topk_from_module(raw: &[u8]) -> Result<TopK, ConvertError> {
    let mut r = ModReader::new(raw, ConvertError::BadTopK);
    let bad = ConvertError::BadTopK;
    let dim = |n: u64, what| u32::try_from(n).ok().filter(|n| *n > 0).ok_or(bad(what));
    let k = dim(r.uint()?, "k")?;
    let width = dim(r.uint()?, "width")?;
    let depth = dim(r.uint()?, "depth")?;
    let decay = r.double()?;
    if !(decay > 0.0 && decay <= 1.0) {
        return Err(bad("decay"));
    }
    let buckets = r.string()?;
    if buckets.len() as u64 != u64::from(width) * u64::from(depth) * BUCKET_BYTES as u64 {
        return Err(bad("bucket array size"));
    }
    let heap = r.string()?;
    if heap.len() as u64 != u64::from(k) * HEAP_SLOT_BYTES as u64 {
        return Err(bad("heap size"));
    }
    let buckets: Vec<Bucket> = buckets
        .chunks_exact(BUCKET_BYTES)
        .map(|c| Bucket {
            fp: u32_le(c, 0),
            count: u32_le(c, 4),
        })
        .collect();
    let mut slots = Vec::with_capacity(k as usize);
    for c in heap.chunks_exact(HEAP_SLOT_BYTES) {
        let mut item = r.string()?;
        if item.pop() != Some(0) {
            return Err(bad("heap item"));
        }
        slots.push(HeapSlot {
            fp: u32_le(c, 0),
            count: u32_le(c, 16),
            // RedisBloom saves an empty slot as a lone NUL.
            item: (!item.is_empty()).then(|| item.into_boxed_slice()),
        });
    }
    r.opcode(MOD_EOF)?;
    if r.pos != raw.len() {
        return Err(bad("data after the end opcode"));
    }
    TopK::from_parts(k, width, depth, decay, buckets, slots).ok_or(bad("inconsistent sketch"))
}

/// The store value for a `TDIS-TYPE` module value of id `id`.
pub(crate) fn tdigest_value(id: u64, raw: &[u8]) -> Result<Value, ConvertError> {
    version_check(id, TDIGEST_TYPE_NAME, TDIGEST_ENCODING_VERSION)?;
    tdigest_from_module(raw).map(|t| Value::TDigest(Box::new(t)))
}

/// A whole number held in a double, as RedisBloom saves weights.
fn whole(d: f64) -> Option<i64> {
    (d.fract() == 0.0 && (0.0..9.007_199_254_740_992e15).contains(&d)).then_some(d as i64)
}

/// A t-digest from its module fields.
pub fn tdigest_from_module(raw: &[u8]) -> Result<TDigest, ConvertError> {
    let mut r = ModReader::new(raw, ConvertError::BadTDigest);
    let bad = ConvertError::BadTDigest;
    let compression = r.double()?;
    let min = r.double()?;
    let max = r.double()?;
    let cap = usize::try_from(r.uint()?).map_err(|_| bad("capacity"))?;
    let merged = r.uint()?;
    if r.uint()? != 0 {
        return Err(bad("unmerged nodes"));
    }
    let compressions = i64::try_from(r.uint()?).map_err(|_| bad("total compressions"))?;
    let merged_weight = whole(r.double()?).ok_or(bad("merged weight"))?;
    if r.double()? != 0.0 {
        return Err(bad("unmerged weight"));
    }
    // Each node takes two 9-byte fields: refuse a count the bytes cannot hold.
    let merged = usize::try_from(merged)
        .ok()
        .filter(|n| n.saturating_mul(18) <= r.remaining())
        .ok_or(bad("node count"))?;
    let mut means = Vec::with_capacity(merged);
    for _ in 0..merged {
        means.push(r.double()?);
    }
    let mut weights = Vec::with_capacity(merged);
    for _ in 0..merged {
        weights.push(whole(r.double()?).ok_or(bad("node weight"))?);
    }
    r.opcode(MOD_EOF)?;
    if r.pos != raw.len() {
        return Err(bad("data after the end opcode"));
    }
    TDigest::from_parts(
        compression,
        min,
        max,
        cap,
        compressions,
        merged_weight,
        means,
        weights,
    )
    .ok_or(bad("inconsistent digest"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topk_round_trips() {
        let mut t = TopK::new(3, 20, 4, 0.9).unwrap();
        for i in 0..200u32 {
            t.add(format!("x{}", i % 7).as_bytes(), 1 + i % 3);
        }
        for compress in [false, true] {
            let mut out = Vec::new();
            put_topk(&mut out, &t, compress);
            // The id takes 9 bytes: a 64-bit length prefix and 8 bytes.
            let back = topk_from_module(&out[9..]).unwrap();
            assert_eq!(back, t);
            assert_eq!(back.list(), t.list());
        }
    }

    #[test]
    fn tdigest_round_trips_merged() {
        let mut t = TDigest::new(50).unwrap();
        for i in 0..1000 {
            t.add(f64::from(i * 37 % 101), 1).unwrap();
        }
        let mut out = Vec::new();
        put_tdigest(&mut out, &t);
        let mut back = tdigest_from_module(&out[9..]).unwrap();
        t.compress().unwrap();
        assert_eq!(back, t);
        assert_eq!(back.quantile(0.3), t.quantile(0.3));
    }

    #[test]
    fn damaged_values_are_refused() {
        let mut t = TopK::new(2, 4, 2, 0.5).unwrap();
        t.add(b"a", 1);
        let mut out = Vec::new();
        put_topk(&mut out, &t, false);
        for cut in 9..out.len() {
            assert!(topk_from_module(&out[9..cut]).is_err());
        }
        let mut d = TDigest::new(10).unwrap();
        d.add(1.0, 1).unwrap();
        d.add(2.0, 1).unwrap();
        let mut out = Vec::new();
        put_tdigest(&mut out, &d);
        for cut in 9..out.len() {
            assert!(tdigest_from_module(&out[9..cut]).is_err());
        }
    }
}
