//! Reading RDB files, versions 1 to 11 as far as the core types go (Redis 7.0 writes 10).

use bytes::Bytes;

use super::{Pairs, RdbEntry, RdbError, RdbErrorKind, RdbItem, RdbValue};
use crate::{crc64, lzf};

pub(crate) const OP_FUNCTION2: u8 = 0xf5;
/// The library record of Redis 7.0's release candidates, which 7.0 still loads.
pub(crate) const OP_FUNCTION: u8 = 0xf6;
const OP_MODULE_AUX: u8 = 0xf7;
const OP_IDLE: u8 = 0xf8;
const OP_FREQ: u8 = 0xf9;
const OP_AUX: u8 = 0xfa;
const OP_RESIZEDB: u8 = 0xfb;
const OP_EXPIRETIME_MS: u8 = 0xfc;
const OP_EXPIRETIME: u8 = 0xfd;
const OP_SELECTDB: u8 = 0xfe;
const OP_EOF: u8 = 0xff;

const T_STRING: u8 = 0;
const T_LIST: u8 = 1;
const T_SET: u8 = 2;
const T_ZSET: u8 = 3;
const T_HASH: u8 = 4;
const T_ZSET_2: u8 = 5;
const T_MODULE_2: u8 = 7;
const T_HASH_ZIPMAP: u8 = 9;
const T_LIST_ZIPLIST: u8 = 10;
const T_SET_INTSET: u8 = 11;
const T_ZSET_ZIPLIST: u8 = 12;
const T_HASH_ZIPLIST: u8 = 13;
const T_LIST_QUICKLIST: u8 = 14;
const T_STREAM_LISTPACKS: u8 = 15;
const T_HASH_LISTPACK: u8 = 16;
const T_ZSET_LISTPACK: u8 = 17;
const T_LIST_QUICKLIST_2: u8 = 18;
const T_STREAM_LISTPACKS_2: u8 = 19;
const T_SET_LISTPACK: u8 = 20;
const T_STREAM_LISTPACKS_3: u8 = 21;

use keel_store::stream::{Consumer, Group, Groups, Pending, Stream, StreamId};

const MAX_VERSION: u32 = 11;

/// A bounds-checked reader over a byte slice. `base` is the file offset of `buf[0]`; `exact` is
/// false inside decompressed blobs, whose errors then name the blob's own offset.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    exact: bool,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a [u8], base: usize, exact: bool) -> Self {
        Cursor {
            buf,
            pos: 0,
            base,
            exact,
        }
    }

    fn offset(&self) -> usize {
        if self.exact {
            self.base + self.pos
        } else {
            self.base
        }
    }

    fn err_at(&self, at: usize, kind: RdbErrorKind) -> RdbError {
        RdbError {
            offset: if self.exact {
                self.base + at
            } else {
                self.base
            },
            kind,
        }
    }

    fn err(&self, kind: RdbErrorKind) -> RdbError {
        self.err_at(self.pos, kind)
    }

    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], RdbError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or_else(|| self.err(RdbErrorKind::Truncated))?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| self.err(RdbErrorKind::Truncated))?;
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RdbError> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8, RdbError> {
        Ok(self.array::<1>()?[0])
    }
}

/// A length as RDB encodes it, or a special string encoding.
enum Len {
    Plain(u64),
    Special(u8),
}

fn read_len_or_special(c: &mut Cursor<'_>) -> Result<Len, RdbError> {
    let at = c.pos;
    let first = c.u8()?;
    match first >> 6 {
        0 => Ok(Len::Plain(u64::from(first & 0x3f))),
        1 => Ok(Len::Plain(
            u64::from(first & 0x3f) << 8 | u64::from(c.u8()?),
        )),
        2 => match first {
            0x80 => Ok(Len::Plain(u64::from(u32::from_be_bytes(c.array()?)))),
            0x81 => Ok(Len::Plain(u64::from_be_bytes(c.array()?))),
            _ => Err(c.err_at(at, RdbErrorKind::Invalid("length prefix"))),
        },
        _ => Ok(Len::Special(first & 0x3f)),
    }
}

fn read_len(c: &mut Cursor<'_>) -> Result<u64, RdbError> {
    let at = c.pos;
    match read_len_or_special(c)? {
        Len::Plain(n) => Ok(n),
        Len::Special(_) => Err(c.err_at(
            at,
            RdbErrorKind::Invalid("string encoding where a length belongs"),
        )),
    }
}

/// A length used as a count of elements or bytes still to come in this cursor.
fn read_count(c: &mut Cursor<'_>) -> Result<usize, RdbError> {
    let at = c.pos;
    let n = read_len(c)?;
    usize::try_from(n).map_err(|_| c.err_at(at, RdbErrorKind::Truncated))
}

/// Capacity for `n` claimed items, each taking at least one byte: never more than the input holds.
fn cap(c: &Cursor<'_>, n: usize) -> usize {
    n.min(c.remaining())
}

fn read_string(c: &mut Cursor<'_>) -> Result<Vec<u8>, RdbError> {
    read_string_at(c).map(|(s, _)| s)
}

/// Reads a string; also says whether its bytes lie in the file verbatim (not compressed), so
/// nested structures inside it can report exact offsets.
fn read_string_at(c: &mut Cursor<'_>) -> Result<(Vec<u8>, bool), RdbError> {
    let at = c.pos;
    match read_len_or_special(c)? {
        Len::Plain(n) => {
            let n = usize::try_from(n).map_err(|_| c.err_at(at, RdbErrorKind::Truncated))?;
            Ok((c.take(n)?.to_vec(), true))
        }
        Len::Special(0) => Ok((i64::from(c.u8()? as i8).to_string().into_bytes(), false)),
        Len::Special(1) => Ok((
            i64::from(i16::from_le_bytes(c.array()?))
                .to_string()
                .into_bytes(),
            false,
        )),
        Len::Special(2) => Ok((
            i64::from(i32::from_le_bytes(c.array()?))
                .to_string()
                .into_bytes(),
            false,
        )),
        Len::Special(3) => {
            let clen = read_count(c)?;
            let ulen = read_count(c)?;
            let data = c.take(clen)?;
            let out = lzf::decompress(data, ulen).map_err(|e| c.err_at(at, e.into()))?;
            Ok((out, false))
        }
        Len::Special(_) => Err(c.err_at(at, RdbErrorKind::Invalid("string encoding"))),
    }
}

