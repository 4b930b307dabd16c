//! `cjson`: Lua CJSON 2.1.0 as Redis ships it.
//!
//! `encode(v)` and `decode(s)`, the settings `encode_sparse_array`,
//! `encode_max_depth`, `decode_max_depth`, `encode_number_precision`,
//! `encode_keep_buffer`, `encode_invalid_numbers`, `decode_invalid_numbers`,
//! `new()` (a module table with its own settings), `null` (a NULL light
//! userdata standing for JSON null) and `_NAME`/`_VERSION`.
//!
//! Encoding writes numbers with `%.14g` (the precision setting), escapes `/`
//! and control bytes, leaves bytes >= 0x80 alone, treats a table whose keys
//! are all positive integers as an array (holes become null; too sparse is an
//! error unless configured), anything else as an object in Lua's `next`
//! order. Decoding follows the C lexer: NUL ends the input, `strtod` reads
//! numbers (so hex, `inf`, `nan` and a leading `+` pass while
//! `decode_invalid_numbers` is on), errors name the token and its 1-based
//! position. Both directions work iteratively and stop where the C code meets
//! Lua's 8000-slot C stack, with the same messages.

use super::{
    c_double_to_i32, exact, format_g, lua_fail, strtod, type_name, Answer, Args, Fail, Installer,
    Spread, Walker,
};
use mlua::{LightUserData, Lua, Table, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// Lua 5.1's LUAI_MAXCSTACK: slots a C function may use.
const MAX_C_STACK: i64 = 8000;

#[derive(Clone, Debug)]
struct Config {
    sparse_convert: bool,
    sparse_ratio: i32,
    sparse_safe: i32,
    encode_max_depth: i32,
    decode_max_depth: i32,
    /// 0 off, 1 on, 2 null.
    encode_invalid_numbers: i32,
    decode_invalid_numbers: bool,
    keep_buffer: bool,
    precision: i32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: 0,
            decode_invalid_numbers: true,
            keep_buffer: true,
            precision: 14,
        }
    }
}

type Shared = Rc<RefCell<Config>>;

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

pub(super) fn open(lib: &Installer<'_>) -> mlua::Result<Table> {
    module(lib)
}

/// A module table with fresh settings (what `cjson` is, and `cjson.new()` makes).
fn module(lib: &Installer<'_>) -> mlua::Result<Table> {
    let cfg: Shared = Rc::new(RefCell::new(Config::default()));
    let t = lib.lua().create_table()?;
    let walker = lib.walker();
    let c = cfg.clone();
    t.set(
        "encode",
        lib.function(move |lua, a| encode(lua, &c.borrow(), &walker, a))?,
    )?;
    let c = cfg.clone();
    t.set(
        "decode",
        lib.function(move |lua, a| decode(lua, &c.borrow(), a))?,
    )?;
    let c = cfg.clone();
    t.set(
        "encode_sparse_array",
        lib.function(move |lua, a| {
            arg_init(a, 3)?;
            let mut cfg = c.borrow_mut();
            let convert = bool_option(a, 1, cfg.sparse_convert)?;
            let ratio = integer_option(a, 2, cfg.sparse_ratio, 0, i32::MAX)?;
            let safe = integer_option(a, 3, cfg.sparse_safe, 0, i32::MAX)?;
            cfg.sparse_convert = convert;
            cfg.sparse_ratio = ratio;
            cfg.sparse_safe = safe;
            Spread::of(lua, vec![Value::Boolean(convert), num(ratio), num(safe)])
        })?,
    )?;
    let c = cfg.clone();
    t.set(
        "encode_max_depth",
        lib.function(move |lua, a| {
            arg_init(a, 1)?;
            let mut cfg = c.borrow_mut();
            cfg.encode_max_depth = integer_option(a, 1, cfg.encode_max_depth, 1, i32::MAX)?;
            Spread::of(lua, vec![num(cfg.encode_max_depth)])
        })?,
    )?;
    let c = cfg.clone();
    t.set(
        "decode_max_depth",
        lib.function(move |lua, a| {
            arg_init(a, 1)?;
            let mut cfg = c.borrow_mut();
            cfg.decode_max_depth = integer_option(a, 1, cfg.decode_max_depth, 1, i32::MAX)?;
            Spread::of(lua, vec![num(cfg.decode_max_depth)])
        })?,
    )?;
    let c = cfg.clone();
    t.set(
        "encode_number_precision",
        lib.function(move |lua, a| {
            arg_init(a, 1)?;
            let mut cfg = c.borrow_mut();
            cfg.precision = integer_option(a, 1, cfg.precision, 1, 14)?;
            Spread::of(lua, vec![num(cfg.precision)])
        })?,
    )?;
    let c = cfg.clone();
    t.set(
        "encode_keep_buffer",
        lib.function(move |lua, a| {
            arg_init(a, 1)?;
            let mut cfg = c.borrow_mut();
            cfg.keep_buffer = bool_option(a, 1, cfg.keep_buffer)?;
            Spread::of(lua, vec![Value::Boolean(cfg.keep_buffer)])
        })?,
    )?;
    let c = cfg.clone();
    t.set(
        "encode_invalid_numbers",
        lib.function(move |lua, a| {
            arg_init(a, 1)?;
            let mut cfg = c.borrow_mut();
            cfg.encode_invalid_numbers =
                enum_option(a, 1, cfg.encode_invalid_numbers, &["off", "on", "null"])?;
            Spread::of(
                lua,
                vec![match cfg.encode_invalid_numbers {
                    0 => Value::Boolean(false),
                    1 => Value::Boolean(true),
                    _ => Value::String(lua.create_string("null").map_err(lua_fail)?),
                }],
            )
        })?,
    )?;
    let c = cfg;
    t.set(
        "decode_invalid_numbers",
        lib.function(move |lua, a| {
            arg_init(a, 1)?;
            let mut cfg = c.borrow_mut();
            cfg.decode_invalid_numbers = bool_option(a, 1, cfg.decode_invalid_numbers)?;
            Spread::of(lua, vec![Value::Boolean(cfg.decode_invalid_numbers)])
        })?,
    )?;
    let parts = lib.parts();
    t.set(
        "new",
        lib.function(move |lua, _| {
            let lib = Installer::inside(lua, parts.clone());
            let t = module(&lib).map_err(lua_fail)?;
            Spread::of(lua, vec![Value::Table(t)])
        })?,
    )?;
    t.set("null", null())?;
    t.set("_NAME", "cjson")?;
    t.set("_VERSION", "2.1.0")?;
    Ok(t)
}

