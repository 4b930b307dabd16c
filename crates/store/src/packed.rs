//! `Packed`: a small sequence of elements in one exact-size allocation, the
//! compact form of small hashes, sets, sorted sets and lists (what Redis calls
//! a listpack). A collection of five short fields costs one allocation of a
//! few dozen bytes instead of a table with a node per field.
//!
//! Each element is a tag byte and its payload:
//! - `0x00..=0xBF`: a byte string of that length (0 to 191 bytes) follows;
//! - `0xC0..=0xC7`: an integer in 1 to 8 little-endian bytes, sign-extended;
//! - `0xC8`: an `f64` in 8 little-endian bytes (a non-integral score);
//! - `0xC9`: a byte string whose `u32` little-endian length follows;
//! - `0xCA..=0xFF`: the integer `tag - 0xCA` (0 to 53) with no payload, so a
//!   small count, score or flag costs one byte.
//!
//! Byte strings that are the canonical decimal form of an `i64` (`parse_i64`
//! accepts them: no sign on zero, no leading zeros) are stored as integers
//! and compare equal to those bytes, as Redis's listpack does. Operations are
//! linear scans; the owning type converts to a table past its size limits.
//! Every edit is one splice that rebuilds the allocation at its exact size.

use crate::num::parse_i64;
use crate::slim::SlimBytes;

const INT_TAG: u8 = 0xC0;
const F64_TAG: u8 = 0xC8;
const LONG_TAG: u8 = 0xC9;
const SHORT_MAX: usize = 0xBF;
const TINY_TAG: u8 = 0xCA;
const TINY_MAX: i64 = (0xFF - TINY_TAG) as i64;

/// One element as stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Elem<'a> {
    Bytes(&'a [u8]),
    Int(i64),
    Float(f64),
}

/// An element to store; byte strings holding a canonical integer are stored
/// as integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Put<'a> {
    Bytes(&'a [u8]),
    Int(i64),
    Float(f64),
}

impl<'a> Elem<'a> {
    /// Whether this element equals the byte string `b` (integers compare by
    /// their decimal form).
    pub fn eq_bytes(&self, b: &[u8]) -> bool {
        match *self {
            Elem::Bytes(s) => s == b,
            Elem::Int(i) => parse_i64(b) == Some(i),
            Elem::Float(_) => false,
        }
    }

    /// The element as a byte string (integers in decimal).
    pub fn to_vec(&self) -> Vec<u8> {
        match *self {
            Elem::Bytes(s) => s.to_vec(),
            Elem::Int(i) => i.to_string().into_bytes(),
            Elem::Float(f) => crate::num::format_incr_float(f).into_bytes(),
        }
    }

    /// The element as a number, for scores: integers and floats, or a byte
    /// string that does not parse (`None`).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Elem::Int(i) => Some(i as f64),
            Elem::Float(f) => Some(f),
            Elem::Bytes(_) => None,
        }
    }
}

impl<'a> Put<'a> {
    /// Bytes this element takes once stored (tag, length and payload).
    pub fn encoded_len(&self) -> usize {
        match *self {
            Put::Bytes(b) => match parse_i64(b) {
                Some(i) => Put::Int(i).encoded_len(),
                None if b.len() <= SHORT_MAX => 1 + b.len(),
                None => 5 + b.len(),
            },
            Put::Int(i) if (0..=TINY_MAX).contains(&i) => 1,
            Put::Int(i) => 1 + int_width(i),
            Put::Float(f) => match float_as_int(f) {
                Some(i) => Put::Int(i).encoded_len(),
                None => 9,
            },
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Put::Bytes(b) => match parse_i64(b) {
                Some(i) => Put::Int(i).encode(out),
                None if b.len() <= SHORT_MAX => {
                    out.push(b.len() as u8);
                    out.extend_from_slice(b);
                }
                None => {
                    out.push(LONG_TAG);
                    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                    out.extend_from_slice(b);
                }
            },
            Put::Int(i) if (0..=TINY_MAX).contains(&i) => out.push(TINY_TAG + i as u8),
            Put::Int(i) => {
                let w = int_width(i);
                out.push(INT_TAG + (w as u8 - 1));
                out.extend_from_slice(&i.to_le_bytes()[..w]);
            }
            Put::Float(f) => match float_as_int(f) {
                Some(i) => Put::Int(i).encode(out),
                None => {
                    out.push(F64_TAG);
                    out.extend_from_slice(&f.to_le_bytes());
                }
            },
        }
    }
}

/// Bytes needed to hold `i` sign-extended.
fn int_width(i: i64) -> usize {
    let significant = if i < 0 {
        64 - (!i).leading_zeros()
    } else {
        64 - i.leading_zeros()
    };
    // One more bit for the sign, rounded up to bytes.
    ((significant as usize + 1).div_ceil(8)).max(1)
}

