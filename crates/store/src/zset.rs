//! Sorted sets. Small ones are a `Packed` of (member, score) pairs in score
//! order (`Value::ZSetPacked`) within `zset-max-listpack-entries` and
//! `zset-max-listpack-value`; larger ones a `ZSetIndex` (`Value::ZSet`,
//! reported as Redis's skiplist).
//!
//! Every range query is answered as an interval of ascending ranks: a score or
//! lex range becomes `[first, end)` by counting the members below each bound,
//! and the rank interval is then walked in either direction. The commands
//! (ZRANGE in all its forms, ZCOUNT, ZREMRANGEBY*, ...) build on that.
//!
//! The general form is a treap (a binary search tree kept balanced by random
//! heap priorities) over (score, member), with subtree sizes for O(log n) rank
//! and select, stored in a dense `Vec` arena addressed by `u32`. A hash table of
//! arena indexes finds a member's node; members are stored once, in the node.
//! It lives in `zset::treap`, which knows nothing of `Value`; this module holds the
//! operations on sorted-set values, whichever their encoding.

pub(crate) mod treap;

use crate::limits::CompactLimits;
use crate::packed::{Elem, Packed, Put};
use crate::value::Value;
use std::cmp::Ordering;
pub use treap::ZSetIndex;
use treap::{key_cmp, member_hash};

// ---------------------------------------------------------------------------
// Ranges
// ---------------------------------------------------------------------------

/// One end of a score range: `(5` is exclusive, `5` inclusive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreBound {
    pub value: f64,
    pub exclusive: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    pub min: ScoreBound,
    pub max: ScoreBound,
}

impl ScoreBound {
    /// Redis's syntax: an optional `(` then a float (`inf`, `-inf` allowed).
    pub fn parse(s: &[u8]) -> Option<ScoreBound> {
        let (exclusive, num) = match s.split_first() {
            Some((b'(', rest)) => (true, rest),
            _ => (false, s),
        };
        // Redis reads bounds with a bare strtod: leading spaces are skipped and
        // an empty number reads as 0.
        let start = num
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(num.len());
        let num = &num[start..];
        let value = if num.is_empty() {
            0.0
        } else {
            crate::num::parse_f64(num)?
        };
        Some(ScoreBound { value, exclusive })
    }
}

impl ScoreRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        Some(ScoreRange {
            min: ScoreBound::parse(min)?,
            max: ScoreBound::parse(max)?,
        })
    }

    fn below_min(&self, score: f64) -> bool {
        if self.min.exclusive {
            score <= self.min.value
        } else {
            score < self.min.value
        }
    }

    fn not_above_max(&self, score: f64) -> bool {
        if self.max.exclusive {
            score < self.max.value
        } else {
            score <= self.max.value
        }
    }
}

/// One end of a lex range: `-`, `+`, `[member` or `(member`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LexBound {
    NegInf,
    PosInf,
    Incl(Vec<u8>),
    Excl(Vec<u8>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

impl LexBound {
    pub fn parse(s: &[u8]) -> Option<LexBound> {
        match s.split_first() {
            Some((b'-', [])) => Some(LexBound::NegInf),
            Some((b'+', [])) => Some(LexBound::PosInf),
            Some((b'[', rest)) => Some(LexBound::Incl(rest.to_vec())),
            Some((b'(', rest)) => Some(LexBound::Excl(rest.to_vec())),
            _ => None,
        }
    }
}

impl LexRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Option<LexRange> {
        Some(LexRange {
            min: LexBound::parse(min)?,
            max: LexBound::parse(max)?,
        })
    }

    fn below_min(&self, m: &[u8]) -> bool {
        match &self.min {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(b) => m < b.as_slice(),
            LexBound::Excl(b) => m <= b.as_slice(),
        }
    }

    fn not_above_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(b) => m <= b.as_slice(),
            LexBound::Excl(b) => m < b.as_slice(),
        }
    }
}

// ---------------------------------------------------------------------------
// The packed form
// ---------------------------------------------------------------------------

