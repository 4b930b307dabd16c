//! Lists. Small lists are a `Packed` of elements (`Value::ListPacked`)
//! within `list-max-listpack-size`; longer ones a `ListDeque`
//! (`Value::List`, reported as Redis's quicklist).
//!
//! Every operation here takes the `Value` of a key that holds a list (callers
//! check [`is_list`] first and report WRONGTYPE themselves); given any other
//! value they change nothing and behave as for an empty list. A list that
//! becomes empty is left empty: deleting the key is the caller's job, as it
//! owns the table.
//!
//! Conversion is one way: a packed list that would outgrow the limit becomes a
//! deque before the change is applied, and never goes back, as Redis 7.2 does
//! for lists growing past a single listpack.
//!
//! `ListDeque` itself is in `list::deque`, which knows nothing of `Value`.

pub(crate) mod deque;

use crate::bytes::CompactBytes;
use crate::limits::CompactLimits;
use crate::packed::{Elem, Packed, Put};
use crate::value::Value;
pub use deque::ListDeque;
use std::collections::VecDeque;

/// Which end of a list an operation works on (LEFT is the head, index 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Left,
    Right,
}

impl End {
    /// `LEFT` or `RIGHT`, in any case.
    pub fn parse(word: &[u8]) -> Option<End> {
        if word.eq_ignore_ascii_case(b"LEFT") {
            Some(End::Left)
        } else if word.eq_ignore_ascii_case(b"RIGHT") {
            Some(End::Right)
        } else {
            None
        }
    }
}

/// Redis's fixed size ceiling for a node when the limit counts elements.
const COUNT_MODE_MAX_BYTES: usize = 8192;

/// Whether a packed list of `bytes` encoded bytes and `count()` elements
/// stays within `list-max-listpack-size` (Redis's node limit: positive counts
/// elements, 0 means one, -1..-5 allow 4..64 KiB and lower values 64 KiB).
/// The count is only taken when the limit is a count: it costs a scan.
fn fits(limits: &CompactLimits, bytes: usize, count: impl FnOnce() -> usize) -> bool {
    let fill = limits.list_size;
    if fill >= 0 {
        let max = usize::try_from(fill).unwrap_or(usize::MAX).max(1);
        bytes <= COUNT_MODE_MAX_BYTES && count() <= max
    } else {
        let level = (fill.unsigned_abs() - 1).min(4);
        bytes <= 4096usize << level
    }
}

/// A new, empty list in its compact form, to push into.
pub fn new_value() -> Value {
    Value::ListPacked(Packed::new())
}

pub fn is_list(v: &Value) -> bool {
    matches!(v, Value::ListPacked(_) | Value::List(_))
}

pub fn len(v: &Value) -> usize {
    match v {
        Value::ListPacked(p) => p.len(),
        Value::List(d) => d.len(),
        _ => 0,
    }
}

pub fn is_empty(v: &Value) -> bool {
    match v {
        Value::ListPacked(p) => p.is_empty(),
        Value::List(d) => d.is_empty(),
        _ => true,
    }
}

