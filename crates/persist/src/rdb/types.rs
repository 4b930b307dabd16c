//! Format identifiers shared by the reading and the writing side: the RDB version written
//! (and carried by DUMP payloads), module type ids (a type's nine-character name and encoding
//! version packed into 64 bits, §10 of `crates/persist/RDB.md`), and the module types that have
//! no module of their own here (RedisBloom's Bloom filter, redis-roaring's bitmaps).

/// The RDB version written, and the one DUMP payloads carry.
pub const RDB_VERSION: u16 = 10;

/// RedisBloom's module type for Bloom filters and the encoding version RedisBloom 2.4 writes.
pub const BLOOM_TYPE_NAME: &[u8; 9] = b"MBbloom--";
pub const BLOOM_ENCODING_VERSION: u64 = 4;

/// redis-roaring's module types for 32-bit and 64-bit bitmaps and the encoding version both
/// write.
pub const ROARING_TYPE_NAME: &[u8; 9] = b"reroaring";
pub const ROARING64_TYPE_NAME: &[u8; 9] = b"roaring64";
pub const ROARING_ENCODING_VERSION: u64 = 1;

/// The characters a module type name is made of, in the order their 6-bit codes count.
const MODULE_CHARSET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The 64-bit id of a module type: its nine-character name in 6-bit codes, then 10 bits of
/// encoding version. `None` if a character is outside the charset.
pub fn module_id(name: &[u8; 9], encver: u64) -> Option<u64> {
    let mut id = 0u64;
    for &c in name {
        let code = MODULE_CHARSET.iter().position(|&x| x == c)?;
        id = (id << 6) | code as u64;
    }
    Some((id << 10) | (encver & 0x3ff))
}

/// The type name and encoding version a module id stands for.
pub fn module_name(id: u64) -> (String, u64) {
    let name = (0..9)
        .map(|i| {
            let code = (id >> (64 - 6 * (i + 1))) & 63;
            char::from(MODULE_CHARSET[code as usize])
        })
        .collect();
    (name, id & 0x3ff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_ids_round_trip() {
        let id = module_id(BLOOM_TYPE_NAME, 4).expect("charset");
        assert_eq!(id, 0x3016_e5a2_89be_f804);
        assert_eq!(module_name(id), ("MBbloom--".to_string(), 4));
        assert_eq!(module_name(0x3016_e5a2_8982_1404).0, "MBbloomCF");
    }
}
