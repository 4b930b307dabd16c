//! Sets. Sets of integers are a sorted `Packed` of integers
//! (`Value::SetInts`, Redis's intset) up to `set-max-intset-entries`; other
//! small sets are a `Packed` of members (`Value::SetPacked`) up to
//! `set-max-listpack-entries` members of at most `set-max-listpack-value`
//! bytes; beyond that a `SetTable` (`Value::Set`).
//!
//! Conversions follow Redis 7.2 and only go towards the table: an intset that
//! receives a non-integer becomes a listpack when it would fit one, else a
//! table; an intset that grows past its limit becomes a table; a listpack that
//! outgrows its limits becomes a table. The one exception is also Redis's:
//! SPOP of most of a large set rebuilds the few members left from an empty
//! listpack.
//!
//! The operations live on `Value` (in an `impl` block here) because a set is
//! any of three variants; called on a value of another type they behave as on
//! an empty set and change nothing. Callers check the type first.
//!
//! `SetTable` itself is in `set::table`, which knows nothing of `Value`.

pub(crate) mod table;

use crate::limits::CompactLimits;
use crate::num::parse_i64;
use crate::packed::{Elem, Packed, Put};
use crate::value::Value;
pub use table::SetTable;

/// Whether a stored element is the member `m` (`m_int` is `m` parsed as a
/// canonical integer, done once by the caller).
fn elem_is(e: Elem<'_>, m: &[u8], m_int: Option<i64>) -> bool {
    match e {
        Elem::Int(i) => m_int == Some(i),
        Elem::Bytes(b) => b == m,
        Elem::Float(_) => false,
    }
}

fn elem_bytes(e: Elem<'_>) -> Vec<u8> {
    e.to_vec()
}

/// Call `f` with an element as bytes, formatting integers on the stack.
fn with_elem_bytes<R>(e: Elem<'_>, f: impl FnOnce(&[u8]) -> R) -> R {
    match e {
        Elem::Bytes(b) => f(b),
        Elem::Int(i) => {
            let mut buf = [0u8; 20];
            let n = format_i64(i, &mut buf);
            f(&buf[buf.len() - n..])
        }
        Elem::Float(_) => f(&e.to_vec()),
    }
}

/// Write `i` in decimal at the end of `buf`; returns how many bytes it took.
fn format_i64(i: i64, buf: &mut [u8; 20]) -> usize {
    let mut n = i.unsigned_abs();
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    buf.len() - at
}

/// Decimal length of `i`, sign included (Redis's `sdigits10`).
fn digits(i: i64) -> usize {
    let mut buf = [0u8; 20];
    format_i64(i, &mut buf)
}

/// Redis caps intsets at 2^30 members whatever the setting says.
fn intset_max(limits: &CompactLimits) -> usize {
    limits.set_intset_entries.min(1 << 30)
}

/// A uniform draw below `n` (`n > 0`) from a 64-bit random word.
fn below(r: u64, n: usize) -> usize {
    ((u128::from(r) * n as u128) >> 64) as usize
}

/// `k` distinct positions below `n` (`k <= n`), in O(k) (Floyd's method).
fn sample_distinct(n: usize, k: usize, rng: &mut dyn FnMut() -> u64) -> Vec<usize> {
    let mut chosen = std::collections::HashSet::with_capacity(k);
    let mut out = Vec::with_capacity(k);
    for j in n - k..n {
        let t = below(rng(), j + 1);
        let pick = if chosen.contains(&t) { j } else { t };
        chosen.insert(pick);
        out.push(pick);
    }
    out
}

fn table_of(members: impl Iterator<Item = Vec<u8>>, capacity: usize) -> Box<SetTable> {
    let mut t = SetTable::with_capacity(capacity);
    for m in members {
        t.insert(&m);
    }
    Box::new(t)
}

