//! Blocked clients: the registry of clients waiting for a key to receive data
//! (BLPOP, BLMOVE, BZPOPMIN, ...), and serving them when a write fills the key.
//!
//! A blocking command that finds no data registers a waiter while it still
//! holds the shard locks of its keys, so no write can slip in between its check
//! and its registration. It returns at once; the connection then waits on the
//! waiter's [`BlockSlot`] instead of running its next commands.
//!
//! While anyone waits, a write command also locks the shards of every waiter
//! it could serve ([`Engine::lock_with_waiters`]). A write to a key someone
//! waits on marks the key ready; when the writing command has finished, still
//! under its locks, the executor serves the key ([`Engine::serve_held`]): it
//! re-runs each waiter's command, in the order the waiters blocked, on behalf
//! of the blocked client (with that client's database and protocol). The
//! re-run claims its waiter (removes it from the registry) in the same
//! critical section as its pop, and no other command can see the data first.
//! Giving up (timeout, disconnect) takes the same locks before removing the
//! waiter, so an element is either delivered to the waiter or left in the key,
//! never both and never neither.

use crate::kernel::Ctx;

use crate::declare::{Flags, Keys};
use crate::error::CmdError;
use crate::guards::Guards;
use crate::kernel::Engine;
use crate::session::{ClientHandle, Session};
use bytes::Bytes;
use keel_resp::{Frame, Protocol};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub(crate) mod state;
pub use self::state::{BlockRequest, BlockSlot, BlockWait, Blocking, Serving};
use self::state::{Outcome, Waiter, QUEUE_SLOTS};

impl Engine {
    /// Register `session` as blocked on `keys` (all in the session's database)
    /// running `argv`. Called by a blocking command, with the shard locks of its
    /// keys held.
    pub fn register_block(
        &self,
        session: &mut Session,
        argv: &[Bytes],
        keys: &[Bytes],
        timeout: Option<Duration>,
        timeout_reply: Frame,
    ) {
        let slot = Arc::new(BlockSlot::default());
        let mut shards = Vec::new();
        if let Ok(id) = self.resolve(argv) {
            let mut pos = Vec::new();
            self.commands.specs[id].keys.positions(argv, &mut pos);
            shards.extend(pos.iter().map(|&i| self.keyspace.shard_of(&argv[i])));
        }
        shards.sort_unstable();
        shards.dedup();
        // Copied: slices would keep the whole request buffer alive while blocked.
        let copy = |b: &Bytes| Bytes::copy_from_slice(b);
        let mut declared: Vec<Bytes> = Vec::new();
        if let Ok(id) = self.resolve(argv) {
            let mut pos = Vec::new();
            self.commands.specs[id].keys.positions(argv, &mut pos);
            for i in pos {
                if !declared.contains(&argv[i]) {
                    declared.push(copy(&argv[i]));
                }
            }
        }
        let mut wanted: Vec<Bytes> = Vec::with_capacity(keys.len());
        for k in keys {
            if !wanted.contains(k) {
                wanted.push(copy(k));
            }
        }
        let key_shards: Vec<usize> = wanted.iter().map(|k| self.keyspace.shard_of(k)).collect();
        let id = {
            let mut reg = self.blocking.reg.lock();
            reg.next_id += 1;
            let id = reg.next_id;
            for (k, &shard) in wanted.iter().zip(&key_shards) {
                let q = reg.queues.entry((session.db, k.clone())).or_default();
                q.push_back(id);
                if q.len() == 1 {
                    *reg.names.entry(k.clone()).or_default() += 1;
                    self.blocking.queued_in[shard % QUEUE_SLOTS].fetch_add(1, Ordering::SeqCst);
                }
            }
            reg.waiters.insert(
                id,
                Waiter {
                    db: session.db,
                    key_shards,
                    keys: wanted,
                    declared,
                    shards: shards.clone(),
                    argv: argv.iter().map(copy).collect(),
                    proto: session.proto,
                    handle: session.handle.clone(),
                    slot: slot.clone(),
                },
            );
            self.blocking.count.fetch_add(1, Ordering::SeqCst);
            session.handle.blocked.store(true, Ordering::Relaxed);
            id
        };
        session.blocked = Some(BlockRequest {
            id,
            timeout,
            timeout_reply,
            wait_offset: None,
            slot,
            shards,
        });
    }

    /// Give up the wait of `session` (timeout, disconnect): remove its waiter
    /// unless it was served meanwhile. Afterwards its slot is closed: the reply
    /// there, if any, won. Takes the locks of the blocked command's shards, so
    /// it must be called holding no lock.
    pub fn cancel_block(&self, session: &Session) {
        let Some(req) = session.blocked.as_ref() else {
            return;
        };
        let _guards = self.lock_shards(&req.shards);
        drop(self.blocking.claim(req.id));
    }

