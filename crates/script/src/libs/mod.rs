//! Libraries Redis preloads into its Lua VM, written for Keel: `cjson`,
//! `cmsgpack`, `bit` and `struct`.
//!
//! `open_all` installs the four global tables. Every library function is a
//! Rust body behind a small C trampoline: the body answers either a table of
//! results or a failure marker plus a message, and the trampoline spreads the
//! results or raises the message with `lua_error`. Scripts therefore see plain
//! string errors (as in Redis, where the C libraries call `luaL_error`), not
//! mlua's wrapped Rust errors, and `pcall(cjson.decode, s)` yields the same
//! string. The message carries what Lua's auxiliary library would add: the
//! caller's position (`user_script:1: `) and, for argument errors, the name
//! the caller used for the function (`bad argument #1 to 'band' (...)`).
//!
//! Invariants: no library call holds more than a handful of mlua references
//! at once (mlua has room for about 8000 in the whole VM and panics beyond),
//! numbers are read exactly (mlua rounds numbers within 2^-52 of 0 or ±1 to
//! that integer), and nothing recurses on input depth: deep input is walked
//! with explicit stacks and stops where Redis's C code meets Lua's C stack.

mod bit;
mod cjson;
mod cmsgpack;
mod struct_;

use mlua::{Function, Lua, MultiValue, Table, Value};

/// Installs the global tables `cjson`, `cmsgpack`, `bit` and `struct`.
pub fn open_all(lua: &Lua) -> mlua::Result<()> {
    let lib = Installer::new(lua)?;
    let globals = lua.globals();
    globals.set("cjson", cjson::open(&lib)?)?;
    globals.set("cmsgpack", cmsgpack::open(&lib)?)?;
    globals.set("bit", bit::open(&lib)?)?;
    globals.set("struct", struct_::open(&lib)?)?;
    Ok(())
}

/// Why a library function failed; rendered the way `lauxlib` renders it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fail {
    /// `luaL_argerror`: `bad argument #N to 'NAME' (MSG)`.
    Arg(i32, Vec<u8>),
    /// `luaL_error`: the message after the caller's position.
    Error(Vec<u8>),
    /// `lua_error` with a bare message (no position), as the Lua core raises.
    Raw(Vec<u8>),
}

impl Fail {
    pub(crate) fn arg(n: i32, msg: impl Into<Vec<u8>>) -> Fail {
        Fail::Arg(n, msg.into())
    }
    pub(crate) fn error(msg: impl Into<Vec<u8>>) -> Fail {
        Fail::Error(msg.into())
    }
}

pub(crate) type Answer<T> = Result<T, Fail>;

/// Builds library functions: a Rust body wrapped in the raising trampoline.
pub(crate) struct Installer<'lua> {
    lua: &'lua Lua,
    marker: Table,
    walker: Walker,
}

