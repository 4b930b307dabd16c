//! The Lua host: one Lua 5.1 VM per thread, created on the thread's first
//! script, with what it compiled kept by SHA-1 (EVAL) and library id (FCALL).

use crate::api::{self, Registered, REGISTERING, RESP};
use crate::convert;
use bytes::Bytes;
use hashbrown::HashMap;
use keel_engine::scripting::{
    hex, FunctionInfo, Library, LibraryMeta, Running, ScriptHost, ScriptRun, Sha,
};
use keel_resp::{Frame, Protocol};
use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState};
use std::cell::RefCell;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Most bytes one VM may hold; a script that needs more fails with an error.
pub const VM_MEMORY_LIMIT: usize = 1 << 30;

/// Instructions between two checks for SCRIPT KILL and the busy threshold.
const CHECK_EVERY: u32 = 100_000;

/// Bytes held by each thread's VM, summed for INFO.
static VM_SIZES: parking_lot::Mutex<Vec<Arc<AtomicU64>>> = parking_lot::Mutex::new(Vec::new());

thread_local! {
    static VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
    /// The script running on this thread, for the instruction hook.
    static RUNNING: RefCell<Option<Arc<Running>>> = const { RefCell::new(None) };
    /// When the library loading on this thread must stop (FUNCTION LOAD).
    static LOAD_DEADLINE: std::cell::Cell<Option<std::time::Instant>> =
        const { std::cell::Cell::new(None) };
}

/// How long a library's top-level code may run while it loads, as in Redis.
const LOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

struct Vm {
    lua: Lua,
    env: Table,
    globals: Table,
    redis: Table,
    load_redis: Table,
    function_redis: Table,
    /// `run(f, handler, ...)`: xpcall of `f(...)`.
    runner: Function,
    handler: Function,
    xpcall: Function,
    keys: Table,
    argv: Table,
    generation: u64,
    /// Compiled scripts, with this thread's own copy of each body (EVALSHA
    /// then touches no state shared with other threads).
    scripts: HashMap<Sha, (Function, Bytes)>,
    libraries: HashMap<u64, HashMap<String, Function>>,
    size: Arc<AtomicU64>,
}

/// The Lua host to install in an engine.
#[derive(Default)]
pub struct LuaHost;

impl LuaHost {
    pub fn new() -> LuaHost {
        LuaHost
    }
}

fn new_vm() -> mlua::Result<Vm> {
    let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
    let lua = Lua::new_with(libs, LuaOptions::default())?;
    let env = api::install(&lua)?;
    let call = lua.create_function(|lua, a: MultiValue| {
        let (v, failed) =
            unlimited(lua, || crate::current::with(|run| redis_call(lua, run, a)))
                .ok_or_else(|| mlua::Error::RuntimeError("no script is running".into()))??;
        match (failed, &v) {
            (true, Value::Table(t)) => {
                let text: String = t.raw_get("err")?;
                Err(mlua::Error::RuntimeError(format!(
                    "{}{text}",
                    api::REPLY_MARK
                )))
            }
            _ => Ok(v),
        }
    })?;
    let pcall = lua.create_function(|lua, a: MultiValue| {
        let (v, _) = unlimited(lua, || crate::current::with(|run| redis_call(lua, run, a)))
            .ok_or_else(|| mlua::Error::RuntimeError("no script is running".into()))??;
        Ok(v)
    })?;
    env.raw_redis.raw_set("call", call)?;
    env.raw_redis.raw_set("pcall", pcall)?;
    let handler = lua.create_function(error_handler)?;
    let runner: Function = lua
        .load("local f, h = ... local args = {select(3, ...)} return xpcall(function() return f(unpack(args)) end, h)")
        .set_name("=keel")
        .into_function()?;
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(CHECK_EVERY),
        |_, _| {
            let verdict = RUNNING.with(|r| r.borrow().as_ref().map(|r| r.check()));
            match verdict {
                Some(Err(msg)) => Err(mlua::Error::RuntimeError(format!(
                    "{}{msg}",
                    api::STOP_MARK
                ))),
                None if LOAD_DEADLINE
                    .with(|d| d.get())
                    .is_some_and(|d| std::time::Instant::now() >= d) =>
                {
                    Err(mlua::Error::RuntimeError("FUNCTION LOAD timeout".into()))
                }
                _ => Ok(VmState::Continue),
            }
        },
    );
    let globals = lua.globals();
    let keys = lua.create_table()?;
    let argv = lua.create_table()?;
    globals.raw_set("KEYS", keys.clone())?;
    globals.raw_set("ARGV", argv.clone())?;
    let size = Arc::new(AtomicU64::new(lua.used_memory() as u64));
    VM_SIZES.lock().push(size.clone());
    Ok(Vm {
        size,
        xpcall: globals.raw_get("xpcall")?,
        keys,
        argv,
        globals,
        env: env.env,
        redis: env.redis,
        load_redis: env.load_redis,
        function_redis: env.function_redis,
        runner,
        handler,
        lua,
        generation: u64::MAX,
        scripts: HashMap::new(),
        libraries: HashMap::new(),
    })
}

