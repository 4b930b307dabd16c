//! A replica's side of replication: which master it follows (`REPLICAOF`,
//! the `replicaof` directive) and where its link to it stands, as INFO
//! replication and ROLE report it. The link itself (the socket, the
//! handshake, the snapshot and the stream) is the server's; it reads the
//! target from here and reports its progress back.
//!
//! Every `REPLICAOF` bumps `gen`: a link started for an older generation
//! sees the change at its next read and ends.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};

/// Where the link to the master is, in ROLE's words (INFO says `up` for
/// `Connected` and `down` for the rest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LinkState {
    /// Not following any master.
    None = 0,
    /// To connect (at the next try).
    Connect = 1,
    /// The TCP connection is being made.
    Connecting = 2,
    /// PING, AUTH, REPLCONF and PSYNC are being exchanged.
    Handshake = 3,
    /// The snapshot is being received and loaded.
    Sync = 4,
    /// The stream is being applied.
    Connected = 5,
}

impl LinkState {
    fn from_u8(v: u8) -> LinkState {
        match v {
            1 => LinkState::Connect,
            2 => LinkState::Connecting,
            3 => LinkState::Handshake,
            4 => LinkState::Sync,
            5 => LinkState::Connected,
            _ => LinkState::None,
        }
    }

    /// ROLE's name for the state.
    pub fn role_name(self) -> &'static str {
        match self {
            LinkState::None => "none",
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Sync => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// The master a replica follows, and its link's progress.
pub struct Follow {
    target: Mutex<Option<(String, u16)>>,
    changed: Condvar,
    /// Raised by every REPLICAOF.
    gen: AtomicU64,
    /// `target` is set: the stream comes from the master, not from this
    /// server's own writes. One relaxed load on the write path.
    following: AtomicBool,
    state: AtomicU8,
    /// When the master last sent anything (ms), and when the link went down.
    pub last_io_ms: AtomicU64,
    pub down_since_ms: AtomicU64,
    /// The snapshot being received: its size (-1 while an EOF-marked one's
    /// is unknown), bytes read so far, when it started (ms).
    pub sync_total: AtomicI64,
    pub sync_read: AtomicU64,
    pub sync_started_ms: AtomicU64,
    /// Bytes of the stream read from the master (`slave_read_repl_offset`).
    pub read_offset: AtomicU64,
    /// The database the master's stream is in (its last SELECT), as a
    /// snapshot records it and a restart from that snapshot resumes in.
    pub stream_db: AtomicU64,
    /// A full sync is being loaded: clients get `-LOADING`.
    pub loading: AtomicBool,
}

impl Default for Follow {
    fn default() -> Self {
        Follow {
            target: Mutex::new(None),
            changed: Condvar::new(),
            gen: AtomicU64::new(0),
            following: AtomicBool::new(false),
            state: AtomicU8::new(LinkState::None as u8),
            last_io_ms: AtomicU64::new(0),
            down_since_ms: AtomicU64::new(0),
            sync_total: AtomicI64::new(-1),
            sync_read: AtomicU64::new(0),
            sync_started_ms: AtomicU64::new(0),
            read_offset: AtomicU64::new(0),
            stream_db: AtomicU64::new(0),
            loading: AtomicBool::new(false),
        }
    }
}

impl Follow {
    /// Whether this server is a replica.
    #[inline]
    pub fn following(&self) -> bool {
        self.following.load(Ordering::Relaxed)
    }

    /// The master followed, if any.
    pub fn target(&self) -> Option<(String, u16)> {
        self.target.lock().clone()
    }

    /// Follow `target` (None: be a master again). Returns the generation
    /// the links for it run under.
    pub fn set_target(&self, target: Option<(String, u16)>, now_ms: u64) -> u64 {
        let mut t = self.target.lock();
        self.following.store(target.is_some(), Ordering::Relaxed);
        let state = if target.is_some() {
            LinkState::Connect
        } else {
            LinkState::None
        };
        self.set_state(state);
        self.down_since_ms.store(now_ms, Ordering::Relaxed);
        *t = target;
        let gen = self.gen.fetch_add(1, Ordering::SeqCst) + 1;
        self.changed.notify_all();
        gen
    }

    pub fn gen(&self) -> u64 {
        self.gen.load(Ordering::SeqCst)
    }

    /// Block until there is a master to follow: its address and the
    /// generation of the link to run.
    pub fn wait_target(&self) -> ((String, u16), u64) {
        let mut t = self.target.lock();
        loop {
            if let Some(target) = t.clone() {
                return (target, self.gen());
            }
            self.changed.wait(&mut t);
        }
    }

    /// Sleep up to `ms` unless the target changes meanwhile.
    pub fn pause(&self, gen: u64, ms: u64) {
        let mut t = self.target.lock();
        if self.gen() == gen {
            self.changed
                .wait_for(&mut t, std::time::Duration::from_millis(ms));
        }
    }

    pub fn state(&self) -> LinkState {
        LinkState::from_u8(self.state.load(Ordering::Relaxed))
    }

    pub fn set_state(&self, s: LinkState) {
        self.state.store(s as u8, Ordering::Relaxed);
    }

    /// Whether the link is up (the stream is being applied).
    pub fn link_up(&self) -> bool {
        self.state() == LinkState::Connected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_target_raises_the_generation_and_wakes_the_waiter() {
        let f = std::sync::Arc::new(Follow::default());
        assert!(!f.following());
        let waiter = {
            let f = f.clone();
            std::thread::spawn(move || f.wait_target())
        };
        let gen = f.set_target(Some(("127.0.0.1".into(), 6379)), 5);
        let (target, seen) = waiter.join().unwrap();
        assert_eq!(target, ("127.0.0.1".to_string(), 6379));
        assert_eq!(seen, gen);
        assert!(f.following());
        assert_eq!(f.state(), LinkState::Connect);
        let again = f.set_target(None, 6);
        assert!(again > gen);
        assert!(!f.following());
        assert_eq!(f.state().role_name(), "none");
    }
}