impl<'lua> Installer<'lua> {
    fn new(lua: &'lua Lua) -> mlua::Result<Installer<'lua>> {
        Ok(Installer {
            lua,
            marker: lua.create_table()?,
            walker: Walker::new(lua)?,
        })
    }

    /// An installer inside a library call (for `cjson.new`), sharing the
    /// failure marker and walker of the one that built the calling function.
    pub(crate) fn inside(lua: &'lua Lua, parts: (Table, Walker)) -> Installer<'lua> {
        Installer {
            lua,
            marker: parts.0,
            walker: parts.1,
        }
    }

    /// What `inside` needs, for a function to keep.
    pub(crate) fn parts(&self) -> (Table, Walker) {
        (self.marker.clone(), self.walker.clone())
    }

    pub(crate) fn walker(&self) -> Walker {
        self.walker.clone()
    }

    pub(crate) fn lua(&self) -> &'lua Lua {
        self.lua
    }

    /// A library function running `body` on its arguments.
    ///
    /// Few arguments and results travel as plain values; many travel in Lua
    /// tables, for three reasons. Every Lua value a Rust frame holds takes a
    /// slot of mlua's reference stack, which has room for about 8000 in the
    /// whole VM (and panics beyond), so a call with thousands of string
    /// arguments, or answering thousands of values, must not hold them all at
    /// once. mlua cannot return as many values from a callback as Lua lets a
    /// C function (`cmsgpack.unpack` may answer 7999); the trampoline spreads
    /// a results table on its own stack. And mlua hands a number closer than
    /// 2^-52 to 0 over as the integer 0 (-0.0 and 1e-300 would arrive as 0),
    /// while a number read from a table as `f64` is exact: the trampoline
    /// uses a table whenever an argument is such a number.
    pub(crate) fn function<F>(&self, body: F) -> mlua::Result<Function>
    where
        F: Fn(&Lua, &Args) -> Answer<Spread> + 'static,
    {
        let marker = self.marker.clone();
        let body = self.lua.create_function(move |lua, mut args: MultiValue| {
            let args = match args.pop_front() {
                Some(Value::Table(table)) => {
                    let n = match args.pop_front() {
                        Some(Value::Integer(n)) => n.max(0) as usize,
                        Some(Value::Number(n)) => n.max(0.0) as usize,
                        _ => 0,
                    };
                    Args {
                        direct: Vec::new(),
                        table: Some(table),
                        n,
                    }
                }
                _ => Args {
                    n: args.len(),
                    direct: args.into_vec(),
                    table: None,
                },
            };
            match body(lua, &args) {
                Ok(out) => out.into_reply(),
                Err(fail) => {
                    let msg = lua.create_string(render(lua, fail))?;
                    Ok(MultiValue::from_vec(vec![
                        Value::Table(marker.clone()),
                        Value::String(msg),
                    ]))
                }
            }
        })?;
        raising::wrap(self.lua, body, self.marker.clone())
    }
}

/// Results answered as plain values; more go to a table.
const FEW: usize = 16;

/// The results of a library call: a few values, or a Lua table of them.
pub(crate) struct Spread {
    lua: Lua,
    few: Vec<Value>,
    table: Option<Table>,
    n: usize,
}

impl Spread {
    pub(crate) fn new(lua: &Lua) -> Answer<Spread> {
        Ok(Spread {
            lua: lua.clone(),
            few: Vec::new(),
            table: None,
            n: 0,
        })
    }

    pub(crate) fn of(lua: &Lua, values: Vec<Value>) -> Answer<Spread> {
        let mut out = Spread::new(lua)?;
        for v in values {
            out.push(v)?;
        }
        Ok(out)
    }

    /// The table, created (and given the values so far) on first need.
    fn table(&mut self) -> Answer<&Table> {
        if self.table.is_none() {
            let table = self.lua.create_table().map_err(lua_fail)?;
            for (i, v) in self.few.drain(..).enumerate() {
                table.raw_set(i + 1, v).map_err(lua_fail)?;
            }
            self.table = Some(table);
        }
        Ok(self.table.as_ref().expect("just set"))
    }

    fn get(&self, i: usize) -> Answer<Value> {
        match &self.table {
            None => Ok(self.few.get(i - 1).cloned().unwrap_or(Value::Nil)),
            Some(t) => {
                let v = t.raw_get::<Value>(i).map_err(lua_fail)?;
                Ok(exact(t, &Value::Number(i as f64), v))
            }
        }
    }

    pub(crate) fn push(&mut self, v: Value) -> Answer<()> {
        if self.table.is_none() && self.few.len() < FEW {
            self.few.push(v);
        } else {
            let n = self.n;
            self.table()?.raw_set(n + 1, v).map_err(lua_fail)?;
        }
        self.n += 1;
        Ok(())
    }

    /// Removes and returns the last result.
    pub(crate) fn pop(&mut self) -> Answer<Value> {
        if self.n == 0 {
            return Ok(Value::Nil);
        }
        let v = self.get(self.n)?;
        match &self.table {
            None => {
                self.few.pop();
            }
            Some(t) => t.raw_set(self.n, Value::Nil).map_err(lua_fail)?,
        }
        self.n -= 1;
        Ok(v)
    }

    pub(crate) fn last(&self) -> Answer<Value> {
        if self.n == 0 {
            return Ok(Value::Nil);
        }
        self.get(self.n)
    }

    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// Puts `v` first, before the results so far.
    pub(crate) fn unshift(&mut self, v: Value) -> Answer<()> {
        if self.table.is_none() && self.few.len() < FEW {
            self.few.insert(0, v);
            self.n += 1;
            return Ok(());
        }
        let n = self.n;
        self.table()?;
        for i in (1..=n).rev() {
            let moved = self.get(i)?;
            self.table()?.raw_set(i + 1, moved).map_err(lua_fail)?;
        }
        self.table()?.raw_set(1, v).map_err(lua_fail)?;
        self.n += 1;
        Ok(())
    }

