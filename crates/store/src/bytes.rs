//! Byte strings that store short contents inline.
//!
//! Keys and small string values are the bulk of a cache's memory, and most are short
//! (`user:1234`, `value:42`). Storing them inline in the entry avoids a second heap
//! allocation and its allocator header. Longer strings live in a boxed slice; a string
//! that grows (APPEND, SETRANGE, SETBIT) switches to a `Vec` so repeated growth is
//! amortised, as Redis's sds strings are.
//!
//! One implementation, [`InlineBytes`], in two sizes:
//! - [`CompactBytes`] (24 bytes, up to 22 inline, long contents in a `Box<[u8]>`) for
//!   keys and collection members, where 16- to 22-byte names are common;
//! - [`StrBytes`] (16 bytes, up to 14 inline, long contents in a [`SlimBytes`]) for
//!   string values, so that a [`crate::Value`] is 16 bytes and an entry 48.
//!
//! Invariants, checked by a test: `size_of::<CompactBytes>() == 24`,
//! `size_of::<StrBytes>() == 16`, and both leave a niche for an enclosing enum's tag.

use crate::slim::SlimBytes;
use std::fmt;

/// Inline capacity of [`CompactBytes`].
pub const INLINE_CAP: usize = 22;
/// Inline capacity of [`StrBytes`].
pub const STR_INLINE_CAP: usize = 14;

/// A key or a collection member.
pub type CompactBytes = InlineBytes<INLINE_CAP, Box<[u8]>>;
/// A string value.
pub type StrBytes = InlineBytes<STR_INLINE_CAP, SlimBytes>;

/// The owned, immutable form long contents take.
pub trait Boxed: Sized {
    fn from_slice(data: &[u8]) -> Self;
    fn from_vec(v: Vec<u8>) -> Self;
    fn bytes(&self) -> &[u8];
    fn into_bytes(self) -> Vec<u8>;
    /// Heap bytes the allocation takes.
    fn heap(&self) -> usize;
}

impl Boxed for Box<[u8]> {
    fn from_slice(data: &[u8]) -> Self {
        data.into()
    }
    fn from_vec(v: Vec<u8>) -> Self {
        v.into_boxed_slice()
    }
    #[inline]
    fn bytes(&self) -> &[u8] {
        self
    }
    fn into_bytes(self) -> Vec<u8> {
        self.into_vec()
    }
    fn heap(&self) -> usize {
        self.len()
    }
}

impl Boxed for SlimBytes {
    fn from_slice(data: &[u8]) -> Self {
        SlimBytes::new(data)
    }
    fn from_vec(v: Vec<u8>) -> Self {
        SlimBytes::from_vec(v)
    }
    #[inline]
    fn bytes(&self) -> &[u8] {
        self.as_slice()
    }
    fn into_bytes(self) -> Vec<u8> {
        self.into_vec()
    }
    fn heap(&self) -> usize {
        self.heap_bytes()
    }
}

#[derive(Clone)]
pub enum InlineBytes<const N: usize, B> {
    Inline { len: u8, buf: [u8; N] },
    Boxed(B),
    Growable(Box<Vec<u8>>),
}

impl<const N: usize, B: Boxed> InlineBytes<N, B> {
    pub fn new(data: &[u8]) -> Self {
        if data.len() <= N {
            let mut buf = [0u8; N];
            buf[..data.len()].copy_from_slice(data);
            InlineBytes::Inline {
                len: data.len() as u8,
                buf,
            }
        } else {
            InlineBytes::Boxed(B::from_slice(data))
        }
    }

    pub fn from_vec(v: Vec<u8>) -> Self {
        if v.len() <= N {
            Self::new(&v)
        } else {
            InlineBytes::Boxed(B::from_vec(v))
        }
    }

    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            InlineBytes::Inline { len, buf } => &buf[..usize::from(*len)],
            InlineBytes::Boxed(b) => b.bytes(),
            InlineBytes::Growable(v) => v,
        }
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The contents as a vector, without a copy where they are one already.
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            InlineBytes::Inline { len, buf } => buf[..usize::from(len)].to_vec(),
            InlineBytes::Boxed(b) => b.into_bytes(),
            InlineBytes::Growable(v) => *v,
        }
    }

    /// Heap bytes owned beyond the value itself.
    pub fn heap_bytes(&self) -> usize {
        match self {
            InlineBytes::Inline { .. } => 0,
            InlineBytes::Boxed(b) => b.heap(),
            InlineBytes::Growable(v) => v.capacity() + std::mem::size_of::<Vec<u8>>(),
        }
    }

    /// Whether the contents are in the growable form (after APPEND, SETRANGE, SETBIT).
    pub fn is_growable(&self) -> bool {
        matches!(self, InlineBytes::Growable(_))
    }

    /// A growable string holding `v`, for contents about to grow again.
    pub fn growable(v: Vec<u8>) -> Self {
        InlineBytes::Growable(Box::new(v))
    }

    /// Mutable access for in-place growth; switches to the growable form.
    pub fn make_mut(&mut self) -> &mut Vec<u8> {
        if !self.is_growable() {
            let v = self.as_slice().to_vec();
            *self = InlineBytes::Growable(Box::new(v));
        }
        match self {
            InlineBytes::Growable(v) => v,
            // Just converted above.
            _ => unreachable!("converted to Growable"),
        }
    }
}

