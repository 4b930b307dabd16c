//! Bit operations on byte strings (SETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD), as
//! pure functions over `&[u8]` / `Vec<u8>`.
//!
//! Bit numbering follows Redis: bit 0 is the most significant bit of byte 0, so a
//! string reads as one big-endian bit array. Bytes past the end of a string read
//! as zero everywhere here, which is how Redis treats a short or missing string.

/// Whether a range is counted in bytes or in bits (BITCOUNT/BITPOS `BYTE|BIT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Byte,
    Bit,
}

/// The bit at `offset`, zero past the end.
pub fn get_bit(s: &[u8], offset: u64) -> bool {
    let Ok(byte) = usize::try_from(offset >> 3) else {
        return false;
    };
    s.get(byte).is_some_and(|b| b & (0x80 >> (offset & 7)) != 0)
}

/// Bytes a string must hold for bit `offset` to exist.
pub fn bytes_for_bit(offset: u64) -> u64 {
    (offset >> 3) + 1
}

/// Set the bit at `offset` in a buffer already long enough to hold it, returning
/// its previous value. Callers grow the buffer first (after checking limits).
pub fn set_bit(buf: &mut [u8], offset: u64, on: bool) -> bool {
    let Some(b) = usize::try_from(offset >> 3)
        .ok()
        .and_then(|i| buf.get_mut(i))
    else {
        return false;
    };
    let mask = 0x80u8 >> (offset & 7);
    let old = *b & mask != 0;
    if on {
        *b |= mask;
    } else {
        *b &= !mask;
    }
    old
}

/// Number of set bits in the whole slice.
pub fn count_ones(s: &[u8]) -> u64 {
    let mut chunks = s.chunks_exact(8);
    let mut n: u64 = 0;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        n += u64::from(u64::from_ne_bytes(w).count_ones());
    }
    n + chunks
        .remainder()
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum::<u64>()
}

/// Resolve a Redis inclusive `start..=end` index pair over `total` units: negative
/// indexes count from the end, both clamp into the string. `None` when the range
/// is empty.
pub fn resolve_range(start: i64, end: i64, total: u64) -> Option<(u64, u64)> {
    let total = i128::from(total);
    let fix = |i: i64| {
        let i = i128::from(i);
        (if i < 0 { total + i } else { i }).max(0)
    };
    let s = fix(start);
    let e = fix(end).min(total - 1);
    if total == 0 || s > e {
        return None;
    }
    Some((s as u64, e as u64))
}

/// The inclusive bit range a (start, end, unit) triple names in a string of
/// `len` bytes, or `None` when it is empty.
fn bit_span(len: usize, start: i64, end: i64, unit: Unit) -> Option<(u64, u64)> {
    let len = len as u64;
    match unit {
        Unit::Byte => resolve_range(start, end, len).map(|(s, e)| (s * 8, e * 8 + 7)),
        Unit::Bit => resolve_range(start, end, len * 8),
    }
}

/// Set bits between bit `first` and bit `last` inclusive (both inside `s`).
fn count_span(s: &[u8], first: u64, last: u64) -> u64 {
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    let head_mask = 0xffu8 >> (first & 7);
    let tail_mask = 0xffu8 << (7 - (last & 7));
    if fb == lb {
        return u64::from((s[fb] & head_mask & tail_mask).count_ones());
    }
    u64::from((s[fb] & head_mask).count_ones())
        + count_ones(&s[fb + 1..lb])
        + u64::from((s[lb] & tail_mask).count_ones())
}

/// BITCOUNT over an explicit range.
pub fn bitcount(s: &[u8], start: i64, end: i64, unit: Unit) -> u64 {
    // Redis answers 0 at once when both ends count from the end and are
    // reversed, before clamping could turn them into a non-empty range.
    if start < 0 && end < 0 && start > end {
        return 0;
    }
    match bit_span(s.len(), start, end, unit) {
        Some((first, last)) => count_span(s, first, last),
        None => 0,
    }
}