fn put_of(e: Elem<'_>) -> Put<'_> {
    match e {
        Elem::Bytes(b) => Put::Bytes(b),
        Elem::Int(i) => Put::Int(i),
        Elem::Float(f) => Put::Float(f),
    }
}

/// Run `f` on the element's bytes (integers in decimal) without allocating.
fn with_elem<R>(e: Elem<'_>, f: impl FnOnce(&[u8]) -> R) -> R {
    match e {
        Elem::Bytes(b) => f(b),
        Elem::Int(i) => {
            let mut buf = [0u8; 20];
            let n = format_i64(i, &mut buf);
            f(&buf[20 - n..])
        }
        Elem::Float(_) => f(&e.to_vec()),
    }
}

/// Write `i` in decimal at the end of `buf`; returns how many bytes it took.
fn format_i64(i: i64, buf: &mut [u8; 20]) -> usize {
    let mut n = i.unsigned_abs();
    let mut pos = 20;
    loop {
        pos -= 1;
        buf[pos] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        pos -= 1;
        buf[pos] = b'-';
    }
    20 - pos
}

fn into_vec(c: CompactBytes) -> Vec<u8> {
    match c {
        CompactBytes::Boxed(b) => b.into_vec(),
        CompactBytes::Growable(v) => *v,
        inline => inline.as_slice().to_vec(),
    }
}

fn to_deque(p: &Packed) -> ListDeque {
    let mut items = VecDeque::with_capacity(p.len());
    for e in p.iter() {
        items.push_back(with_elem(e, CompactBytes::new));
    }
    ListDeque { items }
}

/// Bytes `elems` take once packed: a long element's header is five bytes,
/// not one, so the payload length alone undercounts.
fn packed_len<B: AsRef<[u8]>>(elems: &[B]) -> usize {
    elems
        .iter()
        .map(|e| Put::Bytes(e.as_ref()).encoded_len())
        .sum()
}

/// Make sure the list can take `add_count` more elements that pack into
/// `add_bytes` bytes: a packed list that would pass the limit becomes a deque.
fn make_room(v: &mut Value, add_count: usize, add_bytes: usize, limits: &CompactLimits) {
    if let Value::ListPacked(p) = v {
        let bytes = p.heap_bytes() + add_bytes;
        if !fits(limits, bytes, || p.len() + add_count) {
            *v = Value::List(Box::new(to_deque(p)));
        }
    }
}

/// Push `elems` one at a time at `end` (so LPUSH a b c leaves c first).
/// Returns the new length.
pub fn push<B: AsRef<[u8]>>(v: &mut Value, end: End, elems: &[B], limits: &CompactLimits) -> usize {
    make_room(v, elems.len(), packed_len(elems), limits);
    match v {
        Value::ListPacked(p) => {
            let mut puts: Vec<Put<'_>> = elems.iter().map(|e| Put::Bytes(e.as_ref())).collect();
            match end {
                End::Left => {
                    puts.reverse();
                    p.push_front(&puts);
                }
                End::Right => p.push_back(&puts),
            }
            p.len()
        }
        Value::List(d) => {
            for e in elems {
                let c = CompactBytes::new(e.as_ref());
                match end {
                    End::Left => d.items.push_front(c),
                    End::Right => d.items.push_back(c),
                }
            }
            d.len()
        }
        _ => 0,
    }
}

/// Remove and return the element at `end`.
pub fn pop(v: &mut Value, end: End) -> Option<Vec<u8>> {
    pop_many(v, end, 1).pop()
}

/// Remove up to `count` elements from `end`, in the order they were popped.
pub fn pop_many(v: &mut Value, end: End, count: usize) -> Vec<Vec<u8>> {
    match v {
        Value::ListPacked(p) => {
            let n = p.len();
            let k = count.min(n);
            if k == 0 {
                return Vec::new();
            }
            let out: Vec<Vec<u8>> = match end {
                End::Left => p.iter().take(k).map(|e| e.to_vec()).collect(),
                End::Right => {
                    let mut tail: Vec<Vec<u8>> = p.iter().skip(n - k).map(|e| e.to_vec()).collect();
                    tail.reverse();
                    tail
                }
            };
            let at = if end == End::Left { 0 } else { n - k };
            p.splice(at, k, &[]);
            out
        }
        Value::List(d) => {
            let k = count.min(d.len());
            let mut out = Vec::with_capacity(k);
            for _ in 0..k {
                let c = match end {
                    End::Left => d.items.pop_front(),
                    End::Right => d.items.pop_back(),
                };
                if let Some(c) = c {
                    out.push(into_vec(c));
                }
            }
            d.settle();
            out
        }
        _ => Vec::new(),
    }
}

/// Redis's `start`/`stop` (inclusive, negative counting from the end) as a
/// half-open range of positions in a list of `len`; `None` when it is empty.
pub fn span(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let n = i64::try_from(len).unwrap_or(i64::MAX);
    let start = if start < 0 { start + n } else { start }.max(0);
    let stop = if stop < 0 { stop + n } else { stop };
    if start > stop || start >= n {
        return None;
    }
    let stop = stop.min(n - 1);
    Some((start as usize, stop as usize + 1))
}

/// Call `f` on each element from `start` to `stop` (LRANGE's indexes).
pub fn range_with(v: &Value, start: i64, stop: i64, mut f: impl FnMut(&[u8])) {
    let Some((a, b)) = span(start, stop, len(v)) else {
        return;
    };
    match v {
        Value::ListPacked(p) => p
            .iter()
            .skip(a)
            .take(b - a)
            .for_each(|e| with_elem(e, &mut f)),
        Value::List(d) => d.items.range(a..b).for_each(|c| f(c.as_slice())),
        _ => {}
    }
}

/// The elements from `start` to `stop` (LRANGE's indexes).
pub fn range(v: &Value, start: i64, stop: i64) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    range_with(v, start, stop, |e| out.push(e.to_vec()));
    out
}

