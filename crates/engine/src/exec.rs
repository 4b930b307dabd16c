//! The one execution path. Every command, whether from a connection, inside EXEC,
//! from a script or replayed from a log, goes through [`Engine::execute`] or,
//! for nested calls that reuse their caller's locks, [`call_nested`].
//!
//! Order of checks follows Redis's `processCommand`: lookup, arity, auth, MULTI
//! queueing; then keys are extracted from the spec, their shards locked in
//! ascending order, the handler runs, and its effect is logged and watchers are
//! invalidated while the locks are still held, so log order is execution order.

use crate::args::Args;
use crate::clock::Tick;
use crate::declare::{Flags, Keys};
use crate::error::CmdError;
use crate::guards::Guards;
use crate::kernel::Engine;
use crate::kernel::{Ctx, Upgrade};
use crate::session::Session;
use crate::stats::bump;
use bytes::{Bytes, BytesMut};
use keel_resp::Frame;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

fn err(e: CmdError) -> Frame {
    Frame::Error(Bytes::from(e.to_string()))
}

impl Engine {
    /// Resolve argv to a command id, checking the name, subcommand and arity.
    pub fn resolve(&self, argv: &[Bytes]) -> Result<usize, CmdError> {
        let Some(name) = argv.first() else {
            return Err(CmdError::Syntax);
        };
        let Some(mut id) = self.commands.lookup(name) else {
            // Like Redis: quote arguments until the list reaches 128 bytes, each
            // cut to what is left of that budget, and the name to 128 bytes.
            let mut args = String::new();
            for a in argv.iter().skip(1) {
                if args.len() >= 128 {
                    break;
                }
                let room = 128 - args.len();
                let shown = &a[..a.len().min(room)];
                args.push_str(&format!("'{}' ", String::from_utf8_lossy(shown)));
            }
            let shown = &name[..name.len().min(128)];
            return Err(CmdError::UnknownCommand {
                name: String::from_utf8_lossy(shown).into(),
                args,
            });
        };
        let spec = self.commands.specs[id];
        if !spec.subcommands.is_empty() {
            let Some(sub) = argv.get(1) else {
                // A container whose arity admits no subcommand (bare COMMAND)
                // runs its own handler.
                if spec.arity_ok(argv.len()) {
                    return Ok(id);
                }
                return Err(CmdError::WrongArity(self.commands.full_name(id)));
            };
            id = self
                .commands
                .lookup_sub(id, sub)
                .ok_or_else(|| CmdError::UnknownSubcommand {
                    sub: String::from_utf8_lossy(&sub[..sub.len().min(128)]).into(),
                    cmd: spec.name.to_string(),
                })?;
        }
        if !self.commands.specs[id].arity_ok(argv.len()) {
            return Err(CmdError::WrongArity(self.commands.full_name(id)));
        }
        Ok(id)
    }

    /// Hint that `argv` will run soon: start loading the entry of its first
    /// argument after the name, the key of most commands. Running a pipeline's
    /// commands after hinting all of them overlaps their cache misses. A wrong
    /// guess costs a wasted load, never a wrong result.
    pub fn prefetch(&self, session: &Session, argv: &[Bytes]) {
        if let Some(key) = argv.get(1) {
            // One hash for the shard and the table.
            let hash = keel_store::keyspace::hash_key(key);
            let shard = self.keyspace.shard_of_hash(hash);
            if let Some(guard) = self.keyspace.try_read(shard) {
                if session.db < guard.databases() {
                    let table = guard.db_ref(session.db);
                    table.prefetch_hashed(hash);
                    self.families.prefetch(table, argv);
                }
            }
        }
    }

    /// Run one command for `session` and return its reply.
    pub fn execute(&self, session: &mut Session, argv: Vec<Bytes>) -> Frame {
        let mut tick = Tick::new(&*self.clock);
        self.execute_with(session, &argv, &mut tick, None)
    }