/// First bit equal to `bit` between bit `first` and bit `last` inclusive.
fn find_bit(s: &[u8], bit: bool, first: u64, last: u64) -> Option<u64> {
    let skip = if bit { 0x00u8 } else { 0xff };
    let mut pos = first;
    while pos <= last {
        let byte = s[(pos >> 3) as usize];
        // Whole bytes that cannot contain the bit are skipped in one step.
        if pos & 7 == 0 && last - pos >= 7 && byte == skip {
            pos += 8;
            continue;
        }
        if (byte & (0x80 >> (pos & 7)) != 0) == bit {
            return Some(pos);
        }
        pos += 1;
    }
    None
}

/// BITPOS on an existing string. `range` is `None` for the whole string, else
/// `(start, end, unit)` with `end` absent when the caller gave only a start.
pub fn bitpos(s: &[u8], bit: bool, range: Option<(i64, Option<i64>, Unit)>) -> i64 {
    let (start, end, unit) = range.unwrap_or((0, None, Unit::Byte));
    let end_given = end.is_some();
    let end = end.unwrap_or(-1);
    let Some((first, last)) = bit_span(s.len(), start, end, unit) else {
        return -1;
    };
    match find_bit(s, bit, first, last) {
        Some(p) => p as i64,
        // Without an explicit end the string counts as padded with zero bits,
        // so the first clear bit is the one just past the range.
        None if !bit && !end_given => (last + 1) as i64,
        None => -1,
    }
}

/// The BITOP operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// BITOP's result: as long as the longest source, shorter sources padded with
/// zero bytes. NOT uses only the first source. Empty when every source is.
pub fn bitop(op: BitOp, srcs: &[&[u8]]) -> Vec<u8> {
    let maxlen = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
    if op == BitOp::Not {
        return srcs
            .first()
            .map(|s| s.iter().map(|b| !b).collect())
            .unwrap_or_default();
    }
    let Some((first, rest)) = srcs.split_first() else {
        return Vec::new();
    };
    let mut out = vec![0u8; maxlen];
    out[..first.len()].copy_from_slice(first);
    for src in rest {
        match op {
            BitOp::And => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o &= src.get(i).copied().unwrap_or(0);
                }
            }
            BitOp::Or => out.iter_mut().zip(src.iter()).for_each(|(o, b)| *o |= b),
            BitOp::Xor => out.iter_mut().zip(src.iter()).for_each(|(o, b)| *o ^= b),
            BitOp::Not => {}
        }
    }
    out
}

/// A BITFIELD integer type: `i1..=i64` or `u1..=u63`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldType {
    pub signed: bool,
    pub bits: u32,
}

impl FieldType {
    /// Parse `i16`, `U8`, ...; `None` for anything else, including `u64`.
    pub fn parse(s: &[u8]) -> Option<FieldType> {
        let (&first, rest) = s.split_first()?;
        let signed = match first {
            b'i' | b'I' => true,
            b'u' | b'U' => false,
            _ => return None,
        };
        let bits = crate::num::parse_i64(rest)?;
        let max = if signed { 64 } else { 63 };
        (1..=max).contains(&bits).then_some(FieldType {
            signed,
            bits: bits as u32,
        })
    }

    fn max(self) -> i128 {
        if self.signed {
            (1i128 << (self.bits - 1)) - 1
        } else {
            (1i128 << self.bits) - 1
        }
    }

    fn min(self) -> i128 {
        if self.signed {
            -(1i128 << (self.bits - 1))
        } else {
            0
        }
    }

    /// Reduce `v` modulo 2^bits into this type's range.
    fn wrap(self, v: i128) -> i64 {
        let modulus = 1i128 << self.bits;
        let mut r = v.rem_euclid(modulus);
        if self.signed && r > self.max() {
            r -= modulus;
        }
        r as i64
    }
}

