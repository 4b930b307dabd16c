//! The stream type: entries with ids, stored compactly, and consumer groups.
//!
//! Entries live in [`Block`]s of consecutive entries (see `block.rs` for the
//! byte layout), indexed by the id of each block's first entry (its master
//! id) in a B-tree, as Redis keeps listpacks under a radix tree. A new entry
//! goes to the last block unless it is full by `stream-node-max-bytes`
//! (measured as Redis's listpack would be) or `stream-node-max-entries`, so
//! blocks split where Redis's nodes do and `MAXLEN ~` trims the same.
//!
//! Metadata follows Redis 7: last id, first id, length, entries added and
//! the largest deleted id. This module knows nothing of commands: callers
//! choose ids and check them against [`Stream::last_id`].

mod block;
pub mod groups;
pub mod id;

pub use block::FieldIter;
use block::{Block, RawEntry, DELETED, SAME_FIELDS};
pub use groups::{Consumer, Group, Groups, Pending};
pub use id::StreamId;

use std::collections::BTreeMap;

/// When a block is full: the `stream-node-max-bytes` and
/// `stream-node-max-entries` settings (0: no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_bytes: u64,
    pub max_entries: u64,
}

impl Default for NodeLimits {
    /// Redis's defaults.
    fn default() -> Self {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// What trimming keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimTo {
    /// At most this many entries.
    MaxLen(u64),
    /// No entry below this id.
    MinId(StreamId),
}

/// A stream.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stream {
    blocks: BTreeMap<StreamId, Block>,
    length: u64,
    /// The largest id ever added (or set by XSETID).
    pub last_id: StreamId,
    first_id: StreamId,
    /// The largest id removed by XDEL.
    pub max_deleted_id: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// Consumer groups; `None` until the first one is created.
    pub groups: Option<Box<Groups>>,
}

/// One entry, borrowed from its block.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    pub id: StreamId,
    block: &'a Block,
    raw: RawEntry,
}

