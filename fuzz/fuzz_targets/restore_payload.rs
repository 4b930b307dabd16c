//! Fuzz what RESTORE does with client bytes: check a DUMP payload, read its value and build
//! the store value; and what FUNCTION RESTORE reads from the same bytes.
//!
//! Input: a first byte choosing whether the rest is a whole payload (footer included) or a
//! body to which a valid footer (RDB version 10, correct CRC-64) is added, so the fuzzer
//! spends its time past the checksum. Properties: nothing panics; a payload that restores
//! dumps back to a payload that restores to an equal value; the libraries of a function payload
//! that reads encode back to a payload that reads to the same libraries.

#![no_main]

use keel_persist::crc64::crc64;
use keel_persist::rdb::{
    decode_function_dump, dump_payload, encode_function_dump, parse_payload, to_store_value,
};
use keel_store::CompactLimits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut payload = rest.to_vec();
    if mode & 1 == 0 {
        payload.extend_from_slice(&10u16.to_le_bytes());
        let crc = crc64(&payload);
        payload.extend_from_slice(&crc.to_le_bytes());
    }
    if let Ok(libs) = decode_function_dump(&payload) {
        assert_eq!(decode_function_dump(&encode_function_dump(&libs)), Ok(libs));
    }
    let limits = CompactLimits::default();
    let Ok(rdb) = parse_payload(&payload) else { return };
    let Ok(value) = to_store_value(rdb, &limits) else { return };
    let again = dump_payload(&value);
    let back = parse_payload(&again).expect("Keel's own payload parses");
    let back = to_store_value(back, &limits).expect("Keel's own payload converts");
    assert_eq!(back, value);
});
