//! Bitmap commands on strings: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD,
//! BITFIELD_RO. The bit arithmetic lives in `keel_store::bits`; this file parses
//! arguments in Redis's order (which decides which error wins) and applies the
//! results to the keyspace.

use crate::strings::{str_buf_mut, with_str, write_len};
use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::bits::{self, BitOp, FieldType, Overflow, Unit};
use keel_store::num::parse_i64;
use keel_store::Value;

pub static COMMANDS: &[&CommandSpec] = &[
    &SETBIT,
    &GETBIT,
    &BITCOUNT,
    &BITPOS,
    &BITOP,
    &BITFIELD,
    &BITFIELD_RO,
];

fn bad_offset() -> CmdError {
    CmdError::err("bit offset is not an integer or out of range")
}

/// Parse a bit offset as Redis does: a non-negative integer whose byte lies
/// within proto-max-bulk-len; with `field_bits`, `#N` means N fields of that
/// width. Checking the limit here means no command grows a string past it.
fn bit_offset(ctx: &Ctx<'_>, arg: &[u8], field_bits: Option<u32>) -> Result<u64, CmdError> {
    let (digits, scale) = match (arg.first(), field_bits) {
        (Some(b'#'), Some(bits)) => (&arg[1..], i64::from(bits)),
        _ => (arg, 1),
    };
    let offset = parse_i64(digits)
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(bad_offset)?;
    let max = ctx.engine.config.proto_max_bulk_len();
    if offset < 0 || (offset >> 3) >= max {
        return Err(bad_offset());
    }
    Ok(offset as u64)
}

/// The string at `key` for a read, counting the hit or miss.
fn read_counted(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Bytes>, CmdError> {
    with_str(ctx, key, Bytes::copy_from_slice)
}

/// Make the string at `key` at least `bytes` long (creating it), keeping its
/// expiry, and return its buffer, and whether the key was created or grew (a
/// change even if no bit flips, as Redis counts it). The caller has bounded
/// `bytes` by the limit.
fn grown<'t>(
    ctx: &'t mut Ctx<'_>,
    key: &[u8],
    bytes: u64,
) -> Result<(&'t mut Vec<u8>, bool), CmdError> {
    let before = write_len(ctx, key)?;
    let buf = str_buf_mut(ctx, key)?;
    let bytes = usize::try_from(bytes).map_err(|_| CmdError::StringTooLong)?;
    let grew = before.is_none_or(|len| len < bytes);
    if buf.len() < bytes {
        let extra = bytes - buf.len();
        if buf.try_reserve(extra).is_err() {
            return Err(CmdError::err("out of memory growing the string"));
        }
        buf.resize(bytes, 0);
    }
    Ok((buf, grew))
}

pub(crate) const SETBIT: CommandSpec = CommandSpec {
    name: "SETBIT",
    group: Group::Bitmap,
    arity: 4,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary:
        "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.",
    since: "2.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: setbit,
};

fn setbit(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let offset = bit_offset(ctx, args.next_arg()?, None)?;
    let bad_bit = || CmdError::err("bit is not an integer or out of range");
    let on = match parse_i64(args.next_arg()?) {
        Some(0) => false,
        Some(1) => true,
        _ => return Err(bad_bit()),
    };
    let (buf, grew) = grown(ctx, key, bits::bytes_for_bit(offset))?;
    let old = bits::set_bit(buf, offset, on);
    // Like Redis, rewriting a bit with its own value is no change (nothing is
    // logged), unless the string had to be created or grown for it.
    if grew || old != on {
        ctx.dirty(1);
        ctx.notify(Class::STRING, "setbit", key);
    }
    Ok(Frame::Integer(i64::from(old)))
}

pub(crate) const GETBIT: CommandSpec = CommandSpec {
    name: "GETBIT",
    group: Group::Bitmap,
    arity: 3,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns a bit value by offset.",
    since: "2.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: getbit,
};

fn getbit(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let offset = bit_offset(ctx, args.next_arg()?, None)?;
    let bit = with_str(ctx, key, |s| bits::get_bit(s, offset))?.unwrap_or(false);
    Ok(Frame::Integer(i64::from(bit)))
}

/// `BYTE` or `BIT`, else a syntax error.
fn unit(arg: &[u8]) -> Result<Unit, CmdError> {
    if is(arg, "BYTE") {
        Ok(Unit::Byte)
    } else if is(arg, "BIT") {
        Ok(Unit::Bit)
    } else {
        Err(CmdError::Syntax)
    }
}

