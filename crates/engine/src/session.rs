//! Per-connection state. `Session` is owned by the connection task and passed to
//! every `execute`; `ClientHandle` is the part other connections may read or act
//! on (CLIENT LIST, CLIENT KILL), so its fields are atomics or small mutexes.

use bytes::Bytes;
use keel_resp::{Frame, Protocol};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

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
    pub pushes: std::sync::OnceLock<Arc<crate::monitor::MonitorFeed>>,
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
            waker: Mutex::new(None),
            fd: AtomicI32::new(-1),
            bufs: BufferStats::default(),
            shrink: AtomicBool::new(false),
            monitor: AtomicBool::new(false),
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
    pub fn push_feed(self: &Arc<Self>) -> (Arc<crate::monitor::MonitorFeed>, bool) {
        let mut created = false;
        let feed = self.pushes.get_or_init(|| {
            created = true;
            Arc::new(crate::monitor::MonitorFeed::for_client(self))
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

/// State of one connection, owned by its task.
pub struct Session {
    pub db: usize,
    pub proto: Protocol,
    pub authenticated: bool,
    /// The ACL user whose rules apply; `None` for internal sessions (log
    /// replay), which are never checked.
    pub user: Option<Arc<crate::acl::User>>,
    /// Commands queued since MULTI; `None` outside a transaction.
    pub multi: Option<Vec<Vec<Bytes>>>,
    /// A queued command was rejected (unknown, arity): EXEC must abort.
    pub multi_error: bool,
    pub watched: Vec<(usize, Bytes)>,
    /// The watched keys that held a value when watched: if one is gone at EXEC
    /// (expired without anyone reading it), the transaction aborts, as in Redis.
    pub watched_live: Vec<(usize, Bytes)>,
    /// Set by a writer to any watched key; read by EXEC.
    pub watch_dirty: Arc<AtomicBool>,
    pub no_touch: bool,
    pub no_evict: bool,
    /// Close the connection after writing the pending replies (QUIT).
    pub close_after_reply: bool,
    pub handle: Arc<ClientHandle>,
    /// Set by a blocking command that found no data: what the connection waits
    /// for before running its next command.
    pub blocked: Option<crate::blocking::BlockRequest>,
    /// Set on the stand-in session that serves a blocked client.
    pub serving: Option<crate::blocking::Serving>,
    /// The lines a monitoring client (MONITOR) is sent; `None` otherwise.
    pub monitor: Option<Arc<crate::monitor::MonitorFeed>>,
    /// A command held back by CLIENT PAUSE: the network layer waits for the
    /// pause to end and runs it again.
    pub postponed: Option<Vec<Bytes>>,
    /// CLIENT REPLY state, `REPLY_*` bits; zero when every reply is sent.
    pub reply_flags: u8,
    /// The client's pub/sub subscriptions, once it has subscribed.
    pub pubsub: Option<Box<crate::pubsub::Subscriptions>>,
    /// CLIENT TRACKING mode, `tracking::*` bits; zero when not tracking.
    pub tracking: u8,
}

/// CLIENT REPLY OFF: no reply is sent until CLIENT REPLY ON.
pub const REPLY_OFF: u8 = 1;
/// The reply of the command running now is not sent (set by a SKIP before it).
pub const REPLY_SKIP: u8 = 2;
/// CLIENT REPLY SKIP ran: the next command's reply is not sent.
pub const REPLY_SKIP_NEXT: u8 = 4;
/// The running command's reply is pub/sub (un)subscribe confirmations, which
/// Redis sends even while replies are off or skipped. Set only while some
/// other `REPLY_*` bit is, so the common path never sees it.
pub const REPLY_PUSHED: u8 = 8;
/// The flags under which a reply produced now is dropped.
const REPLY_HIDDEN: u8 = REPLY_OFF | REPLY_SKIP;

/// Inside EXEC: the reply of a queued command, or nothing when CLIENT REPLY
/// (run earlier in the same transaction) hides it.
pub fn queued_reply(session: &Session, reply: Frame) -> Frame {
    if session.reply_flags & REPLY_HIDDEN != 0 {
        Frame::Encoded(Bytes::new())
    } else {
        reply
    }
}

/// EXEC's reply. When replies were hidden as it started but the transaction
/// showed them again, Redis had dropped the array header: only the elements
/// are sent.
pub fn exec_reply(session: &Session, hidden_at_start: bool, replies: Vec<Frame>) -> Frame {
    if !hidden_at_start || session.reply_flags & REPLY_HIDDEN != 0 {
        return Frame::Array(replies);
    }
    let mut out = bytes::BytesMut::new();
    for r in &replies {
        keel_resp::encode(r, session.proto, &mut out);
    }
    Frame::Encoded(out.freeze())
}

/// Whether replies are hidden right now, for [`exec_reply`].
pub fn replies_hidden(session: &Session) -> bool {
    session.reply_flags & REPLY_HIDDEN != 0
}

impl Session {
    pub fn new(handle: Arc<ClientHandle>, authenticated: bool) -> Session {
        Session {
            db: 0,
            proto: Protocol::Resp2,
            authenticated,
            user: None,
            multi: None,
            multi_error: false,
            watched: Vec::new(),
            watched_live: Vec::new(),
            watch_dirty: Arc::new(AtomicBool::new(false)),
            no_touch: false,
            no_evict: false,
            close_after_reply: false,
            handle,
            blocked: None,
            serving: None,
            monitor: None,
            postponed: None,
            reply_flags: 0,
            pubsub: None,
            tracking: 0,
        }
    }

    /// The queue of lines or messages this connection is sent between
    /// replies: MONITOR's, or its subscriptions' and invalidations'.
    pub fn push_feed(&self) -> Option<Arc<crate::monitor::MonitorFeed>> {
        match &self.monitor {
            Some(f) => Some(f.clone()),
            None => self.handle.pushes.get().cloned(),
        }
    }

    /// Whether the connection has a queue to drain between replies: one
    /// check, made once per read.
    #[inline]
    pub fn has_push_feed(&self) -> bool {
        self.monitor.is_some() || self.handle.pushes.get().is_some()
    }

    pub fn id(&self) -> u64 {
        self.handle.id
    }

    pub fn set_db(&mut self, db: usize) {
        self.db = db;
        self.handle.db.store(db, Ordering::Relaxed);
    }

    pub fn set_proto(&mut self, proto: Protocol) {
        self.proto = proto;
        self.handle.resp.store(
            if proto == Protocol::Resp3 { 3 } else { 2 },
            Ordering::Relaxed,
        );
    }
}

impl Session {
    pub fn set_no_evict(&mut self, on: bool) {
        self.no_evict = on;
        self.handle.no_evict.store(on, Ordering::Relaxed);
    }

    pub fn set_no_touch(&mut self, on: bool) {
        self.no_touch = on;
        self.handle.no_touch.store(on, Ordering::Relaxed);
    }

    /// Whether the reply of the command that just finished is sent, moving
    /// CLIENT REPLY SKIP on by one command, as Redis does once per command
    /// (including commands refused with an error). `before` is `reply_flags`
    /// as the command started. Redis drops each part of a reply that is
    /// produced while replies are hidden; a command that hides or shows
    /// replies (CLIENT REPLY, RESET, an EXEC running them) has already left
    /// out what Redis would have dropped, so its reply is only dropped when
    /// replies were hidden both before and after it. Only called when
    /// `before | reply_flags` is not zero.
    pub fn take_reply_turn(&mut self, before: u8) -> bool {
        let send = before & REPLY_HIDDEN == 0
            || self.reply_flags & REPLY_HIDDEN == 0
            || self.reply_flags & REPLY_PUSHED != 0;
        self.reply_flags &= !(REPLY_SKIP | REPLY_PUSHED);
        if self.reply_flags & REPLY_SKIP_NEXT != 0 {
            self.reply_flags = (self.reply_flags & !REPLY_SKIP_NEXT) | REPLY_SKIP;
        }
        send
    }

    /// CLIENT SETNAME / HELLO SETNAME; an empty name clears it.
    pub fn set_name(&mut self, name: Option<Bytes>) {
        // Copied: a slice would keep the whole request buffer alive with it.
        *self.handle.name.lock() = name
            .filter(|n| !n.is_empty())
            .map(|n| Bytes::copy_from_slice(&n));
    }
}
