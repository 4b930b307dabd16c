//! A master's replication stream: the ordered effects every write logs
//! (the AOF's), encoded as commands with a SELECT wherever the database
//! changes, numbered by byte offset as Redis numbers them
//! (`master_repl_offset`), kept in the backlog for partial resyncs and
//! copied to every attached replica's push feed.
//!
//! The stream is fed with the writer's shard locks held, under one mutex, so
//! its order is the execution order; a full sync captures its offset with
//! every shard locked (the snapshot's flip), so the image and the stream
//! after that offset together are the dataset.
//!
//! Nothing here runs until a replica first connects: `active` is one relaxed
//! load on the write path before that.

use crate::client::MonitorFeed;
use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Where a replica is in its sync, as INFO's `slaveN:state=` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaState {
    /// The snapshot is being written to it; the stream waits in `held`.
    SendBulk,
    /// Receiving the stream as it is fed.
    Online,
}

impl ReplicaState {
    pub fn name(self) -> &'static str {
        match self {
            ReplicaState::SendBulk => "send_bulk",
            ReplicaState::Online => "online",
        }
    }
}

/// One attached replica, as the master sees it.
pub struct Replica {
    /// Its connection's client id.
    pub client_id: u64,
    /// Its connection's push feed: the stream goes there once online.
    pub feed: Arc<MonitorFeed>,
    /// `REPLCONF listening-port` and `ip-address`.
    pub port: AtomicU64,
    pub ip: Mutex<String>,
    /// The offset it last acknowledged (`REPLCONF ACK`), and when (ms).
    pub ack_offset: AtomicU64,
    pub ack_ms: AtomicU64,
    link: Mutex<Link>,
}

struct Link {
    state: ReplicaState,
    /// The stream since the snapshot's offset, while the snapshot is sent.
    held: BytesMut,
}

impl Replica {
    pub fn new(client_id: u64, feed: Arc<MonitorFeed>, now_ms: u64) -> Replica {
        Replica {
            client_id,
            feed,
            port: AtomicU64::new(0),
            ip: Mutex::new(String::new()),
            ack_offset: AtomicU64::new(0),
            ack_ms: AtomicU64::new(now_ms),
            link: Mutex::new(Link {
                state: ReplicaState::SendBulk,
                held: BytesMut::new(),
            }),
        }
    }

    pub fn state(&self) -> ReplicaState {
        self.link.lock().state
    }

    fn push(&self, bytes: &[u8]) {
        let mut l = self.link.lock();
        match l.state {
            ReplicaState::Online => self.feed.push(bytes),
            ReplicaState::SendBulk => l.held.extend_from_slice(bytes),
        }
    }

    /// The snapshot has been sent: what the stream held meanwhile follows it,
    /// then the stream as it comes.
    pub fn go_online(&self) {
        let mut l = self.link.lock();
        let held = std::mem::take(&mut l.held);
        if !held.is_empty() {
            self.feed.push(&held);
        }
        l.state = ReplicaState::Online;
    }

    /// Bytes of stream held back while the snapshot is sent.
    pub fn held_len(&self) -> usize {
        self.link.lock().held.len()
    }
}

/// A replica's settings from its `REPLCONF` commands, before and after PSYNC.
#[derive(Clone, Debug, Default)]
pub struct ReplConf {
    pub listening_port: u64,
    pub ip_address: Option<String>,
    /// `capa eof`: takes the EOF-marked diskless form.
    pub capa_eof: bool,
    pub capa_psync2: bool,
}

/// What PSYNC or SYNC left for the connection to do.
pub struct SyncRequest {
    pub replica: Arc<Replica>,
    /// A full sync (the snapshot is still to be started and sent); false for
    /// `+CONTINUE`, whose backlog was the command's reply.
    pub full: bool,
    /// SYNC: no `+FULLRESYNC` line before the snapshot.
    pub legacy: bool,
    pub capa_eof: bool,
    /// The connection has taken the request up.
    pub started: bool,
}

/// The last `size` bytes of the stream.
struct Backlog {
    buf: VecDeque<u8>,
    size: usize,
}