fn num(i: i32) -> Value {
    Value::Number(f64::from(i))
}

/// At most `n` arguments; the settings functions take optional ones.
fn arg_init(args: &Args, n: usize) -> Answer<()> {
    if args.len() > n {
        return Err(Fail::arg(n as i32 + 1, "found too many arguments"));
    }
    Ok(())
}

/// A whole number in `min..=max`, or the current value when nil or absent.
fn integer_option(args: &Args, n: usize, current: i32, min: i32, max: i32) -> Answer<i32> {
    if args.is_none_or_nil(n) {
        return Ok(current);
    }
    // The C code keeps the lua_Integer in an int before checking the range,
    // so 1e10 wraps to 1410065408 and is accepted.
    let value = args.integer(n)? as i32;
    if value < min || value > max {
        // The C code names argument 1 whatever the option's position.
        return Err(Fail::arg(
            1,
            format!("expected integer between {min} and {max}"),
        ));
    }
    Ok(value)
}

/// A boolean, or one of "off"/"on".
fn bool_option(args: &Args, n: usize, current: bool) -> Answer<bool> {
    Ok(enum_option(args, n, i32::from(current), &["off", "on"])? != 0)
}

/// A boolean (false 0, true 1) or one of `options` by name (its index).
fn enum_option(args: &Args, n: usize, current: i32, options: &[&str]) -> Answer<i32> {
    match args.get(n) {
        None | Some(Value::Nil) => Ok(current),
        Some(Value::Boolean(b)) => Ok(i32::from(b)),
        Some(_) => {
            let name = args.bytes(n)?;
            match options.iter().position(|o| o.as_bytes() == name.as_slice()) {
                Some(i) => Ok(i as i32),
                None => {
                    let mut msg = b"invalid option '".to_vec();
                    msg.extend_from_slice(&name);
                    msg.push(b'\'');
                    Err(Fail::Arg(n as i32, msg))
                }
            }
        }
    }
}

// ---------------------------------------------------------------- encoding

fn encode(lua: &Lua, cfg: &Config, walker: &Walker, args: &Args) -> Answer<Spread> {
    if args.len() != 1 {
        return Err(Fail::arg(1, "expected 1 argument"));
    }
    let value = args.get(1).unwrap_or(Value::Nil);
    let work = lua.create_table().map_err(lua_fail)?;
    let mut out = Vec::new();
    Encoder {
        cfg,
        walker,
        work,
        out: &mut out,
    }
    .run(value)?;
    let s = lua.create_string(out).map_err(lua_fail)?;
    Spread::of(lua, vec![Value::String(s)])
}

/// A table being written: an array (the next index to write) or an object
/// (whether a pair was written yet). The table waits in the work table at
/// `work[2d-1]` (and an object's last key at `work[2d]`), not in Rust, so
/// deep or wide tables do not fill mlua's reference stack.
enum Open {
    Array { len: i32, next: i32 },
    Object { started: bool },
}

struct Encoder<'a> {
    cfg: &'a Config,
    walker: &'a Walker,
    work: Table,
    out: &'a mut Vec<u8>,
}

fn encode_error(what: &str, reason: &str) -> Fail {
    Fail::error(format!("Cannot serialise {what}: {reason}"))
}

