//! HyperLogLog sketches stored as plain strings, byte for byte in Redis's
//! `HYLL` format, so a value written by either server (GET/SET, DUMP/RESTORE,
//! RDB) is read by the other and counts the same.
//!
//! Layout (all offsets in bytes):
//!
//! ```text
//! 0..4    "HYLL"
//! 4       encoding: 0 dense, 1 sparse
//! 5..8    unused (kept as found)
//! 8..16   cached cardinality, little endian; bit 7 of byte 15 set = stale
//! 16..    registers
//! ```
//!
//! There are 16384 registers of 6 bits. The dense body packs them
//! least-significant bit first (12288 bytes). The sparse body is a run-length
//! code of opcodes: `00xxxxxx` ZERO (1..64 zero registers), `01xxxxxx yyyyyyyy`
//! XZERO (1..16384 zero registers), `1vvvvvxx` VAL (1..4 registers holding
//! 1..32). A sparse value becomes dense when a register needs more than 32 or
//! the string would grow past `hll-sparse-max-bytes`. Edits of the sparse code
//! follow Redis's rules (which opcode is split, which neighbours are merged)
//! exactly, since the raw bytes are visible to clients.
//!
//! Every value that comes from a client is checked before it is used
//! ([`check`]): the header, the dense length, and for sparse values every
//! opcode, which must cover exactly the 16384 registers and end exactly at the
//! end of the string. A sparse edit then only ever meets a well-formed code;
//! it still reads through checked indexing, so a bug cannot read out of bounds.

use crate::murmur::murmur64a;
use thiserror::Error;

/// Index bits of the hash: 2^14 registers.
pub const P: u32 = 14;
pub const REGISTERS: usize = 1 << P;
/// Hash bits left for the run of zeros.
const Q: u32 = 64 - P;
const REGISTER_BITS: usize = 6;
const REGISTER_MAX: u32 = (1 << REGISTER_BITS) - 1;
/// Header bytes before the registers.
pub const HEADER_LEN: usize = 16;
/// Length of a dense value.
pub const DENSE_LEN: usize = HEADER_LEN + (REGISTERS * REGISTER_BITS).div_ceil(8);
/// Redis's `hll-sparse-max-bytes` default.
pub const DEFAULT_SPARSE_MAX_BYTES: usize = 3000;

const MAGIC: &[u8; 4] = b"HYLL";
const ENC_DENSE: u8 = 0;
const ENC_SPARSE: u8 = 1;
const STALE_BIT: u8 = 1 << 7;

const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
/// Redis's MurmurHash64A seed for HyperLogLog elements.
const HASH_SEED: u64 = 0xadc8_3b19;

/// Why a string cannot be used as a HyperLogLog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum HllError {
    /// Not an HLL at all (short, wrong magic, unknown encoding, dense of the
    /// wrong length).
    #[error("WRONGTYPE Key is not a valid HyperLogLog string value.")]
    NotHll,
    /// An HLL header over a body that does not decode.
    #[error("INVALIDOBJ Corrupted HLL object detected")]
    Corrupt,
}

/// The two stored encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Dense,
    Sparse,
}

