//! `struct`: Roberto Ierusalimschy's struct library as Redis ships it
//! (`pack`, `unpack`, `size`), for an x86-64 build: `int` is 4 bytes, `long`
//! and `size_t` 8, native order little-endian, maximum alignment 8.
//!
//! Format: `>` `<` byte order, `![n]` alignment, `x` a zero byte, `b/B h/H
//! l/L T i/In` integers (n at most 32), `f d` floats, `cn` n chars (`c0`: the
//! whole string when packing, the previous number's length when unpacking),
//! `s` a zero-terminated string, and spaces. Integers wider than 8 bytes keep
//! the C code's 64-bit arithmetic, so their high bytes are zero (or, read
//! back, lost), as in Redis.

use super::{
    c_double_to_i64, lua_fail, str_to_number, to_number, Answer, Args, Fail, Installer, Spread,
};
use mlua::{Lua, Table, Value};

/// Lua 5.1's LUAI_MAXCSTACK: slots a C function may use.
const MAX_C_STACK: usize = 8000;

const MAX_INT_SIZE: usize = 32;
const MAX_ALIGN: usize = 8;

pub(super) fn open(lib: &Installer<'_>) -> mlua::Result<Table> {
    let t = lib.lua().create_table()?;
    t.set("pack", lib.function(pack)?)?;
    t.set("unpack", lib.function(unpack)?)?;
    t.set("size", lib.function(size)?)?;
    Ok(t)
}

#[derive(Clone, Copy, PartialEq)]
enum Endian {
    Big,
    Little,
}

struct Header {
    endian: Endian,
    align: usize,
}

impl Header {
    fn new() -> Header {
        Header {
            endian: Endian::Little,
            align: 1,
        }
    }
}

/// A cursor over the format string.
struct Format<'a> {
    fmt: &'a [u8],
    at: usize,
}

impl Format<'_> {
    fn next(&mut self) -> Option<u8> {
        // The C code reads a C string: a NUL ends the format.
        let c = *self.fmt.get(self.at).filter(|c| **c != 0)?;
        self.at += 1;
        Some(c)
    }

    /// A decimal count after an option, or `default` when none follows.
    fn number(&mut self, default: usize) -> Answer<usize> {
        if !self.fmt.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i32 = 0;
        while let Some(d) = self.fmt.get(self.at).filter(|c| c.is_ascii_digit()) {
            let d = i32::from(d - b'0');
            if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
                return Err(Fail::error("integral size overflow"));
            }
            a = a * 10 + d;
            self.at += 1;
        }
        Ok(a as usize)
    }
}

/// Bytes taken by option `opt` (0 for options that are not values).
fn optsize(opt: u8, fmt: &mut Format<'_>) -> Answer<usize> {
    Ok(match opt {
        b'b' | b'B' | b'x' => 1,
        b'h' | b'H' => 2,
        b'l' | b'L' | b'T' | b'd' => 8,
        b'f' => 4,
        b'c' => fmt.number(1)?,
        b'i' | b'I' => {
            let size = fmt.number(4)?;
            if size > MAX_INT_SIZE {
                return Err(Fail::error(format!(
                    "integral size {size} is larger than limit of {MAX_INT_SIZE}"
                )));
            }
            size
        }
        _ => 0,
    })
}

/// Padding needed before an item of `size` at offset `len`.
fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size.wrapping_sub(len & (size - 1))) & (size - 1)
}

/// Byte order, alignment and spaces; anything else is an invalid option.
fn control(opt: u8, fmt: &mut Format<'_>, h: &mut Header) -> Answer<()> {
    match opt {
        b' ' => {}
        b'>' => h.endian = Endian::Big,
        b'<' => h.endian = Endian::Little,
        b'!' => {
            let a = fmt.number(MAX_ALIGN)?;
            if a == 0 || a & (a - 1) != 0 {
                return Err(Fail::error(format!("alignment {a} is not a power of 2")));
            }
            h.align = a;
        }
        _ => {
            let mut msg = b"invalid format option '".to_vec();
            msg.push(opt);
            msg.push(b'\'');
            return Err(Fail::Arg(1, msg));
        }
    }
    Ok(())
}