    /// The reply of a blocked `session` if its wait is over (served or given
    /// up), clearing the block. `None` while it still waits.
    pub fn block_reply(&self, session: &mut Session) -> Option<Frame> {
        let req = session.blocked.as_ref()?;
        let reply = req.slot.poll_reply()?;
        let req = session.blocked.take()?;
        Some(reply.unwrap_or_else(|| match req.wait_offset {
            Some(off) => Frame::Integer(self.repl.acked(off) as i64),
            None => req.timeout_reply,
        }))
    }

    /// Serve the clients blocked on `keys` (names, any database) now that a
    /// write may have filled them. Runs with no lock held.
    pub(crate) fn serve_ready(&self, keys: Vec<Bytes>) {
        let mut work: VecDeque<Bytes> = VecDeque::new();
        for k in keys {
            if !work.contains(&k) {
                work.push_back(k);
            }
        }
        let mut tick = crate::clock::Tick::new(&*self.clock);
        while let Some(key) = work.pop_front() {
            if !self.blocking.any() {
                return;
            }
            for queue in self.blocking.queues_on(&key, self.databases()) {
                for id in queue {
                    let Some((db, argv, proto, handle)) = self.blocking.waiter_call(id) else {
                        continue;
                    };
                    let mut stand_in = stand_in_for(handle, db, proto, id, &key);
                    let (reply, ready) = self.execute_once(&mut stand_in, &argv, &mut tick, None);
                    queue_ready(&mut work, ready);
                    if !settle(&mut stand_in, reply) {
                        break;
                    }
                }
            }
        }
    }

    /// Lock the shards of a write command that may fill keys clients wait on:
    /// those of its keys and of every waiter it could serve
    /// ([`Blocking::reachable_shards`]), so that it serves them before
    /// releasing its locks ([`Engine::serve_held`]) and no other command sees
    /// the data first. `None` when the command needs every shard anyway (a
    /// transaction with a whole-keyspace command).
    pub(crate) fn lock_with_waiters<'a>(
        &'a self,
        session: &Session,
        keys: Keys,
        argv: &[Bytes],
    ) -> Option<Guards<'a>> {
        let ks = &self.keyspace;
        let mut names: Vec<Bytes> = Vec::new();
        let mut pos = Vec::new();
        let mut want: Vec<usize> = Vec::new();
        if keys == Keys::Queued {
            for queued in session.multi.iter().flatten() {
                let Ok(qid) = self.resolve(queued) else {
                    continue;
                };
                let qspec = self.commands.specs[qid];
                if self.every_shard(qspec.flags, queued) || qspec.flags.contains(Flags::SHARD_WALK)
                {
                    return None;
                }
                pos.clear();
                qspec.keys.positions(queued, &mut pos);
                names.extend(pos.iter().map(|&i| queued[i].clone()));
            }
            want.extend(session.watched_live.iter().map(|(_, k)| ks.shard_of(k)));
        } else {
            keys.positions(argv, &mut pos);
            names.extend(pos.iter().map(|&i| argv[i].clone()));
        }
        want.extend(names.iter().map(|k| ks.shard_of(k)));
        let dbs = self.databases();
        loop {
            want.sort_unstable();
            want.dedup();
            let mut guards = self.lock_shards(&want);
            // Under the locks: nobody waits on these shards (the common case
            // while clients block elsewhere), or every waiter reachable from
            // the command's keys lies in shards held.
            let idle = want.iter().all(|&s| self.blocking.shard_idle(s));
            let mut need = Vec::new();
            if !idle {
                self.blocking
                    .reachable_shards(names.iter().map(|k| &k[..]), dbs, &mut need);
            }
            if need.iter().all(|s| want.binary_search(s).is_ok()) {
                return Some(match guards.len() {
                    0 => Guards::None,
                    1 => {
                        let (i, g) = guards.pop()?;
                        Guards::One(i, g)
                    }
                    _ => Guards::Many(guards),
                });
            }
            drop(guards);
            want.extend(need);
        }
    }

    /// Serve, still under the locks `ctx` holds, the clients blocked on the
    /// keys its command made ready: each waiter's command re-runs in `ctx`
    /// (its session swapped for a stand-in of the blocked client), oldest
    /// waiter first, so the served pops are logged right after the write and
    /// nothing else runs in between. Keys with a waiter needing a shard `ctx`
    /// does not hold stay in `ctx.ready` for [`Engine::serve_ready`].
    pub(crate) fn serve_held(&self, ctx: &mut Ctx<'_>) {
        let mut work: VecDeque<Bytes> = VecDeque::new();
        for k in std::mem::take(&mut ctx.ready) {
            if !work.contains(&k) {
                work.push_back(k);
            }
        }
        let mut left: Vec<Bytes> = Vec::new();
        while let Some(key) = work.pop_front() {
            if !self.blocking.any() {
                break;
            }
            for queue in self.blocking.queues_on(&key, self.databases()) {
                for id in queue {
                    let Some(shards) = self.blocking.waiter_shards(id) else {
                        continue;
                    };
                    if !shards.iter().all(|&s| ctx.guards.holds(s)) {
                        if !left.contains(&key) {
                            left.push(key.clone());
                        }
                        break;
                    }
                    let Some((db, argv, proto, handle)) = self.blocking.waiter_call(id) else {
                        continue;
                    };
                    let Ok(cmd) = self.resolve(&argv) else {
                        continue;
                    };
                    let mut stand_in = stand_in_for(handle, db, proto, id, &key);
                    std::mem::swap(ctx.session, &mut stand_in);
                    ctx.dirty = 0;
                    ctx.dirty_counted = 0;
                    ctx.hits = 0;
                    ctx.misses = 0;
                    let reply = crate::exec::run(ctx, cmd, &argv);
                    crate::exec::finish(ctx);
                    ctx.hits = 0;
                    ctx.misses = 0;
                    std::mem::swap(ctx.session, &mut stand_in);
                    queue_ready(&mut work, ctx.ready.drain(..));
                    if !settle(&mut stand_in, reply) {
                        break;
                    }
                }
            }
        }
        ctx.ready = left;
    }

    /// CLIENT UNBLOCK: end the wait of client `client`, with `error` as its
    /// reply or, without one, the reply of its timeout. Whether it was blocked.
    /// Takes the locks of the blocked command's shards (those `ctx` does not
    /// hold already), as giving up does.
    pub fn unblock_client(&self, ctx: &mut Ctx<'_>, client: u64, error: Option<Frame>) -> bool {
        let Some((id, shards)) = self.blocking.waiter_of_client(client) else {
            return false;
        };
        let mut guards = Vec::new();
        let nested = !matches!(ctx.guards, Guards::None);
        if nested {
            for s in shards.into_iter().filter(|&s| !ctx.guards.holds(s)) {
                // Other locks are held: waiting here could deadlock.
                match self.keyspace.try_lock(s) {
                    Some(g) => guards.push(g),
                    None => return false,
                }
            }
        } else {
            let mut shards = shards;
            shards.sort_unstable();
            shards.dedup();
            guards.extend(self.lock_shards(&shards).into_iter().map(|(_, g)| g));
        }
        let Some(w) = self.blocking.claim(id) else {
            return false;
        };
        match error {
            Some(e) => w.slot.complete(e),
            None => w.slot.close(),
        }
        true
    }

    /// Forget the wait of a client whose connection closed.
    pub(crate) fn drop_block(&self, session: &mut Session) {
        if session.blocked.is_some() {
            self.cancel_block(session);
            session.blocked = None;
        }
    }
}