/// BITCOUNT's optional `start end [BYTE|BIT]`.
fn count_range(args: &mut Args<'_>) -> Result<Option<(i64, i64, Unit)>, CmdError> {
    if args.is_empty() {
        return Ok(None);
    }
    if !(2..=3).contains(&args.remaining()) {
        return Err(CmdError::Syntax);
    }
    let start = args.next_i64()?;
    let end = args.next_i64()?;
    let u = match args.next_opt() {
        Some(a) => unit(a)?,
        None => Unit::Byte,
    };
    Ok(Some((start, end, u)))
}

/// BITPOS's optional `start [end [BYTE|BIT]]`.
fn pos_range(args: &mut Args<'_>) -> Result<Option<(i64, Option<i64>, Unit)>, CmdError> {
    if args.is_empty() {
        return Ok(None);
    }
    if args.remaining() > 3 {
        return Err(CmdError::Syntax);
    }
    let start = args.next_i64()?;
    let rest = args.rest();
    // Redis reads the unit before the end, so a bad unit wins over a bad end.
    let u = match rest.get(1) {
        Some(a) => unit(a)?,
        None => Unit::Byte,
    };
    let end = match rest.first() {
        Some(a) => Some(keel_engine::args::parse_i64(a)?),
        None => None,
    };
    Ok(Some((start, end, u)))
}

pub(crate) const BITCOUNT: CommandSpec = CommandSpec {
    name: "BITCOUNT",
    group: Group::Bitmap,
    arity: -2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Counts the number of set bits (population counting) in a string.",
    since: "2.6.0",
    complexity: "O(N)",
    subcommands: &[],
    run: bitcount,
};

fn bitcount(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    // Parsed now, reported only if the key exists.
    let range = count_range(args);
    // Redis looks the key up before it reads the range: a missing key is 0
    // whatever follows.
    let n = with_str(ctx, key, |s| {
        range.map(|r| match r {
            None => bits::count_ones(s),
            Some((start, end, u)) => bits::bitcount(s, start, end, u),
        })
    })?;
    Ok(Frame::Integer(n.transpose()?.unwrap_or(0) as i64))
}

pub(crate) const BITPOS: CommandSpec = CommandSpec {
    name: "BITPOS",
    group: Group::Bitmap,
    arity: -3,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Finds the first set (1) or clear (0) bit in a string.",
    since: "2.8.7",
    complexity: "O(N)",
    subcommands: &[],
    run: bitpos,
};

fn bitpos(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let bit = match args.next_i64()? {
        0 => false,
        1 => true,
        _ => return Err(CmdError::err("The bit argument must be 1 or 0.")),
    };
    let range = pos_range(args);
    let pos = with_str(ctx, key, |s| range.map(|r| bits::bitpos(s, bit, r)))?;
    // A missing key is an endless run of zeros, whatever range was asked for.
    Ok(Frame::Integer(pos.transpose()?.unwrap_or(if bit {
        -1
    } else {
        0
    })))
}

pub(crate) const BITOP: CommandSpec = CommandSpec {
    name: "BITOP",
    group: Group::Bitmap,
    arity: -4,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(2, -1, 1),
    summary: "Performs bitwise operations on multiple strings, and stores the result.",
    since: "2.6.0",
    complexity: "O(N)",
    subcommands: &[],
    run: bitop,
};

fn bitop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let name = args.next_arg()?;
    let op = [
        ("AND", BitOp::And),
        ("OR", BitOp::Or),
        ("XOR", BitOp::Xor),
        ("NOT", BitOp::Not),
    ]
    .into_iter()
    .find(|(n, _)| is(name, n))
    .map(|(_, op)| op)
    .ok_or(CmdError::Syntax)?;
    let dest = args.next_key()?;
    let keys = args.rest();
    if op == BitOp::Not && keys.len() != 1 {
        return Err(CmdError::err(
            "BITOP NOT must be called with a single source key.",
        ));
    }
    let mut srcs = Vec::with_capacity(keys.len());
    for key in keys {
        srcs.push(read_counted(ctx, key)?.unwrap_or_default());
    }
    let views: Vec<&[u8]> = srcs.iter().map(|s| &s[..]).collect();
    let result = bits::bitop(op, &views);
    let len = result.len();
    let now = ctx.now_ms();
    // Only the destination changes; the sources' watchers stay valid.
    let db = ctx.db();
    ctx.modified(db, dest);
    let table = ctx.table(dest)?;
    if result.is_empty() {
        // An empty result deletes the destination, as Redis does.
        if table.remove_any(dest).is_some() {
            ctx.dirty(1);
            ctx.notify(Class::GENERIC, "del", dest);
        }
    } else {
        table.insert(
            dest,
            Value::Str(keel_store::StrBytes::from_vec(result)),
            0,
            now,
        );
        ctx.dirty(1);
        ctx.notify(Class::STRING, "set", dest);
    }
    Ok(Frame::Integer(len as i64))
}

