//! EVAL, EVALSHA, their _RO forms, SCRIPT, FUNCTION and FCALL. The language
//! lives in the installed [`ScriptHost`]; these handlers parse, find the script
//! or function, and run it through [`ScriptRun`] with the declared keys'
//! shards held (every shard for scripts known to reach undeclared keys).

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::{Ctx, Guards};
use keel_engine::engine::Engine;
use keel_engine::error::CmdError;
use keel_engine::scripting::{
    self, functions, hex, parse_sha, sha1, ScriptFlags, ScriptHost, ScriptRun,
};
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use std::sync::atomic::Ordering;

pub static COMMANDS: &[&CommandSpec] = &[
    &EVAL,
    &EVALSHA,
    &EVAL_RO,
    &EVALSHA_RO,
    &FCALL,
    &FCALL_RO,
    &SCRIPT,
    &FUNCTION,
];

const RUN: Flags = Flags::NOSCRIPT
    .union(Flags::STALE)
    .union(Flags::SKIP_MONITOR)
    .union(Flags::NO_MANDATORY_KEYS)
    .union(Flags::SCRIPT);
const RUN_RO: Flags = Flags::READONLY.union(RUN);
const SCRIPT_KEYS: Keys = Keys::NumKeys {
    numkeys: 2,
    extra: 0,
};

macro_rules! runner {
    ($id:ident, $name:literal, $flags:expr, $summary:literal, $since:literal, $complexity:literal, $run:ident) => {
        pub(crate) const $id: CommandSpec = CommandSpec {
            name: $name,
            group: Group::Scripting,
            arity: -3,
            flags: $flags,
            keys: SCRIPT_KEYS,
            summary: $summary,
            since: $since,
            complexity: $complexity,
            subcommands: &[],
            run: $run,
        };
    };
}

runner!(
    EVAL,
    "EVAL",
    RUN,
    "Execute a Lua script server side",
    "2.6.0",
    "Depends on the script that is executed.",
    eval
);
runner!(
    EVALSHA,
    "EVALSHA",
    RUN,
    "Execute a Lua script server side",
    "2.6.0",
    "Depends on the script that is executed.",
    evalsha
);
runner!(
    EVAL_RO,
    "EVAL_RO",
    RUN_RO,
    "Execute a read-only Lua script server side",
    "7.0.0",
    "Depends on the script that is executed.",
    eval_ro
);
runner!(
    EVALSHA_RO,
    "EVALSHA_RO",
    RUN_RO,
    "Execute a read-only Lua script server side",
    "7.0.0",
    "Depends on the script that is executed.",
    evalsha_ro
);
runner!(
    FCALL,
    "FCALL",
    RUN,
    "Invoke a function",
    "7.0.0",
    "Depends on the function that is executed.",
    fcall
);
runner!(
    FCALL_RO,
    "FCALL_RO",
    RUN_RO,
    "Invoke a read-only function",
    "7.0.0",
    "Depends on the function that is executed.",
    fcall_ro
);

fn host(engine: &Engine) -> Result<&dyn ScriptHost, CmdError> {
    match engine.scripting.host() {
        Some(h) => Ok(h.as_ref()),
        None => Err(CmdError::err(
            "Lua scripting is not available: no script host is installed",
        )),
    }
}