/// Position of `index` (negative from the end) in a list of `len`.
fn position(index: i64, len: usize) -> Option<usize> {
    let n = i64::try_from(len).unwrap_or(i64::MAX);
    let i = if index < 0 { index + n } else { index };
    (0..n).contains(&i).then_some(i as usize)
}

/// The element at `index` (negative from the end).
pub fn index(v: &Value, index: i64) -> Option<Vec<u8>> {
    let i = position(index, len(v))?;
    match v {
        Value::ListPacked(p) => p.get(i).map(|e| e.to_vec()),
        Value::List(d) => d.items.get(i).map(|c| c.as_slice().to_vec()),
        _ => None,
    }
}

/// Replace the element at `index`; false when the index is out of range.
pub fn set(v: &mut Value, index: i64, elem: &[u8], limits: &CompactLimits) -> bool {
    let Some(i) = position(index, len(v)) else {
        return false;
    };
    make_room(v, 1, packed_len(&[elem]), limits);
    match v {
        Value::ListPacked(p) => {
            p.splice(i, 1, &[Put::Bytes(elem)]);
            true
        }
        Value::List(d) => match d.items.get_mut(i) {
            Some(slot) => {
                *slot = CompactBytes::new(elem);
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// Insert `elem` before (or `after`) the first element equal to `pivot`.
/// Returns the new length, or `None` when no element equals `pivot`.
pub fn insert(
    v: &mut Value,
    pivot: &[u8],
    after: bool,
    elem: &[u8],
    limits: &CompactLimits,
) -> Option<usize> {
    let at = match v {
        Value::ListPacked(p) => p.find(pivot, 0, 1)?,
        Value::List(d) => d.items.iter().position(|c| c.as_slice() == pivot)?,
        _ => return None,
    } + usize::from(after);
    make_room(v, 1, packed_len(&[elem]), limits);
    match v {
        Value::ListPacked(p) => {
            p.splice(at, 0, &[Put::Bytes(elem)]);
            Some(p.len())
        }
        Value::List(d) => {
            d.items.insert(at, CompactBytes::new(elem));
            Some(d.len())
        }
        _ => None,
    }
}

/// Remove elements equal to `elem`: the first `count` from the head when
/// positive, from the tail when negative, all of them when 0 (LREM).
/// Returns how many were removed.
pub fn remove(v: &mut Value, count: i64, elem: &[u8]) -> usize {
    let n = len(v);
    let limit = if count == 0 {
        usize::MAX
    } else {
        usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX)
    };
    let from_tail = count < 0;
    // Positions (from the head) of the elements to drop, found in scan order.
    let mut doomed = vec![false; n];
    let mut found = 0;
    {
        let mut visit = |i: usize, eq: bool| {
            if eq && found < limit {
                doomed[i] = true;
                found += 1;
            }
        };
        match &*v {
            Value::ListPacked(p) => {
                let eqs: Vec<bool> = p.iter().map(|e| e.eq_bytes(elem)).collect();
                if from_tail {
                    eqs.iter()
                        .enumerate()
                        .rev()
                        .for_each(|(i, &eq)| visit(i, eq));
                } else {
                    eqs.iter().enumerate().for_each(|(i, &eq)| visit(i, eq));
                }
            }
            Value::List(d) => {
                let eq = |c: &CompactBytes| c.as_slice() == elem;
                if from_tail {
                    d.items
                        .iter()
                        .enumerate()
                        .rev()
                        .for_each(|(i, c)| visit(i, eq(c)));
                } else {
                    d.items
                        .iter()
                        .enumerate()
                        .for_each(|(i, c)| visit(i, eq(c)));
                }
            }
            _ => {}
        }
    }
    if found == 0 {
        return 0;
    }
    match v {
        Value::ListPacked(p) => {
            let kept: Vec<Put<'_>> = p
                .iter()
                .zip(&doomed)
                .filter(|(_, &gone)| !gone)
                .map(|(e, _)| put_of(e))
                .collect();
            *p = Packed::from_elems(&kept);
        }
        Value::List(d) => {
            let mut i = 0;
            d.items.retain(|_| {
                let keep = !doomed[i];
                i += 1;
                keep
            });
            d.settle();
        }
        _ => {}
    }
    found
}

/// Keep only the elements from `start` to `stop` (LTRIM's indexes); a range
/// outside the list empties it.
pub fn trim(v: &mut Value, start: i64, stop: i64) {
    let kept = span(start, stop, len(v));
    match v {
        Value::ListPacked(p) => match kept {
            Some((a, b)) => {
                let n = p.len();
                p.splice(b, n - b, &[]);
                p.splice(0, a, &[]);
            }
            None => *p = Packed::new(),
        },
        Value::List(d) => {
            match kept {
                Some((a, b)) => {
                    d.items.truncate(b);
                    d.items.drain(..a);
                }
                None => d.items.clear(),
            }
            d.settle();
        }
        _ => {}
    }
}

/// LPOS: positions of elements equal to `elem`, skipping to the `rank`-th
/// match (negative ranks scan from the tail), collecting up to `count`
/// matches (0: all), comparing at most `maxlen` elements (0: no limit).
/// `rank` is never 0 (the caller refuses it).
pub fn positions(v: &Value, elem: &[u8], rank: i64, count: usize, maxlen: usize) -> Vec<usize> {
    let n = len(v);
    let from_tail = rank < 0;
    // Redis 7.0 negates i64::MIN into itself, which then counts as reached at
    // the first match: the same as -1.
    let skip = if rank == i64::MIN {
        0
    } else {
        usize::try_from(rank.unsigned_abs() - 1).unwrap_or(usize::MAX)
    };
    let want = if count == 0 { usize::MAX } else { count };
    let budget = if maxlen == 0 { n } else { maxlen.min(n) };
    let mut out = Vec::new();
    let mut matches = 0usize;
    let mut consider = |i: usize, eq: bool| -> bool {
        if eq {
            matches += 1;
            if matches > skip {
                out.push(i);
            }
        }
        out.len() < want
    };
    match v {
        Value::ListPacked(p) => {
            let eqs: Vec<bool> = p.iter().map(|e| e.eq_bytes(elem)).collect();
            for step in 0..budget {
                let i = if from_tail { n - 1 - step } else { step };
                if !consider(i, eqs.get(i).copied().unwrap_or(false)) {
                    break;
                }
            }
        }
        Value::List(d) => {
            for step in 0..budget {
                let i = if from_tail { n - 1 - step } else { step };
                let eq = d.items.get(i).is_some_and(|c| c.as_slice() == elem);
                if !consider(i, eq) {
                    break;
                }
            }
        }
        _ => {}
    }
    out
}

/// Every element, head first.
pub fn to_vec(v: &Value) -> Vec<Vec<u8>> {
    range(v, 0, -1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits(size: i64) -> CompactLimits {
        CompactLimits {
            list_size: size,
            ..CompactLimits::default()
        }
    }

    fn list_of(items: &[&str], size: i64) -> Value {
        let mut v = new_value();
        push(&mut v, End::Right, items, &limits(size));
        v
    }

    fn strs(v: &[Vec<u8>]) -> Vec<String> {
        v.iter()
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect()
    }

    #[test]
    fn push_order_and_conversion() {
        let l = limits(3);
        let mut v = new_value();
        assert_eq!(push(&mut v, End::Left, &["a", "b"], &l), 2);
        assert_eq!(push(&mut v, End::Right, &["1"], &l), 3);
        assert!(matches!(v, Value::ListPacked(_)));
        assert_eq!(strs(&to_vec(&v)), ["b", "a", "1"]);
        assert_eq!(push(&mut v, End::Left, &["c"], &l), 4);
        assert!(matches!(v, Value::List(_)));
        assert_eq!(strs(&to_vec(&v)), ["c", "b", "a", "1"]);
        // Never back, even when it shrinks.
        pop_many(&mut v, End::Left, 3);
        assert!(matches!(v, Value::List(_)));
    }

    #[test]
    fn byte_limits_follow_the_size_level() {
        let big = "x".repeat(1000);
        let items: Vec<&str> = vec![big.as_str(); 4];
        assert!(matches!(list_of(&items, -1), Value::ListPacked(_)));
        let items: Vec<&str> = vec![big.as_str(); 5];
        assert!(matches!(list_of(&items, -1), Value::List(_)));
        assert!(matches!(list_of(&items, -2), Value::ListPacked(_)));
        // Positive sizes still cap a node at 8 KiB.
        let items: Vec<&str> = vec![big.as_str(); 9];
        assert!(matches!(list_of(&items, 100), Value::List(_)));
        // 0 behaves as 1 and below -5 as -5.
        assert!(matches!(list_of(&["a", "b"], 0), Value::List(_)));
        assert!(matches!(list_of(&["a"], 0), Value::ListPacked(_)));
        let items: Vec<&str> = vec![big.as_str(); 60];
        assert!(matches!(list_of(&items, -100), Value::ListPacked(_)));
    }

    #[test]
    fn spans_follow_redis_indexes() {
        assert_eq!(span(0, -1, 3), Some((0, 3)));
        assert_eq!(span(-100, 100, 3), Some((0, 3)));
        assert_eq!(span(2, 1, 3), None);
        assert_eq!(span(3, 5, 3), None);
        assert_eq!(span(-1, -1, 3), Some((2, 3)));
        assert_eq!(span(i64::MIN, i64::MAX, 3), Some((0, 3)));
        assert_eq!(span(0, 0, 0), None);
    }

    #[test]
    fn lpos_ranks_counts_and_maxlen() {
        for size in [128, 1] {
            let v = list_of(&["a", "b", "c", "1", "2", "3", "c", "c"], size);
            assert_eq!(positions(&v, b"c", 1, 1, 0), [2]);
            assert_eq!(positions(&v, b"c", 1, 0, 0), [2, 6, 7]);
            assert_eq!(positions(&v, b"c", 2, 0, 0), [6, 7]);
            assert_eq!(positions(&v, b"c", -1, 2, 0), [7, 6]);
            assert_eq!(positions(&v, b"c", -3, 0, 0), [2]);
            assert_eq!(positions(&v, b"c", 1, 0, 3), [2]);
            assert_eq!(positions(&v, b"c", -1, 0, 1), [7]);
            assert_eq!(positions(&v, b"c", i64::MIN, 1, 0), [7]);
            assert_eq!(positions(&v, b"2", 1, 1, 0), [4]);
            assert!(positions(&v, b"z", 1, 0, 0).is_empty());
        }
    }

    #[test]
    fn formats_integers_like_to_string() {
        for i in [0, 7, -7, 10, i64::MAX, i64::MIN, 1234567890] {
            let mut buf = [0u8; 20];
            let n = format_i64(i, &mut buf);
            assert_eq!(&buf[20 - n..], i.to_string().as_bytes());
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(bool, Vec<Vec<u8>>),
        Pop(bool, usize),
        Set(i64, Vec<u8>),
        Insert(Vec<u8>, bool, Vec<u8>),
        Remove(i64, Vec<u8>),
        Trim(i64, i64),
    }

    fn elem() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            prop::sample::select(vec!["a", "b", "1", "-5", "007", ""])
                .prop_map(|s| s.as_bytes().to_vec()),
            any::<i64>().prop_map(|i| i.to_string().into_bytes()),
            prop::collection::vec(any::<u8>(), 0..30),
            prop::collection::vec(any::<u8>(), 190..700),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (any::<bool>(), prop::collection::vec(elem(), 1..5)).prop_map(|(l, e)| Op::Push(l, e)),
            1 => (any::<bool>(), 0usize..4).prop_map(|(l, n)| Op::Pop(l, n)),
            1 => (-12i64..12, elem()).prop_map(|(i, e)| Op::Set(i, e)),
            1 => (elem(), any::<bool>(), elem()).prop_map(|(p, a, e)| Op::Insert(p, a, e)),
            1 => (-3i64..3, elem()).prop_map(|(c, e)| Op::Remove(c, e)),
            1 => (-15i64..15, -15i64..15).prop_map(|(a, b)| Op::Trim(a, b)),
        ]
    }

    fn model_span(start: i64, stop: i64, n: usize) -> Option<(usize, usize)> {
        let n = n as i64;
        let s = if start < 0 { (start + n).max(0) } else { start };
        let e = if stop < 0 { stop + n } else { stop.min(n - 1) };
        (s <= e && s < n).then(|| (s as usize, e as usize + 1))
    }

    fn check(v: &Value, model: &VecDeque<Vec<u8>>) -> Result<(), TestCaseError> {
        prop_assert_eq!(len(v), model.len());
        prop_assert_eq!(to_vec(v), model.iter().cloned().collect::<Vec<_>>());
        let n = model.len() as i64;
        for i in [-n - 1, -n, -1, 0, n / 2, n - 1, n] {
            let expect = if i < 0 { i + n } else { i };
            let expect = (0..n)
                .contains(&expect)
                .then(|| model[expect as usize].clone());
            prop_assert_eq!(index(v, i), expect);
        }
        for (a, b) in [(1, 3), (-3, -1), (2, 100)] {
            let expect: Vec<Vec<u8>> = match model_span(a, b, model.len()) {
                Some((s, e)) => model.range(s..e).cloned().collect(),
                None => Vec::new(),
            };
            prop_assert_eq!(range(v, a, b), expect);
        }
        Ok(())
    }

    proptest! {
        /// Every operation agrees with a VecDeque model, across the packed to
        /// deque conversion (small limits make it happen early).
        #[test]
        fn matches_a_vecdeque(size in prop::sample::select(vec![-1i64, 0, 3, 8]),
                              ops in prop::collection::vec(op(), 1..40)) {
            let l = limits(size);
            let mut v = new_value();
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            for op in ops {
                match op {
                    Op::Push(left, elems) => {
                        let end = if left { End::Left } else { End::Right };
                        let n = push(&mut v, end, &elems, &l);
                        for e in elems {
                            if left { model.push_front(e) } else { model.push_back(e) }
                        }
                        prop_assert_eq!(n, model.len());
                    }
                    Op::Pop(left, k) => {
                        let end = if left { End::Left } else { End::Right };
                        let got = if k == 1 {
                            pop(&mut v, end).into_iter().collect()
                        } else {
                            pop_many(&mut v, end, k)
                        };
                        let mut expect = Vec::new();
                        for _ in 0..k {
                            let e = if left { model.pop_front() } else { model.pop_back() };
                            expect.extend(e);
                        }
                        prop_assert_eq!(got, expect);
                    }
                    Op::Set(i, e) => {
                        let n = model.len() as i64;
                        let at = if i < 0 { i + n } else { i };
                        let ok = set(&mut v, i, &e, &l);
                        prop_assert_eq!(ok, (0..n).contains(&at));
                        if ok {
                            model[at as usize] = e;
                        }
                    }
                    Op::Insert(pivot, after, e) => {
                        let got = insert(&mut v, &pivot, after, &e, &l);
                        match model.iter().position(|m| *m == pivot) {
                            Some(p) => {
                                model.insert(p + usize::from(after), e);
                                prop_assert_eq!(got, Some(model.len()));
                            }
                            None => prop_assert_eq!(got, None),
                        }
                    }
                    Op::Remove(count, e) => {
                        let got = remove(&mut v, count, &e);
                        let limit = if count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
                        let mut idx: Vec<usize> =
                            (0..model.len()).filter(|&i| model[i] == e).collect();
                        if count < 0 {
                            idx.reverse();
                        }
                        idx.truncate(limit);
                        idx.sort_unstable();
                        for &i in idx.iter().rev() {
                            model.remove(i);
                        }
                        prop_assert_eq!(got, idx.len());
                    }
                    Op::Trim(a, b) => {
                        trim(&mut v, a, b);
                        model = match model_span(a, b, model.len()) {
                            Some((s, e)) => model.range(s..e).cloned().collect(),
                            None => VecDeque::new(),
                        };
                    }
                }
                check(&v, &model)?;
                if let Value::ListPacked(p) = &v {
                    prop_assert!(fits(&l, p.heap_bytes(), || p.len()) || p.len() <= 1,
                        "packed list past its limit: {} bytes, {} elements", p.heap_bytes(), p.len());
                }
            }
        }
    }
}
