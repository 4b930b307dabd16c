//! What a script sees: the `redis` table, Redis's `math.random`, and globals
//! that cannot be changed.
//!
//! Every VM has one table of real globals. Code runs with an empty proxy as
//! its environment whose reads fall through to the real globals and whose
//! writes fail, and the real globals answer a read of a missing name with an
//! error; library tables are exposed through the same kind of proxy.

use crate::convert;
use bytes::Bytes;
use keel_resp::Protocol;
use mlua::{Function, Lua, MultiValue, Table, Value, Variadic};
use std::cell::Cell;

thread_local! {
    /// Where the running script's effects go (`redis.set_repl`): bit 1 the
    /// AOF, bit 2 replicas. Keel has no replicas; without the AOF bit the
    /// commands the script runs are not logged.
    pub static REPL: Cell<u8> = const { Cell::new(3) };
    /// The protocol of replies the running script receives (`redis.setresp`).
    pub static RESP: Cell<Protocol> = const { Cell::new(Protocol::Resp2) };
    /// Functions registered by the library being loaded on this thread.
    pub static REGISTERING: std::cell::RefCell<Option<Vec<Registered>>> =
        const { std::cell::RefCell::new(None) };
}

/// One `redis.register_function` call.
pub struct Registered {
    pub name: String,
    pub callback: Function,
    pub flags: keel_engine::scripting::ScriptFlags,
    pub description: Option<String>,
}

const READONLY: &str = "Attempt to modify a readonly table";

/// The state of `math.random`: Redis's 48-bit linear congruential generator,
/// one for the whole server like Redis's, starting from the C library's
/// default state and never reseeded between scripts, so a fresh server gives
/// the same numbers and each script goes on with the sequence.
static RAND48: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(RAND48_START);
const RAND48_START: u64 = 0x1234_ABCD_330E;

fn set_seed(seed: i32) {
    // srand48: the seed in the high 32 bits, 0x330E below.
    RAND48.store(
        ((seed as u32 as u64) << 16) | 0x330E,
        std::sync::atomic::Ordering::Relaxed,
    );
}

fn step(x: u64) -> u64 {
    x.wrapping_mul(0x5_DEEC_E66D).wrapping_add(0xB) & 0xFFFF_FFFF_FFFF
}

/// lrand48: the next 31 bits.
fn next_rand() -> i64 {
    use std::sync::atomic::Ordering::Relaxed;
    let prev = RAND48
        .fetch_update(Relaxed, Relaxed, |x| Some(step(x)))
        .unwrap_or(RAND48_START);
    (step(prev) >> 17) as i64
}

/// Raise a Lua error whose message is `msg`.
fn fail<T>(msg: impl Into<String>) -> mlua::Result<T> {
    Err(mlua::Error::RuntimeError(msg.into()))
}

/// Where the Lua code calling the running Rust function is, as `luaL_error`
/// writes it in front of a message: `user_script:3: `.
fn place(lua: &Lua) -> String {
    lua.inspect_stack(1)
        .and_then(|d| {
            let line = d.curr_line();
            let src = d.source().short_src.map(|s| s.into_owned());
            src.filter(|_| line > 0).map(|s| format!("{s}:{line}: "))
        })
        .unwrap_or_default()
}

/// Raise `msg` with the caller's place in front, as Lua's own libraries do.
fn fail_here<T>(lua: &Lua, msg: &str) -> mlua::Result<T> {
    fail(format!("{}{msg}", place(lua)))
}

