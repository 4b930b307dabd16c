//! Roaring bitmap commands: redis-roaring's `R.*` family on 32-bit bitmaps and
//! its `R64.*` family on 64-bit ones, plus Keel's read-only `R.INTERSECT`.
//!
//! Every command is written once, generic over [`Width`] (the bitmap type and
//! what differs between the families: argument error texts, how an id is
//! replied, the type name), and declared twice by [`pair!`]. Replies, error
//! texts and argument forms follow redis-roaring: a missing key reads as an
//! empty bitmap except where redis-roaring requires the key (`R.DIFF`,
//! `R.CONTAINS`, `R.JACCARD`, `R.OPTIMIZE`: `Roaring: key does not exist`), and
//! counts go out as RESP3 big numbers (bulk strings in RESP2), as the module's
//! unsigned 64-bit replies do.
//!
//! Ranges are never walked bit by bit: `R.SETRANGE`, `R.SETFULL` and
//! `R.BITOP NOT` work per container. A 64-bit range is capped (a whole 64-bit
//! universe would not fit any memory), and replies that list members are capped
//! at redis-roaring's `R.RANGEINTARRAY` limit, since a reply is built in memory.
//!
//! Where Keel departs from redis-roaring, deliberately:
//! - `R.SETBIT key offset 0` on a missing key creates an empty bitmap
//!   (redis-roaring sets the bit whatever the value).
//! - `R.BITPOS key 0` is the first id not in the bitmap, 0 for a missing key,
//!   -1 only for a full universe (redis-roaring answers 1 for a missing key and
//!   -1 when the members run unbroken from 0; its 64-bit version answers 0).
//! - `R64.BITOP NOT` covers 0 up to and including the larger of `last` and the
//!   source's maximum, as `R.BITOP NOT` does (redis-roaring's 64-bit version
//!   leaves the top id out).
//! - `R.BITOP` matches its operation without regard to case; an unknown one is
//!   an error reply (redis-roaring sends `ERR syntax error` as a status).
//! - `R.RANGEINTARRAY 0 4294967295` is "range too large" (redis-roaring's
//!   32-bit size wraps to 0 and answers an empty array); `R.GETINTARRAY` of more
//!   than 100,000,000 members is refused the same way.
//! - 64-bit ranges add at most 2^36 ids, so `R64.SETFULL` is refused;
//!   `R.GETBITARRAY` past 512 MB is refused as Redis refuses such a string.
//! - `R.SETBITARRAY` refuses characters other than 0 and 1 (redis-roaring
//!   reads them as 0).

use bytes::{BufMut, Bytes, BytesMut};
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::num::parse_i64;
use keel_store::roaring::{self as store, Bitmap32, Bitmap64, RoaringSet};
use keel_store::{Value, ValueType};

pub static COMMANDS: &[&CommandSpec] = &[
    &R_SETBIT,
    &R64_SETBIT,
    &R_GETBIT,
    &R64_GETBIT,
    &R_GETBITS,
    &R64_GETBITS,
    &R_CLEARBITS,
    &R64_CLEARBITS,
    &R_SETINTARRAY,
    &R64_SETINTARRAY,
    &R_GETINTARRAY,
    &R64_GETINTARRAY,
    &R_RANGEINTARRAY,
    &R64_RANGEINTARRAY,
    &R_APPENDINTARRAY,
    &R64_APPENDINTARRAY,
    &R_DELETEINTARRAY,
    &R64_DELETEINTARRAY,
    &R_DIFF,
    &R64_DIFF,
    &R_SETFULL,
    &R64_SETFULL,
    &R_SETRANGE,
    &R64_SETRANGE,
    &R_OPTIMIZE,
    &R64_OPTIMIZE,
    &R_SETBITARRAY,
    &R64_SETBITARRAY,
    &R_GETBITARRAY,
    &R64_GETBITARRAY,
    &R_BITOP,
    &R64_BITOP,
    &R_BITCOUNT,
    &R64_BITCOUNT,
    &R_BITPOS,
    &R64_BITPOS,
    &R_MIN,
    &R64_MIN,
    &R_MAX,
    &R64_MAX,
    &R_CLEAR,
    &R64_CLEAR,
    &R_CONTAINS,
    &R64_CONTAINS,
    &R_JACCARD,
    &R64_JACCARD,
    &R_STAT,
    &R_INTERSECT,
];

const WRITE: Flags = Flags::WRITE.union(Flags::DENYOOM);
const READ: Flags = Flags::READONLY;

/// The most members a reply lists: redis-roaring's `R.RANGEINTARRAY` limit,
/// applied to every reply that lists members, since a reply is built whole.
pub const MAX_REPLY_IDS: u64 = 100_000_000;

/// The most ids one 64-bit range may add (`R64.SETRANGE`, `R64.SETFULL`,
/// `R64.BITOP NOT`): 2^36, sixteen full 32-bit buckets. A 64-bit bitmap holds
/// one 32-bit bitmap per 2^32 ids, so a larger range would take gigabytes.
pub const MAX_RANGE64: u64 = 1 << 36;

/// The longest `R.GETBITARRAY` reply: Redis's largest string (512 MB).
const MAX_BIT_ARRAY: u64 = 512 * 1024 * 1024;

fn key_missing() -> CmdError {
    CmdError::msg("Roaring: key does not exist")
}

fn key_exists() -> CmdError {
    CmdError::msg("Roaring: key already exist")
}

