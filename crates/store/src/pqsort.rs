//! Redis's partial quicksort (`pqsort`): Bentley and McIlroy's quicksort,
//! as in the BSD libc, that only recurses into the parts of the array that
//! overlap a range of ranks. Redis uses it where a command asks for a slice
//! of a sorted result (GEOSEARCH ... COUNT, SORT ... BY ... LIMIT), and it
//! is not stable: elements that compare equal come out in an order that
//! depends on every step of the algorithm. Replies only match Redis's when
//! the same steps are taken, so this follows Redis 7.0's version (pivot
//! choice, partitioning, insertion sort below 7 elements; no switch to
//! insertion sort after a partition that moved nothing, which later Redis
//! versions added) move for move, on element indices.
//!
//! Pure: no allocation, never panics for any comparator (every index stays
//! inside the slice).

use std::cmp::Ordering;

/// Sort `v` so that the elements of ranks `lo..=hi` are in place (and, as a
/// side effect, whatever else the partitioning happened to sort), exactly as
/// Redis's `pqsort(v, len, size, cmp, lo, hi)` leaves them. `lo` and `hi` may
/// lie outside the slice, as Redis sometimes passes them.
pub fn pqsort<T>(v: &mut [T], lo: i64, hi: i64, mut cmp: impl FnMut(&T, &T) -> Ordering) {
    // Redis recurses into the lower part of each partition; the parts are
    // disjoint, so the order they are sorted in changes nothing, and a list
    // of parts to do keeps adversarial input from exhausting the stack.
    let mut parts = vec![(0, v.len())];
    while let Some((base, n)) = parts.pop() {
        sort_part(v, base, n, lo, hi, &mut cmp, &mut parts);
    }
}

/// Sort `v[base..base + n]` (ranks are indices into the whole of `v`),
/// leaving lower parts that still need sorting in `parts`.
fn sort_part<T>(
    v: &mut [T],
    mut base: usize,
    mut n: usize,
    lo: i64,
    hi: i64,
    cmp: &mut impl FnMut(&T, &T) -> Ordering,
    parts: &mut Vec<(usize, usize)>,
) {
    loop {
        if n < 7 {
            insertion(v, base, n, cmp);
            return;
        }
        let mut pm = base + n / 2;
        if n > 7 {
            let mut pl = base;
            let mut pn = base + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        // The pivot moves to the front; equal elements gather at both ends
        // (`base+1..pa` and `pd+1..end`) while the rest is partitioned.
        v.swap(base, pm);
        let (mut pa, mut pb) = (base + 1, base + 1);
        let (mut pc, mut pd) = (base + n - 1, base + n - 1);
        loop {
            while pb <= pc {
                let c = cmp(&v[pb], &v[base]);
                if c == Ordering::Greater {
                    break;
                }
                if c == Ordering::Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&v[pc], &v[base]);
                if c == Ordering::Less {
                    break;
                }
                if c == Ordering::Equal {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let end = base + n;
        let r = (pa - base).min(pb - pa);
        swap_runs(v, base, pb - r, r);
        let r = (pd - pc).min(end - pd - 1);
        swap_runs(v, pb, end - r, r);
        let left = pb - pa;
        if left > 1 && overlaps(base, left, lo, hi) {
            parts.push((base, left));
        }
        let right = pd - pc;
        if right > 1 {
            base = end - right;
            n = right;
            if overlaps(base, n, lo, hi) {
                continue;
            }
        }
        return;
    }
}

/// Whether `start..start + len` holds a rank in `lo..=hi` (Redis skips a
/// part only when the whole range lies on one side of it).
fn overlaps(start: usize, len: usize, lo: i64, hi: i64) -> bool {
    let (s, e) = (start as i64, (start + len) as i64);
    !((lo < s && hi < s) || (lo >= e && hi >= e))
}

fn insertion<T>(v: &mut [T], base: usize, n: usize, cmp: &mut impl FnMut(&T, &T) -> Ordering) {
    for m in base + 1..base + n {
        let mut l = m;
        while l > base && cmp(&v[l - 1], &v[l]) == Ordering::Greater {
            v.swap(l, l - 1);
            l -= 1;
        }
    }
}

/// The median of three, with Redis's order of comparisons.
fn med3<T>(
    v: &[T],
    a: usize,
    b: usize,
    c: usize,
    cmp: &mut impl FnMut(&T, &T) -> Ordering,
) -> usize {
    if cmp(&v[a], &v[b]) == Ordering::Less {
        if cmp(&v[b], &v[c]) == Ordering::Less {
            b
        } else if cmp(&v[a], &v[c]) == Ordering::Less {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) == Ordering::Greater {
        b
    } else if cmp(&v[a], &v[c]) == Ordering::Less {
        a
    } else {
        c
    }
}

/// Swap the `n` elements from `a` with the `n` from `b`, front to back.
fn swap_runs<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The requested ranks hold what a full sort puts there.
        #[test]
        fn ranks_in_range_are_sorted(
            mut v in prop::collection::vec(0u8..20, 0..300),
            lo in 0usize..300,
            len in 0usize..50,
        ) {
            let mut sorted = v.clone();
            sorted.sort();
            let hi = (lo + len).min(v.len().saturating_sub(1));
            pqsort(&mut v, lo as i64, hi as i64, |a, b| a.cmp(b));
            if lo <= hi && hi < v.len() {
                prop_assert_eq!(&v[lo..=hi], &sorted[lo..=hi]);
            }
            let mut back = v.clone();
            back.sort();
            prop_assert_eq!(back, sorted);
        }

        /// A comparator that is not an order never makes it panic.
        #[test]
        fn any_comparator_is_safe(mut v in prop::collection::vec(any::<u8>(), 0..200), seed in any::<u64>()) {
            let mut s = seed;
            pqsort(&mut v, 0, 10, |_, _| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                match s >> 62 { 0 => Ordering::Less, 1 => Ordering::Equal, _ => Ordering::Greater }
            });
        }
    }

    /// Equal keys come out in Redis's order, not the input order: 60 equal
    /// elements, the first 3 asked for (redis-server 7.0.15's GEOSEARCH ...
    /// COUNT 3 over 60 members at one point replies m59 m01 m02).
    #[test]
    fn equal_keys_follow_the_partitioning() {
        let mut v: Vec<(u8, usize)> = (0..60).map(|i| (0, i)).collect();
        pqsort(&mut v, 0, 2, |a, b| a.0.cmp(&b.0));
        let first: Vec<usize> = v.iter().take(3).map(|e| e.1).collect();
        assert_eq!(first, vec![59, 1, 2]);
    }
}
