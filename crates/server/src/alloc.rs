//! The global allocator: mimalloc, with a running count of allocated bytes so INFO
//! can report `used_memory` as Redis does from its allocator.
#![allow(unsafe_code)]

use libmimalloc_sys as mi;
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, Ordering};

pub struct Counting;

static ALLOCATED: AtomicI64 = AtomicI64::new(0);

/// Every block mimalloc hands out is aligned to a machine word. Layouts
/// asking for no more go to its plain entry points: the aligned ones take a
/// general path that costs about six times as many instructions per call,
/// paid by nearly every allocation a request makes.
const WORD: usize = std::mem::size_of::<usize>();

// SAFETY: each method calls the mimalloc function for the caller's layout:
// the plain one when the alignment asked for is at most a word, which every
// mimalloc block has, and the aligned one otherwise; `mi_free` releases
// blocks from either. The counter is only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: mimalloc accepts any size; alignment as described above.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        ALLOCATED.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: `ptr` came from one of the allocation functions above.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: `ptr` came from the functions above with `layout`'s
        // alignment, which the reallocated block keeps.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

pub fn allocated_bytes() -> u64 {
    ALLOCATED.load(Ordering::Relaxed).max(0) as u64
}

extern "C" {
    /// mimalloc's own API (always linked; the Rust crate only declares it under a
    /// feature that would pull in another dependency).
    fn mi_collect(force: bool);
}

/// Reclaim blocks other threads freed into this thread's heap and return empty
/// pages to the OS. Keys allocated by a connection's thread are freed by the
/// expiry cycle on another; mimalloc only notices that when the owning thread
/// allocates again, so an idle worker would otherwise keep the memory.
pub fn collect_thread() {
    // SAFETY: mi_collect takes no pointers and may be called at any time from
    // any thread; it only tidies the calling thread's heap.
    unsafe { mi_collect(false) }
}
