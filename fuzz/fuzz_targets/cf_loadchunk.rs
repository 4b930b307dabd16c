//! Fuzz what `CF.LOADCHUNK` does with client bytes: a 38-byte dump header,
//! then chunks at client-chosen iterators.
//!
//! Input: a first byte choosing how the header is made (raw input bytes, or
//! the real header of a small filter with input bytes XORed over it), then
//! any number of `(iter: u64, len: u8, chunk)` loads.
//!
//! Properties: nothing panics; an accepted header serialises back to the
//! same bytes; a refused chunk changes nothing; afterwards `exists`, `count`,
//! `add`, `delete` and the SCANDUMP walk work, and dumping the loaded filter
//! into a fresh one gives an equal filter.

#![no_main]

use keel_store::cuckoo::{CuckooFilter, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

/// Headers claiming more slot bytes than this are skipped: the store admits
/// up to 4 GiB, correct but slow to allocate and over libFuzzer's limit.
const MAX_FUZZ_BYTES: u64 = 16 << 20;

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

/// Slot bytes a header claims (sub-filter i has base * expansion^i buckets).
fn claimed_bytes(h: &[u8]) -> Option<u64> {
    let u64_at = |at: usize| Some(u64::from_le_bytes(h.get(at..at + 8)?.try_into().ok()?));
    let base = u64_at(8)?;
    let n = u64_at(24)?;
    let bs = u64::from(u16::from_le_bytes(h.get(32..34)?.try_into().ok()?));
    let exp = u64::from(u16::from_le_bytes(h.get(36..38)?.try_into().ok()?)).max(1);
    let (mut total, mut buckets) = (0u64, base);
    for _ in 0..n.min(70_000) {
        total = total.saturating_add(buckets.saturating_mul(bs));
        buckets = buckets.saturating_mul(exp);
    }
    Some(total)
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let Some(mode) = input.byte() else {
        return;
    };
    let header = if mode & 1 == 0 {
        input.take(HEADER_LEN).to_vec()
    } else {
        let desc = input.byte().unwrap_or(0);
        let Some(mut cf) = CuckooFilter::new(16, u16::from(desc % 4 + 1), 5, u16::from(desc >> 6))
        else {
            unreachable!("valid arguments");
        };
        for i in 0..u32::from(desc) {
            cf.add(&i.to_le_bytes());
        }
        let mut h = cf.header_bytes().to_vec();
        for (b, f) in h.iter_mut().zip(input.take(HEADER_LEN)) {
            *b ^= f;
        }
        h
    };
    if claimed_bytes(&header).is_some_and(|n| n > MAX_FUZZ_BYTES) {
        return;
    }
    let Ok(mut cf) = CuckooFilter::from_header(&header) else {
        return;
    };
    assert_eq!(cf.header_bytes().as_slice(), header.as_slice(), "header does not round-trip");
    while let (Some(iter), Some(len)) = (input.u64(), input.byte()) {
        let chunk = input.take(usize::from(len));
        let iter = if mode & 2 != 0 { (iter % 4096) as i64 } else { iter as i64 };
        let before = cf.clone();
        if cf.load_chunk(iter, chunk).is_err() {
            assert!(cf == before, "a refused chunk changed the filter");
        }
    }
    let _ = (cf.exists(b"probe"), cf.count(b""), cf.size_bytes());
    let mut copy = CuckooFilter::from_header(&cf.header_bytes()).expect("own header");
    let mut iter = 1;
    while let Some((next, chunk)) = cf.chunk_at(iter, 1 << 10) {
        assert!(next > iter);
        copy.load_chunk(next, chunk).expect("own chunk");
        iter = next;
    }
    assert!(copy == cf, "dump round trip differs");
    // Growth of a loaded filter can be large; only touch small ones.
    if cf.slot_bytes() < 1 << 16 {
        for item in [&b"x"[..], b"y"] {
            if cf.add(item) == keel_store::cuckoo::Insert::Inserted {
                assert!(cf.exists(item), "false negative after add");
            }
        }
        let _ = cf.delete(b"x");
    }
});
