//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST. A
//! HyperLogLog is a plain string in Redis's `HYLL` format
//! (`keel_store::hll`), so GET, SET, DUMP, RESTORE and the RDB carry it
//! unchanged. Every string is checked before it is used: another string is
//! `WRONGTYPE Key is not a valid HyperLogLog string value.`, a damaged one
//! `INVALIDOBJ Corrupted HLL object detected`, and neither is changed.

use crate::strings::read_str;
use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::hll::{self, Encoding, HllError, REGISTERS};
use keel_store::{StrBytes, Value};
use std::sync::atomic::Ordering;

pub static COMMANDS: &[&CommandSpec] = &[&PFADD, &PFCOUNT, &PFMERGE, &PFDEBUG, &PFSELFTEST];

fn sparse_max_bytes(ctx: &Ctx<'_>) -> usize {
    let max = ctx
        .engine
        .config
        .ops
        .hll_sparse_max_bytes
        .load(Ordering::Relaxed);
    usize::try_from(max).unwrap_or(0)
}

/// The checked HLL string at `key` for writing, created empty when missing
/// (and whether it was created). The key keeps its expiry.
fn hll_for_write<'t>(
    ctx: &'t mut Ctx<'_>,
    key: &[u8],
    check: fn(&[u8]) -> Result<Encoding, HllError>,
) -> Result<(&'t mut Vec<u8>, bool), CmdError> {
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    let created = match table.get_mut(key, now) {
        None => {
            table.insert(key, Value::Str(StrBytes::new(&hll::new_sparse())), 0, now);
            true
        }
        Some(e) => {
            check(e.value.as_str().ok_or(CmdError::WrongType)?.as_slice())?;
            false
        }
    };
    let entry = table
        .get_mut(key, now)
        .ok_or_else(|| CmdError::Internal("hll".into()))?;
    let buf = entry
        .value
        .as_str_mut()
        .ok_or(CmdError::WrongType)?
        .make_mut();
    Ok((buf, created))
}

pub(crate) const PFADD: CommandSpec = CommandSpec {
    name: "PFADD",
    group: Group::HyperLogLog,
    arity: -2,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Adds the specified elements to the specified HyperLogLog.",
    since: "2.8.9",
    complexity: "O(1) to add every element.",
    subcommands: &[],
    run: pfadd,
};

fn pfadd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let elements = args.rest();
    let max = sparse_max_bytes(ctx);
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    // One lookup: the registers are raised in place in the stored string,
    // as Redis does, or in a new one that is then stored.
    let changed = match table.get_mut(key, now) {
        Some(e) => {
            let s = e.value.as_str_mut().ok_or(CmdError::WrongType)?;
            // Like Redis, only the header is checked first: adding walks a
            // sparse body up to each element's register and refuses it as
            // corrupt where that walk runs off its end.
            hll::header(s.as_slice())?;
            add_all(s.make_mut(), elements, max, false)?
        }
        None => {
            let mut v = hll::new_sparse();
            // Like Redis, creating the key counts as a change even with no
            // elements.
            let changed = add_all(&mut v, elements, max, true)?;
            let value = Value::Str(StrBytes::growable(v));
            table.insert(key, value, 0, now);
            changed
        }
    };
    if changed > 0 {
        ctx.dirty(changed);
        ctx.notify(Class::STRING, "pfadd", key);
    }
    Ok(Frame::Integer(i64::from(changed > 0)))
}

/// Adds `elements` to the checked HLL in `buf`: how many changed a register
/// (plus one if the HLL is new), the cached cardinality marked stale if any.
fn add_all(
    buf: &mut Vec<u8>,
    elements: &[Bytes],
    max: usize,
    created: bool,
) -> Result<u64, CmdError> {
    let mut changed = u64::from(created);
    for element in elements {
        changed += u64::from(hll::add(buf, element, max)?);
    }
    if changed > 0 {
        hll::invalidate(buf);
    }
    Ok(changed)
}

pub(crate) const PFCOUNT: CommandSpec = CommandSpec {
    name: "PFCOUNT",
    group: Group::HyperLogLog,
    arity: -2,
    flags: Flags::READONLY,
    keys: Keys::range(1, -1, 1),
    summary:
        "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
    since: "2.8.9",
    complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
    subcommands: &[],
    run: pfcount,
};