/// How BITFIELD SET/INCRBY handle a result outside the type's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// The field of type `ty` at bit `offset`, reading zeros past the end.
pub fn get_field(s: &[u8], offset: u64, ty: FieldType) -> i64 {
    let mut v: u64 = 0;
    for i in 0..u64::from(ty.bits) {
        v = (v << 1) | u64::from(get_bit(s, offset.saturating_add(i)));
    }
    if ty.signed && ty.bits < 64 && v >> (ty.bits - 1) & 1 == 1 {
        // Sign-extend from the field's top bit.
        v |= u64::MAX << ty.bits;
    }
    v as i64
}

/// Write the low `ty.bits` bits of `value` at bit `offset`; the buffer must
/// already hold the whole field.
pub fn set_field(buf: &mut [u8], offset: u64, ty: FieldType, value: i64) {
    let v = value as u64;
    for i in 0..u64::from(ty.bits) {
        let bit = (v >> (u64::from(ty.bits) - 1 - i)) & 1 == 1;
        set_bit(buf, offset.saturating_add(i), bit);
    }
}

/// The value to store when `old + incr` is computed under `ow`, and whether it
/// overflowed. For SET pass the new value as `old` and 0 as `incr`: like Redis,
/// an unsigned SET sees a negative value as the huge unsigned number it casts to.
pub fn field_add(ty: FieldType, old: i64, incr: i64, ow: Overflow) -> (i64, bool) {
    let base = if ty.signed {
        i128::from(old)
    } else {
        i128::from(old as u64)
    };
    let sum = base + i128::from(incr);
    let (max, min) = (ty.max(), ty.min());
    if sum >= min && sum <= max {
        return (sum as i64, false);
    }
    let v = match ow {
        Overflow::Sat if sum > max => max as i64,
        Overflow::Sat => min as i64,
        Overflow::Wrap | Overflow::Fail => ty.wrap(sum),
    };
    (v, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ty(s: &str) -> FieldType {
        FieldType::parse(s.as_bytes()).expect("valid type")
    }

    #[test]
    fn bit_numbering_is_big_endian() {
        let mut v = vec![0u8; 2];
        assert!(!set_bit(&mut v, 7, true));
        assert_eq!(v, [0x01, 0x00]);
        assert!(set_bit(&mut v, 7, false));
        set_bit(&mut v, 8, true);
        assert_eq!(v, [0x00, 0x80]);
        assert!(get_bit(&v, 8));
        assert!(!get_bit(&v, 1_000_000));
        assert!(!get_bit(&v, u64::MAX));
    }

    #[test]
    fn bitcount_ranges_match_redis() {
        let s = b"foobar";
        assert_eq!(count_ones(s), 26);
        assert_eq!(bitcount(s, 0, 0, Unit::Byte), 4);
        assert_eq!(bitcount(s, 1, 1, Unit::Byte), 6);
        assert_eq!(bitcount(s, 1, 1, Unit::Bit), 1);
        assert_eq!(bitcount(s, 5, 30, Unit::Bit), 17);
        assert_eq!(bitcount(s, -100, -200, Unit::Byte), 0);
        assert_eq!(bitcount(s, -200, -100, Unit::Byte), 4);
        assert_eq!(bitcount(s, 10, 20, Unit::Byte), 0);
        assert_eq!(bitcount(b"", 0, -1, Unit::Byte), 0);
    }

    #[test]
    fn bitpos_matches_redis() {
        let s = [0xffu8, 0xf0, 0x00];
        assert_eq!(bitpos(&s, false, None), 12);
        assert_eq!(bitpos(&[0xff, 0xff], false, None), 16);
        assert_eq!(
            bitpos(&[0xff, 0xff], false, Some((0, Some(-1), Unit::Byte))),
            -1
        );
        assert_eq!(
            bitpos(&[0xff, 0xff], false, Some((0, None, Unit::Byte))),
            16
        );
        assert_eq!(bitpos(&[0x00, 0x00], true, None), -1);
        assert_eq!(bitpos(&s, true, Some((2, None, Unit::Byte))), -1);
        assert_eq!(bitpos(&s, true, Some((7, Some(15), Unit::Bit))), 7);
        assert_eq!(bitpos(&s, false, Some((7, Some(15), Unit::Bit))), 12);
        assert_eq!(bitpos(b"", false, None), -1);
        assert_eq!(bitpos(b"f", true, Some((-100, Some(-200), Unit::Byte))), 1);
    }

    #[test]
    fn bitop_pads_and_negates() {
        let a: &[u8] = &[0xff, 0x0f];
        let b: &[u8] = &[0xf0];
        assert_eq!(bitop(BitOp::And, &[a, b]), [0xf0, 0x00]);
        assert_eq!(bitop(BitOp::Or, &[a, b]), [0xff, 0x0f]);
        assert_eq!(bitop(BitOp::Xor, &[a, b]), [0x0f, 0x0f]);
        assert_eq!(bitop(BitOp::Not, &[b]), [0x0f]);
        assert_eq!(bitop(BitOp::And, &[b, &[]]), [0x00]);
        assert!(bitop(BitOp::Or, &[&[], &[]]).is_empty());
    }

    #[test]
    fn field_types_parse_like_redis() {
        assert_eq!(ty("i64").bits, 64);
        assert_eq!(ty("U63").bits, 63);
        for bad in ["u64", "i65", "i0", "x8", "i", "", "i-1", "i08"] {
            assert_eq!(FieldType::parse(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn fields_read_and_write() {
        let mut v = vec![0u8; 9];
        set_field(&mut v, 3, ty("i64"), -2);
        assert_eq!(get_field(&v, 3, ty("i64")), -2);
        assert_eq!(get_field(&v, 3, ty("u8")), 255);
        assert_eq!(get_field(&v, 0, ty("u3")), 0);
        set_field(&mut v, 0, ty("u8"), 0x1ff);
        assert_eq!(v[0], 0xff);
        assert_eq!(get_field(&[0x80], 0, ty("i1")), -1);
        assert_eq!(get_field(&[0x80], 4, ty("u63")), 0);
    }

    #[test]
    fn field_overflow_modes() {
        let u8t = ty("u8");
        let i8t = ty("i8");
        assert_eq!(field_add(u8t, 250, 10, Overflow::Wrap), (4, true));
        assert_eq!(field_add(u8t, 250, 10, Overflow::Sat), (255, true));
        assert_eq!(field_add(u8t, 5, -10, Overflow::Sat), (0, true));
        assert_eq!(field_add(u8t, 5, -10, Overflow::Wrap), (251, true));
        // SET u8 -1: the unsigned cast is huge, so SAT clamps to the maximum.
        assert_eq!(field_add(u8t, -1, 0, Overflow::Sat), (255, true));
        assert_eq!(field_add(i8t, 127, 1, Overflow::Wrap), (-128, true));
        assert_eq!(field_add(i8t, -128, -1, Overflow::Sat), (-128, true));
        assert_eq!(field_add(i8t, 100, -50, Overflow::Fail), (50, false));
        let i64t = ty("i64");
        assert_eq!(
            field_add(i64t, i64::MAX, 1, Overflow::Wrap),
            (i64::MIN, true)
        );
        assert_eq!(
            field_add(i64t, i64::MIN, -1, Overflow::Sat),
            (i64::MIN, true)
        );
        let u63 = ty("u63");
        assert_eq!(field_add(u63, i64::MAX, 1, Overflow::Wrap), (0, true));
    }

    /// Naive model: one bool per bit.
    fn model_bits(s: &[u8]) -> Vec<bool> {
        (0..s.len() as u64 * 8).map(|i| get_bit(s, i)).collect()
    }

    fn model_span(len_units: i64, start: i64, end: i64) -> Option<(i64, i64)> {
        let mut s = if start < 0 { len_units + start } else { start };
        let mut e = if end < 0 { len_units + end } else { end };
        s = s.max(0);
        e = e.max(0).min(len_units - 1);
        (s <= e && len_units > 0).then_some((s, e))
    }

    fn unit() -> impl Strategy<Value = Unit> {
        prop_oneof![Just(Unit::Byte), Just(Unit::Bit)]
    }

    proptest! {
        #[test]
        fn setbit_getbit_match_model(ops in proptest::collection::vec((0u64..200, any::<bool>()), 0..100)) {
            let mut buf: Vec<u8> = Vec::new();
            let mut model: Vec<bool> = Vec::new();
            for (off, on) in ops {
                let need = bytes_for_bit(off) as usize;
                if buf.len() < need {
                    buf.resize(need, 0);
                    model.resize(need * 8, false);
                }
                let old = set_bit(&mut buf, off, on);
                prop_assert_eq!(old, model[off as usize]);
                model[off as usize] = on;
            }
            prop_assert_eq!(model_bits(&buf), model.clone());
            for (i, b) in model.iter().enumerate() {
                prop_assert_eq!(get_bit(&buf, i as u64), *b);
            }
        }

        #[test]
        fn bitcount_matches_model(s in proptest::collection::vec(any::<u8>(), 0..40),
                                  start in -400i64..400, end in -400i64..400, u in unit()) {
            let bits = model_bits(&s);
            let expect = if start < 0 && end < 0 && start > end {
                0
            } else {
                let units = match u { Unit::Byte => s.len() as i64, Unit::Bit => bits.len() as i64 };
                match model_span(units, start, end) {
                    None => 0,
                    Some((a, b)) => {
                        let (a, b) = match u { Unit::Byte => (a * 8, b * 8 + 7), Unit::Bit => (a, b) };
                        bits[a as usize..=b as usize].iter().filter(|x| **x).count() as u64
                    }
                }
            };
            prop_assert_eq!(bitcount(&s, start, end, u), expect);
        }

        #[test]
        fn bitpos_matches_model(s in proptest::collection::vec(prop_oneof![Just(0u8), Just(0xff), any::<u8>()], 0..40),
                                bit in any::<bool>(),
                                range in proptest::option::of((-400i64..400, proptest::option::of(-400i64..400), unit()))) {
            let bits = model_bits(&s);
            let (start, end, u) = range.unwrap_or((0, None, Unit::Byte));
            let units = match u { Unit::Byte => s.len() as i64, Unit::Bit => bits.len() as i64 };
            let expect = match model_span(units, start, end.unwrap_or(-1)) {
                None => -1,
                Some((a, b)) => {
                    let (a, b) = match u { Unit::Byte => (a * 8, b * 8 + 7), Unit::Bit => (a, b) };
                    match (a..=b).find(|&i| bits[i as usize] == bit) {
                        Some(p) => p,
                        None if !bit && end.is_none() => b + 1,
                        None => -1,
                    }
                }
            };
            prop_assert_eq!(bitpos(&s, bit, range), expect);
        }

        #[test]
        fn fields_roundtrip(off in 0u64..100, bits in 1u32..=64, signed in any::<bool>(), v in any::<i64>()) {
            let ty = FieldType { signed: signed || bits == 64, bits };
            let mut buf = vec![0u8; 30];
            set_field(&mut buf, off, ty, v);
            let got = get_field(&buf, off, ty);
            let (expect, _) = field_add(ty, v, 0, Overflow::Wrap);
            prop_assert_eq!(got, expect);
            // Bits outside the field are untouched.
            for i in 0..240u64 {
                if i < off || i >= off + u64::from(bits) {
                    prop_assert!(!get_bit(&buf, i));
                }
            }
        }
    }
}