/// Build the globals a VM's scripts see: standard libraries Redis loads, the
/// four extra libraries, `redis`, and the read-only protection. Returns the
/// environment scripts run with, and the `redis` table of EVAL and FCALL
/// bodies (function libraries get a narrower one while loading).
pub fn install(lua: &Lua) -> mlua::Result<Env> {
    let g = lua.globals();
    crate::libs::open_all(lua)?;
    for name in [
        "loadfile", "dofile", "print", "setfenv", "getfenv", "newproxy",
    ] {
        g.raw_set(name, Value::Nil)?;
    }
    let math: Table = g.raw_get("math")?;
    math.raw_set(
        "random",
        lua.create_function(|lua, args: Variadic<Value>| {
            let fail = |msg: &str| fail_here(lua, msg);
            let r = (next_rand() % i64::from(i32::MAX)) as f64 / f64::from(i32::MAX);
            let int = |v: &Value| -> mlua::Result<f64> {
                match v {
                    Value::Integer(n) => Ok(*n as f64),
                    Value::Number(n) => Ok(n.floor()),
                    Value::String(s) => s
                        .to_str()
                        .ok()
                        .and_then(|s| s.trim().parse::<f64>().ok())
                        .map(f64::floor)
                        .ok_or_else(|| {
                            mlua::Error::RuntimeError(format!(
                                "{}bad argument #1 to 'random' (number expected)",
                                place(lua)
                            ))
                        }),
                    _ => fail("bad argument #1 to 'random' (number expected, got no value)"),
                }
            };
            match args.len() {
                0 => Ok(r),
                1 => {
                    let u = int(&args[0])?;
                    if u < 1.0 {
                        return fail("bad argument #1 to 'random' (interval is empty)");
                    }
                    Ok((r * u).floor() + 1.0)
                }
                2 => {
                    let l = int(&args[0])?;
                    let u = int(&args[1])?;
                    if l > u {
                        return fail("bad argument #2 to 'random' (interval is empty)");
                    }
                    Ok((r * (u - l + 1.0)).floor() + l)
                }
                _ => fail("wrong number of arguments"),
            }
        })?,
    )?;
    math.raw_set(
        "randomseed",
        lua.create_function(|lua, seed: Value| {
            let n = match seed {
                Value::Integer(n) => n,
                Value::Number(n) => n as i64,
                _ => return fail_here(lua, "bad argument #1 to 'randomseed' (number expected)"),
            };
            set_seed(n as i32);
            Ok(())
        })?,
    )?;

    let redis = redis_table(lua)?;
    let load_redis = load_table(lua, &redis)?;
    g.raw_set("redis", redis.clone())?;
    g.raw_set("__keel_errtext", lua.create_function(pcall_error)?)?;

    // The environment every script runs in.
    let env = lua.create_table()?;
    let protect: Function = lua.load(PROTECT).set_name("=keel").into_function()?;
    let (env, readonly): (Table, Function) = protect.call((g.clone(), env, READONLY))?;
    let raw_redis = redis;
    let redis: Table = g.raw_get("redis")?;
    let load_redis: Table = readonly.call(load_redis)?;
    let load_redis: Table = lua.load(LOADING).set_name("=keel").call(load_redis)?;
    let function_redis: Table = lua
        .load(FUNCTION_API)
        .set_name("=keel")
        .call((raw_redis.clone(), readonly))?;
    Ok(Env {
        env,
        redis,
        raw_redis,
        load_redis,
        function_redis,
    })
}

/// What `install` sets up.
pub struct Env {
    pub env: Table,
    /// The read-only view scripts see, and the table behind it, where each
    /// run binds `call` and `pcall`.
    pub redis: Table,
    pub raw_redis: Table,
    /// The globals a library sees while it loads: its `redis` table and
    /// nothing else, as in Redis.
    pub load_redis: Table,
    /// The `redis` table of a running function: EVAL's without what only
    /// EVAL has (`breakpoint`, `replicate_commands`, `debug`).
    pub function_redis: Table,
}

/// The `redis` table functions run with, a read-only view that hides EVAL's own.
const FUNCTION_API: &str = r##"
local raw, readonly = ...
local eval_only = {breakpoint = true, replicate_commands = true, debug = true}
return readonly(setmetatable({}, {__index = function(_, k)
  if eval_only[k] then return nil end
  return raw[k]
end, __metatable = false}))
"##;