/// Reads a string holding a nested structure, returning a cursor over it.
fn blob<'b>(c: &mut Cursor<'_>, store: &'b mut Vec<u8>) -> Result<Cursor<'b>, RdbError> {
    let at = c.pos;
    let (s, verbatim) = read_string_at(c)?;
    *store = s;
    if verbatim && c.exact {
        // Verbatim: the blob's bytes end where the cursor now stands.
        let start = c.offset().saturating_sub(store.len());
        Ok(Cursor::new(store, start, true))
    } else {
        Ok(Cursor::new(
            store,
            c.err_at(at, RdbErrorKind::Truncated).offset,
            false,
        ))
    }
}

fn read_double_str(c: &mut Cursor<'_>) -> Result<f64, RdbError> {
    let at = c.pos;
    match c.u8()? {
        253 => Ok(f64::NAN),
        254 => Ok(f64::INFINITY),
        255 => Ok(f64::NEG_INFINITY),
        n => {
            let s = c.take(usize::from(n))?;
            parse_f64(s).ok_or_else(|| c.err_at(at, RdbErrorKind::Invalid("score")))
        }
    }
}

fn parse_f64(s: &[u8]) -> Option<f64> {
    std::str::from_utf8(s).ok()?.parse::<f64>().ok()
}

/// Listpack: u32 total bytes, u16 count, entries (encoding, data, back-length), 0xff.
fn listpack(mut c: Cursor<'_>) -> Result<Vec<Vec<u8>>, RdbError> {
    let total = u32::from_le_bytes(c.array()?) as usize;
    if total != c.buf.len() {
        return Err(c.err_at(0, RdbErrorKind::Invalid("listpack size")));
    }
    let _count = c.array::<2>()?;
    let mut out = Vec::new();
    loop {
        let at = c.pos;
        let b = c.u8()?;
        if b == 0xff {
            break;
        }
        let item: Vec<u8> = if b & 0x80 == 0 {
            (b & 0x7f).to_string().into_bytes()
        } else if b & 0xc0 == 0x80 {
            c.take(usize::from(b & 0x3f))?.to_vec()
        } else if b & 0xe0 == 0xc0 {
            let raw = (u16::from(b & 0x1f) << 8) | u16::from(c.u8()?);
            // 13-bit two's complement.
            let v = i64::from(raw) - if raw & 0x1000 != 0 { 1 << 13 } else { 0 };
            v.to_string().into_bytes()
        } else if b & 0xf0 == 0xe0 {
            let n = (usize::from(b & 0x0f) << 8) | usize::from(c.u8()?);
            c.take(n)?.to_vec()
        } else {
            match b {
                0xf0 => {
                    let n = u32::from_le_bytes(c.array()?) as usize;
                    c.take(n)?.to_vec()
                }
                0xf1 => i16::from_le_bytes(c.array()?).to_string().into_bytes(),
                0xf2 => {
                    let [x, y, z] = c.array::<3>()?;
                    (i32::from_le_bytes([0, x, y, z]) >> 8)
                        .to_string()
                        .into_bytes()
                }
                0xf3 => i32::from_le_bytes(c.array()?).to_string().into_bytes(),
                0xf4 => i64::from_le_bytes(c.array()?).to_string().into_bytes(),
                _ => return Err(c.err_at(at, RdbErrorKind::Invalid("listpack entry encoding"))),
            }
        };
        let size = c.pos - at;
        let back = match size {
            0..=127 => 1,
            128..=16_382 => 2,
            16_383..=2_097_150 => 3,
            2_097_151..=268_435_454 => 4,
            _ => 5,
        };
        c.take(back)?;
        out.push(item);
    }
    if c.remaining() != 0 {
        return Err(c.err(RdbErrorKind::Invalid("bytes after listpack end")));
    }
    Ok(out)
}

/// Ziplist: u32 bytes, u32 tail offset, u16 count, entries (prevlen, encoding, data), 0xff.
fn ziplist(mut c: Cursor<'_>) -> Result<Vec<Vec<u8>>, RdbError> {
    let total = u32::from_le_bytes(c.array()?) as usize;
    if total != c.buf.len() {
        return Err(c.err_at(0, RdbErrorKind::Invalid("ziplist size")));
    }
    let _tail = c.array::<4>()?;
    let _count = c.array::<2>()?;
    let mut out = Vec::new();
    loop {
        let p = c.u8()?;
        if p == 0xff {
            break;
        }
        if p == 0xfe {
            c.take(4)?;
        }
        let at_enc = c.pos;
        let e = c.u8()?;
        let item = match e >> 6 {
            0 => c.take(usize::from(e & 0x3f))?.to_vec(),
            1 => {
                let n = (usize::from(e & 0x3f) << 8) | usize::from(c.u8()?);
                c.take(n)?.to_vec()
            }
            2 => {
                let n = u32::from_be_bytes(c.array()?) as usize;
                c.take(n)?.to_vec()
            }
            _ => match e {
                0xc0 => i16::from_le_bytes(c.array()?).to_string().into_bytes(),
                0xd0 => i32::from_le_bytes(c.array()?).to_string().into_bytes(),
                0xe0 => i64::from_le_bytes(c.array()?).to_string().into_bytes(),
                0xf0 => {
                    let [x, y, z] = c.array::<3>()?;
                    (i32::from_le_bytes([0, x, y, z]) >> 8)
                        .to_string()
                        .into_bytes()
                }
                0xfe => (c.u8()? as i8).to_string().into_bytes(),
                0xf1..=0xfd => ((e & 0x0f) - 1).to_string().into_bytes(),
                _ => return Err(c.err_at(at_enc, RdbErrorKind::Invalid("ziplist entry encoding"))),
            },
        };
        out.push(item);
    }
    if c.remaining() != 0 {
        return Err(c.err(RdbErrorKind::Invalid("bytes after ziplist end")));
    }
    Ok(out)
}

