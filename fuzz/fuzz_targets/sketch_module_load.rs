//! Fuzz the RDB/RESTORE module payloads of RedisBloom's cuckoo filters
//! (`MBbloomCF` v4) and count-min sketches (`CMSk-TYPE` v0): the bytes after
//! the module id, as `keel-persist` reads them.
//!
//! Input: a first byte choosing the type, the rest the module data.
//!
//! Properties: nothing panics; whatever loads answers queries and writes back
//! to a payload that loads into an equal value.

#![no_main]

use keel_persist::rdb::{
    cms_from_module, cuckoo_from_module, dump_payload, parse_payload, to_store_value,
};
use keel_store::Value;
use libfuzzer_sys::fuzz_target;

fn round_trip(v: Value) {
    let payload = dump_payload(&v);
    let parsed = parse_payload(&payload).expect("own payload parses");
    let back = to_store_value(parsed, &Default::default()).expect("own payload loads");
    assert!(back == v, "payload round trip differs");
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, raw)) = data.split_first() else {
        return;
    };
    if which & 1 == 0 {
        if let Ok(cf) = cuckoo_from_module(raw) {
            let _ = (cf.exists(b"a"), cf.count(b"b"), cf.size_bytes());
            round_trip(Value::Cuckoo(Box::new(cf)));
        }
    } else if let Ok(cms) = cms_from_module(raw) {
        let _ = (cms.query(b"a"), cms.count());
        round_trip(Value::Cms(Box::new(cms)));
    }
});
