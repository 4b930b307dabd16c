//! Fuzz the loader of RedisBloom's top-k module value (`TopK-TYPE`), which reads what files and
//! RESTORE payloads bring.
//!
//! Input: a first byte choosing how the module data is made: taken raw from the input, or the
//! real module data of a small sketch (its items drawn from the next input bytes) with the rest
//! of the input XORed over it.
//!
//! Properties: nothing panics; an accepted sketch dumps and loads back equal, and adding,
//! counting, querying and listing keep working on it.

#![no_main]

use keel_persist::rdb::{dump_payload, parse_payload, topk_from_module, RdbValue};
use keel_store::topk::TopK;
use keel_store::Value;
use libfuzzer_sys::fuzz_target;

fn module_data(t: TopK) -> Vec<u8> {
    match parse_payload(&dump_payload(&Value::TopK(Box::new(t)))) {
        Ok(RdbValue::Module { raw, .. }) => raw,
        other => panic!("a top-k dumps as a module value, got {other:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let raw = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let (desc, flips) = rest.split_at(rest.len().min(usize::from(mode >> 3)));
        let mut t = TopK::new(3, 8, 3, 0.9).expect("small sketch");
        for d in desc {
            t.add(&[b'a' + d % 8], u32::from(d >> 4));
        }
        let mut raw = module_data(t);
        for (b, f) in raw.iter_mut().zip(flips) {
            *b ^= f;
        }
        raw
    };
    let Ok(mut t) = topk_from_module(&raw) else {
        return;
    };
    let back = topk_from_module(&module_data(t.clone())).expect("Keel's own image loads");
    assert!(back == t, "dump round trip differs");
    for item in [&b"a"[..], b"b", b"", b"zz"] {
        let _ = t.add(item, 3);
        let _ = (t.count(item), t.query(item));
    }
    let _ = (t.list(), t.heap_bytes(), t.reported_bytes());
});