/// `numkeys key... arg...` after the script or function name; `not_a_number`
/// replaces the usual integer error (FCALL has its own).
fn keys_and_args(
    args: &mut Args<'_>,
    not_a_number: Option<&'static str>,
) -> Result<(Vec<Bytes>, Vec<Bytes>), CmdError> {
    let n = match not_a_number {
        Some(text) => args.next_i64().map_err(|_| CmdError::err(text))?,
        None => args.next_i64()?,
    };
    let rest = args.rest();
    if n < 0 {
        return Err(CmdError::err("Number of keys can't be negative"));
    }
    if n as u64 > rest.len() as u64 {
        return Err(CmdError::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    let n = n as usize;
    Ok((rest[..n].to_vec(), rest[n..].to_vec()))
}

const NOSCRIPT_TEXT: &str = "NOSCRIPT No matching script. Please use EVAL.";
const RO_WITH_WRITE: &str = "Can not execute a script with write flag using *_ro command.";

fn eval(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    eval_generic(ctx, args, false, false)
}

fn evalsha(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    eval_generic(ctx, args, true, false)
}

fn eval_ro(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    eval_generic(ctx, args, false, true)
}

fn evalsha_ro(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    eval_generic(ctx, args, true, true)
}

fn eval_generic(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    by_sha: bool,
    ro: bool,
) -> Result<Frame, CmdError> {
    let first = args.next_arg()?;
    let (keys, argv) = keys_and_args(args, None)?;
    let host = host(ctx.engine)?;
    let (sha, body) = if by_sha {
        let sha = parse_sha(first).ok_or_else(|| CmdError::msg(NOSCRIPT_TEXT))?;
        let sc = &ctx.engine.scripting;
        let body = host
            .cached_body(&sha, sc.generation())
            .or_else(|| sc.script(&sha))
            .ok_or_else(|| CmdError::msg(NOSCRIPT_TEXT))?;
        (sha, body)
    } else {
        (sha1(first), first.clone())
    };
    let flags = functions::parse_eval_shebang(&body).map_err(CmdError::err)?;
    let no_writes = flags.is_some_and(|f| f.contains(ScriptFlags::NO_WRITES));
    if flags.is_some() && !no_writes {
        refuse_while_disk_fails(ctx)?;
    }
    if ro && flags.is_some() && !no_writes {
        return Err(CmdError::err(RO_WITH_WRITE));
    }
    let allow_oom = flags.is_some_and(|f| f.contains(ScriptFlags::ALLOW_OOM));
    // A script declaring flags may write unless it says no-writes, so Redis
    // refuses it up front while memory is over `maxmemory`.
    if flags.is_some() && !no_writes && !allow_oom && keel_engine::evict::still_over(ctx.engine) {
        return Err(CmdError::msg(keel_engine::evict::OOM));
    }
    let learn = || scripting::learn_key_eval(&sha);
    if ctx.engine.monitors.active() {
        keel_engine::monitor::feed_script(ctx, args.argv());
    }
    Ok(run_script(
        ctx,
        true,
        ro || no_writes,
        String::new,
        learn,
        Vec::new,
        |run| {
            run.set_allow_oom(allow_oom);
            host.eval(run, &sha, &body, &keys, &argv)
        },
    ))
}

/// A script or function that may write is refused before it runs while the
/// disk fails (Redis's MISCONF), as a write command is; one that declares
/// `no-writes`, or a script without flags, runs.
fn refuse_while_disk_fails(ctx: &Ctx<'_>) -> Result<(), CmdError> {
    if keel_engine::persistence::disk_failing(ctx.engine) {
        if let Some(text) = keel_engine::persistence::disk_error(ctx.engine) {
            return Err(CmdError::msg(text));
        }
    }
    Ok(())
}

fn fcall(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    fcall_generic(ctx, args, false)
}

fn fcall_ro(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    fcall_generic(ctx, args, true)
}

fn fcall_generic(ctx: &mut Ctx<'_>, args: &mut Args<'_>, ro: bool) -> Result<Frame, CmdError> {
    let name = args.next_arg()?;
    let (keys, argv) = keys_and_args(args, Some("Bad number of keys provided"))?;
    let host = host(ctx.engine)?;
    let name = String::from_utf8_lossy(name).into_owned();
    let lib = ctx
        .engine
        .scripting
        .functions
        .read()
        .functions
        .get(&name.to_ascii_lowercase())
        .cloned()
        .ok_or_else(|| CmdError::err("Function not found"))?;
    // From here on, the function is called by the name it was registered with.
    let name = lib.function(&name).map_or(name, |f| f.name.clone());
    let no_writes = lib
        .function(&name)
        .is_some_and(|f| f.flags.contains(ScriptFlags::NO_WRITES));
    if !no_writes {
        refuse_while_disk_fails(ctx)?;
    }
    if ro && !no_writes {
        return Err(CmdError::err(RO_WITH_WRITE));
    }
    let allow_oom = lib
        .function(&name)
        .is_some_and(|f| f.flags.contains(ScriptFlags::ALLOW_OOM));
    if !no_writes && !allow_oom && keel_engine::evict::still_over(ctx.engine) {
        return Err(CmdError::msg(keel_engine::evict::OOM));
    }
    let learn = || scripting::learn_key_function(name.as_bytes());
    let all = || args.argv().to_vec();
    let label = || name.clone();
    if ctx.engine.monitors.active() {
        keel_engine::monitor::feed_script(ctx, args.argv());
    }
    Ok(run_script(
        ctx,
        false,
        ro || no_writes,
        label,
        learn,
        all,
        |run| {
            run.set_allow_oom(allow_oom);
            host.fcall(run, &lib, &name, &keys, &argv)
        },
    ))
}

/// Run a script with the locks the executor took; if it reached an undeclared
/// key whose shard was busy before it wrote, run it again holding every shard
/// it reached. Its effects become one MULTI/EXEC unit when there are several.
#[allow(clippy::too_many_arguments)]
fn run_script(
    ctx: &mut Ctx<'_>,
    is_eval: bool,
    read_only: bool,
    name: impl Fn() -> String,
    learn: impl Fn() -> Bytes,
    argv: impl Fn() -> Vec<Bytes>,
    mut body: impl FnMut(&mut ScriptRun<'_, '_>) -> Frame,
) -> Frame {
    let engine = ctx.engine;
    let logging = engine.logging();
    let effects_before = ctx.effects.len();
    if logging {
        let db = ctx.session.db;
        ctx.effects.push((db, vec![Bytes::from_static(b"MULTI")]));
    }
    let reply = loop {
        let mut run = ScriptRun::new(ctx, is_eval, read_only, name(), argv());
        let reply = body(&mut run);
        let (abort, must_learn) = (run.aborted(), run.must_learn());
        let wanted = run.wanted_shards();
        drop(run);
        if must_learn {
            engine.scripting.learn(learn());
        }
        if !abort {
            break reply;
        }
        // Nothing was written: run again from the start holding, in order,
        // every shard the script reached.
        ctx.guards = Guards::None;
        ctx.guards = Guards::Many(engine.lock_shards(&wanted));
    };
    if engine.scripting.shutdown.load(Ordering::SeqCst) {
        // SHUTDOWN NOSAVE stopped it: the server goes, with no reply.
        ctx.session.handle.kill();
    }
    if logging {
        let logged = ctx.effects.len() - effects_before - 1;
        if logged > 1 {
            let db = ctx.session.db;
            ctx.effects.push((db, vec![Bytes::from_static(b"EXEC")]));
        } else {
            ctx.effects.remove(effects_before);
        }
    }
    reply
}

/// Whether a script command (EVAL..., FCALL...) must take every shard before
/// it starts: it reached an undeclared key before.
pub fn wants_every_shard(scripting: &keel_engine::scripting::Scripting, argv: &[Bytes]) -> bool {
    if !scripting.any_learned() {
        return false;
    }
    let (Some(name), Some(first)) = (argv.first(), argv.get(1)) else {
        return false;
    };
    let upper = name.to_ascii_uppercase();
    let key = match upper.as_slice() {
        b"EVAL" | b"EVAL_RO" => scripting::learn_key_eval(&sha1(first)),
        b"EVALSHA" | b"EVALSHA_RO" => Bytes::from(first.to_ascii_lowercase()),
        _ => scripting::learn_key_function(first),
    };
    scripting.learned(&key)
}

// ---------------------------------------------------------------------------
// SCRIPT

pub(crate) const SCRIPT: CommandSpec = CommandSpec {
    name: "SCRIPT",
    group: Group::Scripting,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for Lua scripts management commands",
    since: "2.6.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &SCRIPT_DEBUG,
        &SCRIPT_EXISTS,
        &SCRIPT_FLUSH,
        &SCRIPT_HELP,
        &SCRIPT_KILL,
        &SCRIPT_LOAD,
    ],
    run: keel_engine::subcommands::container,
};

macro_rules! sub {
    ($id:ident, $name:literal, $arity:expr, $flags:expr, $summary:literal, $since:literal, $complexity:literal, $run:ident) => {
        pub(crate) const $id: CommandSpec = CommandSpec {
            name: $name,
            group: Group::Scripting,
            arity: $arity,
            flags: $flags,
            keys: Keys::None,
            summary: $summary,
            since: $since,
            complexity: $complexity,
            subcommands: &[],
            run: $run,
        };
    };
}

sub!(
    SCRIPT_DEBUG,
    "SCRIPT|DEBUG",
    3,
    Flags::NOSCRIPT,
    "Set the debug mode for executed scripts.",
    "3.2.0",
    "O(1)",
    script_debug
);
sub!(SCRIPT_EXISTS, "SCRIPT|EXISTS", -3, Flags::NOSCRIPT,
    "Check existence of scripts in the script cache.", "2.6.0",
    "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
    script_exists);
sub!(
    SCRIPT_FLUSH,
    "SCRIPT|FLUSH",
    -2,
    Flags::NOSCRIPT,
    "Remove all the scripts from the script cache.",
    "2.6.0",
    "O(N) with N being the number of scripts in cache",
    script_flush
);
sub!(
    SCRIPT_HELP,
    "SCRIPT|HELP",
    2,
    Flags::LOADING.union(Flags::STALE),
    "Show helpful text about the different subcommands",
    "5.0.0",
    "O(1)",
    script_help
);
sub!(
    SCRIPT_KILL,
    "SCRIPT|KILL",
    2,
    Flags::NOSCRIPT.union(Flags::ALLOW_BUSY),
    "Kill the script currently in execution.",
    "2.6.0",
    "O(1)",
    script_kill
);
sub!(
    SCRIPT_LOAD,
    "SCRIPT|LOAD",
    3,
    Flags::NOSCRIPT.union(Flags::STALE),
    "Load the specified Lua script into the script cache.",
    "2.6.0",
    "O(N) with N being the length in bytes of the script body.",
    script_load
);

fn script_debug(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let mode = args.next_arg()?;
    if is(mode, "NO") {
        return Ok(Frame::ok());
    }
    if is(mode, "YES") || is(mode, "SYNC") {
        return Err(CmdError::err(
            "SCRIPT DEBUG: the Lua debugger (LDB) is not available in Keel",
        ));
    }
    Err(CmdError::err("Use SCRIPT DEBUG YES/SYNC/NO"))
}

fn script_exists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let s = &ctx.engine.scripting;
    Ok(Frame::Array(
        args.rest()
            .iter()
            .map(|a| {
                Frame::Integer(i64::from(
                    parse_sha(a).is_some_and(|sha| s.has_script(&sha)),
                ))
            })
            .collect(),
    ))
}

