//! Writing RDB files (version 10, the one Redis 7.0 writes) from store values, streaming.
//!
//! Every layout written here is described in `crates/persist/RDB.md`. The writer encodes each
//! value the way Redis 7.0 does for the same encoding, so Redis loads the file and a DUMP made
//! from it matches Redis's byte for byte where Redis's own output is deterministic.

use std::io::{self, Write};

use keel_store::bloom::Chain;
use keel_store::hash::HashRef;
use keel_store::num::parse_i64;
use keel_store::roaring;
use keel_store::Value;

use super::encoding::{put_len, put_string, Listpack, LISTPACK_EMPTY};
use super::module::{MOD_DOUBLE, MOD_EOF, MOD_STRING, MOD_UINT};
use super::types::{
    module_id, BLOOM_ENCODING_VERSION, BLOOM_TYPE_NAME, RDB_VERSION, ROARING64_TYPE_NAME,
    ROARING_ENCODING_VERSION, ROARING_TYPE_NAME,
};
use crate::crc64;

pub(crate) const OP_AUX: u8 = 0xfa;
pub(crate) const OP_RESIZEDB: u8 = 0xfb;
pub(crate) const OP_EXPIRETIME_MS: u8 = 0xfc;
pub(crate) const OP_SELECTDB: u8 = 0xfe;
pub(crate) const OP_EOF: u8 = 0xff;

pub(crate) const T_STRING: u8 = 0;
pub(crate) const T_SET: u8 = 2;
pub(crate) const T_HASH: u8 = 4;
pub(crate) const T_ZSET_2: u8 = 5;
pub(crate) const T_MODULE_2: u8 = 7;
pub(crate) const T_SET_INTSET: u8 = 11;
pub(crate) const T_HASH_LISTPACK: u8 = 16;
pub(crate) const T_ZSET_LISTPACK: u8 = 17;
pub(crate) const T_LIST_QUICKLIST_2: u8 = 18;

/// Quicklist node containers.
const CONTAINER_PACKED: u64 = 2;

/// How to write a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOptions {
    /// LZF-compress strings longer than 20 bytes when that saves space (`rdbcompression`).
    pub compress: bool,
    /// Append the CRC-64 of the file; zero otherwise (`rdbchecksum`).
    pub checksum: bool,
    /// AUX fields written after the header, in order (`redis-ver`, `redis-bits`, `ctime`, ...).
    pub aux: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            compress: true,
            checksum: true,
            aux: Vec::new(),
        }
    }
}

/// Writes an RDB file to `out` as it goes: the header and AUX fields on creation, then
/// databases and keys, then the end marker and checksum on [`RdbWriter::finish`].
pub struct RdbWriter<W: Write> {
    out: W,
    crc: u64,
    written: u64,
    compress: bool,
    checksum: bool,
    list_size: i64,
    buf: Vec<u8>,
    /// A database has been started: function libraries can no longer be written.
    in_data: bool,
}

impl<W: Write> std::fmt::Debug for RdbWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdbWriter")
            .field("written", &self.written)
            .finish()
    }
}

impl<W: Write> RdbWriter<W> {
    /// Writes `REDIS0010` and the AUX fields.
    pub fn new(out: W, opts: WriteOptions) -> io::Result<Self> {
        let mut w = RdbWriter {
            out,
            crc: 0,
            written: 0,
            compress: opts.compress,
            checksum: opts.checksum,
            list_size: keel_store::CompactLimits::default().list_size,
            buf: Vec::new(),
            in_data: false,
        };
        w.buf
            .extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
        for (k, v) in &opts.aux {
            w.buf.push(OP_AUX);
            put_string(&mut w.buf, k, w.compress);
            put_string(&mut w.buf, v, w.compress);
        }
        w.flush_buf()?;
        Ok(w)
    }

