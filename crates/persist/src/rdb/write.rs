//! Writing RDB files (version 10, the one Redis 7.0 writes) from store values, streaming.
//!
//! Every layout written here is described in `crates/persist/RDB.md`. The writer encodes each
//! value the way Redis 7.0 does for the same encoding, so Redis loads the file and a DUMP made
//! from it matches Redis's byte for byte where Redis's own output is deterministic.

use super::module::{MOD_DOUBLE, MOD_EOF, MOD_STRING, MOD_UINT};
use std::io::{self, Write};

use keel_store::bloom::Chain;
use keel_store::hash::HashRef;
use keel_store::num::parse_i64;
use keel_store::roaring;
use keel_store::Value;

use crate::{crc64, lzf};

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

/// The RDB version written, and the one DUMP payloads carry.
pub const RDB_VERSION: u16 = 10;

/// RedisBloom's module type for Bloom filters and the encoding version RedisBloom 2.4 writes.
pub const BLOOM_TYPE_NAME: &[u8; 9] = b"MBbloom--";
pub const BLOOM_ENCODING_VERSION: u64 = 4;

/// redis-roaring's module types for 32-bit and 64-bit bitmaps and the encoding version both
/// write.
pub const ROARING_TYPE_NAME: &[u8; 9] = b"reroaring";
pub const ROARING64_TYPE_NAME: &[u8; 9] = b"roaring64";
pub const ROARING_ENCODING_VERSION: u64 = 1;

/// Quicklist node containers.
const CONTAINER_PACKED: u64 = 2;

/// The characters a module type name is made of, in the order their 6-bit codes count.
const MODULE_CHARSET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The 64-bit id of a module type: its nine-character name in 6-bit codes, then 10 bits of
/// encoding version. `None` if a character is outside the charset.
pub fn module_id(name: &[u8; 9], encver: u64) -> Option<u64> {
    let mut id = 0u64;
    for &c in name {
        let code = MODULE_CHARSET.iter().position(|&x| x == c)?;
        id = (id << 6) | code as u64;
    }
    Some((id << 10) | (encver & 0x3ff))
}

/// The type name and encoding version a module id stands for.
pub fn module_name(id: u64) -> (String, u64) {
    let name = (0..9)
        .map(|i| {
            let code = (id >> (64 - 6 * (i + 1))) & 63;
            char::from(MODULE_CHARSET[code as usize])
        })
        .collect();
    (name, id & 0x3ff)
}

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
        Value::Bloom(_) | Value::Roaring(_) | Value::Roaring64(_) | Value::Index(_) => T_MODULE_2,
        Value::Stream(_) => super::stream::T_STREAM_LISTPACKS_2,
    }
}