fn range_too_large() -> CmdError {
    CmdError::msg(format!(
        "Roaring: range too large: maximum {MAX_REPLY_IDS} elements"
    ))
}

fn range64_too_large() -> CmdError {
    CmdError::err(format!(
        "range too large: a 64-bit range adds at most {MAX_RANGE64} ids"
    ))
}

/// A bitmap width: the store type and what its command family does differently.
trait Width: RoaringSet {
    const TYPE: ValueType;
    /// `32` or `64`, as the argument errors say.
    const BITS: &'static str;
    /// The text after `ERR invalid end: ` when a range ends before it starts
    /// (the families word it differently).
    const END_BEFORE_START: &'static str;
    /// Whether ranges are capped at [`MAX_RANGE64`].
    const CAPPED: bool;
    fn of(v: &Value) -> Option<&Self>;
    fn of_mut(v: &mut Value) -> Option<&mut Self>;
    fn into_value(self) -> Value;
    fn parse_id(a: &[u8]) -> Option<Self::Id>;
    /// A member in a reply: an integer for 32-bit ids, an unsigned 64-bit
    /// number (big number) for 64-bit ones.
    fn id_reply(id: Self::Id) -> Frame;
}

impl Width for Bitmap32 {
    const TYPE: ValueType = ValueType::Roaring;
    const BITS: &'static str = "32";
    const END_BEFORE_START: &'static str = "must be >= start";
    const CAPPED: bool = false;
    fn of(v: &Value) -> Option<&Self> {
        match v {
            Value::Roaring(b) => Some(b),
            _ => None,
        }
    }
    fn of_mut(v: &mut Value) -> Option<&mut Self> {
        match v {
            Value::Roaring(b) => Some(b),
            _ => None,
        }
    }
    fn into_value(self) -> Value {
        Value::Roaring(Box::new(self))
    }
    fn parse_id(a: &[u8]) -> Option<u32> {
        parse_i64(a).and_then(|n| u32::try_from(n).ok())
    }
    fn id_reply(id: u32) -> Frame {
        Frame::Integer(i64::from(id))
    }
}

impl Width for Bitmap64 {
    const TYPE: ValueType = ValueType::Roaring64;
    const BITS: &'static str = "64";
    const END_BEFORE_START: &'static str = "must >= start";
    const CAPPED: bool = true;
    fn of(v: &Value) -> Option<&Self> {
        match v {
            Value::Roaring64(b) => Some(b),
            _ => None,
        }
    }
    fn of_mut(v: &mut Value) -> Option<&mut Self> {
        match v {
            Value::Roaring64(b) => Some(b),
            _ => None,
        }
    }
    fn into_value(self) -> Value {
        Value::Roaring64(Box::new(self))
    }
    fn parse_id(a: &[u8]) -> Option<u64> {
        match parse_i64(a) {
            Some(n) => u64::try_from(n).ok(),
            // Past i64: plain digits only.
            None if !a.is_empty() && a.iter().all(u8::is_ascii_digit) => {
                std::str::from_utf8(a).ok()?.parse().ok()
            }
            None => None,
        }
    }
    fn id_reply(id: u64) -> Frame {
        uint64(id)
    }
}

/// An unsigned 64-bit count as redis-roaring replies it: a big number.
fn uint64(n: u64) -> Frame {
    Frame::BigNumber(Bytes::from(n.to_string()))
}

fn parse_id<B: Width>(a: &[u8], what: &str) -> Result<B::Id, CmdError> {
    B::parse_id(a).ok_or_else(|| {
        CmdError::err(format!(
            "invalid {what}: must be an unsigned {} bit integer",
            B::BITS
        ))
    })
}

fn parse_ids<B: Width>(args: &[Bytes], what: &str) -> Result<Vec<B::Id>, CmdError> {
    args.iter().map(|a| parse_id::<B>(a, what)).collect()
}

fn parse_bit(a: &[u8], what: &str) -> Result<bool, CmdError> {
    match parse_i64(a) {
        Some(0) => Ok(false),
        Some(1) => Ok(true),
        _ => Err(CmdError::err(format!(
            "invalid {what}: must be either 0 or 1"
        ))),
    }
}

/// The bitmap at `key` for a read: `None` when absent, WRONGTYPE for another type.
fn read<'t, B: Width>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t B>, CmdError> {
    Ok(ctx.read_value(key, B::TYPE)?.and_then(B::of))
}

/// Like [`read`], but a missing key is an error.
fn existing<'t, B: Width>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<&'t B, CmdError> {
    read::<B>(ctx, key)?.ok_or_else(key_missing)
}

/// The bitmap at `key` for a write: `None` when absent, WRONGTYPE for another type.
fn write<'t, B: Width>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t mut B>, CmdError> {
    let now = ctx.now_ms();
    match ctx.table(key)?.get_mut(key, now) {
        Some(e) => B::of_mut(&mut e.value).map(Some).ok_or(CmdError::WrongType),
        None => Ok(None),
    }
}