fn pfcount(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let keys = args.rest();
    if let [key] = keys {
        return pfcount_one(ctx, key);
    }
    // Several keys: the count of their union, merged into a scratch sketch;
    // no key is changed.
    let mut max = Box::new([0u8; REGISTERS]);
    merge_keys(ctx, keys, &mut max)?;
    Ok(Frame::Integer(hll::count_registers(&max) as i64))
}

/// PFCOUNT of one key: the cached cardinality when valid, else computed and
/// written back into the value, which Redis counts as a change.
fn pfcount_one(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Frame, CmdError> {
    let Some(s) = read_str(ctx, key)? else {
        ctx.hit_key(key, false);
        return Ok(Frame::Integer(0));
    };
    // A valid cache is answered without reading the body, as Redis does.
    let computed = hll::header(s).and_then(|_| match hll::cached(s) {
        Some(card) => Ok((card, false)),
        None => hll::check(s)
            .and_then(|_| hll::count(s))
            .map(|card| (card, true)),
    });
    ctx.hit_key(key, true);
    let (card, fresh) = computed?;
    if fresh {
        let now = ctx.now_ms();
        if let Some(entry) = ctx.table(key)?.get_mut(key, now) {
            if let Some(s) = entry.value.as_str_mut() {
                hll::set_cached(s.make_mut(), card);
            }
        }
        ctx.dirty(1);
        // Logged as Redis propagates it, so a replayed log leaves the same bytes.
        let db = ctx.db();
        ctx.log_effect(
            db,
            vec![Bytes::from_static(b"PFCOUNT"), Bytes::copy_from_slice(key)],
        );
    }
    Ok(Frame::Integer(card as i64))
}

/// Raise `max` to every register of the HLLs at `keys` (missing keys are
/// empty); whether any of them is dense.
fn merge_keys(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    max: &mut [u8; REGISTERS],
) -> Result<bool, CmdError> {
    let mut any_dense = false;
    for key in keys {
        let Some(s) = read_str(ctx, key)? else {
            ctx.hit_key(key, false);
            continue;
        };
        let merged = hll::check(s).and_then(|enc| {
            hll::merge_into(max, s)?;
            Ok(enc == Encoding::Dense)
        });
        ctx.hit_key(key, true);
        any_dense |= merged?;
    }
    Ok(any_dense)
}

pub(crate) const PFMERGE: CommandSpec = CommandSpec {
    name: "PFMERGE",
    group: Group::HyperLogLog,
    arity: -2,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(1, -1, 1),
    summary: "Merge N different HyperLogLogs into a single one.",
    since: "2.8.9",
    complexity: "O(N) to merge N HyperLogLogs, but with high constant times.",
    subcommands: &[],
    run: pfmerge,
};

fn pfmerge(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let keys = args.rest();
    let Some(dest) = keys.first() else {
        return Err(CmdError::WrongArity("pfmerge".into()));
    };
    // The destination is the first source, so it is checked with the rest.
    let mut max = Box::new([0u8; REGISTERS]);
    let any_dense = merge_keys(ctx, keys, &mut max)?;
    let sparse_max = sparse_max_bytes(ctx);
    let (buf, _) = hll_for_write(ctx, dest, hll::check)?;
    // As in Redis, the result is dense if any source was, else it stays
    // sparse until a register or its size asks for dense.
    if any_dense {
        hll::to_dense(buf)?;
    }
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            hll::set_register(buf, i, m, sparse_max)?;
        }
    }
    hll::invalidate(buf);
    ctx.dirty(1);
    let db = ctx.db();
    ctx.modified(db, dest);
    // Redis reports a merge as `pfadd`.
    ctx.notify(Class::STRING, "pfadd", dest);
    Ok(Frame::ok())
}

pub(crate) const PFDEBUG: CommandSpec = CommandSpec {
    name: "PFDEBUG",
    group: Group::HyperLogLog,
    arity: 3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::ADMIN),
    keys: Keys::single(2),
    summary: "Internal commands for debugging HyperLogLog values",
    since: "2.8.9",
    complexity: "N/A",
    subcommands: &[],
    run: pfdebug,
};