/// A length: 6 bits, 14 bits, 32 or 64 bits big-endian.
pub(crate) fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if let Ok(n32) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n32.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// A string as Redis's `rdbSaveRawString` writes it: a canonical integer that fits 32 bits as
/// an integer encoding, else LZF when asked for, longer than 20 bytes and at least 4 bytes
/// shorter compressed, else length and bytes.
pub(crate) fn put_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if s.len() <= 11 {
        if let Some(i) = parse_i64(s) {
            if let Ok(b) = i8::try_from(i) {
                out.push(0xc0);
                out.push(b as u8);
                return;
            }
            if let Ok(h) = i16::try_from(i) {
                out.push(0xc1);
                out.extend_from_slice(&h.to_le_bytes());
                return;
            }
            if let Ok(w) = i32::try_from(i) {
                out.push(0xc2);
                out.extend_from_slice(&w.to_le_bytes());
                return;
            }
        }
    }
    if compress && s.len() > 20 {
        // Redis gives the compressor four bytes less room than the string takes.
        if let Some(c) = lzf::compress_within(s, s.len() - 4) {
            out.push(0xc3);
            put_len(out, c.len() as u64);
            put_len(out, s.len() as u64);
            out.extend_from_slice(&c);
            return;
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
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

/// A listpack with no entries: the 6-byte header and the end byte.
const LISTPACK_EMPTY: usize = 7;

/// Bytes of the back-length of an entry of `l` bytes.
fn backlen_bytes(l: u64) -> usize {
    match l {
        0..=127 => 1,
        128..=16_382 => 2,
        16_383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// A Redis listpack being built.
pub(crate) struct Listpack {
    body: Vec<u8>,
    count: usize,
}

impl Listpack {
    pub(crate) fn new() -> Self {
        Listpack {
            body: Vec::new(),
            count: 0,
        }
    }

    /// Bytes the finished listpack would take.
    fn bytes(&self) -> usize {
        LISTPACK_EMPTY + self.body.len()
    }

    /// Bytes `e` takes as an entry, back-length included.
    fn entry_len(e: &[u8]) -> usize {
        let l = match parse_i64(e) {
            Some(i) if (0..=127).contains(&i) => 1,
            Some(i) if (-4096..=4095).contains(&i) => 2,
            Some(i) if i16::try_from(i).is_ok() => 3,
            Some(i) if (-(1 << 23)..(1 << 23)).contains(&i) => 4,
            Some(i) if i32::try_from(i).is_ok() => 5,
            Some(_) => 9,
            None if e.len() < 64 => 1 + e.len(),
            None if e.len() < 4096 => 2 + e.len(),
            None => 5 + e.len(),
        };
        l + backlen_bytes(l as u64)
    }

    /// Appends an element: a canonical integer in the narrowest integer encoding, anything
    /// else as a string, each followed by its back-length.
    pub(crate) fn push(&mut self, e: &[u8]) {
        let start = self.body.len();
        let b = &mut self.body;
        match parse_i64(e) {
            Some(i) if (0..=127).contains(&i) => b.push(i as u8),
            Some(i) if (-4096..=4095).contains(&i) => {
                let u = (i as u16) & 0x1fff;
                b.push(0xc0 | (u >> 8) as u8);
                b.push(u as u8);
            }
            Some(i) if i16::try_from(i).is_ok() => {
                b.push(0xf1);
                b.extend_from_slice(&(i as i16).to_le_bytes());
            }
            Some(i) if (-(1 << 23)..(1 << 23)).contains(&i) => {
                b.push(0xf2);
                b.extend_from_slice(&(i as i32).to_le_bytes()[..3]);
            }
            Some(i) if i32::try_from(i).is_ok() => {
                b.push(0xf3);
                b.extend_from_slice(&(i as i32).to_le_bytes());
            }
            Some(i) => {
                b.push(0xf4);
                b.extend_from_slice(&i.to_le_bytes());
            }
            None if e.len() < 64 => {
                b.push(0x80 | e.len() as u8);
                b.extend_from_slice(e);
            }
            None if e.len() < 4096 => {
                b.push(0xe0 | (e.len() >> 8) as u8);
                b.push(e.len() as u8);
                b.extend_from_slice(e);
            }
            None => {
                b.push(0xf0);
                b.extend_from_slice(&(e.len() as u32).to_le_bytes());
                b.extend_from_slice(e);
            }
        }
        let l = (b.len() - start) as u64;
        // The back-length: 7 bits a byte, most significant first, every byte but the first
        // with its high bit set, so it can be read from its end.
        let n = backlen_bytes(l);
        for k in (0..n).rev() {
            let part = ((l >> (7 * k)) & 0x7f) as u8;
            b.push(if k == n - 1 { part } else { part | 0x80 });
        }
        self.count += 1;
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        let total = self.bytes();
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(self.count.min(65535) as u16).to_le_bytes());
        out.extend_from_slice(&self.body);
        out.push(0xff);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_ids_round_trip() {
        let id = module_id(BLOOM_TYPE_NAME, 4).expect("charset");
        assert_eq!(id, 0x3016_e5a2_89be_f804);
        assert_eq!(module_name(id), ("MBbloom--".to_string(), 4));
        assert_eq!(module_name(0x3016_e5a2_8982_1404).0, "MBbloomCF");
    }

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

    #[test]
    fn back_lengths_and_integer_entries() {
        let mut lp = Listpack::new();
        lp.push(b"5");
        lp.push(b"-3");
        lp.push(b"300");
        lp.push(b"5000");
        lp.push(b"a");
        lp.push(&[b'x'; 200]);
        let b = lp.finish();
        assert_eq!(&b[6..8], &[0x05, 0x01]);
        assert_eq!(&b[8..11], &[0xdf, 0xfd, 0x02]);
        assert_eq!(&b[11..14], &[0xc1, 0x2c, 0x02]);
        assert_eq!(&b[14..18], &[0xf1, 0x88, 0x13, 0x03]);
        assert_eq!(&b[18..21], &[0x81, b'a', 0x02]);
        // 2-byte header + 200 bytes = 202: back-length 0x01, 0xca.
        assert_eq!(&b[b.len() - 3..], &[0x01, 0xca, 0xff]);
    }

    #[test]
    fn entry_sizes_match_what_push_writes() {
        let samples: Vec<Vec<u8>> = vec![
            b"5".to_vec(),
            b"-3".to_vec(),
            b"300".to_vec(),
            b"5000".to_vec(),
            b"-8000000".to_vec(),
            b"2000000000".to_vec(),
            b"-9223372036854775808".to_vec(),
            b"007".to_vec(),
            vec![b'x'; 63],
            vec![b'x'; 64],
            vec![b'x'; 4095],
            vec![b'x'; 4096],
            vec![b'x'; 20_000],
        ];
        for e in samples {
            let mut lp = Listpack::new();
            lp.push(&e);
            assert_eq!(
                lp.finish().len(),
                LISTPACK_EMPTY + Listpack::entry_len(&e),
                "{}",
                e.len()
            );
        }
    }

    #[test]
    fn strings_pick_integer_lzf_or_raw() {
        let enc = |s: &[u8], c: bool| {
            let mut o = Vec::new();
            put_string(&mut o, s, c);
            o
        };
        assert_eq!(enc(b"-5", true), vec![0xc0, 0xfb]);
        assert_eq!(enc(b"12345", true), vec![0xc1, 0x39, 0x30]);
        assert_eq!(enc(b"2147483647", true)[0], 0xc2);
        assert_eq!(enc(b"2147483648", true)[0], 10);
        assert_eq!(enc(b"007", true), b"\x03007".to_vec());
        let long = [b'a'; 100];
        assert_eq!(enc(&long, true)[0], 0xc3);
        assert_eq!(enc(&long, false)[..2], [0x40, 100]);
    }
}