/// `[ASYNC|SYNC]` of SCRIPT FLUSH and FUNCTION FLUSH.
fn flush_mode(args: &mut Args<'_>, err: &str) -> Result<(), CmdError> {
    match args.rest() {
        [] => Ok(()),
        [m] if is(m, "ASYNC") || is(m, "SYNC") => Ok(()),
        _ => Err(CmdError::err(err)),
    }
}

fn script_flush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    flush_mode(args, "SCRIPT FLUSH only support SYNC|ASYNC option")?;
    ctx.engine.scripting.flush_scripts();
    Ok(Frame::ok())
}

fn script_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed (only NO: Keel has no Lua debugger).",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ]))
}

fn script_load(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let body = args.next_arg()?.clone();
    let host = host(ctx.engine)?;
    functions::parse_eval_shebang(&body).map_err(CmdError::err)?;
    let sha = sha1(&body);
    if !ctx.engine.scripting.has_script(&sha) {
        if let Err(Frame::Error(e)) = host.compile(&sha, &body) {
            return Err(CmdError::msg(String::from_utf8_lossy(&e).into_owned()));
        }
        ctx.engine.scripting.remember(sha, body);
    }
    Ok(Frame::Bulk(Bytes::from(hex(&sha))))
}

/// SCRIPT KILL and FUNCTION KILL: stop the busy script of that kind unless it
/// already wrote.
fn kill(ctx: &mut Ctx<'_>, eval: bool) -> Result<Frame, CmdError> {
    let running = ctx.engine.scripting.busy.running();
    let Some(r) = running.first() else {
        return Err(CmdError::msg("NOTBUSY No scripts in execution right now."));
    };
    if r.wrote.load(Ordering::Relaxed) {
        return Err(CmdError::msg(
            "UNKILLABLE Sorry the script already executed write commands against the dataset. \
             You can either wait the script termination or kill the server in a hard way using \
             the SHUTDOWN NOSAVE command.",
        ));
    }
    if r.is_eval != eval {
        // The other KILL: the busy reply that names the right one.
        return Err(CmdError::msg(ctx.engine.scripting.busy.refusal()));
    }
    for r in running.iter().filter(|r| r.is_eval == eval) {
        r.kill.store(true, Ordering::Relaxed);
    }
    Ok(Frame::ok())
}