impl Backlog {
    fn add(&mut self, bytes: &[u8]) {
        if bytes.len() >= self.size {
            self.buf.clear();
            self.buf.extend(&bytes[bytes.len() - self.size..]);
            return;
        }
        let over = (self.buf.len() + bytes.len()).saturating_sub(self.size);
        self.buf.drain(..over);
        self.buf.extend(bytes);
    }

    fn resize(&mut self, size: usize) {
        self.size = size.max(1);
        let over = self.buf.len().saturating_sub(self.size);
        self.buf.drain(..over);
    }
}

struct Stream {
    replid: String,
    replid2: String,
    /// The last offset that belongs to `replid2` (-1: none).
    second_offset: i64,
    /// Bytes ever fed (`master_repl_offset`).
    offset: u64,
    /// The database the stream's last command ran in.
    db: Option<usize>,
    backlog: Option<Backlog>,
    replicas: Vec<Arc<Replica>>,
    scratch: Vec<u8>,
}

/// The master side of replication.
pub struct Master {
    /// A backlog exists: writes feed the stream.
    active: AtomicBool,
    /// This server is a replica: its stream is its master's, fed as read
    /// ([`Master::feed_raw`]), not made from its own effects.
    upstream: AtomicBool,
    /// `master_repl_offset`, readable without the lock.
    offset: AtomicU64,
    last_ping_ms: AtomicU64,
    stream: Mutex<Stream>,
    /// WAITs blocked for acknowledgements: (block id, offset, replicas).
    waits: Mutex<Vec<(u64, u64, usize)>>,
    /// Fewer replicas acknowledge in time than `min-replicas-to-write`
    /// asks: writes are refused (set by the cron, as Redis counts them).
    refuse_writes: AtomicBool,
    /// When the last replica went (ms; 0: one is attached or none ever
    /// was), for `repl-backlog-ttl`.
    alone_since_ms: AtomicU64,
}

/// What a PSYNC gets.
pub enum Sync {
    /// `+CONTINUE`: the backlog from the asked offset on.
    Continue { replid: String, backlog: Bytes },
    /// `+FULLRESYNC replid offset`, then the snapshot.
    Full { replid: String, offset: u64 },
}

/// INFO replication's master-side figures.
pub struct Info {
    pub replid: String,
    pub replid2: String,
    pub offset: u64,
    pub second_offset: i64,
    pub backlog_active: bool,
    pub backlog_size: usize,
    pub backlog_first_byte: u64,
    pub backlog_histlen: usize,
    pub replicas: Vec<Arc<Replica>>,
}

impl Master {
    pub fn new(replid: String) -> Master {
        Master {
            active: AtomicBool::new(false),
            upstream: AtomicBool::new(false),
            offset: AtomicU64::new(0),
            last_ping_ms: AtomicU64::new(0),
            waits: Mutex::new(Vec::new()),
            refuse_writes: AtomicBool::new(false),
            alone_since_ms: AtomicU64::new(0),
            stream: Mutex::new(Stream {
                replid,
                replid2: "0".repeat(40),
                second_offset: -1,
                offset: 0,
                db: None,
                backlog: None,
                replicas: Vec::new(),
                scratch: Vec::new(),
            }),
        }
    }

    /// Whether writes feed the stream (a replica connected at least once).
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    pub fn offset(&self) -> u64 {
        self.offset.load(Ordering::Acquire)
    }

    /// Feed one command's effects (a transaction's as one unit). Returns
    /// the offset after them (0: nothing fed).
    pub fn feed(&self, effects: &[(usize, Vec<Bytes>)]) -> u64 {
        if self.upstream.load(Ordering::Relaxed) {
            return 0;
        }
        let mut s = self.stream.lock();
        if s.backlog.is_none() {
            return 0;
        }
        let mut buf = std::mem::take(&mut s.scratch);
        buf.clear();
        for (db, argv) in effects {
            if s.db != Some(*db) {
                let n = db.to_string();
                keel_persist::aof::encode_command(&mut buf, &[b"SELECT".as_slice(), n.as_bytes()]);
                s.db = Some(*db);
            }
            keel_persist::aof::encode_command(&mut buf, argv);
        }
        Self::add(&mut s, &buf);
        self.offset.store(s.offset, Ordering::Release);
        s.scratch = buf;
        s.offset
    }