/// The decimal text of an integer member, without allocating.
fn int_text(i: i64, buf: &mut [u8; 20]) -> &[u8] {
    let neg = i < 0;
    let mut u = i.unsigned_abs();
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    if neg {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

fn with_member<R>(e: Elem<'_>, f: impl FnOnce(&[u8]) -> R) -> R {
    match e {
        Elem::Bytes(b) => f(b),
        Elem::Int(i) => f(int_text(i, &mut [0u8; 20])),
        Elem::Float(_) => f(&e.to_vec()),
    }
}

/// The (member, score) pairs of a packed sorted set, in order.
fn packed_pairs(p: &Packed) -> impl Iterator<Item = (Elem<'_>, f64)> + '_ {
    let mut it = p.iter();
    std::iter::from_fn(move || {
        let m = it.next()?;
        let s = it.next()?.as_f64().unwrap_or(0.0);
        Some((m, s))
    })
}

fn packed_find(p: &Packed, member: &[u8]) -> Option<(usize, f64)> {
    packed_pairs(p)
        .enumerate()
        .find(|(_, (m, _))| m.eq_bytes(member))
        .map(|(i, (_, s))| (i, s))
}

/// Pair index where (score, member) belongs.
fn packed_position(p: &Packed, member: &[u8], score: f64) -> usize {
    packed_pairs(p)
        .take_while(|&(m, s)| with_member(m, |mb| key_cmp(s, mb, score, member)) == Ordering::Less)
        .count()
}

fn packed_insert(p: &mut Packed, member: &[u8], score: f64) {
    let at = packed_position(p, member, score);
    p.splice(2 * at, 0, &[Put::Bytes(member), Put::Float(score)]);
}

fn packed_to_index(p: &Packed) -> ZSetIndex {
    let mut z = ZSetIndex::new();
    z.nodes.reserve(p.len() / 2 + 1);
    for (m, s) in packed_pairs(p) {
        with_member(m, |mb| z.insert_new(mb, s));
    }
    z
}

// ---------------------------------------------------------------------------
// Operations on a sorted-set `Value`, whatever its encoding. Values of other
// types behave as an empty set; handlers check the type first.
// ---------------------------------------------------------------------------

/// ZADD's conditions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddFlags {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
    pub incr: bool,
}

/// What one ZADD element did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AddOutcome {
    Added(f64),
    /// The score changed to this one.
    Updated(f64),
    /// The member was there with this score and it stays.
    Unchanged(f64),
    /// NX/XX/GT/LT prevented the change.
    Skipped,
    /// INCR would have produced NaN; nothing changed.
    NotANumber,
}

/// An empty sorted set in the encoding Redis picks for `size_hint` members
/// whose longest is `max_member_len` bytes.
pub fn create(size_hint: usize, max_member_len: usize, limits: &CompactLimits) -> Value {
    if size_hint <= limits.zset_entries
        && max_member_len <= limits.zset_value
        && limits.zset_entries > 0
    {
        Value::ZSetPacked(Packed::new())
    } else {
        Value::ZSet(Box::default())
    }
}

/// A sorted set holding `pairs` (distinct members), in the encoding its size calls for.
pub fn from_pairs(pairs: &[(Vec<u8>, f64)], limits: &CompactLimits) -> Value {
    let max_len = pairs.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
    let mut v = create(pairs.len(), max_len, limits);
    match &mut v {
        Value::ZSet(z) => {
            z.nodes.reserve(pairs.len());
            for (m, s) in pairs {
                z.set(m, *s);
            }
        }
        Value::ZSetPacked(p) => {
            let mut sorted: Vec<&(Vec<u8>, f64)> = pairs.iter().collect();
            sorted.sort_by(|a, b| key_cmp(a.1, &a.0, b.1, &b.0));
            let puts: Vec<Put<'_>> = sorted
                .iter()
                .flat_map(|(m, s)| [Put::Bytes(m), Put::Float(*s)])
                .collect();
            *p = Packed::from_elems(&puts);
        }
        _ => {}
    }
    v
}

/// Move a packed sorted set to the general form, for good (Redis's SORT
/// converts every sorted set it reads this way). Other values are left alone.
pub fn convert_to_index(v: &mut Value) {
    if let Value::ZSetPacked(p) = v {
        *v = Value::ZSet(Box::new(packed_to_index(p)));
    }
}

pub fn len(v: &Value) -> usize {
    match v {
        Value::ZSetPacked(p) => packed_pairs(p).count(),
        Value::ZSet(z) => z.len(),
        _ => 0,
    }
}

pub fn score(v: &Value, member: &[u8]) -> Option<f64> {
    match v {
        Value::ZSetPacked(p) => packed_find(p, member).map(|(_, s)| s),
        Value::ZSet(z) => z.score(member),
        _ => None,
    }
}

/// Ascending rank (0-based) of a member, and its score.
pub fn rank(v: &Value, member: &[u8]) -> Option<(usize, f64)> {
    match v {
        Value::ZSetPacked(p) => packed_find(p, member),
        Value::ZSet(z) => z.rank(member),
        _ => None,
    }
}

/// The ascending-rank interval `[first, end)` of the members whose scores are in `range`.
pub fn score_span(v: &Value, range: &ScoreRange) -> (usize, usize) {
    let (first, end) = match v {
        Value::ZSetPacked(p) => (
            packed_pairs(p).filter(|&(_, s)| range.below_min(s)).count(),
            packed_pairs(p)
                .filter(|&(_, s)| range.not_above_max(s))
                .count(),
        ),
        Value::ZSet(z) => (
            z.count_prefix(|n| range.below_min(n.score)),
            z.count_prefix(|n| range.not_above_max(n.score)),
        ),
        _ => (0, 0),
    };
    (first, end.max(first))
}

/// The ascending-rank interval of the members in a lex range (meaningful when
/// all scores are equal, as in Redis).
pub fn lex_span(v: &Value, range: &LexRange) -> (usize, usize) {
    let (first, end) = match v {
        Value::ZSetPacked(p) => (
            packed_pairs(p)
                .take_while(|&(m, _)| with_member(m, |mb| range.below_min(mb)))
                .count(),
            packed_pairs(p)
                .take_while(|&(m, _)| with_member(m, |mb| range.not_above_max(mb)))
                .count(),
        ),
        Value::ZSet(z) => (
            z.count_prefix(|n| range.below_min(n.member.as_slice())),
            z.count_prefix(|n| range.not_above_max(n.member.as_slice())),
        ),
        _ => (0, 0),
    };
    (first, end.max(first))
}

/// Call `f` for the members at ascending ranks `[start, end)`, in ascending
/// order, or in descending order (from `end - 1` down to `start`) when `rev`.
pub fn for_each_in(v: &Value, start: usize, end: usize, rev: bool, mut f: impl FnMut(&[u8], f64)) {
    let end = end.min(len(v));
    if start >= end {
        return;
    }
    let count = end - start;
    match v {
        Value::ZSetPacked(p) => {
            if rev {
                let pairs: Vec<(Elem<'_>, f64)> = packed_pairs(p).skip(start).take(count).collect();
                for &(m, s) in pairs.iter().rev() {
                    with_member(m, |mb| f(mb, s));
                }
            } else {
                for (m, s) in packed_pairs(p).skip(start).take(count) {
                    with_member(m, |mb| f(mb, s));
                }
            }
        }
        Value::ZSet(z) => {
            let from = if rev { end - 1 } else { start };
            for (m, s) in z.iter_from(from, rev).take(count) {
                f(m, s);
            }
        }
        _ => {}
    }
}

/// Call `f` for the members whose scores are in `range`, in ascending order
/// (one descent to the first; the geo searches walk many small ranges).
pub fn for_each_in_scores(v: &Value, range: &ScoreRange, mut f: impl FnMut(&[u8], f64)) {
    match v {
        Value::ZSetPacked(p) => {
            for (m, s) in packed_pairs(p) {
                if range.below_min(s) {
                    continue;
                }
                if !range.not_above_max(s) {
                    break;
                }
                with_member(m, |mb| f(mb, s));
            }
        }
        Value::ZSet(z) => {
            for (m, s) in z.iter_after(|n| range.below_min(n.score)) {
                if !range.not_above_max(s) {
                    break;
                }
                f(m, s);
            }
        }
        _ => {}
    }
}

/// The members at ascending ranks `[start, end)`, see [`for_each_in`].
pub fn range(v: &Value, start: usize, end: usize, rev: bool) -> Vec<(Vec<u8>, f64)> {
    let mut out = Vec::with_capacity(end.saturating_sub(start).min(1024));
    for_each_in(v, start, end, rev, |m, s| out.push((m.to_vec(), s)));
    out
}

/// Every member in ascending order.
pub fn to_vec(v: &Value) -> Vec<(Vec<u8>, f64)> {
    range(v, 0, usize::MAX, false)
}

/// The member at position `i` of some fixed order (for uniform random picks).
pub fn pick(v: &Value, i: usize) -> Option<(Vec<u8>, f64)> {
    match v {
        Value::ZSetPacked(p) => packed_pairs(p)
            .nth(i)
            .map(|(m, s)| (with_member(m, <[u8]>::to_vec), s)),
        Value::ZSet(z) => z.slot(i).map(|(m, s)| (m.to_vec(), s)),
        _ => None,
    }
}

/// ZADD / ZINCRBY for one element. Converts to the general form when the set
/// outgrows `limits`.
pub fn add(
    v: &mut Value,
    member: &[u8],
    score: f64,
    flags: AddFlags,
    limits: &CompactLimits,
) -> AddOutcome {
    // Redis stores -0 as 0 (its listpack writes the text "0").
    let score = if score == 0.0 { 0.0 } else { score };
    let current = self::score(v, member);
    let new_score = match current {
        Some(cur) => {
            if flags.nx {
                return AddOutcome::Skipped;
            }
            let new_score = if flags.incr { cur + score } else { score };
            if new_score.is_nan() {
                return AddOutcome::NotANumber;
            }
            if (flags.gt && new_score <= cur) || (flags.lt && new_score >= cur) {
                return AddOutcome::Skipped;
            }
            if new_score == cur {
                return AddOutcome::Unchanged(cur);
            }
            new_score
        }
        None => {
            if flags.xx {
                return AddOutcome::Skipped;
            }
            score
        }
    };
    if let Value::ZSetPacked(p) = v {
        let grows = current.is_none();
        let count = packed_pairs(p).count();
        if grows && (count + 1 > limits.zset_entries || member.len() > limits.zset_value) {
            *v = Value::ZSet(Box::new(packed_to_index(p)));
        }
    }
    match v {
        Value::ZSetPacked(p) => {
            if let Some((i, _)) = packed_find(p, member) {
                p.splice(2 * i, 2, &[]);
            }
            packed_insert(p, member, new_score);
        }
        Value::ZSet(z) => {
            z.set(member, new_score);
        }
        _ => return AddOutcome::Skipped,
    }
    if current.is_some() {
        AddOutcome::Updated(new_score)
    } else {
        AddOutcome::Added(new_score)
    }
}

/// Remove a member; true if it was there.
pub fn remove(v: &mut Value, member: &[u8]) -> bool {
    match v {
        Value::ZSetPacked(p) => match packed_find(p, member) {
            Some((i, _)) => {
                p.splice(2 * i, 2, &[]);
                true
            }
            None => false,
        },
        Value::ZSet(z) => z.remove(member).is_some(),
        _ => false,
    }
}

/// Remove the members at ascending ranks `[start, end)`; returns how many.
pub fn remove_span(v: &mut Value, start: usize, end: usize) -> usize {
    let end = end.min(len(v));
    if start >= end {
        return 0;
    }
    match v {
        Value::ZSetPacked(p) => {
            p.splice(2 * start, 2 * (end - start), &[]);
        }
        Value::ZSet(z) => {
            let doomed: Vec<Vec<u8>> = z
                .iter_from(start, false)
                .take(end - start)
                .map(|(m, _)| m.to_vec())
                .collect();
            for m in doomed {
                z.remove(&m);
            }
        }
        _ => return 0,
    }
    end - start
}

/// Remove and return up to `count` members with the lowest scores (or the
/// highest when `max`), in pop order.
pub fn pop(v: &mut Value, max: bool, count: usize) -> Vec<(Vec<u8>, f64)> {
    let n = len(v);
    let count = count.min(n);
    let out = if max {
        range(v, n - count, n, true)
    } else {
        range(v, 0, count, false)
    };
    match v {
        Value::ZSetPacked(p) => {
            let at = if max { n - count } else { 0 };
            p.splice(2 * at, 2 * count, &[]);
        }
        Value::ZSet(z) => {
            for (m, _) in &out {
                z.remove(m);
            }
        }
        _ => {}
    }
    out
}

/// One ZSCAN step: members (with scores) from `cursor` on, at least `count`
/// when that many remain, and the cursor to continue from (0 when done). A
/// packed set is returned whole. The general form walks members in the order
/// of a fixed hash of their bytes, so a member present for the whole scan is
/// returned exactly once whatever is added or removed meanwhile. Each step
/// is linear in the set's size.
pub fn scan(v: &Value, cursor: u64, count: usize, out: &mut Vec<(Vec<u8>, f64)>) -> u64 {
    match v {
        Value::ZSetPacked(_) => {
            if cursor == 0 {
                out.extend(to_vec(v));
            }
            0
        }
        Value::ZSet(z) => {
            let Ok(from) = u32::try_from(cursor) else {
                return 0;
            };
            let mut cand: Vec<(u32, u32)> = z
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (member_hash(n.member.as_slice()) as u32, i as u32))
                .filter(|&(h, _)| h >= from)
                .collect();
            let count = count.max(1);
            let boundary = if cand.len() <= count {
                None
            } else {
                cand.select_nth_unstable_by_key(count - 1, |c| c.0);
                Some(cand[count - 1].0)
            };
            for &(h, i) in &cand {
                if boundary.is_none_or(|b| h <= b) {
                    if let Some((m, s)) = z.slot(i as usize) {
                        out.push((m.to_vec(), s));
                    }
                }
            }
            boundary.and_then(|b| b.checked_add(1)).map_or(0, u64::from)
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn limits(entries: usize, value: usize) -> CompactLimits {
        CompactLimits {
            zset_entries: entries,
            zset_value: value,
            ..CompactLimits::default()
        }
    }

    fn plain() -> AddFlags {
        AddFlags::default()
    }

    proptest! {
        /// Walking a score range member by member gives what the rank
        /// interval of that range holds, in both encodings.
        #[test]
        fn score_walk_matches_the_rank_interval(
            scores in prop::collection::vec(0u8..40, 0..300),
            lo in 0u8..45, width in 0u8..20, lo_ex in any::<bool>(), hi_ex in any::<bool>(),
            packed in any::<bool>(),
        ) {
            let l = if packed { limits(1000, 64) } else { limits(0, 64) };
            let mut v = create(scores.len(), 8, &l);
            for (i, sc) in scores.iter().enumerate() {
                add(&mut v, format!("m{i}").as_bytes(), f64::from(*sc), plain(), &l);
            }
            let range = ScoreRange {
                min: ScoreBound { value: f64::from(lo), exclusive: lo_ex },
                max: ScoreBound { value: f64::from(lo) + f64::from(width), exclusive: hi_ex },
            };
            let (a, b) = score_span(&v, &range);
            let expected = range_of(&v, a, b);
            let mut got = Vec::new();
            for_each_in_scores(&v, &range, |m, s| got.push((m.to_vec(), s)));
            prop_assert_eq!(got, expected);
        }
    }

    fn range_of(v: &Value, a: usize, b: usize) -> Vec<(Vec<u8>, f64)> {
        range(v, a, b, false)
    }

    #[test]
    fn converts_past_the_entry_limit_and_keeps_order() {
        let l = limits(3, 64);
        let mut v = create(1, 1, &l);
        for (m, s) in [("c", 3.0), ("a", 1.0), ("b", 2.0)] {
            assert_eq!(
                add(&mut v, m.as_bytes(), s, plain(), &l),
                AddOutcome::Added(s)
            );
        }
        assert!(matches!(v, Value::ZSetPacked(_)));
        add(&mut v, b"d", 0.5, plain(), &l);
        assert!(matches!(v, Value::ZSet(_)));
        let all: Vec<_> = to_vec(&v).into_iter().map(|(m, _)| m).collect();
        assert_eq!(
            all,
            vec![b"d".to_vec(), b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
        assert_eq!(rank(&v, b"b"), Some((2, 2.0)));
    }

    #[test]
    fn long_member_converts() {
        let l = limits(128, 4);
        let mut v = create(1, 1, &l);
        add(&mut v, b"abcd", 1.0, plain(), &l);
        assert!(matches!(v, Value::ZSetPacked(_)));
        add(&mut v, b"abcde", 1.0, plain(), &l);
        assert!(matches!(v, Value::ZSet(_)));
    }

    #[test]
    fn integer_members_sort_as_text() {
        let l = limits(128, 64);
        let mut v = create(1, 1, &l);
        for m in ["10", "9", "-1", "a"] {
            add(&mut v, m.as_bytes(), 0.0, plain(), &l);
        }
        let all: Vec<_> = to_vec(&v).into_iter().map(|(m, _)| m).collect();
        assert_eq!(
            all,
            vec![b"-1".to_vec(), b"10".to_vec(), b"9".to_vec(), b"a".to_vec()]
        );
    }

    #[test]
    fn flags() {
        let l = limits(128, 64);
        let mut v = create(1, 1, &l);
        let f = |nx, xx, gt, lt, incr| AddFlags {
            nx,
            xx,
            gt,
            lt,
            incr,
        };
        assert_eq!(
            add(&mut v, b"a", 1.0, f(false, true, false, false, false), &l),
            AddOutcome::Skipped
        );
        assert_eq!(add(&mut v, b"a", 1.0, plain(), &l), AddOutcome::Added(1.0));
        assert_eq!(
            add(&mut v, b"a", 5.0, f(true, false, false, false, false), &l),
            AddOutcome::Skipped
        );
        assert_eq!(
            add(&mut v, b"a", 0.0, f(false, false, true, false, false), &l),
            AddOutcome::Skipped
        );
        assert_eq!(
            add(&mut v, b"a", 3.0, f(false, false, true, false, false), &l),
            AddOutcome::Updated(3.0)
        );
        assert_eq!(
            add(&mut v, b"a", 2.0, f(false, false, false, false, true), &l),
            AddOutcome::Updated(5.0)
        );
        assert_eq!(
            add(&mut v, b"a", 5.0, plain(), &l),
            AddOutcome::Unchanged(5.0)
        );
        let mut inf = create(1, 1, &l);
        add(&mut inf, b"x", f64::INFINITY, plain(), &l);
        assert_eq!(
            add(
                &mut inf,
                b"x",
                f64::NEG_INFINITY,
                f(false, false, false, false, true),
                &l
            ),
            AddOutcome::NotANumber
        );
    }

    #[test]
    fn scan_returns_each_member_once() {
        let l = limits(4, 64);
        let mut v = create(100, 1, &l);
        for i in 0..100 {
            add(
                &mut v,
                format!("m{i}").as_bytes(),
                f64::from(i),
                plain(),
                &l,
            );
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut calls = 0;
        loop {
            let mut out = Vec::new();
            cursor = scan(&v, cursor, 7, &mut out);
            calls += 1;
            for (m, _) in out {
                assert!(seen.insert(m), "returned twice");
            }
            // Removing members as the scan goes must not hide the others.
            remove(&mut v, format!("m{}", calls * 3).as_bytes());
            if cursor == 0 {
                break;
            }
        }
        assert!(calls > 5);
        for i in 0..100 {
            let m = format!("m{i}").into_bytes();
            if score(&v, &m).is_some() {
                assert!(seen.contains(&m), "missed m{i}");
            }
        }
    }

    #[test]
    fn parses_ranges() {
        assert_eq!(
            ScoreBound::parse(b"(1.5"),
            Some(ScoreBound {
                value: 1.5,
                exclusive: true
            })
        );
        assert_eq!(
            ScoreBound::parse(b"-inf").map(|b| b.value),
            Some(f64::NEG_INFINITY)
        );
        assert_eq!(
            ScoreBound::parse(b"("),
            Some(ScoreBound {
                value: 0.0,
                exclusive: true
            })
        );
        assert_eq!(ScoreBound::parse(b" 2").map(|b| b.value), Some(2.0));
        assert_eq!(ScoreBound::parse(b"2 "), None);
        assert_eq!(ScoreBound::parse(b"-"), None);
        assert_eq!(ScoreBound::parse(b"nan"), None);
        assert_eq!(LexBound::parse(b"[a"), Some(LexBound::Incl(b"a".to_vec())));
        assert_eq!(LexBound::parse(b"+"), Some(LexBound::PosInf));
        assert_eq!(LexBound::parse(b"a"), None);
        assert_eq!(LexBound::parse(b""), None);
        assert_eq!(LexBound::parse(b"++"), None);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add(u8, i8, bool, bool, bool, bool, bool),
        Remove(u8),
        Pop(bool, u8),
        RemoveSpan(u8, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..40, -6i8..6, any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>())
                .prop_map(|(m, s, nx, xx, gt, lt, incr)| Op::Add(m, s, nx && !xx, xx, gt && !lt, lt && !nx, incr)),
            2 => (0u8..40).prop_map(Op::Remove),
            1 => (any::<bool>(), 0u8..4).prop_map(|(m, c)| Op::Pop(m, c)),
            1 => (0u8..10, 0u8..10).prop_map(|(a, b)| Op::RemoveSpan(a, b)),
        ]
    }

    /// Members of a few lengths so the value limit is crossed too; integers
    /// exercise the packed integer form.
    fn member(m: u8) -> Vec<u8> {
        match m % 4 {
            0 => m.to_string().into_bytes(),
            1 => format!("m{m}").into_bytes(),
            2 => format!("member-{m}").into_bytes(),
            _ => vec![b'a' + (m % 26)],
        }
    }

    fn key(score: f64, m: &[u8]) -> (i64, Vec<u8>) {
        ((score * 4.0) as i64, m.to_vec())
    }

    proptest! {
        #[test]
        fn matches_a_btree_model(
            ops in proptest::collection::vec(op(), 1..150),
            entries in 0usize..8,
        ) {
            let l = limits(entries, 7);
            let mut v = create(1, 1, &l);
            let mut scores: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
            let mut order: BTreeSet<(i64, Vec<u8>)> = BTreeSet::new();
            for op in ops {
                match op {
                    Op::Add(m, s, nx, xx, gt, lt, incr) => {
                        let m = member(m);
                        let s = f64::from(s) / 2.0;
                        let flags = AddFlags { nx, xx, gt, lt, incr };
                        let got = add(&mut v, &m, s, flags, &l);
                        let cur = scores.get(&m).copied();
                        let want = match cur {
                            Some(_) if nx => AddOutcome::Skipped,
                            Some(c) => {
                                let n = if incr { c + s } else { s };
                                if (gt && n <= c) || (lt && n >= c) {
                                    AddOutcome::Skipped
                                } else if n == c {
                                    AddOutcome::Unchanged(c)
                                } else {
                                    AddOutcome::Updated(n)
                                }
                            }
                            None if xx => AddOutcome::Skipped,
                            None => AddOutcome::Added(s),
                        };
                        prop_assert_eq!(got, want);
                        if let AddOutcome::Added(n) | AddOutcome::Updated(n) = want {
                            if let Some(c) = cur {
                                order.remove(&key(c, &m));
                            }
                            scores.insert(m.clone(), n);
                            order.insert(key(n, &m));
                        }
                    }
                    Op::Remove(m) => {
                        let m = member(m);
                        let was = scores.remove(&m);
                        if let Some(c) = was {
                            order.remove(&key(c, &m));
                        }
                        prop_assert_eq!(remove(&mut v, &m), was.is_some());
                    }
                    Op::Pop(max, c) => {
                        let got = pop(&mut v, max, usize::from(c));
                        let mut want = Vec::new();
                        for _ in 0..c {
                            let k = if max { order.pop_last() } else { order.pop_first() };
                            if let Some(k) = k {
                                let s = scores.remove(&k.1).unwrap_or(0.0);
                                want.push((k.1, s));
                            }
                        }
                        prop_assert_eq!(got, want);
                    }
                    Op::RemoveSpan(a, b) => {
                        let (a, b) = (usize::from(a), usize::from(b));
                        let doomed: Vec<_> = order.iter().skip(a).take(b.saturating_sub(a)).cloned().collect();
                        prop_assert_eq!(remove_span(&mut v, a, b), doomed.len());
                        for k in doomed {
                            order.remove(&k);
                            scores.remove(&k.1);
                        }
                    }
                }
                let n = scores.len();
                prop_assert_eq!(len(&v), n);
                if let Value::ZSet(z) = &v {
                    z.check_tree();
                }
                let too_long = scores.keys().any(|m| m.len() > 7);
                if n > entries || too_long {
                    prop_assert!(matches!(v, Value::ZSet(_)), "should have converted");
                }
                let all = to_vec(&v);
                let want: Vec<(Vec<u8>, f64)> =
                    order.iter().map(|(_, m)| (m.clone(), scores[m])).collect();
                prop_assert_eq!(&all, &want);
                for (i, (m, s)) in want.iter().enumerate() {
                    prop_assert_eq!(rank(&v, m), Some((i, *s)));
                    prop_assert_eq!(score(&v, m), Some(*s));
                }
                // Ranges in both directions from every start.
                for start in 0..=n {
                    let fwd = range(&v, start, n, false);
                    prop_assert_eq!(&fwd[..], &want[start..]);
                    let back = range(&v, 0, start, true);
                    let mut exp = want[..start].to_vec();
                    exp.reverse();
                    prop_assert_eq!(back, exp);
                }
                for (lo, hi, ex) in [(-1.0, 1.0, false), (0.0, 0.0, true), (-3.0, 2.5, true)] {
                    let r = ScoreRange {
                        min: ScoreBound { value: lo, exclusive: ex },
                        max: ScoreBound { value: hi, exclusive: false },
                    };
                    let (a, b) = score_span(&v, &r);
                    let inside = want
                        .iter()
                        .filter(|(_, s)| (if ex { *s > lo } else { *s >= lo }) && *s <= hi)
                        .count();
                    prop_assert_eq!(b - a, inside);
                    for (m, s) in range(&v, a, b, false) {
                        prop_assert!(r.min.value <= s && s <= hi, "{:?} {}", m, s);
                    }
                }
                let lr = LexRange { min: LexBound::Excl(b"1".to_vec()), max: LexBound::Incl(b"m3".to_vec()) };
                let (a, b) = lex_span(&v, &lr);
                prop_assert!(a <= b && b <= n);
                for i in 0..n {
                    prop_assert!(pick(&v, i).is_some());
                }
                prop_assert!(pick(&v, n).is_none());
            }
        }
    }
}