/// Intset: u32 width (2, 4 or 8), u32 count, then the members little-endian.
fn intset(mut c: Cursor<'_>) -> Result<Vec<Vec<u8>>, RdbError> {
    let at = c.pos;
    let width = u32::from_le_bytes(c.array()?) as usize;
    let n = u32::from_le_bytes(c.array()?) as usize;
    if !matches!(width, 2 | 4 | 8) {
        return Err(c.err_at(at, RdbErrorKind::Invalid("intset width")));
    }
    if n.checked_mul(width) != Some(c.remaining()) {
        return Err(c.err_at(at, RdbErrorKind::Invalid("intset size")));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let v = match width {
            2 => i64::from(i16::from_le_bytes(c.array()?)),
            4 => i64::from(i32::from_le_bytes(c.array()?)),
            _ => i64::from_le_bytes(c.array()?),
        };
        out.push(v.to_string().into_bytes());
    }
    Ok(out)
}

/// Zipmap (hashes before RDB 4): u8 count, then (len, key, len, free, value, free bytes)..., 0xff.
fn zipmap(mut c: Cursor<'_>) -> Result<Pairs, RdbError> {
    fn zlen(c: &mut Cursor<'_>) -> Result<Option<usize>, RdbError> {
        match c.u8()? {
            0xff => Ok(None),
            0xfe => Ok(Some(u32::from_le_bytes(c.array()?) as usize)),
            n => Ok(Some(usize::from(n))),
        }
    }
    let _count = c.u8()?;
    let mut out = Vec::new();
    while let Some(klen) = zlen(&mut c)? {
        let key = c.take(klen)?.to_vec();
        let vlen = zlen(&mut c)?.ok_or_else(|| c.err(RdbErrorKind::Invalid("zipmap value")))?;
        let free = usize::from(c.u8()?);
        let value = c.take(vlen)?.to_vec();
        c.take(free)?;
        out.push((key, value));
    }
    Ok(out)
}

fn pairs(c: &Cursor<'_>, items: Vec<Vec<u8>>) -> Result<Pairs, RdbError> {
    if items.len() & 1 == 1 {
        return Err(c.err(RdbErrorKind::Invalid(
            "odd number of entries in a map encoding",
        )));
    }
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    Ok(out)
}

fn scored(c: &Cursor<'_>, at: usize, items: Vec<Vec<u8>>) -> Result<Vec<(Vec<u8>, f64)>, RdbError> {
    pairs(c, items)?
        .into_iter()
        .map(|(m, s)| {
            parse_f64(&s)
                .map(|f| (m, f))
                .ok_or_else(|| c.err_at(at, RdbErrorKind::Invalid("score")))
        })
        .collect()
}

/// Sorts members by score, then by member bytes: the order a sorted set ranks them in. Skiplist
/// encodings are written from the highest rank down, and old files in hash-table order.
fn rank_order(mut v: Vec<(Vec<u8>, f64)>) -> Vec<(Vec<u8>, f64)> {
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// Module value: a sequence of (opcode, datum) ending with opcode 0.
fn skip_module_value(c: &mut Cursor<'_>) -> Result<(), RdbError> {
    loop {
        let at = c.pos;
        match read_len(c)? {
            0 => return Ok(()),
            1 | 2 => {
                read_len(c)?;
            }
            3 => {
                c.take(4)?;
            }
            4 => {
                c.take(8)?;
            }
            5 => {
                read_string(c)?;
            }
            _ => return Err(c.err_at(at, RdbErrorKind::Invalid("module opcode"))),
        }
    }
}

/// A function library record, its opcode already read: the library's code, as Redis 7.0 loads
/// it. Errors are [`RdbErrorKind::Library`] with Redis's reason.
fn read_library(c: &mut Cursor<'_>, op: u8) -> Result<Vec<u8>, RdbError> {
    let failed = |what: &'static str| {
        move |e: RdbError| RdbError {
            offset: e.offset,
            kind: RdbErrorKind::Library(what),
        }
    };
    if op == OP_FUNCTION2 {
        return read_string(c).map_err(failed("Failed loading library payload"));
    }
    // The release-candidate record: name, engine, a description flag, the description when the
    // flag is not zero, then the body without its `#!` line.
    let name = read_string(c).map_err(failed("Failed loading library name"))?;
    let engine = read_string(c).map_err(failed("Failed loading engine name"))?;
    // Read as Redis reads a length with no use for string encodings: `11xxxxxx` is its low bits.
    let has_description = match read_len_or_special(c)
        .map_err(failed("Failed loading library description indicator"))?
    {
        Len::Plain(n) => n,
        Len::Special(low_bits) => u64::from(low_bits),
    };
    if has_description != 0 {
        read_string(c).map_err(failed("Failed loading library description"))?;
    }
    let body = read_string(c).map_err(failed("Failed loading library blob"))?;
    // Redis joins the parts into `#!<engine> name=<name>\n<body>` with C-string formatting, so
    // each part ends at its first NUL byte.
    let c_str = |s: &[u8]| -> Vec<u8> { s.iter().copied().take_while(|&b| b != 0).collect() };
    let mut code = b"#!".to_vec();
    code.extend(c_str(&engine));
    code.extend_from_slice(b" name=");
    code.extend(c_str(&name));
    code.push(b'\n');
    code.extend(c_str(&body));
    Ok(code)
}