    /// Feed a command that belongs to no database (the keepalive PING,
    /// REPLCONF GETACK).
    pub fn feed_plain(&self, argv: &[&[u8]]) {
        if self.upstream.load(Ordering::Relaxed) {
            return;
        }
        let mut s = self.stream.lock();
        if s.backlog.is_none() {
            return;
        }
        let mut buf = Vec::new();
        keel_persist::aof::encode_command(&mut buf, argv);
        Self::add(&mut s, &buf);
        self.offset.store(s.offset, Ordering::Release);
    }

    /// Whether the stream is the master's (this server is a replica).
    pub fn upstream(&self) -> bool {
        self.upstream.load(Ordering::Relaxed)
    }

    /// Become a replica: from now on the stream is what the master sends.
    /// Until the first sync, the history so far stays ours (the id and
    /// offset a PSYNC to the new master offers).
    pub fn set_upstream(&self) {
        self.upstream.store(true, Ordering::Relaxed);
    }

    /// A full sync from the master is loaded: take its history (id and
    /// offset) and start a new backlog, as a Redis replica does. Replicas
    /// of this one must sync again: they are dropped from the stream and
    /// their client ids returned, for the caller to disconnect.
    pub fn follow_full(&self, replid: &str, offset: u64, backlog_size: usize) -> Vec<u64> {
        let mut s = self.stream.lock();
        s.replid = replid.to_string();
        s.replid2 = "0".repeat(40);
        s.second_offset = -1;
        s.offset = offset;
        s.db = None;
        s.backlog = Some(Backlog {
            buf: VecDeque::new(),
            size: backlog_size.max(1),
        });
        self.offset.store(offset, Ordering::Release);
        self.active.store(true, Ordering::Relaxed);
        s.replicas.drain(..).map(|r| r.client_id).collect()
    }

    /// `+CONTINUE <id>`: the master's history goes on under a new id (it
    /// was promoted); what came before stays reachable under the old one.
    pub fn follow_continue(&self, replid: &str, backlog_size: usize) {
        let mut s = self.stream.lock();
        if s.replid != replid {
            s.replid2 = std::mem::replace(&mut s.replid, replid.to_string());
            s.second_offset = s.offset as i64;
        }
        if s.backlog.is_none() {
            s.backlog = Some(Backlog {
                buf: VecDeque::new(),
                size: backlog_size.max(1),
            });
        }
        self.active.store(true, Ordering::Relaxed);
    }

    /// Bytes of the master's stream, applied: they go on, unchanged, to the
    /// backlog and to this server's own replicas.
    pub fn feed_raw(&self, pieces: &[Bytes]) {
        let mut s = self.stream.lock();
        for p in pieces {
            Self::add(&mut s, p);
        }
        self.offset.store(s.offset, Ordering::Release);
    }

    /// `REPLICAOF NO ONE`: a master again, under a new id; the history
    /// so far stays reachable under the old one, so the other replicas of
    /// the old master can continue from this one (PSYNC2).
    ///
    /// Returns the client ids of this server's replicas, to disconnect as
    /// Redis does: they reconnect at once and learn the new id from their
    /// `+CONTINUE`.
    pub fn promote(&self, new_id: String) -> Vec<u64> {
        let mut s = self.stream.lock();
        self.upstream.store(false, Ordering::Relaxed);
        if s.backlog.is_none() {
            return Vec::new();
        }
        s.replid2 = std::mem::replace(&mut s.replid, new_id);
        s.second_offset = s.offset as i64;
        // The next command says its database.
        s.db = None;
        s.replicas.drain(..).map(|r| r.client_id).collect()
    }

    /// A replica restarted from its own snapshot: the history it holds is
    /// the master's up to `offset`, for its first PSYNC.
    pub fn restore(&self, replid: &str, offset: u64) {
        let mut s = self.stream.lock();
        s.replid = replid.to_string();
        s.offset = offset;
        self.offset.store(offset, Ordering::Release);
    }

