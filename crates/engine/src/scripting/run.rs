//! One script execution as the engine sees it: the commands it calls, the
//! locks it holds, whether it wrote, and whether it must stop.

use super::Busy;
use crate::declare::Flags;
use crate::error::CmdError;
use crate::kernel::Ctx;
use bytes::Bytes;
use keel_resp::{Frame, Protocol};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What another thread can see of a running script: SCRIPT KILL and
/// FUNCTION KILL set `kill`; the host's periodic check reads it.
pub struct Running {
    pub is_eval: bool,
    pub started: Instant,
    /// The function's name, or the script's sha (FUNCTION STATS).
    pub name: String,
    pub argv: Vec<Bytes>,
    pub kill: AtomicBool,
    pub wrote: AtomicBool,
    busy: AtomicBool,
    threshold: Duration,
    registry: Arc<Busy>,
    shutdown: Arc<AtomicBool>,
}

impl Running {
    /// Called by the host every so many instructions: enters the busy list
    /// once past the threshold, and says whether the script must stop now.
    pub fn check(self: &Arc<Self>) -> Result<(), &'static str> {
        if !self.busy.load(Ordering::Relaxed) && self.started.elapsed() >= self.threshold {
            self.busy.store(true, Ordering::Relaxed);
            self.registry.enter(self);
            crate::logging::log_warning(&format!(
                "Slow script detected: still in execution after {} milliseconds. You can try \
                 killing the script using the {} command.",
                self.started.elapsed().as_millis(),
                if self.is_eval {
                    "SCRIPT KILL"
                } else {
                    "FUNCTION KILL"
                }
            ));
        }
        if self.kill.load(Ordering::Relaxed) {
            // Redis names SCRIPT KILL for functions too.
            return Err("ERR Script killed by user with SCRIPT KILL...");
        }
        if self.shutdown.load(Ordering::Relaxed) {
            return Err("ERR Script killed by user with SHUTDOWN NOSAVE...");
        }
        Ok(())
    }

    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed)
    }
}

/// A script in progress on this thread. The host gets it for the duration of
/// one EVAL or FCALL and sends every `redis.call` through [`ScriptRun::call`].
pub struct ScriptRun<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    read_only: bool,
    /// The script's `allow-oom` flag: its writes are never refused for memory.
    allow_oom: bool,
    wrote: bool,
    /// Set when an undeclared key's shard was busy before any write: the
    /// script's result is thrown away and it runs again with every shard.
    abort: bool,
    /// It had to wait for a shard it did not declare after writing: from now
    /// on it takes every shard from the start.
    learn: bool,
    /// Shards it reached beyond those locked for it, for a run again.
    extra: Vec<usize>,
    resp: Protocol,
    /// Whether the commands it runs are logged (`redis.set_repl`).
    logged: bool,
    db: usize,
    running: Arc<Running>,
}

/// Redis's refusals of commands called from scripts.
const UNKNOWN: &str = "ERR Unknown Redis command called from script";
const ARITY: &str = "ERR Wrong number of args calling Redis command from script";
const NOSCRIPT: &str = "ERR This Redis command is not allowed from script";
const READONLY: &str = "ERR Write commands are not allowed from read-only scripts.";
const RETRY: &str = "ERR script touched an undeclared key: running it again with every shard";
const CONTENDED: &str = "ERR script touched an undeclared key whose shard another script holds; \
    declare it in KEYS";

impl<'c, 'a> ScriptRun<'c, 'a> {
    pub fn new(
        ctx: &'c mut Ctx<'a>,
        is_eval: bool,
        read_only: bool,
        name: String,
        argv: Vec<Bytes>,
    ) -> ScriptRun<'c, 'a> {
        let engine = ctx.engine;
        let threshold = engine
            .config
            .ops
            .busy_reply_ms
            .load(Ordering::Relaxed)
            .max(0) as u64;
        let running = Arc::new(Running {
            is_eval,
            started: Instant::now(),
            name,
            argv,
            kill: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            // 0 means no limit, as in Redis.
            threshold: if threshold == 0 {
                Duration::MAX
            } else {
                Duration::from_millis(threshold)
            },
            registry: engine.scripting.busy.clone(),
            shutdown: engine.scripting.shutdown.clone(),
        });
        let db = ctx.session.db;
        ScriptRun {
            ctx,
            read_only,
            allow_oom: false,
            wrote: false,
            abort: false,
            learn: false,
            extra: Vec::new(),
            resp: Protocol::Resp2,
            logged: true,
            db,
            running,
        }
    }

    /// Shared with the host's instruction-count hook.
    pub fn running(&self) -> &Arc<Running> {
        &self.running
    }