/// A float that is exactly an integer (and not -0.0) is stored as one.
fn float_as_int(f: f64) -> Option<i64> {
    let in_range = (-9.007_199_254_740_992e15..=9.007_199_254_740_992e15).contains(&f);
    if in_range && f.fract() == 0.0 && !(f == 0.0 && f.is_sign_negative()) {
        Some(f as i64)
    } else {
        None
    }
}

/// Decode the element at `pos`; returns it and the offset after it. The
/// buffer is only ever written by `Put::encode`, so a short buffer is a bug;
/// it decodes as an empty string rather than panicking.
fn decode(buf: &[u8], pos: usize) -> (Elem<'_>, usize) {
    let Some(&tag) = buf.get(pos) else {
        return (Elem::Bytes(&[]), buf.len());
    };
    let body = pos + 1;
    let bytes = |start: usize, len: usize| match buf.get(start..start + len) {
        Some(s) => (Elem::Bytes(s), start + len),
        None => (Elem::Bytes(&[]), buf.len()),
    };
    match tag {
        0..=0xBF => bytes(body, usize::from(tag)),
        INT_TAG..=0xC7 => {
            let w = usize::from(tag - INT_TAG) + 1;
            let raw = buf.get(body..body + w).unwrap_or(&[]);
            let mut le = [0u8; 8];
            le[..raw.len()].copy_from_slice(raw);
            // Sign-extend from the top stored byte.
            if raw.last().is_some_and(|b| b & 0x80 != 0) {
                le[raw.len()..].fill(0xFF);
            }
            (Elem::Int(i64::from_le_bytes(le)), body + w)
        }
        F64_TAG => {
            let mut le = [0u8; 8];
            if let Some(raw) = buf.get(body..body + 8) {
                le.copy_from_slice(raw);
            }
            (Elem::Float(f64::from_le_bytes(le)), body + 8)
        }
        LONG_TAG => {
            let mut le = [0u8; 4];
            if let Some(raw) = buf.get(body..body + 4) {
                le.copy_from_slice(raw);
            }
            bytes(body + 4, u32::from_le_bytes(le) as usize)
        }
        TINY_TAG..=0xFF => (Elem::Int(i64::from(tag - TINY_TAG)), body),
    }
}

#[derive(Clone, PartialEq, Default)]
pub struct Packed {
    /// Twelve bytes aligned to four: a value holding a `Packed` stays 16 bytes.
    buf: SlimBytes,
}

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterates elements front to back.
pub struct Iter<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Elem<'a>;
    fn next(&mut self) -> Option<Elem<'a>> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let (e, next) = decode(self.buf, self.pos);
        self.pos = next;
        Some(e)
    }
}

impl Packed {
    pub fn new() -> Packed {
        Packed::default()
    }

    pub fn from_elems(elems: &[Put<'_>]) -> Packed {
        let mut p = Packed::new();
        p.splice(0, 0, elems);
        p
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter {
            buf: &self.buf,
            pos: 0,
        }
    }

    /// Elements stored (a scan: cheap at the sizes a packed form is used for).
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes of the encoded elements.
    pub fn encoded_len(&self) -> usize {
        self.buf.len()
    }

    /// Bytes of the allocation (MEMORY USAGE).
    pub fn heap_bytes(&self) -> usize {
        self.buf.heap_bytes()
    }

    /// The element at index `i`.
    pub fn get(&self, i: usize) -> Option<Elem<'_>> {
        self.iter().nth(i)
    }

    /// Byte offset of element `i`, or the end when `i` is the length.
    fn offset_of(&self, i: usize) -> Option<usize> {
        let mut pos = 0;
        for _ in 0..i {
            if pos >= self.buf.len() {
                return None;
            }
            pos = decode(&self.buf, pos).1;
        }
        Some(pos)
    }

