//! Roaring bitmaps: the 32-bit and 64-bit compressed integer sets behind the `R.*` and
//! `R64.*` commands and the bitmap index (`index`), and the n-ary intersection both use.
//!
//! The sets themselves are the `roaring` crate's; this module adds what a server needs on
//! top: an intersection of many bitmaps that walks the smallest one and probes the others,
//! so a search allocates nothing however many conditions it has, and can stop at the
//! first, the n-th or the last match.

pub use ::roaring::{RoaringBitmap as Bitmap32, RoaringTreemap as Bitmap64};

/// The members common to every bitmap in `sets`, in ascending order, without building
/// any intermediate bitmap. The smallest set is walked and each of its members probed
/// in the others, smallest first, so a member is dropped as early as possible. No sets
/// yield nothing (an empty conjunction is not the universe here: a search with no
/// conditions matches no entity).
pub fn intersect<'a>(sets: &mut [&'a Bitmap32]) -> impl Iterator<Item = u32> + 'a {
    sets.sort_unstable_by_key(|b| b.len());
    let (first, rest): (Option<&'a Bitmap32>, Vec<&'a Bitmap32>) = match sets.split_first() {
        Some((f, r)) if !r.iter().any(|b| b.is_empty()) => (Some(*f), r.to_vec()),
        _ => (None, Vec::new()),
    };
    first
        .into_iter()
        .flat_map(|b| b.iter())
        .filter(move |x| rest.iter().all(|b| b.contains(*x)))
}

/// How many members every bitmap in `sets` shares.
pub fn intersect_len(sets: &mut [&Bitmap32]) -> u64 {
    match sets.len() {
        0 => 0,
        1 => sets[0].len(),
        // Two sets: the crate's container-wise count beats probing.
        2 => sets[0].intersection_len(sets[1]),
        _ => intersect(sets).count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        #[test]
        fn intersect_matches_a_set_model(
            sets in proptest::collection::vec(
                proptest::collection::btree_set(0u32..2_000, 0..300), 0..6),
            big in proptest::collection::btree_set(any::<u32>(), 0..50),
        ) {
            let mut models: Vec<BTreeSet<u32>> = sets;
            if let Some(m) = models.first_mut() {
                m.extend(big.iter().copied());
            }
            let bitmaps: Vec<Bitmap32> = models.iter().map(|m| m.iter().copied().collect()).collect();
            let mut refs: Vec<&Bitmap32> = bitmaps.iter().collect();
            let got: Vec<u32> = intersect(&mut refs).collect();
            let want: Vec<u32> = match models.split_first() {
                None => Vec::new(),
                Some((f, r)) => f.iter().copied().filter(|x| r.iter().all(|m| m.contains(x))).collect(),
            };
            prop_assert_eq!(&got, &want);
            let mut refs: Vec<&Bitmap32> = bitmaps.iter().collect();
            prop_assert_eq!(intersect_len(&mut refs), want.len() as u64);
        }
    }
}