    pub fn engine(&self) -> &'a crate::Engine {
        self.ctx.engine
    }

    pub fn set_resp(&mut self, p: Protocol) {
        self.resp = p;
    }

    /// Log the commands it runs from now on, or not (`redis.set_repl`).
    pub fn set_logged(&mut self, on: bool) {
        self.logged = on;
    }

    /// The script carries the `allow-oom` flag.
    pub fn set_allow_oom(&mut self, on: bool) {
        self.allow_oom = on;
    }

    pub fn aborted(&self) -> bool {
        self.abort
    }

    pub fn must_learn(&self) -> bool {
        self.learn
    }

    /// Every shard held or wanted: what a run again locks from the start.
    pub fn wanted_shards(&self) -> Vec<usize> {
        let mut all = self.ctx.guards.indices();
        all.extend(self.extra.iter().copied());
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Run `argv` as Redis runs a command called from a script: the script
    /// rules first (no `noscript` commands, no writes from read-only scripts),
    /// then the command itself with the script's locks, taking the shards of
    /// keys the script did not declare. Errors come back as error frames.
    pub fn call(&mut self, argv: Vec<Bytes>) -> Frame {
        if self.abort {
            return Frame::error(RETRY);
        }
        let engine = self.ctx.engine;
        let id = match engine.resolve(&argv) {
            Ok(id) => id,
            Err(CmdError::WrongArity(_)) => return Frame::error(ARITY),
            Err(_) => return Frame::error(UNKNOWN),
        };
        let spec = engine.commands.specs[id];
        if spec.flags.contains(Flags::NOSCRIPT) {
            return Frame::error(NOSCRIPT);
        }
        if let Some(refused) = crate::acl::check_in_script(self.ctx, id, &argv) {
            return refused;
        }
        let write = spec.flags.contains(Flags::WRITE);
        if write {
            if self.read_only {
                return Frame::error(READONLY);
            }
            if crate::persistence::disk_failing(engine) {
                if let Some(text) = crate::persistence::disk_error(engine) {
                    return Frame::error(text);
                }
            }
        }
        // Redis refuses a command that may grow memory while memory is over
        // `maxmemory`, but only before the script's first write: a script is
        // never stopped halfway through its changes.
        if !self.allow_oom
            && !self.wrote
            && spec.flags.contains(Flags::DENYOOM)
            && crate::evict::still_over(engine)
        {
            return Frame::error(crate::evict::OOM);
        }
        if let Err(e) = self.take_shards(spec, &argv) {
            return e;
        }
        if write {
            self.wrote = true;
            self.running.wrote.store(true, Ordering::Relaxed);
        }
        let saved = self.ctx.session.proto;
        self.ctx.session.proto = self.resp;
        self.ctx.nested += 1;
        self.ctx.in_script = true;
        let logged_before = self.ctx.effects.len();
        let reply = crate::exec::run(self.ctx, id, &argv);
        self.ctx.in_script = false;
        if !self.logged {
            self.ctx.effects.truncate(logged_before);
        }
        self.ctx.nested -= 1;
        self.ctx.session.proto = saved;
        reply
    }

    fn take_shards(&mut self, spec: &crate::CommandSpec, argv: &[Bytes]) -> Result<(), Frame> {
        let engine = self.ctx.engine;
        if engine.every_shard(spec.flags, argv) || spec.flags.contains(Flags::SHARD_WALK) {
            for s in 0..engine.keyspace.shard_count() {
                self.take(s)?;
            }
            return Ok(());
        }
        let mut pos = Vec::new();
        spec.keys.positions(argv, &mut pos);
        for i in pos {
            self.take(engine.keyspace.shard_of(&argv[i]))?;
        }
        Ok(())
    }

    /// Hold shard `s` too (see `scripting::locks` for why this cannot deadlock).
    fn take(&mut self, s: usize) -> Result<(), Frame> {
        if self.ctx.guards.holds(s) {
            return Ok(());
        }
        let engine = self.ctx.engine;
        let ks = &engine.keyspace;
        self.extra.push(s);
        if let Some(g) = ks.try_lock(s) {
            self.ctx.guards.insert(s, g);
            return Ok(());
        }
        if !self.wrote {
            self.abort = true;
            return Err(Frame::error(RETRY));
        }
        self.learn = true;
        let sc = &engine.scripting;
        sc.escalating.fetch_add(1, Ordering::SeqCst);
        let start = Instant::now();
        let mut token = None;
        let got = loop {
            if let Some(g) = ks.try_lock_for(s, Duration::from_micros(200)) {
                break Some(g);
            }
            if token.is_none() {
                token = sc.token.try_lock();
            }
            if token.is_none() && start.elapsed() > Duration::from_millis(100) {
                break None;
            }
        };
        sc.escalating.fetch_sub(1, Ordering::SeqCst);
        drop(token);
        match got {
            Some(g) => {
                self.ctx.guards.insert(s, g);
                Ok(())
            }
            None => Err(Frame::error(CONTENDED)),
        }
    }

    /// Log a line at a Redis log level (`redis.log`).
    pub fn log(&self, level: i64, msg: &str) {
        match level {
            0 => crate::logging::log_debug(msg),
            1 => crate::logging::log_verbose(msg),
            2 => crate::logging::log_notice(msg),
            _ => crate::logging::log_warning(msg),
        }
    }
}

impl Drop for ScriptRun<'_, '_> {
    fn drop(&mut self) {
        if self.running.is_busy() {
            self.running.registry.leave(&self.running);
        }
        self.ctx.session.db = self.db;
    }
}
