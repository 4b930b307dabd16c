//! LZF, the compression Redis applies to long strings in RDB files.
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
const HASH_BITS: u32 = 14;

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

fn hash3(b: &[u8]) -> usize {
    let v = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

fn flush_literals(out: &mut Vec<u8>, lit: &[u8]) {
    for chunk in lit.chunks(MAX_LITERAL) {
        out.push((chunk.len() - 1) as u8);
        out.extend_from_slice(chunk);
    }
}

/// Compresses `input` into an LZF stream that [`decompress`] restores. Greedy, with a
/// hash table of three-byte prefixes; the output may be longer than the input for data that does
/// not repeat (callers then store the data uncompressed, as Redis does).
pub fn compress(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len() / 2 + 16);
    let mut table = vec![usize::MAX; 1 << HASH_BITS];
    let mut lit_start = 0;
    let mut i = 0;
    while i + 3 <= input.len() {
        let h = hash3(&input[i..]);
        let cand = table[h];
        table[h] = i;
        if cand != usize::MAX && i - cand <= MAX_OFFSET && input[cand..cand + 3] == input[i..i + 3]
        {
            let max = MAX_MATCH.min(input.len() - i);
            let mut len = 3;
            while len < max && input[cand + len] == input[i + len] {
                len += 1;
            }
            flush_literals(&mut out, &input[lit_start..i]);
            let back = i - cand - 1;
            let l = len - 2;
            if l < 7 {
                out.push(((l << 5) | (back >> 8)) as u8);
            } else {
                out.push(((7 << 5) | (back >> 8)) as u8);
                out.push((l - 7) as u8);
            }
            out.push((back & 0xff) as u8);
            i += len;
            lit_start = i;
        } else {
            i += 1;
        }
    }
    flush_literals(&mut out, &input[lit_start..]);
    out
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
