//! Fuzz the Roaring bitmap loaders with untrusted bytes: the serialized bitmap itself (32-bit
//! CRoaring format, 64-bit portable format), the module value a snapshot holds, and a RESTORE
//! payload carrying one.
//!
//! Input: a first byte choosing the target (bit 0..1: 32-bit bytes, 64-bit bytes, a
//! `reroaring` module value, a `roaring64` module value; bit 2: also try the rest as a DUMP
//! payload, sealed with a valid footer). Properties: nothing panics or allocates beyond what
//! the input holds; a bitmap that loads saves back to bytes that load to an equal bitmap; a
//! restored value dumps back to a payload that restores to an equal value.

#![no_main]

use keel_persist::crc64::crc64;
use keel_persist::rdb::{dump_payload, module_id, parse_payload, to_store_value, RdbValue};
use keel_store::roaring::{load32, load64, save32, save64};
use keel_store::CompactLimits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let limits = CompactLimits::default();
    match mode & 3 {
        0 => {
            if let Ok(b) = load32(rest) {
                assert_eq!(load32(&save32(&b)).as_ref(), Ok(&b));
            }
        }
        1 => {
            if let Ok(b) = load64(rest) {
                assert_eq!(load64(&save64(&b)).as_ref(), Ok(&b));
            }
        }
        m => {
            let name = if m == 2 { b"reroaring" } else { b"roaring64" };
            let id = module_id(name, 1).expect("charset");
            let v = RdbValue::Module { id, raw: rest.to_vec() };
            if let Ok(value) = to_store_value(v, &limits) {
                let back = parse_payload(&dump_payload(&value)).expect("own payload parses");
                let back = to_store_value(back, &limits).expect("own payload converts");
                assert_eq!(back, value);
            }
        }
    }
    if mode & 4 != 0 {
        let mut payload = rest.to_vec();
        payload.extend_from_slice(&10u16.to_le_bytes());
        let crc = crc64(&payload);
        payload.extend_from_slice(&crc.to_le_bytes());
        let Ok(rdb) = parse_payload(&payload) else { return };
        let Ok(value) = to_store_value(rdb, &limits) else { return };
        let back = parse_payload(&dump_payload(&value)).expect("own payload parses");
        let back = to_store_value(back, &limits).expect("own payload converts");
        assert_eq!(back, value);
    }
});