impl Encoder<'_> {
    fn run(&mut self, value: Value) -> Answer<()> {
        let mut open: Vec<Open> = Vec::new();
        // Lua stack slots in use: the argument, one per open array (the
        // element) and two per open object (key and value).
        let mut slots: i64 = 1;
        let mut pending = Some(value);
        loop {
            if let Some(v) = pending.take() {
                if let Value::Table(t) = v {
                    let depth = open.len() as i64 + 1;
                    if depth > i64::from(self.cfg.encode_max_depth) || slots + 3 > MAX_C_STACK {
                        return Err(Fail::error(format!(
                            "Cannot serialise, excessive nesting ({depth})"
                        )));
                    }
                    let slot = 2 * (open.len() + 1);
                    let len = self.array_length(&t, slot)?;
                    // The scan may have stopped early; the object walk starts afresh.
                    self.work.raw_set(slot, Value::Nil).map_err(lua_fail)?;
                    if len > 0 {
                        self.out.push(b'[');
                        open.push(Open::Array { len, next: 1 });
                        slots += 1;
                    } else {
                        self.out.push(b'{');
                        open.push(Open::Object { started: false });
                        slots += 2;
                    }
                    self.work.raw_set(2 * open.len() - 1, t).map_err(lua_fail)?;
                } else {
                    self.scalar(&v)?;
                }
            }
            // Next element of the innermost open table, or close it.
            let depth = open.len();
            let Some(top) = open.last_mut() else {
                return Ok(());
            };
            let table = self
                .work
                .raw_get::<Table>(2 * depth - 1)
                .map_err(lua_fail)?;
            match top {
                Open::Array { len, next } => {
                    if *next > *len {
                        self.out.push(b']');
                        self.close(depth)?;
                        open.pop();
                        slots -= 1;
                        continue;
                    }
                    if *next > 1 {
                        self.out.push(b',');
                    }
                    let key = Value::Number(f64::from(*next));
                    let v = table.raw_get::<Value>(*next).map_err(lua_fail)?;
                    pending = Some(exact(&table, &key, v));
                    *next += 1;
                }
                Open::Object { started } => {
                    let pair = self
                        .walker
                        .next(&table, &self.work, 2 * depth)
                        .map_err(lua_fail)?;
                    let Some((k, v)) = pair else {
                        self.out.push(b'}');
                        self.close(depth)?;
                        open.pop();
                        slots -= 2;
                        continue;
                    };
                    if *started {
                        self.out.push(b',');
                    }
                    *started = true;
                    match &k {
                        Value::Number(_) | Value::Integer(_) => {
                            self.out.push(b'"');
                            self.number(&k)?;
                            self.out.extend_from_slice(b"\":");
                        }
                        Value::String(s) => {
                            append_string(self.out, &s.as_bytes());
                            self.out.push(b':');
                        }
                        other => {
                            return Err(encode_error(
                                type_name(other),
                                "table key must be a number or string",
                            ))
                        }
                    }
                    pending = Some(v);
                }
            }
        }
    }

    /// Forgets the table (and key) of open level `depth`.
    fn close(&self, depth: usize) -> Answer<()> {
        self.work
            .raw_set(2 * depth - 1, Value::Nil)
            .map_err(lua_fail)?;
        self.work.raw_set(2 * depth, Value::Nil).map_err(lua_fail)
    }

    fn scalar(&mut self, v: &Value) -> Answer<()> {
        match v {
            Value::String(s) => append_string(self.out, &s.as_bytes()),
            Value::Number(_) | Value::Integer(_) => self.number(v)?,
            Value::Boolean(true) => self.out.extend_from_slice(b"true"),
            Value::Boolean(false) => self.out.extend_from_slice(b"false"),
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => self.out.extend_from_slice(b"null"),
            other => return Err(encode_error(type_name(other), "type not supported")),
        }
        Ok(())
    }

    fn number(&mut self, v: &Value) -> Answer<()> {
        let x = match v {
            Value::Integer(i) => *i as f64,
            Value::Number(x) => *x,
            _ => 0.0,
        };
        match self.cfg.encode_invalid_numbers {
            0 if !x.is_finite() => return Err(encode_error("number", "must not be NaN or Inf")),
            // Always "nan", never "-nan".
            1 if x.is_nan() => {
                self.out.extend_from_slice(b"nan");
                return Ok(());
            }
            2 if !x.is_finite() => {
                self.out.extend_from_slice(b"null");
                return Ok(());
            }
            _ => {}
        }
        self.out
            .extend_from_slice(format_g(x, self.cfg.precision as usize).as_bytes());
        Ok(())
    }

    /// The array length when every key is a positive integer (0 for an
    /// empty table, so it is written as an object), else -1. The maximum is
    /// kept in a C int, as cjson does, so keys past 2^31 make it an object.
    /// Pairs are visited one at a time.
    fn array_length(&self, t: &Table, slot: usize) -> Answer<i32> {
        let mut max: i32 = 0;
        let mut count: i32 = 0;
        while let Some((k, _)) = self.walker.next(t, &self.work, slot).map_err(lua_fail)? {
            let k = match k {
                Value::Integer(i) => i as f64,
                Value::Number(x) => x,
                _ => return Ok(-1),
            };
            if k == 0.0 || k.floor() != k || k < 1.0 {
                return Ok(-1);
            }
            if k > f64::from(max) {
                max = c_double_to_i32(k);
            }
            count = count.wrapping_add(1);
        }
        let cfg = self.cfg;
        if cfg.sparse_ratio > 0
            && max > count.wrapping_mul(cfg.sparse_ratio)
            && max > cfg.sparse_safe
        {
            if !cfg.sparse_convert {
                return Err(encode_error("table", "excessively sparse array"));
            }
            return Ok(-1);
        }
        Ok(max)
    }
}

fn append_string(out: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(c >> 4)]);
                out.push(HEX[usize::from(c & 15)]);
            }
            _ => out.push(c),
        }
    }
    out.push(b'"');
}

// ---------------------------------------------------------------- decoding

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Number,
    Boolean,
    Null,
    Colon,
    Comma,
    End,
    Error,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::ObjBegin => "T_OBJ_BEGIN",
            Kind::ObjEnd => "T_OBJ_END",
            Kind::ArrBegin => "T_ARR_BEGIN",
            Kind::ArrEnd => "T_ARR_END",
            Kind::Str => "T_STRING",
            Kind::Number => "T_NUMBER",
            Kind::Boolean => "T_BOOLEAN",
            Kind::Null => "T_NULL",
            Kind::Colon => "T_COLON",
            Kind::Comma => "T_COMMA",
            Kind::End => "T_END",
            Kind::Error => "T_ERROR",
        }
    }
}

struct Token {
    kind: Kind,
    /// 0-based position, shown 1-based in errors.
    index: usize,
    string: Vec<u8>,
    number: f64,
    boolean: bool,
    error: &'static str,
}

struct Lexer<'a> {
    data: &'a [u8],
    ptr: usize,
    invalid_numbers: bool,
}

