//! DUMP payloads: one value in RDB encoding, then the RDB version and a CRC-64, as Redis's
//! DUMP returns and RESTORE takes them.

use keel_store::value::CompactLimits;
use keel_store::Value;
use thiserror::Error;

use super::footer::footer_ok;
use super::types::RDB_VERSION;
use super::write::{put_value, type_byte};
use super::{RdbError, RdbValue};
use crate::crc64;

/// The highest value type an RDB 10 payload can hold (19: streams, second version).
const MAX_PAYLOAD_TYPE: u8 = 19;

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
    if !footer_ok(p) {
        return Err(DumpError::VersionOrChecksum);
    }
    let body = &p[..p.len() - 10];
    // Types newer than RDB 10 (the listpack set of RDB 11) are unknown to Redis 7.0.
    if body.first().is_some_and(|&t| t > MAX_PAYLOAD_TYPE) {
        return Err(DumpError::BadFormat(super::RdbError {
            offset: 0,
            kind: super::RdbErrorKind::UnknownType(body[0]),
        }));
    }
    // Redis reads the value from the whole payload, so a value that runs into the footer is
    // read as Redis reads it.
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
    fn a_listpack_set_is_not_an_rdb_10_type() {
        // Type 20 (RDB 11's listpack set) holding the listpack ["a"].
        let lp = [20u8, 10, 0, 0, 0, 1, 0, 0x81, b'a', 2, 0xff];
        assert!(matches!(
            parse_payload(&sealed(&lp)),
            Err(DumpError::BadFormat(_))
        ));
    }

    #[test]
    fn a_valid_checksum_over_garbage_is_bad_format() {
        let mut p = vec![0x63, 1, 2];
        p.extend_from_slice(&10u16.to_le_bytes());
        let crc = crc64::crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        assert!(matches!(parse_payload(&p), Err(DumpError::BadFormat(_))));
    }

    /// A payload of `body` with a valid footer.
    fn sealed(body: &[u8]) -> Vec<u8> {
        let mut p = body.to_vec();
        p.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64::crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        p
    }

    fn restores_and_round_trips(p: &[u8]) {
        let limits = CompactLimits::default();
        let Ok(rdb) = parse_payload(p) else { return };
        let Ok(v) = super::super::to_store_value(rdb, &limits) else {
            return;
        };
        let back = parse_payload(&dump_payload(&v)).expect("own payload parses");
        let back = super::super::to_store_value(back, &limits).expect("own payload converts");
        assert_eq!(back, v);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_sealed_bodies_never_panic(
            ty in proptest::prelude::any::<u8>(),
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        ) {
            let mut b = vec![ty % 22];
            b.extend_from_slice(&body);
            restores_and_round_trips(&sealed(&b));
        }

        #[test]
        fn damaged_real_payloads_never_panic(
            kind in 0usize..4,
            at in proptest::prelude::any::<usize>(),
            byte in proptest::prelude::any::<u8>(),
        ) {
            let limits = CompactLimits::default();
            let mut v = keel_store::list::new_value();
            keel_store::list::push(&mut v, keel_store::list::End::Right, &[b"a".as_slice(), b"12", b"xyz"], &limits);
            let values = [
                v,
                keel_store::zset::from_pairs(&[(b"m".to_vec(), 1.5), (b"n".to_vec(), 2.0)], &limits),
                {
                    let mut s = Value::new_set(b"1", 2, &limits);
                    s.set_add(b"1", &limits);
                    s.set_add(b"-70000", &limits);
                    s
                },
                Value::Bloom(Box::new(keel_store::bloom::Chain::new(10, 0.1, 2, false).expect("bloom"))),
            ];
            let p = dump_payload(&values[kind]);
            let mut body = p[..p.len() - 10].to_vec();
            let i = at % body.len();
            body[i] = byte;
            restores_and_round_trips(&sealed(&body));
        }
    }
}
