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
    if !m.active() {
        return;
    }
    let size = engine.config.get_i64("repl-backlog-size").max(1) as usize;
    m.resize_backlog(size);
    let period = engine.config.get_i64("repl-ping-replica-period").max(1) as u64 * 1000;
    if m.replicas().is_empty() || now_ms.saturating_sub(m.last_ping_ms()) < period {
        return;
    }
    m.set_last_ping_ms(now_ms);
    m.feed_plain(&[b"PING"]);
}