/// Fails with WRONGTYPE when `key` holds something other than a `B` bitmap.
fn check_type<B: Width>(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<(), CmdError> {
    write::<B>(ctx, key).map(|_| ())
}

/// Stores `b` under `key`, replacing whatever was there (and its expiry), as a
/// module's set-value does.
fn store<B: Width>(ctx: &mut Ctx<'_>, key: &[u8], b: B) -> Result<(), CmdError> {
    let now = ctx.now_ms();
    ctx.table(key)?.insert(key, b.into_value(), 0, now);
    ctx.dirty(1);
    Ok(())
}

/// The bitmap at `key` for a write, created empty when absent.
fn write_or_create<'t, B: Width>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<&'t mut B, CmdError> {
    if write::<B>(ctx, key)?.is_none() {
        store(ctx, key, B::default())?;
    }
    write::<B>(ctx, key)?.ok_or_else(|| CmdError::Internal("bitmap vanished".into()))
}

/// Adds `lo..=hi`, refusing a 64-bit range past [`MAX_RANGE64`] before any work.
fn checked_range<B: Width>(lo: B::Id, hi: B::Id) -> Result<(), CmdError> {
    let span = Into::<u64>::into(hi).saturating_sub(lo.into());
    if B::CAPPED && span >= MAX_RANGE64 {
        return Err(range64_too_large());
    }
    Ok(())
}

/// Members as an array reply, encoded as it is built (about 12 bytes a member
/// rather than a frame each): integers for 32-bit ids; for 64-bit ids the big
/// numbers redis-roaring replies, which RESP2 sends as bulk strings. `n` is the
/// number of ids the iterator yields.
fn id_array<B: Width>(ids: impl Iterator<Item = B::Id>, n: u64, resp3: bool) -> Frame {
    use std::fmt::Write as _;
    let mut buf = BytesMut::with_capacity(16 + 12 * n.min(1 << 20) as usize);
    buf.put_slice(format!("*{n}\r\n").as_bytes());
    let mut item = String::new();
    for id in ids {
        item.clear();
        let _ = if B::BITS == "32" {
            write!(item, ":{id}\r\n")
        } else if resp3 {
            write!(item, "({id}\r\n")
        } else {
            let digits = id.to_string();
            write!(item, "${}\r\n{digits}\r\n", digits.len())
        };
        buf.put_slice(item.as_bytes());
    }
    Frame::Encoded(buf.freeze())
}

macro_rules! pair {
    ($r32:ident, $r64:ident, $name:literal, $arity:expr, $flags:expr, $keys:expr,
     $summary:literal, $complexity:literal, $run:ident) => {
        pub(crate) const $r32: CommandSpec = CommandSpec {
            name: concat!("R.", $name),
            group: Group::Roaring,
            arity: $arity,
            flags: $flags,
            keys: $keys,
            summary: $summary,
            since: "1.0.0",
            complexity: $complexity,
            subcommands: &[],
            run: $run::<Bitmap32>,
        };
        pub(crate) const $r64: CommandSpec = CommandSpec {
            name: concat!("R64.", $name),
            group: Group::Roaring64,
            arity: $arity,
            flags: $flags,
            keys: $keys,
            summary: $summary,
            since: "1.0.0",
            complexity: $complexity,
            subcommands: &[],
            run: $run::<Bitmap64>,
        };
    };
}

// ---------------------------------------------------------------------------
// Single bits

pair!(
    R_SETBIT,
    R64_SETBIT,
    "SETBIT",
    4,
    WRITE,
    Keys::single(1),
    "Sets or clears the bit at an offset of a Roaring bitmap and returns its previous value",
    "O(1)",
    setbit
);

fn setbit<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    check_type::<B>(ctx, key)?;
    let offset = parse_id::<B>(args.next_arg()?, "offset")?;
    let value = parse_bit(args.next_arg()?, "value")?;
    let b = write_or_create::<B>(ctx, key)?;
    let old = if value {
        !b.insert(offset)
    } else {
        b.remove(offset)
    };
    ctx.dirty(1);
    Ok(Frame::Integer(i64::from(old)))
}

pair!(
    R_GETBIT,
    R64_GETBIT,
    "GETBIT",
    3,
    READ.union(Flags::FAST),
    Keys::single(1),
    "Returns the bit at an offset of a Roaring bitmap",
    "O(1)",
    getbit
);

fn getbit<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let b = read::<B>(ctx, key)?;
    let offset = parse_id::<B>(args.next_arg()?, "offset")?;
    Ok(Frame::Integer(i64::from(
        b.is_some_and(|b| b.contains(offset)),
    )))
}

pair!(
    R_GETBITS,
    R64_GETBITS,
    "GETBITS",
    -3,
    READ,
    Keys::single(1),
    "Returns the bits at several offsets of a Roaring bitmap",
    "O(N), where N is the number of offsets",
    getbits
);

fn getbits<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let Some(b) = read::<B>(ctx, key)? else {
        return Ok(Frame::Array(Vec::new()));
    };
    let offsets = parse_ids::<B>(args.rest(), "offset")?;
    Ok(Frame::Array(
        offsets
            .into_iter()
            .map(|o| Frame::Integer(i64::from(b.contains(o))))
            .collect(),
    ))
}

pair!(
    R_CLEARBITS,
    R64_CLEARBITS,
    "CLEARBITS",
    -3,
    WRITE,
    Keys::single(1),
    "Clears the bits at several offsets of a Roaring bitmap; with COUNT, returns how many were set",
    "O(N), where N is the number of offsets",
    clearbits
);

