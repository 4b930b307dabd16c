//! String commands: GET, SET and the rest of the string family.

use crate::args::{is, Args};
use crate::ctx::Ctx;
use crate::error::CmdError;
use crate::spec::{CommandSpec, Flags, Group, Keys};
use bytes::Bytes;
use keel_resp::Frame;
use keel_store::Value;

pub(crate) static COMMANDS: &[&CommandSpec] = &[&GET, &SET];

/// The string held at `key`, `None` if absent, WRONGTYPE for another type.
pub(crate) fn read_str<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t [u8]>, CmdError> {
    let now = ctx.now_ms();
    let no_touch = ctx.session.no_touch;
    let table = ctx.table(key)?;
    let entry = if no_touch {
        table.peek(key, now)
    } else {
        table.get(key, now)
    };
    match entry {
        None => Ok(None),
        Some(e) => e
            .value
            .as_str()
            .map(|s| Some(s.as_slice()))
            .ok_or(CmdError::WrongType),
    }
}

pub(crate) const GET: CommandSpec = CommandSpec {
    name: "GET",
    group: Group::String,
    arity: 2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the string value of a key.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: get,
};

fn get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let found = read_str(ctx, key)?.map(Bytes::copy_from_slice);
    ctx.hit(found.is_some());
    Ok(found.map_or(Frame::Null, Frame::Bulk))
}

pub(crate) const SET: CommandSpec = CommandSpec {
    name: "SET",
    group: Group::String,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary:
        "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: set,
};

/// How a write treats the key's existing expiry.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ttl {
    /// Remove any expiry.
    Clear,
    /// Keep the existing expiry (KEEPTTL).
    Keep,
    /// Expire at this absolute Unix ms.
    At(u64),
}

/// Parse an expiry given in `unit_ms` relative (EX/PX) or absolute (EXAT/PXAT)
/// form into absolute ms, with Redis's range checks.
pub(crate) fn expire_at(
    raw: &[u8],
    unit_ms: i64,
    absolute: bool,
    now_ms: u64,
    cmd: &'static str,
) -> Result<u64, CmdError> {
    let n = crate::args::parse_i64(raw)?;
    if n <= 0 {
        return Err(CmdError::InvalidExpire(cmd));
    }
    let ms = n.checked_mul(unit_ms).ok_or(CmdError::InvalidExpire(cmd))?;
    let at = if absolute {
        ms
    } else {
        ms.checked_add(now_ms as i64)
            .ok_or(CmdError::InvalidExpire(cmd))?
    };
    Ok(at as u64)
}

/// Store a string with SET's semantics for the expiry. Returns nothing; the
/// caller has already decided the write should happen.
pub(crate) fn store_str(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    value: &[u8],
    ttl: Ttl,
) -> Result<(), CmdError> {
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    let at = match ttl {
        Ttl::Clear => 0,
        Ttl::At(at) => at,
        Ttl::Keep => table
            .peek(key, now)
            .and_then(|e| e.expires_at_ms())
            .unwrap_or(0),
    };
    table.insert(key, Value::str(value), at, now);
    ctx.dirty(1);
    Ok(())
}

fn set(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let value = args.next_arg()?;
    let (mut nx, mut xx, mut get_old) = (false, false, false);
    let mut ttl = Ttl::Clear;
    let mut ttl_given = false;
    let now = ctx.now_ms();
    while let Some(opt) = args.next_opt() {
        let timed = [
            ("EX", 1000, false),
            ("PX", 1, false),
            ("EXAT", 1000, true),
            ("PXAT", 1, true),
        ]
        .iter()
        .find(|(n, _, _)| is(opt, n));
        if let Some(&(_, unit, absolute)) = timed {
            if ttl_given {
                return Err(CmdError::Syntax);
            }
            let raw = args.next_arg()?;
            ttl = Ttl::At(expire_at(raw, unit, absolute, now, "set")?);
            ttl_given = true;
        } else if is(opt, "NX") && !xx {
            nx = true;
        } else if is(opt, "XX") && !nx {
            xx = true;
        } else if is(opt, "KEEPTTL") && !ttl_given {
            ttl = Ttl::Keep;
            ttl_given = true;
        } else if is(opt, "GET") {
            get_old = true;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let old = if get_old {
        read_str(ctx, key)?.map(Bytes::copy_from_slice)
    } else {
        None
    };
    let exists = if nx || xx {
        let now = ctx.now_ms();
        ctx.table(key)?.contains(key, now)
    } else {
        false
    };
    if (nx && exists) || (xx && !exists) {
        return Ok(if get_old {
            old.map_or(Frame::Null, Frame::Bulk)
        } else {
            Frame::Null
        });
    }
    store_str(ctx, key, value, ttl)?;
    if ttl != Ttl::Clear || get_old {
        let mut effect = vec![Bytes::from_static(b"SET"), key.clone(), value.clone()];
        match ttl {
            Ttl::At(at) => {
                effect.extend([Bytes::from_static(b"PXAT"), Bytes::from(at.to_string())])
            }
            Ttl::Keep => effect.push(Bytes::from_static(b"KEEPTTL")),
            Ttl::Clear => {}
        }
        ctx.rewrite(effect);
    }
    Ok(if get_old {
        old.map_or(Frame::Null, Frame::Bulk)
    } else {
        Frame::ok()
    })
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    #[test]
    fn get_set_basics() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["GET", "k"]), keel_resp::Frame::Null);
        assert_eq!(t.run(&["SET", "k", "v"]), ok());
        assert_eq!(t.run(&["GET", "k"]), bulk("v"));
        assert_eq!(t.run(&["SET", "k", "w", "NX"]), keel_resp::Frame::Null);
        assert_eq!(t.run(&["SET", "k", "w", "XX", "GET"]), bulk("v"));
        assert_eq!(
            t.run(&["SET", "k", "x", "NX", "XX"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["SET", "k", "x", "EX", "0"]),
            error("ERR invalid expire time in 'set' command")
        );
        assert_eq!(
            t.run(&["SET", "k", "x", "EX", "a"]),
            error("ERR value is not an integer or out of range")
        );
        assert_eq!(
            t.run(&["SET", "k", "x", "EX", "1", "PX", "5"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["get"]),
            error("ERR wrong number of arguments for 'get' command")
        );
    }

    #[test]
    fn set_expiry_with_manual_clock() {
        let mut t = TestEngine::new();
        t.run(&["SET", "k", "v", "PX", "100"]);
        t.clock.advance(99);
        assert_eq!(t.run(&["GET", "k"]), bulk("v"));
        t.run(&["SET", "k", "v2", "KEEPTTL"]);
        t.clock.advance(1);
        assert_eq!(t.run(&["GET", "k"]), keel_resp::Frame::Null);
    }
}
