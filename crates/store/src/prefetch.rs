//! A cache prefetch hint, for warming entries a batch of commands is about to use.
#![allow(unsafe_code)]

/// Ask the CPU to start loading the cache line at `ptr`. A hint only: it never
/// faults and has no effect a program can observe except timing.
#[inline]
pub fn prefetch<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 does not access memory architecturally; it cannot fault
    // or change any value, whatever address it is given.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(ptr.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}