/// C's `(unsigned long)d` on x86-64 for a non-negative double.
fn c_double_to_u64(d: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if d < TWO_63 || d.is_nan() {
        c_double_to_i64(d) as u64
    } else {
        (c_double_to_i64(d - TWO_63) as u64) ^ (1 << 63)
    }
}

/// `luaL_checknumber` for `struct.pack`, whose arguments are followed by a nil.
fn pack_number(args: &Args, n: usize) -> Answer<f64> {
    if n == args.len() + 1 {
        return Err(Fail::arg(n as i32, "number expected, got nil"));
    }
    args.number(n)
}

fn pack_string(args: &Args, n: usize) -> Answer<Vec<u8>> {
    if n == args.len() + 1 {
        return Err(Fail::arg(n as i32, "string expected, got nil"));
    }
    args.bytes(n)
}

fn put_integer(out: &mut Vec<u8>, n: f64, endian: Endian, size: usize) {
    let mut value = if n < 0.0 {
        c_double_to_i64(n) as u64
    } else {
        c_double_to_u64(n)
    };
    let mut buf = [0u8; MAX_INT_SIZE];
    for i in 0..size {
        let at = if endian == Endian::Little {
            i
        } else {
            size - 1 - i
        };
        buf[at] = value as u8;
        value >>= 8;
    }
    out.extend_from_slice(&buf[..size]);
}