/// Run Rust-side work from inside a script with the VM's bound lifted: with
/// a bound set, mlua protects every value it pushes (a closure and a pcall
/// each), which would double the cost of a `redis.call`. Lua code itself
/// always runs under the bound (see `limited`).
fn unlimited<R>(lua: &Lua, f: impl FnOnce() -> R) -> R {
    let _ = lua.set_memory_limit(0);
    let r = f();
    let _ = lua.set_memory_limit(VM_MEMORY_LIMIT);
    r
}

/// Run Lua code under the VM's memory bound.
fn limited<R>(lua: &Lua, f: impl FnOnce() -> R) -> R {
    let _ = lua.set_memory_limit(VM_MEMORY_LIMIT);
    let r = f();
    let _ = lua.set_memory_limit(0);
    r
}

/// Turn what a script raised into Redis's error table: `{err=..., source=...,
/// line=...}`, where source and line name the user code that raised it.
fn error_handler(lua: &Lua, err: Value) -> mlua::Result<Value> {
    let t = match err {
        Value::Table(t) => t,
        other => {
            // What Lua's tostring gives: numbers as %.14g, booleans by name.
            let text = match &other {
                Value::String(s) => format!("ERR {}", s.to_string_lossy()),
                Value::Nil => "ERR nil".to_string(),
                Value::Boolean(b) => format!("ERR {b}"),
                Value::Error(e) => api::raised_text(e),
                _ => format!(
                    "ERR {}",
                    lua.coerce_string(other.clone())?
                        .map_or_else(String::new, |s| s.to_string_lossy())
                ),
            };
            let t = lua.create_table()?;
            t.raw_set("err", text)?;
            t
        }
    };
    for level in 1..32 {
        let Some(d) = lua.inspect_stack(level) else {
            break;
        };
        let src = d.source();
        if src.what == "C" || src.source.as_deref().is_some_and(|s| s.starts_with('=')) {
            continue;
        }
        let line = d.curr_line();
        t.raw_set("source", src.source.as_deref().unwrap_or("?").to_string())?;
        t.raw_set("line", line)?;
        break;
    }
    Ok(Value::Table(t))
}

fn with_vm<R>(f: impl FnOnce(&mut Vm) -> R) -> Result<R, Frame> {
    VM.with(|cell| {
        let mut slot = cell
            .try_borrow_mut()
            .map_err(|_| Frame::error("ERR a script cannot run another script"))?;
        if slot.is_none() {
            *slot = Some(new_vm().map_err(|e| Frame::error(format!("ERR Lua VM: {e}")))?);
        }
        let vm = slot.as_mut().ok_or_else(|| Frame::error("ERR Lua VM"))?;
        Ok(f(vm))
    })
}

impl Vm {
    fn refresh(&mut self, generation: u64) {
        if self.generation != generation {
            self.scripts.clear();
            self.libraries.clear();
            self.generation = generation;
        }
    }