fn pfdebug(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let sub = args.next_arg()?;
    let key = args.next_key()?;
    let now = ctx.now_ms();
    // Redis looks the key up before it reads the subcommand.
    let Some(entry) = ctx.table(key)?.get_mut(key, now) else {
        return Err(CmdError::err("The specified key does not exist"));
    };
    let s = entry.value.as_str_mut().ok_or(CmdError::WrongType)?;
    let enc = hll::header(s.as_slice())?;
    let converted = if is(sub, "GETREG") || is(sub, "TODENSE") {
        hll::to_dense(s.make_mut())?
    } else {
        false
    };
    let reply = if is(sub, "GETREG") {
        let regs = hll::registers(s.as_slice())?;
        Frame::Array(regs.iter().map(|&r| Frame::Integer(r.into())).collect())
    } else if is(sub, "TODENSE") {
        Frame::Integer(i64::from(converted))
    } else if is(sub, "DECODE") {
        if enc != Encoding::Sparse {
            return Err(CmdError::err("HLL encoding is not sparse"));
        }
        Frame::Bulk(Bytes::from(hll::decode(s.as_slice())))
    } else if is(sub, "ENCODING") {
        Frame::Simple(Bytes::from_static(enc.name().as_bytes()))
    } else {
        return Err(CmdError::err(format!(
            "Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(sub)
        )));
    };
    if converted {
        // Logged, so a replayed log converts too; Redis does not count the
        // conversion as a change of the key (WATCH).
        ctx.dirty(1);
        ctx.modified.get_or_insert_with(Vec::new);
    }
    Ok(reply)
}

pub(crate) const PFSELFTEST: CommandSpec = CommandSpec {
    name: "PFSELFTEST",
    group: Group::HyperLogLog,
    arity: 1,
    flags: Flags::ADMIN,
    keys: Keys::None,
    summary: "An internal command for testing HyperLogLog values",
    since: "2.8.9",
    complexity: "N/A",
    subcommands: &[],
    run: pfselftest,
};

/// Checks the register packing and that sparse and dense sketches fed the
/// same elements agree and estimate within bounds.
fn pfselftest(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let mut seed = ctx.random() | 1;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let failed = |what: String| CmdError::msg(format!("TESTFAILED {what}"));

    // Register packing: random values into a dense sketch read back exactly.
    let mut dense = hll::new_sparse();
    hll::to_dense(&mut dense)?;
    for _ in 0..4 {
        let mut want = vec![0u8; REGISTERS];
        let mut d = dense.clone();
        for (i, w) in want.iter_mut().enumerate() {
            *w = (next() % 64) as u8;
            // Raising from zero writes any non-zero value.
            hll::set_register(&mut d, i, *w, 0)?;
        }
        let got = hll::registers(&d)?;
        if let Some(i) = (0..REGISTERS).find(|&i| got[i] != want[i]) {
            return Err(failed(format!(
                "Register error at index {i}! Set {}, Get {}",
                want[i], got[i]
            )));
        }
    }

    // Sparse (never promoted by size) and dense agree; the error is bounded.
    let mut sparse = hll::new_sparse();
    let max_err = 5.0 * 1.04 / (REGISTERS as f64).sqrt();
    let base = next();
    for n in 1..=20_000u64 {
        let element = (base.wrapping_add(n)).to_le_bytes();
        hll::add(&mut sparse, &element, usize::MAX)?;
        hll::add(&mut dense, &element, usize::MAX)?;
        if n.is_power_of_two() || n % 5000 == 0 {
            let (cs, cd) = (hll::count(&sparse)?, hll::count(&dense)?);
            if cs != cd || hll::registers(&sparse)? != hll::registers(&dense)? {
                return Err(failed(format!(
                    "Sparse and dense differ after {n} elements: {cs} vs {cd}"
                )));
            }
            let err = (cd as f64 - n as f64).abs() / n as f64;
            let allowed = if n < 10 { 1.0 } else { max_err };
            if err > allowed {
                return Err(failed(format!(
                    "too big error. card:{n} abserr:{}",
                    (cd as f64 - n as f64).abs()
                )));
            }
        }
    }
    Ok(Frame::ok())
}