fn script_kill(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    kill(ctx, true)
}

// ---------------------------------------------------------------------------
// FUNCTION

pub(crate) const FUNCTION: CommandSpec = CommandSpec {
    name: "FUNCTION",
    group: Group::Scripting,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for function commands",
    since: "7.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &FUNCTION_DELETE,
        &FUNCTION_DUMP,
        &FUNCTION_FLUSH,
        &FUNCTION_HELP,
        &FUNCTION_KILL,
        &FUNCTION_LIST,
        &FUNCTION_LOAD,
        &FUNCTION_RESTORE,
        &FUNCTION_STATS,
    ],
    run: keel_engine::subcommands::container,
};

/// Library changes take every shard, so a snapshot's flip (which holds them
/// all) sees the libraries as they were at that instant.
const FN_WRITE: Flags = Flags::WRITE.union(Flags::NOSCRIPT).union(Flags::ALL_SHARDS);

sub!(
    FUNCTION_DELETE,
    "FUNCTION|DELETE",
    3,
    FN_WRITE,
    "Delete a function by name",
    "7.0.0",
    "O(1)",
    function_delete
);
sub!(
    FUNCTION_DUMP,
    "FUNCTION|DUMP",
    2,
    Flags::NOSCRIPT,
    "Dump all functions into a serialized binary payload",
    "7.0.0",
    "O(N) where N is the number of functions",
    function_dump
);
sub!(
    FUNCTION_FLUSH,
    "FUNCTION|FLUSH",
    -2,
    FN_WRITE,
    "Deleting all functions",
    "7.0.0",
    "O(N) where N is the number of functions deleted",
    function_flush
);
sub!(
    FUNCTION_HELP,
    "FUNCTION|HELP",
    2,
    Flags::LOADING.union(Flags::STALE),
    "Show helpful text about the different subcommands",
    "7.0.0",
    "O(1)",
    function_help
);
sub!(
    FUNCTION_KILL,
    "FUNCTION|KILL",
    2,
    Flags::NOSCRIPT.union(Flags::ALLOW_BUSY),
    "Kill the function currently in execution.",
    "7.0.0",
    "O(1)",
    function_kill
);
sub!(
    FUNCTION_LIST,
    "FUNCTION|LIST",
    -2,
    Flags::NOSCRIPT,
    "List information about all the functions",
    "7.0.0",
    "O(N) where N is the number of functions",
    function_list
);
sub!(
    FUNCTION_LOAD,
    "FUNCTION|LOAD",
    -3,
    FN_WRITE.union(Flags::DENYOOM),
    "Create a function with the given arguments (name, code, description)",
    "7.0.0",
    "O(1) (considering compilation time is redundant)",
    function_load
);
sub!(
    FUNCTION_RESTORE,
    "FUNCTION|RESTORE",
    -3,
    FN_WRITE.union(Flags::DENYOOM),
    "Restore all the functions on the given payload",
    "7.0.0",
    "O(N) where N is the number of functions on the payload",
    function_restore
);
sub!(
    FUNCTION_STATS,
    "FUNCTION|STATS",
    2,
    Flags::NOSCRIPT.union(Flags::ALLOW_BUSY),
    "Return information about the function currently running (name, description, duration)",
    "7.0.0",
    "O(1)",
    function_stats
);

