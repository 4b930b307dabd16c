//! `bit`: LuaBitOp 1.0.2 as Redis loads it. Every operation works on 32-bit
//! integers and answers a signed 32-bit number.
//!
//! Arguments convert the way LuaBitOp does on Lua 5.1: the number (or a
//! string that reads as one) is added to 2^52 + 2^51 and the low 32 bits of
//! the double are taken, so 2^32 + 1 is 1 and 1.5 rounds to 2 (half to even).

use super::{lua_fail, to_number, type_name, Answer, Args, Fail, Installer, Spread};
use mlua::{Lua, Table, Value};

pub(super) fn open(lib: &Installer<'_>) -> mlua::Result<Table> {
    let t = lib.lua().create_table()?;
    t.set("tobit", lib.function(|lua, a| one(lua, barg(a, 1)?))?)?;
    t.set("bnot", lib.function(|lua, a| one(lua, !barg(a, 1)?))?)?;
    t.set("band", lib.function(|lua, a| fold(lua, a, |x, y| x & y))?)?;
    t.set("bor", lib.function(|lua, a| fold(lua, a, |x, y| x | y))?)?;
    t.set("bxor", lib.function(|lua, a| fold(lua, a, |x, y| x ^ y))?)?;
    t.set(
        "lshift",
        lib.function(|lua, a| shift(lua, a, |b, n| b << n))?,
    )?;
    t.set(
        "rshift",
        lib.function(|lua, a| shift(lua, a, |b, n| b >> n))?,
    )?;
    t.set(
        "arshift",
        lib.function(|lua, a| shift(lua, a, |b, n| ((b as i32) >> n) as u32))?,
    )?;
    t.set(
        "rol",
        lib.function(|lua, a| shift(lua, a, |b, n| b.rotate_left(n)))?,
    )?;
    t.set(
        "ror",
        lib.function(|lua, a| shift(lua, a, |b, n| b.rotate_right(n)))?,
    )?;
    t.set(
        "bswap",
        lib.function(|lua, a| one(lua, barg(a, 1)?.swap_bytes()))?,
    )?;
    t.set("tohex", lib.function(tohex)?)?;
    Ok(t)
}

/// The 32-bit value of argument `n`.
fn barg(args: &Args, n: usize) -> Answer<u32> {
    let arg = args.get(n);
    let x = arg.as_ref().and_then(to_number);
    // LuaBitOp uses lua_tonumber (0 for a non-number) and only complains
    // when the result is 0 and the argument was not a number.
    let bits = to_bits(x.unwrap_or(0.0));
    if bits == 0 && x.is_none() {
        let got = arg.as_ref().map_or("no value", type_name);
        return Err(Fail::arg(n as i32, format!("number expected, got {got}")));
    }
    Ok(bits)
}

/// The low 32 bits of `x + 2^52 + 2^51` (exact for integers in range;
/// NaN and infinities give 0).
pub(crate) fn to_bits(x: f64) -> u32 {
    (x + 6_755_399_441_055_744.0).to_bits() as u32
}

fn one(lua: &Lua, b: u32) -> Answer<Spread> {
    Spread::of(lua, vec![Value::Number(f64::from(b as i32))])
}

fn fold(lua: &Lua, args: &Args, op: fn(u32, u32) -> u32) -> Answer<Spread> {
    let mut b = barg(args, 1)?;
    // LuaBitOp reads the arguments from the last one down.
    for n in (2..=args.len()).rev() {
        b = op(b, barg(args, n)?);
    }
    one(lua, b)
}

fn shift(lua: &Lua, args: &Args, op: fn(u32, u32) -> u32) -> Answer<Spread> {
    let b = barg(args, 1)?;
    let n = barg(args, 2)? & 31;
    one(lua, op(b, n))
}

