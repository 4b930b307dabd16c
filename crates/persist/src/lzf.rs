//! LZF, the compression Redis applies to long strings in RDB files: a decompressor, and a
//! compressor making the same choices as the liblzf that Redis bundles.
//!
//! A stream is a sequence of items, each opened by a control byte `c`:
//! * `c < 32`: a literal run; the next `c + 1` bytes are copied to the output.
//! * otherwise a back-reference: `len = c >> 5` (if 7, add the next byte), then the offset is
//!   `((c & 0x1f) << 8 | next byte) + 1` bytes back from the end of the output, and `len + 2`
//!   bytes are copied from there (byte by byte, so a copy may overlap what it writes).

use thiserror::Error;

/// Why a compressed stream could not be decompressed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LzfError {
    #[error("LZF input ends inside an item at input offset {0}")]
    Truncated(usize),
    #[error("LZF back-reference before the start of the output at input offset {0}")]
    BadReference(usize),
    #[error("LZF output would exceed its declared length at input offset {0}")]
    Overflow(usize),
    #[error("LZF output is {got} bytes, {want} were declared")]
    LengthMismatch { got: usize, want: usize },
}

const MAX_LITERAL: usize = 32;
const MAX_OFFSET: usize = 1 << 13;
const MAX_MATCH: usize = 7 + 255 + 2;

/// Decompresses `input` into exactly `out_len` bytes. Never writes past `out_len` and never reads
/// past `input`; anything else is an error.
pub fn decompress(input: &[u8], out_len: usize) -> Result<Vec<u8>, LzfError> {
    // A back-reference of three input bytes yields at most MAX_MATCH bytes: reserve no more than
    // the input can possibly produce.
    let mut out = Vec::with_capacity(out_len.min(input.len().saturating_mul(MAX_MATCH / 3 + 1)));
    let mut i = 0;
    while i < input.len() {
        let at = i;
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let lit = input.get(i..i + run).ok_or(LzfError::Truncated(at))?;
            if out.len() + run > out_len {
                return Err(LzfError::Overflow(at));
            }
            out.extend_from_slice(lit);
            i += run;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(i).ok_or(LzfError::Truncated(at))?);
                i += 1;
            }
            let low = usize::from(*input.get(i).ok_or(LzfError::Truncated(at))?);
            i += 1;
            let back = (((ctrl & 0x1f) << 8) | low) + 1;
            let len = len + 2;
            let start = out
                .len()
                .checked_sub(back)
                .ok_or(LzfError::BadReference(at))?;
            if out.len() + len > out_len {
                return Err(LzfError::Overflow(at));
            }
            for k in start..start + len {
                // `k` is below out.len(): start < out.len() and each step pushes one byte.
                let b = out.get(k).copied().ok_or(LzfError::BadReference(at))?;
                out.push(b);
            }
        }
    }
    if out.len() != out_len {
        return Err(LzfError::LengthMismatch {
            got: out.len(),
            want: out_len,
        });
    }
    Ok(out)
}

/// Compresses `input` into an LZF stream that [`decompress`] restores, making the same choices
/// as the liblzf compressor Redis uses (a 65,536-slot table of the latest position of each
/// three-byte prefix's hash, no match against the first byte, the fast re-seeding after a
/// match), so a compressed string comes out as the bytes Redis writes. The output may be longer
/// than the input for data that does not repeat (callers then store the data uncompressed, as
/// Redis does).
pub fn compress(input: &[u8]) -> Vec<u8> {
    compress_within(input, usize::MAX).unwrap_or_default()
}

const HASH_SLOTS: usize = 1 << 16;
const NO_SLOT: usize = usize::MAX;

fn slot_of(h: u32) -> usize {
    ((h >> 8).wrapping_sub(h.wrapping_mul(5)) as usize) & (HASH_SLOTS - 1)
}

/// The compressor's hash table, kept per thread: clearing 64K slots for every string (a
/// snapshot compresses millions) cost more than compressing them. A slot holds the call's
/// generation beside the position, so a slot from an earlier call reads as empty.
struct Slots {
    gen: u32,
    slots: Vec<u64>,
}

impl Slots {
    fn get(&self, slot: usize) -> usize {
        match self.slots.get(slot) {
            Some(&v) if (v >> 32) as u32 == self.gen => (v & 0xffff_ffff) as usize,
            _ => NO_SLOT,
        }
    }

    fn set(&mut self, slot: usize, pos: usize) {
        if let Some(v) = self.slots.get_mut(slot) {
            *v = (u64::from(self.gen) << 32) | pos as u64;
        }
    }
}

thread_local! {
    static SLOTS: std::cell::RefCell<Slots> = std::cell::RefCell::new(Slots {
        gen: 0,
        slots: vec![0; HASH_SLOTS],
    });
}

/// [`compress`] into at most `out_len` bytes: `None` when liblzf, given that much room, would
/// give up (its checks are a little conservative near the end, and Redis stores the string
/// uncompressed then), or for empty input.
pub fn compress_within(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    if input.len() > u32::MAX as usize {
        // Positions are kept in 32 bits; RDB strings are far smaller.
        return None;
    }
    SLOTS.with(|t| {
        let mut t = t.borrow_mut();
        t.gen = t.gen.wrapping_add(1);
        if t.gen == 0 {
            t.slots.iter_mut().for_each(|v| *v = 0);
            t.gen = 1;
        }
        compress_with(input, out_len, &mut t)
    })
}

