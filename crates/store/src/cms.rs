//! Count-min sketches, laid out and hashed as RedisBloom's `CMSk-TYPE`, so that
//! counts equal RedisBloom's for the same increments and its RDB values load
//! here and back unchanged.
//!
//! A sketch is `depth` rows of `width` 32-bit counters, row-major. Row `i`
//! counts an item in cell `MurmurHash2(item, seed = i) % width`. An increment
//! adds to the item's cell in every row; a query is the smallest of those
//! cells, so it never underestimates. `count` is the sum of all increments.
//!
//! Overflow follows the current RedisBloom: an increment that would take any
//! of the item's cells past `u32::MAX`, or the total past `i64::MAX`, is
//! refused and changes nothing. A merge that would take a cell outside
//! `0..=u32::MAX` or the total outside `0..=i64::MAX` is refused likewise.
//!
//! Pure data structure: no RESP, no engine.

use crate::murmur::murmur2;

/// Keel's cap on `width * depth` (4 GiB of counters): RedisBloom allocates
/// whatever the dimensions ask for; Keel refuses what it could not hold.
pub const MAX_CELLS: u64 = 1 << 30;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountMinSketch {
    width: u64,
    depth: u64,
    count: u64,
    cells: Vec<u32>,
}

/// Why an update was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow;

/// CMS.INITBYPROB's dimensions: `ceil(2 / error)` wide and
/// `ceil(log10(probability) / log10(0.5))` deep, the latter in single
/// precision as RedisBloom computes it.
pub fn dims_for(error: f64, probability: f64) -> (u64, u64) {
    let width = (2.0 / error).ceil();
    let depth = ((probability as f32).log10() / 0.5f32.log10()).ceil();
    (width as u64, depth as u64)
}

impl CountMinSketch {
    /// A zeroed sketch, or `None` when a dimension is 0 or the cells pass
    /// [`MAX_CELLS`].
    pub fn new(width: u64, depth: u64) -> Option<CountMinSketch> {
        let cells = width.checked_mul(depth)?;
        if width == 0 || depth == 0 || cells > MAX_CELLS {
            return None;
        }
        Some(CountMinSketch {
            width,
            depth,
            count: 0,
            cells: vec![0; cells as usize],
        })
    }

    /// A sketch from RDB fields: `cells` holds `width * depth` little-endian
    /// u32 counters.
    pub fn from_parts(width: u64, depth: u64, count: u64, cells: &[u8]) -> Option<CountMinSketch> {
        let n = width.checked_mul(depth)?;
        if width == 0
            || depth == 0
            || n > MAX_CELLS
            || n.checked_mul(4) != Some(cells.len() as u64)
            || count > i64::MAX as u64
        {
            return None;
        }
        Some(CountMinSketch {
            width,
            depth,
            count,
            cells: cells
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        })
    }

    pub fn width(&self) -> u64 {
        self.width
    }
    pub fn depth(&self) -> u64 {
        self.depth
    }
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The counters, row-major, as RedisBloom stores them (little-endian).
    pub fn cell_bytes(&self) -> Vec<u8> {
        self.cells.iter().flat_map(|c| c.to_le_bytes()).collect()
    }

    pub fn cells(&self) -> &[u32] {
        &self.cells
    }

    fn cell_index(&self, item: &[u8], row: u64) -> usize {
        // Seeds are the row numbers, truncated to 32 bits as RedisBloom's
        // `MurmurHash2(item, len, i)` does.
        let h = murmur2(item, row as u32);
        (u64::from(h) % self.width + row * self.width) as usize
    }

    /// CMS.INCRBY for one item: the new estimate, or [`Overflow`] with the
    /// sketch unchanged.
    pub fn incr_by(&mut self, item: &[u8], by: u64) -> Result<u64, Overflow> {
        if by > i64::MAX as u64 - self.count.min(i64::MAX as u64) {
            return Err(Overflow);
        }
        let mut min = u64::MAX;
        for row in 0..self.depth {
            let i = self.cell_index(item, row);
            let Some(cell) = u32::try_from(by)
                .ok()
                .and_then(|by| self.cells[i].checked_add(by))
            else {
                // Undo the rows already counted: a refused increment changes nothing.
                for done in 0..row {
                    let j = self.cell_index(item, done);
                    self.cells[j] -= by as u32;
                }
                return Err(Overflow);
            };
            self.cells[i] = cell;
            min = min.min(u64::from(cell));
        }
        self.count += by;
        Ok(min)
    }

    /// CMS.QUERY for one item.
    pub fn query(&self, item: &[u8]) -> u64 {
        (0..self.depth)
            .map(|r| u64::from(self.cells[self.cell_index(item, r)]))
            .min()
            .unwrap_or(0)
    }

