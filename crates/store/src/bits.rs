//! Bit operations on byte strings (SETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD), as
//! pure functions over `&[u8]` / `Vec<u8>`.
