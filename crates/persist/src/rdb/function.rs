//! Function libraries in RDB form: the record Redis 7.0 writes for each library (opcode 245
//! and the library's code as one string), and the FUNCTION DUMP payload, which is those
//! records followed by the footer DUMP payloads carry.
//!
//! Libraries are code only here: nothing in this module compiles or registers them. Reading
//! never allocates from a claimed length beyond the bytes present.

use bytes::Bytes;
use thiserror::Error;

use super::encoding::put_string;
use super::footer::footer_ok;
use super::read::{read_library_at, OP_FUNCTION, OP_FUNCTION2};
use super::types::RDB_VERSION;
use super::RdbErrorKind;
use crate::crc64;

/// Why FUNCTION RESTORE refuses a payload. The messages are Redis 7.0's error texts, without
/// the `ERR ` prefix its replies add.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FunctionDumpError {
    /// Shorter than the footer, written by a newer RDB version, or its checksum does not match.
    #[error("DUMP payload version or checksum are wrong")]
    VersionOrChecksum,
    /// A record that is not a function library.
    #[error("given type is not a function")]
    NotAFunction,
    /// A library record that does not read: `Failed loading library payload`, or for the
    /// release-candidate record `Failed loading library name`, `... engine name`,
    /// `... library description indicator`, `... library description`, `... library blob`.
    #[error("{0}")]
    Library(&'static str),
}

/// Appends one library record as Redis writes it: opcode 245, then the code as an RDB string
/// (LZF-compressed when `compress` and that saves space, like any string Redis saves).
pub(crate) fn put_library(out: &mut Vec<u8>, code: &[u8], compress: bool) {
    out.push(OP_FUNCTION2);
    put_string(out, code, compress);
}

/// The payload FUNCTION DUMP returns for these libraries (in the order given), with strings
/// compressed as under Redis's default `rdbcompression yes`.
pub fn encode_function_dump(libs: &[Bytes]) -> Vec<u8> {
    encode_function_dump_with(libs, true)
}

/// [`encode_function_dump`] with the compression switch (`rdbcompression`) given.
pub fn encode_function_dump_with(libs: &[Bytes], compress: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for code in libs {
        put_library(&mut out, code, compress);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks a FUNCTION RESTORE payload and reads every library's code from it, in payload order.
///
/// Redis creates each library as soon as it has read it, so a library that fails to compile
/// is reported before a damaged record that follows it. To report errors in that order, walk
/// [`function_dump_libraries`] and compile each library as it comes.
pub fn decode_function_dump(payload: &[u8]) -> Result<Vec<Bytes>, FunctionDumpError> {
    function_dump_libraries(payload)?.collect()
}

/// Checks a FUNCTION RESTORE payload's footer (version and checksum), then reads its library
/// records one at a time. The iterator ends after the first error.
pub fn function_dump_libraries(
    payload: &[u8],
) -> Result<FunctionDumpLibraries<'_>, FunctionDumpError> {
    if !footer_ok(payload) {
        return Err(FunctionDumpError::VersionOrChecksum);
    }
    Ok(FunctionDumpLibraries {
        payload,
        pos: 0,
        failed: false,
    })
}

/// The libraries of a checked FUNCTION RESTORE payload; see [`function_dump_libraries`].
#[derive(Debug, Clone)]
pub struct FunctionDumpLibraries<'a> {
    payload: &'a [u8],
    pos: usize,
    failed: bool,
}

