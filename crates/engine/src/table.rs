//! The command table: every group's specs gathered into one case-insensitive index.

use crate::declare::{Flags, Keys};
pub use crate::kernel::CommandTable;
use crate::kernel::{CommandSpec, ShortSlot};
use hashbrown::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// A command whose spec names exactly one key, at a fixed position.
fn reads_one_key(keys: Keys) -> bool {
    matches!(keys, Keys::Range { first, last, .. } if first == last && first > 0)
}

impl CommandTable {
    /// A table of the same commands, newly indexed (its read-lock learning
    /// starts over).
    pub fn rebuilt(&self) -> CommandTable {
        CommandTable::new(&self.groups)
    }

    pub fn new(groups: &[&'static [&'static CommandSpec]]) -> CommandTable {
        let mut specs: Vec<&'static CommandSpec> = Vec::new();
        let mut parent = Vec::new();
        let mut by_name = HashMap::new();
        for g in groups {
            for spec in g.iter() {
                by_name.insert(spec.name.to_ascii_lowercase().into_bytes(), specs.len());
                parent.push(specs.len());
                specs.push(spec);
            }
        }
        let top_level = specs.len();
        let short_bits = (top_level.max(1) * 4).next_power_of_two().trailing_zeros();
        let mut short = vec![ShortSlot::default(); 1 << short_bits].into_boxed_slice();
        let packed_bits = (top_level.max(1) * 4).next_power_of_two().trailing_zeros();
        let mut packed = vec![(0u128, 0u32); 1 << packed_bits].into_boxed_slice();
        let mut exact = vec![(0u128, 0u128); 1 << packed_bits].into_boxed_slice();
        for (id, spec) in specs.iter().enumerate() {
            let lower = spec.name.to_ascii_lowercase();
            // Only names of up to 16 bytes are packed: longer ones need no mask.
            let letters = lower
                .bytes()
                .take(16)
                .enumerate()
                .filter(|(_, b)| b.is_ascii_lowercase())
                .fold(0u128, |m, (at, _)| m | (0x20u128 << (at * 8)));
            if (1..=8).contains(&lower.len()) {
                let raw = load8(lower.as_bytes());
                let key = raw | fold_mask8(lower.len());
                let mut i = slot8(key, short_bits);
                while short[i].key != 0 {
                    i = (i + 1) & (short.len() - 1);
                }
                short[i] = ShortSlot {
                    key,
                    lower: raw,
                    letters: letters as u64,
                    id: id as u32,
                };
                continue;
            }
            if let Some(key) = pack(lower.as_bytes()) {
                let mut i = slot(key, packed_bits);
                while packed[i].0 != 0 {
                    i = (i + 1) & (packed.len() - 1);
                }
                packed[i] = (key, id as u32);
                exact[i] = (load(lower.as_bytes()), letters);
            }
        }
        for pid in 0..top_level {
            for sub in specs[pid].subcommands {
                parent.push(pid);
                specs.push(sub);
            }
        }
        let shared = specs
            .iter()
            .map(|s| AtomicBool::new(s.flags.contains(Flags::READONLY) && reads_one_key(s.keys)))
            .collect();
        CommandTable {
            groups: groups.to_vec(),
            by_name,
            short,
            short_bits,
            packed,
            exact,
            packed_bits,
            specs,
            parent,
            top_level,
            shared,
        }
    }

    /// Whether command `id` may run holding its shard shared.
    #[inline]
    pub fn runs_shared(&self, id: usize) -> bool {
        self.shared[id].load(Ordering::Relaxed)
    }

    /// Command `id` needs its shard exclusively: run it so from now on.
    pub fn run_exclusive(&self, id: usize) {
        self.shared[id].store(false, Ordering::Relaxed);
    }

    /// Look a command up by name, ignoring ASCII case, without allocating for
    /// names of ordinary length.
    #[inline]
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        if (1..=8).contains(&name.len()) {
            let raw = load8(name);
            let key = raw | fold_mask8(name.len());
            let mut i = slot8(key, self.short_bits);
            loop {
                let s = &self.short[i];
                if s.key == 0 {
                    return None;
                }
                if s.key == key && raw | s.letters == s.lower {
                    return Some(s.id as usize);
                }
                i = (i + 1) & (self.short.len() - 1);
            }
        }
        if (9..=16).contains(&name.len()) {
            let raw = load(name);
            let key = raw | fold_mask(name.len());
            let mut i = slot(key, self.packed_bits);
            loop {
                let (k, id) = self.packed[i];
                if k == 0 {
                    return None;
                }
                // Setting 0x20 folds ASCII case, but also folds a few control
                // bytes onto digits and punctuation: only letters may differ.
                let (lower, letters) = self.exact[i];
                if k == key && raw | letters == lower {
                    return Some(id as usize);
                }
                i = (i + 1) & (self.packed.len() - 1);
            }
        }
        let mut buf = [0u8; 32];
        if name.len() <= buf.len() {
            let lower = &mut buf[..name.len()];
            lower.copy_from_slice(name);
            lower.make_ascii_lowercase();
            self.by_name.get(&lower[..]).copied()
        } else {
            self.by_name.get(&name.to_ascii_lowercase()).copied()
        }
    }

    /// Find subcommand `sub` of the container `id`.
    pub fn lookup_sub(&self, id: usize, sub: &[u8]) -> Option<usize> {
        let parent = self.specs[id];
        let i = parent.subcommands.iter().position(|s| {
            s.name
                .rsplit('|')
                .next()
                .is_some_and(|n| n.as_bytes().eq_ignore_ascii_case(sub))
        })?;
        // Subcommands are stored after the top-level block, in parent order.
        let mut base = self.top_level;
        for p in 0..id {
            base += self.specs[p].subcommands.len();
        }
        Some(base + i)
    }

    /// The full lowercase name Redis reports (`get`, `client|list`).
    pub fn full_name(&self, id: usize) -> String {
        self.specs[id].name.to_ascii_lowercase()
    }

    pub fn len(&self) -> usize {
        self.specs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }
}

