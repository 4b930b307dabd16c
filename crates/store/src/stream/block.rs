//! One block of a stream: up to `stream-node-max-entries` consecutive entries
//! packed into one byte vector, as Redis packs them into one listpack.
//!
//! Layout (all integers are LEB128 varints):
//!
//! ```text
//! block   := nfields field*  entry*
//! field   := len bytes                      the master fields: the first entry's
//! entry   := flags ms_delta seq body
//! flags   := bit 0 deleted, bit 1 same fields as the master
//! ms_delta:= id.ms - master.ms
//! seq     := id.seq - master.seq when ms_delta is 0, else id.seq
//! body    := value*            (same fields: one value per master field)
//!          | nfields (field value)*
//! ```
//!
//! The master id is the block's key in the stream's index and is not stored.
//! A deleted entry keeps its bytes (only its flag changes) until the whole
//! block goes, as in Redis. Decoding never trusts the bytes: every read is
//! bounds-checked, and [`Block::validate`] checks a whole block (for loaders)
//! before it is used.

use super::id::StreamId;

pub(crate) const DELETED: u8 = 1;
pub(crate) const SAME_FIELDS: u8 = 2;

/// A block's bytes and the counters kept beside them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    pub(crate) data: Vec<u8>,
    /// Entries not deleted.
    pub(crate) live: u32,
    /// Entries flagged deleted.
    pub(crate) deleted: u32,
    /// The id of the last entry, deleted or not. It is at least every live
    /// entry's, though a deleted entry before it may be greater.
    pub(crate) last: StreamId,
    /// Where the entries start (after the master fields).
    pub(crate) entries_at: u32,
    /// The size Redis's listpack for the same entries would have, which
    /// decides (with `stream-node-max-bytes`) when a block is full, so that
    /// blocks split where Redis's nodes do and `~` trimming matches.
    pub(crate) lp_bytes: u32,
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A bounds-checked reader over block bytes.
#[derive(Clone, Copy)]
pub(crate) struct Cursor<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8], pos: usize) -> Cursor<'a> {
        Cursor { buf, pos }
    }

    pub(crate) fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    pub(crate) fn varint(&mut self) -> Option<u64> {
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return None;
            }
            n |= part << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint()?).ok()?;
        let end = self.pos.checked_add(len)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
}

/// The size of one listpack element holding `s` (Redis stores strings that
/// read as integers as integers).
pub(crate) fn lp_str_size(s: &[u8]) -> u64 {
    if let Some(n) = lp_int(s) {
        return lp_int_size(n);
    }
    let len = s.len() as u64;
    let head = if len < 64 {
        1
    } else if len < 4096 {
        2
    } else {
        5
    };
    with_backlen(head + len)
}

fn with_backlen(l: u64) -> u64 {
    l + match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

pub(crate) fn lp_int_size(n: i64) -> u64 {
    let enc = if (0..=127).contains(&n) {
        1
    } else if (-4096..=4095).contains(&n) {
        2
    } else if (-32768..=32767).contains(&n) {
        3
    } else if (-8_388_608..=8_388_607).contains(&n) {
        4
    } else if (-2_147_483_648..=2_147_483_647).contains(&n) {
        5
    } else {
        9
    };
    with_backlen(enc)
}

/// `s` as the integer a listpack would store it as: canonical decimal only.
fn lp_int(s: &[u8]) -> Option<i64> {
    crate::num::parse_i64(s)
}

/// One decoded entry header: where it is and what it holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawEntry {
    pub(crate) at: usize,
    pub(crate) flags: u8,
    pub(crate) id: StreamId,
    /// Where the body starts.
    pub(crate) body: usize,
    /// Where the next entry starts.
    pub(crate) end: usize,
}

impl Block {
    /// A block whose first entry is `id` with `fields`, which become the
    /// master fields.
    pub(crate) fn new(id: StreamId, fields: &[(&[u8], &[u8])]) -> Block {
        let mut b = Block::empty(fields.iter().map(|(f, _)| *f), fields.len());
        b.append(id, id, fields);
        b
    }