    fn compile(&self, body: &[u8], name: &str) -> Result<Function, String> {
        // A `#!` line is dropped but its newline kept, so lines count as written.
        let code: &[u8] = if body.starts_with(b"#!") {
            let end = body.iter().position(|&c| c == b'\n').unwrap_or(body.len());
            &body[end..]
        } else {
            body
        };
        self.lua
            .load(code)
            .set_name(name)
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| match e {
                mlua::Error::SyntaxError { message, .. } => message,
                other => other.to_string(),
            })
    }

    /// Run `f(args...)` for `run`, with redis.call bound to it. Returns the
    /// first value or the error table.
    fn call(
        &mut self,
        run: &mut ScriptRun<'_, '_>,
        f: &Function,
        args: Option<MultiValue>,
        script_name: impl Fn() -> String,
    ) -> Frame {
        RESP.with(|r| r.set(Protocol::Resp2));
        api::REPL.with(|r| r.set(3));
        RUNNING.with(|r| *r.borrow_mut() = Some(run.running().clone()));
        let bound = crate::current::bind(run);
        let result = (|| -> mlua::Result<(bool, Value)> {
            let out: MultiValue = match args {
                // EVAL: no arguments, Lua's own xpcall.
                None => limited(&self.lua, || {
                    self.xpcall.call((f.clone(), self.handler.clone()))
                })?,
                Some(args) => {
                    let mut all = MultiValue::new();
                    all.push_back(Value::Function(f.clone()));
                    all.push_back(Value::Function(self.handler.clone()));
                    all.extend(args);
                    limited(&self.lua, || self.runner.call(all))?
                }
            };
            let mut it = out.into_iter();
            let ok = matches!(it.next(), Some(Value::Boolean(true)));
            let value = it.next().unwrap_or(Value::Nil);
            Ok((ok, value))
        })();
        drop(bound);
        RUNNING.with(|r| *r.borrow_mut() = None);
        let resp = RESP.with(|r| r.get());
        let reply = match result {
            Ok((true, v)) => convert::lua_to_frame(&v, resp),
            Ok((false, Value::Table(t))) => error_reply(&t, &script_name()),
            Ok((false, Value::String(s))) => {
                // Errors the handler never saw (out of memory).
                Frame::error(format!(
                    "ERR Error running script {}: {} (a Lua VM holds at most {} MiB)",
                    script_name(),
                    s.to_string_lossy(),
                    VM_MEMORY_LIMIT >> 20
                ))
            }
            Ok((false, other)) => Frame::error(format!("ERR Error running script: {other:?}")),
            Err(e) => Frame::Error(convert::one_line(api::raised_text(&e).as_bytes())),
        };
        let used = self.lua.used_memory();
        if used > VM_MEMORY_LIMIT / 2 {
            let _ = self.lua.gc_collect();
        }
        self.size.store(used as u64, Ordering::Relaxed);
        reply
    }
}

/// The reply for an error table a script raised: its text, then where.
fn error_reply(t: &Table, script_name: &str) -> Frame {
    let msg = match t.raw_get::<Value>("err") {
        Ok(Value::String(s)) => s.to_string_lossy(),
        _ => "ERR unknown error".to_string(),
    };
    let source = t.raw_get::<Option<String>>("source").ok().flatten();
    let line = t.raw_get::<Option<i64>>("line").ok().flatten();
    let text = match (source, line) {
        (Some(src), Some(line)) => format!("{msg} script: {script_name}, on {src}:{line}."),
        _ => msg,
    };
    Frame::Error(convert::one_line(text.as_bytes()))
}

