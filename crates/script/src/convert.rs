//! Values between Lua and RESP, by Redis's rules.
//!
//! Replies a script receives (`redis.call`) follow the protocol the script
//! chose with `redis.setresp` (2 unless it asked for 3); what a script returns
//! is turned into a reply that the connection then encodes for its client.

use bytes::Bytes;
use keel_resp::{Frame, Protocol};
use mlua::{Lua, Table, Value};

/// How deep nested tables are followed before the rest is cut off, so a
/// self-referencing table cannot recurse forever.
const MAX_DEPTH: usize = 1000;

/// A command's reply as the script sees it.
pub fn frame_to_lua(lua: &Lua, frame: Frame, resp: Protocol) -> mlua::Result<Value> {
    let resp3 = resp == Protocol::Resp3;
    Ok(match frame {
        Frame::Integer(n) => Value::Number(n as f64),
        Frame::Bulk(b) => Value::String(lua.create_string(&b)?),
        Frame::Simple(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(&s)?)?;
            Value::Table(t)
        }
        Frame::Error(e) => {
            let t = lua.create_table()?;
            t.raw_set("err", lua.create_string(&e)?)?;
            Value::Table(t)
        }
        Frame::Null | Frame::NullArray => {
            if resp3 {
                Value::Nil
            } else {
                Value::Boolean(false)
            }
        }
        Frame::Array(items) | Frame::Push(items) => array(lua, items, resp)?,
        Frame::Map(pairs) => {
            if resp3 {
                let inner = lua.create_table()?;
                for (k, v) in pairs {
                    let k = frame_to_lua(lua, k, resp)?;
                    let v = frame_to_lua(lua, v, resp)?;
                    if !k.is_nil() {
                        inner.raw_set(k, v)?;
                    }
                }
                let t = lua.create_table()?;
                t.raw_set("map", inner)?;
                Value::Table(t)
            } else {
                let flat = pairs.into_iter().flat_map(|(k, v)| [k, v]).collect();
                array(lua, flat, resp)?
            }
        }
        Frame::Set(items) => {
            if resp3 {
                let inner = lua.create_table()?;
                for k in items {
                    let k = frame_to_lua(lua, k, resp)?;
                    if !k.is_nil() {
                        inner.raw_set(k, true)?;
                    }
                }
                let t = lua.create_table()?;
                t.raw_set("set", inner)?;
                Value::Table(t)
            } else {
                array(lua, items, resp)?
            }
        }
        Frame::Double(d) => {
            if resp3 {
                let t = lua.create_table()?;
                t.raw_set("double", d)?;
                Value::Table(t)
            } else {
                Value::String(lua.create_string(keel_resp::encode_double(d))?)
            }
        }
        Frame::Boolean(b) => {
            if resp3 {
                Value::Boolean(b)
            } else {
                Value::Number(if b { 1.0 } else { 0.0 })
            }
        }
        Frame::BigNumber(n) => {
            if resp3 {
                let t = lua.create_table()?;
                t.raw_set("big_number", lua.create_string(&n)?)?;
                Value::Table(t)
            } else {
                Value::String(lua.create_string(&n)?)
            }
        }
        Frame::Verbatim(fmt, s) => {
            if resp3 {
                let inner = lua.create_table()?;
                inner.raw_set("format", fmt)?;
                inner.raw_set("string", lua.create_string(&s)?)?;
                let t = lua.create_table()?;
                t.raw_set("verbatim_string", inner)?;
                Value::Table(t)
            } else {
                Value::String(lua.create_string(&s)?)
            }
        }
        Frame::Encoded(bytes) => match keel_resp::parse_frame(&bytes) {
            Ok(Some((f, _))) => frame_to_lua(lua, f, resp)?,
            _ => Value::Boolean(false),
        },
    })
}

fn array(lua: &Lua, items: Vec<Frame>, resp: Protocol) -> mlua::Result<Value> {
    // No preallocated array part: with a nil inside (a RESP3 null), `#t` must
    // find the same border Redis's table does, which grows one slot at a time.
    let t = lua.create_table()?;
    for (i, f) in items.into_iter().enumerate() {
        t.raw_set(i + 1, frame_to_lua(lua, f, resp)?)?;
    }
    Ok(Value::Table(t))
}