    /// Sets the list node size (`list-max-listpack-size`) lists are split by; Redis's default
    /// (-2: 8 KiB per node) until called.
    pub fn set_list_size(&mut self, list_size: i64) {
        self.list_size = list_size;
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        let mut buf = std::mem::take(&mut self.buf);
        let r = self.emit(&mut buf);
        self.buf = buf;
        r
    }

    /// Writes out and empties `buf`, counting its bytes into the checksum.
    fn emit(&mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        if self.checksum {
            self.crc = crc64::update(self.crc, buf);
        }
        self.written += buf.len() as u64;
        self.out.write_all(buf)?;
        buf.clear();
        Ok(())
    }

    /// Writes function libraries (each library's whole code), one record each in the order
    /// given, where Redis 7.0 writes them: after the AUX fields, before the first database. An
    /// error once a database has been started.
    pub fn write_libraries(&mut self, libs: &[bytes::Bytes]) -> io::Result<()> {
        if self.in_data {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "function libraries are written before the first database",
            ));
        }
        for code in libs {
            super::function::put_library(&mut self.buf, code, self.compress);
            self.flush_buf()?;
        }
        Ok(())
    }

    /// Starts database `db`, with the sizing hints Redis writes beside it: how many keys follow
    /// and how many of them have an expiry.
    pub fn select_db(&mut self, db: u64, keys: u64, volatile: u64) -> io::Result<()> {
        self.in_data = true;
        self.buf.push(OP_SELECTDB);
        put_len(&mut self.buf, db);
        self.buf.push(OP_RESIZEDB);
        put_len(&mut self.buf, keys);
        put_len(&mut self.buf, volatile);
        self.flush_buf()
    }

    /// Writes one key: its expiry (absolute Unix milliseconds) if any, type, name and value.
    pub fn write_entry(
        &mut self,
        key: &[u8],
        value: &Value,
        expire_at_ms: Option<u64>,
    ) -> io::Result<()> {
        self.in_data = true;
        if let Some(at) = expire_at_ms {
            self.buf.push(OP_EXPIRETIME_MS);
            self.buf.extend_from_slice(&at.to_le_bytes());
        }
        let mut body = std::mem::take(&mut self.buf);
        let ty = type_byte(value);
        body.push(ty);
        put_string(&mut body, key, self.compress);
        let r = if matches!(value, Value::ListPacked(_) | Value::List(_)) {
            // A long list goes out node by node rather than whole.
            let (compress, list_size) = (self.compress, self.list_size);
            put_list(&mut body, value, compress, list_size, |b| {
                if b.len() >= STREAM_CHUNK {
                    self.emit(b)
                } else {
                    Ok(())
                }
            })
        } else {
            put_value(&mut body, value, self.compress, self.list_size);
            Ok(())
        };
        self.buf = body;
        r?;
        self.flush_buf()
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// Writes the end marker and the checksum (zero when checksums are off), flushes, and
    /// hands back the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.buf.push(OP_EOF);
        self.flush_buf()?;
        let crc = if self.checksum { self.crc } else { 0 };
        self.buf.extend_from_slice(&crc.to_le_bytes());
        self.flush_buf()?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The type byte Redis 7.0 writes for a value in this encoding.
pub(crate) fn type_byte(v: &Value) -> u8 {
    match v {
        Value::Str(_) => T_STRING,
        Value::HashPacked(_) => T_HASH_LISTPACK,
        Value::Hash(_) => T_HASH,
        Value::SetInts(_) => T_SET_INTSET,
        Value::SetPacked(_) | Value::Set(_) => T_SET,
        Value::ListPacked(_) | Value::List(_) => T_LIST_QUICKLIST_2,
        Value::ZSetPacked(_) => T_ZSET_LISTPACK,
        Value::ZSet(_) => T_ZSET_2,
        Value::Bloom(_)
        | Value::Roaring(_)
        | Value::Roaring64(_)
        | Value::Index(_)
        | Value::Cuckoo(_)
        | Value::Cms(_)
        | Value::TopK(_)
        | Value::TDigest(_) => T_MODULE_2,
        Value::Stream(_) => super::stream::T_STREAM_LISTPACKS_2,
    }
}

/// The value part of a record (what follows the key), for a value of type `type_byte(v)`.
pub(crate) fn put_value(out: &mut Vec<u8>, v: &Value, compress: bool, list_size: i64) {
    match v {
        Value::Str(s) => put_string(out, s.as_slice(), compress),
        Value::HashPacked(_) => {
            let mut lp = Listpack::new();
            if let Some(h) = HashRef::of(v) {
                h.for_each(|f, x| {
                    lp.push(f);
                    lp.push(x);
                });
            }
            put_string(out, &lp.finish(), compress);
        }
        Value::Hash(_) => {
            if let Some(h) = HashRef::of(v) {
                put_len(out, h.len() as u64);
                h.for_each(|f, x| {
                    put_string(out, f, compress);
                    put_string(out, x, compress);
                });
            }
        }
        Value::SetInts(_) => {
            let mut ints = Vec::new();
            v.set_visit(|m| {
                ints.extend(parse_i64(m));
                true
            });
            ints.sort_unstable();
            put_string(out, &intset(&ints), compress);
        }
        Value::SetPacked(_) | Value::Set(_) => {
            put_len(out, v.set_len() as u64);
            v.set_visit(|m| {
                put_string(out, m, compress);
                true
            });
        }
        Value::ListPacked(_) | Value::List(_) => {
            // Nothing is written out here, so this cannot fail.
            let _ = put_list(out, v, compress, list_size, |_| Ok(()));
        }
        Value::ZSetPacked(_) => {
            let mut lp = Listpack::new();
            keel_store::zset::for_each_in(v, 0, usize::MAX, false, |m, s| {
                lp.push(m);
                lp.push(score_text(s).as_bytes());
            });
            put_string(out, &lp.finish(), compress);
        }
        Value::ZSet(_) => {
            put_len(out, keel_store::zset::len(v) as u64);
            // Highest rank first, as Redis walks its skiplist from the tail.
            keel_store::zset::for_each_in(v, 0, usize::MAX, true, |m, s| {
                put_string(out, m, compress);
                out.extend_from_slice(&s.to_le_bytes());
            });
        }
        Value::Bloom(chain) => put_bloom(out, chain, compress),
        Value::Roaring(b) => put_roaring(out, ROARING_TYPE_NAME, &roaring::save32(b), compress),
        Value::Roaring64(b) => put_roaring(out, ROARING64_TYPE_NAME, &roaring::save64(b), compress),
        Value::Index(index) => super::index::put_index(out, index, compress),
        Value::Cuckoo(cf) => super::sketch::put_cuckoo(out, cf, compress),
        Value::Cms(cms) => super::sketch::put_cms(out, cms, compress),
        Value::TopK(t) => super::topk_tdigest::put_topk(out, t, compress),
        Value::TDigest(t) => super::topk_tdigest::put_tdigest(out, t),
        Value::Stream(s) => super::stream::put_stream(out, s, compress),
    }
}

/// Buffered bytes past which a list being written is handed to the output between nodes.
const STREAM_CHUNK: usize = 1 << 20;

/// A list as a quicklist: the node count, then each node (container, listpack). The nodes are
/// sized first, then built one at a time; `after_node` sees the buffer after each node and may
/// write it out.
fn put_list(
    out: &mut Vec<u8>,
    v: &Value,
    compress: bool,
    list_size: i64,
    mut after_node: impl FnMut(&mut Vec<u8>) -> io::Result<()>,
) -> io::Result<()> {
    let mut counts: Vec<usize> = Vec::new();
    let (mut bytes, mut count) = (LISTPACK_EMPTY, 0usize);
    keel_store::list::range_with(v, 0, -1, |e| {
        if count > 0 && !node_allows(bytes, count, e.len(), list_size) {
            counts.push(count);
            (bytes, count) = (LISTPACK_EMPTY, 0);
        }
        bytes += Listpack::entry_len(e);
        count += 1;
    });
    if count > 0 {
        counts.push(count);
    }
    put_len(out, counts.len() as u64);
    let mut start = 0usize;
    for c in counts {
        let mut lp = Listpack::new();
        let last = start + c - 1;
        keel_store::list::range_with(v, start as i64, last as i64, |e| lp.push(e));
        put_len(out, CONTAINER_PACKED);
        put_string(out, &lp.finish(), compress);
        start += c;
        after_node(out)?;
    }
    Ok(())
}

/// A Bloom filter as RedisBloom 2.4 saves its `MBbloom--` type: module id, then as module
/// opcodes the chain's size, link count, options and growth, and per link its capacity, error,
/// hash count, bits per entry, bit count, n2, bit array and item count; then the end opcode.
fn put_bloom(out: &mut Vec<u8>, chain: &Chain, compress: bool) {
    let id = module_id(BLOOM_TYPE_NAME, BLOOM_ENCODING_VERSION).unwrap_or_default();
    put_len(out, id);
    // The dump header holds every scalar in a fixed layout; read them back from it.
    let h = chain.header_bytes();
    let u32_at = |at: usize| -> u64 {
        h.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(|b| u64::from(u32::from_le_bytes(b)))
            .unwrap_or_default()
    };
    let u64_at = |at: usize| -> u64 {
        h.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .unwrap_or_default()
    };
    let uint = |out: &mut Vec<u8>, n: u64| {
        put_len(out, MOD_UINT);
        put_len(out, n);
    };
    let double = |out: &mut Vec<u8>, bits: u64| {
        put_len(out, MOD_DOUBLE);
        out.extend_from_slice(&bits.to_le_bytes());
    };
    uint(out, u64_at(0));
    uint(out, u32_at(8));
    uint(out, u32_at(12));
    uint(out, u32_at(16));
    for (i, link) in chain.links().iter().enumerate() {
        // Link fields: bytes, bits, size, error, bpe, hashes, capacity, n2.
        let at = 20 + 53 * i;
        uint(out, link.capacity());
        double(out, link.error().to_bits());
        uint(out, u64::from(link.hashes()));
        double(out, link.bpe().to_bits());
        uint(out, link.bits());
        uint(
            out,
            h.get(at + 52).copied().map(u64::from).unwrap_or_default(),
        );
        put_len(out, MOD_STRING);
        put_string(out, link.bytes(), compress);
        uint(out, link.size());
    }
    put_len(out, MOD_EOF);
}

/// A Roaring bitmap as redis-roaring saves it: module id, one string opcode holding the
/// serialized bitmap, the end opcode.
fn put_roaring(out: &mut Vec<u8>, name: &[u8; 9], bytes: &[u8], compress: bool) {
    put_len(
        out,
        module_id(name, ROARING_ENCODING_VERSION).unwrap_or_default(),
    );
    put_len(out, MOD_STRING);
    put_string(out, bytes, compress);
    put_len(out, MOD_EOF);
}

/// Intset: the narrowest of 2, 4 or 8 bytes that holds every member, the count, then the
/// members ascending, all little-endian.
pub(crate) fn intset(sorted: &[i64]) -> Vec<u8> {
    let width: usize = if sorted.iter().all(|&i| i16::try_from(i).is_ok()) {
        2
    } else if sorted.iter().all(|&i| i32::try_from(i).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * sorted.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    for &i in sorted {
        out.extend_from_slice(&i.to_le_bytes()[..width]);
    }
    out
}

/// Redis's quicklist rule for adding an element of `elem_len` bytes to a node whose listpack is
/// `node_bytes` long and holds `count` elements: a negative fill caps the node's bytes (4 to 64
/// KiB), a positive one its elements, under an 8 KiB ceiling. Eight bytes are added for the
/// entry's own overhead, as Redis estimates.
fn node_allows(node_bytes: usize, count: usize, elem_len: usize, fill: i64) -> bool {
    const LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
    const SAFETY_LIMIT: usize = 8192;
    let new_size = node_bytes + elem_len + 8;
    if fill < 0 {
        let level = usize::try_from(fill.unsigned_abs() - 1).unwrap_or(usize::MAX);
        if LEVELS.get(level).is_some_and(|&max| new_size <= max) {
            return true;
        }
    }
    new_size <= SAFETY_LIMIT && i64::try_from(count).is_ok_and(|c| c < fill)
}

/// A score as Redis 7.0 writes it into a listpack: an integral value below 2^52 in magnitude
/// as an integer, otherwise `%.17g` (`inf`, `-inf`, and `-0` for negative zero).
pub(crate) fn score_text(s: f64) -> String {
    if s.is_nan() {
        return "nan".into();
    }
    if s.is_infinite() {
        return if s > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if s == 0.0 {
        return if s.is_sign_negative() { "-0" } else { "0" }.into();
    }
    if s > -4_503_599_627_370_495.0 && s < 4_503_599_627_370_496.0 && s == s.trunc() {
        return (s as i64).to_string();
    }
    format_g17(s)
}

/// C's `printf("%.17g")` for a finite, nonzero value.
fn format_g17(v: f64) -> String {
    let e = format!("{v:.16e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..17).contains(&x) {
        let sign = if x < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant), x.unsigned_abs())
    } else {
        let decimals = usize::try_from(16 - x).unwrap_or(0);
        trim(&format!("{v:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_go_after_aux_and_read_back_in_order() {
        use super::super::{RdbItem, RdbReader};
        use bytes::Bytes;
        let long = Bytes::from("#!lua name=long\n".to_string() + &"return 1 ".repeat(20));
        let short = Bytes::from_static(b"#!lua name=s\nx");
        let opts = WriteOptions {
            aux: vec![(b"redis-ver".to_vec(), b"7.0.15".to_vec())],
            ..WriteOptions::default()
        };
        let mut w = RdbWriter::new(Vec::new(), opts).expect("header");
        w.write_libraries(&[long.clone(), short.clone()])
            .expect("libraries");
        w.select_db(0, 1, 0).expect("select");
        w.write_entry(b"k", &Value::str(b"v"), None).expect("key");
        assert_eq!(
            w.write_libraries(std::slice::from_ref(&short))
                .map_err(|e| e.kind()),
            Err(io::ErrorKind::InvalidInput)
        );
        let f = w.finish().expect("finish");
        // Header (9) and the AUX field (18), then the first library record, compressed.
        assert_eq!(&f[27..29], &[0xf5, 0xc3]);
        let mut r = RdbReader::new(&f).expect("reads");
        assert_eq!(r.next_item(), Ok(Some(RdbItem::Library(long))));
        assert_eq!(r.next_item(), Ok(Some(RdbItem::Library(short))));
        assert!(matches!(r.next_item(), Ok(Some(RdbItem::Entry(_)))));
        assert_eq!(r.next_item(), Ok(None));
    }

    #[test]
    fn scores_print_as_redis_7_0_does() {
        assert_eq!(score_text(1.0), "1");
        assert_eq!(score_text(-3.0), "-3");
        assert_eq!(score_text(1.5), "1.5");
        assert_eq!(score_text(0.1), "0.10000000000000001");
        assert_eq!(score_text(-0.0), "-0");
        assert_eq!(score_text(1e20), "1e+20");
        assert_eq!(score_text(1.5e-7), "1.4999999999999999e-07");
        assert_eq!(score_text(f64::INFINITY), "inf");
        assert_eq!(score_text(4_503_599_627_370_496.0), "4503599627370496");
    }
}