fn clearbits<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    if write::<B>(ctx, key)?.is_none() {
        return Ok(Frame::Null);
    }
    let mut rest = args.rest();
    // redis-roaring matches the option exactly, in capitals.
    let count = rest.last().is_some_and(|a| a.as_ref() == b"COUNT");
    if count {
        rest = &rest[..rest.len() - 1];
    }
    let offsets = parse_ids::<B>(rest, "offset")?;
    let b = write_or_create::<B>(ctx, key)?;
    let cleared = offsets.into_iter().filter(|o| b.remove(*o)).count();
    ctx.dirty(1);
    Ok(if count {
        Frame::Integer(cleared as i64)
    } else {
        Frame::ok()
    })
}

// ---------------------------------------------------------------------------
// Integer arrays

pair!(
    R_SETINTARRAY,
    R64_SETINTARRAY,
    "SETINTARRAY",
    -3,
    WRITE,
    Keys::single(1),
    "Creates or replaces a Roaring bitmap holding the given integers",
    "O(N), where N is the number of values",
    setintarray
);

fn setintarray<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    check_type::<B>(ctx, key)?;
    let values = parse_ids::<B>(args.rest(), "value")?;
    let mut b = B::default();
    for v in values {
        b.insert(v);
    }
    store(ctx, key, b)?;
    Ok(Frame::ok())
}

pair!(
    R_APPENDINTARRAY,
    R64_APPENDINTARRAY,
    "APPENDINTARRAY",
    -3,
    WRITE,
    Keys::single(1),
    "Sets the bits at the given integers of a Roaring bitmap, creating it if needed",
    "O(N), where N is the number of values",
    appendintarray
);

fn appendintarray<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    check_type::<B>(ctx, key)?;
    let values = parse_ids::<B>(args.rest(), "value")?;
    let b = write_or_create::<B>(ctx, key)?;
    for v in values {
        b.insert(v);
    }
    ctx.dirty(1);
    Ok(Frame::ok())
}

pair!(
    R_DELETEINTARRAY,
    R64_DELETEINTARRAY,
    "DELETEINTARRAY",
    -3,
    WRITE,
    Keys::single(1),
    "Clears the bits at the given integers of a Roaring bitmap",
    "O(N), where N is the number of values",
    deleteintarray
);

fn deleteintarray<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    if write::<B>(ctx, key)?.is_none() {
        // redis-roaring creates an empty bitmap here, values unread.
        store(ctx, key, B::default())?;
        return Ok(Frame::ok());
    }
    let values = parse_ids::<B>(args.rest(), "value")?;
    let b = write_or_create::<B>(ctx, key)?;
    for v in values {
        b.remove(v);
    }
    ctx.dirty(1);
    Ok(Frame::ok())
}

pair!(
    R_GETINTARRAY,
    R64_GETINTARRAY,
    "GETINTARRAY",
    2,
    READ,
    Keys::single(1),
    "Returns the members of a Roaring bitmap, ascending",
    "O(N), where N is the number of members",
    getintarray
);

fn getintarray<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let resp3 = ctx.resp3();
    let Some(b) = read::<B>(ctx, key)? else {
        return Ok(Frame::Array(Vec::new()));
    };
    let n = b.cardinality();
    if n > MAX_REPLY_IDS {
        return Err(range_too_large());
    }
    Ok(id_array::<B>(b.iter_from(B::default_min()), n, resp3))
}

pair!(
    R_RANGEINTARRAY,
    R64_RANGEINTARRAY,
    "RANGEINTARRAY",
    4,
    READ,
    Keys::single(1),
    "Returns the members of a Roaring bitmap from the start-th to the end-th (0-based, inclusive)",
    "O(N), where N is the number of members returned",
    rangeintarray
);

fn rangeintarray<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let resp3 = ctx.resp3();
    let b = read::<B>(ctx, key)?;
    let start: u64 = parse_id::<B>(args.next_arg()?, "start")?.into();
    let end: u64 = parse_id::<B>(args.next_arg()?, "end")?.into();
    if start > end {
        return Ok(Frame::Array(Vec::new()));
    }
    if end - start >= MAX_REPLY_IDS {
        return Err(range_too_large());
    }
    let Some(b) = b else {
        return Ok(Frame::Array(Vec::new()));
    };
    let Some(first) = b.select(start) else {
        return Ok(Frame::Array(Vec::new()));
    };
    let n = (end - start + 1).min(b.cardinality() - start);
    Ok(id_array::<B>(b.iter_from(first).take(n as usize), n, resp3))
}

/// The smallest id, where a walk of every member starts.
trait DefaultMin: RoaringSet {
    fn default_min() -> Self::Id;
}

impl<B: RoaringSet> DefaultMin for B {
    fn default_min() -> B::Id {
        B::Id::try_from(0u64).unwrap_or(B::MAX)
    }
}

// ---------------------------------------------------------------------------
// Bit arrays

pair!(
    R_SETBITARRAY,
    R64_SETBITARRAY,
    "SETBITARRAY",
    3,
    WRITE,
    Keys::single(1),
    "Creates or replaces a Roaring bitmap from a string of 0 and 1 characters",
    "O(N), where N is the length of the string",
    setbitarray
);

fn setbitarray<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    check_type::<B>(ctx, key)?;
    let bits = args.next_arg()?;
    if bits.iter().any(|c| *c != b'0' && *c != b'1') {
        return Err(CmdError::err(
            "invalid bit array: must hold only the characters 0 and 1",
        ));
    }
    let mut b = B::default();
    for (i, _) in bits.iter().enumerate().filter(|(_, c)| **c == b'1') {
        if let Ok(id) = B::Id::try_from(i as u64) {
            b.insert(id);
        }
    }
    store(ctx, key, b)?;
    Ok(Frame::ok())
}