    /// CMS.MERGE: this sketch becomes the weighted sum of `sources` (which
    /// the caller has checked have its dimensions), or is left unchanged on
    /// [`Overflow`].
    pub fn merge(&mut self, sources: &[(&CountMinSketch, i64)]) -> Result<(), Overflow> {
        let mut cells = vec![0u32; self.cells.len()];
        for (i, cell) in cells.iter_mut().enumerate() {
            let mut sum: i64 = 0;
            for (s, w) in sources {
                let c = i64::from(*s.cells.get(i).ok_or(Overflow)?);
                sum = c
                    .checked_mul(*w)
                    .and_then(|p| sum.checked_add(p))
                    .ok_or(Overflow)?;
            }
            *cell = u32::try_from(sum).map_err(|_| Overflow)?;
        }
        let mut count: i64 = 0;
        for (s, w) in sources {
            count = i64::try_from(s.count)
                .ok()
                .and_then(|c| c.checked_mul(*w))
                .and_then(|p| count.checked_add(p))
                .ok_or(Overflow)?;
        }
        if count < 0 {
            return Err(Overflow);
        }
        self.cells = cells;
        self.count = count as u64;
        Ok(())
    }

    /// Heap bytes owned (MEMORY USAGE).
    pub fn heap_bytes(&self) -> usize {
        self.cells.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn murmur2_reference_values() {
        assert_eq!(murmur2(b"", 0), 0);
        // Values of Appleby's C MurmurHash2 for the same inputs.
        assert_eq!(murmur2(b"hello", 0), 0xe56129cb);
        assert_eq!(murmur2(b"hello, world", 0), 1_263_312_256);
        assert_eq!(murmur2(b"abc", 7), 957_085_255);
    }

    #[test]
    fn the_golden_history_gives_redisbloom_counts() {
        // CMS.INITBYDIM cms:dim 200 5; CMS.INCRBY cms:dim w(i % 97) (i % 7 + 1).
        let mut c = CountMinSketch::new(200, 5).expect("new");
        for i in 0..2000u64 {
            c.incr_by(format!("w{}", i % 97).as_bytes(), i % 7 + 1)
                .expect("fits");
        }
        assert_eq!(c.count(), 7995);
        let q: Vec<u64> = ["w0", "w1", "w5", "w30", "absent"]
            .iter()
            .map(|w| c.query(w.as_bytes()))
            .collect();
        assert_eq!(q, [84, 84, 84, 84, 0]);
        let (w, d) = dims_for(0.001, 0.01);
        let mut p = CountMinSketch::new(w, d).expect("new");
        assert_eq!((w, d), (2000, 7));
        for i in 0..500 {
            p.incr_by(format!("w{}", i % 31).as_bytes(), 3)
                .expect("fits");
        }
        let q: Vec<u64> = ["w0", "w1", "w5", "w30", "absent"]
            .iter()
            .map(|w| p.query(w.as_bytes()))
            .collect();
        assert_eq!(q, [51, 51, 48, 48, 0]);
    }

    #[test]
    fn overflow_is_refused_and_changes_nothing() {
        let mut c = CountMinSketch::new(4, 2).expect("new");
        assert_eq!(
            c.incr_by(b"a", u64::from(u32::MAX)),
            Ok(u64::from(u32::MAX))
        );
        let before = c.clone();
        assert_eq!(c.incr_by(b"a", 1), Err(Overflow));
        assert_eq!(c, before);
        assert_eq!(c.incr_by(b"b", 1 << 40), Err(Overflow));
        let mut m = CountMinSketch::new(4, 2).expect("new");
        assert_eq!(m.merge(&[(&before, 2)]), Err(Overflow));
        assert_eq!(m.merge(&[(&before, -1)]), Err(Overflow));
        assert_eq!(m.count(), 0);
        assert!(CountMinSketch::new(1 << 20, 1 << 20).is_none());
        assert!(CountMinSketch::new(0, 3).is_none());
    }

    proptest! {
        #[test]
        fn never_underestimates(items in proptest::collection::vec((0u8..50, 1u64..20), 1..300)) {
            let mut c = CountMinSketch::new(16, 3).expect("new");
            let mut model: HashMap<u8, u64> = HashMap::new();
            for (i, by) in items {
                c.incr_by(&[i], by).expect("fits");
                *model.entry(i).or_default() += by;
            }
            for (i, n) in model {
                prop_assert!(c.query(&[i]) >= n);
            }
        }

        #[test]
        fn merge_is_the_weighted_sum_of_cells(
            a in proptest::collection::vec((0u8..30, 1u64..9), 0..50),
            b in proptest::collection::vec((0u8..30, 1u64..9), 0..50),
            wa in 0i64..5,
            wb in 0i64..5,
        ) {
            let (mut x, mut y) = (CountMinSketch::new(8, 3).expect("new"), CountMinSketch::new(8, 3).expect("new"));
            for (i, by) in a { x.incr_by(&[i], by).expect("fits"); }
            for (i, by) in b { y.incr_by(&[i], by).expect("fits"); }
            let mut d = CountMinSketch::new(8, 3).expect("new");
            d.merge(&[(&x, wa), (&y, wb)]).expect("fits");
            for i in 0..24 {
                prop_assert_eq!(i64::from(d.cells()[i]), i64::from(x.cells()[i]) * wa + i64::from(y.cells()[i]) * wb);
            }
            prop_assert_eq!(d.count() as i64, x.count() as i64 * wa + y.count() as i64 * wb);
        }
    }
}