fn pack(lua: &Lua, args: &Args) -> Answer<Spread> {
    let fmt = args.bytes(1)?;
    let mut fmt = Format { fmt: &fmt, at: 0 };
    let mut h = Header::new();
    let mut arg = 2;
    let mut out = Vec::new();
    while let Some(opt) = fmt.next() {
        let mut size = optsize(opt, &mut fmt)?;
        let pad = gettoalign(out.len(), &h, opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = pack_number(args, arg)?;
                arg += 1;
                put_integer(&mut out, n, h.endian, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = pack_number(args, arg)? as f32;
                arg += 1;
                out.extend_from_slice(&match h.endian {
                    Endian::Little => f.to_le_bytes(),
                    Endian::Big => f.to_be_bytes(),
                });
            }
            b'd' => {
                let d = pack_number(args, arg)?;
                arg += 1;
                out.extend_from_slice(&match h.endian {
                    Endian::Little => d.to_le_bytes(),
                    Endian::Big => d.to_be_bytes(),
                });
            }
            b'c' | b's' => {
                let s = pack_string(args, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // The C code reports the argument after the string.
                    return Err(Fail::arg(arg as i32, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => control(opt, &mut fmt, &mut h)?,
        }
    }
    let s = lua.create_string(out).map_err(lua_fail)?;
    Spread::of(lua, vec![Value::String(s)])
}

fn get_integer(data: &[u8], endian: Endian, signed: bool) -> f64 {
    let mut l: u64 = 0;
    for i in 0..data.len() {
        let b = if endian == Endian::Big {
            data[i]
        } else {
            data[data.len() - 1 - i]
        };
        l = (l << 8) | u64::from(b);
    }
    if !signed {
        return l as f64;
    }
    // The C shift count wraps the way x86 wraps it (mod 64).
    let shift = ((data.len() * 8).wrapping_sub(1) & 63) as u32;
    let mask = u64::MAX << shift;
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

fn too_short() -> Fail {
    Fail::arg(2, "data string too short")
}

fn unpack(lua: &Lua, args: &Args) -> Answer<Spread> {
    let fmt = args.bytes(1)?;
    let data = args.bytes(2)?;
    // The C code holds the offset in a size_t: only 0 is refused here, and a
    // negative one is a huge offset, hence "data string too short".
    let offset = args.opt_integer(3, 1)? as u64;
    if offset == 0 {
        return Err(Fail::arg(3, "offset must be 1 or greater"));
    }
    let mut pos = (offset - 1) as usize;
    let mut fmt = Format { fmt: &fmt, at: 0 };
    let mut h = Header::new();
    let mut out = Spread::new(lua)?;
    let ld = data.len();
    while let Some(opt) = fmt.next() {
        let mut size = optsize(opt, &mut fmt)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if size > ld || pos > ld - size {
            return Err(too_short());
        }
        // Room for this item and the next position, beside the arguments.
        if args.len() + out.len() + 2 > MAX_C_STACK {
            return Err(Fail::error("stack overflow (too many results)"));
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let signed = opt.is_ascii_lowercase();
                out.push(Value::Number(get_integer(
                    &data[pos..pos + size],
                    h.endian,
                    signed,
                )))?;
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().unwrap_or_default();
                let f = match h.endian {
                    Endian::Little => f32::from_le_bytes(b),
                    Endian::Big => f32::from_be_bytes(b),
                };
                out.push(Value::Number(f64::from(f)))?;
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().unwrap_or_default();
                let d = match h.endian {
                    Endian::Little => f64::from_le_bytes(b),
                    Endian::Big => f64::from_be_bytes(b),
                };
                out.push(Value::Number(d))?;
            }
            b'c' => {
                if size == 0 {
                    let previous = match out.last()? {
                        _ if out.len() == 0 => None,
                        Value::String(s) => str_to_number(&s.as_bytes()),
                        v => to_number(&v),
                    };
                    let Some(n) = previous else {
                        return Err(Fail::error("format 'c0' needs a previous size"));
                    };
                    out.pop()?;
                    size = c_double_to_u64(n) as usize;
                    if size > ld - pos {
                        return Err(too_short());
                    }
                }
                out.push(string(lua, &data[pos..pos + size])?)?;
            }
            b's' => {
                let Some(len) = data[pos..].iter().position(|b| *b == 0) else {
                    return Err(Fail::error("unfinished string in data"));
                };
                size = len + 1;
                out.push(string(lua, &data[pos..pos + len])?)?;
            }
            _ => control(opt, &mut fmt, &mut h)?,
        }
        pos += size;
    }
    out.push(Value::Number((pos + 1) as f64))?;
    Ok(out)
}

fn string(lua: &Lua, bytes: &[u8]) -> Answer<Value> {
    lua.create_string(bytes)
        .map(Value::String)
        .map_err(lua_fail)
}

fn size(lua: &Lua, args: &Args) -> Answer<Spread> {
    let fmt = args.bytes(1)?;
    let mut fmt = Format { fmt: &fmt, at: 0 };
    let mut h = Header::new();
    let mut pos: usize = 0;
    while let Some(opt) = fmt.next() {
        let size = optsize(opt, &mut fmt)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if opt == b's' {
            return Err(Fail::arg(1, "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(Fail::arg(1, "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            control(opt, &mut fmt, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    Spread::of(lua, vec![Value::Number(pos as f64)])
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{eval, vm};
    use proptest::prelude::*;

    // redis-cli --no-raw eval "return struct.pack('>i', 1)" 0 and so on: Redis
    // shows the same bytes ("\x00\x00\x00\x01", "\x01\x00\x00\x00\x02\x00\x00\x00").
    #[test]
    fn pack_bytes() {
        let lua = vm();
        let cases: &[(&str, &[u8])] = &[
            ("struct.pack('>i', 1)", b"\0\0\0\x01"),
            ("struct.pack('!4bi', 1, 2)", b"\x01\0\0\0\x02\0\0\0"),
            ("struct.pack('!i3i3', 1, 2)", b"\0\0\x01\0\0\0\0\x02\0\0"),
            ("struct.pack('s', 'ab\\0c')", b"ab\0c\0"),
            ("struct.pack('c0', 1.5)", b"1.5"),
            ("struct.pack('c', 'abc')", b"a"),
            ("struct.pack('s', 12.5)", b"12.5\0"),
            (
                "struct.pack('<f>d', 1.5, 2.25)",
                b"\0\0\xc0?@\x02\0\0\0\0\0\0",
            ),
            ("struct.pack('>h', 70000)", b"\x11p"),
            ("struct.pack('>b', 1e20)", b"\0"),
            ("struct.pack('>b', -1e20)", b"\0"),
            ("struct.pack('<i8', 2^63)", b"\0\0\0\0\0\0\0\x80"),
            ("struct.pack('<i8', 2^64+4096)", b"\0\0\0\0\0\0\0\0"),
            ("struct.pack('<i8', 0/0)", b"\0\0\0\0\0\0\0\x80"),
            ("struct.pack('>i', '0x10')", b"\0\0\0\x10"),
            (
                "struct.pack('>I16', -1)",
                b"\0\0\0\0\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff",
            ),
            ("struct.pack('bi0b', 1, 2, 3)", b"\x01\x03"),
            ("struct.pack('i', 2^31)", b"\0\0\0\x80"),
            ("struct.pack('>I', -1)", b"\xff\xff\xff\xff"),
            ("struct.pack('>H', 65536+255)", b"\0\xff"),
        ];
        for (code, want) in cases {
            let got: mlua::String = lua.load(format!("return {code}")).eval().expect(code);
            assert_eq!(&got.as_bytes()[..], *want, "{code}");
        }
    }

    // redis-cli eval "return {struct.unpack('sc0', '3\0abc')}" 0 and the like.
    #[test]
    fn unpack_values() {
        assert_eq!(
            eval("return struct.unpack('<i2', struct.pack('<i2h', 7, -2))"),
            "7 3"
        );
        assert_eq!(eval("return struct.unpack('bc0', '\\3abcd')"), r#""abc" 5"#);
        assert_eq!(eval("return struct.unpack('sc0', '3\\0abc')"), r#""abc" 6"#);
        assert_eq!(
            eval("return struct.unpack('>!4bi', '\\1\\0\\0\\0\\0\\0\\0\\2')"),
            "1 2 9"
        );
        assert_eq!(
            eval("return struct.unpack('T', '12345678')"),
            "4050765991979987456 9"
        );
        assert_eq!(
            eval("return struct.unpack('>I16', string.rep('\\255',16))"),
            "18446744073709551616 17"
        );
        assert_eq!(
            eval("return struct.unpack('>i16', string.rep('\\255',16))"),
            "-1 17"
        );
        assert_eq!(eval("return struct.unpack('x', 'a')"), "2");
        assert_eq!(
            eval("return struct.unpack('i', 'abcdefgh', 5)"),
            "1751606885 9"
        );
        assert_eq!(eval("return struct.unpack('bi0b', '\\1\\2')"), "1 0 2 3");
        assert_eq!(eval("return struct.unpack('!8 b d', '\\1\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\240\\63')"), "1 1 17");
        assert_eq!(
            eval("return struct.unpack('<f>d', struct.pack('<f>d', 1.1, 2.25))"),
            "1.1000000238418579 2.25 13"
        );
    }

    // redis-cli eval "return struct.size('!4bi')" 0 -> 8, etc.
    #[test]
    fn sizes() {
        assert_eq!(eval("return struct.size('!4bi'), struct.size('bq'), struct.size('!8bi3d'), struct.size('bi0')"), "8 1 16 1");
        assert_eq!(eval("return struct.size('i32'), struct.size('!'), struct.size('l'), struct.size('!8x d'), struct.size('c'), struct.size('!16d')"), "32 0 8 16 1 8");
    }

    // Each message below is what Redis 7.0.15 answers (after "ERR "), e.g.
    // redis-cli eval "return struct.pack('q')" 0
    #[test]
    fn errors() {
        let cases = [
            (
                "struct.pack('q')",
                "bad argument #1 to 'pack' (invalid format option 'q')",
            ),
            (
                "struct.pack('i64', 1)",
                "integral size 64 is larger than limit of 32",
            ),
            ("struct.pack('i99999999999', 1)", "integral size overflow"),
            ("struct.size('c2147483648')", "integral size overflow"),
            ("struct.pack('!3i', 1)", "alignment 3 is not a power of 2"),
            ("struct.pack('!0i', 1)", "alignment 0 is not a power of 2"),
            (
                "struct.size('s')",
                "bad argument #1 to 'size' (option 's' has no fixed size)",
            ),
            (
                "struct.size('c0')",
                "bad argument #1 to 'size' (option 'c0' has no fixed size)",
            ),
            (
                "struct.size('i33')",
                "integral size 33 is larger than limit of 32",
            ),
            (
                "struct.size()",
                "bad argument #1 to 'size' (string expected, got no value)",
            ),
            (
                "struct.unpack('i', 'ab')",
                "bad argument #2 to 'unpack' (data string too short)",
            ),
            (
                "struct.unpack('i', 'abcd', 0)",
                "bad argument #3 to 'unpack' (offset must be 1 or greater)",
            ),
            (
                "struct.unpack('i', 'abcd', 5)",
                "bad argument #2 to 'unpack' (data string too short)",
            ),
            (
                "struct.unpack('i', 'abcd', -1)",
                "bad argument #2 to 'unpack' (data string too short)",
            ),
            (
                "struct.unpack('i', 'abcdefgh', 2^40)",
                "bad argument #2 to 'unpack' (data string too short)",
            ),
            (
                "struct.unpack('i', 'abcd', 'x')",
                "bad argument #3 to 'unpack' (number expected, got string)",
            ),
            (
                "struct.unpack('c0', 'abcd')",
                "format 'c0' needs a previous size",
            ),
            (
                "struct.unpack('bc0', '\\3ab')",
                "bad argument #2 to 'unpack' (data string too short)",
            ),
            (
                "struct.unpack('bc0', '\\255ab')",
                "bad argument #2 to 'unpack' (data string too short)",
            ),
            ("struct.unpack('s', 'abcd')", "unfinished string in data"),
            (
                "struct.unpack()",
                "bad argument #1 to 'unpack' (string expected, got no value)",
            ),
            (
                "struct.unpack('i')",
                "bad argument #2 to 'unpack' (string expected, got no value)",
            ),
            (
                "struct.pack('c5', 'ab')",
                "bad argument #3 to 'pack' (string too short)",
            ),
            (
                "struct.pack('d', 'x')",
                "bad argument #2 to 'pack' (number expected, got string)",
            ),
            (
                "struct.pack('d', {})",
                "bad argument #2 to 'pack' (number expected, got table)",
            ),
            (
                "struct.pack('i')",
                "bad argument #2 to 'pack' (number expected, got nil)",
            ),
            (
                "struct.pack('iii', 1)",
                "bad argument #3 to 'pack' (number expected, got nil)",
            ),
            (
                "struct.pack(1)",
                "bad argument #1 to 'pack' (invalid format option '1')",
            ),
            (
                "struct.pack()",
                "bad argument #1 to 'pack' (string expected, got no value)",
            ),
        ];
        for (code, want) in cases {
            assert_eq!(
                eval(&format!("return {code}")),
                format!("ERR user_script:1: {want}"),
                "{code}"
            );
        }
    }

    proptest! {
        // Whatever fits the format comes back unchanged, and the next
        // position is one past the packed length.
        #[test]
        fn pack_unpack_round_trip(
            b in any::<i8>(), hh in any::<u16>(), i in any::<i32>(), l in -(1i64 << 53)..(1i64 << 53),
            d in any::<f64>().prop_filter("NaN is not equal to itself", |d| !d.is_nan()), s in "[a-z]{0,12}",
            big in any::<bool>(), align in prop::sample::select(vec![1u8, 2, 4, 8]),
        ) {
            let d_bits = d.to_bits();
            let order = if big { ">" } else { "<" };
            // Literals Lua would fold or merge (-0.0 shares the constant 0) are
            // computed at run time instead.
            let d = if d.is_infinite() {
                format!("({}1/0)", if d < 0.0 { "-" } else { "" })
            } else if d == 0.0 && d.is_sign_negative() {
                "(-1/(1/0))".to_string()
            } else {
                format!("{d:?}")
            };
            let fmt = format!("{order}!{align}bHild s");
            let code = format!(
                "local s = struct.pack('{fmt}', {b}, {hh}, {i}, {l}, {d}, '{s}') \
                 local r = {{struct.unpack('{fmt}', s)}} \
                 return r[1], r[2], r[3], r[4], r[5], r[6], r[7] == #s + 1, #s == struct.size('{order}!{align}bHild')+{len}",
                len = s.len() + 1,
            );
            let lua = vm();
            let (rb, rh, ri, rl, rd, rs, next_ok, size_ok): (f64, f64, f64, f64, f64, String, bool, bool) =
                lua.load(&code).eval().unwrap();
            prop_assert_eq!(rb, f64::from(b));
            prop_assert_eq!(rh, f64::from(hh));
            prop_assert_eq!(ri, f64::from(i));
            prop_assert_eq!(rl, l as f64);
            prop_assert_eq!(rd.to_bits(), d_bits);
            prop_assert_eq!(rs, s);
            prop_assert!(next_ok);
            prop_assert!(size_ok);
        }
    }
}