    /// Run one command of a batch that shares `tick` (see [`Tick`]). Clients
    /// blocked on keys the command filled are served before it returns.
    ///
    /// `out` is the connection's output buffer, given when every reply of
    /// the client is sent: a handler may encode its reply there itself, and
    /// then returns an empty [`Frame::Encoded`].
    pub fn execute_with(
        &self,
        session: &mut Session,
        argv: &[Bytes],
        tick: &mut Tick,
        out: Option<&mut BytesMut>,
    ) -> Frame {
        // CLIENT CACHING covers one command (see crate::tracking::end_caching).
        let caching = (session.tracking & crate::tracking::CACHING != 0).then(|| {
            argv.first()
                .is_some_and(|n| n.eq_ignore_ascii_case(b"CLIENT"))
        });
        let (reply, ready) = self.execute_once(session, argv, tick, out);
        if let Some(was_client) = caching {
            crate::tracking::end_caching(session, was_client);
        }
        if !ready.is_empty() {
            self.serve_ready(ready);
        }
        reply
    }

    /// Run one command; also return the keys it wrote that blocked clients wait
    /// on, to serve once its locks are released.
    pub(crate) fn execute_once(
        &self,
        session: &mut Session,
        argv: &[Bytes],
        tick: &mut Tick,
        out: Option<&mut BytesMut>,
    ) -> (Frame, Vec<Bytes>) {
        let id = match self.resolve(argv) {
            Ok(id) => id,
            Err(e) => {
                if session.multi.is_some() {
                    session.multi_error = true;
                }
                return (self.rejected(argv, None, e), Vec::new());
            }
        };
        let spec = self.commands.specs[id];
        if !session.authenticated && !spec.flags.contains(Flags::NO_AUTH) {
            return (self.rejected(argv, Some(id), CmdError::NoAuth), Vec::new());
        }
        if session.user.as_ref().is_some_and(|u| !u.free()) {
            if let Err(e) = crate::acl::admit_top(self, session, id, argv) {
                return (self.rejected(argv, Some(id), e), Vec::new());
            }
        }
        if self.scripting.busy.any() {
            if spec.name == "SHUTDOWN" {
                return (self.shutdown_busy(session, argv), Vec::new());
            }
            if !spec.flags.contains(Flags::ALLOW_BUSY) {
                let e = CmdError::msg(self.scripting.busy.refusal());
                return (self.rejected(argv, Some(id), e), Vec::new());
            }
        }
        if self.monitors.active() && session.monitor.is_some() {
            if let Some(e) = crate::monitor::refuse(spec) {
                return (self.rejected(argv, Some(id), e), Vec::new());
            }
        }
        if session.pubsub.is_some()
            && session.proto == keel_resp::Protocol::Resp2
            && crate::pubsub::subscribed(session)
        {
            if let Some(e) = crate::pubsub::refuse(spec.name, self.commands.full_name(id)) {
                return (self.rejected(argv, Some(id), e), Vec::new());
            }
        }
        if self.config.ops.evict.maxmemory() != 0 && crate::evict::refuses(self, session, spec) {
            let e = crate::evict::refusal(self, session, spec);
            return (self.rejected(argv, Some(id), e), Vec::new());
        }
        if crate::persistence::disk_failing(self) {
            if let Some(e) = crate::persistence::refusal(self, session, spec) {
                return (self.rejected(argv, Some(id), e), Vec::new());
            }
        }
        if self.follow.following() || self.repl.refuses_writes() {
            if let Some(e) = crate::replication::refusal(self, session, spec) {
                return (self.rejected(argv, Some(id), e), Vec::new());
            }
        }
        if self.pause.active() && crate::pause::holds(self, session, spec, tick.now_ms()) {
            session.handle.last_cmd.store(id, Ordering::Relaxed);
            session.postponed = Some(argv.to_vec());
            return (Frame::Null, Vec::new());
        }
        if let Some(queue) = session.multi.as_mut() {
            if !spec.flags.contains(Flags::TX_CONTROL) {
                if spec.flags.contains(Flags::NO_MULTI) {
                    session.multi_error = true;
                    let e = CmdError::NotAllowedInMulti;
                    return (self.rejected(argv, Some(id), e), Vec::new());
                }
                queue.push(argv.to_vec());
                session
                    .handle
                    .multi_queued
                    .store(queue.len(), Ordering::Relaxed);
                return (Frame::simple("QUEUED"), Vec::new());
            }
        }
        session.handle.last_cmd.store(id, Ordering::Relaxed);
        session
            .handle
            .last_interaction_ms
            .store(tick.now_ms(), Ordering::Relaxed);
        let paused = self.pause.active();
        let shared = !paused && self.commands.runs_shared(id);
        let mut guards = self.lock_for(session, spec.keys, spec.flags, argv, shared);
        let held = paused && crate::pause::hold_expired(self, &mut guards, tick.now_ms());
        let mut ctx = Ctx {
            engine: self,
            session,
            guards,
            tick: *tick,
            dirty: 0,
            dirty_counted: 0,
            modified: None,
            rewrite: None,
            effects: Vec::new(),
            hits: 0,
            misses: 0,
            ready: Vec::new(),
            nested: 0,
            redacted: Vec::new(),
            in_script: false,
            wakes_none: false,
            must_write: None,
            out,
        };
        let written = ctx.out.as_ref().map_or(0, |o| o.len());
        let mut reply = run(&mut ctx, id, argv);
        if let Some(why) = ctx.must_write.take() {
            // It held its shard shared and found it must change it: nothing
            // was changed, counted or shown yet; run it again exclusively.
            if why == Upgrade::Always {
                self.commands.run_exclusive(id);
            }
            ctx.guards = Guards::None;
            ctx.guards = self.lock_for(ctx.session, spec.keys, spec.flags, argv, false);
            ctx.hits = 0;
            ctx.misses = 0;
            if let Some(o) = ctx.out.as_mut() {
                o.truncate(written);
            }
            reply = run(&mut ctx, id, argv);
        }
        // Whatever runs from here (clients served by this write) replies to
        // other clients.
        ctx.out = None;
        tick.last = ctx.tick.last;
        finish(&mut ctx);
        if held {
            crate::pause::release_expired(&mut ctx.guards);
        }
        if spec.flags.contains(Flags::TX_CONTROL) {
            // MULTI starts an empty queue; EXEC/DISCARD/RESET end it.
            let queued = ctx.session.multi.as_ref().map_or(0, Vec::len);
            ctx.session
                .handle
                .multi_queued
                .store(queued, Ordering::Relaxed);
        }
        if !ctx.ready.is_empty() {
            // Blocked clients first, before the locks go (see crate::blocking).
            self.serve_held(&mut ctx);
            tick.last = ctx.tick.last;
        }
        let ready = std::mem::take(&mut ctx.ready);
        (reply, ready)
    }

