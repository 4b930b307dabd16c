//! SORT and SORT_RO: sort a list, set or sorted set numerically or by bytes,
//! optionally by the values of other keys (`BY weight_*`, `BY h_*->field`),
//! fetching other keys for each element (`GET`), storing the result as a
//! list (`STORE`).
//!
//! The keys that BY and GET patterns reach are known only while the command
//! runs, so a call naming such a pattern takes every shard (`KEY_PATTERNS`),
//! as a script that reaches undeclared keys must: the result is consistent
//! across threads. A call without one takes only its key and destination.
//! Redis's quirks are kept: `BY` without `*` sorts nothing (lists and sorted
//! sets keep their order, DESC reverses it, LIMIT is applied to that order),
//! a set with no sorting is sorted by bytes when stored or inside a script,
//! a missing BY key sorts as 0 (or first with ALPHA).

use bytes::Bytes;
use keel_engine::args::is;
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, KeyFinder, Keys};
use keel_resp::Frame;
use keel_store::hash::HashRef;
use keel_store::list::{self, End};
use keel_store::{zset, Value, ValueType};
use std::cmp::Ordering;

pub static COMMANDS: &[&CommandSpec] = &[&SORT, &SORT_RO];

const COMPLEXITY: &str = "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).";

pub(crate) const SORT: CommandSpec = CommandSpec {
    name: "SORT",
    group: Group::Generic,
    arity: -2,
    flags: Flags::WRITE
        .union(Flags::DENYOOM)
        .union(Flags::KEY_PATTERNS),
    keys: Keys::Find(KeyFinder(sort_keys)),
    summary: "Sort the elements in a list, set or sorted set",
    since: "1.0.0",
    complexity: COMPLEXITY,
    subcommands: &[],
    run: sort,
};

pub(crate) const SORT_RO: CommandSpec = CommandSpec {
    name: "SORT_RO",
    group: Group::Generic,
    arity: -2,
    flags: Flags::READONLY.union(Flags::KEY_PATTERNS),
    keys: Keys::Find(KeyFinder(sort_ro_keys)),
    summary: "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
    since: "7.0.0",
    complexity: COMPLEXITY,
    subcommands: &[],
    run: sort_ro,
};

/// SORT's keys, as Redis's own key finder for SORT reports them: the sorted
/// key, and the destination of the last STORE, skipping the arguments of
/// the other options.
pub(crate) fn sort_keys(argv: &[Bytes], out: &mut Vec<usize>) {
    if argv.len() < 2 {
        return;
    }
    out.push(1);
    let mut store = None;
    let mut i = 2;
    while i < argv.len() {
        let a = &argv[i];
        let skip = if is(a, "LIMIT") {
            2
        } else if is(a, "GET") || is(a, "BY") {
            1
        } else if is(a, "STORE") {
            if i + 1 < argv.len() {
                store = Some(i + 1);
            }
            1
        } else {
            0
        };
        i += 1 + skip;
    }
    out.extend(store);
}

/// SORT_RO has no STORE: only the sorted key (Redis still marks its keys
/// movable).
fn sort_ro_keys(argv: &[Bytes], out: &mut Vec<usize>) {
    if argv.len() > 1 {
        out.push(1);
    }
}

/// Whether a SORT or SORT_RO may reach keys other than its declared ones:
/// some BY or GET among its arguments is followed by a pattern with a `*`.
/// It errs towards yes (any such pair anywhere), never towards no: the
/// handler looks keys up only for such patterns.
pub fn names_other_keys(argv: &[Bytes]) -> bool {
    argv.iter()
        .skip(2)
        .zip(argv.iter().skip(3))
        .any(|(opt, pattern)| (is(opt, "BY") || is(opt, "GET")) && pattern.contains(&b'*'))
}

fn sort(ctx: &mut Ctx<'_>, args: &mut keel_engine::args::Args<'_>) -> Result<Frame, CmdError> {
    sort_generic(ctx, args.argv(), false)
}

fn sort_ro(ctx: &mut Ctx<'_>, args: &mut keel_engine::args::Args<'_>) -> Result<Frame, CmdError> {
    sort_generic(ctx, args.argv(), true)
}

/// The bytes before the first NUL: Redis reads patterns with C string
/// functions.
fn c_str(b: &[u8]) -> &[u8] {
    b.iter().position(|&c| c == 0).map_or(b, |n| &b[..n])
}

