//! A merging t-digest (the `TDIGEST.*` commands), as RedisBloom's t-digest
//! library keeps one: centroids (mean, weight) with the merged ones sorted at
//! the front and newly added points buffered behind them; when the buffer
//! fills the capacity (`6 * compression + 10` nodes), everything is sorted by
//! mean and merged left to right under the k-scale limit
//! `q * (1 - q) >= weight * compression / (2 pi N ln N)`.
//!
//! Quantiles, CDF and trimmed means interpolate between centroids the way that
//! library does, with the same floating-point operations in the same order,
//! so answers are bit-identical to RedisBloom's for the same inputs. One
//! difference is possible: centroids with exactly equal means are ordered by
//! a stable sort here, where the library's own sort may order them otherwise;
//! that changes only which equal-mean centroids merge, never their means.
//!
//! Node storage grows as points arrive rather than being allocated at the
//! full capacity up front, so a large compression costs only what is used.

use std::f64::consts::PI;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TDigestError {
    /// A weight sum or the merge normalizer would overflow.
    Overflow,
    /// The compression gives a capacity beyond `i32::MAX`.
    BadCompression,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TDigest {
    compression: f64,
    min: f64,
    max: f64,
    cap: usize,
    merged_nodes: usize,
    total_compressions: i64,
    merged_weight: i64,
    unmerged_weight: i64,
    /// Means and weights of the merged nodes followed by the unmerged ones.
    means: Vec<f64>,
    weights: Vec<i64>,
    /// For each merged node, the weight the quantile walk has summed on
    /// reaching it: half the first node's weight, then the mean of each two
    /// neighbours' weights, added in the walk's order so that the floats are
    /// the walk's own. Rebuilt whenever the merged nodes change; a quantile
    /// searches it instead of walking.
    walked: Vec<f64>,
}

/// The capacity RedisBloom gives a digest of `compression`.
pub fn capacity_for(compression: u64) -> Option<usize> {
    let cap = compression.checked_mul(6)?.checked_add(10)?;
    (compression > 0 && cap <= i32::MAX as u64).then_some(cap as usize)
}

fn add_safe(a: i64, b: i64) -> bool {
    a.checked_add(b).is_some()
}

fn overflows(unmerged: f64, total: f64) -> bool {
    unmerged == f64::INFINITY
        || total == f64::INFINITY
        || 2.0 * PI * total * total.ln() == f64::INFINITY
}

fn weighted_average_sorted(x1: f64, w1: f64, x2: f64, w2: f64) -> f64 {
    let x = (x1 * w1 + x2 * w2) / (w1 + w2);
    // C's max(x1, min(x, x2)) with its comparisons.
    let inner = if x < x2 { x } else { x2 };
    if x1 > inner {
        x1
    } else {
        inner
    }
}

fn weighted_average(x1: f64, w1: f64, x2: f64, w2: f64) -> f64 {
    if x1 <= x2 {
        weighted_average_sorted(x1, w1, x2, w2)
    } else {
        weighted_average_sorted(x2, w2, x1, w1)
    }
}

impl TDigest {
    /// An empty digest; `compression` must give a valid capacity.
    pub fn new(compression: u64) -> Result<TDigest, TDigestError> {
        let cap = capacity_for(compression).ok_or(TDigestError::BadCompression)?;
        Ok(TDigest {
            compression: compression as f64,
            min: f64::MAX,
            max: -f64::MAX,
            cap,
            merged_nodes: 0,
            total_compressions: 0,
            merged_weight: 0,
            unmerged_weight: 0,
            means: Vec::new(),
            weights: Vec::new(),
            walked: Vec::new(),
        })
    }

    /// A digest from saved parts (all merged), as a loader found them;
    /// `None` when they are inconsistent.
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts(
        compression: f64,
        min: f64,
        max: f64,
        cap: usize,
        total_compressions: i64,
        merged_weight: i64,
        means: Vec<f64>,
        weights: Vec<i64>,
    ) -> Option<TDigest> {
        if !(compression.is_finite() && compression >= 1.0 && compression <= i32::MAX as f64) {
            return None;
        }
        let expected = capacity_for(compression as u64)?;
        let sum = weights.iter().try_fold(
            0i64,
            |acc, &w| if w > 0 { acc.checked_add(w) } else { None },
        )?;
        let sorted = means.windows(2).all(|w| w[0] <= w[1]);
        let valid = cap == expected
            && means.len() == weights.len()
            && means.len() < cap
            && means.iter().all(|m| m.is_finite())
            && sorted
            && sum == merged_weight
            && total_compressions >= 0
            && (means.is_empty() || (min <= means[0] && max >= means[means.len() - 1]));
        if !valid {
            return None;
        }
        let mut t = TDigest {
            compression,
            min,
            max,
            cap,
            merged_nodes: means.len(),
            total_compressions,
            merged_weight,
            unmerged_weight: 0,
            means,
            weights,
            walked: Vec::new(),
        };
        t.rebuild_walked();
        Some(t)
    }

    /// Recomputes `walked` for the merged nodes.
    fn rebuild_walked(&mut self) {
        let weights = &self.weights[..self.merged_nodes];
        self.walked.clear();
        if self.walked.capacity() > 2 * weights.len() + 16 {
            // Sized to the nodes merged now, not the most ever merged.
            self.walked.shrink_to(weights.len());
        }
        let Some(&first) = weights.first() else {
            return;
        };
        let mut so_far = first as f64 / 2.0;
        self.walked.push(so_far);
        for pair in weights.windows(2) {
            so_far += (pair[0] as f64 + pair[1] as f64) / 2.0;
            self.walked.push(so_far);
        }
    }

    pub fn compression(&self) -> f64 {
        self.compression
    }
    pub fn capacity(&self) -> usize {
        self.cap
    }
    pub fn merged_nodes(&self) -> usize {
        self.merged_nodes
    }
    pub fn unmerged_nodes(&self) -> usize {
        self.means.len() - self.merged_nodes
    }
    pub fn merged_weight(&self) -> i64 {
        self.merged_weight
    }
    pub fn unmerged_weight(&self) -> i64 {
        self.unmerged_weight
    }
    pub fn total_compressions(&self) -> i64 {
        self.total_compressions
    }
    /// The smallest value added (`f64::MAX` when empty).
    pub fn min(&self) -> f64 {
        self.min
    }
    /// The largest value added (`-f64::MAX` when empty).
    pub fn max(&self) -> f64 {
        self.max
    }
    pub fn size(&self) -> i64 {
        self.merged_weight + self.unmerged_weight
    }
    /// The merged centroids' means and weights (call [`Self::compress`]
    /// first for all of them).
    pub fn centroids(&self) -> (&[f64], &[i64]) {
        (
            &self.means[..self.merged_nodes],
            &self.weights[..self.merged_nodes],
        )
    }

    /// What RedisBloom reports as its memory usage (a pointer and the two
    /// node arrays at full capacity).
    pub fn reported_bytes(&self) -> usize {
        8 + 2 * self.cap * 8
    }

    pub fn heap_bytes(&self) -> usize {
        (self.means.capacity() + self.weights.capacity() + self.walked.capacity()) * 8
    }

    /// Empties the digest, keeping its compression.
    pub fn reset(&mut self) {
        self.min = f64::MAX;
        self.max = -f64::MAX;
        self.merged_nodes = 0;
        self.merged_weight = 0;
        self.unmerged_weight = 0;
        self.total_compressions = 0;
        self.means.clear();
        self.weights.clear();
        self.walked.clear();
        self.means.shrink_to_fit();
        self.weights.shrink_to_fit();
        self.walked.shrink_to_fit();
    }

    /// Adds `value` (finite) with `weight`.
    pub fn add(&mut self, value: f64, weight: i64) -> Result<(), TDigestError> {
        if self.means.len() + 1 >= self.cap {
            self.compress()?;
        }
        if self.means.len() >= self.cap {
            return Err(TDigestError::Overflow);
        }
        if !add_safe(self.unmerged_weight, weight) {
            return Err(TDigestError::Overflow);
        }
        let unmerged = self.unmerged_weight + weight;
        if !add_safe(unmerged, self.merged_weight) {
            return Err(TDigestError::Overflow);
        }
        let total = unmerged + self.merged_weight;
        if overflows(unmerged as f64, total as f64) {
            return Err(TDigestError::Overflow);
        }
        if value < self.min {
            self.min = value;
        }
        if value > self.max {
            self.max = value;
        }
        if self.means.len() == self.means.capacity() {
            // Grow by doubling, but never past the capacity: the node arrays
            // end no larger than RedisBloom's.
            let len = self.means.len();
            let more = (len * 2).clamp(8, self.cap) - len;
            self.means.reserve_exact(more);
            self.weights.reserve_exact(more);
        }
        self.means.push(value);
        self.weights.push(weight);
        self.unmerged_weight = unmerged;
        Ok(())
    }

    /// Merges the buffered points into the centroids.
    pub fn compress(&mut self) -> Result<(), TDigestError> {
        if self.means.len() == self.merged_nodes {
            return Ok(());
        }
        let n = self.means.len();
        let mut pairs: Vec<(f64, i64)> = self
            .means
            .iter()
            .copied()
            .zip(self.weights.iter().copied())
            .collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (i, (m, w)) in pairs.into_iter().enumerate() {
            self.means[i] = m;
            self.weights[i] = w;
        }
        let total = self.merged_weight as f64 + self.unmerged_weight as f64;
        if overflows(self.unmerged_weight as f64, total) {
            // The sort moved the merged nodes too.
            self.rebuild_walked();
            return Err(TDigestError::Overflow);
        }
        if total <= 1.0 {
            self.merged_nodes = n;
            self.merged_weight = total as i64;
            self.unmerged_weight = 0;
            self.total_compressions += 1;
            self.rebuild_walked();
            return Ok(());
        }
        let denom = 2.0 * PI * total * total.ln();
        if denom == f64::INFINITY {
            // The sort moved the merged nodes too.
            self.rebuild_walked();
            return Err(TDigestError::Overflow);
        }
        let normalizer = self.compression / denom;
        if normalizer == f64::INFINITY {
            // The sort moved the merged nodes too.
            self.rebuild_walked();
            return Err(TDigestError::Overflow);
        }
        let (means, weights) = (&mut self.means, &mut self.weights);
        let mut cur = 0usize;
        let mut weight_so_far = 0.0f64;
        for i in 1..n {
            let proposed = weights[cur] as f64 + weights[i] as f64;
            let z = proposed * normalizer;
            let q0 = weight_so_far / total;
            let q2 = (weight_so_far + proposed) / total;
            if z <= q0 * (1.0 - q0) && z <= q2 * (1.0 - q2) {
                weights[cur] += weights[i];
                let delta = means[i] - means[cur];
                let weighted_delta = (delta * weights[i] as f64) / weights[cur] as f64;
                means[cur] += weighted_delta;
            } else {
                weight_so_far += weights[cur] as f64;
                cur += 1;
                weights[cur] = weights[i];
                means[cur] = means[i];
            }
        }
        means.truncate(cur + 1);
        weights.truncate(cur + 1);
        self.merged_nodes = cur + 1;
        self.merged_weight = total as i64;
        self.unmerged_weight = 0;
        self.total_compressions += 1;
        self.rebuild_walked();
        Ok(())
    }

    /// Adds every centroid of `from` (compressing both first).
    pub fn merge_from(&mut self, from: &mut TDigest) -> Result<(), TDigestError> {
        self.compress()?;
        from.compress()?;
        for i in 0..from.means.len() {
            self.add(from.means[i], from.weights[i])?;
        }
        Ok(())
    }

    /// The fraction of points at or below `val` (half of those equal).
    pub fn cdf(&mut self, val: f64) -> f64 {
        let _ = self.compress();
        let n = self.merged_nodes;
        if n == 0 {
            return f64::NAN;
        }
        if val < self.min {
            return 0.0;
        }
        if val > self.max {
            return 1.0;
        }
        if n == 1 {
            let width = self.max - self.min;
            return if val - self.min <= width {
                0.5
            } else {
                (val - self.min) / width
            };
        }
        let means = &self.means;
        let weights = &self.weights;
        let merged = self.merged_weight as f64;
        let left_mean = means[0];
        let left_weight = weights[0] as f64;
        if val < left_mean {
            let width = left_mean - self.min;
            if width > 0.0 {
                if val == self.min {
                    return 0.5 / merged;
                }
                return (1.0 + (val - self.min) / width * (left_weight / 2.0 - 1.0)) / merged;
            }
            return 0.0;
        }
        let right_mean = means[n - 1];
        let right_weight = weights[n - 1] as f64;
        if val > right_mean {
            let width = self.max - right_mean;
            if width > 0.0 {
                if val == self.max {
                    return 1.0 - 0.5 / merged;
                }
                let dq = (1.0 + (self.max - val) / width * (right_weight / 2.0 - 1.0)) / merged;
                return 1.0 - dq;
            }
            return 1.0;
        }
        let mut weight_so_far = 0.0f64;
        let mut it = 0usize;
        while it < n - 1 {
            if means[it] == val {
                let mut dw = 0.0f64;
                while it < n && means[it] == val {
                    dw += weights[it] as f64;
                    it += 1;
                }
                return (weight_so_far + dw / 2.0) / merged;
            } else if means[it] <= val && val < means[it + 1] {
                let w = weights[it] as f64;
                let w_next = weights[it + 1] as f64;
                let m = means[it];
                let m_next = means[it + 1];
                if m_next - m > 0.0 {
                    let mut left_excluded = 0.0;
                    let mut right_excluded = 0.0;
                    if w == 1.0 {
                        if w_next == 1.0 {
                            return (weight_so_far + 1.0) / merged;
                        }
                        left_excluded = 0.5;
                    } else if w_next == 1.0 {
                        right_excluded = 0.5;
                    }
                    let dw = (w + w_next) / 2.0;
                    let dw_no_singleton = dw - left_excluded - right_excluded;
                    let base = weight_so_far + w / 2.0 + left_excluded;
                    return (base + dw_no_singleton * (val - m) / (m_next - m)) / merged;
                }
                let dw = (w + w_next) / 2.0;
                return (weight_so_far + dw) / merged;
            } else {
                weight_so_far += weights[it] as f64;
            }
            it += 1;
        }
        1.0 - 0.5 / merged
    }

    /// The value at `index` (a weight position) as the library's walk over
    /// the merged centroids finds it. The walk stops at the first pair of
    /// neighbours whose midpoints' running weight passes `index`; `walked`
    /// holds those running weights as the walk sums them, so a binary search
    /// finds the same pair and the same floats. A batch walk resumed from an
    /// earlier, smaller index stops at that same pair too, since every pair
    /// before it was already passed.
    fn value_at_index(&self, index: f64, left_weight: f64) -> f64 {
        let n = self.merged_nodes;
        let means = &self.means;
        let weights = &self.weights;
        let merged = self.merged_weight as f64;
        if left_weight > 1.0 && index < left_weight / 2.0 {
            return self.min + (index - 1.0) / (left_weight / 2.0 - 1.0) * (means[0] - self.min);
        }
        if index > (self.merged_weight - 1) as f64 {
            return self.max;
        }
        let right_weight = weights[n - 1] as f64;
        let right_mean = means[n - 1];
        if right_weight > 1.0 && merged - index <= right_weight / 2.0 {
            return self.max
                - (merged - index - 1.0) / (right_weight / 2.0 - 1.0) * (self.max - right_mean);
        }
        let walked = &self.walked[..n];
        let i = walked[1..].partition_point(|&w| w <= index);
        if i < n - 1 {
            let so_far = walked[i];
            let w = weights[i] as f64;
            let w_next = weights[i + 1] as f64;
            let m = means[i];
            let m_next = means[i + 1];
            let dw = (w + w_next) / 2.0;
            let mut left_unit = 0.0;
            if w == 1.0 {
                if index - so_far < 0.5 {
                    return m;
                }
                left_unit = 0.5;
            }
            let mut right_unit = 0.0;
            if w_next == 1.0 {
                if so_far + dw - index <= 0.5 {
                    return m_next;
                }
                right_unit = 0.5;
            }
            let z1 = index - so_far - left_unit;
            let z2 = so_far + dw - index - right_unit;
            return weighted_average(m, z2, m_next, z1);
        }
        let z1 = index - merged - right_weight / 2.0;
        let z2 = right_weight / 2.0 - z1;
        weighted_average(right_mean, z1, self.max, z2)
    }

    /// One quantile, as the library's single-quantile call computes it.
    pub fn quantile(&mut self, q: f64) -> f64 {
        let _ = self.compress();
        if !(0.0..=1.0).contains(&q) || self.merged_nodes == 0 {
            return f64::NAN;
        }
        if self.merged_nodes == 1 {
            return self.means[0];
        }
        let index = q * self.merged_weight as f64;
        if index < 1.0 {
            return self.min;
        }
        self.value_at_index(index, self.weights[0] as f64)
    }

    /// One quantile as the library's batch call computes it (which differs
    /// from [`Self::quantile`] below index 1). Every quantile of an ascending
    /// batch is answered alone the same as in the batch.
    pub fn quantile_in_batch(&mut self, q: f64) -> f64 {
        let _ = self.compress();
        match self.merged_nodes {
            0 => f64::NAN,
            1 if (0.0..=1.0).contains(&q) => self.means[0],
            1 => f64::NAN,
            _ => self.value_at_index(q * self.merged_weight as f64, self.weights[0] as f64),
        }
    }

    /// Quantiles of an ascending batch, as the library's batch call computes
    /// them.
    pub fn quantiles_sorted(&mut self, qs: &[f64]) -> Vec<f64> {
        qs.iter().map(|&q| self.quantile_in_batch(q)).collect()
    }

    /// The mean of the values between the `low` and `high` quantiles.
    pub fn trimmed_mean(&mut self, low: f64, high: f64) -> f64 {
        let _ = self.compress();
        if self.merged_nodes == 0 || !(0.0..=1.0).contains(&low) || !(0.0..=1.0).contains(&high) {
            return f64::NAN;
        }
        if self.merged_nodes == 1 {
            return self.means[0];
        }
        let leftmost = (self.merged_weight as f64 * low).floor();
        let rightmost = (self.merged_weight as f64 * high).ceil();
        let mut count_done = 0.0f64;
        let mut sum = 0.0f64;
        let mut count = 0.0f64;
        for i in 0..self.merged_nodes {
            let w = self.weights[i] as f64;
            let mut add = w;
            add -= (leftmost - count_done).max(0.0).min(add);
            add = (rightmost - count_done).max(0.0).min(add);
            count_done += w;
            sum += self.means[i] * add;
            count += add;
            if count_done >= rightmost {
                break;
            }
        }
        sum / count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn capacity_follows_compression() {
        assert_eq!(TDigest::new(100).unwrap().capacity(), 610);
        assert_eq!(TDigest::new(0).err(), Some(TDigestError::BadCompression));
        assert_eq!(
            TDigest::new(400_000_000).err(),
            Some(TDigestError::BadCompression)
        );
        assert_eq!(TDigest::new(100).unwrap().reported_bytes(), 9768);
        let mut t = TDigest::new(100).unwrap();
        for i in 0..5000 {
            t.add(f64::from(i), 1).unwrap();
        }
        // The node arrays at most RedisBloom's, and the running weights of
        // the merged nodes.
        let merged = t.merged_nodes();
        assert_eq!(t.walked.len(), merged);
        assert!(
            t.heap_bytes() <= 610 * 16 + (2 * merged + 16) * 8,
            "{} with {merged} merged",
            t.heap_bytes()
        );
    }

    #[test]
    fn reference_sequence_matches_redisbloom() {
        // TDIGEST.ADD td:c ((i*7919) % 10007 / 10.0) for i in 0..5000, with
        // RedisBloom's replies for the same digest.
        let mut t = TDigest::new(100).unwrap();
        for i in 0..5000u64 {
            t.add(((i * 7919) % 10007) as f64 / 10.0, 1).unwrap();
        }
        assert_eq!(
            (
                t.merged_nodes(),
                t.unmerged_nodes(),
                t.merged_weight(),
                t.unmerged_weight()
            ),
            (50, 449, 4551, 449)
        );
        assert_eq!(t.total_compressions(), 8);
        assert_eq!(
            t.quantiles_sorted(&[0.0, 0.01, 0.5, 0.99, 1.0]),
            vec![
                0.0,
                10.335714285714287,
                500.12604198863295,
                990.7775675675675,
                1000.6
            ]
        );
        assert_eq!(t.cdf(100.0), 0.09809512722638315);
        assert_eq!(t.cdf(500.0), 0.4998724193951576);
    }

    #[test]
    fn empty_digest_answers_nan() {
        let mut t = TDigest::new(100).unwrap();
        assert!(t.cdf(1.0).is_nan());
        assert!(t.quantile(0.5).is_nan());
        assert!(t.trimmed_mean(0.1, 0.9).is_nan());
        t.add(5.0, 1).unwrap();
        assert_eq!(t.quantile(0.5), 5.0);
        assert_eq!(t.cdf(5.0), 0.5);
    }

    /// The library's batch walk as written before the search replaced it:
    /// one pass over the centroids carrying its position between quantiles.
    fn walked_batch(t: &TDigest, qs: &[f64]) -> Vec<f64> {
        let n = t.merged_nodes;
        let (means, weights) = (&t.means, &t.weights);
        let merged = t.merged_weight as f64;
        let left_weight = weights[0] as f64;
        let mut so_far = left_weight / 2.0;
        let mut i = 0usize;
        let mut out = Vec::new();
        'next: for q in qs {
            let index = q * merged;
            if left_weight > 1.0 && index < left_weight / 2.0 {
                out.push(t.min + (index - 1.0) / (left_weight / 2.0 - 1.0) * (means[0] - t.min));
                continue;
            }
            if index > (t.merged_weight - 1) as f64 {
                out.push(t.max);
                continue;
            }
            let right_weight = weights[n - 1] as f64;
            let right_mean = means[n - 1];
            if right_weight > 1.0 && merged - index <= right_weight / 2.0 {
                out.push(
                    t.max
                        - (merged - index - 1.0) / (right_weight / 2.0 - 1.0)
                            * (t.max - right_mean),
                );
                continue;
            }
            while i < n - 1 {
                let (w, w_next) = (weights[i] as f64, weights[i + 1] as f64);
                let (m, m_next) = (means[i], means[i + 1]);
                let dw = (w + w_next) / 2.0;
                if so_far + dw > index {
                    let mut left_unit = 0.0;
                    if w == 1.0 {
                        if index - so_far < 0.5 {
                            out.push(m);
                            continue 'next;
                        }
                        left_unit = 0.5;
                    }
                    let mut right_unit = 0.0;
                    if w_next == 1.0 {
                        if so_far + dw - index <= 0.5 {
                            out.push(m_next);
                            continue 'next;
                        }
                        right_unit = 0.5;
                    }
                    let z1 = index - so_far - left_unit;
                    let z2 = so_far + dw - index - right_unit;
                    out.push(weighted_average(m, z2, m_next, z1));
                    continue 'next;
                }
                so_far += dw;
                i += 1;
            }
            let z1 = index - merged - right_weight / 2.0;
            let z2 = right_weight / 2.0 - z1;
            out.push(weighted_average(right_mean, z1, t.max, z2));
        }
        out
    }

    proptest! {
        /// Quantiles stay near the exact ones, CDF is monotone, and a merge
        /// of two digests answers close to a digest of the union.
        #[test]
        fn quantiles_are_close(values in proptest::collection::vec(-1000i32..1000, 50..2000)) {
            let mut t = TDigest::new(100).unwrap();
            let mut a = TDigest::new(100).unwrap();
            let mut b = TDigest::new(100).unwrap();
            for (i, v) in values.iter().enumerate() {
                t.add(f64::from(*v), 1).unwrap();
                if i % 2 == 0 { a.add(f64::from(*v), 1).unwrap() } else { b.add(f64::from(*v), 1).unwrap() }
            }
            let mut sorted = values.clone();
            sorted.sort();
            let n = sorted.len();
            for q in [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99] {
                let est = t.quantile(q);
                // The estimate's rank is within a few percent of the target.
                let rank = sorted.iter().filter(|x| f64::from(**x) < est).count() as f64;
                let hi = sorted.iter().filter(|x| f64::from(**x) <= est).count() as f64;
                let target = q * n as f64;
                let slack = 0.03 * n as f64 + 2.0;
                prop_assert!(rank - slack <= target && target <= hi + slack,
                    "q {} est {} rank {}..{} of {}", q, est, rank, hi, n);
            }
            let mut last = 0.0;
            for x in -1005..1005 {
                let c = t.cdf(f64::from(x));
                prop_assert!(c >= last);
                last = c;
            }
            a.merge_from(&mut b).unwrap();
            // The search answers as the walk did, for an ascending batch of
            // every kind of position (singletons, merged centroids of
            // several weights after the merge, both tails).
            let qs: Vec<f64> = (0..=1000).map(|i| f64::from(i) / 1000.0).collect();
            for d in [&mut t, &mut a] {
                d.compress().unwrap();
                let want = walked_batch(d, &qs);
                let got = d.quantiles_sorted(&qs);
                for (k, q) in qs.iter().enumerate() {
                    prop_assert_eq!(got[k].to_bits(), want[k].to_bits(), "q {}", q);
                }
            }
            for q in [0.1, 0.5, 0.9] {
                let (x, y) = (a.quantile(q), t.quantile(q));
                prop_assert!((x - y).abs() <= 2000.0 * 0.05, "q {} merged {} whole {}", q, x, y);
            }
        }
    }
}