    /// What the body hands the trampoline: `true` and the values, or the
    /// table and the count.
    fn into_reply(self) -> mlua::Result<MultiValue> {
        match self.table {
            None => {
                let mut values = Vec::with_capacity(self.few.len() + 1);
                values.push(Value::Boolean(true));
                values.extend(self.few);
                Ok(MultiValue::from_vec(values))
            }
            Some(t) => Ok(MultiValue::from_vec(vec![
                Value::Table(t),
                Value::Number(self.n as f64),
            ])),
        }
    }
}

/// A failure of mlua itself (out of memory and the like), as a plain error.
pub(crate) fn lua_fail(e: mlua::Error) -> Fail {
    Fail::error(e.to_string())
}

/// Walks a table's pairs in `next` order, keeping the position on the Lua
/// side (`state[slot]`): a Rust copy of a key may be rounded by mlua (a key
/// of -0.0 or 1e-300 arrives as 0), and Lua's `next` refuses a key the
/// table does not hold. Keys and values come out exact, one pair at a time.
#[derive(Clone)]
pub(crate) struct Walker(Function);

impl Walker {
    fn new(lua: &Lua) -> mlua::Result<Walker> {
        let step = lua
            .load(
                "local next = next\n\
                 return function(t, state, slot)\n\
                   local k, v = next(t, state[slot])\n\
                   state[slot] = k\n\
                   return k, v\n\
                 end",
            )
            .set_name("=keel_libs")
            .call::<Function>(())?;
        Ok(Walker(step))
    }

    /// The pair after the key in `state[slot]`, which becomes that pair's
    /// key (nil, and `None`, at the end).
    pub(crate) fn next(
        &self,
        t: &Table,
        state: &Table,
        slot: usize,
    ) -> mlua::Result<Option<(Value, Value)>> {
        let (k, v): (Value, Value) = self.0.call((t.clone(), state.clone(), slot))?;
        let k = match k {
            Value::Nil => return Ok(None),
            Value::Integer(i) if (-1..=1).contains(&i) => {
                Value::Number(state.raw_get::<f64>(slot)?)
            }
            other => other,
        };
        let v = exact(t, &k, v);
        Ok(Some((k, v)))
    }
}

/// `value` as read from `table[key]` by mlua, with a number near 0 or ±1
/// read again as the exact `f64` (see `Installer::function_exact`).
pub(crate) fn exact(table: &Table, key: &Value, value: Value) -> Value {
    match value {
        Value::Integer(i) if (-1..=1).contains(&i) => match table.raw_get::<f64>(key.clone()) {
            Ok(x) => Value::Number(x),
            Err(_) => Value::Integer(i),
        },
        other => other,
    }
}

/// The trampoline is a C function, not a Lua one: a script's
/// `return cjson.decode(s)` is a tail call, and a tail call into a Lua
/// function would drop the script's frame, losing the position and the name
/// Redis puts in the message. Calls into C functions keep the caller's frame.
#[allow(unsafe_code)]
mod raising {
    use mlua::{ffi, Function, Lua, Table};
    use std::os::raw::c_int;

    pub(super) fn wrap(lua: &Lua, body: Function, marker: Table) -> mlua::Result<Function> {
        // SAFETY: the closure only moves the two pushed arguments into the
        // upvalues of a new C closure, which is left as the single result.
        unsafe {
            lua.exec_raw::<Function>((body, marker), |state| {
                ffi::lua_pushcclosure(state, trampoline, 2);
            })
        }
    }

    /// Arguments passed as plain values at most; more go in a table.
    const FEW_ARGS: c_int = 8;