impl Value {
    /// An empty set able to hold `first`, sized for about `size_hint`
    /// members (Redis's `setTypeCreate`). The caller adds the members.
    pub fn new_set(first: &[u8], size_hint: usize, limits: &CompactLimits) -> Value {
        if parse_i64(first).is_some() && size_hint <= limits.set_intset_entries {
            Value::SetInts(Packed::new())
        } else if size_hint <= limits.set_entries {
            Value::SetPacked(Packed::new())
        } else {
            Value::Set(Box::new(SetTable::with_capacity(size_hint)))
        }
    }

    /// Before adding `size_hint` members to an existing set: go straight to a
    /// table when that many could not stay compact (`setTypeMaybeConvert`).
    pub fn set_reserve(&mut self, size_hint: usize, limits: &CompactLimits) {
        let convert = match self {
            Value::SetPacked(_) => size_hint > limits.set_entries,
            Value::SetInts(_) => size_hint > limits.set_intset_entries,
            _ => false,
        };
        if convert {
            self.set_to_table(size_hint);
        }
    }

    /// Members of a set value (0 for other types).
    pub fn set_len(&self) -> usize {
        match self {
            Value::SetInts(p) | Value::SetPacked(p) => p.len(),
            Value::Set(t) => t.len(),
            _ => 0,
        }
    }

    pub fn set_contains(&self, m: &[u8]) -> bool {
        match self {
            Value::SetInts(p) => {
                let Some(v) = parse_i64(m) else {
                    return false;
                };
                for e in p.iter() {
                    if let Elem::Int(i) = e {
                        if i >= v {
                            return i == v;
                        }
                    }
                }
                false
            }
            Value::SetPacked(p) => {
                let m_int = parse_i64(m);
                p.iter().any(|e| elem_is(e, m, m_int))
            }
            Value::Set(t) => t.contains(m),
            _ => false,
        }
    }

    /// Convert a compact set to a table with room for `capacity` members.
    fn set_to_table(&mut self, capacity: usize) {
        let table = match self {
            Value::SetInts(p) | Value::SetPacked(p) => {
                table_of(p.iter().map(elem_bytes), capacity.max(p.len()))
            }
            _ => return,
        };
        *self = Value::Set(table);
    }

    /// Add `m`; false if it was already a member. Converts the encoding as
    /// Redis 7.2 does.
    pub fn set_add(&mut self, m: &[u8], limits: &CompactLimits) -> bool {
        match self {
            Value::SetInts(p) => match parse_i64(m) {
                Some(v) => {
                    let mut at = None;
                    let mut len = 0;
                    for (i, e) in p.iter().enumerate() {
                        if let Elem::Int(x) = e {
                            if x == v {
                                return false;
                            }
                            if x > v && at.is_none() {
                                at = Some(i);
                            }
                        }
                        len += 1;
                    }
                    p.splice(at.unwrap_or(len), 0, &[Put::Int(v)]);
                    if len + 1 > intset_max(limits) {
                        self.set_to_table(len + 1);
                    }
                    true
                }
                None => {
                    let mut n = 0;
                    let (mut min, mut max) = (0i64, 0i64);
                    for e in p.iter() {
                        if let Elem::Int(x) = e {
                            if n == 0 {
                                min = x;
                            }
                            max = x;
                        }
                        n += 1;
                    }
                    let widest = if n == 0 {
                        0
                    } else {
                        digits(min).max(digits(max))
                    };
                    if n < limits.set_entries
                        && m.len() <= limits.set_value
                        && widest <= limits.set_value
                    {
                        // The intset's ascending order carries over; the new
                        // member goes at the end as a listpack append would.
                        p.push_back(&[Put::Bytes(m)]);
                        let packed = std::mem::take(p);
                        *self = Value::SetPacked(packed);
                    } else {
                        self.set_to_table(n + 1);
                        if let Value::Set(t) = self {
                            t.insert(m);
                        }
                    }
                    true
                }
            },
            Value::SetPacked(p) => {
                let m_int = parse_i64(m);
                let mut len = 0;
                for e in p.iter() {
                    if elem_is(e, m, m_int) {
                        return false;
                    }
                    len += 1;
                }
                if len < limits.set_entries && m.len() <= limits.set_value {
                    p.push_back(&[Put::Bytes(m)]);
                } else {
                    self.set_to_table(len + 1);
                    if let Value::Set(t) = self {
                        t.insert(m);
                    }
                }
                true
            }
            Value::Set(t) => t.insert(m),
            _ => false,
        }
    }

