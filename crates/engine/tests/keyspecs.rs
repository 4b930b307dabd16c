//! Redis's key specs as generated (`keyspecs.rs`) and applied to argv
//! (`keyspec.rs`).

use keel_engine::keyspec::positions;
use keel_engine::keyspecs::{for_command, KEY_SPECS};

fn argv(a: &[&str]) -> Vec<bytes::Bytes> {
    a.iter()
        .map(|s| bytes::Bytes::copy_from_slice(s.as_bytes()))
        .collect()
}

#[test]
fn table_is_sorted_and_has_redis_flags() {
    let t = KEY_SPECS;
    assert!(t.windows(2).all(|w| w[0].0 < w[1].0));
    let lmove = for_command("lmove").expect("lmove");
    assert_eq!(lmove[0].flags, ["RW", "access", "delete"]);
    assert_eq!(lmove[1].flags, ["RW", "insert"]);
    assert!(for_command("ping").is_none());
}

#[test]
fn positions_follow_begin_and_find() {
    let specs = for_command("zunionstore").expect("spec");
    let p: Vec<usize> = positions(specs, &argv(&["zunionstore", "d", "2", "a", "b"]))
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    assert_eq!(p, [1, 3, 4]);
    let specs = for_command("xread").expect("spec");
    let p: Vec<usize> = positions(
        specs,
        &argv(&["xread", "count", "1", "streams", "a", "b", "0", "0"]),
    )
    .into_iter()
    .map(|(i, _)| i)
    .collect();
    assert_eq!(p, [4, 5]);
    let specs = for_command("mset").expect("spec");
    assert_eq!(
        positions(specs, &argv(&["mset", "a", "1", "b", "2"])).len(),
        2
    );
}