fn tohex(lua: &Lua, args: &Args) -> Answer<Spread> {
    let mut b = barg(args, 1)?;
    let mut n: i64 = if args.get(2).is_none() {
        8
    } else {
        i64::from(barg(args, 2)? as i32)
    };
    let digits: &[u8; 16] = if n < 0 {
        n = -n;
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let n = n.min(8) as usize;
    let mut out = vec![0u8; n];
    for slot in out.iter_mut().rev() {
        *slot = digits[(b & 15) as usize];
        b >>= 4;
    }
    let s = lua.create_string(out).map_err(lua_fail)?;
    Spread::of(lua, vec![Value::String(s)])
}

#[cfg(test)]
mod tests {
    use super::super::testutil::eval;

    // redis-cli eval "return {bit.tobit(0xffffffff), bit.tobit(2^32+1), bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1)}" 0
    // (Redis shows -1 1 2 2 -1; here the numbers print as Lua would.)
    #[test]
    fn tobit_wraps_and_rounds() {
        assert_eq!(
            eval("return bit.tobit(0xffffffff), bit.tobit(2^32+1), bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1), bit.tobit('12')"),
            "-1 1 2 2 -1 12"
        );
        assert_eq!(
            eval("return bit.tobit(0/0), bit.tobit(1/0), bit.tobit(-2^31), bit.tobit(2^31)"),
            "0 0 -2147483648 -2147483648"
        );
    }

    // redis-cli eval "return {bit.band(0xff, 0x0f, 0x3), bit.bor(1,2,4), bit.bxor(7,2), bit.bnot(0)}" 0
    #[test]
    fn logic() {
        assert_eq!(eval("return bit.band(0xff, 0x0f, 0x3), bit.bor(1,2,4), bit.bxor(7,2), bit.bnot(0), bit.band(5)"), "3 7 5 -1 5");
    }

    // redis-cli eval "return {bit.lshift(1,31), bit.rshift(-1,28), bit.arshift(-256,4), bit.rol(0x12345678,8), bit.ror(0x12345678,8), bit.lshift(1,33), bit.bswap(0x12345678)}" 0
    #[test]
    fn shifts_and_swaps() {
        assert_eq!(
            eval("return bit.lshift(1,31), bit.rshift(-1,28), bit.arshift(-256,4), bit.rol(0x12345678,8), bit.ror(0x12345678,8), bit.lshift(1,33), bit.bswap(0x12345678)"),
            "-2147483648 15 -16 878082066 2014458966 2 2018915346"
        );
    }

    // redis-cli eval "return {bit.tohex(255), bit.tohex(255,2), bit.tohex(255,-4), bit.tohex(-1,12), bit.tohex(1,0)}" 0
    #[test]
    fn tohex() {
        assert_eq!(
            eval("return bit.tohex(255), bit.tohex(255,2), bit.tohex(255,-4), bit.tohex(-1,12), bit.tohex(1,0)"),
            r#""000000ff" "ff" "00FF" "ffffffff" """#
        );
    }

    // redis-cli eval "return bit.band('x')" 0
    //   -> ERR user_script:1: bad argument #1 to 'band' (number expected, got string) ...
    // redis-cli eval "local f=bit.band return f('x')" 0 -> ... to 'f' ...
    // redis-cli eval "local ok,e=pcall(bit.band,'x') return e" 0 -> bad argument #1 to '?' (...)
    #[test]
    fn errors_read_like_lauxlib() {
        assert_eq!(
            eval("return bit.band('x')"),
            "ERR user_script:1: bad argument #1 to 'band' (number expected, got string)"
        );
        assert_eq!(
            eval("local f=bit.band return f('x')"),
            "ERR user_script:1: bad argument #1 to 'f' (number expected, got string)"
        );
        assert_eq!(
            eval("local ok,e=pcall(bit.band,'x') return e"),
            r#""bad argument #1 to '?' (number expected, got string)""#
        );
        assert_eq!(
            eval("return bit.bor(1, {})"),
            "ERR user_script:1: bad argument #2 to 'bor' (number expected, got table)"
        );
        assert_eq!(
            eval("return bit.tobit()"),
            "ERR user_script:1: bad argument #1 to 'tobit' (number expected, got no value)"
        );
        // redis-cli eval "return bit:band(1)" 0 and "return bit.band(1, nil)" 0
        assert_eq!(
            eval("return bit:band(1)"),
            "ERR user_script:1: calling 'band' on bad self (number expected, got table)"
        );
        assert_eq!(
            eval("return bit.band(1, nil)"),
            "ERR user_script:1: bad argument #2 to 'band' (number expected, got nil)"
        );
        // redis-cli eval "return bit.tohex(1, -2147483648)" 0 -> "00000001"
        assert_eq!(eval("return bit.tohex(1, -2147483648)"), r#""00000001""#);
        // Inside a coroutine the caller's frame is the coroutine's:
        // redis-cli eval "local co = coroutine.wrap(function() return bit.band('x') end) return co()" 0
        assert_eq!(
            eval("local co = coroutine.wrap(function() return bit.band('x') end) return co()"),
            "ERR user_script:1: user_script:1: bad argument #1 to 'band' (number expected, got string)"
        );
        assert_eq!(
            eval("local co = coroutine.create(function() local x = cjson.decode('[') return x end) local ok, e = coroutine.resume(co) return e"),
            r#""user_script:1: Expected value but found T_END at character 2""#
        );
        // "0" is a number, so 0 is fine; a non-number that happens to be 0 is not.
        assert_eq!(eval("return bit.tobit('0'), bit.tobit(2^32)"), "0 0");
    }
}