    /// Remove `m`; false if it was not a member. An emptied set stays (the
    /// caller deletes the key).
    pub fn set_remove(&mut self, m: &[u8]) -> bool {
        match self {
            Value::SetInts(p) => {
                let Some(v) = parse_i64(m) else {
                    return false;
                };
                let at = p.iter().position(|e| e == Elem::Int(v));
                match at {
                    Some(i) => {
                        p.splice(i, 1, &[]);
                        true
                    }
                    None => false,
                }
            }
            Value::SetPacked(p) => {
                let m_int = parse_i64(m);
                match p.iter().position(|e| elem_is(e, m, m_int)) {
                    Some(i) => {
                        p.splice(i, 1, &[]);
                        true
                    }
                    None => false,
                }
            }
            Value::Set(t) => t.remove(m),
            _ => false,
        }
    }

    /// Visit every member until `f` returns false.
    pub fn set_visit(&self, mut f: impl FnMut(&[u8]) -> bool) {
        match self {
            Value::SetInts(p) | Value::SetPacked(p) => {
                for e in p.iter() {
                    if !with_elem_bytes(e, &mut f) {
                        return;
                    }
                }
            }
            Value::Set(t) => {
                for m in t.iter() {
                    if !f(m) {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    /// Every member, copied out.
    pub fn set_members(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(self.set_len());
        self.set_visit(|m| {
            out.push(m.to_vec());
            true
        });
        out
    }

    /// The member at position `i` of the set's own order.
    fn set_member_at(&self, i: usize) -> Option<Vec<u8>> {
        match self {
            Value::SetInts(p) | Value::SetPacked(p) => p.get(i).map(elem_bytes),
            Value::Set(t) => t.get(i).map(<[u8]>::to_vec),
            _ => None,
        }
    }

    /// One member chosen uniformly, `None` for an empty set.
    pub fn set_random(&self, rng: &mut dyn FnMut() -> u64) -> Option<Vec<u8>> {
        let n = self.set_len();
        if n == 0 {
            return None;
        }
        self.set_member_at(below(rng(), n))
    }

    /// `count` members chosen uniformly with repeats (SRANDMEMBER with a
    /// negative count).
    pub fn set_random_repeats(&self, count: usize, rng: &mut dyn FnMut() -> u64) -> Vec<Vec<u8>> {
        let n = self.set_len();
        if n == 0 {
            return Vec::new();
        }
        match self {
            Value::Set(t) => (0..count)
                .filter_map(|_| t.get(below(rng(), n)).map(<[u8]>::to_vec))
                .collect(),
            // A compact set is decoded once rather than walked per pick.
            _ => {
                let all = self.set_members();
                (0..count).map(|_| all[below(rng(), n)].clone()).collect()
            }
        }
    }

    /// `count` distinct members (all of them when `count` reaches the size).
    pub fn set_random_distinct(&self, count: usize, rng: &mut dyn FnMut() -> u64) -> Vec<Vec<u8>> {
        let n = self.set_len();
        if count >= n {
            return self.set_members();
        }
        match self {
            Value::Set(t) => sample_distinct(n, count, rng)
                .into_iter()
                .filter_map(|i| t.get(i).map(<[u8]>::to_vec))
                .collect(),
            _ => {
                let mut all: Vec<Option<Vec<u8>>> =
                    self.set_members().into_iter().map(Some).collect();
                sample_distinct(n, count, rng)
                    .into_iter()
                    .filter_map(|i| all.get_mut(i).and_then(Option::take))
                    .collect()
            }
        }
    }

    /// Remove and return up to `count` random members. Popping all of them
    /// leaves an empty set for the caller to delete.
    pub fn set_pop(
        &mut self,
        count: usize,
        rng: &mut dyn FnMut() -> u64,
        limits: &CompactLimits,
    ) -> Vec<Vec<u8>> {
        let n = self.set_len();
        if count >= n {
            let all = self.set_members();
            match self {
                Value::SetInts(p) | Value::SetPacked(p) => *p = Packed::new(),
                Value::Set(t) => **t = SetTable::default(),
                _ => {}
            }
            return all;
        }
        let remaining = n - count;
        match self {
            Value::SetInts(p) | Value::SetPacked(p) => {
                // One pass: mark the popped positions and rebuild the rest.
                let mut popped_at = vec![false; n];
                for i in sample_distinct(n, count, rng) {
                    popped_at[i] = true;
                }
                let mut popped = Vec::with_capacity(count);
                let mut kept = Vec::with_capacity(remaining);
                for (i, e) in p.iter().enumerate() {
                    if popped_at[i] {
                        popped.push(elem_bytes(e));
                    } else {
                        kept.push(elem_bytes(e));
                    }
                }
                // Canonical integers go back in as integers, in the same order.
                let puts: Vec<Put<'_>> = kept.iter().map(|m| Put::Bytes(m)).collect();
                *p = Packed::from_elems(&puts);
                popped
            }
            Value::Set(t) => {
                if remaining * 5 > count {
                    let mut popped = Vec::with_capacity(count);
                    for _ in 0..count {
                        let i = below(rng(), t.len());
                        if let Some(m) = t.remove_at(i) {
                            popped.push(m.as_slice().to_vec());
                        }
                    }
                    popped
                } else {
                    // Most of the set goes: pick the few that stay and build
                    // them into a fresh set that starts as a listpack, as
                    // Redis 7.2 does, so the remainder can be compact again.
                    let mut keep = vec![false; n];
                    let mut fresh = Value::SetPacked(Packed::new());
                    for i in sample_distinct(n, remaining, rng) {
                        keep[i] = true;
                        if let Some(m) = t.get(i) {
                            fresh.set_add(m, limits);
                        }
                    }
                    let popped = t
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !keep[*i])
                        .map(|(_, m)| m.to_vec())
                        .collect();
                    *self = fresh;
                    popped
                }
            }
            _ => Vec::new(),
        }
    }

    /// One SSCAN step: members visited from `cursor` (about `count` of them)
    /// go to `out`; returns the next cursor, 0 when done. Compact sets are
    /// returned whole with cursor 0, as Redis does.
    ///
    /// A table's cursor is how many positions remain unvisited, walked from
    /// the end down. Removal only moves the last member into a hole and
    /// insertion appends, so a member present for the whole scan never moves
    /// from the unvisited prefix into the visited part: it is returned at
    /// least once.
    pub fn set_scan(&self, cursor: u64, count: usize, out: &mut Vec<Vec<u8>>) -> u64 {
        match self {
            Value::Set(t) => {
                let len = t.len();
                let start = if cursor == 0 {
                    len
                } else {
                    usize::try_from(cursor).unwrap_or(usize::MAX).min(len)
                };
                let end = start.saturating_sub(count.max(1));
                for i in (end..start).rev() {
                    if let Some(m) = t.get(i) {
                        out.push(m.to_vec());
                    }
                }
                end as u64
            }
            _ => {
                out.extend(self.set_members());
                0
            }
        }
    }

    /// After building a set whose members are known to be integers, hold
    /// them as an intset if they fit one (Redis's `maybeConvertToIntset`).
    pub fn set_compact_ints(&mut self, limits: &CompactLimits) {
        if matches!(self, Value::SetInts(_)) || self.set_len() > intset_max(limits) {
            return;
        }
        let mut ints = Vec::with_capacity(self.set_len());
        let mut all = true;
        self.set_visit(|m| match parse_i64(m) {
            Some(v) => {
                ints.push(v);
                true
            }
            None => {
                all = false;
                false
            }
        });
        if all {
            ints.sort_unstable();
            let puts: Vec<Put<'_>> = ints.into_iter().map(Put::Int).collect();
            *self = Value::SetInts(Packed::from_elems(&puts));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn small() -> CompactLimits {
        CompactLimits {
            set_intset_entries: 6,
            set_entries: 4,
            set_value: 5,
            ..CompactLimits::default()
        }
    }

    fn rng_from(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed | 1;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    fn build(members: &[&str], limits: &CompactLimits) -> Value {
        let mut v = Value::new_set(members[0].as_bytes(), members.len(), limits);
        for m in members {
            v.set_add(m.as_bytes(), limits);
        }
        v
    }

    #[test]
    fn encodings_follow_redis_7_2() {
        let l = CompactLimits::default();
        assert_eq!(build(&["1", "2", "3"], &l).encoding(), "intset");
        assert_eq!(build(&["a", "b"], &l).encoding(), "listpack");
        // An intset taking a string becomes a listpack when it fits.
        let mut v = build(&["1", "2"], &l);
        v.set_add(b"x", &l);
        assert_eq!(v.encoding(), "listpack");
        assert!(v.set_contains(b"1") && v.set_contains(b"x"));
        // Past the intset limit a set of integers goes to a table.
        let ints: Vec<String> = (0..513).map(|i| i.to_string()).collect();
        let refs: Vec<&str> = ints.iter().map(String::as_str).collect();
        let mut v = build(&refs[..512], &l);
        assert_eq!(v.encoding(), "intset");
        v.set_add(b"512", &l);
        assert_eq!(v.encoding(), "hashtable");
        // A long member leaves the listpack.
        let mut v = build(&["a"], &l);
        v.set_add(&[b'x'; 65], &l);
        assert_eq!(v.encoding(), "hashtable");
        // Created large: a table straight away.
        let many: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(build(&refs, &l).encoding(), "hashtable");
    }

    #[test]
    fn intset_stays_sorted_and_finds_negatives() {
        let l = CompactLimits::default();
        let v = build(&["5", "-3", "100", "0", "-9223372036854775808"], &l);
        assert_eq!(
            v.set_members(),
            ["-9223372036854775808", "-3", "0", "5", "100"]
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect::<Vec<_>>()
        );
        assert!(v.set_contains(b"-3"));
        assert!(!v.set_contains(b"-03"));
        assert!(!v.set_contains(b"4"));
    }

    #[test]
    fn table_scan_returns_members_present_throughout() {
        let l = small();
        let mut v = Value::Set(Box::default());
        for i in 0..100 {
            v.set_add(format!("m{i}").as_bytes(), &l);
        }
        let mut seen = BTreeSet::new();
        let mut cursor = 0;
        let mut rng = rng_from(7);
        let mut step = 0;
        loop {
            let mut out = Vec::new();
            cursor = v.set_scan(cursor, 7, &mut out);
            seen.extend(out);
            // Churn between calls: remove some early members, add new ones.
            v.set_remove(format!("m{}", step * 3 + 1).as_bytes());
            v.set_add(format!("new{step}").as_bytes(), &l);
            let _ = v.set_pop(1, &mut rng, &l);
            step += 1;
            if cursor == 0 {
                break;
            }
        }
        for i in 0..100 {
            let m = format!("m{i}").into_bytes();
            if v.set_contains(&m) {
                assert!(seen.contains(&m), "missed m{i}");
            }
        }
    }

    #[test]
    fn big_pop_rebuilds_a_compact_remainder() {
        let l = CompactLimits::default();
        let mut v = Value::Set(Box::default());
        for i in 0..300 {
            v.set_add(format!("m{i}").as_bytes(), &l);
        }
        let mut rng = rng_from(3);
        let popped = v.set_pop(290, &mut rng, &l);
        assert_eq!(popped.len(), 290);
        assert_eq!(v.set_len(), 10);
        assert_eq!(v.encoding(), "listpack");
        for m in &popped {
            assert!(!v.set_contains(m));
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add(Vec<String>),
        Remove(String),
        Pop(usize),
        Scan(usize),
    }

    fn member() -> impl Strategy<Value = String> {
        prop_oneof![
            (-20i64..20).prop_map(|i| i.to_string()),
            "[a-c]{1,3}",
            "[a-z]{6,8}",
            Just("007".to_string()),
            Just("-0".to_string()),
            Just("9223372036854775807".to_string()),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => proptest::collection::vec(member(), 1..5).prop_map(Op::Add),
            2 => member().prop_map(Op::Remove),
            1 => (0usize..6).prop_map(Op::Pop),
            1 => (1usize..4).prop_map(Op::Scan),
        ]
    }

    /// The expected encoding: never back to compact, except through a pop.
    fn rank(v: &Value) -> u8 {
        match v.encoding() {
            "intset" => 0,
            "listpack" => 1,
            _ => 2,
        }
    }

    proptest! {
        /// Every encoding and conversion agrees with a BTreeSet, and the
        /// encoding is always one Redis would pick for what was done.
        #[test]
        fn set_matches_a_btreeset(ops in proptest::collection::vec(op(), 1..60), seed in any::<u64>()) {
            let l = small();
            let mut rng = rng_from(seed);
            let mut v: Option<Value> = None;
            let mut model: BTreeSet<Vec<u8>> = BTreeSet::new();
            for op in ops {
                match op {
                    Op::Add(ms) => {
                        let set = v.get_or_insert_with(|| Value::new_set(ms[0].as_bytes(), ms.len(), &l));
                        let before = rank(set);
                        set.set_reserve(ms.len(), &l);
                        for m in &ms {
                            let added = set.set_add(m.as_bytes(), &l);
                            prop_assert_eq!(added, model.insert(m.as_bytes().to_vec()));
                        }
                        prop_assert!(rank(set) >= before);
                    }
                    Op::Remove(m) => {
                        if let Some(set) = v.as_mut() {
                            prop_assert_eq!(set.set_remove(m.as_bytes()), model.remove(m.as_bytes()));
                        }
                    }
                    Op::Pop(n) => {
                        if let Some(set) = v.as_mut() {
                            let popped = set.set_pop(n, &mut rng, &l);
                            prop_assert_eq!(popped.len(), n.min(model.len()));
                            for m in popped {
                                prop_assert!(model.remove(&m));
                            }
                        }
                    }
                    Op::Scan(count) => {
                        if let Some(set) = v.as_ref() {
                            let mut seen = BTreeSet::new();
                            let mut cursor = 0;
                            loop {
                                let mut out = Vec::new();
                                cursor = set.set_scan(cursor, count, &mut out);
                                seen.extend(out);
                                if cursor == 0 { break; }
                            }
                            prop_assert_eq!(&seen, &model);
                        }
                    }
                }
                if let Some(set) = v.as_ref() {
                    prop_assert_eq!(set.set_len(), model.len());
                    let got: BTreeSet<Vec<u8>> = set.set_members().into_iter().collect();
                    prop_assert_eq!(&got, &model);
                    for m in &model {
                        prop_assert!(set.set_contains(m));
                    }
                    prop_assert!(!set.set_contains(b"zzzzzzzzz"));
                    match set.encoding() {
                        "intset" => {
                            prop_assert!(model.len() <= l.set_intset_entries);
                            prop_assert!(model.iter().all(|m| parse_i64(m).is_some()));
                        }
                        "listpack" => {
                            prop_assert!(model.len() <= l.set_entries);
                            prop_assert!(model.iter().all(|m| m.len() <= l.set_value));
                        }
                        _ => {}
                    }
                    let distinct = set.set_random_distinct(3, &mut rng);
                    prop_assert_eq!(distinct.len(), 3.min(model.len()));
                    let unique: BTreeSet<_> = distinct.iter().cloned().collect();
                    prop_assert_eq!(unique.len(), distinct.len());
                    prop_assert!(distinct.iter().all(|m| model.contains(m)));
                    let repeats = set.set_random_repeats(5, &mut rng);
                    prop_assert_eq!(repeats.len(), if model.is_empty() { 0 } else { 5 });
                    prop_assert!(repeats.iter().all(|m| model.contains(m)));
                    if model.is_empty() {
                        v = None;
                    }
                }
            }
        }
    }
}