fn function_load(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let mut replace = false;
    let rest = args.rest();
    let mut i = 0;
    while i + 1 < rest.len() {
        if is(&rest[i], "REPLACE") {
            replace = true;
        } else {
            return Err(CmdError::err(format!(
                "Unknown option given: {}",
                String::from_utf8_lossy(&rest[i])
            )));
        }
        i += 1;
    }
    let Some(code) = rest.last() else {
        return Err(CmdError::err("Function code is missing"));
    };
    let lib = ctx
        .engine
        .scripting
        .build_library(code.clone())
        .map_err(CmdError::msg)?;
    let name = lib.name.clone();
    ctx.engine
        .scripting
        .functions
        .write()
        .add(lib, replace)
        .map_err(CmdError::err)?;
    ctx.engine.scripting.bump_generation();
    ctx.dirty(1);
    Ok(Frame::Bulk(Bytes::from(name)))
}

fn function_delete(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let name = String::from_utf8_lossy(args.next_arg()?).into_owned();
    if ctx
        .engine
        .scripting
        .functions
        .write()
        .remove(&name)
        .is_none()
    {
        return Err(CmdError::err("Library not found"));
    }
    ctx.engine.scripting.bump_generation();
    ctx.dirty(1);
    Ok(Frame::ok())
}

