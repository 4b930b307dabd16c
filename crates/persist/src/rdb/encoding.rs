//! The low-level encoders every RDB writer shares: lengths (§2 of `crates/persist/RDB.md`),
//! strings as Redis's string writer picks their form (§3, §9), and listpacks (§5). The writer
//! and the per-type encoders (streams, sketches, bitmap indexes, function libraries) build on
//! these; they depend on nothing else in `rdb`.

use keel_store::num::parse_i64;

use crate::lzf;

/// A length: 6 bits, 14 bits, 32 or 64 bits big-endian.
pub(crate) fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if let Ok(n32) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n32.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// A string as Redis's `rdbSaveRawString` writes it: a canonical integer that fits 32 bits as
/// an integer encoding, else LZF when asked for, longer than 20 bytes and at least 4 bytes
/// shorter compressed, else length and bytes.
pub(crate) fn put_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if s.len() <= 11 {
        if let Some(i) = parse_i64(s) {
            if let Ok(b) = i8::try_from(i) {
                out.push(0xc0);
                out.push(b as u8);
                return;
            }
            if let Ok(h) = i16::try_from(i) {
                out.push(0xc1);
                out.extend_from_slice(&h.to_le_bytes());
                return;
            }
            if let Ok(w) = i32::try_from(i) {
                out.push(0xc2);
                out.extend_from_slice(&w.to_le_bytes());
                return;
            }
        }
    }
    if compress && s.len() > 20 {
        // Redis gives the compressor four bytes less room than the string takes.
        if let Some(c) = lzf::compress_within(s, s.len() - 4) {
            out.push(0xc3);
            put_len(out, c.len() as u64);
            put_len(out, s.len() as u64);
            out.extend_from_slice(&c);
            return;
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A listpack with no entries: the 6-byte header and the end byte.
pub(crate) const LISTPACK_EMPTY: usize = 7;

/// Bytes of the back-length of an entry of `l` bytes.
fn backlen_bytes(l: u64) -> usize {
    match l {
        0..=127 => 1,
        128..=16_382 => 2,
        16_383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// A Redis listpack being built.
pub(crate) struct Listpack {
    body: Vec<u8>,
    count: usize,
}

impl Listpack {
    pub(crate) fn new() -> Self {
        Listpack {
            body: Vec::new(),
            count: 0,
        }
    }

    /// Bytes the finished listpack would take.
    fn bytes(&self) -> usize {
        LISTPACK_EMPTY + self.body.len()
    }

    /// Bytes `e` takes as an entry, back-length included.
    pub(crate) fn entry_len(e: &[u8]) -> usize {
        let l = match parse_i64(e) {
            Some(i) if (0..=127).contains(&i) => 1,
            Some(i) if (-4096..=4095).contains(&i) => 2,
            Some(i) if i16::try_from(i).is_ok() => 3,
            Some(i) if (-(1 << 23)..(1 << 23)).contains(&i) => 4,
            Some(i) if i32::try_from(i).is_ok() => 5,
            Some(_) => 9,
            None if e.len() < 64 => 1 + e.len(),
            None if e.len() < 4096 => 2 + e.len(),
            None => 5 + e.len(),
        };
        l + backlen_bytes(l as u64)
    }

    /// Appends an element: a canonical integer in the narrowest integer encoding, anything
    /// else as a string, each followed by its back-length.
    pub(crate) fn push(&mut self, e: &[u8]) {
        let start = self.body.len();
        let b = &mut self.body;
        match parse_i64(e) {
            Some(i) if (0..=127).contains(&i) => b.push(i as u8),
            Some(i) if (-4096..=4095).contains(&i) => {
                let u = (i as u16) & 0x1fff;
                b.push(0xc0 | (u >> 8) as u8);
                b.push(u as u8);
            }
            Some(i) if i16::try_from(i).is_ok() => {
                b.push(0xf1);
                b.extend_from_slice(&(i as i16).to_le_bytes());
            }
            Some(i) if (-(1 << 23)..(1 << 23)).contains(&i) => {
                b.push(0xf2);
                b.extend_from_slice(&(i as i32).to_le_bytes()[..3]);
            }
            Some(i) if i32::try_from(i).is_ok() => {
                b.push(0xf3);
                b.extend_from_slice(&(i as i32).to_le_bytes());
            }
            Some(i) => {
                b.push(0xf4);
                b.extend_from_slice(&i.to_le_bytes());
            }
            None if e.len() < 64 => {
                b.push(0x80 | e.len() as u8);
                b.extend_from_slice(e);
            }
            None if e.len() < 4096 => {
                b.push(0xe0 | (e.len() >> 8) as u8);
                b.push(e.len() as u8);
                b.extend_from_slice(e);
            }
            None => {
                b.push(0xf0);
                b.extend_from_slice(&(e.len() as u32).to_le_bytes());
                b.extend_from_slice(e);
            }
        }
        let l = (b.len() - start) as u64;
        // The back-length: 7 bits a byte, most significant first, every byte but the first
        // with its high bit set, so it can be read from its end.
        let n = backlen_bytes(l);
        for k in (0..n).rev() {
            let part = ((l >> (7 * k)) & 0x7f) as u8;
            b.push(if k == n - 1 { part } else { part | 0x80 });
        }
        self.count += 1;
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        let total = self.bytes();
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(self.count.min(65535) as u16).to_le_bytes());
        out.extend_from_slice(&self.body);
        out.push(0xff);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_lengths_and_integer_entries() {
        let mut lp = Listpack::new();
        lp.push(b"5");
        lp.push(b"-3");
        lp.push(b"300");
        lp.push(b"5000");
        lp.push(b"a");
        lp.push(&[b'x'; 200]);
        let b = lp.finish();
        assert_eq!(&b[6..8], &[0x05, 0x01]);
        assert_eq!(&b[8..11], &[0xdf, 0xfd, 0x02]);
        assert_eq!(&b[11..14], &[0xc1, 0x2c, 0x02]);
        assert_eq!(&b[14..18], &[0xf1, 0x88, 0x13, 0x03]);
        assert_eq!(&b[18..21], &[0x81, b'a', 0x02]);
        // 2-byte header + 200 bytes = 202: back-length 0x01, 0xca.
        assert_eq!(&b[b.len() - 3..], &[0x01, 0xca, 0xff]);
    }

    #[test]
    fn entry_sizes_match_what_push_writes() {
        let samples: Vec<Vec<u8>> = vec![
            b"5".to_vec(),
            b"-3".to_vec(),
            b"300".to_vec(),
            b"5000".to_vec(),
            b"-8000000".to_vec(),
            b"2000000000".to_vec(),
            b"-9223372036854775808".to_vec(),
            b"007".to_vec(),
            vec![b'x'; 63],
            vec![b'x'; 64],
            vec![b'x'; 4095],
            vec![b'x'; 4096],
            vec![b'x'; 20_000],
        ];
        for e in samples {
            let mut lp = Listpack::new();
            lp.push(&e);
            assert_eq!(
                lp.finish().len(),
                LISTPACK_EMPTY + Listpack::entry_len(&e),
                "{}",
                e.len()
            );
        }
    }

    #[test]
    fn strings_pick_integer_lzf_or_raw() {
        let enc = |s: &[u8], c: bool| {
            let mut o = Vec::new();
            put_string(&mut o, s, c);
            o
        };
        assert_eq!(enc(b"-5", true), vec![0xc0, 0xfb]);
        assert_eq!(enc(b"12345", true), vec![0xc1, 0x39, 0x30]);
        assert_eq!(enc(b"2147483647", true)[0], 0xc2);
        assert_eq!(enc(b"2147483648", true)[0], 10);
        assert_eq!(enc(b"007", true), b"\x03007".to_vec());
        let long = [b'a'; 100];
        assert_eq!(enc(&long, true)[0], 0xc3);
        assert_eq!(enc(&long, false)[..2], [0x40, 100]);
    }
}