    /// Lock the shards a command needs, in ascending order.
    fn lock_for<'a>(
        &'a self,
        session: &Session,
        keys: Keys,
        flags: Flags,
        argv: &[Bytes],
        shared: bool,
    ) -> Guards<'a> {
        let ks = &self.keyspace;
        if keys == Keys::None
            && !flags.contains(Flags::SCRIPT)
            && !flags.contains(Flags::WRITE)
            && !self.every_shard(flags, argv)
        {
            // PING, ECHO, CLIENT ...: no key, no lock.
            return Guards::None;
        }
        if self.every_shard(flags, argv)
            || (flags.contains(Flags::SCRIPT)
                && self
                    .families
                    .script_takes_every_shard(&self.scripting, argv))
        {
            return Guards::Many(self.lock_all_shards());
        }
        if self.blocking.any() && (flags.contains(Flags::WRITE) || keys == Keys::Queued) {
            if let Some(guards) = self.lock_with_waiters(session, keys, argv) {
                return guards;
            }
        }
        let mut shards: Vec<usize> = Vec::new();
        let mut all = false;
        if keys == Keys::Queued {
            for queued in session.multi.iter().flatten() {
                let Ok(qid) = self.resolve(queued) else {
                    continue;
                };
                let qspec = self.commands.specs[qid];
                if self.every_shard(qspec.flags, queued)
                    || qspec.flags.contains(Flags::SHARD_WALK)
                    || qspec.flags.contains(Flags::SCRIPT)
                {
                    all = true;
                    break;
                }
                self.key_shards(qspec.keys, queued, &mut shards);
            }
            shards.extend(
                session
                    .watched_live
                    .iter()
                    .map(|(_, k)| self.keyspace.shard_of(k)),
            );
        } else {
            // Fast path: one key, one lock, no allocation.
            if let Keys::Range { first, last, .. } = keys {
                if first == last && first > 0 {
                    if let Some(k) = argv.get(first as usize) {
                        let s = ks.shard_of(k);
                        if shared {
                            return Guards::Read(s, ks.read(s));
                        }
                        return Guards::One(s, ks.lock(s));
                    }
                }
            }
            // Room for a key per argument at once: a list grown one key at a
            // time reallocates at 4, 8, 16, ...
            shards.reserve_exact(argv.len());
            self.key_shards(keys, argv, &mut shards);
        }
        if all {
            return Guards::Many(self.lock_all_shards());
        }
        shards.sort_unstable();
        shards.dedup();
        match shards.as_slice() {
            [] => Guards::None,
            [s] => Guards::One(*s, ks.lock(*s)),
            _ => Guards::Many(self.lock_shards(&shards)),
        }
    }

    /// SHUTDOWN while a script is past `busy-reply-threshold`: only NOSAVE is
    /// allowed, and it stops the server without waiting for the script's locks.
    fn shutdown_busy(&self, session: &mut Session, argv: &[Bytes]) -> Frame {
        let nosave = argv.len() == 2 && crate::args::is(&argv[1], "NOSAVE");
        if !nosave {
            return err(CmdError::msg(self.scripting.busy.refusal()));
        }
        if let Err(why) = crate::persistence::prepare_shutdown(self, false) {
            crate::logging::log_warning(&why);
        }
        self.scripting.shutdown.store(true, Ordering::SeqCst);
        self.persist.shutdown_done.store(true, Ordering::SeqCst);
        self.request_shutdown();
        session.handle.kill();
        Frame::ok()
    }

    /// Append the shards of the keys of `argv` to `out`: their positions
    /// first, each then replaced by its key's shard, in the same list.
    fn key_shards(&self, keys: Keys, argv: &[Bytes], out: &mut Vec<usize>) {
        let at = out.len();
        keys.positions(argv, out);
        for p in &mut out[at..] {
            *p = self.keyspace.shard_of(&argv[*p]);
        }
    }
}