impl<'a> Entry<'a> {
    /// The field-value pairs, in the order they were added.
    pub fn fields(&self) -> FieldIter<'a> {
        self.block.fields_of(&self.raw)
    }

    /// Number of field-value pairs.
    pub fn field_count(&self) -> usize {
        self.fields().count()
    }
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// Number of entries.
    pub fn len(&self) -> u64 {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// The id of the first entry (`0-0` while empty).
    pub fn first_id(&self) -> StreamId {
        self.first_id
    }

    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    pub fn entries_added(&self) -> u64 {
        self.entries_added
    }

    pub fn max_deleted_id(&self) -> StreamId {
        self.max_deleted_id
    }

    /// Number of blocks (Redis's `radix-tree-keys`).
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// The nodes Redis's radix tree would have holding the blocks' master
    /// ids as 16-byte big-endian keys (`radix-tree-nodes`). Its shape
    /// depends on the keys alone: Redis splits a compressed node where a
    /// new key branches off and merges single-child chains back on removal.
    /// So it has the root, a node where keys branch, one for each branch's
    /// child, and a leaf per key. O(blocks x 16); for XINFO only.
    pub fn radix_tree_nodes(&self) -> u64 {
        let keys: Vec<[u8; 16]> = self.blocks.keys().map(|id| id.to_be_bytes()).collect();
        1 + rax_nodes_below(&keys, 0)
    }

    /// Add an entry. `id` must be greater than [`Stream::last_id`] (the
    /// caller checks; `false` and nothing added otherwise) and `fields`
    /// non-empty.
    pub fn append(&mut self, id: StreamId, fields: &[(&[u8], &[u8])], limits: NodeLimits) -> bool {
        let fresh = self.blocks.is_empty() && self.last_id == StreamId::MIN;
        if id <= self.last_id && !fresh {
            return false;
        }
        let ele: u64 = fields.iter().map(|(f, v)| (f.len() + v.len()) as u64).sum();
        let last = self.blocks.iter_mut().next_back();
        match last {
            // As in Redis the entry joins the last block whatever that
            // block's deleted entries hold (XSETID may have moved the last
            // id below them); only an id below its master, which the block
            // cannot encode, starts a new one.
            Some((master, b))
                if *master <= id && !b.is_full(ele, limits.max_bytes, limits.max_entries) =>
            {
                b.append(*master, id, fields);
            }
            other => {
                if let Some((_, b)) = other {
                    b.data.shrink_to_fit();
                }
                self.blocks.insert(id, Block::new(id, fields));
            }
        }
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
        true
    }

    /// The entry `id`, if present.
    pub fn get(&self, id: StreamId) -> Option<Entry<'_>> {
        self.range(id, id).next()
    }

    /// Entries from `start` to `end` inclusive, ascending.
    pub fn range(&self, start: StreamId, end: StreamId) -> Range<'_> {
        let from = self
            .blocks
            .range(..=start)
            .next_back()
            .map_or(StreamId::MIN, |(k, _)| *k);
        Range {
            blocks: self.blocks.range(from..),
            cur: None,
            start,
            end,
            done: start > end,
        }
    }

    /// Entries from `end` down to `start` inclusive, descending.
    pub fn rev_range(&self, start: StreamId, end: StreamId) -> RevRange<'_> {
        RevRange {
            blocks: self.blocks.range(..=end),
            cur: None,
            start,
            end,
            done: start > end,
        }
    }

    /// Delete entry `id`; whether it was there. A block left without live
    /// entries goes.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&master, block)) = self.blocks.range_mut(..=id).next_back() else {
            return false;
        };
        // Live entries ascend; deleted ones may lie anywhere after the master.
        let Some(e) = block
            .raw_entries(master)
            .filter(|e| e.flags & DELETED == 0)
            .take_while(|e| e.id <= id)
            .find(|e| e.id == id)
        else {
            return false;
        };
        block.mark_deleted(&e);
        if block.live == 0 {
            self.blocks.remove(&master);
        }
        self.length -= 1;
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        if id == self.first_id {
            self.refresh_first_id();
        }
        true
    }

    /// The id of the last entry not deleted.
    fn last_live_id(&self) -> Option<StreamId> {
        self.rev_range(StreamId::MIN, StreamId::MAX)
            .next()
            .map(|e| e.id)
    }

    fn refresh_first_id(&mut self) {
        self.first_id = self
            .range(StreamId::MIN, StreamId::MAX)
            .next()
            .map_or(StreamId::MIN, |e| e.id);
    }

    /// Trim as Redis's XTRIM/XADD do; returns the number of entries removed.
    /// Whole blocks go first; `approx` stops at the first block that cannot
    /// go whole, otherwise entries of that block are flagged deleted. A
    /// `limit` (0: none) caps the entries removed, counted in whole blocks.
    pub fn trim(&mut self, to: TrimTo, approx: bool, limit: u64) -> u64 {
        let mut removed = 0u64;
        // Trimming works from the front: a block removed whole makes the
        // next one first; any other outcome ends the trim.
        while let Some(mut first) = self.blocks.first_entry() {
            if let TrimTo::MaxLen(max) = to {
                if self.length <= max {
                    break;
                }
            }
            let master = *first.key();
            let block = first.get_mut();
            let entries = u64::from(block.live);
            if limit != 0 && removed + entries > limit {
                break;
            }
            let whole = match to {
                TrimTo::MaxLen(max) => self.length - entries >= max,
                TrimTo::MinId(min) => block.last < min,
            };
            if whole {
                first.remove();
                self.length -= entries;
                removed += entries;
                continue;
            }
            if approx {
                break;
            }
            let raws: Vec<RawEntry> = block.raw_entries(master).collect();
            for e in raws {
                let stop = match to {
                    TrimTo::MaxLen(max) => self.length <= max,
                    TrimTo::MinId(min) => e.id >= min,
                };
                if stop {
                    break;
                }
                if e.flags & DELETED != 0 {
                    continue;
                }
                block.mark_deleted(&e);
                self.length -= 1;
                removed += 1;
            }
            break;
        }
        if removed > 0 {
            self.refresh_first_id();
        }
        removed
    }

    /// Heap bytes the stream owns (MEMORY USAGE, eviction accounting).
    pub fn heap_bytes(&self) -> usize {
        // A B-tree holds up to 11 pairs per node; count a node's share.
        let per_block = std::mem::size_of::<(StreamId, Block)>() * 12 / 10 + 8;
        let blocks: usize = self
            .blocks
            .values()
            .map(|b| b.data.capacity() + per_block)
            .sum();
        let groups = self
            .groups
            .as_ref()
            .map_or(0, |g| std::mem::size_of::<Groups>() + g.heap_bytes());
        blocks + groups
    }

    /// The blocks in id order, for writers of the RDB format.
    pub fn blocks(&self) -> impl Iterator<Item = BlockView<'_>> {
        self.blocks.iter().map(|(master, block)| BlockView {
            master: *master,
            block,
        })
    }

    /// Add a block read from a file: master id `master`, master fields
    /// `master_fields`, then `entries` as (id, deleted, fields). Ids must
    /// ascend past every id already loaded; a block with no live entry is
    /// kept (Redis can leave one behind an exact MINID trim). Returns
    /// `false`, changing nothing, on a violation. Length and metadata are
    /// counted; [`Stream::finish_load`] then checks the file's own.
    pub fn load_block<'f>(
        &mut self,
        master: StreamId,
        master_fields: &[&[u8]],
        entries: impl IntoIterator<Item = (StreamId, bool, Vec<(&'f [u8], &'f [u8])>)>,
    ) -> bool {
        if let Some((&last_master, _)) = self.blocks.iter().next_back() {
            if master <= last_master {
                return false;
            }
        }
        let top = self.last_live_id();
        let mut b = Block::empty(master_fields.iter().copied(), master_fields.len());
        let mut first = true;
        let mut live_top = top;
        for (id, deleted, fields) in entries {
            // Live entries ascend through the stream; a deleted one may lie
            // anywhere past its block's master (see `append`).
            let ok = if first {
                id == master
            } else {
                id > master && (deleted || live_top.is_none_or(|t| id > t))
            };
            if !ok || fields.is_empty() || (!deleted && live_top.is_some_and(|t| id <= t)) {
                return false;
            }
            first = false;
            if !deleted {
                live_top = Some(id);
            }
            let at = b.data.len();
            b.append(master, id, &fields);
            if deleted {
                let Some(e) = b.entry_at(master, at) else {
                    return false;
                };
                b.mark_deleted(&e);
            }
        }
        if first {
            return false;
        }
        b.data.shrink_to_fit();
        self.length += u64::from(b.live);
        self.blocks.insert(master, b);
        true
    }

    /// A stream of the one block `data` in Keel's own block layout, read from
    /// untrusted bytes: `None` unless every entry decodes and ids ascend
    /// from `master`. Never panics.
    pub fn from_block_bytes(master: StreamId, data: Vec<u8>) -> Option<Stream> {
        let b = Block::validate(master, data)?;
        let mut s = Stream {
            length: u64::from(b.live),
            last_id: b.last,
            entries_added: u64::from(b.live) + u64::from(b.deleted),
            ..Stream::default()
        };
        s.blocks.insert(master, b);
        s.refresh_first_id();
        Some(s)
    }

    /// The bytes of each block in Keel's own layout, with its master id.
    pub fn block_bytes(&self) -> impl Iterator<Item = (StreamId, &[u8])> {
        self.blocks.iter().map(|(m, b)| (*m, b.data.as_slice()))
    }

    /// Set the metadata a file records once its blocks are loaded. `false`
    /// when it contradicts them (a length other than the live entries
    /// counted, a last id below the last entry).
    pub fn finish_load(
        &mut self,
        length: u64,
        last_id: StreamId,
        max_deleted_id: StreamId,
        entries_added: u64,
    ) -> bool {
        if length != self.length {
            return false;
        }
        if self.last_live_id().is_some_and(|top| top > last_id) {
            return false;
        }
        self.last_id = last_id;
        self.max_deleted_id = max_deleted_id;
        self.entries_added = entries_added.max(length);
        self.refresh_first_id();
        true
    }
}