impl Encoding {
    /// The name PFDEBUG ENCODING reports.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// The header check Redis makes before any HLL command touches a string.
pub fn header(s: &[u8]) -> Result<Encoding, HllError> {
    if s.len() < HEADER_LEN || &s[..4] != MAGIC {
        return Err(HllError::NotHll);
    }
    match s[4] {
        ENC_DENSE if s.len() == DENSE_LEN => Ok(Encoding::Dense),
        ENC_SPARSE => Ok(Encoding::Sparse),
        _ => Err(HllError::NotHll),
    }
}

/// The full check: the header, then for a sparse value every opcode.
pub fn check(s: &[u8]) -> Result<Encoding, HllError> {
    let enc = header(s)?;
    if enc == Encoding::Sparse && sparse_span(&s[HEADER_LEN..]) != Some(REGISTERS) {
        return Err(HllError::Corrupt);
    }
    Ok(enc)
}

/// How many registers the opcodes of a sparse body cover; `None` when its
/// last XZERO is cut short. PFADD checks every opcode before it edits a
/// sparse value, so this walk is most of its cost: it reads lengths only.
fn sparse_span(body: &[u8]) -> Option<usize> {
    let mut covered = 0usize;
    let mut p = 0;
    while let Some(&op) = body.get(p) {
        if is_val(op) {
            covered += val_len(op);
            p += 1;
        } else if is_zero(op) {
            covered += zero_len(op);
            p += 1;
        } else {
            covered += xzero_len(op, *body.get(p + 1)?);
            p += 2;
        }
    }
    Some(covered)
}

/// A new empty sparse HLL (one XZERO over every register), its cached
/// cardinality zero and valid, as Redis creates one.
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_LEN + 2);
    v.extend_from_slice(MAGIC);
    v.push(ENC_SPARSE);
    v.extend_from_slice(&[0; 11]);
    push_zero_run(&mut v, REGISTERS);
    v
}

/// The cached cardinality, when it is valid.
pub fn cached(s: &[u8]) -> Option<u64> {
    let card: [u8; 8] = s.get(8..16)?.try_into().ok()?;
    (card[7] & STALE_BIT == 0).then(|| u64::from_le_bytes(card))
}

/// Store a freshly computed cardinality in the header.
pub fn set_cached(s: &mut [u8], card: u64) {
    if let Some(slot) = s.get_mut(8..16) {
        slot.copy_from_slice(&card.to_le_bytes());
    }
}

/// Mark the cached cardinality stale.
pub fn invalidate(s: &mut [u8]) {
    if let Some(b) = s.get_mut(15) {
        *b |= STALE_BIT;
    }
}