/// `redis.call` / `redis.pcall`: the reply, and whether it is an error.
fn redis_call(
    lua: &Lua,
    run: &mut ScriptRun<'_, '_>,
    args: MultiValue,
) -> mlua::Result<(Value, bool)> {
    let error = |lua: &Lua, text: &str| -> mlua::Result<(Value, bool)> {
        let t = lua.create_table()?;
        t.raw_set("err", text)?;
        Ok((Value::Table(t), true))
    };
    if args.is_empty() {
        return error(
            lua,
            "ERR Please specify at least one argument for this redis lib call",
        );
    }
    let mut argv = Vec::with_capacity(args.len());
    for a in args.iter() {
        match convert::lua_to_arg(a) {
            Some(b) => argv.push(b),
            None => {
                return error(
                    lua,
                    "ERR Lua redis lib command arguments must be strings or integers",
                )
            }
        }
    }
    let resp = RESP.with(|r| r.get());
    run.set_resp(resp);
    run.set_logged(api::REPL.with(|r| r.get()) & 1 != 0);
    let reply = run.call(argv);
    let failed = reply.is_error();
    let v = convert::frame_to_lua(lua, reply, resp)?;
    Ok((v, failed))
}

/// Refill a VM's KEYS or ARGV table in place (a new pair of tables per call
/// would only feed the collector).
fn fill(lua: &Lua, t: &Table, items: &[Bytes]) -> mlua::Result<()> {
    let old = t.raw_len();
    for (i, b) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(b)?)?;
    }
    for i in items.len()..old {
        t.raw_set(i + 1, Value::Nil)?;
    }
    Ok(())
}

fn array(lua: &Lua, items: &[Bytes]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, b) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(b)?)?;
    }
    Ok(t)
}

impl ScriptHost for LuaHost {
    fn compile(&self, sha: &Sha, body: &Bytes) -> Result<(), Frame> {
        with_vm(|vm| {
            let f = vm.compile(body, "@user_script").map_err(|m| {
                Frame::Error(convert::one_line(
                    format!("ERR Error compiling script (new function): {m}").as_bytes(),
                ))
            })?;
            vm.scripts.insert(*sha, (f, Bytes::copy_from_slice(body)));
            Ok(())
        })?
    }

    fn eval(
        &self,
        run: &mut ScriptRun<'_, '_>,
        sha: &Sha,
        body: &Bytes,
        keys: &[Bytes],
        args: &[Bytes],
    ) -> Frame {
        let engine = run.engine();
        let generation = engine.scripting.generation();
        let r = with_vm(|vm| {
            vm.refresh(generation);
            let f = match vm.scripts.get(sha) {
                Some((f, _)) => f.clone(),
                None => {
                    let f = match vm.compile(body, "@user_script") {
                        Ok(f) => f,
                        Err(m) => {
                            return Frame::Error(convert::one_line(
                                format!("ERR Error compiling script (new function): {m}")
                                    .as_bytes(),
                            ))
                        }
                    };
                    engine.scripting.remember(*sha, body.clone());
                    vm.scripts
                        .insert(*sha, (f.clone(), Bytes::copy_from_slice(body)));
                    f
                }
            };
            let set = (|| -> mlua::Result<()> {
                fill(&vm.lua, &vm.keys, keys)?;
                fill(&vm.lua, &vm.argv, args)?;
                Ok(())
            })();
            if let Err(e) = set {
                return Frame::error(format!("ERR {e}"));
            }
            vm.call(run, &f, None, || hex(sha))
        });
        r.unwrap_or_else(|e| e)
    }

    fn load_library(&self, meta: &LibraryMeta, code: &Bytes) -> Result<Vec<FunctionInfo>, String> {
        let registered = with_vm(|vm| load_into(vm, meta, code)).map_err(|f| match f {
            Frame::Error(e) => String::from_utf8_lossy(&e).into_owned(),
            _ => "Lua VM unavailable".into(),
        })??;
        Ok(registered
            .into_iter()
            .map(|r| FunctionInfo {
                name: r.name,
                description: r.description,
                flags: r.flags,
            })
            .collect())
    }