/// Run the handler of command `id` inside `ctx`, catching any panic so a bug in one
/// handler costs one error reply, not the server.
pub(crate) fn run(ctx: &mut Ctx<'_>, id: usize, argv: &[Bytes]) -> Frame {
    let engine = ctx.engine;
    let spec = engine.commands.specs[id];
    let start = ctx.tick.last;
    let dirty_before = ctx.dirty;
    let effects_before = ctx.effects.len();
    ctx.rewrite = None;
    ctx.modified = None;
    let skip = if spec.subcommands.is_empty() && engine.commands.parent[id] != id {
        2
    } else {
        1
    };
    let mut args = Args::new(argv, skip);
    let track_new = crate::notify::track_created(ctx, spec);
    let result = catch_unwind(AssertUnwindSafe(|| (spec.run)(ctx, &mut args)));
    if ctx.must_write.is_some() {
        // Run again holding the shard exclusively (see Ctx::must_write).
        return Frame::Null;
    }
    let reply = match result {
        Ok(Ok(frame)) => frame,
        Ok(Err(e)) => err(e),
        Err(_) => err(CmdError::Internal(engine.commands.full_name(id))),
    };
    if engine.monitors.active() {
        crate::monitor::feed(ctx, spec, argv);
    }
    let changed = ctx.dirty > dirty_before;
    let tracking = engine.tracking.active();
    if changed && (engine.watches.any() || tracking) {
        let mut touched = Vec::new();
        match ctx.modified.take() {
            Some(keys) => {
                for (db, key) in keys {
                    engine.watches.touch(db, &key);
                    if tracking {
                        touched.push(key);
                    }
                }
            }
            None => {
                let mut pos = Vec::new();
                spec.keys.positions(argv, &mut pos);
                for i in pos {
                    engine.watches.touch(ctx.session.db, &argv[i]);
                    if tracking {
                        touched.push(argv[i].clone());
                    }
                }
            }
        }
        if tracking {
            crate::tracking::changed(ctx, &touched);
        }
    }
    let wakes = !std::mem::take(&mut ctx.wakes_none);
    if changed && wakes && spec.flags.contains(Flags::WRITE) && engine.blocking.any() {
        if engine.every_shard(spec.flags, argv) {
            ctx.ready.extend(engine.blocking.waited_keys());
        } else {
            let mut pos = Vec::new();
            spec.keys.positions(argv, &mut pos);
            ctx.ready.extend(pos.into_iter().map(|i| argv[i].clone()));
        }
    }
    // Keys that expired on access are deleted; log those before the command.
    drain_expired(ctx, effects_before);
    if tracking {
        crate::tracking::after_read(ctx, spec, argv);
    }
    if track_new {
        crate::notify::publish_created(ctx, false);
    }
    if engine.logging() && changed && spec.flags.contains(Flags::WRITE) {
        let effect = ctx.rewrite.take().unwrap_or_else(|| argv.to_vec());
        ctx.effects.push((ctx.session.db, effect));
    }
    let end = crate::cycles::now();
    ctx.tick.last = end;
    let usec = crate::cycles::micros_between(start, end);
    let ncmds = engine.commands.len();
    // Count only changes not already counted by commands nested in this one
    // (EXEC's queued commands count their own).
    let dirty = ctx.dirty - dirty_before.max(ctx.dirty_counted);
    ctx.dirty_counted = ctx.dirty;
    // Serving a blocked client re-runs its command: one call, counted when sent.
    let calls = u64::from(ctx.session.serving.is_none());
    // Like Redis, a command that blocked is timed when it is served, not when
    // it started waiting (a timed-out one never is).
    let tracking =
        ctx.session.blocked.is_none() && engine.config.ops.latency_tracking.load(Ordering::Relaxed);
    engine.stats.with_local(ncmds, |ts| {
        let c = &ts.cmds[id];
        bump(&c.calls, calls);
        bump(&c.usec, usec);
        if let Frame::Error(text) = &reply {
            bump(&c.failed, 1);
            ts.count_error(text);
        }
        if tracking {
            ts.record_latency(id, usec);
        }
        if dirty > 0 {
            bump(&ts.dirty, dirty);
        }
    });
    after_command(ctx, spec, argv, usec);
    reply
}