pair!(
    R_GETBITARRAY,
    R64_GETBITARRAY,
    "GETBITARRAY",
    2,
    READ,
    Keys::single(1),
    "Returns a Roaring bitmap as a string of 0 and 1 characters, up to its largest member",
    "O(N), where N is the largest member",
    getbitarray
);

fn getbitarray<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let Some(b) = read::<B>(ctx, key)? else {
        return Ok(Frame::Simple(Bytes::new()));
    };
    // An empty bitmap reads as one 0, as redis-roaring's maximum of nothing is 0.
    let len = b
        .max()
        .map_or(1, |m| Into::<u64>::into(m).saturating_add(1));
    if len > MAX_BIT_ARRAY {
        return Err(CmdError::StringTooLong);
    }
    let mut out = vec![b'0'; len as usize];
    for id in b.iter_from(B::default_min()) {
        if let Some(c) = out.get_mut(Into::<u64>::into(id) as usize) {
            *c = b'1';
        }
    }
    Ok(Frame::Bulk(Bytes::from(out)))
}

// ---------------------------------------------------------------------------
// Ranges

pair!(
    R_SETRANGE,
    R64_SETRANGE,
    "SETRANGE",
    4,
    WRITE,
    Keys::single(1),
    "Sets the bits from start up to, not including, end in a Roaring bitmap",
    "O(C), where C is the number of containers the range covers",
    setrange
);

fn setrange<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    check_type::<B>(ctx, key)?;
    let start = parse_id::<B>(args.next_arg()?, "start")?;
    let end = parse_id::<B>(args.next_arg()?, "end")?;
    if end < start {
        return Err(CmdError::err(format!(
            "invalid end: {}",
            B::END_BEFORE_START
        )));
    }
    checked_range::<B>(start, end)?;
    let b = write_or_create::<B>(ctx, key)?;
    // The end is exclusive, as redis-roaring's range adds are.
    let (lo, hi): (u64, u64) = (start.into(), end.into());
    if hi > lo {
        if let Ok(last) = B::Id::try_from(hi - 1) {
            b.insert_range(start, last);
        }
    }
    ctx.dirty(1);
    Ok(Frame::ok())
}

pair!(
    R_SETFULL,
    R64_SETFULL,
    "SETFULL",
    2,
    WRITE,
    Keys::single(1),
    "Creates a Roaring bitmap holding every id",
    "O(C), where C is the number of containers",
    setfull
);

fn setfull<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    if write::<B>(ctx, key)?.is_some() {
        return Err(key_exists());
    }
    let zero = B::default_min();
    checked_range::<B>(zero, B::MAX)?;
    let mut b = B::default();
    b.insert_range(zero, B::MAX);
    store(ctx, key, b)?;
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------
// Set operations

pair!(
    R_BITOP, R64_BITOP, "BITOP", -4, WRITE, Keys::range(2, -1, 1),
    "Stores AND, OR, XOR, NOT, ANDOR, ONE, DIFF or DIFF1 of Roaring bitmaps in destkey and returns its cardinality",
    "O(C), where C is the number of containers", bitop
);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Xor,
    AndOr,
    One,
    Diff,
    Diff1,
}

fn bitop<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let op = args.next_arg()?;
    let op = [
        ("AND", Op::And),
        ("OR", Op::Or),
        ("XOR", Op::Xor),
        ("ANDOR", Op::AndOr),
        ("ONE", Op::One),
        ("DIFF", Op::Diff),
        ("DIFF1", Op::Diff1),
    ]
    .into_iter()
    .find(|(name, _)| is(op, name))
    .map(|(_, op)| op);
    let name = args.argv().first().cloned().unwrap_or_default();
    let arity = || CmdError::WrongArity(String::from_utf8_lossy(&name).to_ascii_lowercase());
    let Some(op) = op else {
        if is(args.argv()[1].as_ref(), "NOT") {
            return bitop_not::<B>(ctx, args, arity);
        }
        return Err(CmdError::Syntax);
    };
    let dest = args.next_key()?;
    let sources = args.rest();
    if sources.len() < 2 {
        return Err(arity());
    }
    check_type::<B>(ctx, dest)?;
    let mut result: Option<B> = None;
    let mut seen_twice = B::default();
    let empty = B::default();
    for key in sources {
        let src = read::<B>(ctx, key)?.unwrap_or(&empty);
        let Some(acc) = result.as_mut() else {
            result = Some(src.clone());
            continue;
        };
        match op {
            Op::And => acc.and_assign(src),
            Op::Or => acc.or_assign(src),
            Op::Xor => acc.xor_assign(src),
            Op::One => {
                let mut both = acc.clone();
                both.and_assign(src);
                seen_twice.or_assign(&both);
                acc.xor_assign(src);
                acc.sub_assign(&seen_twice);
            }
            // The first source against the union of the others: collect the
            // union in `seen_twice` and combine once at the end.
            Op::AndOr | Op::Diff | Op::Diff1 => seen_twice.or_assign(src),
        }
    }
    let mut result = result.unwrap_or_default();
    match op {
        Op::AndOr => result.and_assign(&seen_twice),
        Op::Diff => result.sub_assign(&seen_twice),
        Op::Diff1 => {
            seen_twice.sub_assign(&result);
            result = seen_twice;
        }
        _ => {}
    }
    let card = result.cardinality();
    replace_keep_ttl(ctx, dest, result)?;
    let db = ctx.db();
    ctx.modified(db, dest);
    Ok(uint64(card))
}

