//! One client as other connections see it: [`ClientHandle`], the part of a
//! connection CLIENT LIST, CLIENT KILL, PUBLISH and MONITOR read and act on
//! (atomics and small mutexes), the [`MonitorFeed`] that queues pushed lines for
//! it, and how its output buffer limits (`crate::outbuf`) judge it.
//!
//! Names nothing above it: sessions, registries and the engine build on it.

use crate::outbuf::{NORMAL, PUBSUB, REPLICA, REPLY_CHUNK_BYTES};
use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// What other connections can see of, and do to, one client.
pub struct ClientHandle {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    pub created_ms: u64,
    pub name: Mutex<Option<Bytes>>,
    pub lib_name: Mutex<Option<Bytes>>,
    pub lib_ver: Mutex<Option<Bytes>>,
    pub db: AtomicUsize,
    /// Command-table id of the last command run, for CLIENT LIST `cmd=`.
    pub last_cmd: AtomicUsize,
    /// The AOF position this client's replies wait for under `appendfsync
    /// always` (0: none); set by the executor, taken by the connection.
    pub aof_seq: std::sync::atomic::AtomicU64,
    pub last_interaction_ms: AtomicU64,
    pub resp: AtomicU8,
    pub in_multi: AtomicBool,
    pub watching: AtomicUsize,
    pub killed: AtomicBool,
    /// CLIENT NO-EVICT / NO-TOUCH, mirrored from the session for CLIENT LIST `flags=`.
    pub no_evict: AtomicBool,
    pub no_touch: AtomicBool,
    /// Commands queued since MULTI, for CLIENT LIST `multi=`.
    pub multi_queued: AtomicUsize,
    /// The replication offset right after this client's last write that
    /// fed the stream: what WAIT waits for replicas to acknowledge.
    pub woff: AtomicU64,
    /// Installed by the network layer: wakes the connection task, which then
    /// looks at `killed` and `shrink`.
    pub waker: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    /// The socket's descriptor, for CLIENT LIST `fd=`; -1 without one.
    pub fd: AtomicI32,
    /// What the connection's buffers hold, published by the connection.
    pub bufs: BufferStats,
    /// Set by the clients cron: give back buffer space this client is not using.
    pub shrink: AtomicBool,
    /// The client runs MONITOR, for CLIENT LIST `flags=O`.
    pub monitor: AtomicBool,
    /// The client is a replica's link (`flags=S`, the `replica` limits).
    pub replica: AtomicBool,
    /// The client is this replica's link to its master (`flags=M`).
    pub master: AtomicBool,
    /// A command of the client waits for CLIENT PAUSE to end (`flags=b`).
    pub paused: AtomicBool,
    /// Waiting in a blocking command, for CLIENT LIST `flags=b`.
    pub blocked: AtomicBool,
    /// Channel, pattern and shard-channel subscriptions, for CLIENT LIST.
    pub subs: [AtomicUsize; 3],
    /// CLIENT TRACKING state for CLIENT LIST (`tracking::ON`, `BCAST`, `BROKEN`).
    pub tracking: AtomicU8,
    /// CLIENT TRACKING's REDIRECT id (0: none), -1 when not tracking.
    pub redirect: std::sync::atomic::AtomicI64,
    /// Messages queued for this client between replies (subscriptions,
    /// invalidations), created when the first is due.
    pub pushes: std::sync::OnceLock<Arc<MonitorFeed>>,
    /// The ACL user the client is logged in as, for CLIENT LIST and CLIENT KILL USER.
    pub user: Mutex<Arc<str>>,
}

/// A connection's buffer sizes as its task last published them, for CLIENT
/// LIST, INFO memory and the clients cron. Written by that task only.
#[derive(Default)]
pub struct BufferStats {
    /// Bytes in the query buffer (received, not yet consumed).
    pub qbuf: AtomicUsize,
    /// Space the query buffer holds, used or free.
    pub qbuf_cap: AtomicUsize,
    /// The most `qbuf` held since the clients cron last looked.
    pub qbuf_peak: AtomicUsize,
    /// Reply bytes waiting for the socket.
    pub out_pending: AtomicUsize,
    /// Space the reply buffer holds.
    pub out_cap: AtomicUsize,
    /// The most reply bytes one batch produced since the clients cron last looked.
    pub out_peak: AtomicUsize,
    /// Queued pushes and the output buffer limits (`client-output-buffer-limit`).
    pub output: crate::outbuf::OutputState,
}