/// Account for the keys the command's tables found expired on access since
/// the last call: count them, invalidate their WATCHes, log each as `DEL` at
/// effect position `at` (they expired while this command ran: after anything
/// logged before it, before its own effects) and publish `expired`.
#[inline]
pub(crate) fn drain_expired(ctx: &mut Ctx<'_>, at: usize) {
    let mut any = false;
    ctx.guards
        .for_each(|shard| any |= shard.take_lazy_expired_hint());
    if any {
        drain_expired_found(ctx, at);
    }
}

#[cold]
fn drain_expired_found(ctx: &mut Ctx<'_>, at: usize) {
    let engine = ctx.engine;
    let mut expired = 0u64;
    let sink = engine.logging();
    let mut lazy: Vec<(usize, Vec<Bytes>)> = Vec::new();
    let tracking = engine.tracking.active();
    let mut lazy_keys: Vec<Bytes> = Vec::new();
    ctx.guards.for_each(|shard| {
        for db in 0..shard.databases() {
            let t = shard.db(db);
            if t.has_lazy_expired() {
                let class = crate::notify::Class::EXPIRED;
                let notify = engine.config.ops.notify.enabled(class);
                for k in t.drain_lazy_expired() {
                    expired += 1;
                    // Redis treats a watched key that expired as modified.
                    engine.watches.touch(db, k.as_slice());
                    if tracking {
                        lazy_keys.push(Bytes::copy_from_slice(k.as_slice()));
                    }
                    if notify {
                        crate::notify::notify(engine, class, "expired", db, k.as_slice());
                    }
                    if sink {
                        lazy.push((
                            db,
                            vec![
                                Bytes::from_static(b"DEL"),
                                Bytes::copy_from_slice(k.as_slice()),
                            ],
                        ));
                    }
                }
            }
        }
        // What this walk reached is drained: nothing to look at next time.
        shard.take_lazy_expired_hint();
    });
    if expired > 0 {
        engine
            .stats
            .expired_keys
            .fetch_add(expired, Ordering::Relaxed);
    }
    if !lazy_keys.is_empty() {
        crate::tracking::changed(ctx, &lazy_keys);
    }
    if !lazy.is_empty() {
        let at = at.min(ctx.effects.len());
        ctx.effects.splice(at..at, lazy);
    }
}