    /// The id and offset a PSYNC to a master offers: this server's history.
    pub fn history(&self) -> (String, u64) {
        let s = self.stream.lock();
        (s.replid.clone(), s.offset)
    }

    fn add(s: &mut Stream, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        s.offset += bytes.len() as u64;
        if let Some(b) = s.backlog.as_mut() {
            b.add(bytes);
        }
        for r in &s.replicas {
            r.push(bytes);
        }
    }

    /// Answer `PSYNC replid offset` for `r`: a partial resync joins it to
    /// the stream at once, in the same instant the backlog is read; a full
    /// one creates the backlog if there is none, and [`Master::attach_full`]
    /// joins it at its snapshot's flip.
    pub fn psync(
        &self,
        want_id: &[u8],
        want_offset: i64,
        backlog_size: usize,
        new_id: impl FnOnce() -> String,
        r: &Arc<Replica>,
    ) -> Sync {
        let mut s = self.stream.lock();
        if let Some(b) = s.backlog.as_ref() {
            let ours = want_id == s.replid.as_bytes()
                || (want_id == s.replid2.as_bytes() && want_offset <= s.second_offset + 1);
            let first = s.offset + 1 - b.buf.len() as u64;
            if ours && want_offset >= first as i64 && want_offset as u64 <= s.offset + 1 {
                let skip = (want_offset as u64 - first) as usize;
                let (a, c) = b.buf.as_slices();
                let mut out = Vec::with_capacity(b.buf.len() - skip);
                if skip < a.len() {
                    out.extend_from_slice(&a[skip..]);
                    out.extend_from_slice(c);
                } else {
                    out.extend_from_slice(&c[skip - a.len()..]);
                }
                r.go_online();
                s.replicas.push(r.clone());
                self.alone_since_ms.store(0, Ordering::Relaxed);
                return Sync::Continue {
                    replid: s.replid.clone(),
                    backlog: Bytes::from(out),
                };
            }
        }
        if s.backlog.is_none() {
            // As Redis: the first replica starts a new history.
            s.replid = new_id();
            s.replid2 = "0".repeat(40);
            s.second_offset = -1;
            s.backlog = Some(Backlog {
                buf: VecDeque::new(),
                size: backlog_size.max(1),
            });
            self.active.store(true, Ordering::Relaxed);
        }
        Sync::Full {
            replid: s.replid.clone(),
            offset: s.offset,
        }
    }

    /// Join `r` to the stream now, held until its snapshot is sent; called at
    /// the snapshot's flip, every shard locked. The stream it gets starts
    /// with a SELECT. Returns the id and offset its `+FULLRESYNC` names.
    pub fn attach_full(&self, r: Arc<Replica>) -> (String, u64) {
        let mut s = self.stream.lock();
        self.alone_since_ms.store(0, Ordering::Relaxed);
        s.db = None;
        s.replicas.push(r);
        (s.replid.clone(), s.offset)
    }

    /// How many online replicas have acknowledged `offset` or more.
    pub fn acked(&self, offset: u64) -> usize {
        self.stream
            .lock()
            .replicas
            .iter()
            .filter(|r| {
                r.state() == ReplicaState::Online && r.ack_offset.load(Ordering::Relaxed) >= offset
            })
            .count()
    }

    /// A WAIT blocked as `id` for `replicas` acknowledgements of `offset`.
    pub fn add_wait(&self, id: u64, offset: u64, replicas: usize) {
        self.waits.lock().push((id, offset, replicas));
    }

    /// The WAITs an acknowledgement may have satisfied: removed and
    /// returned with their counts. Those whose wait ended otherwise are
    /// dropped by the caller's claim failing.
    pub fn satisfied_waits(&self) -> Vec<(u64, usize)> {
        let mut waits = self.waits.lock();
        if waits.is_empty() {
            return Vec::new();
        }
        let mut done = Vec::new();
        waits.retain(|&(id, offset, want)| {
            let n = self.acked(offset);
            if n >= want {
                done.push((id, n));
                false
            } else {
                true
            }
        });
        done
    }