/// Writes `b` over an existing bitmap at `key` in place (its expiry stays, as
/// redis-roaring's BITOP writes into the destination it opened), or stores it
/// new.
fn replace_keep_ttl<B: Width>(ctx: &mut Ctx<'_>, key: &[u8], b: B) -> Result<(), CmdError> {
    match write::<B>(ctx, key)? {
        Some(old) => {
            *old = b;
            ctx.dirty(1);
            Ok(())
        }
        None => store(ctx, key, b),
    }
}

/// `R.BITOP NOT destkey srckey [last]`: the ids from 0 to the larger of `last`
/// and the source's maximum that the source lacks.
fn bitop_not<B: Width>(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    arity: impl Fn() -> CmdError,
) -> Result<Frame, CmdError> {
    let dest = args.next_key()?;
    let src = args.next_key()?;
    let last = match args.rest() {
        [] => None,
        [l] => Some(parse_id::<B>(l, "last")?),
        _ => return Err(arity()),
    };
    check_type::<B>(ctx, dest)?;
    let empty = B::default();
    let source = read::<B>(ctx, src)?.unwrap_or(&empty);
    let top = match (last, source.max()) {
        (Some(l), Some(m)) => Some(l.max(m)),
        (l, m) => l.or(m),
    };
    let mut result = B::default();
    if let Some(top) = top {
        let zero = B::default_min();
        checked_range::<B>(zero, top)?;
        result.insert_range(zero, top);
        result.sub_assign(source);
    }
    let card = result.cardinality();
    store(ctx, dest, result)?;
    let db = ctx.db();
    ctx.modified(db, dest);
    Ok(uint64(card))
}

pair!(
    R_DIFF,
    R64_DIFF,
    "DIFF",
    4,
    WRITE,
    Keys::range(1, 3, 1),
    "Stores in destkey the members of key1 that key2 lacks",
    "O(C), where C is the number of containers",
    diff
);

fn diff<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let dest = args.next_key()?;
    let a = args.next_key()?;
    let b = args.next_key()?;
    check_type::<B>(ctx, dest)?;
    let mut result = existing::<B>(ctx, a)?.clone();
    result.sub_assign(existing::<B>(ctx, b)?);
    store(ctx, dest, result)?;
    let db = ctx.db();
    ctx.modified(db, dest);
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------
// Queries

pair!(
    R_BITCOUNT,
    R64_BITCOUNT,
    "BITCOUNT",
    2,
    READ.union(Flags::FAST),
    Keys::single(1),
    "Returns the number of members of a Roaring bitmap",
    "O(C), where C is the number of containers",
    bitcount
);

fn bitcount<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    Ok(uint64(read::<B>(ctx, key)?.map_or(0, |b| b.cardinality())))
}

pair!(
    R_BITPOS,
    R64_BITPOS,
    "BITPOS",
    3,
    READ,
    Keys::single(1),
    "Returns the first id that is set (1) or not set (0) in a Roaring bitmap, -1 if none",
    "O(C), where C is the number of containers",
    bitpos
);

fn bitpos<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let b = read::<B>(ctx, key)?;
    let bit = parse_bit(args.next_arg()?, "bit")?;
    let empty = B::default();
    let b = b.unwrap_or(&empty);
    let found = if bit { b.min() } else { store::first_absent(b) };
    Ok(found.map_or(Frame::Integer(-1), B::id_reply))
}

pair!(
    R_MIN,
    R64_MIN,
    "MIN",
    2,
    READ.union(Flags::FAST),
    Keys::single(1),
    "Returns the smallest member of a Roaring bitmap, -1 if it is empty",
    "O(1)",
    min
);

fn min<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let m = read::<B>(ctx, key)?.and_then(|b| b.min());
    Ok(m.map_or(Frame::Integer(-1), B::id_reply))
}

pair!(
    R_MAX,
    R64_MAX,
    "MAX",
    2,
    READ.union(Flags::FAST),
    Keys::single(1),
    "Returns the largest member of a Roaring bitmap, -1 if it is empty",
    "O(1)",
    max
);

fn max<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let m = read::<B>(ctx, key)?.and_then(|b| b.max());
    Ok(m.map_or(Frame::Integer(-1), B::id_reply))
}

pair!(
    R_CLEAR,
    R64_CLEAR,
    "CLEAR",
    2,
    WRITE,
    Keys::single(1),
    "Removes every member of a Roaring bitmap, keeping the key, and returns how many there were",
    "O(C), where C is the number of containers",
    clear
);

fn clear<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let Some(b) = write::<B>(ctx, key)? else {
        return Ok(Frame::Null);
    };
    let n = b.cardinality();
    *b = B::default();
    ctx.dirty(1);
    Ok(Frame::Integer(n as i64))
}

pair!(
    R_CONTAINS, R64_CONTAINS, "CONTAINS", -3, READ, Keys::range(1, 2, 1),
    "Whether two Roaring bitmaps intersect (or, with ALL, ALL_STRICT or EQ, whether key2 is a subset, strict subset or equal of key1)",
    "O(C), where C is the number of containers", contains
);