    /// Calls upvalue 1 (the body) with `false` and the arguments, or with a
    /// table of them and their count. The body answers `true` and the
    /// results, a table of results and their count, or upvalue 2 (the
    /// failure marker) and the message to raise.
    unsafe extern "C-unwind" fn trampoline(state: *mut ffi::lua_State) -> c_int {
        // SAFETY: a C function called by Lua with its two upvalues set by
        // `wrap`. No Rust value with a destructor is alive in this frame, so
        // `lua_error`'s long jump (and one from the body) skips nothing.
        unsafe {
            let nargs = ffi::lua_gettop(state);
            // (mlua's luaL_checkstack asks for 20 slots more than Lua's.)
            if ffi::lua_checkstack(state, 3) == 0 {
                return ffi::luaL_error(state, c"stack overflow".as_ptr());
            }
            // mlua would read a number closer than 2^-52 to 0 as the integer 0.
            let tabled = nargs > FEW_ARGS
                || (1..=nargs).any(|i| {
                    if ffi::lua_type(state, i) != ffi::LUA_TNUMBER {
                        return false;
                    }
                    let x = ffi::lua_tonumber(state, i);
                    x.abs() < f64::EPSILON && x.to_bits() != 0
                });
            let call_args = if tabled {
                ffi::lua_createtable(state, nargs, 0);
                ffi::lua_insert(state, 1);
                for i in (1..=nargs).rev() {
                    ffi::lua_rawseti(state, 1, ffi::lua_Integer::from(i));
                }
                ffi::lua_pushinteger(state, ffi::lua_Integer::from(nargs));
                2
            } else {
                ffi::lua_pushboolean(state, 0);
                ffi::lua_insert(state, 1);
                nargs + 1
            };
            ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
            ffi::lua_insert(state, 1);
            ffi::lua_call(state, call_args, ffi::LUA_MULTRET);
            let top = ffi::lua_gettop(state);
            if ffi::lua_rawequal(state, 1, ffi::lua_upvalueindex(2)) != 0 {
                ffi::lua_settop(state, 2);
                ffi::lua_error(state);
            }
            if ffi::lua_type(state, 1) == ffi::LUA_TBOOLEAN {
                ffi::lua_remove(state, 1);
                return top - 1;
            }
            let n = ffi::lua_tointeger(state, 2) as c_int;
            ffi::lua_settop(state, 1);
            if ffi::lua_checkstack(state, n) == 0 {
                return ffi::luaL_error(
                    state,
                    c"stack overflow (%s)".as_ptr(),
                    c"too many results".as_ptr(),
                );
            }
            for i in 1..=n {
                ffi::lua_rawgeti(state, 1, ffi::lua_Integer::from(i));
            }
            n
        }
    }
}

/// Adds what `luaL_argerror` and `luaL_where` add. Stack level 0 is the Rust
/// body, 1 the trampoline (the function the script called), 2 the caller.
fn render(lua: &Lua, fail: Fail) -> Vec<u8> {
    let (mut n, extra) = match fail {
        Fail::Raw(msg) => return msg,
        Fail::Error(msg) => return [position(lua), msg].concat(),
        Fail::Arg(n, extra) => (n, extra),
    };
    let (name, method) = match lua.inspect_stack(1) {
        Some(frame) => {
            let names = frame.names();
            let name = names.name.map(|s| s.into_owned());
            (name, names.name_what == Some("method"))
        }
        None => (None, false),
    };
    let mut out = position(lua);
    if method {
        n -= 1;
        if n == 0 {
            let name = name.unwrap_or_else(|| "?".to_string());
            out.extend_from_slice(format!("calling '{name}' on bad self (").as_bytes());
            out.extend_from_slice(&extra);
            out.push(b')');
            return out;
        }
    }
    let name = name.unwrap_or_else(|| "?".to_string());
    out.extend_from_slice(format!("bad argument #{n} to '{name}' (").as_bytes());
    out.extend_from_slice(&extra);
    out.push(b')');
    out
}

/// `luaL_where(L, 1)` as seen from the function the script called.
fn position(lua: &Lua) -> Vec<u8> {
    match lua.inspect_stack(2) {
        Some(frame) => {
            let line = frame.curr_line();
            if line > 0 {
                let src = frame
                    .source()
                    .short_src
                    .map(|s| s.into_owned())
                    .unwrap_or_default();
                format!("{src}:{line}: ").into_bytes()
            } else {
                Vec::new()
            }
        }
        None => Vec::new(),
    }
}

/// The arguments of one call, with `lauxlib`'s checks (1-based like Lua):
/// a few values, or a Lua table of them.
pub(crate) struct Args {
    direct: Vec<Value>,
    table: Option<Table>,
    n: usize,
}

impl Args {
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// The argument at `n` (numbers exact), or `None` when absent ("no value").
    pub(crate) fn get(&self, n: usize) -> Option<Value> {
        if n == 0 || n > self.n {
            return None;
        }
        match &self.table {
            None => self.direct.get(n - 1).cloned(),
            Some(t) => {
                let v = t.raw_get::<Value>(n).unwrap_or(Value::Nil);
                Some(exact(t, &Value::Number(n as f64), v))
            }
        }
    }