/// In a FUNCTION DUMP payload: reads the library record whose opcode (245 or 246, checked by
/// the caller) is at `at`. Returns the code and the offset just after the record.
pub(crate) fn read_library_at(data: &[u8], at: usize) -> Result<(Vec<u8>, usize), RdbError> {
    let mut c = Cursor::new(data, 0, true);
    c.pos = at;
    let op = c.u8()?;
    let code = read_library(&mut c, op)?;
    Ok((code, c.pos))
}

fn read_value(c: &mut Cursor<'_>, ty: u8, ty_at: usize) -> Result<RdbValue, RdbError> {
    let mut store = Vec::new();
    Ok(match ty {
        T_STRING => RdbValue::String(read_string(c)?),
        T_LIST | T_SET => {
            let n = read_count(c)?;
            let mut v = Vec::with_capacity(cap(c, n));
            for _ in 0..n {
                v.push(read_string(c)?);
            }
            if ty == T_LIST {
                RdbValue::List(v)
            } else {
                RdbValue::Set(v)
            }
        }
        T_ZSET | T_ZSET_2 => {
            let n = read_count(c)?;
            let mut v = Vec::with_capacity(cap(c, n));
            for _ in 0..n {
                let m = read_string(c)?;
                let s = if ty == T_ZSET_2 {
                    f64::from_le_bytes(c.array()?)
                } else {
                    read_double_str(c)?
                };
                v.push((m, s));
            }
            RdbValue::ZSet(rank_order(v))
        }
        T_HASH => {
            let n = read_count(c)?;
            let mut v = Vec::with_capacity(cap(c, n));
            for _ in 0..n {
                let f = read_string(c)?;
                v.push((f, read_string(c)?));
            }
            RdbValue::Hash(v)
        }
        T_LIST_QUICKLIST_2 => {
            let n = read_count(c)?;
            let mut v = Vec::new();
            for _ in 0..n {
                let at = c.pos;
                match read_len(c)? {
                    1 => v.push(read_string(c)?),
                    2 => v.extend(listpack(blob(c, &mut store)?)?),
                    _ => {
                        return Err(c.err_at(at, RdbErrorKind::Invalid("quicklist node container")))
                    }
                }
            }
            RdbValue::List(v)
        }
        T_LIST_QUICKLIST => {
            let n = read_count(c)?;
            let mut v = Vec::new();
            for _ in 0..n {
                v.extend(ziplist(blob(c, &mut store)?)?);
            }
            RdbValue::List(v)
        }
        T_LIST_ZIPLIST => RdbValue::List(ziplist(blob(c, &mut store)?)?),
        T_SET_INTSET => RdbValue::Set(intset(blob(c, &mut store)?)?),
        T_SET_LISTPACK => RdbValue::Set(listpack(blob(c, &mut store)?)?),
        T_HASH_LISTPACK | T_HASH_ZIPLIST => {
            let b = blob(c, &mut store)?;
            let items = if ty == T_HASH_LISTPACK {
                listpack(b)?
            } else {
                ziplist(b)?
            };
            RdbValue::Hash(pairs(c, items)?)
        }
        T_HASH_ZIPMAP => RdbValue::Hash(zipmap(blob(c, &mut store)?)?),
        T_ZSET_LISTPACK | T_ZSET_ZIPLIST => {
            let at = c.pos;
            let b = blob(c, &mut store)?;
            let items = if ty == T_ZSET_LISTPACK {
                listpack(b)?
            } else {
                ziplist(b)?
            };
            RdbValue::ZSet(rank_order(scored(c, at, items)?))
        }
        T_MODULE_2 => {
            let id = read_len(c)?;
            let start = c.pos;
            skip_module_value(c)?;
            RdbValue::Module {
                id,
                raw: c.buf.get(start..c.pos).unwrap_or_default().to_vec(),
            }
        }
        T_STREAM_LISTPACKS | T_STREAM_LISTPACKS_2 | T_STREAM_LISTPACKS_3 => {
            RdbValue::Stream(Box::new(read_stream(c, ty)?))
        }
        6 => return Err(c.err_at(ty_at, RdbErrorKind::Unsupported(ty))),
        _ => return Err(c.err_at(ty_at, RdbErrorKind::UnknownType(ty))),
    })
}

fn read_id(c: &mut Cursor<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId::new(read_len(c)?, read_len(c)?))
}