/// Flush what a top-level command produced: effects to the sink (locks still
/// held) and hit/miss counters.
pub(crate) fn finish(ctx: &mut Ctx<'_>) {
    if ctx.session.master && ctx.session.multi.is_none() && !ctx.session.upstream_raw.is_empty() {
        // A replica applying its master's stream: the command's bytes go on
        // to this server's stream while its locks are held, so a snapshot's
        // flip sees the data and the offset agree.
        let raw = std::mem::take(&mut ctx.session.upstream_raw);
        ctx.engine.repl.feed_raw(&raw);
    }
    let aof = &ctx.engine.persist.aof;
    if ctx.effects.is_empty() {
        if aof.on() {
            let seq = aof.read_barrier();
            if seq != 0 {
                ctx.session.handle.aof_seq.fetch_max(seq, Ordering::Relaxed);
            }
        }
    } else {
        if aof.on() {
            let seq = aof.append(&ctx.effects, ctx.tick.now_ms());
            ctx.session.handle.aof_seq.fetch_max(seq, Ordering::Relaxed);
        }
        if ctx.engine.repl.active() {
            let off = ctx.engine.repl.feed(&ctx.effects);
            if off != 0 {
                ctx.session.handle.woff.store(off, Ordering::Relaxed);
            }
        }
        if let Some(sink) = ctx.engine.sink.as_ref() {
            for (db, argv) in &ctx.effects {
                sink.append(*db, argv);
            }
        }
        ctx.effects.clear();
    }
    if ctx.hits > 0 || ctx.misses > 0 {
        let ncmds = ctx.engine.commands.len();
        ctx.engine.stats.with_local(ncmds, |ts| {
            bump(&ts.keyspace_hits, ctx.hits);
            bump(&ts.keyspace_misses, ctx.misses);
        });
    }
}