/// A name of 9 to 16 bytes as one number, its bytes' 0x20 bits set; `None`
/// for other lengths (up to 8 bytes, names go in the table of short names).
#[inline]
fn pack(name: &[u8]) -> Option<u128> {
    if !(9..=16).contains(&name.len()) {
        return None;
    }
    Some(load(name) | fold_mask(name.len()))
}

/// 0x20 in each of the first `len` (9 to 16) bytes.
#[inline]
fn fold_mask(len: usize) -> u128 {
    u128::from_le_bytes([0x20; 16]) >> ((16 - len) * 8)
}

/// A name of 9 to 16 bytes as a little-endian integer, zero above its
/// length, read with two overlapping loads instead of a copy.
#[inline]
fn load(name: &[u8]) -> u128 {
    let n = name.len();
    let u64_at = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&name[at..at + 8]);
        u128::from(u64::from_le_bytes(b))
    };
    u64_at(0) | u64_at(n - 8) << ((n - 8) * 8)
}

/// 0x20 in each of the first `len` (1 to 8) bytes.
#[inline]
fn fold_mask8(len: usize) -> u64 {
    u64::from_le_bytes([0x20; 8]) >> ((8 - len) * 8)
}

/// A name of 1 to 8 bytes as a little-endian integer, zero above its length.
#[inline]
fn load8(name: &[u8]) -> u64 {
    let n = name.len();
    let u32_at = |at: usize| {
        let mut b = [0u8; 4];
        b.copy_from_slice(&name[at..at + 4]);
        u64::from(u32::from_le_bytes(b))
    };
    match n {
        1..=3 => {
            let (a, b, c) = (name[0], name[n / 2], name[n - 1]);
            u64::from(a) | u64::from(b) << ((n / 2) * 8) | u64::from(c) << ((n - 1) * 8)
        }
        4..=8 => u32_at(0) | u32_at(n - 4) << ((n - 4) * 8),
        _ => 0,
    }
}

#[inline]
fn slot8(key: u64, bits: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

#[inline]
fn slot(key: u128, bits: u32) -> usize {
    let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
    (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}