fn compress_with(input: &[u8], out_len: usize, table: &mut Slots) -> Option<Vec<u8>> {
    let n = input.len();
    if n == 0 || out_len == 0 {
        return None;
    }
    let at = |i: usize| u32::from(input.get(i).copied().unwrap_or(0));
    let mut out = Vec::with_capacity(n.min(out_len).saturating_add(16));
    // Every literal run starts with a header byte filled in when the run ends.
    out.push(0u8);
    let mut lit = 0usize;
    let mut ip = 0usize;
    let mut h = (at(0) << 8) | at(1);
    while ip + 2 < n {
        h = (h << 8) | at(ip + 2);
        let slot = slot_of(h);
        let r = table.get(slot);
        table.set(slot, ip);
        let found = r != NO_SLOT
            && r < ip
            && ip - r - 1 < MAX_OFFSET
            && r > 0
            && input[r + 2] == input[ip + 2]
            && input[r] == input[ip]
            && input[r + 1] == input[ip + 1];
        if !found {
            if out.len() >= out_len {
                return None;
            }
            lit += 1;
            out.push(input[ip]);
            ip += 1;
            if lit == MAX_LITERAL {
                let head = out.len() - lit - 1;
                out[head] = (lit - 1) as u8;
                lit = 0;
                out.push(0);
            }
            continue;
        }
        let off = ip - r - 1;
        let maxlen = (n - ip - 2).min(MAX_MATCH);
        let op = out.len();
        if op + 4 >= out_len && op - usize::from(lit == 0) + 4 >= out_len {
            return None;
        }
        // Close the literal run (dropping its header if it is empty).
        let head = op - lit - 1;
        out[head] = (lit as u8).wrapping_sub(1);
        if lit == 0 {
            out.pop();
        }
        // Extend the match as liblzf does: 16 unchecked steps when there is room, then up to
        // the limit.
        let mut len = 2usize;
        let mut ended = false;
        if maxlen > 16 {
            for _ in 0..16 {
                len += 1;
                if input[r + len] != input[ip + len] {
                    ended = true;
                    break;
                }
            }
        }
        if !ended {
            loop {
                len += 1;
                if !(len < maxlen && input[r + len] == input[ip + len]) {
                    break;
                }
            }
        }
        len -= 2;
        ip += 1;
        if len < 7 {
            out.push(((off >> 8) + (len << 5)) as u8);
        } else {
            out.push(((off >> 8) + (7 << 5)) as u8);
            out.push((len - 7) as u8);
        }
        out.push(off as u8);
        lit = 0;
        out.push(0);
        ip += len + 1;
        if ip + 2 >= n {
            break;
        }
        // Re-seed the table with the two positions before the new one.
        ip -= 2;
        h = (at(ip) << 8) | at(ip + 1);
        for _ in 0..2 {
            h = (h << 8) | at(ip + 2);
            table.set(slot_of(h), ip);
            ip += 1;
        }
    }
    if out.len() + 3 > out_len {
        return None;
    }
    while ip < n {
        lit += 1;
        out.push(input[ip]);
        ip += 1;
        if lit == MAX_LITERAL {
            let head = out.len() - lit - 1;
            out[head] = (lit - 1) as u8;
            lit = 0;
            out.push(0);
        }
    }
    let head = out.len() - lit - 1;
    out[head] = (lit as u8).wrapping_sub(1);
    if lit == 0 {
        out.pop();
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trips_repetitive_data_smaller() {
        let data = b"abcabcabcabcabcabcabcabcabcabcabcabc-hello-hello-hello".repeat(40);
        let c = compress(&data);
        assert!(c.len() < data.len() / 4, "{} vs {}", c.len(), data.len());
        assert_eq!(decompress(&c, data.len()).expect("valid"), data);
    }

    #[test]
    fn malformed_inputs_are_errors() {
        // Back-reference with nothing written yet.
        assert_eq!(decompress(&[0x20, 0x00], 3), Err(LzfError::BadReference(0)));
        // Literal run longer than the input.
        assert_eq!(decompress(&[0x05, b'a'], 6), Err(LzfError::Truncated(0)));
        // Output longer than declared.
        assert_eq!(
            decompress(&[0x02, b'a', b'b', b'c'], 2),
            Err(LzfError::Overflow(0))
        );
        // Output shorter than declared.
        assert_eq!(
            decompress(&[0x00, b'a'], 2),
            Err(LzfError::LengthMismatch { got: 1, want: 2 })
        );
        // Overlapping copy: one literal then 8 copies of it.
        assert_eq!(
            decompress(&[0x00, b'z', 0xc0, 0x00], 9).expect("valid"),
            b"zzzzzzzzz"
        );
    }

    proptest! {
        #[test]
        fn decompress_inverts_compress(data in proptest::collection::vec(0u8..4, 0..3000)) {
            let c = compress(&data);
            prop_assert_eq!(decompress(&c, data.len()).expect("round trip"), data);
        }

        #[test]
        fn decompress_inverts_compress_any_bytes(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            let c = compress(&data);
            prop_assert_eq!(decompress(&c, data.len()).expect("round trip"), data);
        }

        #[test]
        fn malformed_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200), n in 0usize..5000) {
            let _ = decompress(&data, n);
        }
    }
}