/// Run `argv` inside an already running command (EXEC, scripts), with its locks.
pub(crate) fn call_nested(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Frame {
    let engine = ctx.engine;
    let id = match engine.resolve(argv) {
        Ok(id) => id,
        Err(e) => return err(e),
    };
    // The Arc is cloned only for a user with rules: a free one costs one load.
    let checked = ctx.session.user.as_ref().is_some_and(|u| !u.free());
    if let Some(user) = checked.then(|| ctx.session.user.clone()).flatten() {
        let context = if ctx.in_script {
            crate::acl::Context::Lua
        } else {
            crate::acl::Context::Multi
        };
        if let Err(e) = crate::acl::admit(engine, ctx.session, &user, id, argv, context) {
            return err(e);
        }
    }
    let spec = engine.commands.specs[id];
    if engine.every_shard(spec.flags, argv) || spec.flags.contains(Flags::SHARD_WALK) {
        if (0..engine.keyspace.shard_count()).any(|s| !ctx.guards.holds(s)) {
            return err(CmdError::Internal(engine.commands.full_name(id)));
        }
    } else {
        let mut pos = Vec::new();
        spec.keys.positions(argv, &mut pos);
        if pos
            .iter()
            .any(|&i| !ctx.guards.holds(engine.keyspace.shard_of(&argv[i])))
        {
            return err(CmdError::Internal(engine.commands.full_name(id)));
        }
    }
    ctx.nested += 1;
    let reply = run(ctx, id, argv);
    ctx.nested -= 1;
    reply
}

/// After every command (nested ones too): log it if it was slow enough, and
/// sample the latency monitor. A command that blocked is logged when it is
/// served, with the time of the run that served it, not the time it waited.
#[inline]
fn after_command(ctx: &Ctx<'_>, spec: &crate::kernel::CommandSpec, argv: &[Bytes], usec: u64) {
    let engine = ctx.engine;
    let ops = &engine.config.ops;
    let slower = ops
        .slowlog_slower_than_us
        .load(std::sync::atomic::Ordering::Relaxed);
    let monitor = ops
        .latency_monitor_ms
        .load(std::sync::atomic::Ordering::Relaxed);
    let slow = slower >= 0 && usec >= slower as u64;
    if !slow && monitor <= 0 {
        return;
    }
    if ctx.session.blocked.is_some() {
        return;
    }
    let now_s = engine.now_ms() / 1000;
    if monitor > 0 {
        let event = if spec.flags.contains(Flags::FAST) {
            "fast-command"
        } else {
            "command"
        };
        engine
            .latency
            .sample_if_needed(monitor, event, now_s, usec / 1000);
    }
    if slow && !spec.flags.contains(Flags::SKIP_SLOWLOG) {
        let max_len = ops
            .slowlog_max_len
            .load(std::sync::atomic::Ordering::Relaxed)
            .max(0) as usize;
        let handle = &ctx.session.handle;
        if ctx.in_script {
            // A command a script ran has no client of its own, as in Redis.
            engine
                .slowlog
                .push(max_len, now_s, usec, argv, "?:0", Bytes::new());
        } else {
            let name = handle.name.lock().clone().unwrap_or_default();
            engine
                .slowlog
                .push(max_len, now_s, usec, argv, &handle.addr, name);
        }
    }
}

/// Errors counted outside a handler: a protocol error, a command refused before
/// it ran.
impl crate::kernel::Engine {
    /// Count an error reply sent outside command execution (a protocol
    /// error), as Redis counts every error reply in INFO errorstats.
    pub fn count_error_reply(&self, text: &[u8]) {
        self.stats
            .with_local(self.commands.len(), |ts| ts.count_error(text));
    }

    /// The reply to a command refused before it ran (unknown, arity, NOAUTH,
    /// not allowed in MULTI): counted as an error, and as a rejected call of
    /// the command when it was known (`id`, or found again for an arity error).
    pub(crate) fn rejected(
        &self,
        argv: &[bytes::Bytes],
        id: Option<usize>,
        e: crate::error::CmdError,
    ) -> keel_resp::Frame {
        let id = id.or_else(|| match e {
            crate::error::CmdError::WrongArity(_) => {
                let top = self.commands.lookup(argv.first()?)?;
                if self.commands.specs[top].subcommands.is_empty() {
                    Some(top)
                } else {
                    argv.get(1)
                        .and_then(|sub| self.commands.lookup_sub(top, sub))
                        .or(Some(top))
                }
            }
            _ => None,
        });
        let text = e.to_string();
        self.stats.with_local(self.commands.len(), |ts| {
            if let Some(c) = id.and_then(|id| ts.cmds.get(id)) {
                bump(&c.rejected, 1);
            }
            ts.count_error(text.as_bytes());
        });
        keel_resp::Frame::Error(bytes::Bytes::from(text))
    }
}