    /// Replace `remove` elements starting at element index `at` by `insert`.
    /// Indexes past the end are clamped.
    pub fn splice(&mut self, at: usize, remove: usize, insert: &[Put<'_>]) {
        let start = self.offset_of(at).unwrap_or(self.buf.len());
        let mut end = start;
        for _ in 0..remove {
            if end >= self.buf.len() {
                break;
            }
            end = decode(&self.buf, end).1;
        }
        let added: usize = insert.iter().map(Put::encoded_len).sum();
        let mut out = Vec::with_capacity(self.buf.len() - (end - start) + added);
        out.extend_from_slice(&self.buf[..start]);
        for p in insert {
            p.encode(&mut out);
        }
        out.extend_from_slice(&self.buf[end..]);
        self.buf = SlimBytes::from_vec(out);
    }

    pub fn push_back(&mut self, elems: &[Put<'_>]) {
        self.splice(usize::MAX, 0, elems);
    }

    pub fn push_front(&mut self, elems: &[Put<'_>]) {
        self.splice(0, 0, elems);
    }

    /// Index of the first element equal to `b`, looking at every `stride`-th
    /// element from `from` (stride 2 from 0 finds a hash field, from 1 a value).
    pub fn find(&self, b: &[u8], from: usize, stride: usize) -> Option<usize> {
        let stride = stride.max(1);
        self.iter()
            .enumerate()
            .skip(from)
            .step_by(stride)
            .find(|(_, e)| e.eq_bytes(b))
            .map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Model {
        Bytes(Vec<u8>),
        Float(f64),
    }

    fn as_put(m: &Model) -> Put<'_> {
        match m {
            Model::Bytes(b) => Put::Bytes(b),
            Model::Float(f) => Put::Float(*f),
        }
    }

    fn same(e: Elem<'_>, m: &Model) -> bool {
        match m {
            Model::Bytes(b) => e.eq_bytes(b) && e.to_vec() == *b,
            Model::Float(f) => {
                e.as_f64() == Some(*f) && e.as_f64().map(f64::to_bits) == Some(f.to_bits())
            }
        }
    }

    fn arb_model() -> impl Strategy<Value = Model> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..8).prop_map(Model::Bytes),
            proptest::collection::vec(any::<u8>(), 180..300).prop_map(Model::Bytes),
            any::<i64>().prop_map(|i| Model::Bytes(i.to_string().into_bytes())),
            (-1000i64..1000).prop_map(|i| Model::Bytes(i.to_string().into_bytes())),
            (0i64..60).prop_map(|i| Model::Bytes(i.to_string().into_bytes())),
            // Non-canonical integers stay byte strings.
            Just(Model::Bytes(b"007".to_vec())),
            Just(Model::Bytes(b"-0".to_vec())),
            Just(Model::Bytes(b"+1".to_vec())),
            any::<f64>()
                .prop_filter("no NaN", |f| !f.is_nan())
                .prop_map(Model::Float),
            (-5i32..5).prop_map(|i| Model::Float(f64::from(i))),
            Just(Model::Float(-0.0)),
        ]
    }

    proptest! {
        /// Random splices agree with a Vec model, element for element.
        #[test]
        fn splices_match_a_vec(
            ops in proptest::collection::vec(
                (0usize..40, 0usize..4, proptest::collection::vec(arb_model(), 0..4)),
                1..40,
            )
        ) {
            let mut p = Packed::new();
            let mut model: Vec<Model> = Vec::new();
            for (at, remove, insert) in ops {
                let puts: Vec<Put<'_>> = insert.iter().map(as_put).collect();
                p.splice(at, remove, &puts);
                let at = at.min(model.len());
                let end = (at + remove).min(model.len());
                model.splice(at..end, insert.iter().cloned());
                prop_assert_eq!(p.len(), model.len());
                for (e, m) in p.iter().zip(&model) {
                    prop_assert!(same(e, m), "{:?} vs {:?}", e, m);
                }
            }
            for (i, m) in model.iter().enumerate() {
                if let Model::Bytes(b) = m {
                    let found = p.find(b, 0, 1).expect("present");
                    prop_assert!(found <= i);
                }
            }
        }
    }

    #[test]
    fn integers_are_stored_compactly() {
        let p = Packed::from_elems(&[Put::Bytes(b"5"), Put::Bytes(b"-129"), Put::Bytes(b"v1")]);
        // 1 byte for 5 (in the tag), 3 for -129, 3 for "v1".
        assert_eq!(p.encoded_len(), 7);
        assert_eq!(p.heap_bytes(), 7);
        assert_eq!(p.get(0), Some(Elem::Int(5)));
        assert_eq!(p.get(1), Some(Elem::Int(-129)));
        assert_eq!(p.get(2), Some(Elem::Bytes(b"v1")));
        assert_eq!(p.find(b"v1", 0, 2), Some(2));
        assert_eq!(p.find(b"v1", 1, 2), None);
        assert_eq!(p.find(b"5", 0, 1), Some(0));
    }

    #[test]
    fn tiny_integers_fill_the_tag_byte_and_stop_at_its_end() {
        let puts: Vec<Put<'_>> = (-2..=56).map(Put::Int).collect();
        let p = Packed::from_elems(&puts);
        let want: Vec<Elem<'_>> = (-2..=56).map(Elem::Int).collect();
        assert_eq!(p.iter().collect::<Vec<_>>(), want);
        // -2, -1 and 54..=56 take a payload byte; 0..=53 none.
        assert_eq!(p.encoded_len(), 5 * 2 + 54);
        assert_eq!(Put::Int(53).encoded_len(), 1);
        assert_eq!(Put::Int(54).encoded_len(), 2);
        assert_eq!(Put::Float(3.0).encoded_len(), 1);
    }

    #[test]
    fn int_width_covers_the_range() {
        for (i, w) in [
            (0, 1),
            (127, 1),
            (128, 2),
            (-128, 1),
            (-129, 2),
            (i64::MAX, 8),
            (i64::MIN, 8),
        ] {
            assert_eq!(int_width(i), w, "{i}");
        }
    }
}
