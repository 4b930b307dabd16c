//! RedisBloom's cuckoo filters (`MBbloomCF`, encoding version 4) and count-min sketches
//! (`CMSk-TYPE`, encoding version 0) as RDB module values, written as RedisBloom writes them so
//! that a RedisBloom-equipped Redis loads Keel's files, and read back with every field checked
//! before anything is sized from it.
//!
//! `MBbloomCF` v4, as module opcodes after the module id: uint sub-filter count, uint base
//! bucket count, uint items, uint deletes, uint bucket size, uint max iterations, uint expansion;
//! then per sub-filter uint bucket count and string of its slot bytes (buckets * bucket size);
//! the end opcode.
//!
//! `CMSk-TYPE` v0: uint width, uint depth, uint total count, string of `width * depth`
//! little-endian u32 counters (row-major); the end opcode.

use keel_store::cms::CountMinSketch;
use keel_store::cuckoo::CuckooFilter;

use super::convert_error::ConvertError;
use super::encoding::{put_len, put_string};
use super::module::{ModReader, MOD_EOF, MOD_STRING, MOD_UINT};
use super::types::module_id;

pub const CUCKOO_TYPE_NAME: &[u8; 9] = b"MBbloomCF";
pub const CUCKOO_ENCODING_VERSION: u64 = 4;
pub const CMS_TYPE_NAME: &[u8; 9] = b"CMSk-TYPE";
pub const CMS_ENCODING_VERSION: u64 = 0;

fn uint(out: &mut Vec<u8>, n: u64) {
    put_len(out, MOD_UINT);
    put_len(out, n);
}

fn string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    put_len(out, MOD_STRING);
    put_string(out, s, compress);
}

pub(crate) fn put_cuckoo(out: &mut Vec<u8>, cf: &CuckooFilter, compress: bool) {
    put_len(
        out,
        module_id(CUCKOO_TYPE_NAME, CUCKOO_ENCODING_VERSION).unwrap_or_default(),
    );
    uint(out, cf.num_filters() as u64);
    uint(out, cf.num_buckets());
    uint(out, cf.num_items());
    uint(out, cf.num_deletes());
    uint(out, u64::from(cf.bucket_size()));
    uint(out, u64::from(cf.max_iterations()));
    uint(out, u64::from(cf.expansion()));
    for (n, slots) in cf.sub_filters() {
        uint(out, n);
        string(out, slots, compress);
    }
    put_len(out, MOD_EOF);
}

pub(crate) fn put_cms(out: &mut Vec<u8>, cms: &CountMinSketch, compress: bool) {
    put_len(
        out,
        module_id(CMS_TYPE_NAME, CMS_ENCODING_VERSION).unwrap_or_default(),
    );
    uint(out, cms.width());
    uint(out, cms.depth());
    uint(out, cms.count());
    string(out, &cms.cell_bytes(), compress);
    put_len(out, MOD_EOF);
}

fn finish(r: &ModReader<'_>, raw: &[u8], bad: ConvertError) -> Result<(), ConvertError> {
    if r.pos == raw.len() {
        Ok(())
    } else {
        Err(bad)
    }
}

/// The store value of a cuckoo filter or count-min sketch module value; `None` for other types.
pub(crate) fn sketch_value(
    id: u64,
    name: &str,
    version: u64,
    raw: &[u8],
) -> Option<Result<keel_store::Value, ConvertError>> {
    let wrong_version = || ConvertError::ModuleVersion {
        name: name.to_string(),
        version,
    };
    if name.as_bytes() == CUCKOO_TYPE_NAME {
        return Some(
            if Some(id) == module_id(CUCKOO_TYPE_NAME, CUCKOO_ENCODING_VERSION) {
                cuckoo_from_module(raw).map(|c| keel_store::Value::Cuckoo(Box::new(c)))
            } else {
                Err(wrong_version())
            },
        );
    }
    if name.as_bytes() == CMS_TYPE_NAME {
        return Some(
            if Some(id) == module_id(CMS_TYPE_NAME, CMS_ENCODING_VERSION) {
                cms_from_module(raw).map(|c| keel_store::Value::Cms(Box::new(c)))
            } else {
                Err(wrong_version())
            },
        );
    }
    None
}

/// A cuckoo filter from its module data (the bytes after the module id).
pub fn cuckoo_from_module(raw: &[u8]) -> Result<CuckooFilter, ConvertError> {
    let mut r = ModReader::new(raw, ConvertError::BadCuckoo);
    let nfilters = r.uint()?;
    let num_buckets = r.uint()?;
    let items = r.uint()?;
    let deletes = r.uint()?;
    let bucket_size = r.uint()?;
    let max_iterations = r.uint()?;
    let expansion = r.uint()?;
    // Each sub-filter takes at least four bytes (two opcodes, a count, a length): a count the
    // data cannot hold is refused before the list is sized.
    if nfilters == 0 || nfilters > (r.remaining() / 4) as u64 {
        return Err(ConvertError::BadCuckoo("sub-filter count"));
    }
    let mut subs = Vec::with_capacity(nfilters as usize);
    for _ in 0..nfilters {
        let n = r.uint()?;
        subs.push((n, r.string()?));
    }
    r.opcode(MOD_EOF)?;
    finish(
        &r,
        raw,
        ConvertError::BadCuckoo("data after the end opcode"),
    )?;
    CuckooFilter::from_parts(
        num_buckets,
        items,
        deletes,
        bucket_size,
        max_iterations,
        expansion,
        subs,
    )
    .map_err(|_| ConvertError::BadCuckoo("inconsistent fields"))
}

/// A count-min sketch from its module data.
pub fn cms_from_module(raw: &[u8]) -> Result<CountMinSketch, ConvertError> {
    let mut r = ModReader::new(raw, ConvertError::BadCms);
    let width = r.uint()?;
    let depth = r.uint()?;
    let count = r.uint()?;
    let cells = r.string()?;
    r.opcode(MOD_EOF)?;
    finish(&r, raw, ConvertError::BadCms("data after the end opcode"))?;
    CountMinSketch::from_parts(width, depth, count, &cells)
        .ok_or(ConvertError::BadCms("inconsistent fields"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: &[u8]) -> &[u8] {
        // The module id is an 0x81-prefixed 8-byte length.
        &v[9..]
    }

    #[test]
    fn values_round_trip_and_damage_is_refused() {
        let mut cf = CuckooFilter::new(100, 2, 20, 1).expect("new");
        for i in 0..300 {
            cf.add(format!("i{i}").as_bytes());
        }
        let mut out = Vec::new();
        put_cuckoo(&mut out, &cf, true);
        assert_eq!(cuckoo_from_module(body(&out)).expect("loads"), cf);
        let mut cms = CountMinSketch::new(50, 4).expect("new");
        cms.incr_by(b"x", 7).expect("fits");
        let mut out2 = Vec::new();
        put_cms(&mut out2, &cms, false);
        assert_eq!(cms_from_module(body(&out2)).expect("loads"), cms);
        for cut in 0..body(&out2).len() {
            assert!(cms_from_module(&body(&out2)[..cut]).is_err());
        }
        for cut in 0..body(&out).len().min(200) {
            assert!(cuckoo_from_module(&body(&out)[..cut]).is_err());
        }
    }
}