/// What a script returned, as a reply. `resp` is the script's protocol
/// (`redis.setresp`), which decides how booleans are sent.
pub fn lua_to_frame(value: &Value, resp: Protocol) -> Frame {
    to_frame(value, resp, 0)
}

fn bytes_of(s: &mlua::String) -> Bytes {
    Bytes::copy_from_slice(&s.as_bytes())
}

fn to_frame(value: &Value, resp: Protocol, depth: usize) -> Frame {
    match value {
        Value::String(s) => Frame::Bulk(bytes_of(s)),
        Value::Boolean(b) => {
            if resp == Protocol::Resp3 {
                Frame::Boolean(*b)
            } else if *b {
                Frame::Integer(1)
            } else {
                Frame::Null
            }
        }
        Value::Integer(n) => Frame::Integer(*n),
        Value::Number(n) => Frame::Integer(integer_of(*n)),
        Value::Table(t) => table_to_frame(t, resp, depth),
        _ => Frame::Null,
    }
}

/// A Lua number as the integer Redis replies with: C's cast to long long,
/// which on x86-64 truncates, and gives the minimum for NaN and anything out
/// of range (Rust's `as` would saturate instead).
fn integer_of(n: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if n.is_nan() || !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// An error text as a reply carries it: on one line.
pub fn one_line(text: &[u8]) -> Bytes {
    Bytes::from(
        text.iter()
            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
            .collect::<Vec<u8>>(),
    )
}

fn table_to_frame(t: &Table, resp: Protocol, depth: usize) -> Frame {
    if depth >= MAX_DEPTH {
        return Frame::error("ERR reached lua stack limit");
    }
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        return Frame::Error(one_line(&e.as_bytes()));
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        return Frame::Simple(one_line(&s.as_bytes()));
    }
    match t.raw_get::<Value>("double") {
        Ok(Value::Number(d)) => return Frame::Double(d),
        Ok(Value::Integer(d)) => return Frame::Double(d as f64),
        _ => {}
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("big_number") {
        return Frame::BigNumber(one_line(&s.as_bytes()));
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        let mut pairs = Vec::new();
        for (k, v) in m.pairs::<Value, Value>().flatten() {
            pairs.push((to_frame(&k, resp, depth + 1), to_frame(&v, resp, depth + 1)));
        }
        return Frame::Map(pairs);
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        let items = s
            .pairs::<Value, Value>()
            .flatten()
            .map(|(k, _)| to_frame(&k, resp, depth + 1))
            .collect();
        return Frame::Set(items);
    }
    if let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string") {
        if let (Ok(Value::String(fmt)), Ok(Value::String(s))) =
            (v.raw_get::<Value>("format"), v.raw_get::<Value>("string"))
        {
            let fmt: &'static str = match &*fmt.as_bytes() {
                b"mkd" => "mkd",
                _ => "txt",
            };
            return Frame::Verbatim(fmt, bytes_of(&s));
        }
    }
    let mut items = Vec::new();
    let mut i = 1;
    loop {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(to_frame(&v, resp, depth + 1)),
        }
        i += 1;
    }
    Frame::Array(items)
}

/// Arguments of `redis.call`: strings, and numbers as Redis writes them.
pub fn lua_to_arg(v: &Value) -> Option<Bytes> {
    match v {
        Value::String(s) => Some(bytes_of(s)),
        // Lua 5.1 has only doubles; mlua hands integral ones over as Integer.
        Value::Integer(n) => Some(Bytes::from(number_text(*n as f64))),
        Value::Number(n) => Some(Bytes::from(number_text(*n))),
        _ => None,
    }
}