impl BufferStats {
    fn get(v: &AtomicUsize) -> usize {
        v.load(Ordering::Relaxed)
    }

    /// Store `n` as the connection's task does: plain load and store, no
    /// read-modify-write, since it is the only writer.
    pub fn set(v: &AtomicUsize, n: usize) {
        if v.load(Ordering::Relaxed) != n {
            v.store(n, Ordering::Relaxed);
        }
    }

    pub fn raise(v: &AtomicUsize, n: usize) {
        if v.load(Ordering::Relaxed) < n {
            v.store(n, Ordering::Relaxed);
        }
    }

    pub fn qbuf(&self) -> usize {
        Self::get(&self.qbuf)
    }

    pub fn qbuf_free(&self) -> usize {
        Self::get(&self.qbuf_cap).saturating_sub(self.qbuf())
    }

    pub fn out_pending(&self) -> usize {
        Self::get(&self.out_pending)
    }

    pub fn out_cap(&self) -> usize {
        Self::get(&self.out_cap)
    }

    /// Bytes the buffers hold, used or not.
    pub fn held(&self) -> usize {
        Self::get(&self.qbuf_cap).max(self.qbuf()) + self.out_cap()
    }
}

impl ClientHandle {
    pub fn new(id: u64, addr: String, laddr: String, now_ms: u64) -> ClientHandle {
        ClientHandle {
            id,
            addr,
            laddr,
            created_ms: now_ms,
            name: Mutex::new(None),
            lib_name: Mutex::new(None),
            lib_ver: Mutex::new(None),
            db: AtomicUsize::new(0),
            last_cmd: AtomicUsize::new(usize::MAX),
            aof_seq: std::sync::atomic::AtomicU64::new(0),
            last_interaction_ms: AtomicU64::new(now_ms),
            resp: AtomicU8::new(2),
            in_multi: AtomicBool::new(false),
            watching: AtomicUsize::new(0),
            killed: AtomicBool::new(false),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            multi_queued: AtomicUsize::new(0),
            woff: AtomicU64::new(0),
            waker: Mutex::new(None),
            fd: AtomicI32::new(-1),
            bufs: BufferStats::default(),
            shrink: AtomicBool::new(false),
            monitor: AtomicBool::new(false),
            replica: AtomicBool::new(false),
            master: AtomicBool::new(false),
            paused: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            subs: Default::default(),
            tracking: AtomicU8::new(0),
            redirect: std::sync::atomic::AtomicI64::new(-1),
            pushes: std::sync::OnceLock::new(),
            user: Mutex::new(Arc::from("default")),
        }
    }

    /// This client's push feed, and whether this call created it.
    /// The feed counts toward the client's output buffer limits.
    pub fn push_feed(self: &Arc<Self>) -> (Arc<MonitorFeed>, bool) {
        let mut created = false;
        let feed = self.pushes.get_or_init(|| {
            created = true;
            Arc::new(MonitorFeed::for_client(self))
        });
        (feed.clone(), created)
    }

    /// Ask the connection to close (CLIENT KILL, SHUTDOWN).
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Wake the connection task wherever it waits (reading, writing, blocked).
    pub fn wake(&self) {
        if let Some(wake) = self.waker.lock().as_ref() {
            wake();
        }
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Relaxed)
    }
}

/// What one monitoring connection has not written yet.
pub struct MonitorFeed {
    pub(crate) client_id: u64,
    state: Mutex<FeedState>,
    /// The client fed, when its output buffer limits apply to the feed: a
    /// push that takes it past them is dropped and the client closed.
    /// Weak: the client's handle keeps its own push feed.
    owner: Option<std::sync::Weak<ClientHandle>>,
}

#[derive(Default)]
struct FeedState {
    lines: BytesMut,
    waker: Option<Waker>,
    closed: bool,
}

impl MonitorFeed {
    pub(crate) fn new(client_id: u64) -> MonitorFeed {
        MonitorFeed {
            client_id,
            state: Mutex::new(FeedState::default()),
            owner: None,
        }
    }