/// A stream of RDB type 15, 19 or 21 (layouts in `stream.rs`), checked
/// whole: nodes in ascending order, counts that add up, every pending id
/// owned by exactly one consumer.
fn read_stream(c: &mut Cursor<'_>, ty: u8) -> Result<Stream, RdbError> {
    let bad =
        |c: &Cursor<'_>, at: usize, what: &'static str| c.err_at(at, RdbErrorKind::Invalid(what));
    let mut s = Stream::new();
    let nodes = read_len(c)?;
    for _ in 0..nodes {
        let at = c.pos;
        let key = read_string(c)?;
        let key: [u8; 16] = key
            .as_slice()
            .try_into()
            .map_err(|_| bad(c, at, "stream node key"))?;
        let master = StreamId::from_be_bytes(key);
        let at = c.pos;
        let mut store = Vec::new();
        let elems = listpack(blob(c, &mut store)?)?;
        if !super::stream::load_node(&mut s, master, &elems) {
            return Err(bad(c, at, "stream node"));
        }
    }
    let at = c.pos;
    let length = read_len(c)?;
    let last_id = read_id(c)?;
    let (max_deleted, entries_added) = if ty == T_STREAM_LISTPACKS {
        (StreamId::MIN, length)
    } else {
        let _first = read_id(c)?;
        let max_deleted = read_id(c)?;
        (max_deleted, read_len(c)?)
    };
    if !s.finish_load(length, last_id, max_deleted, entries_added) {
        return Err(bad(c, at, "stream metadata"));
    }
    let ngroups = read_len(c)?;
    let mut groups = Groups::default();
    for _ in 0..ngroups {
        let at = c.pos;
        let name = read_string(c)?;
        let group_last = read_id(c)?;
        let entries_read = if ty == T_STREAM_LISTPACKS {
            estimate_entries_read(&s, group_last)
        } else {
            let n = read_len(c)?;
            (n != u64::MAX).then_some(n)
        };
        let mut group = Group {
            last_id: group_last,
            entries_read,
            ..Group::default()
        };
        let npel = read_len(c)?;
        for _ in 0..npel {
            let id = StreamId::from_be_bytes(c.array()?);
            let delivery_time = i64::from_le_bytes(c.array()?);
            let delivery_count = read_len(c)?;
            let p = Pending {
                consumer: Vec::new(),
                delivery_time,
                delivery_count,
            };
            if group.pel.insert(id, p).is_some() {
                return Err(bad(c, at, "duplicate stream PEL entry"));
            }
        }
        // Which PEL entries a consumer has claimed: tracked apart from the
        // names, since a consumer may be named "".
        let mut owned = std::collections::BTreeSet::new();
        let nconsumers = read_len(c)?;
        for _ in 0..nconsumers {
            let cname = read_string(c)?;
            let seen_time = i64::from_le_bytes(c.array()?);
            let active_time = if ty == T_STREAM_LISTPACKS_3 {
                i64::from_le_bytes(c.array()?)
            } else {
                seen_time
            };
            let mut consumer = Consumer {
                seen_time,
                active_time,
                ..Consumer::default()
            };
            let npending = read_len(c)?;
            for _ in 0..npending {
                let id = StreamId::from_be_bytes(c.array()?);
                match group.pel.get_mut(&id) {
                    Some(p) if owned.insert(id) => p.consumer.clone_from(&cname),
                    _ => return Err(bad(c, at, "stream consumer PEL")),
                }
                consumer.pending.insert(id);
            }
            if group.consumers.insert(cname, consumer).is_some() {
                return Err(bad(c, at, "duplicate stream consumer"));
            }
        }
        if owned.len() != group.pel.len() {
            return Err(bad(c, at, "stream PEL entry without a consumer"));
        }
        if groups.groups.insert(name, group).is_some() {
            return Err(bad(c, at, "duplicate stream group"));
        }
    }
    if ngroups > 0 {
        s.groups = Some(Box::new(groups));
    }
    Ok(s)
}

/// How many entries a group whose last id is `id` has read, as Redis
/// estimates it for files that do not record it: known only at the ends.
fn estimate_entries_read(s: &Stream, id: StreamId) -> Option<u64> {
    let added = s.entries_added();
    if added == 0 {
        return Some(0);
    }
    if s.is_empty() && id <= s.last_id() || id == s.last_id() {
        return Some(added);
    }
    if id > s.last_id() {
        return None;
    }
    let max_deleted = s.max_deleted_id();
    if max_deleted == StreamId::MIN || max_deleted < s.first_id() {
        if id < s.first_id() {
            return Some(added - s.len());
        }
        if id == s.first_id() {
            return Some(added - s.len() + 1);
        }
    }
    None
}

/// Reads an RDB file item by item. Create it with [`RdbReader::new`] (which checks the header),
/// then call [`RdbReader::next_item`] (keys and function libraries) or
/// [`RdbReader::next_entry`] (keys only) until it returns `Ok(None)` (end of file, checksum
/// verified when the file carries one) or an error.
pub struct RdbReader<'a> {
    c: Cursor<'a>,
    version: u32,
    db: u64,
    /// An expiry read for the next key: like Redis, it survives other opcodes in between.
    expire_at_ms: Option<i64>,
    aux: Pairs,
    libraries: Vec<Bytes>,
    /// The offset just after each AUX field, beside `aux`.
    aux_ends: Vec<usize>,
    /// The offset just after the last SELECTDB.
    db_at: usize,
    done: bool,
}

impl std::fmt::Debug for RdbReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdbReader")
            .field("version", &self.version)
            .field("offset", &self.c.pos)
            .finish()
    }
}

