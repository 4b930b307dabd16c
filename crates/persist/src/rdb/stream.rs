//! Streams in RDB files: Redis's `RDB_TYPE_STREAM_LISTPACKS` (15, Redis 5),
//! `_2` (19, Redis 7.0, the one written here) and `_3` (21, Redis 7.2).
//!
//! ```text
//! nodes         len
//!   per node    string: master id, 16 bytes big-endian (ms, seq)
//!               string: listpack (below)
//! length        len
//! last id       len ms, len seq
//! (19, 21)      first id: len ms, len seq; max deleted id: len ms, len seq;
//!               entries added: len
//! groups        len
//!   per group   string name; last id: len ms, len seq; (19, 21) entries read: len
//!               PEL: len count, then per entry: 16-byte id, 8-byte LE delivery
//!                    time (ms), len delivery count
//!               consumers: len count, then per consumer: string name, 8-byte LE
//!                    seen time, (21) 8-byte LE active time, len pending count,
//!                    then 16-byte ids (each in the group's PEL)
//! ```
//!
//! A node's listpack: the master entry `count deleted nfields field... 0`,
//! then per entry `flags ms-diff seq-diff` followed by the values alone
//! (flag 2, same fields as the master) or `nfields field value ...`, and
//! the entry's element count (`lp-count`: fields + 3 with flag 2, else
//! 2 * fields + 4), which lets Redis walk the listpack backwards. Flag 1
//! marks an entry deleted. Keel's own blocks map one to one onto these
//! nodes.

use keel_store::stream::{Stream, StreamId};

use super::encoding::{put_len, put_string, Listpack};

pub(crate) const T_STREAM_LISTPACKS_2: u8 = 19;

fn int(lp: &mut Listpack, n: i64) {
    lp.push(n.to_string().as_bytes());
}

/// The listpack of one block, as Redis builds it.
fn block_listpack(master: StreamId, b: &keel_store::stream::BlockView<'_>) -> Vec<u8> {
    let mut lp = Listpack::new();
    let fields: Vec<&[u8]> = b.master_fields().collect();
    int(&mut lp, i64::from(b.live()));
    int(&mut lp, i64::from(b.deleted()));
    int(&mut lp, fields.len() as i64);
    for f in &fields {
        lp.push(f);
    }
    int(&mut lp, 0);
    for (id, deleted, same, pairs) in b.entries() {
        let flags = i64::from(deleted) | if same { 2 } else { 0 };
        int(&mut lp, flags);
        int(&mut lp, id.ms.wrapping_sub(master.ms) as i64);
        int(&mut lp, id.seq.wrapping_sub(master.seq) as i64);
        let pairs: Vec<(&[u8], &[u8])> = pairs.collect();
        if same {
            for (_, v) in &pairs {
                lp.push(v);
            }
            int(&mut lp, pairs.len() as i64 + 3);
        } else {
            int(&mut lp, pairs.len() as i64);
            for (f, v) in &pairs {
                lp.push(f);
                lp.push(v);
            }
            int(&mut lp, pairs.len() as i64 * 2 + 4);
        }
    }
    lp.finish()
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

/// A stream as type 19.
pub(crate) fn put_stream(out: &mut Vec<u8>, s: &Stream, compress: bool) {
    put_len(out, s.block_count() as u64);
    for b in s.blocks() {
        put_string(out, &b.master.to_be_bytes(), false);
        put_string(out, &block_listpack(b.master, &b), compress);
    }
    put_len(out, s.len());
    put_id(out, s.last_id());
    put_id(out, s.first_id());
    put_id(out, s.max_deleted_id());
    put_len(out, s.entries_added());
    let Some(groups) = &s.groups else {
        put_len(out, 0);
        return;
    };
    put_len(out, groups.groups.len() as u64);
    for (name, g) in &groups.groups {
        put_string(out, name, compress);
        put_id(out, g.last_id);
        // Redis writes SCG_INVALID_ENTRIES_READ (-1 as unsigned) when unknown.
        put_len(out, g.entries_read.unwrap_or(u64::MAX));
        put_len(out, g.pel.len() as u64);
        for (id, p) in &g.pel {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&p.delivery_time.to_le_bytes());
            put_len(out, p.delivery_count);
        }
        put_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            put_string(out, cname, compress);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            put_len(out, c.pending.len() as u64);
            for id in &c.pending {
                out.extend_from_slice(&id.to_be_bytes());
            }
        }
    }
}

/// An entry read from a node: id, deleted, field-value pairs.
type LoadedEntry<'a> = (StreamId, bool, Vec<(&'a [u8], &'a [u8])>);

fn lp_int(e: &[u8]) -> Option<i64> {
    keel_store::num::parse_i64(e)
}

/// Add one node read from a file (its listpack's elements) to `s`:
/// validated whole (counters, flags, element counts, ascending ids) before
/// anything is built. `false` on any inconsistency.
pub(crate) fn load_node(s: &mut Stream, master: StreamId, elems: &[Vec<u8>]) -> bool {
    let mut it = elems.iter();
    let mut int = || it.next().and_then(|e| lp_int(e));
    let (Some(count), Some(deleted), Some(nfields)) = (int(), int(), int()) else {
        return false;
    };
    let (Ok(count), Ok(deleted), Ok(nfields)) = (
        u64::try_from(count),
        u64::try_from(deleted),
        usize::try_from(nfields),
    ) else {
        return false;
    };
    if nfields == 0 || nfields > elems.len() {
        return false;
    }
    let Some(fields) = elems.get(3..3 + nfields) else {
        return false;
    };
    if elems.get(3 + nfields).and_then(|e| lp_int(e)) != Some(0) {
        return false;
    }
    let master_fields: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
    let mut at = 4 + nfields;
    let mut entries: Vec<LoadedEntry<'_>> = Vec::new();
    let (mut live, mut dead) = (0u64, 0u64);
    let get_int = |i: usize| elems.get(i).and_then(|e| lp_int(e));
    while at < elems.len() {
        let (Some(flags), Some(ms_diff), Some(seq_diff)) =
            (get_int(at), get_int(at + 1), get_int(at + 2))
        else {
            return false;
        };
        if !(0..=3).contains(&flags) {
            return false;
        }
        let id = StreamId::new(
            master.ms.wrapping_add(ms_diff as u64),
            master.seq.wrapping_add(seq_diff as u64),
        );
        at += 3;
        let mut pairs: Vec<(&[u8], &[u8])> = Vec::new();
        let lp_count = if flags & 2 != 0 {
            let Some(values) = elems.get(at..at + nfields) else {
                return false;
            };
            pairs.extend(
                master_fields
                    .iter()
                    .copied()
                    .zip(values.iter().map(Vec::as_slice)),
            );
            at += nfields;
            nfields as i64 + 3
        } else {
            let Some(n) = get_int(at).and_then(|n| usize::try_from(n).ok()) else {
                return false;
            };
            if n == 0 || n > elems.len() {
                return false;
            }
            let Some(kv) = elems.get(at + 1..at + 1 + 2 * n) else {
                return false;
            };
            pairs.extend(
                kv.chunks_exact(2)
                    .map(|p| (p[0].as_slice(), p[1].as_slice())),
            );
            at += 1 + 2 * n;
            2 * n as i64 + 4
        };
        if get_int(at) != Some(lp_count) {
            return false;
        }
        at += 1;
        if flags & 1 != 0 {
            dead += 1;
        } else {
            live += 1;
        }
        entries.push((id, flags & 1 != 0, pairs));
    }
    if live != count || dead != deleted || entries.is_empty() {
        return false;
    }
    s.load_block(master, &master_fields, entries)
}