/// The register an element lands in and the value it offers: the low 14
/// bits of its hash pick the register, the position of the lowest set bit
/// of the rest (1-based, at most 51) is the value.
pub fn register_of(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, HASH_SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // A sentinel bit bounds the count at Q + 1.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// Add `element` to the (checked) HLL in `v`; whether a register changed.
pub fn add(v: &mut Vec<u8>, element: &[u8], sparse_max_bytes: usize) -> Result<bool, HllError> {
    let (index, count) = register_of(element);
    set_register(v, index, count, sparse_max_bytes)
}

/// Raise register `index` to `count` if it is lower; whether it changed.
/// A sparse value may become dense.
pub fn set_register(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max_bytes: usize,
) -> Result<bool, HllError> {
    match header(v)? {
        Encoding::Dense => Ok(dense_raise(&mut v[HEADER_LEN..], index, count)),
        Encoding::Sparse => sparse_set(v, index, count, sparse_max_bytes),
    }
}

/// Turn a sparse value into a dense one in place (header kept); whether it
/// was sparse.
pub fn to_dense(v: &mut Vec<u8>) -> Result<bool, HllError> {
    if header(v)? == Encoding::Dense {
        return Ok(false);
    }
    let mut dense = vec![0u8; DENSE_LEN];
    dense[..HEADER_LEN].copy_from_slice(&v[..HEADER_LEN]);
    dense[4] = ENC_DENSE;
    let mut index = 0usize;
    for op in Ops::new(v) {
        let (value, len) = op.ok_or(HllError::Corrupt)?;
        if index + len > REGISTERS {
            return Err(HllError::Corrupt);
        }
        if value != 0 {
            for i in index..index + len {
                dense_write(&mut dense[HEADER_LEN..], i, value);
            }
        }
        index += len;
    }
    if index != REGISTERS {
        return Err(HllError::Corrupt);
    }
    *v = dense;
    Ok(true)
}

/// Raise each of `max`'s registers to the HLL's value in it (PFMERGE,
/// multi-key PFCOUNT).
pub fn merge_into(max: &mut [u8; REGISTERS], s: &[u8]) -> Result<(), HllError> {
    match header(s)? {
        Encoding::Dense => {
            for (group, out) in dense_groups(&s[HEADER_LEN..]).zip(max.chunks_exact_mut(4)) {
                for (m, r) in out.iter_mut().zip(group) {
                    *m = (*m).max(r);
                }
            }
        }
        Encoding::Sparse => {
            let mut index = 0usize;
            for op in Ops::new(s) {
                let (value, len) = op.ok_or(HllError::Corrupt)?;
                let run = max.get_mut(index..index + len).ok_or(HllError::Corrupt)?;
                for m in run {
                    if value > *m {
                        *m = value;
                    }
                }
                index += len;
            }
            if index != REGISTERS {
                return Err(HllError::Corrupt);
            }
        }
    }
    Ok(())
}

/// Every register's value, whatever the encoding.
pub fn registers(s: &[u8]) -> Result<Box<[u8; REGISTERS]>, HllError> {
    let mut regs = Box::new([0u8; REGISTERS]);
    merge_into(&mut regs, s)?;
    Ok(regs)
}

/// The cardinality estimate of a (checked) HLL, ignoring its cache.
pub fn count(s: &[u8]) -> Result<u64, HllError> {
    let mut histo = [0u32; 64];
    match header(s)? {
        Encoding::Dense => {
            for group in dense_groups(&s[HEADER_LEN..]) {
                for r in group {
                    histo[usize::from(r)] += 1;
                }
            }
        }
        Encoding::Sparse => {
            let mut covered = 0usize;
            for op in Ops::new(s) {
                let (value, len) = op.ok_or(HllError::Corrupt)?;
                covered += len;
                histo[usize::from(value)] += len as u32;
            }
            if covered != REGISTERS {
                return Err(HllError::Corrupt);
            }
        }
    }
    Ok(estimate(&histo))
}

/// The cardinality estimate of raw registers (a merge's result).
pub fn count_registers(regs: &[u8; REGISTERS]) -> u64 {
    let mut histo = [0u32; 64];
    for &r in regs.iter() {
        histo[usize::from(r & REGISTER_MAX as u8)] += 1;
    }
    estimate(&histo)
}

/// Otmar Ertl's improved estimator ("New cardinality estimation algorithms
/// for HyperLogLog sketches", 2017), from the histogram of register values,
/// computed in the same order of floating-point operations as Redis so the
/// rounded result is the same.
pub fn estimate(histo: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let q = Q as usize;
    let mut z = m * tau((m - f64::from(histo[q + 1])) / m);
    for j in (1..=q).rev() {
        z += f64::from(histo[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histo[0]) / m);
    // 1 / (2 ln 2), the bias constant for m -> infinity.
    const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
    let e = (ALPHA_INF * m * m / z).round();
    // Redis rounds with llroundl, which gives i64::MIN for what does not fit
    // (an infinite estimate when every register is full); that pattern is
    // what it replies and caches (with the stale bit thus set).
    if e.is_finite() && e < 9_223_372_036_854_775_808.0 {
        e as u64
    } else {
        1 << 63
    }
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if z == before {
            return z / 3.0;
        }
    }
}

/// PFDEBUG DECODE's text for a sparse body: `z:N` ZERO, `Z:N` XZERO,
/// `v:value,len` VAL, space separated. Like Redis it decodes whatever is
/// there, reading a missing second XZERO byte as zero.
pub fn decode(s: &[u8]) -> String {
    let mut out = String::new();
    let mut p = HEADER_LEN;
    while let Some(&op) = s.get(p) {
        if !out.is_empty() {
            out.push(' ');
        }
        if op & 0x80 != 0 {
            out.push_str(&format!("v:{},{}", val_value(op), val_len(op)));
            p += 1;
        } else if op & 0x40 != 0 {
            let len = xzero_len(op, s.get(p + 1).copied().unwrap_or(0));
            out.push_str(&format!("Z:{len}"));
            p += 2;
        } else {
            out.push_str(&format!("z:{}", zero_len(op)));
            p += 1;
        }
    }
    out
}

// ----- dense registers -----

/// The dense registers four at a time: every 3 bytes hold 4 registers.
fn dense_groups(regs: &[u8]) -> impl Iterator<Item = [u8; 4]> + '_ {
    regs.chunks_exact(3).map(|c| {
        let (b0, b1, b2) = (c[0], c[1], c[2]);
        [
            b0 & 0x3f,
            (b0 >> 6) | ((b1 << 2) & 0x3f),
            (b1 >> 4) | ((b2 << 4) & 0x3f),
            b2 >> 2,
        ]
    })
}

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let bit = i * REGISTER_BITS;
    let (byte, shift) = (bit / 8, (bit % 8) as u32);
    let b0 = u32::from(regs.get(byte).copied().unwrap_or(0));
    let b1 = u32::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> shift) | (b1 << (8 - shift))) & REGISTER_MAX) as u8
}