fn contains<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let k1 = args.next_key()?;
    let k2 = args.next_key()?;
    let mode = match args.rest() {
        [] => None,
        [m] => Some(m),
        _ => return Err(CmdError::Syntax),
    };
    existing::<B>(ctx, k1)?;
    existing::<B>(ctx, k2)?;
    #[derive(Clone, Copy)]
    enum Mode {
        Any,
        All,
        AllStrict,
        Eq,
    }
    let mode = match mode.map(|m| m.as_ref()) {
        None => Mode::Any,
        Some(b"ALL") => Mode::All,
        Some(b"ALL_STRICT") => Mode::AllStrict,
        Some(b"EQ") => Mode::Eq,
        Some(other) => {
            return Err(CmdError::err(format!(
                "invalid mode argument: {}",
                String::from_utf8_lossy(other)
            )))
        }
    };
    let yes = with_bitmaps::<B, _, _>(ctx, &[k1, k2], |s| {
        let (a, b) = (s[0], s[1]);
        match mode {
            Mode::Any => a.intersection_len(b) > 0,
            Mode::All => b.is_subset(a),
            Mode::AllStrict => b.is_subset(a) && b.cardinality() < a.cardinality(),
            Mode::Eq => b.cardinality() == a.cardinality() && b.is_subset(a),
        }
    })?;
    Ok(Frame::Integer(i64::from(yes)))
}

pair!(
    R_JACCARD,
    R64_JACCARD,
    "JACCARD",
    3,
    READ,
    Keys::range(1, 2, 1),
    "Returns the Jaccard index of two Roaring bitmaps (-1 when both are empty)",
    "O(C), where C is the number of containers",
    jaccard
);

fn jaccard<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let k1 = args.next_key()?;
    let k2 = args.next_key()?;
    existing::<B>(ctx, k1)?;
    existing::<B>(ctx, k2)?;
    if k1 == k2 {
        return Ok(Frame::Double(1.0));
    }
    let (inter, union) = with_bitmaps::<B, _, _>(ctx, &[k1, k2], |s| {
        (s[0].intersection_len(s[1]), s[0].union_len(s[1]))
    })?;
    Ok(Frame::Double(if union == 0 {
        -1.0
    } else {
        inter as f64 / union as f64
    }))
}

pair!(
    R_OPTIMIZE,
    R64_OPTIMIZE,
    "OPTIMIZE",
    -2,
    READ,
    Keys::single(1),
    "Converts a Roaring bitmap's containers to runs where that saves memory",
    "O(C), where C is the number of containers",
    optimize
);

fn optimize<B: Width>(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    // `MEM` (shrink buffers too) is accepted; the store's buffers are exact.
    let _ = args.rest();
    let Some(b) = write::<B>(ctx, key)? else {
        return Err(key_missing());
    };
    b.optimize();
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------
// R.STAT (either width)

pub(crate) const R_STAT: CommandSpec = CommandSpec {
    name: "R.STAT",
    group: Group::Roaring,
    arity: -2,
    flags: READ,
    keys: Keys::single(1),
    summary: "Returns statistics of a 32-bit or 64-bit Roaring bitmap: cardinality, containers and their sizes",
    since: "1.0.0",
    complexity: "O(C), where C is the number of containers",
    subcommands: &[],
    run: stat,
};

fn stat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let json = match args.rest() {
        [] => false,
        [f] if is(f, "JSON") => true,
        _ => return Err(CmdError::Syntax),
    };
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    let value = match table.get(key, now) {
        Some(e) => &e.value,
        None => return Ok(Frame::Null),
    };
    let (kind, s, card, min, max) = match value {
        Value::Roaring(b) => (
            "bitmap",
            b.stats(),
            b.len(),
            b.min().map_or(0, u64::from),
            b.max().map_or(0, u64::from),
        ),
        Value::Roaring64(b) => (
            "bitmap64",
            RoaringSet::stats(&**b),
            b.len(),
            b.min().unwrap_or(0),
            b.max().unwrap_or(0),
        ),
        _ => return Err(CmdError::WrongType),
    };
    let text = if json {
        format!(
            "{{\"type\":\"{kind}\",\"cardinality\":\"{card}\",\"number_of_containers\":\"{}\",\
             \"max_value\":\"{max}\",\"min_value\":\"{min}\",\
             \"array_container\":{{\"number_of_containers\":\"{}\",\"container_cardinality\":\"{}\",\"container_allocated_bytes\":\"{}\"}},\
             \"bitset_container\":{{\"number_of_containers\":\"{}\",\"container_cardinality\":\"{}\",\"container_allocated_bytes\":\"{}\"}},\
             \"run_container\":{{\"number_of_containers\":\"{}\",\"container_cardinality\":\"{}\",\"container_allocated_bytes\":\"{}\"}}}}",
            s.containers,
            s.array_containers,
            s.array_values,
            s.array_bytes,
            s.bitset_containers,
            s.bitset_values,
            s.bitset_bytes,
            s.run_containers,
            s.run_values,
            s.run_bytes,
        )
    } else {
        format!(
            "type: {kind}\ncardinality: {card}\nnumber of containers: {}\nmax value: {max}\nmin value: {min}\n\
             number of array containers: {}\n\tarray container values: {}\n\tarray container bytes: {}\n\
             bitset  containers: {}\n\tbitset  container values: {}\n\tbitset  container bytes: {}\n\
             run containers: {}\n\trun container values: {}\n\trun container bytes: {}\n",
            s.containers,
            s.array_containers,
            s.array_values,
            s.array_bytes,
            s.bitset_containers,
            s.bitset_values,
            s.bitset_bytes,
            s.run_containers,
            s.run_values,
            s.run_bytes,
        )
    };
    Ok(Frame::Verbatim("txt", Bytes::from(text)))
}