/// The globals of a library being loaded, around its narrow `redis` table.
const LOADING: &str = r##"
local api = ...
return setmetatable({redis = api}, {__index = function(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end, __metatable = false})
"##;

/// Makes the environment read-only: writes fail, reads of missing globals
/// fail, library tables are read-only views, `_G` is the environment itself,
/// and `rawset` refuses protected tables.
const PROTECT: &str = r##"
local G, env, readonly_msg = ...
local protected = setmetatable({}, {__mode = "k"})
local function deny() error(readonly_msg, 2) end
local function readonly(t)
  local view = setmetatable({}, {__index = t, __newindex = deny, __metatable = false})
  protected[view] = true
  return view
end
for _, name in ipairs({"string", "math", "table", "debug", "redis", "cjson", "cmsgpack", "bit", "struct", "coroutine", "os"}) do
  if type(rawget(G, name)) == "table" then rawset(G, name, readonly(rawget(G, name))) end
end
local raw_pcall, errtext, select, unpack = pcall, rawget(G, "__keel_errtext"), select, unpack
rawset(G, "__keel_errtext", nil)
rawset(G, "pcall", function(...)
  local r = {n = 0}
  local function keep(...) r = {n = select("#", ...), ...} end
  keep(raw_pcall(...))
  if not r[1] then r[2] = errtext(r[2]) end
  return unpack(r, 1, r.n)
end)
local raw_set = rawset
rawset(G, "rawset", function(t, k, v)
  if protected[t] then error(readonly_msg, 0) end
  return raw_set(t, k, v)
end)
setmetatable(env, {__index = G, __newindex = deny, __metatable = false})
protected[env] = true
rawset(G, "_G", env)
setmetatable(G, {__index = function(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end, __metatable = false})
return env, readonly
"##;

/// What `redis.error_reply` and `redis.status_reply` give for bad arguments:
/// not a raised error but an error reply the script may return.
fn bad_arguments(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", "ERR wrong number or type of arguments")?;
    Ok(t)
}

fn redis_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "error_reply",
        lua.create_function(|lua, v: Variadic<Value>| match v.first() {
            Some(Value::String(s)) if v.len() == 1 => {
                let s = s.as_bytes();
                error_table(lua, &s)
            }
            _ => bad_arguments(lua),
        })?,
    )?;
    t.raw_set(
        "status_reply",
        lua.create_function(|lua, v: Variadic<Value>| match v.first() {
            Some(Value::String(s)) if v.len() == 1 => {
                let t = lua.create_table()?;
                t.raw_set("ok", s.clone())?;
                Ok(t)
            }
            _ => bad_arguments(lua),
        })?,
    )?;
    t.raw_set(
        "sha1hex",
        lua.create_function(|_, v: Variadic<Value>| {
            if v.len() != 1 {
                return fail("wrong number of arguments");
            }
            let data = match &v[0] {
                Value::String(s) => s.as_bytes().to_vec(),
                Value::Integer(n) => convert::number_text(*n as f64).into_bytes(),
                Value::Number(n) => convert::number_text(*n).into_bytes(),
                _ => Vec::new(),
            };
            Ok(keel_engine::scripting::sha1_hex(&data))
        })?,
    )?;
    t.raw_set("log", lua.create_function(log)?)?;
    for (name, level) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        t.raw_set(name, level)?;
    }
    t.raw_set(
        "setresp",
        lua.create_function(|_, v: Variadic<Value>| {
            if v.len() != 1 {
                return fail("redis.setresp() requires one argument.");
            }
            let n = match &v[0] {
                Value::Integer(n) => *n,
                Value::Number(n) => *n as i64,
                _ => 0,
            };
            let p = match n {
                2 => Protocol::Resp2,
                3 => Protocol::Resp3,
                _ => return fail("RESP version must be 2 or 3."),
            };
            RESP.with(|r| r.set(p));
            Ok(())
        })?,
    )?;
    for (name, v) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        t.raw_set(name, v)?;
    }
    t.raw_set(
        "set_repl",
        lua.create_function(|_, v: Variadic<Value>| {
            if v.len() != 1 {
                return fail("redis.set_repl() requires two arguments.");
            }
            let flags = match &v[0] {
                Value::Integer(n) if (0..=3).contains(n) => *n as u8,
                Value::Number(n) if (0.0..=3.0).contains(n) => *n as u8,
                _ => 255,
            };
            match flags {
                0..=3 => {
                    REPL.with(|r| r.set(flags));
                    Ok(())
                }
                _ => fail(
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                ),
            }
        })?,
    )?;
    t.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    t.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
    t.raw_set("debug", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    let version = keel_engine::version::REDIS_VERSION;
    t.raw_set("REDIS_VERSION", version)?;
    t.raw_set("REDIS_VERSION_NUM", version_num(version))?;
    Ok(t)
}