fn dense_write(regs: &mut [u8], i: usize, value: u8) {
    let bit = i * REGISTER_BITS;
    let (byte, shift) = (bit / 8, (bit % 8) as u32);
    let value = u32::from(value) & REGISTER_MAX;
    if let Some(b) = regs.get_mut(byte) {
        *b = ((u32::from(*b) & !(REGISTER_MAX << shift)) | (value << shift)) as u8;
    }
    if let Some(b) = regs.get_mut(byte + 1) {
        let keep = !(REGISTER_MAX >> (8 - shift));
        *b = ((u32::from(*b) & keep) | (value >> (8 - shift))) as u8;
    }
}

fn dense_raise(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_write(regs, i, count);
        true
    } else {
        false
    }
}

// ----- sparse opcodes -----

/// Registers covered by each one-byte opcode (ZERO, VAL); 0 for XZERO, whose
/// run length needs its second byte.
const ONE_BYTE_SPAN: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut op = 0;
    while op < 256 {
        let b = op as u8;
        t[op] = if b & 0x80 != 0 {
            (b & 0x3) + 1
        } else if b & 0xc0 == 0 {
            (b & 0x3f) + 1
        } else {
            0
        };
        op += 1;
    }
    t
};

/// The registers eight opcodes cover when each is one byte (ZERO or VAL):
/// the sum of their spans, found in a few word operations; `None` if one of
/// them is an XZERO (its span needs its second byte).
#[inline]
fn eight_spans(ops: &[u8]) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    let w = u64::from_le_bytes(ops.try_into().ok()?);
    // XZERO is 01xxxxxx: bit 7 clear, bit 6 (shifted up to 7 here) set.
    if !w & (w << 1) & (LOW << 7) != 0 {
        return None;
    }
    // A VAL (bit 7 set) covers (op & 0x03) + 1 registers, a ZERO (op & 0x3f) + 1.
    let vals = (w >> 7) & LOW;
    let spans = (w & ((LOW * 0x3f) ^ (vals * 0x3c))) + LOW;
    // Each span is at most 64: add byte pairs into 16-bit lanes, then the lanes.
    const PAIRS: u64 = 0x00ff_00ff_00ff_00ff;
    let lanes = (spans & PAIRS) + ((spans >> 8) & PAIRS);
    Some((lanes.wrapping_mul(0x0001_0001_0001_0001) >> 48) as usize)
}

fn is_val(op: u8) -> bool {
    op & 0x80 != 0
}
fn is_xzero(op: u8) -> bool {
    op & 0xc0 == 0x40
}
fn is_zero(op: u8) -> bool {
    op & 0xc0 == 0
}
fn val_value(op: u8) -> u8 {
    ((op >> 2) & 0x1f) + 1
}
fn val_len(op: u8) -> usize {
    usize::from(op & 0x3) + 1
}
fn zero_len(op: u8) -> usize {
    usize::from(op & 0x3f) + 1
}
fn xzero_len(op: u8, low: u8) -> usize {
    ((usize::from(op & 0x3f) << 8) | usize::from(low)) + 1
}
fn val_op(value: u8, len: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (len as u8 - 1)
}