    /// Forget waits whose block ended by timeout or disconnect.
    pub fn retain_waits(&self, live: impl Fn(u64) -> bool) {
        self.waits.lock().retain(|&(id, _, _)| live(id));
    }

    pub fn waiting(&self) -> bool {
        !self.waits.lock().is_empty()
    }

    pub fn last_ping_ms(&self) -> u64 {
        self.last_ping_ms.load(Ordering::Relaxed)
    }

    pub fn set_last_ping_ms(&self, ms: u64) {
        self.last_ping_ms.store(ms, Ordering::Relaxed);
    }

    pub fn detach(&self, client_id: u64, now_ms: u64) {
        let mut s = self.stream.lock();
        s.replicas.retain(|r| r.client_id != client_id);
        if s.replicas.is_empty() {
            self.alone_since_ms.store(now_ms.max(1), Ordering::Relaxed);
        }
    }

    /// Whether writes are refused for want of good replicas.
    #[inline]
    pub fn refuses_writes(&self) -> bool {
        self.refuse_writes.load(Ordering::Relaxed)
    }

    /// The cron's count of good replicas (online, acknowledged within
    /// `max_lag` seconds) against `min_replicas`; 0 turns the check off.
    pub fn count_good(&self, min_replicas: usize, max_lag_s: u64, now_ms: u64) -> usize {
        let s = self.stream.lock();
        let good = s
            .replicas
            .iter()
            .filter(|r| {
                r.state() == ReplicaState::Online
                    && now_ms.saturating_sub(r.ack_ms.load(Ordering::Relaxed)) / 1000 <= max_lag_s
            })
            .count();
        let refuse = min_replicas > 0 && max_lag_s > 0 && good < min_replicas && !self.upstream();
        self.refuse_writes.store(refuse, Ordering::Relaxed);
        good
    }

    /// `repl-backlog-ttl`: a master whose replicas have all been gone that
    /// long frees its backlog and starts a new history, as Redis does (0:
    /// never). A replica keeps its backlog.
    pub fn expire_backlog(&self, ttl_s: u64, now_ms: u64, new_id: impl FnOnce() -> String) {
        let since = self.alone_since_ms.load(Ordering::Relaxed);
        if ttl_s == 0 || since == 0 || now_ms.saturating_sub(since) < ttl_s * 1000 {
            return;
        }
        let mut s = self.stream.lock();
        if !s.replicas.is_empty() || self.upstream() || s.backlog.is_none() {
            return;
        }
        s.backlog = None;
        s.replid = new_id();
        s.replid2 = "0".repeat(40);
        s.second_offset = -1;
        self.active.store(false, Ordering::Relaxed);
        self.alone_since_ms.store(0, Ordering::Relaxed);
    }

    pub fn replicas(&self) -> Vec<Arc<Replica>> {
        self.stream.lock().replicas.clone()
    }

    /// `repl-backlog-size` as it is now (CONFIG SET takes effect at the
    /// next cron tick).
    pub fn resize_backlog(&self, size: usize) {
        if let Some(b) = self.stream.lock().backlog.as_mut() {
            if b.size != size {
                b.resize(size);
            }
        }
    }

