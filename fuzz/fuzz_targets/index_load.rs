//! Fuzz the loader of the bitmap index's RDB module value (`keelindex`), which reads what
//! files and RESTORE payloads bring.
//!
//! Input: a first byte choosing how the module data is made: taken raw from the input, or the
//! real module data of a small index (its shape drawn from the next input bytes) with the rest
//! of the input XORed over it, so both early refusals and damage deep inside valid images get
//! explored.
//!
//! Properties: nothing panics; an accepted image is consistent: every search for one of its
//! pairs finds exactly the entities that list that pair, and each entity is found under each
//! of its pairs; its dump payload restores to an equal index; and adding and removing an
//! entity afterwards works.

#![no_main]

use keel_persist::rdb::{dump_payload, index_from_module, parse_payload, RdbValue};
use keel_store::index::{BitmapIndex, Query};
use keel_store::Value;
use libfuzzer_sys::fuzz_target;

/// The module data (after the module id) of a small real index whose shape `desc` draws.
fn seed_module_data(desc: &[u8]) -> Vec<u8> {
    let mut idx = BitmapIndex::new();
    for (i, &d) in desc.iter().take(32).enumerate() {
        let id = format!("e{}", d % 16);
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..1 + d % 3)
            .map(|p| (vec![b'a' + p], vec![b'0' + (d >> (2 + p)) % 3]))
            .collect();
        let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(a, v)| (a.as_slice(), v.as_slice())).collect();
        if d & 0x80 != 0 && i % 2 == 0 {
            idx.remove(id.as_bytes());
        } else {
            let payload = (d & 1 != 0).then(|| vec![d; usize::from(d % 40)]);
            let _ = idx.add(id.as_bytes(), &refs, payload.as_deref());
        }
    }
    match parse_payload(&dump_payload(&Value::Index(Box::new(idx)))) {
        Ok(RdbValue::Module { raw, .. }) => raw,
        other => panic!("an index dumps as a module value, got {other:?}"),
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
        let mut raw = seed_module_data(desc);
        for (b, f) in raw.iter_mut().zip(flips) {
            *b ^= f;
        }
        raw
    };
    let Ok(mut idx) = index_from_module(&raw) else {
        return;
    };

    // Consistency: search by each pair against the entities' own pair lists.
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = idx.pairs().map(|(a, v, _)| (a.to_vec(), v.to_vec())).collect();
    for (a, v) in &pairs {
        let q = Query {
            conditions: vec![(a.as_slice(), v.as_slice())],
            default: None,
            limit: None,
        };
        let found: Vec<Vec<u8>> = idx.search(&q).iter().map(|h| h.id.to_vec()).collect();
        let want: Vec<Vec<u8>> = idx
            .entities()
            .filter(|e| e.pairs().any(|(ea, ev)| ea == a.as_slice() && ev == v.as_slice()))
            .map(|e| e.id().to_vec())
            .collect();
        assert!(!found.is_empty(), "a pair with no entity");
        assert_eq!(found, want, "a pair's bitmap disagrees with the entities");
    }
    for e in idx.entities() {
        assert!(e.pairs().next().is_some(), "an entity with no pairs");
        assert!(idx.get(e.id()).is_some_and(|g| g.slot() == e.slot()));
    }
    let _ = (idx.heap_bytes(), idx.attribute_count(), idx.payload_bytes());

    // Its own dump restores to an equal index.
    let value = Value::Index(Box::new(idx.clone()));
    match parse_payload(&dump_payload(&value)) {
        Ok(RdbValue::Module { raw, .. }) => {
            let back = index_from_module(&raw).expect("Keel's own image loads");
            assert!(back == idx, "dump round trip differs");
        }
        other => panic!("an index dumps as a module value, got {other:?}"),
    }

    // It keeps working.
    let n = idx.len();
    let new = idx.add(b"fuzz-probe", &[(b"attr", b"v")], Some(b"p")).expect("add");
    assert_eq!(idx.len(), n + usize::from(new));
    assert!(idx.remove(b"fuzz-probe"));
});
