//! The global allocator: mimalloc, with a running count of allocated bytes so INFO
//! can report `used_memory` as Redis does from its allocator.
#![allow(unsafe_code)]

use mimalloc::MiMalloc;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicI64, Ordering};

pub struct Counting;

static ALLOCATED: AtomicI64 = AtomicI64::new(0);

// SAFETY: every method forwards to MiMalloc with the caller's arguments unchanged,
// so MiMalloc's guarantees carry over; the counter is only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { MiMalloc.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        ALLOCATED.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { MiMalloc.realloc(ptr, layout, new_size) }
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