impl<'a> RdbReader<'a> {
    /// Checks the `REDIS` magic and the four-digit version.
    pub fn new(data: &'a [u8]) -> Result<Self, RdbError> {
        let mut c = Cursor::new(data, 0, true);
        // As Redis: a file too short for its header ended early; a header
        // that is not `REDIS` is a wrong signature.
        if data.len() < 9 && b"REDIS".starts_with(&data[..data.len().min(5)]) {
            return Err(RdbError {
                offset: 0,
                kind: RdbErrorKind::Truncated,
            });
        }
        let magic = c.take(5).map_err(|_| RdbError {
            offset: 0,
            kind: RdbErrorKind::BadMagic,
        })?;
        if magic != b"REDIS" {
            return Err(RdbError {
                offset: 0,
                kind: RdbErrorKind::BadMagic,
            });
        }
        let digits = c.take(4)?;
        let version = std::str::from_utf8(digits)
            .ok()
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u32>().ok())
            .ok_or(RdbError {
                offset: 5,
                kind: RdbErrorKind::Invalid("version digits"),
            })?;
        if version == 0 || version > MAX_VERSION {
            return Err(RdbError {
                offset: 9,
                kind: RdbErrorKind::BadVersion(version),
            });
        }
        Ok(RdbReader {
            c,
            version,
            db: 0,
            expire_at_ms: None,
            aux: Vec::new(),
            libraries: Vec::new(),
            aux_ends: Vec::new(),
            db_at: 0,
            done: false,
        })
    }

    /// The file's format version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The file offset reading has reached.
    pub fn offset(&self) -> usize {
        self.c.pos
    }

    /// For each AUX field of [`RdbReader::aux`], the offset just after it.
    pub fn aux_ends(&self) -> &[usize] {
        &self.aux_ends
    }

    /// The offset just after the SELECTDB that chose the current database (0 before any).
    pub fn db_selected_at(&self) -> usize {
        self.db_at
    }

    /// AUX fields (name, value) met so far, in file order.
    pub fn aux(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.aux
    }

    /// Function libraries met so far, in file order (whether [`RdbReader::next_item`] handed
    /// them out or [`RdbReader::next_entry`] passed over them).
    pub fn libraries(&self) -> &[Bytes] {
        &self.libraries
    }

    /// The next key, or `None` at the end of the file. Function libraries are passed over
    /// (and kept in [`RdbReader::libraries`]).
    pub fn next_entry(&mut self) -> Result<Option<RdbEntry>, RdbError> {
        loop {
            match self.next_item()? {
                Some(RdbItem::Entry(e)) => return Ok(Some(e)),
                Some(RdbItem::Library(_)) => {}
                None => return Ok(None),
            }
        }
    }

    /// The next key or function library, or `None` at the end of the file.
    pub fn next_item(&mut self) -> Result<Option<RdbItem>, RdbError> {
        if self.done {
            return Ok(None);
        }
        let c = &mut self.c;
        loop {
            let at = c.pos;
            let op = c.u8()?;
            match op {
                OP_AUX => {
                    let k = read_string(c)?;
                    let v = read_string(c)?;
                    self.aux.push((k, v));
                    self.aux_ends.push(c.pos);
                }
                OP_SELECTDB => {
                    self.db = read_len(c)?;
                    self.db_at = c.pos;
                }
                OP_RESIZEDB => {
                    read_len(c)?;
                    read_len(c)?;
                }
                OP_EXPIRETIME_MS => self.expire_at_ms = Some(i64::from_le_bytes(c.array()?)),
                OP_EXPIRETIME => {
                    self.expire_at_ms = Some(i64::from(i32::from_le_bytes(c.array()?)) * 1000)
                }
                OP_FREQ => {
                    c.u8()?;
                }
                OP_IDLE => {
                    read_len(c)?;
                }
                OP_FUNCTION2 | OP_FUNCTION => {
                    let code = Bytes::from(read_library(c, op)?);
                    self.libraries.push(code.clone());
                    return Ok(Some(RdbItem::Library(code)));
                }
                OP_MODULE_AUX => {
                    read_len(c)?;
                    read_len(c)?;
                    read_len(c)?;
                    skip_module_value(c)?;
                }
                OP_EOF => {
                    self.done = true;
                    if self.version >= 5 {
                        let body_end = c.pos;
                        let expected = u64::from_le_bytes(c.array()?);
                        if expected != 0 {
                            let actual = crc64::crc64(c.buf.get(..body_end).unwrap_or_default());
                            if actual != expected {
                                return Err(RdbError {
                                    offset: body_end,
                                    kind: RdbErrorKind::Checksum { expected, actual },
                                });
                            }
                        }
                    }
                    if c.remaining() != 0 {
                        return Err(c.err(RdbErrorKind::Invalid("bytes after the end of the file")));
                    }
                    return Ok(None);
                }
                ty => {
                    let key = read_string(c)?;
                    let value = read_value(c, ty, at)?;
                    return Ok(Some(RdbItem::Entry(RdbEntry {
                        db: self.db,
                        key,
                        expire_at_ms: self.expire_at_ms.take(),
                        value,
                    })));
                }
            }
        }
    }
}

/// Reads one value as a DUMP payload holds it: the type byte, then the value. Bytes after the
/// value are not looked at, as Redis does not.
pub(crate) fn read_type_and_value(data: &[u8]) -> Result<RdbValue, RdbError> {
    let mut c = Cursor::new(data, 0, true);
    let ty = c.u8()?;
    read_value(&mut c, ty, 0)
}