/// One parsed BITFIELD operation.
#[derive(Clone, Copy)]
enum FieldOp {
    Get,
    Set(i64),
    IncrBy(i64),
}

pub(crate) const BITFIELD: CommandSpec = CommandSpec {
    name: "BITFIELD",
    group: Group::Bitmap,
    arity: -2,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary: "Performs arbitrary bitfield integer operations on strings.",
    since: "3.2.0",
    complexity: "O(1) for each subcommand specified",
    subcommands: &[],
    run: bitfield,
};

fn bitfield(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    bitfield_generic(ctx, args, false)
}

pub(crate) const BITFIELD_RO: CommandSpec = CommandSpec {
    name: "BITFIELD_RO",
    group: Group::Bitmap,
    arity: -2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Performs arbitrary read-only bitfield integer operations on strings.",
    since: "6.0.0",
    complexity: "O(1) for each subcommand specified",
    subcommands: &[],
    run: bitfield_ro,
};

fn bitfield_ro(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    bitfield_generic(ctx, args, true)
}

fn bitfield_generic(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    read_only: bool,
) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let mut ops: Vec<(FieldOp, FieldType, u64, Overflow)> = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest_write: Option<u64> = None;
    // Every operation is parsed before any runs, so a bad one changes nothing.
    while let Some(sub) = args.next_opt() {
        let left = args.remaining();
        let kind = if is(sub, "GET") && left >= 2 {
            0
        } else if is(sub, "SET") && left >= 3 {
            1
        } else if is(sub, "INCRBY") && left >= 3 {
            2
        } else if is(sub, "OVERFLOW") && left >= 1 {
            let mode = args.next_arg()?;
            overflow = if is(mode, "WRAP") {
                Overflow::Wrap
            } else if is(mode, "SAT") {
                Overflow::Sat
            } else if is(mode, "FAIL") {
                Overflow::Fail
            } else {
                return Err(CmdError::err("Invalid OVERFLOW type specified"));
            };
            continue;
        } else {
            return Err(CmdError::Syntax);
        };
        let ty = FieldType::parse(args.next_arg()?).ok_or_else(|| {
            CmdError::err(
                "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
            )
        })?;
        let offset = bit_offset(ctx, args.next_arg()?, Some(ty.bits))?;
        let op = match kind {
            0 => FieldOp::Get,
            _ => {
                let last = offset + u64::from(ty.bits) - 1;
                highest_write = Some(highest_write.map_or(last, |h| h.max(last)));
                let v = args.next_i64()?;
                if kind == 1 {
                    FieldOp::Set(v)
                } else {
                    FieldOp::IncrBy(v)
                }
            }
        };
        ops.push((op, ty, offset, overflow));
    }
    let Some(highest) = highest_write else {
        let read = |s: &[u8]| -> Vec<Frame> {
            ops.iter()
                .map(|&(_, ty, offset, _)| Frame::Integer(bits::get_field(s, offset, ty)))
                .collect()
        };
        let replies = with_str(ctx, key, read)?.unwrap_or_else(|| read(&[]));
        return Ok(Frame::Array(replies));
    };
    if read_only {
        return Err(CmdError::err(
            "BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let (buf, grew) = grown(ctx, key, bits::bytes_for_bit(highest))?;
    let mut replies = Vec::with_capacity(ops.len());
    let mut changes = 0;
    for (op, ty, offset, ow) in ops {
        let old = bits::get_field(buf, offset, ty);
        let (value, reply_new) = match op {
            FieldOp::Get => {
                replies.push(Frame::Integer(old));
                continue;
            }
            FieldOp::Set(v) => (bits::field_add(ty, v, 0, ow), false),
            FieldOp::IncrBy(d) => (bits::field_add(ty, old, d, ow), true),
        };
        let (new, overflowed) = value;
        if overflowed && ow == Overflow::Fail {
            replies.push(Frame::Null);
            continue;
        }
        // Redis counts an operation that wrote its field's own value only
        // when the string was created or grown for this command.
        if grew || new != old {
            changes += 1;
        }
        bits::set_field(buf, offset, ty, new);
        replies.push(Frame::Integer(if reply_new { new } else { old }));
    }
    ctx.dirty(changes);
    if changes > 0 {
        ctx.notify(Class::STRING, "setbit", key);
    }
    Ok(Frame::Array(replies))
}