    /// A feed for the client of `handle`, under its output buffer limits.
    pub(crate) fn for_client(handle: &Arc<ClientHandle>) -> MonitorFeed {
        MonitorFeed {
            client_id: handle.id,
            state: Mutex::new(FeedState::default()),
            owner: Some(Arc::downgrade(handle)),
        }
    }

    pub(crate) fn push(&self, line: &[u8]) {
        let mut s = self.state.lock();
        if s.closed {
            return;
        }
        s.lines.extend_from_slice(line);
        if let Some(h) = self.owner.as_ref().and_then(std::sync::Weak::upgrade) {
            if !self.within_limits(&h, &mut s, line.len()) {
                return;
            }
        }
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    /// Account for what `s` queues for `h`; past its output buffer limits the
    /// queue is dropped, nothing more is taken, and the client is closed,
    /// whether or not its task is running.
    fn within_limits(&self, h: &ClientHandle, s: &mut FeedState, added: usize) -> bool {
        let queued = &h.bufs.output.queued;
        queued.fetch_add(added, Ordering::Relaxed);
        // A connection not stuck on its socket judges its limits itself when
        // it writes what it takes; only one that is stuck needs the push to.
        let small = s.lines.len() <= REPLY_CHUNK_BYTES;
        let stuck = h.bufs.out_pending() > 0;
        if small && !h.bufs.output.is_over() && !(stuck && limited(h)) {
            return true;
        }
        let was_soft = soft_pending(h);
        if !over_limit_on_push(h, pending_of(h)) {
            if !was_soft && soft_pending(h) {
                // This push took it past its soft limit: its connection, maybe
                // waiting on a full socket with nothing else to wake it, must
                // start counting the soft seconds.
                h.wake();
            }
            return true;
        }
        s.closed = true;
        queued.fetch_sub(s.lines.len(), Ordering::Relaxed);
        s.lines = BytesMut::new();
        h.kill();
        false
    }

    pub(crate) fn close(&self) {
        let mut s = self.state.lock();
        s.closed = true;
        self.unqueue(s.lines.len());
        s.lines.clear();
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    /// Move the pending lines to the end of `out`.
    pub fn take_into(&self, out: &mut BytesMut) {
        let mut s = self.state.lock();
        out.extend_from_slice(&s.lines);
        self.unqueue(s.lines.len());
        s.lines.clear();
    }

    /// `n` queued bytes left the feed: the owner's count of queued pushes
    /// (summed over its feeds) drops by as much.
    fn unqueue(&self, n: usize) {
        if let Some(h) = self.owner.as_ref().and_then(std::sync::Weak::upgrade) {
            if n > 0 {
                h.bufs.output.queued.fetch_sub(n, Ordering::Relaxed);
            }
        }
    }

    /// Bytes waiting in the feed.
    pub fn queued(&self) -> usize {
        self.state.lock().lines.len()
    }

    /// Whether the feed was removed (RESET, disconnect): nothing more comes.
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Resolves when lines are pending (or the feed was closed).
    pub fn ready(&self) -> FeedReady<'_> {
        FeedReady(self)
    }
}

impl Drop for MonitorFeed {
    fn drop(&mut self) {
        let n = self.state.get_mut().lines.len();
        self.unqueue(n);
    }
}

/// See [`MonitorFeed::ready`].
pub struct FeedReady<'a>(&'a MonitorFeed);

impl Future for FeedReady<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.0.state.lock();
        if s.closed || !s.lines.is_empty() {
            return Poll::Ready(());
        }
        s.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// A client's class for the limits: `pubsub` while subscribed to anything.
pub fn class_of(h: &ClientHandle) -> usize {
    if h.replica.load(Ordering::Relaxed) {
        REPLICA
    } else if h.subs.iter().any(|n| n.load(Ordering::Relaxed) > 0) {
        PUBSUB
    } else {
        NORMAL
    }
}

/// What Redis counts as a client's output memory when `pending` bytes wait
/// for its socket: all but its fixed reply buffer's worth.
pub fn omem_of(pending: usize) -> usize {
    pending.saturating_sub(REPLY_CHUNK_BYTES)
}