/// A value a pattern found: a string key's value, a hash field, or the
/// element itself (`#`).
fn lookup_pattern(ctx: &mut Ctx<'_>, pattern: &[u8], elem: &[u8]) -> Option<Vec<u8>> {
    let pat = c_str(pattern);
    if pat == b"#" {
        return Some(elem.to_vec());
    }
    let star = pat.iter().position(|&c| c == b'*')?;
    // A hash field follows the first "->" after the star, if it names one.
    let after = &pat[star + 1..];
    let field_at = after
        .windows(2)
        .position(|w| w == b"->")
        .map(|p| star + 1 + p)
        .filter(|&f| f + 2 < pat.len());
    let key_end = field_at.unwrap_or(pattern.len());
    let mut key = Vec::with_capacity(key_end + elem.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    let now = ctx.now_ms();
    let found = ctx.table(&key).ok()?.get(&key, now).map(|e| &e.value);
    let result = match (found, field_at) {
        (Some(v), Some(f)) => {
            HashRef::of(v).and_then(|h| h.get(&pattern[f + 2..]).map(|c| c.into_owned()))
        }
        (Some(Value::Str(s)), None) => Some(s.as_slice().to_vec()),
        _ => None,
    };
    let exists = found.is_some();
    ctx.hit_key(&key, exists);
    result
}

/// Redis's reading of a sort weight: `strtod` over the C string, which must
/// consume all of it; an empty string is 0; NaN and out-of-range values
/// are errors. SORT (unlike other commands) refuses any result glibc flags
/// with ERANGE, so an inexact subnormal (`1e-310`) is an error too.
pub fn weight(b: &[u8]) -> Option<f64> {
    let s = c_str(b);
    if s.is_empty() {
        return Some(0.0);
    }
    let start = s
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    let text = &s[start..];
    let v = keel_store::num::parse_f64_in_range(text).filter(|v| !v.is_nan())?;
    if v != 0.0 && v.abs() < f64::MIN_POSITIVE && !exact_hex_subnormal(text) {
        return None;
    }
    Some(v)
}

/// Whether a subnormal's spelling is a hexadecimal float that names it
/// exactly (glibc raises ERANGE only for inexact tiny results). A decimal
/// spelling of a subnormal is taken as inexact: an exact one needs over a
/// thousand decimal places.
fn exact_hex_subnormal(text: &[u8]) -> bool {
    let t = match text.first() {
        Some(b'+' | b'-') => &text[1..],
        _ => text,
    };
    let Some(t) = t
        .strip_prefix(b"0x".as_slice())
        .or_else(|| t.strip_prefix(b"0X".as_slice()))
    else {
        return false;
    };
    let p = t
        .iter()
        .position(|&c| c == b'p' || c == b'P')
        .unwrap_or(t.len());
    let (mantissa, exponent) = t.split_at(p);
    let exp: i64 = match exponent.get(1..) {
        None => 0,
        Some(e) => match std::str::from_utf8(e)
            .ok()
            .and_then(|e| e.parse::<i64>().ok())
        {
            Some(e) => e.clamp(-1 << 40, 1 << 40),
            // An exponent too long for i64 is far outside the subnormals.
            None => return false,
        },
    };
    let frac_digits = mantissa
        .iter()
        .position(|&c| c == b'.')
        .map_or(0, |dot| mantissa.len() - dot - 1) as i64;
    // The lowest set bit of the digits, counted from the last digit.
    let mut trailing_zero_bits: i64 = 0;
    for &c in mantissa.iter().rev().filter(|&&c| c != b'.') {
        let d = match (c as char).to_digit(16) {
            Some(d) => d,
            None => return false,
        };
        if d != 0 {
            trailing_zero_bits += i64::from(d.trailing_zeros());
            return exp - 4 * frac_digits + trailing_zero_bits >= -1074;
        }
        trailing_zero_bits += 4;
    }
    false
}

/// Binary comparison, as Redis compares string objects.
fn cmp_bytes(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}

/// `strcoll` in the C locale: bytes up to the first NUL.
fn cmp_c(a: &[u8], b: &[u8]) -> Ordering {
    c_str(a).cmp(c_str(b))
}

struct Item {
    elem: Vec<u8>,
    score: f64,
    by: Option<Vec<u8>>,
}

fn sort_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], readonly: bool) -> Result<Frame, CmdError> {
    let mut desc = false;
    let mut alpha = false;
    let (mut limit_start, mut limit_count): (i64, i64) = (0, -1);
    let mut dontsort = false;
    let mut sortby: Option<&Bytes> = None;
    let mut store: Option<&Bytes> = None;
    let mut gets: Vec<&Bytes> = Vec::new();
    let mut j = 2;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let a = &argv[j];
        if is(a, "asc") {
            desc = false;
        } else if is(a, "desc") {
            desc = true;
        } else if is(a, "alpha") {
            alpha = true;
        } else if is(a, "limit") && left >= 2 {
            limit_start = keel_engine::args::parse_i64(&argv[j + 1])?;
            limit_count = keel_engine::args::parse_i64(&argv[j + 2])?;
            j += 2;
        } else if !readonly && is(a, "store") && left >= 1 {
            store = Some(&argv[j + 1]);
            j += 1;
        } else if is(a, "by") && left >= 1 {
            sortby = Some(&argv[j + 1]);
            if !c_str(&argv[j + 1]).contains(&b'*') {
                dontsort = true;
            } else if !full_key_access(ctx) {
                return Err(CmdError::err(
                    "BY option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            j += 1;
        } else if is(a, "get") && left >= 1 {
            if !full_key_access(ctx) {
                return Err(CmdError::err(
                    "GET option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            gets.push(&argv[j + 1]);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }

    let key = &argv[1];
    let now = ctx.now_ms();
    let in_script = ctx.in_script;
    let mut entry = ctx.table(key)?.get(key, now).map(|e| &e.value);
    let ty = entry.map(Value::value_type);
    if !matches!(
        ty,
        None | Some(ValueType::List | ValueType::Set | ValueType::ZSet)
    ) {
        ctx.hit_key(key, true);
        return Err(CmdError::WrongType);
    }
    // Redis converts a compact sorted set it sorts to its general encoding,
    // where it stays (OBJECT ENCODING reports "skiplist" afterwards).
    if matches!(entry, Some(Value::ZSetPacked(_))) {
        if let Some(e) = ctx.table(key)?.get_mut(key, now) {
            zset::convert_to_index(&mut e.value);
        }
        entry = ctx.table(key)?.get(key, now).map(|e| &e.value);
    }
    // A set has no order of its own: unsorted output would differ between
    // runs, so a stored or scripted one is sorted by bytes.
    if dontsort && ty == Some(ValueType::Set) && (store.is_some() || in_script) {
        dontsort = false;
        alpha = true;
        sortby = None;
    }
    let total = entry.map_or(0, |v| match ty {
        Some(ValueType::List) => list::len(v),
        Some(ValueType::Set) => v.set_len(),
        Some(ValueType::ZSet) => zset::len(v),
        _ => 0,
    }) as i64;
    let mut start = limit_start.max(0);
    let mut end = if limit_count < 0 {
        total - 1
    } else {
        start.saturating_add(limit_count).saturating_sub(1)
    };
    if start >= total {
        start = total - 1;
        end = total - 2;
    }
    if end >= total {
        end = total - 1;
    }

    // Load the elements; without sorting, lists and sorted sets are read in
    // their own order (reversed for DESC), only the LIMIT range.
    let ordered = matches!(ty, Some(ValueType::List | ValueType::ZSet));
    let elems: Vec<Vec<u8>> = match entry {
        None => Vec::new(),
        Some(v) if dontsort && ordered => {
            let mut out = Vec::new();
            if end >= start {
                let (s, e) = (start as usize, end as usize);
                let n = total as usize;
                // Ranks in the chosen direction.
                let (lo, hi) = if desc { (n - 1 - e, n - 1 - s) } else { (s, e) };
                if ty == Some(ValueType::List) {
                    list::range_with(v, lo as i64, hi as i64, |m| out.push(m.to_vec()));
                } else {
                    zset::for_each_in(v, lo, hi + 1, false, |m, _| out.push(m.to_vec()));
                }
                if desc {
                    out.reverse();
                }
            }
            end -= start;
            start = 0;
            out
        }
        Some(v) => match ty {
            Some(ValueType::List) => list::to_vec(v),
            Some(ValueType::Set) => v.set_members(),
            _ => zset::to_vec(v).into_iter().map(|(m, _)| m).collect(),
        },
    };
    ctx.hit_key(key, entry_exists(ty));

    let mut items: Vec<Item> = elems
        .into_iter()
        .map(|elem| Item {
            elem,
            score: 0.0,
            by: None,
        })
        .collect();
    let mut conversion_error = false;
    if !dontsort {
        for it in &mut items {
            let by = match sortby {
                Some(p) => match lookup_pattern(ctx, p, &it.elem) {
                    Some(v) => v,
                    None => continue,
                },
                None => it.elem.clone(),
            };
            if alpha {
                if sortby.is_some() {
                    it.by = Some(by);
                }
            } else {
                match weight(&by) {
                    Some(s) => it.score = s,
                    None => conversion_error = true,
                }
            }
        }
        let storing = store.is_some();
        let by_pattern = sortby.is_some();
        let cmp = |a: &Item, b: &Item| -> Ordering {
            let o = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| cmp_bytes(&a.elem, &b.elem))
            } else if by_pattern {
                match (&a.by, &b.by) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) if storing => cmp_bytes(x, y),
                    (Some(x), Some(y)) => cmp_c(x, y),
                }
            } else if storing {
                cmp_bytes(&a.elem, &b.elem)
            } else {
                cmp_c(&a.elem, &b.elem)
            };
            if desc {
                o.reverse()
            } else {
                o
            }
        };
        // Redis sorts with the C library's qsort (glibc's merge sort, stable),
        // but with its partial quicksort when BY names a pattern and LIMIT
        // narrows the range: ties then come out in that algorithm's order.
        if by_pattern && (start != 0 || end != items.len() as i64 - 1) {
            keel_store::pqsort::pqsort(&mut items, start, end, cmp);
        } else {
            items.sort_by(cmp);
        }
    }
    if conversion_error {
        return Err(CmdError::err(
            "One or more scores can't be converted into double",
        ));
    }

    let range: &[Item] = if end >= start && start >= 0 {
        let hi = (end as usize + 1).min(items.len());
        items.get(start as usize..hi).unwrap_or(&[])
    } else {
        &[]
    };
    let Some(dst) = store else {
        let mut out = Vec::with_capacity(range.len() * gets.len().max(1));
        for it in range {
            if gets.is_empty() {
                out.push(Frame::Bulk(Bytes::from(it.elem.clone())));
            }
            for g in &gets {
                out.push(match lookup_pattern(ctx, g, &it.elem) {
                    Some(v) => Frame::Bulk(Bytes::from(v)),
                    None => Frame::Null,
                });
            }
        }
        return Ok(Frame::Array(out));
    };
    let mut values: Vec<Vec<u8>> = Vec::with_capacity(range.len() * gets.len().max(1));
    for it in range {
        if gets.is_empty() {
            values.push(it.elem.clone());
        }
        for g in &gets {
            values.push(lookup_pattern(ctx, g, &it.elem).unwrap_or_default());
        }
    }
    let db = ctx.db();
    let limits = ctx.limits();
    let table = ctx.table(dst)?;
    if values.is_empty() {
        if table.remove_any(dst).is_some() {
            ctx.dirty(1);
            ctx.modified(db, dst);
            ctx.notify(Class::GENERIC, "del", dst);
        }
        return Ok(Frame::Integer(0));
    }
    let mut v = list::new_value();
    list::push(&mut v, End::Right, &values, &limits);
    table.insert(dst, v, 0, now);
    ctx.dirty(values.len() as u64);
    ctx.modified(db, dst);
    ctx.notify(Class::LIST, "sortstore", dst);
    Ok(Frame::Integer(values.len() as i64))
}

fn entry_exists(ty: Option<ValueType>) -> bool {
    ty.is_some()
}

/// Whether the client's user may reach every key (BY and GET patterns
/// need it, as in Redis).
fn full_key_access(ctx: &Ctx<'_>) -> bool {
    match ctx.session.user.as_ref() {
        None => true,
        Some(u) if u.free() => true,
        Some(u) => {
            let st = u.state();
            std::iter::once(&st.root)
                .chain(&st.selectors)
                .any(|s| s.all_keys)
        }
    }
}
