//! Replication, master side: PSYNC's choice between a partial resync from
//! the backlog and a full sync, the full sync's snapshot written straight
//! into the replica's connection (Redis's diskless sync, without a fork),
//! and the keepalive the stream carries. The stream itself is in [`state`];
//! the socket side (sending the snapshot, then serving the replica as a
//! client with a push feed) is the server's.
//!
//! A full sync's wire form, as Redis 7 sends it: `+FULLRESYNC <replid>
//! <offset>\r\n`, then, to a replica that said `REPLCONF capa eof`,
//! `$EOF:<40 random bytes>\r\n`, the RDB, and the same 40 bytes; to one that
//! did not, `$<length>\r\n` and the RDB. The stream from `<offset>` on
//! follows. `SYNC` gets the RDB part only.

pub mod follow;
pub mod state;

use crate::kernel::Engine;
use crate::persistence::snapshot::{start_image_to, Locks};
use crate::persistence::state::JobKind;
use parking_lot::{Condvar, Mutex};
use state::Replica;
pub use state::{ReplConf, SyncRequest};
use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// Bytes the snapshot writer may get ahead of the replica's socket.
const PIPE_LIMIT: usize = 4 << 20;
/// The writer hands the connection this much at a time.
const CHUNK: usize = 64 << 10;

/// A snapshot on its way from the background writer to a replica's
/// connection: the writer blocks when the socket falls behind.
#[derive(Default)]
pub struct Pipe {
    st: Mutex<PipeState>,
    room: Condvar,
}

#[derive(Default)]
struct PipeState {
    chunks: VecDeque<Vec<u8>>,
    queued: usize,
    /// Set once the writer is done: why it failed, if it did.
    end: Option<Result<(), String>>,
    /// The connection has gone: the writer stops.
    reader_gone: bool,
    waker: Option<Waker>,
}

impl Pipe {
    fn send(&self, chunk: Vec<u8>) -> std::io::Result<()> {
        let mut s = self.st.lock();
        while s.queued >= PIPE_LIMIT && !s.reader_gone {
            self.room.wait(&mut s);
        }
        if s.reader_gone {
            return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        }
        s.queued += chunk.len();
        s.chunks.push_back(chunk);
        if let Some(w) = s.waker.take() {
            w.wake();
        }
        Ok(())
    }