    pub(crate) fn is_none_or_nil(&self, n: usize) -> bool {
        matches!(self.get(n), None | Some(Value::Nil))
    }

    /// `luaL_checknumber`: a number, or a string Lua converts to one.
    pub(crate) fn number(&self, n: usize) -> Answer<f64> {
        match self.get(n).as_ref().and_then(to_number) {
            Some(x) => Ok(x),
            None => Err(self.type_error(n, "number")),
        }
    }

    /// `luaL_optnumber`-style: `None` for an absent or nil argument.
    pub(crate) fn opt_number(&self, n: usize) -> Answer<Option<f64>> {
        if self.is_none_or_nil(n) {
            Ok(None)
        } else {
            self.number(n).map(Some)
        }
    }

    /// `luaL_checkinteger`: the number truncated toward zero.
    pub(crate) fn integer(&self, n: usize) -> Answer<i64> {
        self.number(n).map(c_double_to_i64)
    }

    /// `luaL_optinteger`.
    pub(crate) fn opt_integer(&self, n: usize, default: i64) -> Answer<i64> {
        Ok(self.opt_number(n)?.map(c_double_to_i64).unwrap_or(default))
    }

    /// `luaL_checklstring`: a string, or a number converted as Lua does.
    pub(crate) fn bytes(&self, n: usize) -> Answer<Vec<u8>> {
        match self.get(n) {
            Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
            Some(Value::Number(x)) => Ok(number_to_string(x).into_bytes()),
            Some(Value::Integer(i)) => Ok(number_to_string(i as f64).into_bytes()),
            _ => Err(self.type_error(n, "string")),
        }
    }

    /// `luaL_typerror`: "T expected, got U".
    pub(crate) fn type_error(&self, n: usize, expected: &str) -> Fail {
        let got = self.get(n).as_ref().map_or("no value", type_name);
        Fail::arg(n as i32, format!("{expected} expected, got {got}"))
    }
}

/// `lua_typename` of a value.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::LightUserData(_) | Value::UserData(_) | Value::Error(_) => "userdata",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// `lua_tonumber`: numbers, and strings that read as numbers.
pub(crate) fn to_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(x) => Some(*x),
        Value::Integer(i) => Some(*i as f64),
        Value::String(s) => str_to_number(&s.as_bytes()),
        _ => None,
    }
}

/// Lua 5.1's `luaO_str2d`: C's `strtod` (which reads hexadecimal too), with
/// only whitespace allowed after the number. Like C, it stops at a NUL byte.
pub(crate) fn str_to_number(s: &[u8]) -> Option<f64> {
    let s = s.split(|c| *c == 0).next().unwrap_or_default();
    let (value, used) = strtod(s);
    if used == 0 {
        return None;
    }
    if s[used..].iter().all(|c| is_c_space(*c)) {
        Some(value)
    } else {
        None
    }
}

pub(crate) fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// C's `strtod` (glibc, "C" locale): the value and how many bytes it used
/// (0 when no number starts `s`). Leading whitespace is skipped.
pub(crate) fn strtod(s: &[u8]) -> (f64, usize) {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let signed = |x: f64| if neg { -x } else { x };
    let rest = &s[i..];
    let starts =
        |word: &[u8]| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word);
    if starts(b"infinity") {
        return (signed(f64::INFINITY), i + 8);
    }
    if starts(b"inf") {
        return (signed(f64::INFINITY), i + 3);
    }
    if starts(b"nan") {
        let mut end = i + 3;
        let mut nan = f64::NAN;
        if s.get(end) == Some(&b'(') {
            let mut j = end + 1;
            while j < s.len() && (s[j].is_ascii_alphanumeric() || s[j] == b'_') {
                j += 1;
            }
            if s.get(j) == Some(&b')') {
                nan = nan_with_payload(&s[end + 1..j]);
                end = j + 1;
            }
        }
        return (signed(nan), end);
    }
    if rest.len() >= 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        if let Some((v, used)) = hex_float(&rest[2..]) {
            return (signed(v), i + 2 + used);
        }
        // "0x" with no hex digits reads as the number 0 (the "0").
        return (signed(0.0), i + 1);
    }
    let mut j = i;
    let mut digits = 0;
    while j < s.len() && s[j].is_ascii_digit() {
        j += 1;
        digits += 1;
    }
    if j < s.len() && s[j] == b'.' {
        j += 1;
        while j < s.len() && s[j].is_ascii_digit() {
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return (0.0, 0);
    }
    if j < s.len() && (s[j] | 0x20) == b'e' {
        let mut k = j + 1;
        if k < s.len() && (s[k] == b'+' || s[k] == b'-') {
            k += 1;
        }
        if k < s.len() && s[k].is_ascii_digit() {
            while k < s.len() && s[k].is_ascii_digit() {
                k += 1;
            }
            j = k;
        }
    }
    // Rust's parser takes the same decimal syntax ("1.", ".5", "1.e5") and
    // rounds correctly, as glibc does.
    let text = std::str::from_utf8(&s[i..j]).unwrap_or("0");
    (signed(text.parse::<f64>().unwrap_or(0.0)), j)
}

