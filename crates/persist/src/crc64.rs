//! The CRC-64 that Redis appends to RDB files and DUMP payloads.
//!
//! Jones polynomial (0xad93d23594c935a9), bit-reflected input and output, initial value 0 and no
//! final xor. Computed eight bytes at a time ("slicing by 8") from tables built at compile time;
//! the bytes left over go one at a time.

/// The Jones polynomial, bit-reversed for the reflected (LSB-first) algorithm.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

const TABLE: [u64; 256] = build_table();

/// `TABLES[k][b]`: the CRC of byte `b` followed by `k` zero bytes.
const TABLES: [[u64; 256]; 8] = build_tables();

const fn build_tables() -> [[u64; 256]; 8] {
    let mut t = [[0u64; 256]; 8];
    t[0] = build_table();
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

const fn build_table() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u64;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ POLY_REFLECTED
            } else {
                c >> 1
            };
            bit += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

/// Continues a CRC-64 over `data` from a previous value (`0` to start).
pub fn update(mut crc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let x = crc ^ u64::from_le_bytes(w);
        let b = |i: u32| ((x >> (8 * i)) & 0xff) as usize;
        crc = TABLES[7][b(0)]
            ^ TABLES[6][b(1)]
            ^ TABLES[5][b(2)]
            ^ TABLES[4][b(3)]
            ^ TABLES[3][b(4)]
            ^ TABLES[2][b(5)]
            ^ TABLES[1][b(6)]
            ^ TABLES[0][b(7)];
    }
    bytewise(crc, chunks.remainder())
}

fn bytewise(mut crc: u64, data: &[u8]) -> u64 {
    for &b in data {
        crc = TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// The CRC-64 of `data`.
pub fn crc64(data: &[u8]) -> u64 {
    update(0, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value() {
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    proptest::proptest! {
        /// Eight bytes at a time gives what one byte at a time gives, for any
        /// split of the input.
        #[test]
        fn sliced_equals_bytewise(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), cut in 0usize..300, seed in proptest::prelude::any::<u64>()) {
            let cut = cut.min(data.len());
            proptest::prop_assert_eq!(update(seed, &data), bytewise(seed, &data));
            proptest::prop_assert_eq!(update(update(seed, &data[..cut]), &data[cut..]), bytewise(seed, &data));
        }
    }

    #[test]
    fn empty_is_zero_and_updates_chain() {
        assert_eq!(crc64(b""), 0);
        let whole = crc64(b"hello world");
        assert_eq!(update(crc64(b"hello "), b"world"), whole);
        assert_ne!(whole, crc64(b"hello worle"));
    }
}