/// `7.0.15` as Redis's number: 0x00070015 written in bytes, i.e. 0x07000f.
fn version_num(v: &str) -> i64 {
    let mut n = 0i64;
    for part in v.split('.').take(3) {
        n = (n << 8) | part.parse::<i64>().unwrap_or(0);
    }
    n
}

/// What a script's `pcall` returns for an error: the text of a Redis error
/// (a raised `{err=...}` table or a failed `redis.call`), anything else as is.
fn pcall_error(lua: &Lua, e: Value) -> mlua::Result<Value> {
    Ok(match e {
        Value::Table(t) => match t.raw_get::<Value>("err")? {
            Value::String(s) => Value::String(s),
            _ => Value::Table(t),
        },
        Value::Error(err) => Value::String(lua.create_string(raised_text(&err))?),
        other => other,
    })
}

/// Marks a Rust-raised error whose message is a Redis error reply.
pub const REPLY_MARK: char = '\u{2}';
/// Marks a Rust-raised error that stops the script (kill, shutdown).
pub const STOP_MARK: char = '\u{1}';

/// The Redis error text of an error raised from Rust.
pub fn raised_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::MemoryError(_) => {
            "ERR Lua VM out of memory: the script needed more than the VM's limit".into()
        }
        mlua::Error::RuntimeError(m) => match m
            .strip_prefix(REPLY_MARK)
            .or_else(|| m.strip_prefix(STOP_MARK))
        {
            Some(text) => text.to_string(),
            None => format!("ERR {m}"),
        },
        mlua::Error::CallbackError { cause, .. } => raised_text(cause),
        other => format!("ERR {other}"),
    }
}

/// `redis.error_reply`'s table: a leading `-` is dropped and a message with
/// no error code gets `ERR`.
fn error_table(lua: &Lua, s: &[u8]) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let text = error_text(s);
    t.raw_set("err", lua.create_string(&text)?)?;
    Ok(t)
}

pub fn error_text(s: &[u8]) -> Bytes {
    let body = s.strip_prefix(b"-").unwrap_or(s);
    if s.starts_with(b"-") && !body.contains(&b' ') {
        let mut v = b"ERR ".to_vec();
        v.extend_from_slice(body);
        return Bytes::from(v);
    }
    if !s.starts_with(b"-") && !body.contains(&b' ') {
        let mut v = b"ERR ".to_vec();
        v.extend_from_slice(body);
        return Bytes::from(v);
    }
    Bytes::copy_from_slice(body)
}

fn log(_: &Lua, v: Variadic<Value>) -> mlua::Result<()> {
    if v.len() < 2 {
        return fail("redis.log() requires two arguments or more.");
    }
    let level = match &v[0] {
        Value::Integer(n) => *n,
        Value::Number(n) => *n as i64,
        _ => return fail("First argument must be a number (log level)."),
    };
    if !(0..=3).contains(&level) {
        return fail("Invalid debug level.");
    }
    let mut msg = String::new();
    for (i, part) in v.iter().skip(1).enumerate() {
        if i > 0 {
            msg.push(' ');
        }
        match part {
            Value::String(s) => msg.push_str(&s.to_string_lossy()),
            Value::Integer(n) => msg.push_str(&n.to_string()),
            Value::Number(n) => msg.push_str(&convert::number_text(*n)),
            _ => {}
        }
    }
    match level {
        0 => keel_engine::config::log_debug(&msg),
        1 => keel_engine::config::log_verbose(&msg),
        2 => keel_engine::config::log_notice(&msg),
        _ => keel_engine::config::log_warning(&msg),
    }
    Ok(())
}

/// The `redis` table a library sees while it loads: registration and
/// logging, no commands.
fn load_table(lua: &Lua, full: &Table) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    for k in [
        "log",
        "LOG_DEBUG",
        "LOG_VERBOSE",
        "LOG_NOTICE",
        "LOG_WARNING",
        "REDIS_VERSION",
        "REDIS_VERSION_NUM",
    ] {
        t.raw_set(k, full.raw_get::<Value>(k)?)?;
    }
    t.raw_set("register_function", lua.create_function(register_function)?)?;
    let mt: Table = lua
        .load(
            r#"return {__index = function(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end}"#,
        )
        .set_name("=keel")
        .eval()?;
    t.set_metatable(Some(mt));
    Ok(t)
}