/// Nodes of a radix tree under the node at depth `depth` that `keys` (sorted,
/// distinct, 16 bytes, sharing their first `depth` bytes) pass through, that
/// node excluded.
fn rax_nodes_below(keys: &[[u8; 16]], depth: usize) -> u64 {
    let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
        return 0;
    };
    if keys.len() == 1 {
        // A compressed node runs to the key's leaf, unless this is it.
        return u64::from(depth < 16);
    }
    // Sorted: the bytes all keys share are those the first and last share.
    let branch = (depth..16).find(|&i| first[i] != last[i]).unwrap_or(16);
    // A compressed node runs down to the branching node.
    let mut n = u64::from(branch > depth);
    let mut rest = keys;
    while let Some(head) = rest.first() {
        let len = rest
            .iter()
            .take_while(|k| k[branch] == head[branch])
            .count();
        // Each child of the branch is a node of its own.
        n += 1 + rax_nodes_below(&rest[..len], branch + 1);
        rest = &rest[len..];
    }
    n
}

/// One block as the RDB writer sees it.
pub struct BlockView<'a> {
    pub master: StreamId,
    block: &'a Block,
}

impl<'a> BlockView<'a> {
    pub fn live(&self) -> u32 {
        self.block.live
    }

    pub fn deleted(&self) -> u32 {
        self.block.deleted
    }

