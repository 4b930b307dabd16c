//! The kernel's `table` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use hashbrown::HashMap;
use keel_engine::spec::{CommandSpec, Flags, Keys};
use keel_engine::table::*;
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(test)]
mod tests {
    #[test]
    fn every_name_is_found_in_any_case_and_near_misses_are_not() {
        let t = keel_server::families::table();
        for id in 0..t.top_level {
            let name = t.specs[id].name;
            assert_eq!(t.lookup(name.as_bytes()), Some(id), "{name}");
            assert_eq!(t.lookup(name.to_ascii_lowercase().as_bytes()), Some(id));
            // A byte the 0x20 fold maps onto a name byte without being it.
            let mut odd = name.as_bytes().to_vec();
            if let Some(b) = odd.iter_mut().find(|b| !b.is_ascii_alphabetic()) {
                *b = if *b & 0x20 != 0 {
                    *b & !0x20
                } else {
                    *b | 0x20
                };
                assert_eq!(t.lookup(&odd), None, "{odd:?}");
            }
        }
        assert_eq!(t.lookup(b""), None);
        assert_eq!(t.lookup(b"GETT"), None);
        assert_eq!(
            t.lookup(b"georadiusbymember_ro").map(|i| t.specs[i].name),
            Some("GEORADIUSBYMEMBER_RO")
        );
    }

    proptest::proptest! {
        /// The packed lookup agrees with a plain case-insensitive search of
        /// every name, for names with their case changed and any byte replaced.
        #[test]
        fn lookup_matches_a_plain_search(
            pick in 0usize..10_000,
            flips in proptest::collection::vec(proptest::bool::ANY, 16),
            swap in proptest::option::of((0usize..16, proptest::num::u8::ANY)),
        ) {
            let t = keel_server::families::table();
            let id = pick % t.top_level;
            let mut name: Vec<u8> = t.specs[id].name.bytes().collect();
            for (b, flip) in name.iter_mut().zip(&flips) {
                if *flip {
                    b.make_ascii_lowercase();
                }
            }
            if let Some((at, byte)) = swap {
                if let Some(b) = name.get_mut(at) {
                    *b = byte;
                }
            }
            let plain = (0..t.top_level).find(|&i| t.specs[i].name.as_bytes().eq_ignore_ascii_case(&name));
            proptest::prop_assert_eq!(t.lookup(&name), plain);
        }
    }
}