/// One run of zeros, as one ZERO or XZERO opcode.
fn push_zero_run(out: &mut Vec<u8>, len: usize) {
    if len > SPARSE_ZERO_MAX_LEN {
        let l = len - 1;
        out.push(0x40 | ((l >> 8) as u8 & 0x3f));
        out.push((l & 0xff) as u8);
    } else {
        out.push((len - 1) as u8);
    }
}

/// The sparse opcodes of a value as (register value, run length); `None`
/// for an XZERO cut off by the end of the string.
struct Ops<'a> {
    s: &'a [u8],
    p: usize,
}

impl<'a> Ops<'a> {
    fn new(s: &'a [u8]) -> Self {
        Ops { s, p: HEADER_LEN }
    }
}

impl Iterator for Ops<'_> {
    type Item = Option<(u8, usize)>;

    fn next(&mut self) -> Option<Self::Item> {
        let op = *self.s.get(self.p)?;
        let item = if is_val(op) {
            self.p += 1;
            Some((val_value(op), val_len(op)))
        } else if is_xzero(op) {
            let low = self.s.get(self.p + 1).copied();
            self.p += 2;
            low.map(|low| (0, xzero_len(op, low)))
        } else {
            self.p += 1;
            Some((0, zero_len(op)))
        };
        if item.is_none() {
            self.p = self.s.len();
        }
        Some(item)
    }
}

/// Redis's sparse register update: find the opcode covering `index`, replace
/// it with up to three opcodes, promote to dense if the value does not fit a
/// VAL or the string would grow past `max_bytes`, then merge equal
/// neighbouring VALs in a short window.
fn sparse_set(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Result<bool, HllError> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(v, index, count);
    }
    // Find the opcode covering `index`: the registers a one-byte opcode
    // covers come from a table, so only an XZERO takes a branch of its own.
    let mut p = HEADER_LEN;
    let mut first = 0usize;
    let mut prev = None;
    let mut span = 0usize;
    let mut oplen = 1;
    while p < v.len() {
        // Eight one-byte opcodes wholly before `index` are passed over at once.
        while let Some(sum) = v.get(p..p + 8).and_then(eight_spans) {
            if index < first + sum {
                break;
            }
            first += sum;
            prev = Some(p + 7);
            p += 8;
        }
        let Some(&op) = v.get(p) else { break };
        oplen = 1;
        span = usize::from(ONE_BYTE_SPAN[usize::from(op)]);
        if span == 0 {
            oplen = 2;
            span = xzero_len(op, *v.get(p + 1).ok_or(HllError::Corrupt)?);
        }
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    let Some(&op) = v.get(p) else {
        return Err(HllError::Corrupt);
    };
    if span == 0 {
        return Err(HllError::Corrupt);
    }

    if is_val(op) {
        // Already as high: nothing to do.
        if val_value(op) >= count {
            return Ok(false);
        }
        if span == 1 {
            v[p] = val_op(count, 1);
            sparse_merge(v, prev);
            return Ok(true);
        }
    }
    if is_zero(op) && span == 1 {
        v[p] = val_op(count, 1);
        sparse_merge(v, prev);
        return Ok(true);
    }

    // The general case: split the run around `index`.
    let last = first + span - 1;
    let mut seq: Vec<u8> = Vec::with_capacity(5);
    if is_val(op) {
        let current = val_value(op);
        if index != first {
            seq.push(val_op(current, index - first));
        }
        seq.push(val_op(count, 1));
        if index != last {
            seq.push(val_op(current, last - index));
        }
    } else {
        if index != first {
            push_zero_run(&mut seq, index - first);
        }
        seq.push(val_op(count, 1));
        if index != last {
            push_zero_run(&mut seq, last - index);
        }
    }
    if seq.len() > oplen && v.len() + (seq.len() - oplen) > max_bytes {
        return promote(v, index, count);
    }
    let end = (p + oplen).min(v.len());
    v.splice(p..end, seq);
    sparse_merge(v, prev);
    Ok(true)
}

