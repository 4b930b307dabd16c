//! Per-connection state. `Session` is owned by the connection task and passed to
//! every `execute`; `ClientHandle` is the part other connections may read or act
//! on (CLIENT LIST, CLIENT KILL), so its fields are atomics or small mutexes.

use bytes::Bytes;
use keel_resp::{Frame, Protocol};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::client::MonitorFeed;
pub use crate::client::{BufferStats, ClientHandle};

/// State of one connection, owned by its task.
pub struct Session {
    pub db: usize,
    pub proto: Protocol,
    pub authenticated: bool,
    /// The ACL user whose rules apply; `None` for internal sessions (log
    /// replay), which are never checked.
    pub user: Option<Arc<crate::acl::state::User>>,
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
    /// The link to this replica's master: what it sends is applied as it
    /// comes (no read-only, memory or disk refusal), and nothing is replied.
    pub master: bool,
    /// The master's bytes of the command being applied (of a whole
    /// transaction, until its EXEC), fed on once it has run.
    pub upstream_raw: Vec<bytes::Bytes>,
    /// Close the connection after writing the pending replies (QUIT).
    pub close_after_reply: bool,
    pub handle: Arc<ClientHandle>,
    /// Set by a blocking command that found no data: what the connection waits
    /// for before running its next command.
    pub blocked: Option<crate::blocking::state::BlockRequest>,
    /// Set on the stand-in session that serves a blocked client.
    pub serving: Option<crate::blocking::state::Serving>,
    /// The lines a monitoring client (MONITOR) is sent; `None` otherwise.
    pub monitor: Option<Arc<MonitorFeed>>,
    /// A command held back by CLIENT PAUSE: the network layer waits for the
    /// pause to end and runs it again.
    pub postponed: Option<Vec<Bytes>>,
    /// CLIENT REPLY state, `REPLY_*` bits; zero when every reply is sent.
    pub reply_flags: u8,
    /// The client's pub/sub subscriptions, once it has subscribed.
    pub pubsub: Option<Box<crate::pubsub::state::Subscriptions>>,
    /// CLIENT TRACKING mode, `tracking::*` bits; zero when not tracking.
    pub tracking: u8,
    /// What a replica said in `REPLCONF` (listening port, capabilities).
    pub replconf: Option<Box<crate::replication::state::ReplConf>>,
    /// Set by PSYNC or SYNC: the connection becomes a replica's link.
    pub sync: Option<Box<crate::replication::state::SyncRequest>>,
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
            master: false,
            upstream_raw: Vec::new(),
            close_after_reply: false,
            handle,
            blocked: None,
            serving: None,
            monitor: None,
            postponed: None,
            reply_flags: 0,
            pubsub: None,
            tracking: 0,
            replconf: None,
            sync: None,
        }
    }

    /// The queue of lines or messages this connection is sent between
    /// replies: MONITOR's, or its subscriptions' and invalidations'.
    pub fn push_feed(&self) -> Option<Arc<MonitorFeed>> {
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