// ---------------------------------------------------------------------------
// R.INTERSECT (Keel's own)

pub(crate) const R_INTERSECT: CommandSpec = CommandSpec {
    name: "R.INTERSECT",
    group: Group::Roaring,
    arity: -2,
    flags: READ,
    keys: Keys::BeforeOptions {
        first: 1,
        options: &[("CARD", 0), ("MIN", 0), ("LIMIT", 1)],
    },
    summary: "Returns the ids every given 32-bit Roaring bitmap holds (with CARD their count, with MIN the smallest or -1, with LIMIT n the first n), without storing anything",
    since: "1.0.0",
    complexity: "O(S * K), where S is the size of the smallest bitmap and K the number of bitmaps",
    subcommands: &[],
    run: intersect,
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    Ids(Option<u64>),
    Card,
    Min,
}

fn intersect(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let mut keys = args.rest();
    // Options close the line: a key named like one must not be last.
    let mut want = Want::Ids(None);
    match keys {
        [.., opt] if is(opt, "CARD") => {
            want = Want::Card;
            keys = &keys[..keys.len() - 1];
        }
        [.., opt] if is(opt, "MIN") => {
            want = Want::Min;
            keys = &keys[..keys.len() - 1];
        }
        [.., opt, n] if is(opt, "LIMIT") => {
            let n = parse_i64(n)
                .and_then(|n| u64::try_from(n).ok())
                .ok_or(CmdError::OutOfRange("LIMIT must be a non-negative integer"))?;
            want = Want::Ids(Some(n));
            keys = &keys[..keys.len() - 2];
        }
        _ => {}
    }
    if keys.is_empty() {
        return Err(CmdError::Syntax);
    }
    // Check every key's type before answering, so WRONGTYPE wins over empty.
    let mut missing = false;
    for key in keys {
        missing |= read::<Bitmap32>(ctx, key)?.is_none();
    }
    if missing {
        return Ok(match want {
            Want::Ids(_) => Frame::Array(Vec::new()),
            Want::Card => Frame::Integer(0),
            Want::Min => Frame::Integer(-1),
        });
    }
    let mut found: Vec<Frame> = Vec::new();
    let reply = with_bitmaps::<Bitmap32, _, _>(ctx, keys, |sets| match want {
        // A whole result from a large smallest set: AND container by container.
        Want::Card | Want::Ids(None) if smallest(sets) > store::PROBE_LIMIT => {
            let all = store::intersect_copy(sets);
            if want == Want::Card {
                Frame::Integer(all.len() as i64)
            } else if all.len() > MAX_REPLY_IDS {
                found.push(Frame::Null);
                Frame::Null
            } else {
                id_array::<Bitmap32>(all.iter(), all.len(), false)
            }
        }
        Want::Card => Frame::Integer(store::intersect_len(sets) as i64),
        Want::Min => Frame::Integer(store::intersect(sets).next().map_or(-1, i64::from)),
        Want::Ids(limit) => {
            let limit = limit.unwrap_or(u64::MAX).min(MAX_REPLY_IDS + 1);
            let ids: Vec<u32> = store::intersect(sets).take(limit as usize).collect();
            if ids.len() as u64 > MAX_REPLY_IDS {
                found.push(Frame::Null);
            }
            let n = ids.len() as u64;
            id_array::<Bitmap32>(ids.into_iter(), n, false)
        }
    })?;
    if !found.is_empty() {
        return Err(range_too_large());
    }
    Ok(reply)
}

/// The size of the smallest bitmap.
fn smallest(sets: &[&Bitmap32]) -> u64 {
    sets.iter().map(|b| b.len()).min().unwrap_or(0)
}

/// Runs `f` on references to the bitmaps at `keys`, which were all just read
/// as live `B` bitmaps. The keys may lie in different shards, all locked by
/// this command; the shards are borrowed shared, together, so nothing is copied.
fn with_bitmaps<B: Width, K: AsRef<[u8]>, R>(
    ctx: &mut Ctx<'_>,
    keys: &[K],
    f: impl FnOnce(&mut [&B]) -> R,
) -> Result<R, CmdError> {
    let db = ctx.db();
    let guards = &ctx.guards;
    let keyspace = &ctx.engine.keyspace;
    let mut sets: Vec<&B> = Vec::with_capacity(keys.len());
    for key in keys {
        let key = key.as_ref();
        let shard = keyspace.shard_of(key);
        let held = guards.find_ref(shard);
        let shard = held.ok_or_else(|| CmdError::Internal("key not declared".into()))?;
        if db >= shard.databases() {
            return Err(CmdError::DbIndexOutOfRange);
        }
        match shard
            .db_ref(db)
            .find_for_hint(key)
            .and_then(|e| B::of(&e.value))
        {
            Some(b) => sets.push(b),
            None => return Err(CmdError::WrongType),
        }
    }
    Ok(f(&mut sets))
}
