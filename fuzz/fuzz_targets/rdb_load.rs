//! Fuzz the RDB reader with arbitrary file bytes.
//!
//! Input: a first byte choosing whether a valid `REDIS0010` header is put in
//! front of the rest (so the fuzzer spends its time past the magic), then the
//! file bytes. Properties: nothing panics; an error names an offset inside the
//! file; a file that reads keeps reporting the end once it has ended.

#![no_main]

use keel_persist::rdb::RdbReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut file = Vec::with_capacity(rest.len() + 9);
    if mode & 1 == 0 {
        file.extend_from_slice(b"REDIS0010");
    }
    file.extend_from_slice(rest);
    let mut reader = match RdbReader::new(&file) {
        Ok(r) => r,
        Err(e) => {
            assert!(e.offset <= file.len());
            return;
        }
    };
    loop {
        match reader.next_entry() {
            Ok(Some(_)) => {}
            Ok(None) => {
                assert_eq!(reader.next_entry(), Ok(None));
                break;
            }
            Err(e) => {
                assert!(e.offset <= file.len(), "{e}");
                break;
            }
        }
    }
});