impl Iterator for FunctionDumpLibraries<'_> {
    type Item = Result<Bytes, FunctionDumpError>;

    fn next(&mut self) -> Option<Self::Item> {
        // Like Redis, read records while more than the 10-byte footer remains; a record is read
        // from the payload as a whole, so its string may run into the footer.
        if self.failed || self.payload.len().saturating_sub(self.pos) <= 10 {
            return None;
        }
        let op = *self.payload.get(self.pos)?;
        if op != OP_FUNCTION2 && op != OP_FUNCTION {
            self.failed = true;
            return Some(Err(FunctionDumpError::NotAFunction));
        }
        match read_library_at(self.payload, self.pos) {
            Ok((code, next)) => {
                self.pos = next;
                Some(Ok(Bytes::from(code)))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(match e.kind {
                    RdbErrorKind::Library(what) => FunctionDumpError::Library(what),
                    _ => FunctionDumpError::Library("Failed loading library payload"),
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIB_A: &[u8] =
        b"#!lua name=alpha\nredis.register_function('fa', function(keys, args) return args[1] end)";
    const LIB_B: &[u8] = b"#!lua name=b\nreturn 1";

    /// A payload of `body` with a valid footer of version `version`.
    fn sealed(body: &[u8], version: u16) -> Vec<u8> {
        let mut p = body.to_vec();
        p.extend_from_slice(&version.to_le_bytes());
        let crc = crc64::crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        p
    }

    fn libs() -> Vec<Bytes> {
        vec![Bytes::from_static(LIB_A), Bytes::from_static(LIB_B)]
    }

    #[test]
    fn payloads_round_trip_compressed_or_not() {
        for compress in [true, false] {
            let p = encode_function_dump_with(&libs(), compress);
            assert_eq!(p[0], OP_FUNCTION2);
            // The long library compresses; the short one (under 21 bytes) never does.
            assert_eq!(p[1] == 0xc3, compress);
            assert_eq!(decode_function_dump(&p), Ok(libs()));
        }
        assert_eq!(
            encode_function_dump(&libs()),
            encode_function_dump_with(&libs(), true)
        );
        // No libraries: the footer alone, which restores nothing.
        let empty = encode_function_dump(&[]);
        assert_eq!(empty.len(), 10);
        assert_eq!(decode_function_dump(&empty), Ok(vec![]));
    }

    #[test]
    fn footer_damage_is_version_or_checksum() {
        let p = encode_function_dump(&libs());
        for i in 0..p.len() {
            let mut bad = p.clone();
            bad[i] ^= 0x01;
            assert_eq!(
                decode_function_dump(&bad),
                Err(FunctionDumpError::VersionOrChecksum),
                "byte {i}"
            );
        }
        assert_eq!(
            decode_function_dump(b"garbage"),
            Err(FunctionDumpError::VersionOrChecksum)
        );
        assert_eq!(
            decode_function_dump(&sealed(b"", 11)),
            Err(FunctionDumpError::VersionOrChecksum)
        );
        assert_eq!(decode_function_dump(&sealed(b"", 9)), Ok(vec![]));
        assert_eq!(
            FunctionDumpError::VersionOrChecksum.to_string(),
            "DUMP payload version or checksum are wrong"
        );
    }

    #[test]
    fn records_that_do_not_read_give_redis_reasons() {
        let err = |body: &[u8]| decode_function_dump(&sealed(body, 10)).expect_err("refused");
        // A key record where a library belongs.
        assert_eq!(err(b"\x00\x01k\x01v"), FunctionDumpError::NotAFunction);
        assert_eq!(
            FunctionDumpError::NotAFunction.to_string(),
            "given type is not a function"
        );
        // A string longer than the payload, an unknown string encoding, a bad length prefix,
        // LZF that does not decompress.
        for body in [
            &b"\xf5\x40\xff"[..],
            b"\xf5\xc7",
            b"\xf5\x82",
            b"\xf5\xc3\x05\x0a\x01\x02\x03\x04\x05",
        ] {
            assert_eq!(
                err(body),
                FunctionDumpError::Library("Failed loading library payload"),
                "{body:?}"
            );
        }
        // The release-candidate record, failing at each of its fields.
        for (body, what) in [
            (&b"\xf6\x82\x00\x00"[..], "Failed loading library name"),
            (b"\xf6\x01x", "Failed loading engine name"),
            (
                b"\xf6\x01x\x01x\x82",
                "Failed loading library description indicator",
            ),
            (b"\xf6\xc0\x01\x05", "Failed loading library description"),
        ] {
            assert_eq!(err(body), FunctionDumpError::Library(what), "{body:?}");
        }
        // A good library then a key: the library comes out first, then the error.
        let mut body = Vec::new();
        put_library(&mut body, LIB_B, true);
        body.extend_from_slice(b"\x00\x01k\x01v");
        let p = sealed(&body, 10);
        let items: Vec<_> = function_dump_libraries(&p).expect("footer").collect();
        assert_eq!(
            items,
            vec![
                Ok(Bytes::from_static(LIB_B)),
                Err(FunctionDumpError::NotAFunction)
            ]
        );
    }

    #[test]
    fn release_candidate_records_become_code_with_a_header() {
        let body = b"redis.register_function('f', function() return 7 end)";
        let mut rec = vec![OP_FUNCTION, 3];
        rec.extend_from_slice(b"old");
        rec.extend_from_slice(b"\x03LUA");
        // A description, which is dropped.
        rec.extend_from_slice(b"\x01\x04desc");
        rec.push(body.len() as u8);
        rec.extend_from_slice(body);
        let mut want = b"#!LUA name=old\n".to_vec();
        want.extend_from_slice(body);
        assert_eq!(
            decode_function_dump(&sealed(&rec, 10)),
            Ok(vec![Bytes::from(want)])
        );
        // Each part ends at its first NUL, as Redis formats them as C strings; an integer
        // encoding where the description flag belongs is read as its low bits (here 0).
        let rec = b"\xf6\x05nl\x00xx\x06LUA\x00zz\xc0\x07body\x00go";
        assert_eq!(
            decode_function_dump(&sealed(rec, 10)),
            Ok(vec![Bytes::from_static(b"#!LUA name=nl\nbody")])
        );
    }

    #[test]
    fn a_huge_claimed_length_is_refused_without_allocating() {
        // 2^64-1 bytes claimed, and an LZF string claiming 4 GiB uncompressed.
        let mut body = vec![OP_FUNCTION2, 0x81];
        body.extend_from_slice(&u64::MAX.to_be_bytes());
        assert!(decode_function_dump(&sealed(&body, 10)).is_err());
        let body = b"\xf5\xc3\x02\x80\xff\xff\xff\xff\x00a";
        assert!(decode_function_dump(&sealed(body, 10)).is_err());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_sealed_bodies_never_panic(
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            lead in 0u8..3,
        ) {
            let mut b = match lead {
                0 => vec![OP_FUNCTION2],
                1 => vec![OP_FUNCTION],
                _ => vec![],
            };
            b.extend_from_slice(&body);
            let _ = decode_function_dump(&sealed(&b, 10));
        }
    }
}