impl<const N: usize, B: Boxed> PartialEq for InlineBytes<N, B> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl<const N: usize, B: Boxed> Eq for InlineBytes<N, B> {}

impl<const N: usize, B: Boxed> std::hash::Hash for InlineBytes<N, B> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // Must agree with `Eq`, which compares the bytes whatever the form.
        self.as_slice().hash(state);
    }
}

impl<const N: usize, B: Boxed> std::borrow::Borrow<[u8]> for InlineBytes<N, B> {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl<const N: usize, B: Boxed> PartialOrd for InlineBytes<N, B> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<const N: usize, B: Boxed> Ord for InlineBytes<N, B> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl<const N: usize, B: Boxed> fmt::Debug for InlineBytes<N, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        use std::mem::size_of;
        assert_eq!(size_of::<CompactBytes>(), 24);
        assert_eq!(size_of::<Option<CompactBytes>>(), 24);
        assert_eq!(size_of::<StrBytes>(), 16);
        assert_eq!(size_of::<Option<StrBytes>>(), 16);
    }

    fn forms_agree<const N: usize, B: Boxed + Clone>() {
        for n in [0usize, 1, N - 1, N, N + 1, 100] {
            let data: Vec<u8> = (0..n as u8).collect();
            let mut c = InlineBytes::<N, B>::new(&data);
            assert_eq!(c.as_slice(), &data[..]);
            assert_eq!(c.heap_bytes() == 0, n <= N);
            assert_eq!(InlineBytes::<N, B>::from_vec(data.clone()), c);
            assert_eq!(c.clone().into_vec(), data);
            c.make_mut().push(7);
            let mut expect = data.clone();
            expect.push(7);
            assert_eq!(c.as_slice(), &expect[..]);
            assert!(c.is_growable());
            assert_eq!(c.into_vec(), expect);
        }
    }

    #[test]
    fn inline_boxed_growable_agree() {
        forms_agree::<INLINE_CAP, Box<[u8]>>();
        forms_agree::<STR_INLINE_CAP, SlimBytes>();
    }

    // Each form against a `Vec<u8>` model: build from a slice or a vector,
    // grow in place, clone, compare, order and take apart.
    fn model_agrees<const N: usize, B: Boxed + Clone>(ops: &[(u8, Vec<u8>)]) {
        let mut strs: Vec<InlineBytes<N, B>> = Vec::new();
        let mut model: Vec<Vec<u8>> = Vec::new();
        for (op, data) in ops {
            match op % 4 {
                0 => {
                    strs.push(InlineBytes::new(data));
                    model.push(data.clone());
                }
                1 => {
                    strs.push(InlineBytes::from_vec(data.clone()));
                    model.push(data.clone());
                }
                2 if !strs.is_empty() => {
                    let i = data.len() % strs.len();
                    strs[i].make_mut().extend_from_slice(data);
                    model[i].extend_from_slice(data);
                }
                _ if !strs.is_empty() => {
                    let i = data.len() % strs.len();
                    let c = strs[i].clone();
                    strs.push(c);
                    model.push(model[i].clone());
                }
                _ => {}
            }
        }
        for (i, (s, m)) in strs.iter().zip(&model).enumerate() {
            assert_eq!(s.as_slice(), &m[..]);
            assert_eq!(s.len(), m.len());
            assert_eq!(s.heap_bytes() == 0, m.len() <= N && !s.is_growable());
            let j = (i + 1) % strs.len();
            assert_eq!(s == &strs[j], m == &model[j]);
            assert_eq!(s.cmp(&strs[j]), m.cmp(&model[j]));
        }
        for (s, m) in strs.into_iter().zip(model) {
            assert_eq!(s.into_vec(), m);
        }
    }

    proptest::proptest! {
        #[test]
        fn both_sizes_behave_as_vectors(
            ops in proptest::collection::vec(
                (0u8..8, proptest::collection::vec(proptest::num::u8::ANY, 0..40)),
                0..40,
            )
        ) {
            model_agrees::<INLINE_CAP, Box<[u8]>>(&ops);
            model_agrees::<STR_INLINE_CAP, SlimBytes>(&ops);
        }
    }
}