    fn fcall(
        &self,
        run: &mut ScriptRun<'_, '_>,
        library: &Arc<Library>,
        function: &str,
        keys: &[Bytes],
        args: &[Bytes],
    ) -> Frame {
        let generation = run.engine().scripting.generation();
        let r = with_vm(|vm| {
            vm.refresh(generation);
            if !vm.libraries.contains_key(&library.id) {
                let meta = LibraryMeta {
                    engine: library.engine.clone(),
                    name: library.name.clone(),
                };
                match load_into(vm, &meta, &library.code) {
                    Ok(list) => {
                        let map = list.into_iter().map(|r| (r.name, r.callback)).collect();
                        vm.libraries.insert(library.id, map);
                    }
                    Err(e) => return Frame::error(format!("ERR {e}")),
                }
            }
            let Some(f) = vm
                .libraries
                .get(&library.id)
                .and_then(|m| m.get(function))
                .cloned()
            else {
                return Frame::error("ERR Function not found");
            };
            let call_args = (|| -> mlua::Result<MultiValue> {
                let mut m = MultiValue::new();
                m.push_back(Value::Table(array(&vm.lua, keys)?));
                m.push_back(Value::Table(array(&vm.lua, args)?));
                Ok(m)
            })();
            match call_args {
                Ok(a) => {
                    // Functions get keys and arguments as parameters; KEYS and
                    // ARGV are EVAL's alone.
                    let _ = vm.globals.raw_set("KEYS", Value::Nil);
                    let _ = vm.globals.raw_set("ARGV", Value::Nil);
                    let _ = vm.globals.raw_set("redis", vm.function_redis.clone());
                    let reply = vm.call(run, &f, Some(a), || function.to_string());
                    let _ = vm.globals.raw_set("redis", vm.redis.clone());
                    let _ = vm.globals.raw_set("KEYS", vm.keys.clone());
                    let _ = vm.globals.raw_set("ARGV", vm.argv.clone());
                    reply
                }
                Err(e) => Frame::error(format!("ERR {e}")),
            }
        });
        r.unwrap_or_else(|e| e)
    }

    fn cached_body(&self, sha: &Sha, generation: u64) -> Option<Bytes> {
        VM.with(|cell| {
            let vm = cell.try_borrow().ok()?;
            let vm = vm.as_ref()?;
            if vm.generation != generation {
                return None;
            }
            vm.scripts.get(sha).map(|(_, b)| b.clone())
        })
    }

    fn vm_memory(&self) -> u64 {
        VM_SIZES
            .lock()
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .sum()
    }
}

/// Run a library's code with the loading `redis` table and collect what it
/// registers. Errors are Redis's texts (without the leading `ERR `).
fn load_into(vm: &mut Vm, _meta: &LibraryMeta, code: &[u8]) -> Result<Vec<Registered>, String> {
    let f = vm
        .compile(code, "@user_function")
        .map_err(|m| format!("Error compiling function: {m}"))?;
    REGISTERING.with(|r| *r.borrow_mut() = Some(Vec::new()));
    // While it loads, the library's globals are its `redis` table alone.
    let env_meta = vm.env.metatable();
    if let Some(mt) = &env_meta {
        let _ = mt.raw_set("__index", vm.load_redis.clone());
    }
    LOAD_DEADLINE.with(|d| d.set(Some(std::time::Instant::now() + LOAD_TIMEOUT)));
    let out: mlua::Result<MultiValue> =
        limited(&vm.lua, || vm.runner.call((f, vm.handler.clone())));
    LOAD_DEADLINE.with(|d| d.set(None));
    if let Some(mt) = &env_meta {
        let _ = mt.raw_set("__index", vm.globals.clone());
    }
    let registered = REGISTERING
        .with(|r| r.borrow_mut().take())
        .unwrap_or_default();
    let out = out.map_err(|e| format!("Error registering functions: {}", api::raised_text(&e)))?;
    let mut it = out.into_iter();
    if !matches!(it.next(), Some(Value::Boolean(true))) {
        let msg = match it.next() {
            Some(Value::Table(t)) => t
                .raw_get::<Option<String>>("err")
                .ok()
                .flatten()
                .unwrap_or_default(),
            Some(Value::String(s)) => s.to_string_lossy(),
            _ => String::new(),
        };
        return Err(format!("Error registering functions: {msg}"));
    }
    if registered.is_empty() {
        return Err("No functions registered".into());
    }
    Ok(registered)
}
