//! Per-connection state. `Session` is owned by the connection task and passed to
//! every `execute`; `ClientHandle` is the part other connections may read or act
//! on (CLIENT LIST, CLIENT KILL), so its fields are atomics or small mutexes.

use bytes::Bytes;
use keel_resp::Protocol;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
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
    /// Waiting in a blocking command, for CLIENT LIST `flags=b`.
    pub blocked: AtomicBool,
    /// Installed by the network layer: closes the socket so a blocked read wakes.
    pub closer: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
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
            last_interaction_ms: AtomicU64::new(now_ms),
            resp: AtomicU8::new(2),
            in_multi: AtomicBool::new(false),
            watching: AtomicUsize::new(0),
            killed: AtomicBool::new(false),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            multi_queued: AtomicUsize::new(0),
            blocked: AtomicBool::new(false),
            closer: Mutex::new(None),
        }
    }

    /// Ask the connection to close (CLIENT KILL, SHUTDOWN).
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        if let Some(close) = self.closer.lock().as_ref() {
            close();
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
    pub(crate) serving: Option<crate::blocking::Serving>,
}

impl Session {
    pub fn new(handle: Arc<ClientHandle>, authenticated: bool) -> Session {
        Session {
            db: 0,
            proto: Protocol::Resp2,
            authenticated,
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
        }
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

    /// CLIENT SETNAME / HELLO SETNAME; an empty name clears it.
    pub fn set_name(&mut self, name: Option<Bytes>) {
        // Copied: a slice would keep the whole request buffer alive with it.
        *self.handle.name.lock() = name
            .filter(|n| !n.is_empty())
            .map(|n| Bytes::copy_from_slice(&n));
    }
}