/// glibc's "nan(CHARS)": when CHARS read wholly as an unsigned integer
/// (C's base 0: 0x hex, 0 octal, else decimal), its low 51 bits become the
/// payload of a quiet NaN (`bit.tobit('nan(123)')` is 123 in Redis).
fn nan_with_payload(chars: &[u8]) -> f64 {
    let (digits, radix) = match chars {
        [b'0', b'x' | b'X', rest @ ..] if !rest.is_empty() => (rest, 16),
        [b'0', rest @ ..] if !rest.is_empty() => (rest, 8),
        _ => (chars, 10),
    };
    let mut mant: u64 = 0;
    for c in digits {
        let Some(d) = (*c as char).to_digit(radix) else {
            return f64::NAN;
        };
        mant = mant
            .saturating_mul(u64::from(radix))
            .saturating_add(u64::from(d));
    }
    let payload = mant & ((1 << 51) - 1);
    if payload == 0 {
        return f64::NAN;
    }
    f64::from_bits(f64::NAN.to_bits() | payload)
}

/// The digits after "0x" of a C hexadecimal float: value and bytes used.
fn hex_float(s: &[u8]) -> Option<(f64, usize)> {
    let mut mantissa: u64 = 0;
    let mut exp: i64 = 0;
    let mut sticky = false;
    let mut digits = 0;
    let mut j = 0;
    let mut seen_dot = false;
    loop {
        match s.get(j) {
            Some(b'.') if !seen_dot => seen_dot = true,
            Some(c) if c.is_ascii_hexdigit() => {
                let d = (*c as char).to_digit(16).unwrap_or(0) as u64;
                digits += 1;
                if mantissa >> 56 == 0 {
                    mantissa = mantissa * 16 + d;
                    if seen_dot {
                        exp -= 4;
                    }
                } else {
                    sticky |= d != 0;
                    if !seen_dot {
                        exp += 4;
                    }
                }
            }
            _ => break,
        }
        j += 1;
    }
    if digits == 0 {
        return None;
    }
    if s.get(j).is_some_and(|c| (c | 0x20) == b'p') {
        let mut k = j + 1;
        let neg = match s.get(k) {
            Some(b'-') => {
                k += 1;
                true
            }
            Some(b'+') => {
                k += 1;
                false
            }
            _ => false,
        };
        if s.get(k).is_some_and(u8::is_ascii_digit) {
            let mut e: i64 = 0;
            while let Some(c) = s.get(k).filter(|c| c.is_ascii_digit()) {
                e = (e * 10 + (c - b'0') as i64).min(1 << 20);
                k += 1;
            }
            exp += if neg { -e } else { e };
            j = k;
        }
    }
    if sticky {
        mantissa |= 1;
    }
    let v = (mantissa as f64) * 2f64.powi(exp.clamp(-2000, 2000) as i32);
    Some((v, j))
}

/// C's `(long)d` on x86-64: truncation, and `LONG_MIN` when out of range.
pub(crate) fn c_double_to_i64(d: f64) -> i64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if (-TWO_63..TWO_63).contains(&d) {
        d as i64
    } else {
        i64::MIN
    }
}

/// C's `(int)d` on x86-64: truncation, and `INT_MIN` when out of range.
pub(crate) fn c_double_to_i32(d: f64) -> i32 {
    if d > -2_147_483_649.0 && d < 2_147_483_648.0 {
        d as i32
    } else {
        i32::MIN
    }
}

/// How Lua 5.1 writes a number (`tostring`, string coercion): `%.14g`.
pub(crate) fn number_to_string(x: f64) -> String {
    format_g(x, 14)
}

