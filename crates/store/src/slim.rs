//! `SlimBytes`: an owned, immutable byte string in 12 bytes, aligned to 4.
//!
//! `Box<[u8]>` is a pointer and a word of length, 16 bytes aligned to 8: held
//! in an enum it leaves no room for the tag, so a value holding one is 24
//! bytes. `SlimBytes` keeps a 4-byte length beside the pointer and packs them
//! to 4-byte alignment, so an enum fits its tag in the 4 bytes before it and
//! a value holding one (a packed collection, a long string) is 16 bytes.
//!
//! The allocation is a `Box<[u8]>` of exactly the contents, so the allocator
//! rounds nothing extra. Contents of `u32::MAX` bytes or more, which only a
//! server configured far past its defaults can hold in one packed value,
//! store `u32::MAX` as the length and their true length in the first 8 bytes
//! of the allocation, native-endian, read unaligned.

#![allow(unsafe_code)]

use std::ptr::NonNull;

/// Length marking contents whose true length is at the front of the allocation.
const LONG: u32 = u32::MAX;
const WORD: usize = std::mem::size_of::<usize>();

#[repr(C, packed(4))]
pub struct SlimBytes {
    /// The contents' length, or [`LONG`].
    len: u32,
    /// The start of a `Box<[u8]>` of the contents (plus the word in front
    /// when long); dangling when empty.
    ptr: NonNull<u8>,
}

// SAFETY: `SlimBytes` owns its allocation exclusively, like `Box<[u8]>`, and
// hands out `&[u8]` only through `&self`.
unsafe impl Send for SlimBytes {}
// SAFETY: as above; there is no interior mutability.
unsafe impl Sync for SlimBytes {}

impl SlimBytes {
    pub fn new(data: &[u8]) -> SlimBytes {
        SlimBytes::from_vec(data.to_vec())
    }

    /// Takes over `v`'s allocation (shrunk to its length when it has spare
    /// capacity) without copying the contents, unless they are long.
    pub fn from_vec(v: Vec<u8>) -> SlimBytes {
        let (len, boxed) = match u32::try_from(v.len()) {
            Ok(n) if n < LONG => (n, v.into_boxed_slice()),
            _ => {
                let mut framed = Vec::with_capacity(WORD.saturating_add(v.len()));
                framed.extend_from_slice(&v.len().to_ne_bytes());
                framed.extend_from_slice(&v);
                (LONG, framed.into_boxed_slice())
            }
        };
        let raw = Box::into_raw(boxed).cast::<u8>();
        // A `Box`'s pointer is never null (dangling, not null, when empty).
        let ptr = NonNull::new(raw).unwrap_or_else(|| unreachable!("Box pointers are non-null"));
        SlimBytes { len, ptr }
    }

    /// Bytes of the allocation: the contents, and the word in front of long ones.
    fn alloc_len(&self) -> usize {
        let len = self.len;
        if len != LONG {
            return len as usize;
        }
        let ptr = self.ptr;
        // SAFETY: a long allocation starts with WORD initialised bytes.
        let word = unsafe { ptr.as_ptr().cast::<[u8; WORD]>().read_unaligned() };
        WORD + usize::from_ne_bytes(word)
    }

    #[inline]
    pub fn len(&self) -> usize {
        let len = self.len;
        if len != LONG {
            len as usize
        } else {
            self.alloc_len() - WORD
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        let len = self.len;
        len == 0
    }

    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        let (len, ptr) = (self.len, self.ptr);
        if len != LONG {
            // SAFETY: `ptr` is the start of a live `Box<[u8]>` of `len` bytes.
            unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len as usize) }
        } else {
            // SAFETY: a long allocation holds the word, then that many bytes.
            unsafe { std::slice::from_raw_parts(ptr.as_ptr().add(WORD), self.len()) }
        }
    }

    /// The contents as a vector, reusing the allocation unless they are long.
    pub fn into_vec(self) -> Vec<u8> {
        let (len, ptr) = (self.len, self.ptr);
        if len == LONG {
            return self.as_slice().to_vec();
        }
        let this = std::mem::ManuallyDrop::new(self);
        debug_assert_eq!(this.alloc_len(), len as usize);
        // SAFETY: `ptr` is the start of a `Box<[u8]>` of exactly `len` bytes,
        // leaked by `from_vec`; `this` is never dropped, so the box is owned
        // once, by the vector.
        let boxed = unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                ptr.as_ptr(),
                len as usize,
            ))
        };
        boxed.into_vec()
    }

    /// Heap bytes the allocation takes.
    pub fn heap_bytes(&self) -> usize {
        self.alloc_len()
    }
}

impl Default for SlimBytes {
    fn default() -> SlimBytes {
        SlimBytes::from_vec(Vec::new())
    }
}

impl Drop for SlimBytes {
    fn drop(&mut self) {
        let total = self.alloc_len();
        let ptr = self.ptr;
        // SAFETY: `ptr` is the start of a `Box<[u8]>` of exactly `total`
        // bytes, leaked by `from_vec` and not freed since.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr.as_ptr(), total)) });
    }
}

impl Clone for SlimBytes {
    fn clone(&self) -> SlimBytes {
        SlimBytes::new(self.as_slice())
    }
}

impl std::ops::Deref for SlimBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for SlimBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for SlimBytes {}

impl std::fmt::Debug for SlimBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twelve_bytes_aligned_to_four() {
        assert_eq!(std::mem::size_of::<SlimBytes>(), 12);
        assert_eq!(std::mem::align_of::<SlimBytes>(), 4);
        assert_eq!(std::mem::size_of::<Option<SlimBytes>>(), 12);
    }

    #[test]
    fn round_trips_every_length() {
        for n in 0..300usize {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
            let t = SlimBytes::new(&data);
            assert_eq!(t.len(), n);
            assert_eq!(t.is_empty(), n == 0);
            assert_eq!(t.as_slice(), &data[..]);
            assert_eq!(t.heap_bytes(), n);
            let c = t.clone();
            drop(t);
            assert_eq!(&*c, &data[..]);
            assert_eq!(c.into_vec(), data);
            let mut spare = Vec::with_capacity(n + 9);
            spare.extend_from_slice(&data);
            assert_eq!(SlimBytes::from_vec(spare).as_slice(), &data[..]);
        }
    }

    #[test]
    fn the_long_form_reads_its_length_from_the_allocation() {
        // Build the long form by hand at a small size: the same code reads it.
        let data = b"long contents".to_vec();
        let mut framed = data.len().to_ne_bytes().to_vec();
        framed.extend_from_slice(&data);
        let raw = Box::into_raw(framed.into_boxed_slice()).cast::<u8>();
        let t = SlimBytes {
            len: LONG,
            ptr: NonNull::new(raw).expect("box"),
        };
        assert_eq!(t.len(), data.len());
        assert_eq!(t.as_slice(), &data[..]);
        assert_eq!(t.heap_bytes(), WORD + data.len());
        assert_eq!(t.clone().as_slice(), &data[..]);
    }
}