/// `h`'s output memory as CLIENT LIST's `omem` shows it and the limits judge
/// it, with `pending` bytes waiting for its socket: what its buffers hold
/// beyond the fixed reply buffer, counted as Redis counts its reply blocks,
/// by the space they take (the pending buffer's capacity) rather than the
/// bytes still in them.
pub fn omem(h: &ClientHandle, pending: usize) -> usize {
    let beyond = omem_of(pending);
    if beyond == 0 {
        return 0;
    }
    h.bufs
        .out_cap()
        .saturating_sub(REPLY_CHUNK_BYTES)
        .max(beyond)
}

/// The bytes waiting for `h`'s socket as its connection and feed last said.
pub fn pending_of(h: &ClientHandle) -> usize {
    h.bufs.out_pending() + h.bufs.output.queued.load(Ordering::Relaxed)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Whether `h`, with `pending` bytes waiting for its socket, must be closed for
/// its output buffer limits, as Redis decides it: at or past the hard limit,
/// or at or past the soft limit continuously for more than the soft seconds.
/// The first time it is, the client is marked over and a warning is logged;
/// the caller closes it (or asks its connection to).
pub fn over_limit(h: &ClientHandle, pending: usize) -> bool {
    judge(h, pending, true)
}

/// [`over_limit`] for a message pushed from another connection: it may start
/// the soft seconds but never stops them, since its view of the pending
/// bytes can catch the owner's connection between taking queued messages
/// and publishing them as pending.
pub fn over_limit_on_push(h: &ClientHandle, pending: usize) -> bool {
    judge(h, pending, false)
}

fn judge(h: &ClientHandle, pending: usize, may_reset: bool) -> bool {
    let state = &h.bufs.output;
    if state.over.load(Ordering::Relaxed) {
        return true;
    }
    let Some(limits) = state.limits.get() else {
        return false;
    };
    let (hard, soft, secs) = limits.get(class_of(h));
    if hard == 0 && soft == 0 {
        return false;
    }
    let used = omem(h, pending) as u64;
    let mut close = hard > 0 && used >= hard;
    if !close {
        let since = state.soft_since_ms.load(Ordering::Relaxed);
        let held = since != 0 && state.held.load(Ordering::Relaxed);
        if soft > 0 && (used >= soft || held) {
            let now = now_ms();
            if since == 0 {
                state.soft_since_ms.store(now, Ordering::Relaxed);
            } else if now.saturating_sub(since) > secs.saturating_mul(1000) {
                close = true;
            }
        } else if may_reset && state.soft_since_ms.load(Ordering::Relaxed) != 0 {
            state.soft_since_ms.store(0, Ordering::Relaxed);
        }
    }
    if close && !state.over.swap(true, Ordering::Relaxed) {
        let name = h
            .name
            .lock()
            .as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default();
        crate::logging::log_warning(&format!(
            "Client id={} addr={} laddr={} fd={} name={} omem={} scheduled to be closed ASAP \
             for overcoming of output buffer limits.",
            h.id,
            h.addr,
            h.laddr,
            h.fd.load(Ordering::Relaxed),
            name,
            used,
        ));
    }
    close
}

/// Whether `h`'s class has any limit now: only then does its connection
/// look at its output before it reaches the flush threshold.
pub fn limited(h: &ClientHandle) -> bool {
    match h.bufs.output.limits.get() {
        Some(limits) => {
            let (hard, soft, _) = limits.get(class_of(h));
            hard > 0 || soft > 0
        }
        None => false,
    }
}

/// Whether `h` is above its soft limit and waiting out the soft seconds: its
/// connection, stuck on the socket, checks again later.
pub fn soft_pending(h: &ClientHandle) -> bool {
    h.bufs.output.soft_since_ms.load(Ordering::Relaxed) != 0
}

/// How many reply bytes a connection may queue before it stops running
/// commands and writes them first: at least `floor`, and past `h`'s limits so
/// that a client that does not read reaches them (and is closed) rather than
/// being merely held back.
pub fn flush_threshold(h: &ClientHandle, floor: usize) -> usize {
    let Some(limits) = h.bufs.output.limits.get() else {
        return floor;
    };
    let (hard, soft, _) = limits.get(class_of(h));
    let past = |n: u64| usize::try_from(n).unwrap_or(usize::MAX / 2) + REPLY_CHUNK_BYTES + 1;
    let mut t = floor;
    if hard > 0 {
        t = t.max(past(hard));
    } else if soft > 0 {
        t = t.max(past(soft));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbuf::OutputLimits;

    fn client(limits: &str) -> ClientHandle {
        let h = ClientHandle::new(7, "127.0.0.1:9".into(), "127.0.0.1:1".into(), 0);
        let l = Arc::new(OutputLimits::default());
        l.set_from(limits);
        h.bufs.output.attach(l);
        h
    }

    #[test]
    fn hard_limit_counts_beyond_the_reply_buffer() {
        let h = client("normal 1000 0 0 slave 0 0 0 pubsub 0 0 0");
        assert!(!over_limit(&h, REPLY_CHUNK_BYTES + 999));
        assert!(over_limit(&h, REPLY_CHUNK_BYTES + 1000));
        assert!(h.bufs.output.is_over());
        // Once over, always over.
        assert!(over_limit(&h, 0));
    }

    #[test]
    fn class_follows_subscriptions() {
        let h = client("normal 0 0 0 pubsub 10 0 0");
        assert!(!over_limit(&h, 1 << 30), "normal has no limits");
        h.subs[1].store(1, Ordering::Relaxed);
        assert_eq!(class_of(&h), PUBSUB);
        assert!(over_limit(&h, REPLY_CHUNK_BYTES + 10));
    }

    #[test]
    fn soft_limit_needs_time_and_resets_below() {
        let h = client("normal 0 100 1");
        assert!(!over_limit(&h, REPLY_CHUNK_BYTES + 100));
        assert!(soft_pending(&h));
        assert!(!over_limit(&h, REPLY_CHUNK_BYTES + 100));
        assert!(!over_limit(&h, 10));
        assert!(!soft_pending(&h), "below the soft limit the clock restarts");
        // Commands held back behind the replies keep it above the soft limit.
        assert!(!over_limit(&h, REPLY_CHUNK_BYTES + 100));
        h.bufs.output.hold(true);
        assert!(!over_limit(&h, 10));
        assert!(soft_pending(&h));
        h.bufs.output.hold(false);
        assert!(!over_limit(&h, 10));
        assert!(!soft_pending(&h));
        h.bufs
            .output
            .soft_since_ms
            .store(now_ms() - 1500, Ordering::Relaxed);
        assert!(over_limit(&h, REPLY_CHUNK_BYTES + 100));
    }

    #[test]
    fn output_memory_is_the_space_the_pending_buffer_takes() {
        let h = client("normal 0 100000 1");
        crate::session::BufferStats::set(&h.bufs.out_cap, REPLY_CHUNK_BYTES + 200_000);
        // 10 bytes beyond the reply buffer, in a buffer 200 KB beyond it: as
        // CLIENT LIST's omem shows it, past the soft limit.
        assert_eq!(omem(&h, REPLY_CHUNK_BYTES + 10), 200_000);
        assert!(!over_limit(&h, REPLY_CHUNK_BYTES + 10));
        assert!(soft_pending(&h));
        // Nothing beyond the reply buffer: no output memory, whatever the space.
        assert_eq!(omem(&h, REPLY_CHUNK_BYTES), 0);
    }

    #[test]
    fn a_push_starts_the_soft_seconds_but_never_stops_them() {
        let h = client("normal 0 100 1");
        assert!(!over_limit_on_push(&h, REPLY_CHUNK_BYTES + 100));
        assert!(soft_pending(&h));
        assert!(!over_limit_on_push(&h, 10));
        assert!(
            soft_pending(&h),
            "a push's low view does not restart the clock"
        );
        assert!(!over_limit(&h, 10));
        assert!(!soft_pending(&h), "the connection's own does");
    }

    #[test]
    fn flush_threshold_lies_past_the_limits() {
        let h = client("normal 0 0 0");
        assert_eq!(flush_threshold(&h, 4096), 4096);
        let h = client("normal 1000000 10 1");
        assert!(flush_threshold(&h, 4096) > 1000000 + REPLY_CHUNK_BYTES);
        let h = client("normal 0 50000 1");
        assert!(flush_threshold(&h, 4096) > 50000 + REPLY_CHUNK_BYTES);
    }
}