fn function_flush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    flush_mode(args, "FUNCTION FLUSH only supports SYNC|ASYNC option")?;
    *ctx.engine.scripting.functions.write() = functions::Registry::default();
    ctx.engine.scripting.bump_generation();
    ctx.dirty(1);
    Ok(Frame::ok())
}

fn function_kill(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    kill(ctx, false)
}

fn function_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ]))
}

fn bulk_str(s: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

fn function_list(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let mut pattern: Option<Bytes> = None;
    let mut with_code = false;
    while let Some(a) = args.next_opt() {
        // A repeated option is an unknown argument, named as the client wrote it.
        let repeated = || CmdError::err(format!("Unknown argument {}", String::from_utf8_lossy(a)));
        if is(a, "WITHCODE") {
            if with_code {
                return Err(repeated());
            }
            with_code = true;
        } else if is(a, "LIBRARYNAME") {
            if pattern.is_some() {
                return Err(repeated());
            }
            let Some(p) = args.next_opt() else {
                return Err(CmdError::err("library name argument was not given"));
            };
            pattern = Some(p.clone());
        } else {
            return Err(CmdError::err(format!(
                "Unknown argument {}",
                String::from_utf8_lossy(a)
            )));
        }
    }
    let reg = ctx.engine.scripting.functions.read();
    let mut out = Vec::new();
    for lib in reg.libraries.values() {
        if let Some(p) = &pattern {
            // Redis matches library names without regard to case.
            if !keel_store::glob::glob_match(p, lib.name.as_bytes(), true) {
                continue;
            }
        }
        let fns = lib
            .functions
            .iter()
            .map(|f| {
                Frame::Map(vec![
                    (bulk_str("name"), bulk_str(&f.name)),
                    (
                        bulk_str("description"),
                        f.description.as_deref().map_or(Frame::Null, bulk_str),
                    ),
                    (
                        bulk_str("flags"),
                        // Status strings, as Redis sends them.
                        Frame::Set(f.flags.names().into_iter().map(Frame::simple).collect()),
                    ),
                ])
            })
            .collect();
        let mut m = vec![
            (bulk_str("library_name"), bulk_str(&lib.name)),
            (bulk_str("engine"), bulk_str(&lib.engine)),
            (bulk_str("functions"), Frame::Array(fns)),
        ];
        if with_code {
            m.push((bulk_str("library_code"), Frame::Bulk(lib.code.clone())));
        }
        out.push(Frame::Map(m));
    }
    Ok(Frame::Array(out))
}

fn function_stats(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let running = ctx
        .engine
        .scripting
        .busy
        .running()
        .into_iter()
        .find(|r| !r.is_eval);
    let script = match running {
        None => Frame::Null,
        Some(r) => Frame::Map(vec![
            (bulk_str("name"), bulk_str(&r.name)),
            (
                bulk_str("command"),
                Frame::Array(r.argv.iter().cloned().map(Frame::Bulk).collect()),
            ),
            (
                bulk_str("duration_ms"),
                Frame::Integer(r.started.elapsed().as_millis() as i64),
            ),
        ]),
    };
    let reg = ctx.engine.scripting.functions.read();
    Ok(Frame::Map(vec![
        (bulk_str("running_script"), script),
        (
            bulk_str("engines"),
            Frame::Map(vec![(
                bulk_str("LUA"),
                Frame::Map(vec![
                    (
                        bulk_str("libraries_count"),
                        Frame::Integer(reg.libraries.len() as i64),
                    ),
                    (
                        bulk_str("functions_count"),
                        Frame::Integer(reg.function_count() as i64),
                    ),
                ]),
            )]),
        ),
    ]))
}

fn function_dump(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let libs = keel_engine::persistence::snapshot::libraries(ctx.engine);
    let compress = ctx.engine.config.get_bool("rdbcompression");
    Ok(Frame::Bulk(Bytes::from(
        keel_persist::rdb::encode_function_dump_with(&libs, compress),
    )))
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]: every library is checked
/// before any is installed, so a failure changes nothing.
fn function_restore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let payload = args.next_arg()?;
    #[derive(PartialEq)]
    enum Policy {
        Flush,
        Append,
        Replace,
    }
    let policy = match args.rest() {
        [] => Policy::Append,
        [_, _, ..] => {
            let sub = args
                .argv()
                .get(1)
                .map_or(String::new(), |a| String::from_utf8_lossy(a).into_owned());
            return Err(CmdError::err(format!(
                "unknown subcommand or wrong number of arguments for '{sub}'. Try FUNCTION HELP."
            )));
        }
        [p] if is(p, "FLUSH") => Policy::Flush,
        [p] if is(p, "APPEND") => Policy::Append,
        [p] if is(p, "REPLACE") => Policy::Replace,
        _ => {
            return Err(CmdError::err(
                "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ))
        }
    };
    let libs = keel_persist::rdb::function_dump_libraries(payload).map_err(CmdError::err)?;
    let mut built = Vec::new();
    for code in libs {
        let code = code.map_err(CmdError::err)?;
        built.push(
            ctx.engine
                .scripting
                .build_library(code)
                .map_err(CmdError::msg)?,
        );
    }
    let sc = &ctx.engine.scripting;
    let mut reg = sc.functions.write();
    let mut next = match policy {
        Policy::Flush => functions::Registry::default(),
        _ => reg.clone(),
    };
    for lib in built {
        let name = lib.name.clone();
        next.add(lib, policy == Policy::Replace).map_err(|e| {
            // RESTORE names a clashing library without quotes.
            if e.starts_with("Library ") {
                CmdError::err(format!("Library {name} already exists"))
            } else {
                CmdError::err(e)
            }
        })?;
    }
    *reg = next;
    drop(reg);
    sc.bump_generation();
    ctx.dirty(1);
    Ok(Frame::ok())
}
