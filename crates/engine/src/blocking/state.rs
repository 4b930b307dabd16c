//! The blocked-client registry's data: [`Blocking`], held by the Engine, and
//! the [`BlockRequest`] and [`Serving`] a session keeps. Names no session or
//! engine; the parent module drives it.

use crate::client::ClientHandle;
use bytes::Bytes;
use hashbrown::HashMap;
use keel_resp::{Frame, Protocol};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Where the reply of a blocked client lands.
#[derive(Default)]
pub struct BlockSlot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
pub(crate) struct SlotState {
    reply: Option<Frame>,
    /// No reply will come any more (served, or given up).
    closed: bool,
    waker: Option<Waker>,
}

impl BlockSlot {
    pub(crate) fn complete(&self, reply: Frame) {
        let mut s = self.state.lock();
        if !s.closed {
            s.reply = Some(reply);
        }
        s.closed = true;
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    pub(crate) fn close(&self) {
        let mut s = self.state.lock();
        s.closed = true;
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    /// `None` while the client still waits; `Some(reply)` once it is over, with
    /// `Some(None)` when it was given up without a reply.
    pub fn poll_reply(&self) -> Option<Option<Frame>> {
        let mut s = self.state.lock();
        s.closed.then(|| s.reply.take())
    }
}

/// A future that resolves when the blocked client's wait is over: served, or
/// its waiter removed without a reply. The reply stays in the slot for
/// `Engine::block_reply` (the parent module).
pub struct BlockWait(pub Arc<BlockSlot>);

impl Future for BlockWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.0.state.lock();
        if s.closed {
            return Poll::Ready(());
        }
        s.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// What a blocked session waits for; set by the blocking command, read by the
/// network layer.
pub struct BlockRequest {
    pub id: u64,
    /// How long to wait; `None` waits forever.
    pub timeout: Option<Duration>,
    /// The reply when the wait ends without data.
    pub timeout_reply: Frame,
    /// A WAIT's offset: its reply at the timeout is how many replicas have
    /// acknowledged it by then.
    pub(crate) wait_offset: Option<u64>,
    pub slot: Arc<BlockSlot>,
    /// The shards the command locks, ascending: giving up takes them too.
    pub(crate) shards: Vec<usize>,
}

/// One registered waiter.
pub(crate) struct Waiter {
    pub(crate) db: usize,
    pub(crate) keys: Vec<Bytes>,
    /// The shard of each of `keys`.
    pub(crate) key_shards: Vec<usize>,
    /// Every key its command declares (a BLMOVE's destination too) and their
    /// shards, ascending: what serving it locks.
    pub(crate) declared: Vec<Bytes>,
    pub(crate) shards: Vec<usize>,
    pub(crate) argv: Vec<Bytes>,
    pub(crate) proto: Protocol,
    pub(crate) handle: Arc<ClientHandle>,
    pub(crate) slot: Arc<BlockSlot>,
}

impl Drop for Waiter {
    fn drop(&mut self) {
        // A waiter dropped without a reply (given up, or a bug while serving)
        // must not leave its client waiting forever.
        self.slot.close();
    }
}

/// How the re-run of a waiter's command went.
pub(crate) enum Outcome {
    /// Not decided yet (the handler did not reach the blocking machinery).
    Pending,
    /// The waiter had already left (timed out, disconnected or served).
    Gone,
    /// No data: the waiter stays queued.
    Empty,
    /// The key holds another type: the waiter stays queued (Redis 7.0 keeps
    /// such a client blocked), later waiters may still be served.
    WrongType,
    /// Served: the reply goes to this waiter.
    Claimed(Waiter),
    /// A reader that takes nothing (XREAD) found nothing newer than it
    /// waits for: it stays queued, and later waiters may still be served.
    Unread,
}

/// Set on the stand-in session that re-runs a waiter's command.
pub struct Serving {
    pub(crate) id: u64,
    /// The key whose write serves the client: a stream reader answers for
    /// that key alone, as Redis does.
    pub key: Bytes,
    pub(crate) outcome: Outcome,
}

#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) next_id: u64,
    pub(crate) queues: HashMap<(usize, Bytes), VecDeque<u64>>,
    /// How many databases have a queue on each key name: a write looks its
    /// keys up here, without copying them, before anything else.
    pub(crate) names: HashMap<Bytes, usize>,
    pub(crate) waiters: HashMap<u64, Waiter>,
}

impl Registry {
    fn unlink(&mut self, id: u64, queued_in: &[AtomicU32]) -> Option<Waiter> {
        let w = self.waiters.remove(&id)?;
        for (key, &shard) in w.keys.iter().zip(&w.key_shards) {
            let k = (w.db, key.clone());
            if let Some(q) = self.queues.get_mut(&k) {
                q.retain(|x| *x != id);
                if q.is_empty() {
                    self.queues.remove(&k);
                    queued_in[shard % QUEUE_SLOTS].fetch_sub(1, Ordering::SeqCst);
                    if let Some(n) = self.names.get_mut(&k.1) {
                        *n -= 1;
                        if *n == 0 {
                            self.names.remove(&k.1);
                        }
                    }
                }
            }
        }
        Some(w)
    }
}

/// Slots of [`Blocking::queued_in`]; shards share a slot modulo this.
pub(crate) const QUEUE_SLOTS: usize = 64;

/// The engine-wide registry of blocked clients.
pub struct Blocking {
    /// Number of waiters; lets writes skip all of this when nobody waits.
    pub(crate) count: AtomicUsize,
    /// Number of queues on keys of each shard (shards beyond the slots
    /// share them). Changed only under the key's shard lock, so a command
    /// holding a shard reads its slot exactly: zero means no waiter there,
    /// and the command need not look at the registry at all.
    pub(crate) queued_in: [AtomicU32; QUEUE_SLOTS],
    pub(crate) reg: Mutex<Registry>,
}

impl Default for Blocking {
    fn default() -> Self {
        Blocking {
            count: AtomicUsize::new(0),
            queued_in: std::array::from_fn(|_| AtomicU32::new(0)),
            reg: Mutex::default(),
        }
    }
}

impl Blocking {
    /// Whether any client is blocked.
    pub fn any(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// Whether no client waits on a key of `shard`; exact while the caller
    /// holds that shard's lock.
    pub(crate) fn shard_idle(&self, shard: usize) -> bool {
        self.queued_in[shard % QUEUE_SLOTS].load(Ordering::SeqCst) == 0
    }

    /// Number of blocked clients (INFO `blocked_clients`).
    pub fn blocked_clients(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Whether a client waits on `key` in `db`.
    pub fn has_waiters(&self, db: usize, key: &[u8]) -> bool {
        if !self.any() {
            return false;
        }
        let reg = self.reg.lock();
        reg.names.contains_key(key) && reg.queues.contains_key(&(db, Bytes::copy_from_slice(key)))
    }

    pub(crate) fn is_queued(&self, id: u64) -> bool {
        self.reg.lock().waiters.contains_key(&id)
    }

    /// Every key anyone waits on (for writes that change whole databases).
    pub(crate) fn waited_keys(&self) -> Vec<Bytes> {
        let reg = self.reg.lock();
        reg.queues.keys().map(|(_, k)| k.clone()).collect()
    }

    /// Remove waiter `id`; called with the shard locks of its command held.
    pub(crate) fn claim(&self, id: u64) -> Option<Waiter> {
        let w = self.reg.lock().unlink(id, &self.queued_in)?;
        w.handle.blocked.store(false, Ordering::Relaxed);
        self.count.fetch_sub(1, Ordering::SeqCst);
        Some(w)
    }

    /// The command, database, protocol and client of waiter `id`.
    pub(crate) fn waiter_call(
        &self,
        id: u64,
    ) -> Option<(usize, Vec<Bytes>, Protocol, Arc<ClientHandle>)> {
        let reg = self.reg.lock();
        let w = reg.waiters.get(&id)?;
        Some((w.db, w.argv.clone(), w.proto, w.handle.clone()))
    }

    /// The shards serving waiter `id` locks.
    pub(crate) fn waiter_shards(&self, id: u64) -> Option<Vec<usize>> {
        self.reg.lock().waiters.get(&id).map(|w| w.shards.clone())
    }

    /// Add to `out` the shards of every waiter a write to `keys` (names, any
    /// database) could serve, directly or through the keys those waiters
    /// write in turn (a BLMOVE's destination). A writer that holds them all
    /// serves its waiters before releasing its locks. While it holds them no
    /// waiter can join on a key it reaches (registering takes the key's shard
    /// lock), so the set cannot grow under it.
    pub fn reachable_shards<'k>(
        &self,
        keys: impl Iterator<Item = &'k [u8]>,
        databases: usize,
        out: &mut Vec<usize>,
    ) {
        let reg = self.reg.lock();
        let mut work: Vec<Bytes> = keys
            .filter(|k| reg.names.contains_key(*k))
            .map(Bytes::copy_from_slice)
            .collect();
        if work.is_empty() {
            return;
        }
        let mut seen: hashbrown::HashSet<Bytes> = work.iter().cloned().collect();
        while let Some(key) = work.pop() {
            if !reg.names.contains_key(&key) {
                continue;
            }
            for db in 0..databases {
                let Some(q) = reg.queues.get(&(db, key.clone())) else {
                    continue;
                };
                for id in q {
                    let Some(w) = reg.waiters.get(id) else {
                        continue;
                    };
                    out.extend(&w.shards);
                    for k in &w.declared {
                        if seen.insert(k.clone()) {
                            work.push(k.clone());
                        }
                    }
                }
            }
        }
    }

    /// Waiter `id` of client `client`, if that client is blocked.
    pub(crate) fn waiter_of_client(&self, client: u64) -> Option<(u64, Vec<usize>)> {
        let reg = self.reg.lock();
        reg.waiters
            .iter()
            .find(|(_, w)| w.handle.id == client)
            .map(|(id, w)| (*id, w.shards.clone()))
    }

    /// The queues on `key` in every database, each in blocking order.
    pub(crate) fn queues_on(&self, key: &[u8], databases: usize) -> Vec<Vec<u64>> {
        let reg = self.reg.lock();
        let key = Bytes::copy_from_slice(key);
        (0..databases)
            .filter_map(|db| reg.queues.get(&(db, key.clone())))
            .map(|q| q.iter().copied().collect())
            .collect()
    }
}
