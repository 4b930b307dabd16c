//! The footer DUMP and FUNCTION DUMP payloads end in (2-byte RDB version, 8-byte CRC-64; §11
//! of `crates/persist/RDB.md`) and the check RESTORE and FUNCTION RESTORE make of it.

use super::types::RDB_VERSION;
use crate::crc64;

/// Whether a payload (DUMP's or FUNCTION DUMP's) ends in a footer Redis 7.0 accepts: at least
/// 10 bytes, an RDB version no newer than the one written, and the CRC-64 of everything before
/// the CRC (a zero CRC is not exempt).
pub(crate) fn footer_ok(p: &[u8]) -> bool {
    let Some(body_len) = p.len().checked_sub(10) else {
        return false;
    };
    let footer = &p[body_len..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    version <= RDB_VERSION && crc64::crc64(&p[..body_len + 2]) == u64::from_le_bytes(crc)
}
