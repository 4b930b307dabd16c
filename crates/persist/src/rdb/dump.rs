//! DUMP payloads: one value in RDB encoding, then the RDB version and a CRC-64, as Redis's
//! DUMP returns and RESTORE takes them.

use keel_store::value::CompactLimits;
use keel_store::Value;
use thiserror::Error;

use super::write::{put_value, type_byte, RDB_VERSION};
use super::{RdbError, RdbValue};
use crate::crc64;

/// Why a payload cannot be restored. The messages are Redis's RESTORE error texts.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DumpError {
    /// Too short, written by a newer RDB version, or its checksum does not match.
    #[error("DUMP payload version or checksum are wrong")]
    VersionOrChecksum,
    /// The checksum matched but the value does not parse.
    #[error("Bad data format")]
    BadFormat(RdbError),
}

/// The payload DUMP returns for `v`, with strings LZF-compressed where that helps (Redis's
/// default `rdbcompression yes`) and lists split at Redis's default node size.
pub fn dump_payload(v: &Value) -> Vec<u8> {
    dump_payload_with(v, true, CompactLimits::default().list_size)
}

/// [`dump_payload`] with the compression switch and the list node size
/// (`list-max-listpack-size`) given.
pub fn dump_payload_with(v: &Value, compress: bool, list_size: i64) -> Vec<u8> {
    let mut out = vec![type_byte(v)];
    put_value(&mut out, v, compress, list_size);
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks a payload's version (at most the one Keel writes, as Redis 7.0 refuses newer ones)
/// and checksum, then reads its value.
pub fn parse_payload(p: &[u8]) -> Result<RdbValue, DumpError> {
    let len = p.len();
    if len < 10 {
        return Err(DumpError::VersionOrChecksum);
    }
    let (body, footer) = p.split_at(len - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return Err(DumpError::VersionOrChecksum);
    }
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if crc64::crc64(&p[..len - 8]) != u64::from_le_bytes(crc) {
        return Err(DumpError::VersionOrChecksum);
    }
    // Redis reads the value from the whole payload, so a value that runs into the footer is
    // read as Redis reads it.
    let _ = body;
    super::read::read_type_and_value(p).map_err(DumpError::BadFormat)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_round_trips_and_damage_is_caught() {
        let p = dump_payload(&Value::str(b"hello"));
        assert_eq!(&p[..7], b"\x00\x05hello");
        assert_eq!(&p[7..9], &[10, 0]);
        assert_eq!(parse_payload(&p), Ok(RdbValue::String(b"hello".to_vec())));
        for i in 0..p.len() {
            let mut bad = p.clone();
            bad[i] ^= 0x20;
            assert_eq!(
                parse_payload(&bad),
                Err(DumpError::VersionOrChecksum),
                "byte {i}"
            );
        }
        assert_eq!(parse_payload(&p[..9]), Err(DumpError::VersionOrChecksum));
        // A newer version with a correct checksum is still refused.
        let mut newer = p[..p.len() - 10].to_vec();
        newer.extend_from_slice(&11u16.to_le_bytes());
        let crc = crc64::crc64(&newer);
        newer.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(parse_payload(&newer), Err(DumpError::VersionOrChecksum));
    }

    #[test]
    fn a_valid_checksum_over_garbage_is_bad_format() {
        let mut p = vec![0x63, 1, 2];
        p.extend_from_slice(&10u16.to_le_bytes());
        let crc = crc64::crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        assert!(matches!(parse_payload(&p), Err(DumpError::BadFormat(_))));
    }
}