    pub fn info(&self) -> Info {
        let s = self.stream.lock();
        let (active, size, histlen) = match s.backlog.as_ref() {
            Some(b) => (true, b.size, b.buf.len()),
            None => (false, 0, 0),
        };
        Info {
            replid: s.replid.clone(),
            replid2: s.replid2.clone(),
            offset: s.offset,
            second_offset: s.second_offset,
            backlog_active: active,
            backlog_size: size,
            backlog_first_byte: if active {
                s.offset + 1 - histlen as u64
            } else {
                0
            },
            backlog_histlen: histlen,
            replicas: s.replicas.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(db: usize, words: &[&str]) -> (usize, Vec<Bytes>) {
        (
            db,
            words.iter().map(|w| Bytes::from(w.to_string())).collect(),
        )
    }

    fn id() -> String {
        "a".repeat(40)
    }

    fn replica(id: u64) -> Arc<Replica> {
        Arc::new(Replica::new(id, Arc::new(MonitorFeed::new(id)), 0))
    }

    #[test]
    fn the_stream_selects_once_per_database_change_and_counts_bytes() {
        let m = Master::new("x".repeat(40));
        let r = replica(1);
        m.feed(&[cmd(0, &["SET", "k", "v"])]);
        assert_eq!(m.offset(), 0, "nothing is counted before a replica asks");
        assert!(matches!(
            m.psync(b"?", -1, 1 << 20, id, &r),
            Sync::Full { offset: 0, .. }
        ));
        m.feed(&[cmd(0, &["SET", "k", "v"])]);
        m.feed(&[cmd(0, &["DEL", "k"]), cmd(1, &["DEL", "j"])]);
        let select0 = "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n";
        let set = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
        let del = "*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n";
        let select1 = "*2\r\n$6\r\nSELECT\r\n$1\r\n1\r\n";
        let del_j = "*2\r\n$3\r\nDEL\r\n$1\r\nj\r\n";
        let all = format!("{select0}{set}{del}{select1}{del_j}");
        assert_eq!(m.offset(), all.len() as u64);
        // A partial resync from offset 1 gets everything; from the end, nothing.
        match m.psync(id().as_bytes(), 1, 1 << 20, id, &r) {
            Sync::Continue { backlog, .. } => assert_eq!(&backlog[..], all.as_bytes()),
            Sync::Full { .. } => panic!("expected +CONTINUE"),
        }
        let end = all.len() as i64 + 1;
        match m.psync(id().as_bytes(), end, 1 << 20, id, &r) {
            Sync::Continue { backlog, .. } => assert!(backlog.is_empty()),
            Sync::Full { .. } => panic!("expected +CONTINUE"),
        }
        // Past the end, an unknown id, or before the backlog: a full sync.
        assert!(matches!(
            m.psync(id().as_bytes(), end + 1, 1 << 20, id, &r),
            Sync::Full { .. }
        ));
        assert!(matches!(
            m.psync(b"b", 1, 1 << 20, id, &r),
            Sync::Full { .. }
        ));
    }

    #[test]
    fn a_small_backlog_keeps_only_its_size_and_refuses_older_offsets() {
        let m = Master::new(id());
        let r = replica(1);
        m.psync(b"?", -1, 16, id, &r);
        for _ in 0..10 {
            m.feed(&[cmd(0, &["INCR", "counter"])]);
        }
        let info = m.info();
        assert_eq!(info.backlog_histlen, 16);
        assert_eq!(info.backlog_first_byte, info.offset + 1 - 16);
        assert!(matches!(
            m.psync(id().as_bytes(), 1, 16, id, &r),
            Sync::Full { .. }
        ));
        let from = info.backlog_first_byte as i64;
        match m.psync(id().as_bytes(), from, 16, id, &r) {
            Sync::Continue { backlog, .. } => assert_eq!(backlog.len(), 16),
            Sync::Full { .. } => panic!("expected +CONTINUE"),
        }
    }

    #[test]
    fn a_replica_gets_what_was_held_during_its_snapshot_then_the_stream() {
        let m = Master::new(id());
        m.psync(b"?", -1, 1 << 20, id, &replica(9));
        let feed = Arc::new(MonitorFeed::new(7));
        let r = Arc::new(Replica::new(7, feed.clone(), 0));
        assert!(matches!(m.attach_full(r.clone()), (_, 0)));
        m.feed(&[cmd(0, &["SET", "a", "1"])]);
        let mut out = BytesMut::new();
        feed.take_into(&mut out);
        assert!(out.is_empty(), "nothing is sent before the snapshot");
        assert!(r.held_len() > 0);
        r.go_online();
        m.feed(&[cmd(0, &["SET", "b", "2"])]);
        feed.take_into(&mut out);
        let want = "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n\
                    *3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\n2\r\n";
        assert_eq!(&out[..], want.as_bytes());
        m.detach(7, 1);
        assert!(m.replicas().is_empty());
    }
}