impl Lexer<'_> {
    /// The byte at `i`; past the end (or at a NUL) the C string has ended.
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn token(&self, kind: Kind, index: usize) -> Token {
        Token {
            kind,
            index,
            string: Vec::new(),
            number: 0.0,
            boolean: false,
            error: "",
        }
    }

    fn fail(&self, error: &'static str) -> Token {
        Token {
            error,
            ..self.token(Kind::Error, self.ptr)
        }
    }

    fn next(&mut self) -> Token {
        while matches!(self.at(self.ptr), b' ' | b'\t' | b'\n' | b'\r') {
            self.ptr += 1;
        }
        let index = self.ptr;
        let c = self.at(self.ptr);
        let single = match c {
            0 => return self.token(Kind::End, index),
            b'{' => Some(Kind::ObjBegin),
            b'}' => Some(Kind::ObjEnd),
            b'[' => Some(Kind::ArrBegin),
            b']' => Some(Kind::ArrEnd),
            b':' => Some(Kind::Colon),
            b',' => Some(Kind::Comma),
            b'"' | b'-' | b'+' | b'0'..=b'9' | b'f' | b'i' | b'I' | b'n' | b'N' | b't' => None,
            _ => return self.fail("invalid token"),
        };
        if let Some(kind) = single {
            self.ptr += 1;
            return self.token(kind, index);
        }
        let rest = &self.data[self.ptr.min(self.data.len())..];
        if c == b'"' {
            return self.string();
        }
        if c == b'-' || c.is_ascii_digit() {
            if !self.invalid_numbers && self.is_invalid_number() {
                return self.fail("invalid number");
            }
            return self.number();
        }
        for (word, kind, value) in [
            (&b"true"[..], Kind::Boolean, true),
            (b"false", Kind::Boolean, false),
            (b"null", Kind::Null, false),
        ] {
            if rest.starts_with(word) {
                self.ptr += word.len();
                return Token {
                    boolean: value,
                    ..self.token(kind, index)
                };
            }
        }
        if self.invalid_numbers && self.is_invalid_number() {
            return self.number();
        }
        self.fail("invalid token")
    }

    /// Numbers JSON forbids: a leading `+`, hex, leading zeros, inf, nan.
    fn is_invalid_number(&self) -> bool {
        let mut p = self.ptr;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        let c = self.at(p);
        if c == b'0' {
            let c2 = self.at(p + 1);
            return (c2 | 0x20) == b'x' || c2.is_ascii_digit();
        }
        if c <= b'9' {
            return false;
        }
        let word = |w: &[u8]| (0..3).all(|i| self.at(p + i).eq_ignore_ascii_case(&w[i]));
        word(b"inf") || word(b"nan")
    }

    fn number(&mut self) -> Token {
        // No number syntax takes a NUL, so strtod stops where C's would.
        let (value, used) = strtod(&self.data[self.ptr..]);
        if used == 0 {
            return self.fail("invalid number");
        }
        let index = self.ptr;
        self.ptr += used;
        Token {
            number: value,
            ..self.token(Kind::Number, index)
        }
    }

    fn string(&mut self) -> Token {
        let index = self.ptr;
        self.ptr += 1;
        let mut out = Vec::new();
        loop {
            let c = self.at(self.ptr);
            if c == b'"' {
                break;
            }
            if c == 0 {
                return self.fail("unexpected end of string");
            }
            if c == b'\\' {
                let translated = match self.at(self.ptr + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        if !self.unicode_escape(&mut out) {
                            return self.fail("invalid unicode escape code");
                        }
                        continue;
                    }
                    _ => return self.fail("invalid escape code"),
                };
                out.push(translated);
                self.ptr += 2;
                continue;
            }
            out.push(c);
            self.ptr += 1;
        }
        self.ptr += 1;
        Token {
            string: out,
            ..self.token(Kind::Str, index)
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        (0..4).try_fold(0u32, |acc, i| {
            Some(acc * 16 + (self.at(at + i) as char).to_digit(16)?)
        })
    }

    /// `\uXXXX` (or a surrogate pair) at `ptr`, appended as UTF-8.
    fn unicode_escape(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(mut cp) = self.hex4(self.ptr + 2) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if self.at(self.ptr + 6) != b'\\' || self.at(self.ptr + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.ptr + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        let mut buf = [0u8; 4];
        match char::from_u32(cp) {
            Some(ch) => out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes()),
            // A lone low surrogate cannot get here; keep the C encoding anyway.
            None => out.extend_from_slice(&[
                0xE0 | (cp >> 12) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]),
        }
        self.ptr += len;
        true
    }
}

fn parse_error(expected: &str, token: &Token) -> Fail {
    let found = if token.kind == Kind::Error {
        token.error
    } else {
        token.kind.name()
    };
    Fail::error(format!(
        "Expected {expected} but found {found} at character {}",
        token.index + 1
    ))
}

/// A container being filled: an array (next index) or an object (the key
/// whose value is being read). The table waits in the work table at
/// `work[d]`, not in Rust, so deep input does not fill mlua's reference stack.
enum Filling {
    Array { next: i64 },
    Object { key: Vec<u8> },
}

