//! Fuzz HyperLogLog strings (`keel_store::hll`): a client can SET any bytes and
//! then name them in PFADD, PFCOUNT, PFMERGE or PFDEBUG.
//!
//! Input: a first byte choosing the value: the input taken raw, or a real
//! sparse or dense HLL (fed elements the next input bytes draw) with the rest
//! of the input XORed over it, so both header refusals and damage deep inside
//! valid sparse codes get explored.
//!
//! Properties: nothing panics; the full check, the count, the register read
//! and the merge agree on whether a value is usable; a usable value's
//! registers re-encode as a dense value with the same registers (identical
//! bytes when it was dense) and the same count; adding elements keeps it
//! usable and raises exactly the registers the elements hash to.

#![no_main]

use keel_store::hll::{self, Encoding, HEADER_LEN, REGISTERS};
use libfuzzer_sys::fuzz_target;

fn seed(data: &[u8], dense: bool) -> Vec<u8> {
    let mut v = hll::new_sparse();
    for (i, &b) in data.iter().take(64).enumerate() {
        let _ = hll::add(&mut v, &[b, i as u8], 3000);
    }
    if dense {
        let _ = hll::to_dense(&mut v);
    }
    v
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let value = match mode % 3 {
        0 => rest.to_vec(),
        m => {
            let (shape, damage) = rest.split_at(rest.len().min(8));
            let mut v = seed(shape, m == 2);
            for (i, &d) in damage.iter().enumerate() {
                if let Some(b) = v.get_mut(HEADER_LEN / 2 + i) {
                    *b ^= d;
                }
            }
            v
        }
    };

    let _ = hll::decode(&value);
    let checked = hll::check(&value);
    let mut max = [0u8; REGISTERS];
    let merged = hll::merge_into(&mut max, &value);
    if hll::header(&value).is_ok() {
        assert_eq!(checked.is_ok(), hll::count(&value).is_ok());
        assert_eq!(checked.is_ok(), merged.is_ok());
    }
    let Ok(enc) = checked else {
        let mut w = value.clone();
        if hll::add(&mut w, b"x", 3000).is_err() {
            assert_eq!(w, value, "a refused add changes nothing");
        }
        return;
    };
    let regs = hll::registers(&value).expect("a checked value has registers");
    assert_eq!(&regs[..], &max[..]);
    let count = hll::count(&value).expect("a checked value counts");
    assert_eq!(count, hll::count_registers(&regs));

    // Re-encode dense from the registers.
    let mut dense = hll::new_sparse();
    dense[..HEADER_LEN].copy_from_slice(&value[..HEADER_LEN]);
    dense[4] = 1;
    hll::to_dense(&mut dense).expect("an empty sparse value converts");
    for (i, &r) in regs.iter().enumerate() {
        if r != 0 {
            hll::set_register(&mut dense, i, r, 0).expect("dense set");
        }
    }
    assert_eq!(&hll::registers(&dense).expect("dense")[..], &regs[..]);
    if enc == Encoding::Dense {
        assert_eq!(dense, value, "a dense value re-encodes identically");
    }
    let mut converted = value.clone();
    hll::to_dense(&mut converted).expect("a checked value converts");
    assert_eq!(converted, dense);

    // Adding elements: still usable, exactly the hashed registers rise.
    let mut grown = value.clone();
    let mut model = regs.clone();
    for chunk in rest.chunks(3).take(200) {
        let (i, c) = hll::register_of(chunk);
        let changed = hll::add(&mut grown, chunk, 300).expect("add to a checked value");
        assert_eq!(changed, c > model[i]);
        model[i] = model[i].max(c);
        assert!(hll::check(&grown).is_ok());
    }
    assert_eq!(&hll::registers(&grown).expect("grown")[..], &model[..]);
});
