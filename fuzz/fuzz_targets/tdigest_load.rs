//! Fuzz the loader of RedisBloom's t-digest module value (`TDIS-TYPE`), which reads what files
//! and RESTORE payloads bring.
//!
//! Input: a first byte choosing how the module data is made: taken raw from the input, or the
//! real module data of a small digest (its values drawn from the next input bytes) with the
//! rest of the input XORed over it.
//!
//! Properties: nothing panics; an accepted digest dumps and loads back equal, its CDF is
//! monotone over a few points, and adding, merging and querying keep working on it.

#![no_main]

use keel_persist::rdb::{dump_payload, parse_payload, tdigest_from_module, RdbValue};
use keel_store::tdigest::TDigest;
use keel_store::Value;
use libfuzzer_sys::fuzz_target;

fn module_data(t: TDigest) -> Vec<u8> {
    match parse_payload(&dump_payload(&Value::TDigest(Box::new(t)))) {
        Ok(RdbValue::Module { raw, .. }) => raw,
        other => panic!("a t-digest dumps as a module value, got {other:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let raw = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let (desc, flips) = rest.split_at(rest.len().min(usize::from(mode >> 2)));
        let mut t = TDigest::new(5).expect("small digest");
        for d in desc {
            let _ = t.add(f64::from(*d) - 100.0, 1);
        }
        let mut raw = module_data(t);
        for (b, f) in raw.iter_mut().zip(flips) {
            *b ^= f;
        }
        raw
    };
    let Ok(mut t) = tdigest_from_module(&raw) else {
        return;
    };
    let back = tdigest_from_module(&module_data(t.clone())).expect("Keel's own image loads");
    assert!(back == t, "dump round trip differs");
    let mut last = 0.0;
    for x in [-1e300, -1.0, 0.0, 1.0, 1e300] {
        let c = t.cdf(x);
        if !c.is_nan() {
            assert!(c >= last, "CDF not monotone");
            last = c;
        }
    }
    let _ = t.quantiles_sorted(&[0.0, 0.25, 0.5, 1.0]);
    let _ = (t.quantile(0.3), t.trimmed_mean(0.1, 0.9));
    let mut other = t.clone();
    let _ = t.merge_from(&mut other);
    let _ = t.add(1.5, 1);
});