fn decode(lua: &Lua, cfg: &Config, args: &Args) -> Answer<Spread> {
    if args.len() != 1 {
        return Err(Fail::arg(1, "expected 1 argument"));
    }
    let data = args.bytes(1)?;
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(Fail::error("JSON parser does not support UTF-16 or UTF-32"));
    }
    let mut lx = Lexer {
        data: &data,
        ptr: 0,
        invalid_numbers: cfg.decode_invalid_numbers,
    };
    let max_depth = i64::from(cfg.decode_max_depth);
    let work = lua.create_table().map_err(lua_fail)?;
    let mut open: Vec<Filling> = Vec::new();
    // Lua stack slots in use: the argument, each open table, and the key of
    // each object whose value is being read.
    let mut slots: i64 = 1;
    let mut token = lx.next();
    loop {
        // `token` starts a value.
        let mut value = match token.kind {
            Kind::Str => Value::String(lua.create_string(&token.string).map_err(lua_fail)?),
            Kind::Number => Value::Number(token.number),
            Kind::Boolean => Value::Boolean(token.boolean),
            Kind::Null => null(),
            Kind::ArrBegin | Kind::ObjBegin => {
                let is_array = token.kind == Kind::ArrBegin;
                let depth = open.len() as i64 + 1;
                let need = if is_array { 2 } else { 3 };
                if depth > max_depth || slots + need > MAX_C_STACK {
                    return Err(Fail::error(format!(
                        "Found too many nested data structures ({depth}) at character {}",
                        lx.ptr
                    )));
                }
                let table = lua.create_table().map_err(lua_fail)?;
                token = lx.next();
                if is_array {
                    if token.kind == Kind::ArrEnd {
                        Value::Table(table)
                    } else {
                        open.push(Filling::Array { next: 1 });
                        work.raw_set(open.len(), table).map_err(lua_fail)?;
                        slots += 1;
                        continue;
                    }
                } else if token.kind == Kind::ObjEnd {
                    Value::Table(table)
                } else {
                    let key = object_key(&mut lx, token)?;
                    open.push(Filling::Object { key });
                    work.raw_set(open.len(), table).map_err(lua_fail)?;
                    slots += 2;
                    token = lx.next();
                    continue;
                }
            }
            _ => return Err(parse_error("value", &token)),
        };
        // Store the value in its container; close containers that end.
        loop {
            let depth = open.len();
            let Some(top) = open.last_mut() else {
                let end = lx.next();
                if end.kind != Kind::End {
                    return Err(parse_error("the end", &end));
                }
                return Spread::of(lua, vec![value]);
            };
            let table = work.raw_get::<Table>(depth).map_err(lua_fail)?;
            match top {
                Filling::Array { next } => {
                    table.raw_set(*next, value).map_err(lua_fail)?;
                    token = lx.next();
                    if token.kind == Kind::ArrEnd {
                        value = Value::Table(table);
                        work.raw_set(depth, Value::Nil).map_err(lua_fail)?;
                        open.pop();
                        slots -= 1;
                        continue;
                    }
                    if token.kind != Kind::Comma {
                        return Err(parse_error("comma or array end", &token));
                    }
                    *next += 1;
                    token = lx.next();
                    break;
                }
                Filling::Object { key } => {
                    let k = lua.create_string(&*key).map_err(lua_fail)?;
                    table.raw_set(k, value).map_err(lua_fail)?;
                    slots -= 1;
                    token = lx.next();
                    if token.kind == Kind::ObjEnd {
                        value = Value::Table(table);
                        work.raw_set(depth, Value::Nil).map_err(lua_fail)?;
                        open.pop();
                        slots -= 1;
                        continue;
                    }
                    if token.kind != Kind::Comma {
                        return Err(parse_error("comma or object end", &token));
                    }
                    token = lx.next();
                    *key = object_key(&mut lx, token)?;
                    slots += 1;
                    token = lx.next();
                    break;
                }
            }
        }
    }
}

