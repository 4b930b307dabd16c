//! The CRC-64 that Redis appends to RDB files and DUMP payloads.
//!
//! Jones polynomial (0xad93d23594c935a9), bit-reflected input and output, initial value 0 and no
//! final xor. Computed one byte at a time from a 256-entry table built at compile time.

/// The Jones polynomial, bit-reversed for the reflected (LSB-first) algorithm.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

const TABLE: [u64; 256] = build_table();

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

    #[test]
    fn empty_is_zero_and_updates_chain() {
        assert_eq!(crc64(b""), 0);
        let whole = crc64(b"hello world");
        assert_eq!(update(crc64(b"hello "), b"world"), whole);
        assert_ne!(whole, crc64(b"hello worle"));
    }
}