/// Reads a whole file, handing each key to `f`. Returns the AUX fields.
pub fn read_all(data: &[u8], mut f: impl FnMut(RdbEntry)) -> Result<Pairs, RdbError> {
    let mut r = RdbReader::new(data)?;
    while let Some(e) = r.next_entry()? {
        f(e);
    }
    Ok(r.aux)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version-10 file around `body`, with its checksum.
    fn file(body: &[u8]) -> Vec<u8> {
        let mut f = b"REDIS0010".to_vec();
        f.extend_from_slice(body);
        f.push(OP_EOF);
        let crc = crc64::crc64(&f);
        f.extend_from_slice(&crc.to_le_bytes());
        f
    }

    fn entries(f: &[u8]) -> Result<Vec<RdbEntry>, RdbError> {
        let mut v = Vec::new();
        read_all(f, |e| v.push(e))?;
        Ok(v)
    }

    fn one(body: &[u8]) -> RdbEntry {
        let mut v = entries(&file(body)).expect("reads");
        assert_eq!(v.len(), 1);
        v.remove(0)
    }

    fn strs(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn lengths_and_special_strings() {
        // key "k", value int8 -5.
        assert_eq!(
            one(b"\x00\x01k\xc0\xfb").value,
            RdbValue::String(b"-5".to_vec())
        );
        // int16 and int32.
        assert_eq!(
            one(b"\x00\x01k\xc1\x39\x30").value,
            RdbValue::String(b"12345".to_vec())
        );
        assert_eq!(
            one(b"\x00\x01k\xc2\xff\xff\xff\xff").value,
            RdbValue::String(b"-1".to_vec())
        );
        // 14-bit length (70 bytes).
        let mut body = b"\x00\x01k\x40\x46".to_vec();
        body.extend_from_slice(&[b'x'; 70]);
        assert_eq!(one(&body).value, RdbValue::String(vec![b'x'; 70]));
        // 32-bit big-endian length.
        let mut body = b"\x00\x01k\x80\x00\x00\x00\x03abc".to_vec();
        assert_eq!(one(&body).value, RdbValue::String(b"abc".to_vec()));
        // LZF string.
        let plain = b"abcabcabcabcabcabcabcabc".to_vec();
        let c = crate::lzf::compress(&plain);
        body = b"\x00\x01k\xc3".to_vec();
        body.push(c.len() as u8);
        body.push(plain.len() as u8);
        body.extend_from_slice(&c);
        assert_eq!(one(&body).value, RdbValue::String(plain));
    }

    #[test]
    fn opcodes_db_and_expiry() {
        let mut body = b"\xfa\x03foo\x03bar\xfe\x05\xfb\x01\x01".to_vec();
        body.extend_from_slice(b"\xfc");
        body.extend_from_slice(&1_700_000_000_123i64.to_le_bytes());
        body.extend_from_slice(b"\xf9\x07\x00\x01a\x01x");
        body.extend_from_slice(b"\xfd");
        body.extend_from_slice(&1_700_000_000i32.to_le_bytes());
        body.extend_from_slice(b"\xf8\x05\x00\x01b\x01y\x00\x01c\x01z");
        let f = file(&body);
        let mut r = RdbReader::new(&f).expect("header");
        let a = r.next_entry().expect("a").expect("a");
        assert_eq!((a.db, a.expire_at_ms), (5, Some(1_700_000_000_123)));
        let b = r.next_entry().expect("b").expect("b");
        assert_eq!(b.expire_at_ms, Some(1_700_000_000_000));
        let c = r.next_entry().expect("c").expect("c");
        assert_eq!((c.db, c.expire_at_ms), (5, None));
        assert_eq!(r.next_entry(), Ok(None));
        assert_eq!(r.aux(), &[(b"foo".to_vec(), b"bar".to_vec())]);
    }

    #[test]
    fn function_libraries_come_out_in_file_order() {
        // AUX, an expiry, a library, a release-candidate library, then the key the expiry
        // belongs to.
        let mut body = b"\xfa\x01a\x01b\xfc".to_vec();
        body.extend_from_slice(&1_700_000_000_123i64.to_le_bytes());
        body.extend_from_slice(b"\xf5\x15#!lua name=x\nreturn 1");
        body.extend_from_slice(b"\xf6\x01y\x03lua\x00\x08return 2");
        body.extend_from_slice(b"\xfe\x00\x00\x01k\x01v");
        let f = file(&body);
        let mut r = RdbReader::new(&f).expect("header");
        let lib = |s: &'static [u8]| Some(RdbItem::Library(Bytes::from_static(s)));
        assert_eq!(r.next_item(), Ok(lib(b"#!lua name=x\nreturn 1")));
        assert_eq!(r.next_item(), Ok(lib(b"#!lua name=y\nreturn 2")));
        let Ok(Some(RdbItem::Entry(e))) = r.next_item() else {
            panic!("a key");
        };
        assert_eq!(
            (e.key, e.expire_at_ms),
            (b"k".to_vec(), Some(1_700_000_000_123))
        );
        assert_eq!(r.next_item(), Ok(None));
        assert_eq!(r.libraries().len(), 2);
        // next_entry passes over the libraries and still keeps them.
        let mut r = RdbReader::new(&f).expect("header");
        assert_eq!(r.next_entry().expect("key").expect("key").key, b"k");
        assert_eq!(
            r.libraries(),
            &[
                Bytes::from_static(b"#!lua name=x\nreturn 1"),
                Bytes::from_static(b"#!lua name=y\nreturn 2")
            ]
        );
    }

    #[test]
    fn damaged_libraries_report_redis_reasons_and_offsets() {
        // The offsets are where redis-check-rdb reports these: after the last byte that read.
        let head = b"REDIS0010\xfa\x01a\x01b".to_vec(); // 14 bytes
        let err = |tail: &[u8]| {
            let mut f = head.clone();
            f.extend_from_slice(tail);
            entries(&f).expect_err("damaged")
        };
        let e = err(b"\xf5\x40");
        assert_eq!(
            (e.offset, e.kind.clone()),
            (16, RdbErrorKind::Library("Failed loading library payload"))
        );
        assert_eq!(
            e.kind.to_string(),
            "Failed loading library, Failed loading library payload"
        );
        let e = err(b"\xf6\x01x\x03LUA\x01");
        assert_eq!(
            (e.offset, e.kind),
            (
                22,
                RdbErrorKind::Library("Failed loading library description")
            )
        );
        let e = err(b"\xf6\x01x\x03LUA\x00\x05ab");
        assert_eq!(
            (e.offset, e.kind),
            (23, RdbErrorKind::Library("Failed loading library blob"))
        );
    }

    #[test]
    fn plain_collections_and_string_scores() {
        assert_eq!(
            one(b"\x01\x01k\x02\x01a\x01b").value,
            RdbValue::List(strs(&["a", "b"]))
        );
        assert_eq!(
            one(b"\x02\x01k\x01\x01a").value,
            RdbValue::Set(strs(&["a"]))
        );
        assert_eq!(
            one(b"\x04\x01k\x01\x01f\x01v").value,
            RdbValue::Hash(vec![(b"f".to_vec(), b"v".to_vec())])
        );
        let z = one(b"\x03\x01k\x03\x01a\x032.5\x01b\xfe\x01c\xff").value;
        assert_eq!(
            z,
            RdbValue::ZSet(vec![
                (b"c".to_vec(), f64::NEG_INFINITY),
                (b"a".to_vec(), 2.5),
                (b"b".to_vec(), f64::INFINITY)
            ])
        );
    }

    /// A ziplist of the given raw entries (each: encoding byte(s) and data).
    fn zl(entries: &[&[u8]]) -> Vec<u8> {
        let mut body = Vec::new();
        let mut prev = 0usize;
        for e in entries {
            body.push(prev as u8);
            body.extend_from_slice(e);
            prev = e.len() + 1;
        }
        let total = 10 + body.len() + 1;
        let mut z = (total as u32).to_le_bytes().to_vec();
        z.extend_from_slice(&0u32.to_le_bytes());
        z.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        z.extend_from_slice(&body);
        z.push(0xff);
        z
    }

    fn with_blob(ty: u8, blob: &[u8]) -> Vec<u8> {
        let mut b = vec![ty, 1, b'k', blob.len() as u8];
        b.extend_from_slice(blob);
        b
    }

    #[test]
    fn ziplist_encodings() {
        let z = zl(&[
            b"\x02hi",
            b"\xc0\x00\x80",
            b"\xd0\x01\x00\x00\x00",
            b"\xf0\xff\xff\xff",
            b"\xfe\x80",
            b"\xf3",
        ]);
        assert_eq!(
            one(&with_blob(T_LIST_ZIPLIST, &z)).value,
            RdbValue::List(strs(&["hi", "-32768", "1", "-1", "-128", "2"]))
        );
        let h = zl(&[b"\x01f", b"\x01v"]);
        assert_eq!(
            one(&with_blob(T_HASH_ZIPLIST, &h)).value,
            RdbValue::Hash(vec![(b"f".to_vec(), b"v".to_vec())])
        );
        let s = zl(&[b"\x01b", b"\x031.5", b"\x01a", b"\xf4"]);
        assert_eq!(
            one(&with_blob(T_ZSET_ZIPLIST, &s)).value,
            RdbValue::ZSet(vec![(b"b".to_vec(), 1.5), (b"a".to_vec(), 3.0)])
        );
        // Old quicklist: one node holding a ziplist.
        let mut q = vec![T_LIST_QUICKLIST, 1, b'k', 1, z.len() as u8];
        q.extend_from_slice(&z);
        assert_eq!(
            one(&q).value,
            RdbValue::List(strs(&["hi", "-32768", "1", "-1", "-128", "2"]))
        );
    }

    #[test]
    fn intset_zipmap_and_listpack_set() {
        let mut is = 4u32.to_le_bytes().to_vec();
        is.extend_from_slice(&2u32.to_le_bytes());
        is.extend_from_slice(&(-7i32).to_le_bytes());
        is.extend_from_slice(&70000i32.to_le_bytes());
        assert_eq!(
            one(&with_blob(T_SET_INTSET, &is)).value,
            RdbValue::Set(strs(&["-7", "70000"]))
        );
        let zm = b"\x02\x01a\x02\x01xy\x00\x02bb\x01\x00z\xff";
        assert_eq!(
            one(&with_blob(T_HASH_ZIPMAP, zm)).value,
            RdbValue::Hash(vec![
                (b"a".to_vec(), b"xy".to_vec()),
                (b"bb".to_vec(), b"z".to_vec())
            ])
        );
        // Listpack: "a", 5 (7-bit), -3 (13-bit), 300 (int16 entry).
        let entries: &[&[u8]] = &[
            b"\x81a\x02",
            b"\x05\x01",
            b"\xdf\xfd\x02",
            b"\xf1\x2c\x01\x03",
        ];
        let body: Vec<u8> = entries.concat();
        let mut lp = ((6 + body.len() + 1) as u32).to_le_bytes().to_vec();
        lp.extend_from_slice(&4u16.to_le_bytes());
        lp.extend_from_slice(&body);
        lp.push(0xff);
        assert_eq!(
            one(&with_blob(T_SET_LISTPACK, &lp)).value,
            RdbValue::Set(strs(&["a", "5", "-3", "300"]))
        );
    }

    #[test]
    fn module_values_are_kept_raw() {
        // id 42, then: uint 7, string "ab", double, EOF.
        let mut body = vec![T_MODULE_2, 1, b'k', 42, 2, 7, 5, 2, b'a', b'b', 4];
        body.extend_from_slice(&1.5f64.to_le_bytes());
        body.push(0);
        let raw = body[4..].to_vec();
        assert_eq!(one(&body).value, RdbValue::Module { id: 42, raw });
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bodies_never_panic(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let mut f = b"REDIS0010".to_vec();
            f.extend_from_slice(&body);
            if let Err(e) = read_all(&f, |_| {}) {
                proptest::prop_assert!(e.offset <= f.len(), "{}", e);
            }
        }
    }

    #[test]
    fn damage_is_reported_with_offsets() {
        // A claimed 1-billion-element list in a tiny file: an error, no huge reservation.
        let f = file(b"\x01\x01k\x80\x40\x00\x00\x00\x01a");
        // The second element would start at the end-of-file byte, offset 19.
        assert_eq!(entries(&f).map(|_| ()).expect_err("short").offset, 19);
        // Unknown type byte at offset 9.
        let e = entries(&file(b"\x63\x01k")).expect_err("unknown");
        assert_eq!((e.offset, e.kind), (9, RdbErrorKind::UnknownType(0x63)));
        // A wrong checksum.
        let mut f = file(b"\x00\x01k\x01v");
        let n = f.len();
        f[n - 1] ^= 1;
        assert!(matches!(
            entries(&f).expect_err("crc").kind,
            RdbErrorKind::Checksum { .. }
        ));
        // A zero checksum is not checked.
        f[n - 8..].fill(0);
        assert_eq!(entries(&f).expect("unchecked").len(), 1);
        // Trailing garbage.
        f.push(0);
        assert!(entries(&f).is_err());
    }
}
