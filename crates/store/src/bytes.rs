//! `CompactBytes`: a byte string that stores up to 22 bytes inline.
//!
//! Keys and small string values are the bulk of a cache's memory, and most are short
//! (`user:1234`, `value:42`). Storing them inline in the entry avoids a second heap
//! allocation and its allocator header. Longer strings live in a boxed slice; a string
//! that grows (APPEND, SETRANGE, SETBIT) switches to a `Vec` so repeated growth is
//! amortised, as Redis's sds strings are.
//!
//! Invariant: `size_of::<CompactBytes>() == 24`, checked by a test.

use std::fmt;

pub const INLINE_CAP: usize = 22;

#[derive(Clone)]
pub enum CompactBytes {
    Inline { len: u8, buf: [u8; INLINE_CAP] },
    Boxed(Box<[u8]>),
    Growable(Box<Vec<u8>>),
}

impl CompactBytes {
    pub fn new(data: &[u8]) -> Self {
        if data.len() <= INLINE_CAP {
            let mut buf = [0u8; INLINE_CAP];
            buf[..data.len()].copy_from_slice(data);
            CompactBytes::Inline {
                len: data.len() as u8,
                buf,
            }
        } else {
            CompactBytes::Boxed(data.into())
        }
    }

    pub fn from_vec(v: Vec<u8>) -> Self {
        if v.len() <= INLINE_CAP {
            Self::new(&v)
        } else {
            CompactBytes::Boxed(v.into_boxed_slice())
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            CompactBytes::Inline { len, buf } => &buf[..usize::from(*len)],
            CompactBytes::Boxed(b) => b,
            CompactBytes::Growable(v) => v,
        }
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes owned beyond the 24 bytes of the value itself.
    pub fn heap_bytes(&self) -> usize {
        match self {
            CompactBytes::Inline { .. } => 0,
            CompactBytes::Boxed(b) => b.len(),
            CompactBytes::Growable(v) => v.capacity() + std::mem::size_of::<Vec<u8>>(),
        }
    }

    /// Mutable access for in-place growth; switches to the growable form.
    pub fn make_mut(&mut self) -> &mut Vec<u8> {
        if !matches!(self, CompactBytes::Growable(_)) {
            let v = self.as_slice().to_vec();
            *self = CompactBytes::Growable(Box::new(v));
        }
        match self {
            CompactBytes::Growable(v) => v,
            // Just converted above.
            _ => unreachable!("converted to Growable"),
        }
    }
}

impl PartialEq for CompactBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for CompactBytes {}

impl std::hash::Hash for CompactBytes {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // Must agree with `Eq`, which compares the bytes whatever the form.
        self.as_slice().hash(state);
    }
}

impl std::borrow::Borrow<[u8]> for CompactBytes {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialOrd for CompactBytes {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for CompactBytes {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl fmt::Debug for CompactBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_24_bytes() {
        assert_eq!(std::mem::size_of::<CompactBytes>(), 24);
    }

    #[test]
    fn inline_boxed_growable_agree() {
        for n in [0usize, 1, 22, 23, 100] {
            let data: Vec<u8> = (0..n as u8).collect();
            let mut c = CompactBytes::new(&data);
            assert_eq!(c.as_slice(), &data[..]);
            assert_eq!(c.heap_bytes() == 0, n <= INLINE_CAP);
            c.make_mut().push(7);
            let mut expect = data.clone();
            expect.push(7);
            assert_eq!(c.as_slice(), &expect[..]);
        }
    }
}