/// Merge adjacent VALs of equal value, scanning at most five opcodes from
/// `from` (the opcode before the one just changed), as Redis does.
fn sparse_merge(v: &mut Vec<u8>, from: Option<usize>) {
    let mut p = from.unwrap_or(HEADER_LEN);
    let mut budget = 5;
    while p < v.len() && budget > 0 {
        budget -= 1;
        let op = v[p];
        if is_xzero(op) {
            p += 2;
            continue;
        }
        if is_zero(op) {
            p += 1;
            continue;
        }
        if let Some(&next) = v.get(p + 1) {
            if is_val(next) && val_value(op) == val_value(next) {
                let len = val_len(op) + val_len(next);
                if len <= SPARSE_VAL_MAX_LEN {
                    v[p + 1] = val_op(val_value(op), len);
                    v.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
}

fn promote(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, HllError> {
    to_dense(v)?;
    Ok(dense_raise(&mut v[HEADER_LEN..], index, count))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hll_of(items: &[&[u8]], max: usize) -> Vec<u8> {
        let mut v = new_sparse();
        for i in items {
            add(&mut v, i, max).unwrap();
        }
        v
    }

    #[test]
    fn empty_value_matches_redis() {
        let v = new_sparse();
        assert_eq!(&v[..4], b"HYLL");
        assert_eq!(v.len(), 18);
        assert_eq!(&v[16..], &[0x7f, 0xff]);
        assert_eq!(check(&v), Ok(Encoding::Sparse));
        assert_eq!(count(&v), Ok(0));
        assert_eq!(cached(&v), Some(0));
    }

    #[test]
    fn hash_and_sparse_code_match_redis() {
        // redis-server 7.0.15: PFADD h a b c; PFDEBUG DECODE h
        let v = hll_of(&[b"a", b"b", b"c"], DEFAULT_SPARSE_MAX_BYTES);
        assert_eq!(decode(&v), "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603");
        assert_eq!(
            &v[16..],
            &[0x60, 0xf3, 0x80, 0x50, 0xb1, 0x84, 0x4b, 0xfb, 0x80, 0x42, 0x5a]
        );
        assert_eq!(count(&v), Ok(3));
    }

    #[test]
    fn dense_registers_round_trip_at_every_offset() {
        let mut regs = vec![0u8; DENSE_LEN - HEADER_LEN];
        for i in 0..REGISTERS {
            dense_write(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8, "register {i}");
        }
    }

    #[test]
    fn dense_groups_agree_with_single_reads() {
        let regs: Vec<u8> = (0..DENSE_LEN - HEADER_LEN)
            .map(|i| (i * 131 + 7) as u8)
            .collect();
        let grouped: Vec<u8> = dense_groups(&regs).flatten().collect();
        assert_eq!(grouped.len(), REGISTERS);
        for (i, &r) in grouped.iter().enumerate() {
            assert_eq!(r, dense_get(&regs, i), "register {i}");
        }
    }

    #[test]
    fn estimate_overflow_is_redis_llround_min() {
        let mut histo = [0u32; 64];
        histo[51] = REGISTERS as u32;
        assert_eq!(estimate(&histo), 1 << 63);
        histo[51] = 0;
        histo[0] = REGISTERS as u32;
        assert_eq!(estimate(&histo), 0);
    }

    #[test]
    fn cache_bit() {
        let mut v = new_sparse();
        set_cached(&mut v, 42);
        assert_eq!(cached(&v), Some(42));
        invalidate(&mut v);
        assert_eq!(cached(&v), None);
    }

    #[test]
    fn check_rejects_bad_values() {
        assert_eq!(check(b"abc"), Err(HllError::NotHll));
        let mut v = new_sparse();
        v[4] = 2;
        assert_eq!(check(&v), Err(HllError::NotHll));
        v[4] = 0;
        assert_eq!(check(&v), Err(HllError::NotHll));
        let mut v = new_sparse();
        v.pop();
        assert_eq!(check(&v), Err(HllError::Corrupt));
        let mut v = new_sparse();
        v.push(0);
        assert_eq!(check(&v), Err(HllError::Corrupt));
        let mut v = new_sparse();
        v[17] = 0xfe;
        assert_eq!(check(&v), Err(HllError::Corrupt));
        let mut d = new_sparse();
        to_dense(&mut d).unwrap();
        assert_eq!(check(&d), Ok(Encoding::Dense));
        d.push(0);
        assert_eq!(check(&d), Err(HllError::NotHll));
    }

    #[test]
    fn promotion_past_max_bytes_and_big_values() {
        let mut v = new_sparse();
        let mut n = 0u32;
        while header(&v) == Ok(Encoding::Sparse) {
            assert!(v.len() <= 300);
            add(&mut v, &n.to_le_bytes(), 300).unwrap();
            n += 1;
        }
        assert_eq!(v.len(), DENSE_LEN);
        // A value over 32 promotes at once.
        let mut v = new_sparse();
        assert!(set_register(&mut v, 5, 33, 3000).unwrap());
        assert_eq!(header(&v), Ok(Encoding::Dense));
        assert_eq!(registers(&v).unwrap()[5], 33);
    }

    #[test]
    fn estimator_is_close() {
        let mut v = new_sparse();
        for i in 0..100_000u32 {
            add(&mut v, format!("e{i}").as_bytes(), 3000).unwrap();
        }
        let c = count(&v).unwrap() as f64;
        assert!((c - 100_000.0).abs() / 100_000.0 < 0.02, "{c}");
    }

    proptest! {
        /// The eight-at-once span sum is the table's, or declines on an XZERO.
        #[test]
        fn eight_spans_add_the_table_up(ops in prop::array::uniform8(any::<u8>())) {
            let xzero = ops.iter().any(|&op| is_xzero(op));
            let table: usize = ops.iter().map(|&op| usize::from(ONE_BYTE_SPAN[usize::from(op)])).sum();
            prop_assert_eq!(eight_spans(&ops), (!xzero).then_some(table));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// The same inputs in a sparse value and a dense one give the same
        /// registers and the same count, and every sparse value stays
        /// well-formed along the way.
        #[test]
        fn sparse_and_dense_agree(items in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), 0..400),
                                  max in 20usize..4000) {
            let mut sparse = new_sparse();
            let mut dense = new_sparse();
            to_dense(&mut dense).unwrap();
            let mut model = [0u8; REGISTERS];
            for it in &items {
                let (i, c) = register_of(it);
                let was = model[i];
                model[i] = model[i].max(c);
                prop_assert_eq!(add(&mut sparse, it, max).unwrap(), c > was);
                prop_assert_eq!(add(&mut dense, it, max).unwrap(), c > was);
                prop_assert!(check(&sparse).is_ok());
            }
            prop_assert_eq!(&registers(&sparse).unwrap()[..], &model[..]);
            prop_assert_eq!(&registers(&dense).unwrap()[..], &model[..]);
            prop_assert_eq!(count(&sparse).unwrap(), count(&dense).unwrap());
            prop_assert_eq!(count(&dense).unwrap(), count_registers(&model));
            let mut converted = sparse.clone();
            to_dense(&mut converted).unwrap();
            prop_assert_eq!(&converted[HEADER_LEN..], &dense[HEADER_LEN..]);
        }

        /// Arbitrary bytes behind a valid header never panic and never pass
        /// the check unless they decode to exactly 16384 registers.
        #[test]
        fn arbitrary_sparse_bodies(body in prop::collection::vec(any::<u8>(), 0..64)) {
            let mut v = new_sparse();
            v.truncate(HEADER_LEN);
            v.extend_from_slice(&body);
            let ok = check(&v).is_ok();
            prop_assert_eq!(ok, count(&v).is_ok());
            prop_assert_eq!(ok, registers(&v).is_ok());
            let _ = decode(&v);
            if ok {
                let mut w = v.clone();
                let _ = add(&mut w, b"x", 3000);
                prop_assert!(check(&w).is_ok());
            }
        }
    }
}