    /// A block with master fields `fields` (`n` of them) and no entry yet.
    pub(crate) fn empty<'f>(fields: impl Iterator<Item = &'f [u8]>, n: usize) -> Block {
        let mut data = Vec::new();
        put_varint(&mut data, n as u64);
        // 7: listpack header and end; then the master entry: count, deleted,
        // number of fields, the fields, and the terminating 0.
        let mut lp = 7 + lp_int_size(n as i64) + lp_int_size(0);
        for f in fields {
            put_varint(&mut data, f.len() as u64);
            data.extend_from_slice(f);
            lp += lp_str_size(f);
        }
        Block {
            entries_at: data.len() as u32,
            data,
            live: 0,
            deleted: 0,
            last: StreamId::MIN,
            lp_bytes: lp.min(u64::from(u32::MAX)) as u32,
        }
    }

    pub(crate) fn master_fields(&self) -> MasterIter<'_> {
        let mut c = Cursor::new(&self.data, 0);
        let n = c.varint().unwrap_or(0);
        MasterIter { c, left: n }
    }

    fn master_count(&self) -> u64 {
        Cursor::new(&self.data, 0).varint().unwrap_or(0)
    }

    /// The listpack size Redis would have for this block, counters included.
    pub(crate) fn lp_size(&self) -> u64 {
        u64::from(self.lp_bytes)
            + lp_int_size(i64::from(self.live))
            + lp_int_size(i64::from(self.deleted))
    }

    /// Whether Redis would start a new node rather than add an entry whose
    /// fields and values total `ele_bytes` to this one.
    pub(crate) fn is_full(&self, ele_bytes: u64, max_bytes: u64, max_entries: u64) -> bool {
        let max_bytes = if max_bytes == 0 || max_bytes > 1 << 30 {
            1 << 30
        } else {
            max_bytes
        };
        if self.lp_size() + ele_bytes >= max_bytes {
            return true;
        }
        max_entries != 0 && u64::from(self.live) + u64::from(self.deleted) >= max_entries
    }

    /// Append `id` (greater than every live id here, not below `master`) to
    /// the block keyed `master`.
    pub(crate) fn append(&mut self, master: StreamId, id: StreamId, fields: &[(&[u8], &[u8])]) {
        let same = self.master_count() == fields.len() as u64
            && self
                .master_fields()
                .zip(fields.iter())
                .all(|(m, (f, _))| m == *f);
        let ms_delta = id.ms - master.ms;
        let seq = if ms_delta == 0 {
            id.seq - master.seq
        } else {
            id.seq
        };
        let d = &mut self.data;
        d.push(if same { SAME_FIELDS } else { 0 });
        put_varint(d, ms_delta);
        put_varint(d, seq);
        // flags, ms-diff, seq-diff and the trailing lp-count.
        let mut lp = lp_int_size(if same { 2 } else { 0 })
            + lp_int_size(ms_delta.min(i64::MAX as u64) as i64)
            + lp_int_size(id.seq.wrapping_sub(master.seq) as i64);
        if same {
            for (_, v) in fields {
                put_varint(d, v.len() as u64);
                d.extend_from_slice(v);
                lp += lp_str_size(v);
            }
            lp += lp_int_size(fields.len() as i64 + 3);
        } else {
            put_varint(d, fields.len() as u64);
            lp += lp_int_size(fields.len() as i64);
            for (f, v) in fields {
                put_varint(d, f.len() as u64);
                d.extend_from_slice(f);
                put_varint(d, v.len() as u64);
                d.extend_from_slice(v);
                lp += lp_str_size(f) + lp_str_size(v);
            }
            lp += lp_int_size(fields.len() as i64 * 2 + 4);
        }
        self.lp_bytes = (u64::from(self.lp_bytes) + lp).min(u64::from(u32::MAX)) as u32;
        self.live += 1;
        self.last = id;
    }

    /// Read the entry header at `at`; `None` on malformed bytes.
    pub(crate) fn entry_at(&self, master: StreamId, at: usize) -> Option<RawEntry> {
        let mut c = Cursor::new(&self.data, at);
        let flags = c.byte()?;
        let ms_delta = c.varint()?;
        let seq = c.varint()?;
        let ms = master.ms.checked_add(ms_delta)?;
        let seq = if ms_delta == 0 {
            master.seq.checked_add(seq)?
        } else {
            seq
        };
        let body = c.pos;
        if flags & SAME_FIELDS != 0 {
            for _ in 0..self.master_count() {
                c.bytes()?;
            }
        } else {
            let n = c.varint()?;
            for _ in 0..n {
                c.bytes()?;
                c.bytes()?;
            }
        }
        Some(RawEntry {
            at,
            flags,
            id: StreamId { ms, seq },
            body,
            end: c.pos,
        })
    }

    /// Every entry, deleted ones included, in order.
    pub(crate) fn raw_entries(&self, master: StreamId) -> RawIter<'_> {
        RawIter {
            block: self,
            master,
            at: self.entries_at as usize,
        }
    }

    /// The fields and values of `e`.
    pub(crate) fn fields_of(&self, e: &RawEntry) -> FieldIter<'_> {
        let same = e.flags & SAME_FIELDS != 0;
        let mut body = Cursor::new(&self.data[..e.end], e.body);
        let left = if same {
            self.master_count()
        } else {
            body.varint().unwrap_or(0)
        };
        FieldIter {
            master: same.then(|| self.master_fields()),
            body,
            left,
        }
    }

    pub(crate) fn mark_deleted(&mut self, e: &RawEntry) {
        if let Some(f) = self.data.get_mut(e.at) {
            *f |= DELETED;
        }
        self.live = self.live.saturating_sub(1);
        self.deleted += 1;
    }

    /// Check a block read from outside (RDB, RESTORE): every entry decodes,
    /// ids ascend from `master`, and the counters match. Returns the block
    /// with its counters computed.
    pub(crate) fn validate(master: StreamId, data: Vec<u8>) -> Option<Block> {
        let mut c = Cursor::new(&data, 0);
        let n = c.varint()?;
        let mut lp = 7 + lp_int_size(i64::try_from(n).ok()?) + lp_int_size(0);
        for _ in 0..n {
            lp += lp_str_size(c.bytes()?);
        }
        let mut b = Block {
            entries_at: u32::try_from(c.pos).ok()?,
            data,
            live: 0,
            deleted: 0,
            last: master,
            lp_bytes: 0,
        };
        let mut at = b.entries_at as usize;
        let mut prev: Option<StreamId> = None;
        let mut live_top: Option<StreamId> = None;
        while at < b.data.len() {
            let e = b.entry_at(master, at)?;
            if e.flags & !(DELETED | SAME_FIELDS) != 0 {
                return None;
            }
            // The first entry is the master; live entries ascend, deleted
            // ones lie anywhere past the master (see `Stream::append`).
            let deleted = e.flags & DELETED != 0;
            let ok = match prev {
                None => e.id == master,
                Some(_) => e.id > master && (deleted || live_top.is_none_or(|t| e.id > t)),
            };
            if !ok {
                return None;
            }
            if !deleted {
                live_top = Some(e.id);
            }
            let mut fields = 0u64;
            for (f, v) in b.fields_of(&e) {
                lp += lp_str_size(f) + lp_str_size(v);
                fields += 1;
            }
            if fields == 0 {
                return None;
            }
            lp += 3 * 2 + 2;
            if e.flags & DELETED != 0 {
                b.deleted = b.deleted.checked_add(1)?;
            } else {
                b.live = b.live.checked_add(1)?;
            }
            prev = Some(e.id);
            at = e.end;
        }
        b.last = prev?;
        b.lp_bytes = lp.min(u64::from(u32::MAX)) as u32;
        Some(b)
    }
}

pub(crate) struct MasterIter<'a> {
    c: Cursor<'a>,
    left: u64,
}

impl<'a> Iterator for MasterIter<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        self.c.bytes()
    }
}

pub(crate) struct RawIter<'a> {
    block: &'a Block,
    master: StreamId,
    at: usize,
}

impl Iterator for RawIter<'_> {
    type Item = RawEntry;
    fn next(&mut self) -> Option<RawEntry> {
        if self.at >= self.block.data.len() {
            return None;
        }
        let e = self.block.entry_at(self.master, self.at)?;
        self.at = e.end;
        Some(e)
    }
}

/// The field-value pairs of one entry.
pub struct FieldIter<'a> {
    master: Option<MasterIter<'a>>,
    body: Cursor<'a>,
    left: u64,
}

impl<'a> Iterator for FieldIter<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let field = match &mut self.master {
            Some(m) => m.next()?,
            None => self.body.bytes()?,
        };
        let value = self.body.bytes()?;
        Some((field, value))
    }
}