/// A Lua number as `%.17g` writes it, which is how Redis passes numbers on.
pub fn number_text(n: f64) -> String {
    if n == 0.0 && n.is_sign_negative() {
        return "-0".into();
    }
    if n.fract() == 0.0 && n.abs() < 1e17 {
        return format!("{}", n as i64);
    }
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "inf" } else { "-inf" }.into();
    }
    format_g17(n)
}

/// C's `%.17g`.
fn format_g17(n: f64) -> String {
    let exp = n.abs().log10().floor() as i32;
    if (-5..17).contains(&exp) {
        let decimals = (16 - exp).max(0) as usize;
        let s = format!("{n:.decimals$}");
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        };
        s
    } else {
        let s = format!("{n:.16e}");
        let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
        let mant = if mant.contains('.') {
            mant.trim_end_matches('0').trim_end_matches('.')
        } else {
            mant
        };
        let e: i32 = e.parse().unwrap_or(0);
        format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_arguments() {
        assert_eq!(number_text(1.5), "1.5");
        assert_eq!(number_text(3.0), "3");
        assert_eq!(number_text(-2.0), "-2");
        assert_eq!(number_text(0.1), "0.10000000000000001");
        assert_eq!(number_text(1e300), "1.0000000000000001e+300");
        assert_eq!(number_text(f64::INFINITY), "inf");
        assert_eq!(number_text(-0.0), "-0");
        assert_eq!(number_text(1e17), "1e+17");
        assert_eq!(number_text(123456789012345678.0), "1.2345678901234568e+17");
        assert_eq!(number_text(1e16), "10000000000000000");
    }

    #[test]
    fn numbers_out_of_range_reply_as_the_minimum() {
        let lua = Lua::new();
        for (code, want) in [
            ("return 1e20", i64::MIN),
            ("return -1e20", i64::MIN),
            ("return 0/0", i64::MIN),
            ("return -9223372036854775808", i64::MIN),
            ("return 9007199254740993", 9_007_199_254_740_992),
            ("return -3.99", -3),
        ] {
            let v: Value = lua.load(code).eval().unwrap();
            assert_eq!(
                lua_to_frame(&v, Protocol::Resp2),
                Frame::Integer(want),
                "{code}"
            );
        }
    }

    #[test]
    fn resp3_nulls_leave_holes_like_redis() {
        let lua = Lua::new();
        let frame = Frame::Array(vec![Frame::bulk("a"), Frame::Null, Frame::bulk("b")]);
        let v = frame_to_lua(&lua, frame, Protocol::Resp3).unwrap();
        lua.globals().set("t", v).unwrap();
        let n: i64 = lua.load("return #t").eval().unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn tables_stop_at_the_first_nil() {
        let lua = Lua::new();
        let v: Value = lua.load("return {1, 2, nil, 4}").eval().unwrap();
        assert_eq!(
            lua_to_frame(&v, Protocol::Resp2),
            Frame::Array(vec![Frame::Integer(1), Frame::Integer(2)])
        );
        let v: Value = lua.load("return 3.99").eval().unwrap();
        assert_eq!(lua_to_frame(&v, Protocol::Resp2), Frame::Integer(3));
        let v: Value = lua.load("return -3.5").eval().unwrap();
        assert_eq!(lua_to_frame(&v, Protocol::Resp2), Frame::Integer(-3));
        let v: Value = lua.load("return false").eval().unwrap();
        assert_eq!(lua_to_frame(&v, Protocol::Resp2), Frame::Null);
        assert_eq!(lua_to_frame(&v, Protocol::Resp3), Frame::Boolean(false));
    }

    #[test]
    fn replies_become_lua_values() {
        let lua = Lua::new();
        let v = frame_to_lua(&lua, Frame::Null, Protocol::Resp2).unwrap();
        assert_eq!(v, Value::Boolean(false));
        let v = frame_to_lua(&lua, Frame::Null, Protocol::Resp3).unwrap();
        assert!(v.is_nil());
        let v = frame_to_lua(&lua, Frame::simple("OK"), Protocol::Resp2).unwrap();
        let Value::Table(t) = v else { panic!() };
        assert_eq!(t.get::<String>("ok").unwrap(), "OK");
    }
}
