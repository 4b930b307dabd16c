//! Fuzz what `BF.LOADCHUNK` does with client bytes: a dump header, then
//! chunks at client-chosen iterators, for both filter layouts.
//!
//! Input: a first byte choosing how the header is made, then the header's
//! bytes, then any number of `(iter: u64, len: u8, chunk)` loads. The header
//! is either taken raw from the input or is the real header of a small
//! filter (classic or blocked, scaling or fixed, with some items added)
//! with input bytes XORed over it, so both the parser's refusals and the
//! accepted shapes near real ones get explored.
//!
//! Properties: nothing panics; an accepted header serialises back to the
//! same bytes; a load either succeeds or fails without changing the shape
//! of the filter; afterwards `exists`, `add`, `debug_lines` and the
//! `SCANDUMP` walk work, and dumping the loaded filter and loading that dump
//! into a fresh filter gives an equal filter.

#![no_main]

use keel_store::bloom::{Chain, Layout};
use libfuzzer_sys::fuzz_target;

/// Headers claiming more bit-array bytes than this are skipped: the store
/// admits up to 4 GiB, and allocating that is correct but slow and over
/// libFuzzer's default malloc limit.
const MAX_FUZZ_BYTES: u64 = 16 << 20;

/// Fixed part and per-link part of a dump header.
const HEADER_FIXED: usize = 20;
const HEADER_LINK: usize = 53;

struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }

    fn u64(&mut self) -> Option<u64> {
        let b = self.take(8);
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        (!b.is_empty()).then(|| u64::from_le_bytes(w))
    }
}

/// A real header to mutate, described by one input byte: bit 0 the layout,
/// bit 1 fixed-size, bits 2..8 how many items to add.
fn seed_header(desc: u8) -> Vec<u8> {
    let fixed = desc & 2 != 0;
    let items = u32::from(desc >> 2);
    let chain = if desc & 1 != 0 {
        Chain::new_blocked(4, 0.01, (!fixed).then_some(1))
    } else {
        Chain::new(4, 0.01, 1, fixed)
    };
    let Ok(mut chain) = chain else {
        unreachable!("valid arguments");
    };
    for i in 0..items {
        // A fixed-size filter fills up; that is an answer, not a failure.
        let _ = chain.add(&i.to_le_bytes());
    }
    chain.header_bytes()
}

/// The total bit-array bytes a header claims, or `None` if it is too short
/// to say (the store will refuse it anyway).
fn claimed_bytes(header: &[u8]) -> Option<u64> {
    let n = u32::from_le_bytes(header.get(8..12)?.try_into().ok()?) as usize;
    let mut total = 0u64;
    for i in 0..n.min(2048) {
        let at = HEADER_FIXED + HEADER_LINK * i;
        let bytes = u64::from_le_bytes(header.get(at..at + 8)?.try_into().ok()?);
        total = total.saturating_add(bytes);
    }
    Some(total)
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let Some(mode) = input.byte() else {
        return;
    };
    let header = if mode & 1 == 0 {
        let len = usize::from(input.byte().unwrap_or(0)) * 4;
        input.take(len).to_vec()
    } else {
        let mut h = seed_header(input.byte().unwrap_or(0));
        let flips = input.take(h.len());
        for (b, f) in h.iter_mut().zip(flips) {
            *b ^= f;
        }
        h
    };
    if claimed_bytes(&header).is_some_and(|n| n > MAX_FUZZ_BYTES) {
        return;
    }
    let Ok(mut chain) = Chain::from_header(&header) else {
        return;
    };
    assert_eq!(chain.header_bytes(), header, "header does not round-trip");
    let shape: Vec<usize> = chain.links().iter().map(|l| l.bytes().len()).collect();
    while let (Some(iter), Some(len)) = (input.u64(), input.byte()) {
        let chunk = input.take(usize::from(len));
        // Aim most loads inside the filter so that accepted chunks happen.
        let iter = if mode & 2 != 0 { iter % 4096 } else { iter };
        let before = chain.clone();
        if chain.load_chunk(iter, chunk).is_err() {
            assert!(chain == before, "a refused chunk changed the filter");
        }
        let now: Vec<usize> = chain.links().iter().map(|l| l.bytes().len()).collect();
        assert_eq!(now, shape, "a chunk changed the filter's shape");
    }

    let layout = chain.layout();
    assert!(matches!(layout, Layout::Classic | Layout::Blocked));
    let _ = chain.exists(b"probe");
    let _ = chain.exists(b"");
    let _ = chain.debug_lines();
    let _ = (chain.card(), chain.capacity(), chain.size_bytes());

    // Dump the loaded filter and load it into a fresh one.
    let mut copy = match Chain::from_header(&chain.header_bytes()) {
        Ok(copy) => copy,
        Err(e) => panic!("own header refused: {e}"),
    };
    let mut iter = 1;
    while let Some((next, chunk)) = chain.chunk_after(iter) {
        assert!(next > iter && !chunk.is_empty());
        if let Err(e) = copy.load_chunk(next, chunk) {
            panic!("own chunk at {iter} refused: {e}");
        }
        iter = next;
    }
    assert!(copy == chain, "dump round trip differs");
    assert_eq!(copy.layout(), layout);

    // Adding may grow or refuse, never panic; what was added is then found.
    // Filling the newest link means a new link `expansion` times its
    // capacity: skipped when that could be a big allocation, for speed alone.
    let grows_big = chain.links().last().is_some_and(|l| {
        l.size().saturating_add(3) >= l.capacity()
            && l.capacity()
                .saturating_mul(u64::from(chain.expansion().unwrap_or(0)))
                > 1 << 16
    });
    if grows_big {
        return;
    }
    for item in [&b"x"[..], b"y", b"zz"] {
        if chain.add(item).is_ok() {
            assert!(chain.exists(item), "false negative after add");
        }
    }
});