    fn finish(&self, r: Result<(), String>) {
        let mut s = self.st.lock();
        s.end = Some(r);
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    /// The next chunk of the image; `None` at its end, an error when the
    /// writer failed.
    pub fn poll_chunk(&self, cx: &mut Context<'_>) -> Poll<Option<Result<Vec<u8>, String>>> {
        let mut s = self.st.lock();
        if let Some(c) = s.chunks.pop_front() {
            s.queued -= c.len();
            self.room.notify_one();
            return Poll::Ready(Some(Ok(c)));
        }
        match s.end.take() {
            Some(Ok(())) => {
                s.end = Some(Ok(()));
                Poll::Ready(None)
            }
            Some(Err(e)) => Poll::Ready(Some(Err(e))),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// The replica's connection is gone: the writer stops at its next chunk.
    pub fn close(&self) {
        let mut s = self.st.lock();
        s.reader_gone = true;
        s.chunks.clear();
        s.queued = 0;
        self.room.notify_all();
    }
}

/// The writer's end of a [`Pipe`].
struct PipeWriter {
    pipe: Arc<Pipe>,
    buf: Vec<u8>,
}

impl std::io::Write for PipeWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.pipe.send(chunk)
    }
}

/// A started full sync: the line to send first, and the image to follow.
pub struct FullSync {
    pub line: String,
    pub pipe: Arc<Pipe>,
}

/// Start the snapshot for `r`: join it to the stream at the flip's instant
/// and write the image into a pipe the connection drains. `None` while
/// another background job (BGSAVE, BGREWRITEAOF, another sync) holds the
/// tables' snapshot: the connection tries again shortly, as a Redis
/// replica waits for the next BGSAVE.
pub fn start_full_sync(engine: &Engine, r: &Arc<Replica>) -> Option<FullSync> {
    let pipe = Arc::new(Pipe::default());
    let w = PipeWriter {
        pipe: pipe.clone(),
        buf: Vec::with_capacity(CHUNK),
    };
    let done = pipe.clone();
    let mut line = String::new();
    let started = start_image_to(
        engine,
        Locks::Take,
        &mut || {
            let (replid, offset) = engine.repl.attach_full(r.clone());
            line = format!("+FULLRESYNC {replid} {offset}\r\n");
        },
        w,
        Box::new(move |res: std::io::Result<()>| {
            done.finish(res.map_err(|e| e.to_string()));
        }),
    );
    match started {
        Ok(()) => {
            crate::logging::log_notice(&format!(
                "Starting BGSAVE for SYNC with target: replicas sockets (fork-free snapshot) \
                 for client id {}",
                r.client_id
            ));
            Some(FullSync { line, pipe })
        }
        Err(JobKind::Bgsave | JobKind::Rewrite | JobKind::Replication) => None,
    }
}

/// Forty random hex digits: a replication id, or a diskless sync's EOF mark.
pub fn random_id(engine: &Engine) -> String {
    (0..40)
        .map(|_| char::from(b"0123456789abcdef"[(engine.rng.next_u64() % 16) as usize]))
        .collect()
}

/// The cron's part: the keepalive PING every `repl-ping-replica-period`
/// seconds while replicas are attached (Redis's, so a replica's
/// `repl-timeout` does not fire on an idle master).
pub fn cron(engine: &Engine, now_ms: u64) {
    let m = &engine.repl;
    let c = &engine.config;
    let min = c.get_i64("min-replicas-to-write").max(0) as usize;
    if min > 0 || m.refuses_writes() {
        m.count_good(min, c.get_i64("min-replicas-max-lag").max(0) as u64, now_ms);
    }
    if !m.active() {
        return;
    }
    m.expire_backlog(c.get_i64("repl-backlog-ttl").max(0) as u64, now_ms, || {
        random_id(engine)
    });
    let size = engine.config.get_i64("repl-backlog-size").max(1) as usize;
    m.resize_backlog(size);
    let period = engine.config.get_i64("repl-ping-replica-period").max(1) as u64 * 1000;
    if m.replicas().is_empty() || now_ms.saturating_sub(m.last_ping_ms()) < period {
        return;
    }
    m.set_last_ping_ms(now_ms);
    m.feed_plain(&[b"PING"]);
}

/// What replication refuses: on a replica, to a client that is not its
/// master, writes while `replica-read-only` is on (an EXEC whose queue
/// holds one too) and, with `replica-serve-stale-data no`, anything not
/// flagged stale while the link to the master is down; on a master, writes
/// while fewer replicas than `min-replicas-to-write` acknowledge within
/// `min-replicas-max-lag`; and while a replica loads a full sync,
/// `-LOADING` to anything not flagged loading. Redis's texts and order;
/// inside MULTI the transaction is flagged as for any refusal.
pub(crate) fn refusal(
    engine: &Engine,
    session: &mut crate::session::Session,
    spec: &crate::kernel::CommandSpec,
) -> Option<crate::error::CmdError> {
    use crate::declare::Flags;
    if session.master {
        return None;
    }
    let f = &engine.follow;
    if f.loading.load(std::sync::atomic::Ordering::Relaxed) && !spec.flags.contains(Flags::LOADING)
    {
        let text = "LOADING Redis is loading the dataset in memory";
        return Some(crate::transaction::refuse(engine, session, spec, text));
    }
    let writes = || crate::transaction::writes(engine, session, spec);
    if !f.following() {
        // A master short of good replicas (min-replicas-to-write).
        if engine.repl.refuses_writes() && writes() {
            let text = "NOREPLICAS Not enough good replicas to write.";
            return Some(crate::transaction::refuse(engine, session, spec, text));
        }
        return None;
    }
    if engine.config.get_bool("replica-read-only") && writes() {
        let text = "READONLY You can't write against a read only replica.";
        return Some(crate::transaction::refuse(engine, session, spec, text));
    }
    if !f.link_up()
        && !spec.flags.contains(Flags::STALE)
        && !engine.config.get_bool("replica-serve-stale-data")
    {
        let text =
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
        return Some(crate::transaction::refuse(engine, session, spec, text));
    }
    None
}

/// Replace the dataset with the snapshot a master sent (saved at `path`),
/// every shard locked while it loads: clients get `-LOADING` (or, already
/// waiting on a lock, wait) rather than see half of it, and one that fails
/// to load leaves nothing. Tracked keys are
/// invalidated as by FLUSHALL.
pub fn load_full_sync(
    engine: &Engine,
    path: &std::path::Path,
) -> Result<crate::persistence::load::Loaded, String> {
    let loading = &engine.follow.loading;
    loading.store(true, std::sync::atomic::Ordering::Relaxed);
    let ks = &engine.keyspace;
    let mut shards: Vec<_> = (0..ks.shard_count()).map(|i| ks.lock(i)).collect();
    for g in shards.iter_mut() {
        for db in 0..g.databases() {
            g.db(db).clear();
        }
    }
    let now = engine.now_ms();
    let loaded = crate::persistence::load::load_rdb(engine, path, &mut |db, key, value, expire| {
        shards[ks.shard_of(key)]
            .db(db)
            .insert(key, value, expire, now);
    });
    if loaded.is_err() {
        // Nothing of a snapshot that failed to load is served as if it were
        // the master's dataset: the replica is left empty, as Redis leaves
        // it, until the next sync.
        for g in shards.iter_mut() {
            for db in 0..g.databases() {
                g.db(db).clear();
            }
        }
    }
    drop(shards);
    loading.store(false, std::sync::atomic::Ordering::Relaxed);
    engine.tracking.flushed(engine);
    loaded
}

/// Block `session`'s WAIT until `want` replicas acknowledge `offset` or the
/// timeout ends (then its reply is how many did). The replicas are asked
/// for an acknowledgement at once (`REPLCONF GETACK *` in the stream).
pub fn block_wait(
    engine: &Engine,
    session: &mut crate::session::Session,
    argv: &[bytes::Bytes],
    timeout: Option<std::time::Duration>,
    offset: u64,
    want: usize,
) {
    engine.register_block(session, argv, &[], timeout, keel_resp::Frame::Integer(0));
    if let Some(req) = session.blocked.as_mut() {
        req.wait_offset = Some(offset);
        engine.repl.add_wait(req.id, offset, want);
    }
    engine.repl.feed_plain(&[b"REPLCONF", b"GETACK", b"*"]);
}

/// A replica acknowledged an offset: answer the WAITs that now have enough
/// replicas, and forget those whose wait ended otherwise.
pub fn acks_arrived(engine: &Engine) {
    if !engine.repl.waiting() {
        return;
    }
    for (id, n) in engine.repl.satisfied_waits() {
        if let Some(w) = engine.blocking.claim(id) {
            w.slot.complete(keel_resp::Frame::Integer(n as i64));
        }
    }
    engine
        .repl
        .retain_waits(|id| engine.blocking.waiter_shards(id).is_some());
}