fn register_function(lua: &Lua, v: Variadic<Value>) -> mlua::Result<()> {
    use keel_engine::scripting::{functions::valid_name, ScriptFlags};
    let (name, callback, flags, description) = match v.len() {
        1 => {
            let Value::Table(t) = &v[0] else {
                return fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
            };
            let mut name = None;
            let mut callback = None;
            let mut flags = ScriptFlags::default();
            let mut description = None;
            for pair in t.pairs::<Value, Value>() {
                let (k, val) = pair?;
                let key =
                    match &k {
                        Value::String(s) => s.to_string_lossy(),
                        _ => return fail(
                            "named argument key given to redis.register_function is not a string",
                        ),
                    };
                match key.as_str() {
                    "function_name" => match string_of(lua, val) {
                        Some(s) => name = Some(s),
                        None => return fail("function_name argument given to redis.register_function must be a string"),
                    },
                    "description" => match string_of(lua, val) {
                        Some(s) => description = Some(s),
                        None => return fail("description argument given to redis.register_function must be a string"),
                    },
                    "callback" => match val {
                        Value::Function(f) => callback = Some(f),
                        _ => return fail("callback argument given to redis.register_function must be a function"),
                    },
                    "flags" => match val {
                        Value::Table(ft) => {
                            for f in ft.sequence_values::<Value>() {
                                let f = f?;
                                let parsed = match &f {
                                    Value::String(s) => ScriptFlags::parse(&s.as_bytes()),
                                    _ => None,
                                };
                                match parsed {
                                    Some(p) => flags.insert(p),
                                    None => return fail("unknown flag given"),
                                }
                            }
                        }
                        _ => return fail("flags argument to redis.register_function must be a table representing function flags"),
                    },
                    _ => return fail("unknown argument given to redis.register_function"),
                }
            }
            let Some(name) = name else {
                return fail("redis.register_function must get a function name argument");
            };
            let Some(callback) = callback else {
                return fail("redis.register_function must get a callback argument");
            };
            (name, callback, flags, description)
        }
        2 => {
            let Some(n) = string_of(lua, v[0].clone()) else {
                return fail("first argument to redis.register_function must be a string");
            };
            let Value::Function(f) = &v[1] else {
                return fail("second argument to redis.register_function must be a function");
            };
            (n, f.clone(), ScriptFlags::default(), None)
        }
        _ => return fail("wrong number of arguments to redis.register_function"),
    };
    if !valid_name(name.as_bytes()) {
        return fail("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long");
    }
    REGISTERING.with(|r| {
        let mut r = r.borrow_mut();
        let Some(list) = r.as_mut() else {
            return fail("redis.register_function can only be called on FUNCTION LOAD command");
        };
        if list.iter().any(|f| f.name.eq_ignore_ascii_case(&name)) {
            return fail("Function already exists in the library");
        }
        list.push(Registered {
            name,
            callback,
            flags,
            description,
        });
        Ok(())
    })
}

/// A string argument as Lua's C API takes one: numbers count, written as Lua
/// writes them.
fn string_of(lua: &Lua, v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.to_string_lossy()),
        Value::Integer(_) | Value::Number(_) => lua
            .coerce_string(v)
            .ok()
            .flatten()
            .map(|s| s.to_string_lossy()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand48_matches_the_c_library() {
        // srand48(0); lrand48() gives 366850414, 1610402240, ... in glibc.
        let x = step(0x330E);
        assert_eq!(x >> 17, 366_850_414);
        assert_eq!(step(x) >> 17, 1_610_402_240);
        // From the default state, the first math.random(100) of a fresh
        // Redis 7.0.15 is 40.
        let r =
            ((step(RAND48_START) >> 17) as i64 % i64::from(i32::MAX)) as f64 / f64::from(i32::MAX);
        assert_eq!((r * 100.0).floor() + 1.0, 40.0);
    }

    #[test]
    fn version_number() {
        assert_eq!(version_num("7.0.15"), 0x07000f);
    }

    #[test]
    fn error_reply_texts() {
        assert_eq!(&error_text(b"x")[..], b"ERR x");
        assert_eq!(&error_text(b"-x")[..], b"ERR x");
        assert_eq!(&error_text(b"MY xx")[..], b"MY xx");
        assert_eq!(&error_text(b"-MY xx")[..], b"MY xx");
    }
}