/// An object key and its colon; leaves the lexer before the value.
fn object_key(lx: &mut Lexer<'_>, token: Token) -> Answer<Vec<u8>> {
    if token.kind != Kind::Str {
        return Err(parse_error("object key string", &token));
    }
    let colon = lx.next();
    if colon.kind != Kind::Colon {
        return Err(parse_error("colon", &colon));
    }
    Ok(token.string)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{eval, eval_in, vm};
    use proptest::prelude::*;

    // Each right-hand side is what redis-cli --no-raw eval "return <code>" 0
    // shows from Redis 7.0.15 (unquoted here).
    #[test]
    fn encode_values() {
        let lua = vm();
        let cases = [
            ("cjson.encode({1,2,3})", r#"[1,2,3]"#),
            ("cjson.encode({})", r#"{}"#),
            ("cjson.encode({a=1})", r#"{"a":1}"#),
            ("cjson.encode(1.5)", "1.5"),
            ("cjson.encode(0.1)", "0.1"),
            ("cjson.encode(1/3)", "0.33333333333333"),
            ("cjson.encode(1e100)", "1e+100"),
            ("cjson.encode(-0.0)", "-0"),
            ("cjson.encode(2^53)", "9.007199254741e+15"),
            ("cjson.encode(123456789012345678)", "1.2345678901235e+17"),
            ("cjson.encode(1e-300)", "1e-300"),
            ("cjson.encode({[1]=1,[3]=3})", "[1,null,3]"),
            ("cjson.encode({[1]=1,[4]=4})", "[1,null,null,4]"),
            ("cjson.encode({[2^40]=1})", r#"{"1099511627776":1}"#),
            ("cjson.encode({[0]=1})", r#"{"0":1}"#),
            ("cjson.encode({[-1]=1})", r#"{"-1":1}"#),
            ("cjson.encode({[1.5]=1})", r#"{"1.5":1}"#),
            ("cjson.encode(cjson.null)", "null"),
            ("cjson.encode({cjson.null})", "[null]"),
            ("cjson.encode(true)", "true"),
            ("cjson.encode(nil)", "null"),
            (
                "cjson.encode({1,{2,{3}}, x={y='z'}})",
                r#"{"1":1,"2":[2,[3]],"x":{"y":"z"}}"#,
            ),
            ("cjson.encode({1,2,nil,4})", "[1,2,null,4]"),
            ("cjson.encode({a={}})", r#"{"a":{}}"#),
            ("cjson.encode({['a']=1, [2]=2})", r#"{"a":1,"2":2}"#),
            (
                "cjson.encode({[1]=1, [2]=2, [3]=3, n=3})",
                r#"{"1":1,"2":2,"3":3,"n":3}"#,
            ),
            (
                "cjson.encode({1e15, 1e14, 123456789012345, 0.1+0.2, 5e-324, 1e-5, 123e-7})",
                "[1e+15,1e+14,1.2345678901234e+14,0.3,4.9406564584125e-324,1e-05,1.23e-05]",
            ),
        ];
        for (code, want) in cases {
            let got: String = lua.load(format!("return {code}")).eval().expect(code);
            assert_eq!(got, want, "{code}");
        }
        let escaped: mlua::String = lua
            .load(r#"return cjson.encode('a/b"c\\d\1\8\9\10\12\13\31\127\128')"#)
            .eval()
            .unwrap();
        assert_eq!(
            &escaped.as_bytes()[..],
            &b"\"a\\/b\\\"c\\\\d\\u0001\\b\\t\\n\\f\\r\\u001f\\u007f\x80\""[..]
        );
    }

    // redis-cli eval "return cjson.encode({[1]=1,[20]=1})" 0 and the like.
    #[test]
    fn encode_errors() {
        let cases = [
            (
                "cjson.encode({[1]=1,[20]=1})",
                "Cannot serialise table: excessively sparse array",
            ),
            (
                "cjson.encode({[1]=1,[11]=1})",
                "Cannot serialise table: excessively sparse array",
            ),
            (
                "cjson.encode({[true]=1})",
                "Cannot serialise boolean: table key must be a number or string",
            ),
            (
                "cjson.encode({[{}]=1})",
                "Cannot serialise table: table key must be a number or string",
            ),
            (
                "cjson.encode(0/0)",
                "Cannot serialise number: must not be NaN or Inf",
            ),
            (
                "cjson.encode(1/0)",
                "Cannot serialise number: must not be NaN or Inf",
            ),
            (
                "cjson.encode({[1/0]=1})",
                "Cannot serialise number: must not be NaN or Inf",
            ),
            (
                "cjson.encode(function() end)",
                "Cannot serialise function: type not supported",
            ),
            (
                "cjson.encode(coroutine.create(function() end))",
                "Cannot serialise thread: type not supported",
            ),
            (
                "cjson.encode()",
                "bad argument #1 to 'encode' (expected 1 argument)",
            ),
            (
                "cjson.encode(1,2)",
                "bad argument #1 to 'encode' (expected 1 argument)",
            ),
            (
                "(function() local t={} t[1]=t return cjson.encode(t) end)()",
                "Cannot serialise, excessive nesting (1001)",
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

    // redis-cli eval "return cjson.decode('[1,2,3]')" 0 and the like.
    #[test]
    fn decode_values() {
        let cases = [
            ("cjson.decode('[1,2,3]')", "{1=1,2=2,3=3}"),
            (
                r#"cjson.decode('{"a":[1,{"b":null}]}').a[2].b == cjson.null"#,
                "true",
            ),
            (
                r#"cjson.decode('"a\\u00e9\\ud83d\\ude00\\/"')"#,
                "\"a\u{e9}\u{1F600}/\"",
            ),
            ("tostring(cjson.decode('1e400'))", r#""inf""#),
            ("tostring(cjson.decode('-0'))", r#""-0""#),
            ("tostring(cjson.decode('  12.5  '))", r#""12.5""#),
            ("tostring(cjson.decode('+1'))", r#""1""#),
            ("tostring(cjson.decode('0x10'))", r#""16""#),
            ("tostring(cjson.decode('01'))", r#""1""#),
            ("tostring(cjson.decode('nan'))", r#""nan""#),
            ("tostring(cjson.decode('-nan'))", r#""-nan""#),
            ("tostring(cjson.decode('NaN'))", r#""nan""#),
            ("tostring(cjson.decode('-Infinity'))", r#""-inf""#),
            ("tostring(cjson.decode('inf'))", r#""inf""#),
            ("tostring(cjson.decode('Inf'))", r#""inf""#),
            ("tostring(cjson.decode('infinity'))", r#""inf""#),
            ("tostring(cjson.decode('1E2'))", r#""100""#),
            ("cjson.decode('[1]\\0 garbage')", "{1=1}"),
            ("cjson.decode(12)", "12"),
            ("cjson.decode('\"\\t\\1\"')", "\"\\t\\u{1}\""),
            (r#"cjson.decode('{"a":1,"a":2}').a"#, "2"),
            (
                "#cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000))",
                "1",
            ),
        ];
        for (code, want) in cases {
            assert_eq!(eval(&format!("return {code}")), want, "{code}");
        }
    }

    // redis-cli eval "return cjson.decode('[1,]')" 0 and the like.
    #[test]
    fn decode_errors() {
        let cases = [
            ("''", "Expected value but found T_END at character 1"),
            ("'  '", "Expected value but found T_END at character 3"),
            (
                "'x'",
                "Expected value but found invalid token at character 1",
            ),
            (
                "'[1,]'",
                "Expected value but found T_ARR_END at character 4",
            ),
            (
                "'[1 2]'",
                "Expected comma or array end but found T_NUMBER at character 4",
            ),
            (
                "'{1:2}'",
                "Expected object key string but found T_NUMBER at character 2",
            ),
            (
                r#"'{"a" 2}'"#,
                "Expected colon but found T_NUMBER at character 6",
            ),
            (
                r#"'{"a":2,}'"#,
                "Expected object key string but found T_OBJ_END at character 8",
            ),
            (
                r#"'{"a":2 "b"}'"#,
                "Expected comma or object end but found T_STRING at character 8",
            ),
            (
                "'[1] x'",
                "Expected the end but found invalid token at character 5",
            ),
            (
                r#"'"abc'"#,
                "Expected value but found unexpected end of string at character 5",
            ),
            (
                r#"'"\\q"'"#,
                "Expected value but found invalid escape code at character 2",
            ),
            (
                r#"'"\\u12"'"#,
                "Expected value but found invalid unicode escape code at character 2",
            ),
            (
                r#"'"\\ud800"'"#,
                "Expected value but found invalid unicode escape code at character 2",
            ),
            (
                r#"'"\\udc00\\u0041"'"#,
                "Expected value but found invalid unicode escape code at character 2",
            ),
            (
                "'-'",
                "Expected value but found invalid number at character 1",
            ),
            (
                "'.5'",
                "Expected value but found invalid token at character 1",
            ),
            (
                "'tru'",
                "Expected value but found invalid token at character 1",
            ),
            (
                "'nul'",
                "Expected value but found invalid token at character 1",
            ),
            (
                "'I'",
                "Expected value but found invalid token at character 1",
            ),
            (
                "'1e'",
                "Expected the end but found invalid token at character 2",
            ),
            (
                r#"'["a",'"#,
                "Expected value but found T_END at character 6",
            ),
            ("'\\0[1]'", "JSON parser does not support UTF-16 or UTF-32"),
            ("'a\\0'", "JSON parser does not support UTF-16 or UTF-32"),
            (
                "string.rep('[', 1001) .. string.rep(']', 1001)",
                "Found too many nested data structures (1001) at character 1001",
            ),
            (
                r#"string.rep('{"a":', 1001)"#,
                "Found too many nested data structures (1001) at character 5001",
            ),
        ];
        for (arg, want) in cases {
            assert_eq!(
                eval(&format!("return cjson.decode({arg})")),
                format!("ERR user_script:1: {want}"),
                "{arg}"
            );
        }
        assert_eq!(
            eval("return cjson.decode()"),
            "ERR user_script:1: bad argument #1 to 'decode' (expected 1 argument)"
        );
        assert_eq!(
            eval("return cjson.decode(1,2)"),
            "ERR user_script:1: bad argument #1 to 'decode' (expected 1 argument)"
        );
        assert_eq!(
            eval("return cjson.decode({})"),
            "ERR user_script:1: bad argument #1 to 'decode' (string expected, got table)"
        );
    }

    // Settings, checked one by one with redis-cli (and reset afterwards).
    #[test]
    fn settings() {
        let lua = vm();
        let run = |code: &str| eval_in(&lua, code);
        assert_eq!(
            run("return cjson.encode_keep_buffer(), cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision(), cjson.encode_invalid_numbers(), cjson.decode_invalid_numbers()"),
            "true 1000 1000 14 false true"
        );
        assert_eq!(run("return cjson.encode_sparse_array()"), "false 2 10");
        let errors = [
            ("cjson.encode_keep_buffer(1,2)", "bad argument #2 to 'encode_keep_buffer' (found too many arguments)"),
            ("cjson.encode_keep_buffer('x')", "bad argument #1 to 'encode_keep_buffer' (invalid option 'x')"),
            ("cjson.encode_keep_buffer(5)", "bad argument #1 to 'encode_keep_buffer' (invalid option '5')"),
            ("cjson.encode_number_precision(0)", "bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"),
            ("cjson.encode_number_precision(15)", "bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"),
            ("cjson.encode_number_precision('x')", "bad argument #1 to 'encode_number_precision' (number expected, got string)"),
            ("cjson.encode_sparse_array(true, -1)", "bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)"),
            ("cjson.encode_sparse_array(nil, nil, -1)", "bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)"),
            ("cjson.encode_sparse_array(1,2,3,4)", "bad argument #4 to 'encode_sparse_array' (found too many arguments)"),
            ("cjson.encode_invalid_numbers('x')", "bad argument #1 to 'encode_invalid_numbers' (invalid option 'x')"),
            ("cjson.encode_max_depth(0)", "bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"),
        ];
        for (code, want) in errors {
            assert_eq!(
                run(&format!("return {code}")),
                format!("ERR user_script:1: {want}"),
                "{code}"
            );
        }
        assert_eq!(run("return cjson.encode_number_precision(3.7)"), "3");
        assert_eq!(
            run("return cjson.encode({1/3, 12345, 1e-5})"),
            r#""[0.333,1.23e+04,1e-05]""#
        );
        assert_eq!(
            run("cjson.encode_number_precision(1) return cjson.encode({0.25, 0.35, 2.5, 0.05})"),
            r#""[0.2,0.3,2,0.05]""#
        );
        assert_eq!(
            run("cjson.encode_number_precision(14) return cjson.encode_invalid_numbers('null')"),
            r#""null""#
        );
        assert_eq!(
            run("return cjson.encode({0/0, 1/0, -1/0})"),
            r#""[null,null,null]""#
        );
        assert_eq!(run("return cjson.encode_invalid_numbers(true)"), "true");
        assert_eq!(
            run("return cjson.encode({0/0, 1/0, -1/0, -(0/0)})"),
            r#""[nan,inf,-inf,nan]""#
        );
        assert_eq!(run("return cjson.decode_invalid_numbers('off')"), "false");
        for (input, want) in [
            (
                "0x10",
                "Expected value but found invalid number at character 1",
            ),
            (
                "[01]",
                "Expected value but found invalid number at character 2",
            ),
            (
                "nan",
                "Expected value but found invalid token at character 1",
            ),
            (
                "+1",
                "Expected value but found invalid token at character 1",
            ),
        ] {
            assert_eq!(
                run(&format!(
                    "local ok, e = pcall(cjson.decode, '{input}') return e"
                )),
                format!("\"{want}\"")
            );
        }
        assert_eq!(run("return tostring(cjson.decode('-1.5e3'))"), r#""-1500""#);
        assert_eq!(
            run("cjson.encode_sparse_array(true) return cjson.encode({[1]=1,[20]=1})"),
            r#""{\"1\":1,\"20\":1}""#
        );
        assert_eq!(
            run("cjson.encode_sparse_array(false, 0) return cjson.encode({[1]=1,[6]=1})"),
            r#""[1,null,null,null,null,1]""#
        );
        assert_eq!(
            run("cjson.encode_max_depth(2) local ok, e = pcall(cjson.encode, {{{1}}}) return e"),
            r#""Cannot serialise, excessive nesting (3)""#
        );
        assert_eq!(
            run("cjson.decode_max_depth(2) local ok, e = pcall(cjson.decode, '[[[1]]]') return e"),
            r#""Found too many nested data structures (3) at character 3""#
        );
        assert_eq!(run("return cjson.encode_max_depth(nil)"), "2");
        // redis-cli eval "return cjson.decode_max_depth(1e10)" 0 -> 1410065408
        assert_eq!(run("return cjson.decode_max_depth(1e10)"), "1410065408");
    }

    // redis-cli: a cjson.new() table has settings of its own.
    #[test]
    fn new_and_fields() {
        assert_eq!(
            eval("local c = cjson.new() local r = {c.encode_max_depth(5), cjson.encode_max_depth()} return r[1], r[2]"),
            "5 1000"
        );
        assert_eq!(
            eval("local c = cjson.new() return c._NAME, c._VERSION, type(c.null), c.null == cjson.null, type(c.new), c == cjson"),
            r#""cjson" "2.1.0" "userdata" true "function" false"#
        );
        assert_eq!(eval("return tostring(cjson.null)"), r#""userdata: (nil)""#);
    }

    // The C-stack limits met with the depth settings raised, found with
    // redis-cli against Redis 7.0.15: arrays decode 7998 deep, objects 3999;
    // arrays encode 7997 deep, objects 3999.
    #[test]
    fn stack_limits() {
        let lua = vm();
        let run = |code: &str| eval_in(&lua, code);
        run("cjson.decode_max_depth(100000) cjson.encode_max_depth(100000)");
        assert_eq!(
            run("return pcall(cjson.decode, string.rep('[', 7998)..string.rep(']', 7998)) and 1"),
            "1"
        );
        assert_eq!(
            run("local ok, e = pcall(cjson.decode, string.rep('[', 7999)..string.rep(']', 7999)) return e"),
            r#""Found too many nested data structures (7999) at character 7999""#
        );
        assert_eq!(
            run(
                r#"return pcall(cjson.decode, string.rep('{"a":', 3999)..'1'..string.rep('}', 3999)) and 1"#
            ),
            "1"
        );
        assert_eq!(
            run(
                r#"local ok, e = pcall(cjson.decode, string.rep('{"a":', 4000)..'1'..string.rep('}', 4000)) return e"#
            ),
            r#""Found too many nested data structures (4000) at character 19996""#
        );
        let nest = "local function nest(n) local t = {} for i=1,n do t = {t} end return t end ";
        assert_eq!(
            run(&format!("{nest} return (pcall(cjson.encode, nest(7996)))")),
            "true"
        );
        assert_eq!(
            run(&format!(
                "{nest} local ok, e = pcall(cjson.encode, nest(7997)) return e"
            )),
            r#""Cannot serialise, excessive nesting (7998)""#
        );
        // Objects hold a key and a value per level: 3999 deep, not 4000.
        let objects =
            "local function nest(n) local t = {} for i=1,n do t = {a=t} end return t end ";
        assert_eq!(
            run(&format!(
                "{objects} return (pcall(cjson.encode, nest(3998)))"
            )),
            "true"
        );
        assert_eq!(
            run(&format!(
                "{objects} local ok, e = pcall(cjson.encode, nest(3999)) return e"
            )),
            r#""Cannot serialise, excessive nesting (4000)""#
        );
        // Far deeper input ends at the same limit, without recursion.
        assert_eq!(
            run("local ok, e = pcall(cjson.decode, string.rep('[', 1000000)) return e"),
            r#""Found too many nested data structures (7999) at character 7999""#
        );
    }

    /// A Lua literal for a generated JSON-friendly value.
    fn lua_value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            (-1_000_000_000i64..1_000_000_000).prop_map(|i| i.to_string()),
            (-1e6f64..1e6).prop_map(|f| format!("{f:?}")),
            "[ -~]{0,20}".prop_map(|s| format!("{s:?}")),
            any::<bool>().prop_map(|b| b.to_string()),
            Just("cjson.null".to_string()),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 1..5)
                    .prop_map(|v| format!("{{{}}}", v.join(","))),
                prop::collection::btree_map("[a-z]{1,5}", inner, 1..5).prop_map(|m| {
                    let body: Vec<String> =
                        m.into_iter().map(|(k, v)| format!("[{k:?}]={v}")).collect();
                    format!("{{{}}}", body.join(","))
                }),
            ]
        })
    }

    proptest! {
        // decode(encode(v)) equals v when every number survives %.14g, and
        // encoding the decoded value gives as many bytes.
        #[test]
        fn round_trip(value in lua_value()) {
            let lua = vm();
            let code = format!(
                "local function same(a, b)
                   if type(a) ~= type(b) then return false end
                   if type(a) == 'number' then return a == tonumber(string.format('%.14g', b)) end
                   if type(a) ~= 'table' then return a == b end
                   for k, v in pairs(a) do if not same(v, b[k]) then return false end end
                   for k in pairs(b) do if a[k] == nil then return false end end
                   return true
                 end
                 local input = {value}
                 local s = cjson.encode(input)
                 local output = cjson.decode(s)
                 return same(output, input), #cjson.encode(output) == #s, s"
            );
            let (same, stable, json): (bool, bool, String) = lua.load(&code).eval().unwrap();
            prop_assert!(same, "{} -> {}", value, json);
            prop_assert!(stable, "{} -> {}", value, json);
        }
    }
}