    pub fn master_fields(&self) -> impl Iterator<Item = &'a [u8]> {
        self.block.master_fields()
    }

    /// Every entry, deleted ones included: id, deleted, same fields as the
    /// master, and the field-value pairs.
    pub fn entries(&self) -> impl Iterator<Item = (StreamId, bool, bool, FieldIter<'a>)> + 'a {
        let block = self.block;
        block.raw_entries(self.master).map(move |e| {
            (
                e.id,
                e.flags & DELETED != 0,
                e.flags & SAME_FIELDS != 0,
                block.fields_of(&e),
            )
        })
    }
}

/// Ascending entries of a range.
pub struct Range<'a> {
    blocks: std::collections::btree_map::Range<'a, StreamId, Block>,
    cur: Option<(StreamId, &'a Block, usize)>,
    start: StreamId,
    end: StreamId,
    done: bool,
}

impl<'a> Iterator for Range<'a> {
    type Item = Entry<'a>;
    fn next(&mut self) -> Option<Entry<'a>> {
        while !self.done {
            let Some((master, block, at)) = self.cur else {
                let (m, b) = self.blocks.next()?;
                if *m > self.end {
                    self.done = true;
                    return None;
                }
                self.cur = Some((*m, b, b.entries_at as usize));
                continue;
            };
            let Some(e) = (at < block.data.len())
                .then(|| block.entry_at(master, at))
                .flatten()
            else {
                self.cur = None;
                continue;
            };
            self.cur = Some((master, block, e.end));
            // Only live entries ascend (see `append`): a deleted one ends
            // nothing, as in Redis's iterator.
            if e.flags & DELETED != 0 {
                continue;
            }
            if e.id > self.end {
                self.done = true;
                return None;
            }
            if e.id < self.start {
                continue;
            }
            return Some(Entry {
                id: e.id,
                block,
                raw: e,
            });
        }
        None
    }
}

/// Descending entries of a range.
pub struct RevRange<'a> {
    blocks: std::collections::btree_map::Range<'a, StreamId, Block>,
    cur: Option<(&'a Block, Vec<RawEntry>)>,
    start: StreamId,
    end: StreamId,
    done: bool,
}

impl<'a> Iterator for RevRange<'a> {
    type Item = Entry<'a>;
    fn next(&mut self) -> Option<Entry<'a>> {
        while !self.done {
            let Some((block, raws)) = &mut self.cur else {
                let (m, b) = self.blocks.next_back()?;
                if b.last < self.start {
                    self.done = true;
                    return None;
                }
                self.cur = Some((b, b.raw_entries(*m).collect()));
                continue;
            };
            let block = *block;
            let Some(e) = raws.pop() else {
                self.cur = None;
                continue;
            };
            if e.flags & DELETED != 0 {
                continue;
            }
            if e.id < self.start {
                self.done = true;
                return None;
            }
            if e.id > self.end {
                continue;
            }
            return Some(Entry {
                id: e.id,
                block,
                raw: e,
            });
        }
        None
    }
}

#[cfg(test)]
mod tests;