/// Parse a blocking command's timeout: seconds as a double (`0.1`), `0` for
/// none. Like Redis 7.0, the value is rounded up to whole milliseconds and
/// converted to a 64-bit integer before the sign check: a tiny negative value
/// rounds to 0 (wait forever), and one too large for the integer (`inf`,
/// `1e300`) becomes negative.
pub fn parse_timeout(arg: &[u8]) -> Result<Option<Duration>, CmdError> {
    let secs = keel_store::num::parse_f64(arg)
        .ok_or_else(|| CmdError::err("timeout is not a float or out of range"))?;
    let ms = (secs * 1000.0).ceil();
    // 2^63: the first value a signed 64-bit integer cannot hold.
    if !(0.0..9_223_372_036_854_775_808.0).contains(&ms) {
        return Err(CmdError::err("timeout is negative"));
    }
    let ms = ms as u64;
    Ok((ms > 0).then(|| Duration::from_millis(ms)))
}

impl Ctx<'_> {
    /// The common course of every blocking command. `attempt` is the command's
    /// non-blocking form: `Ok(Some(reply))` when it found data and acted,
    /// `Ok(None)` when every key is empty (and it changed nothing). Without
    /// data the client blocks on `keys` (in the selected database), except
    /// inside EXEC or a script, where the command answers `no_block_reply` at
    /// once. `argv` is the command as sent, re-run to serve the client later.
    /// A wait that times out answers a null array, whatever the command: Redis
    /// 7.0 does so even for BLMOVE, whose non-blocking nil is a null bulk.
    pub fn block_or_run(
        &mut self,
        argv: &[Bytes],
        keys: &[Bytes],
        timeout: Option<Duration>,
        no_block_reply: Frame,
        attempt: impl FnMut(&mut Ctx<'_>) -> Result<Option<Frame>, CmdError>,
    ) -> Result<Frame, CmdError> {
        self.block_or_attempt(argv, keys, timeout, no_block_reply, true, attempt)
    }

    /// [`Ctx::block_or_run`] for commands that read without taking (XREAD,
    /// and XREADGROUP, whose read of one group leaves other groups' waiters
    /// something to read): `attempt` finding nothing while a write serves
    /// the key leaves the client waiting without stopping the waiters
    /// queued after it, and a new reader never queues behind others, since
    /// it takes nothing from them. `argv` is what is re-run to serve the
    /// client: a command whose arguments depend on the moment it blocked
    /// (XREAD's `$`) passes them resolved (the stream's last id then).
    pub fn block_or_read(
        &mut self,
        argv: &[Bytes],
        keys: &[Bytes],
        timeout: Option<Duration>,
        no_block_reply: Frame,
        attempt: impl FnMut(&mut Ctx<'_>) -> Result<Option<Frame>, CmdError>,
    ) -> Result<Frame, CmdError> {
        self.block_or_attempt(argv, keys, timeout, no_block_reply, false, attempt)
    }

    fn block_or_attempt(
        &mut self,
        argv: &[Bytes],
        keys: &[Bytes],
        timeout: Option<Duration>,
        no_block_reply: Frame,
        takes: bool,
        mut attempt: impl FnMut(&mut Ctx<'_>) -> Result<Option<Frame>, CmdError>,
    ) -> Result<Frame, CmdError> {
        let engine = self.engine;
        if let Some(id) = self.session.serving.as_ref().map(|s| s.id) {
            let (outcome, result) = if !engine.blocking.is_queued(id) {
                (Outcome::Gone, Ok(Frame::Null))
            } else {
                match attempt(self) {
                    Ok(Some(reply)) => (claimed(engine, id), Ok(reply)),
                    Ok(None) if !takes => (Outcome::Unread, Ok(Frame::Null)),
                    Ok(None) => (Outcome::Empty, Ok(Frame::Null)),
                    Err(CmdError::WrongType) => (Outcome::WrongType, Ok(Frame::Null)),
                    Err(e) => (claimed(engine, id), Err(e)),
                }
            };
            if let Some(s) = self.session.serving.as_mut() {
                s.outcome = outcome;
            }
            return result;
        }
        if takes && self.may_block() && engine.blocking.any() {
            // Clients already waiting on a key with data come first (they are
            // being served right now by the thread that wrote it): queue
            // behind them and have this command's thread serve the key too.
            let db = self.db();
            let now = self.now_ms();
            let mut behind = false;
            for k in keys {
                if engine.blocking.has_waiters(db, k) && self.table(k)?.contains(k, now) {
                    behind = true;
                }
            }
            if behind {
                engine.register_block(self.session, argv, keys, timeout, Frame::NullArray);
                self.ready.extend(keys.iter().cloned());
                return Ok(Frame::Null);
            }
        }
        match attempt(self)? {
            Some(reply) => Ok(reply),
            None if self.may_block() => {
                engine.register_block(self.session, argv, keys, timeout, Frame::NullArray);
                Ok(Frame::Null)
            }
            None => Ok(no_block_reply),
        }
    }
}

fn claimed(engine: &Engine, id: u64) -> Outcome {
    // The locks held keep anyone else from removing the waiter since it was
    // found queued; `Gone` only guards against a bug.
    engine
        .blocking
        .claim(id)
        .map_or(Outcome::Gone, Outcome::Claimed)
}

/// The session a blocked client's command is re-run in when it is served: the
/// client's handle, database and protocol, marked as serving waiter `id`.
fn stand_in_for(
    handle: Arc<ClientHandle>,
    db: usize,
    proto: Protocol,
    id: u64,
    key: &Bytes,
) -> Session {
    let mut stand_in = Session::new(handle, true);
    stand_in.db = db;
    stand_in.proto = proto;
    stand_in.serving = Some(Serving {
        id,
        key: key.clone(),
        outcome: Outcome::Pending,
    });
    stand_in
}

/// Add the keys a served command made ready to the keys still to serve, once each.
fn queue_ready(work: &mut VecDeque<Bytes>, ready: impl IntoIterator<Item = Bytes>) {
    for k in ready {
        if !work.contains(&k) {
            work.push_back(k);
        }
    }
}

/// Hand a served waiter its reply. Returns whether later waiters on the same
/// key may still be served: not once the key is found empty.
fn settle(stand_in: &mut Session, reply: Frame) -> bool {
    match stand_in.serving.take().map(|s| s.outcome) {
        Some(Outcome::Claimed(w)) => {
            w.slot.complete(reply);
            true
        }
        Some(Outcome::Gone | Outcome::WrongType | Outcome::Unread) => true,
        // The key is empty: later waiters would find it empty too.
        Some(Outcome::Empty | Outcome::Pending) | None => false,
    }
}