/// C's `printf("%.<precision>g", x)` as glibc writes it.
pub(crate) fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() {
            "-nan".into()
        } else {
            "nan".into()
        };
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let p = precision.max(1);
    // Round to p significant digits first; the exponent of that decides the style.
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let mantissa = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{:.*}", decimals, x)).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Runs snippets in a fresh VM with the libraries and renders results the
    //! way `redis-cli` would show them, so expectations read like Redis output.

    use mlua::{Lua, Value};

    pub(crate) fn vm() -> Lua {
        let lua = Lua::new();
        super::open_all(&lua).expect("open_all");
        lua
    }

    /// Runs `code` as chunk `user_script` and renders its results, or the
    /// error message Lua raised.
    pub(crate) fn eval_in(lua: &Lua, code: &str) -> String {
        let chunk = lua.load(code).set_name("@user_script");
        match chunk.call::<mlua::MultiValue>(()) {
            Ok(values) => values.iter().map(show).collect::<Vec<_>>().join(" "),
            Err(e) => {
                let text = error_text(&e);
                let text = text.split("\nstack traceback:").next().unwrap_or_default();
                format!("ERR {text}")
            }
        }
    }

    pub(crate) fn eval(code: &str) -> String {
        eval_in(&vm(), code)
    }

    fn error_text(e: &mlua::Error) -> String {
        match e {
            mlua::Error::RuntimeError(msg) => msg.clone(),
            mlua::Error::CallbackError { cause, .. } => error_text(cause),
            other => other.to_string(),
        }
    }

    /// A compact rendering: strings quoted with escapes, tables as
    /// `{k=v,...}` with keys sorted, numbers with `%.17g`.
    pub(crate) fn show(v: &Value) -> String {
        match v {
            Value::Nil => "nil".into(),
            Value::Boolean(b) => b.to_string(),
            Value::Integer(i) => i.to_string(),
            Value::Number(x) if x.fract() == 0.0 && x.abs() < 1e20 => format!("{x:.0}"),
            Value::Number(x) => super::format_g(*x, 17),
            Value::String(s) => format!("{:?}", String::from_utf8_lossy(&s.as_bytes())),
            Value::LightUserData(p) if p.0.is_null() => "null".into(),
            Value::Table(t) => {
                let mut items: Vec<(String, String)> = t
                    .clone()
                    .pairs::<Value, Value>()
                    .filter_map(Result::ok)
                    .map(|(k, v)| (show(&k), show(&v)))
                    .collect();
                items.sort();
                let body: Vec<String> =
                    items.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{{{}}}", body.join(","))
            }
            other => super::type_name(other).to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::eval;

    // mlua's reference stack holds about 8000 values in the whole VM; the
    // libraries must not hold a value per element of what they walk.
    #[test]
    fn wide_and_long_inputs_do_not_exhaust_references() {
        let wide = "local t = {} for i = 1, 20000 do t['k'..i] = 'v'..i end ";
        let list = "local l = {} for i = 1, 20000 do l[i] = 'v'..i end ";
        assert_eq!(eval(&format!("{wide} return #cjson.encode(t) > 0")), "true");
        assert_eq!(
            eval(&format!("{list} return #cjson.decode(cjson.encode(l))")),
            "20000"
        );
        assert_eq!(eval(&format!("{wide} local n = 0 for _ in pairs(cjson.decode(cjson.encode(t))) do n = n + 1 end return n")), "20000");
        assert_eq!(eval(&format!("{wide} local n = 0 for _ in pairs(cmsgpack.unpack(cmsgpack.pack(t))) do n = n + 1 end return n")), "20000");
        assert_eq!(
            eval(&format!("{list} return #cmsgpack.unpack(cmsgpack.pack(l))")),
            "20000"
        );
        // pack takes at most 4000 arguments, as in Redis.
        let many = "local l = {} for i = 1, 4000 do l[i] = 'v'..i end ";
        assert_eq!(
            eval(&format!(
                "{many} return select('#', cmsgpack.unpack(cmsgpack.pack(unpack(l))))"
            )),
            "4000"
        );
        assert_eq!(
            eval(&format!("{many} l[4001] = 'x' return cmsgpack.pack(unpack(l))")),
            "ERR user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)"
        );
        let strings = "local l = {} for i = 1, 7999 do l[i] = cmsgpack.pack('v'..i) end ";
        assert_eq!(
            eval(&format!(
                "{strings} return select('#', cmsgpack.unpack(table.concat(l)))"
            )),
            "7999"
        );
        assert_eq!(
            eval(
                "local l = {} for i = 1, 7000 do l[i] = tostring(i) end return bit.bor(unpack(l))"
            ),
            "8191"
        );
        assert_eq!(
            eval(
                "return select('#', struct.unpack(string.rep('c1', 7997), string.rep('a', 8000)))"
            ),
            "7998"
        );
    }

    // redis-cli eval "return #{struct.unpack(string.rep('c1', 7998), string.rep('a', 8000))}" 0
    #[test]
    fn struct_unpack_stack_limit() {
        assert_eq!(
            eval("return struct.unpack(string.rep('c1', 7998), string.rep('a', 8000))"),
            "ERR user_script:1: stack overflow (too many results)"
        );
        assert_eq!(
            eval("return select('#', struct.unpack(string.rep('c1', 7996), string.rep('a', 8000), 1))"),
            "7997"
        );
        assert_eq!(
            eval("return struct.unpack(string.rep('c1', 7997), string.rep('a', 8000), 1)"),
            "ERR user_script:1: stack overflow (too many results)"
        );
    }

    // Lua's string-to-number coercion, as tonumber shows it in Redis:
    // redis-cli eval "return tostring(tonumber('0x1p4'))" 0 and so on.
    #[test]
    fn strings_read_as_numbers_like_lua() {
        use super::str_to_number as n;
        let cases: &[(&str, Option<f64>)] = &[
            ("1.", Some(1.0)),
            (".5", Some(0.5)),
            ("1.e5", Some(100000.0)),
            ("0x10", Some(16.0)),
            ("0x1p4", Some(16.0)),
            (" 12 ", Some(12.0)),
            ("1e", None),
            ("inf", Some(f64::INFINITY)),
            ("0x", None),
            ("0x.8", Some(0.5)),
            ("1e+", None),
            ("  -0x1A  ", Some(-26.0)),
            ("1.5e-3x", None),
            ("infinity", Some(f64::INFINITY)),
            ("infinit", None),
            ("0X1P-2", Some(0.25)),
            ("", None),
            ("1\0junk", Some(1.0)),
        ];
        for (text, want) in cases {
            assert_eq!(n(text.as_bytes()), *want, "{text:?}");
        }
        assert!(n(b"-nan").is_some_and(|x| x.is_nan() && x.is_sign_negative()));
        // redis-cli eval "return bit.tobit('nan(123)')" 0 -> 123 (glibc's NaN payload)
        assert_eq!(
            super::testutil::eval(
                "return bit.tobit('nan(123)'), bit.tobit('nan(0x10)'), bit.tobit('nan(x)')"
            ),
            "123 16 0"
        );
    }

    // The numbers mlua would round to 0 or ±1 reach the libraries exactly,
    // keys included. redis-cli --no-raw eval "local z = -0.0 local t = {}
    // t[z] = 1 t[1e-300] = 2 t[1 - 2^-53] = 3 return cjson.encode(t)" 0
    #[test]
    fn numbers_arrive_exactly() {
        assert_eq!(
            eval("local z = -0.0 local t = {} t[z] = 1 t[1e-300] = 2 t[1 - 2^-53] = 3 return cjson.encode(t)"),
            r#""{\"-0\":1,\"1e-300\":2,\"1\":3}""#
        );
        assert_eq!(
            eval("local t = {} t[1e-300] = 1 return cmsgpack.pack(t) == '\\129\\203\\1\\165\\110\\31\\194\\248\\243\\89\\1'"),
            "true"
        );
        assert_eq!(
            eval("local t = {} t[1 - 2^-53] = 1 return cmsgpack.pack(t) == '\\129\\203\\63\\239\\255\\255\\255\\255\\255\\255\\1'"),
            "true"
        );
        assert_eq!(
            eval("return cjson.encode({-0.0, 1e-300, 1 - 2^-53})"),
            r#""[-0,1e-300,1]""#
        );
        assert_eq!(eval("return cjson.encode(1e-300)"), r#""1e-300""#);
        assert_eq!(
            eval("return cmsgpack.unpack(cmsgpack.pack(1e-300)) == 1e-300"),
            "true"
        );
        assert_eq!(
            eval("local t = cmsgpack.unpack(cmsgpack.pack({1e-300})) return t[1] == 1e-300"),
            "true"
        );
        assert_eq!(eval("return struct.unpack('d', struct.pack('d', -0.0)) == 0, 1/struct.unpack('d', struct.pack('d', -0.0))"), "true -inf");
    }
}
