//! The append-only file as the engine drives it: effects arrive from the
//! executor (under the writers' shard locks, so the buffer's order is the
//! execution order) and are written before the replies that follow them
//! leave, as Redis writes its buffer before it answers:
//!
//! - under `appendfsync always`, one background thread writes and fsyncs
//!   once for everything that arrived while the previous fsync ran (group
//!   commit); connections wait for their own position (`durable`);
//! - under `everysec` and `no`, the connection about to send replies writes
//!   everything pending itself ([`Aof::write_through`], one `write` for every
//!   connection's effects so far), so a crash of the process never loses an
//!   acknowledged write; the thread fsyncs once a second (`everysec`) and
//!   writes what no reply waited for (expiry and eviction from the cron).
//!
//! The files are Redis 7's multi-part layout (`keel_persist::aof`): a base
//! (an RDB preamble or commands), incremental files, and a manifest naming
//! them; the manifest is replaced atomically (temp file, fsync, rename), so a
//! crash at any moment leaves one complete set to load.

use bytes::Bytes;
use keel_persist::aof::{encode_command, AofFile, Manifest};
use parking_lot::{Condvar, Mutex};
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

pub const FSYNC_NO: u8 = 0;
pub const FSYNC_EVERYSEC: u8 = 1;
pub const FSYNC_ALWAYS: u8 = 2;

pub fn policy_of(name: &str) -> u8 {
    match name {
        "always" => FSYNC_ALWAYS,
        "no" => FSYNC_NO,
        _ => FSYNC_EVERYSEC,
    }
}

/// What the executor appends to, and the writer thread drains.
#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    /// Bytes ever appended (the position of the end of `buf`).
    appended: u64,
    /// Appends (commands or transactions) now in `buf`.
    appends: usize,
    /// The writer waits for this many appends (group commit's linger).
    want: usize,
    /// The database the log's last command ran in.
    db: Option<usize>,
    /// Switch to a new incremental file at this absolute position (a rewrite's
    /// flip): bytes before it belong to the old file, bytes after to the new.
    switch: Option<(u64, File)>,
    /// The writer thread should exit once `buf` is written.
    stop: bool,
    /// A SELECT must be logged before the next command (a new file starts).
    reselect: bool,
    /// The Unix second of the last `#TS:` annotation.
    ts: u64,
}

#[derive(Default)]
pub struct AofStats {
    pub current_size: AtomicU64,
    pub base_size: AtomicU64,
    pub last_write_ok: AtomicBool,
    /// The OS error of the last failed write (`last_write_ok` false).
    pub write_errno: AtomicI32,
    /// The last fsync under `everysec` or `no` failed, with this OS error;
    /// cleared by the next one that succeeds.
    pub fsync_failed: AtomicBool,
    pub fsync_errno: AtomicI32,
    pub delayed_fsync: AtomicU64,
    pub pending_fsync: AtomicU64,
}

pub struct Aof {
    /// Effects are logged (appendonly yes, or a rewrite is turning it on).
    on: AtomicBool,
    pending: Mutex<Pending>,
    wake: Condvar,
    /// The position every byte before which is written (and, under
    /// `always`, fsynced).
    durable: AtomicU64,
    /// The position every byte before which is written.
    written: AtomicU64,
    /// The file and what is written to it; whoever writes holds this, so
    /// the file's order is the buffer's.
    out: Mutex<Out>,
    /// Bytes are written but not yet fsynced.
    unsynced: AtomicBool,
    /// `Pending::appended`, readable without the lock: the position a
    /// reply that only read must wait for, since what it read may come from
    /// another connection's write not yet on disk.
    appended: AtomicU64,
    pub policy: AtomicU8,
    /// Installed by the server: wakes connections waiting on `durable`.
    pub on_durable: OnceLock<Box<dyn Fn() + Send + Sync>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The writer thread runs (replies may wait on it).
    running: AtomicBool,
    /// The directory state: manifest and the names in use.
    pub files: Mutex<AofFiles>,
    pub stats: AofStats,
    pub timestamps: AtomicBool,
    /// `Out::backlog`'s length, for INFO without the lock.
    backlog_len: AtomicU64,
}

/// The incremental file being written, shared by the thread and the
/// connections that write through.
#[derive(Default)]
struct Out {
    file: Option<Arc<File>>,
    /// The buffer handed back to `Pending` after a write, to keep its capacity.
    spare: Vec<u8>,
    /// What a failed write left unwritten (a full or failing disk under
    /// `everysec` or `no`): written before anything newer, retried until the
    /// disk takes it. The file always ends where a whole buffer ended.
    backlog: Vec<u8>,
    /// The file's length after its last complete write: a short write is cut
    /// back to it, so no command is left half in the file.
    len: u64,
    /// When a write error was last logged (they are logged every 30 s).
    logged: Option<Instant>,
}

/// Where the AOF lives and what its manifest says.
pub struct AofFiles {
    pub dir: PathBuf,
    pub filename: String,
    pub manifest: Manifest,
}

impl AofFiles {
    pub fn manifest_path(&self) -> PathBuf {
        self.dir.join(format!("{}.manifest", self.filename))
    }

    pub fn path(&self, f: &AofFile) -> PathBuf {
        self.dir.join(&f.name)
    }

    /// Write the manifest atomically: temp file, fsync, rename, fsync the
    /// directory.
    pub fn persist_manifest(&self) -> std::io::Result<()> {
        let tmp = self.dir.join(format!("temp-{}.manifest", self.filename));
        let mut f = File::create(&tmp)?;
        f.write_all(self.manifest.to_text().as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, self.manifest_path())?;
        sync_dir(&self.dir)
    }
}

pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

impl Default for Aof {
    fn default() -> Self {
        Aof {
            on: AtomicBool::new(false),
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            durable: AtomicU64::new(0),
            written: AtomicU64::new(0),
            out: Mutex::new(Out::default()),
            unsynced: AtomicBool::new(false),
            appended: AtomicU64::new(0),
            policy: AtomicU8::new(FSYNC_EVERYSEC),
            on_durable: OnceLock::new(),
            writer: Mutex::new(None),
            running: AtomicBool::new(false),
            files: Mutex::new(AofFiles {
                dir: PathBuf::from("appendonlydir"),
                filename: "appendonly.aof".into(),
                manifest: Manifest::default(),
            }),
            stats: AofStats::default(),
            timestamps: AtomicBool::new(false),
            backlog_len: AtomicU64::new(0),
        }
    }
}

impl Aof {
    /// Whether effects are being logged: one relaxed load on the write path.
    #[inline]
    pub fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Append one command's effects (a transaction's as one unit, so nothing
    /// from another thread lands inside it). Returns the position a reply
    /// must wait for under `appendfsync always`.
    pub fn append(&self, effects: &[(usize, Vec<Bytes>)], now_ms: u64) -> u64 {
        let mut p = self.pending.lock();
        let start = p.buf.len();
        // The writer was told when the buffer last became non-empty; it
        // takes everything that arrived since then at once.
        p.appends += 1;
        let wake = start == 0 || p.appends == p.want;
        if self.timestamps.load(Ordering::Relaxed) && p.ts != now_ms / 1000 {
            // As Redis, one annotation per second that sees writes.
            p.ts = now_ms / 1000;
            let ts = p.ts;
            let _ = write!(p.buf, "#TS:{ts}\r\n");
        }
        for (db, argv) in effects {
            if p.db != Some(*db) || p.reselect {
                let n = db.to_string();
                encode_command(&mut p.buf, &[b"SELECT".as_slice(), n.as_bytes()]);
                p.db = Some(*db);
                p.reselect = false;
            }
            encode_command(&mut p.buf, argv);
        }
        let added = (p.buf.len() - start) as u64;
        p.appended += added;
        let end = p.appended;
        self.appended.store(end, Ordering::Release);
        drop(p);
        if wake && self.policy.load(Ordering::Relaxed) == FSYNC_ALWAYS {
            self.wake.notify_one();
        }
        end
    }

    /// The position a reply of a command that logged nothing waits for:
    /// everything logged before it ran, as Redis sends no reply before it
    /// has written (and under `always`, fsynced) what was logged before. A
    /// read then never shows a write, or an eviction, that a crash undoes.
    #[inline]
    pub fn read_barrier(&self) -> u64 {
        self.appended.load(Ordering::Acquire)
    }

    /// Bytes logged but not yet written (INFO mem_aof_buffer).
    pub fn buffered_bytes(&self) -> u64 {
        self.appended
            .load(Ordering::Acquire)
            .saturating_sub(self.written.load(Ordering::Acquire))
            + self.backlog_len.load(Ordering::Relaxed)
    }

    /// Redis's refusal while the AOF cannot be written or fsynced: writes
    /// (and PING) get it until the disk takes what is pending again.
    pub fn refusal(&self) -> Option<String> {
        if !self.on() {
            return None;
        }
        let errno = if !self.stats.last_write_ok.load(Ordering::Relaxed) {
            self.stats.write_errno.load(Ordering::Relaxed)
        } else if self.stats.fsync_failed.load(Ordering::Relaxed) {
            self.stats.fsync_errno.load(Ordering::Relaxed)
        } else {
            return None;
        };
        Some(format!(
            "MISCONF Errors writing to the AOF file: {}",
            strerror(errno)
        ))
    }

    /// Whether writing or fsyncing the AOF fails now (one or two relaxed loads).
    #[inline]
    pub fn failing(&self) -> bool {
        !self.stats.last_write_ok.load(Ordering::Relaxed)
            || self.stats.fsync_failed.load(Ordering::Relaxed)
    }

    /// Whether a reply covering position `seq` must wait for the thread's
    /// fsync (`appendfsync always`).
    #[inline]
    pub fn must_wait(&self, seq: u64) -> bool {
        seq > self.durable.load(Ordering::Acquire)
            && self.policy.load(Ordering::Relaxed) == FSYNC_ALWAYS
            && self.running.load(Ordering::Relaxed)
    }

    /// Whether replies covering `seq` are held for the fsync thread rather
    /// than written through.
    #[inline]
    pub fn waits_for_fsync(&self) -> bool {
        self.policy.load(Ordering::Relaxed) == FSYNC_ALWAYS
    }

    /// Under `everysec` and `no`: make sure every byte before `seq` is
    /// written to the file before a reply covering it leaves. Whoever comes
    /// first writes everything pending, for every connection.
    pub fn write_through(&self, seq: u64) {
        if seq <= self.written.load(Ordering::Acquire) || !self.running.load(Ordering::Relaxed) {
            return;
        }
        let mut out = self.out.lock();
        if seq <= self.written.load(Ordering::Acquire) {
            return;
        }
        self.drain(&mut out);
        if !self.waits_for_fsync() {
            let w = self.written.load(Ordering::Acquire);
            self.durable.fetch_max(w, Ordering::AcqRel);
        }
    }

    /// Write everything appended so far, switching files where a rewrite
    /// flipped them. The caller holds `out`. Returns the position written.
    fn drain(&self, out: &mut Out) -> u64 {
        let (mut data, end, switch) = {
            let mut p = self.pending.lock();
            p.appends = 0;
            let data = std::mem::replace(&mut p.buf, std::mem::take(&mut out.spare));
            (data, p.appended, p.switch.take())
        };
        let start = end - data.len() as u64;
        let mut rest: &[u8] = &data;
        if let Some((at, newfile)) = switch {
            let cut = (at.saturating_sub(start) as usize).min(rest.len());
            if out.file.is_some() {
                self.write_out(out, &rest[..cut]);
                if let Some(f) = out.file.as_ref() {
                    let _ = f.sync_data();
                }
            }
            rest = &rest[cut..];
            // What the old file could not take goes first in the new one:
            // the files are read in order, and the old one ends where a
            // whole buffer ended.
            out.len = newfile.metadata().map_or(0, |m| m.len());
            out.file = Some(Arc::new(newfile));
            self.unsynced.store(false, Ordering::Relaxed);
        }
        if out.file.is_some() && (!rest.is_empty() || !out.backlog.is_empty()) {
            self.write_out(out, rest);
            self.unsynced.store(true, Ordering::Relaxed);
        }
        self.written.fetch_max(end, Ordering::AcqRel);
        data.clear();
        out.spare = data;
        end
    }

    /// Start logging into `incr` (already created); the writer thread
    /// starts if it is not running.
    pub fn start(self: &Arc<Self>, incr: File) {
        self.stats.current_size.store(0, Ordering::Relaxed);
        {
            let mut p = self.pending.lock();
            p.stop = false;
            p.reselect = true;
            let at = p.appended;
            p.switch = Some((at, incr));
        }
        self.on.store(true, Ordering::Relaxed);
        let mut w = self.writer.lock();
        if w.is_none() {
            let me = self.clone();
            *w = std::thread::Builder::new()
                .name("keel-aof".into())
                .spawn(move || me.writer_loop())
                .ok();
            self.running.store(w.is_some(), Ordering::Relaxed);
        }
    }

    /// Switch to a new incremental file at the current position. Called with
    /// every shard locked (a rewrite's flip), so the position is exact.
    pub fn switch_to(&self, incr: File) {
        // From here on the size counts the new incremental file.
        self.stats.current_size.store(0, Ordering::Relaxed);
        let mut p = self.pending.lock();
        let at = p.appended;
        p.switch = Some((at, incr));
        p.reselect = true;
        drop(p);
        self.wake.notify_one();
    }

    /// Stop logging, write and fsync what is pending, stop the thread.
    pub fn stop(&self) {
        self.on.store(false, Ordering::Relaxed);
        {
            let mut p = self.pending.lock();
            p.stop = true;
        }
        self.wake.notify_one();
        let handle = self.writer.lock().take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        self.running.store(false, Ordering::Relaxed);
        self.notify();
    }

    /// Write and fsync everything appended so far (SHUTDOWN, before exit).
    pub fn flush_and_sync(&self) {
        if !self.running.load(Ordering::Relaxed) {
            return;
        }
        let mut out = self.out.lock();
        let end = self.drain(&mut out);
        if let Some(f) = out.file.as_ref() {
            if let Err(e) = f.sync_data() {
                crate::logging::log_warning(&format!(
                    "Can't persist the append only file to disk (fsync): {e}"
                ));
            }
        }
        self.unsynced.store(false, Ordering::Relaxed);
        drop(out);
        self.durable.fetch_max(end, Ordering::AcqRel);
        self.notify();
    }

    /// Account for an fsync's outcome. Under `always` a failure ends the
    /// process (the policy cannot be kept); otherwise writes are refused
    /// until an fsync succeeds again, retried at the next second.
    fn fsynced(&self, result: std::io::Result<()>, policy: u8) {
        match result {
            Ok(()) => {
                if self.stats.fsync_failed.swap(false, Ordering::Relaxed) {
                    crate::logging::log_warning(
                        "AOF fsync error looks solved, Redis can write again.",
                    );
                }
            }
            Err(e) => {
                let why = strerror_of(&e);
                if policy == FSYNC_ALWAYS {
                    crate::logging::log_warning(&format!(
                        "Can't persist append only file to disk. fsync: {why}"
                    ));
                    std::process::exit(1);
                }
                if !self.stats.fsync_failed.swap(true, Ordering::Relaxed) {
                    crate::logging::log_warning(&format!(
                        "Error trying to fsync the AOF file: {why}"
                    ));
                }
                let errno = e.raw_os_error().unwrap_or(5);
                self.stats.fsync_errno.store(errno, Ordering::Relaxed);
                self.unsynced.store(true, Ordering::Relaxed);
            }
        }
    }

    fn notify(&self) {
        if let Some(f) = self.on_durable.get() {
            f();
        }
    }

    fn writer_loop(self: Arc<Self>) {
        let mut last_sync = Instant::now();
        // Appends the previous fsync covered, and how long it took.
        let mut last_group = 0usize;
        let mut last_fsync = Duration::ZERO;
        loop {
            let (group, stop) = {
                let mut p = self.pending.lock();
                while p.buf.is_empty() && p.switch.is_none() && !p.stop {
                    if self.backlog_len.load(Ordering::Relaxed) > 0 {
                        // A failed write waits in the backlog: try it again
                        // every 100 ms, so writes resume soon after the disk
                        // has room again.
                        self.wake.wait_for(&mut p, Duration::from_millis(100));
                        break;
                    }
                    let policy = self.policy.load(Ordering::Relaxed);
                    let unsynced = self.unsynced.load(Ordering::Relaxed);
                    if unsynced && policy == FSYNC_EVERYSEC {
                        let left = Duration::from_secs(1).saturating_sub(last_sync.elapsed());
                        if left.is_zero() {
                            break;
                        }
                        self.wake.wait_for(&mut p, left);
                    } else if unsynced && policy == FSYNC_ALWAYS {
                        break;
                    } else {
                        self.wake.wait_for(&mut p, Duration::from_millis(100));
                    }
                }
                let policy = self.policy.load(Ordering::Relaxed);
                if !p.stop && p.switch.is_none() && policy != FSYNC_ALWAYS {
                    // What is pending here is what no reply waited for
                    // (the cron's expiries and evictions): gather a
                    // millisecond of it into one write.
                    self.wake.wait_for(&mut p, Duration::from_millis(1));
                } else if !p.stop && p.switch.is_none() && p.appends < last_group {
                    // Group commit: the clients the last fsync released are
                    // sending their next writes; wait for as many (at most
                    // as long as an fsync takes, and 1 ms) so one fsync
                    // covers them all instead of a few.
                    p.want = last_group;
                    let deadline = Instant::now() + last_fsync.min(Duration::from_millis(1));
                    while p.appends < last_group && !p.stop {
                        if self.wake.wait_until(&mut p, deadline).timed_out() {
                            break;
                        }
                    }
                    p.want = 0;
                }
                (p.appends, p.stop)
            };
            let mut out = self.out.lock();
            let end = self.drain(&mut out);
            let policy = self.policy.load(Ordering::Relaxed);
            let unsynced = self.unsynced.load(Ordering::Relaxed);
            let due = match policy {
                FSYNC_ALWAYS => unsynced,
                FSYNC_EVERYSEC => unsynced && last_sync.elapsed() >= Duration::from_secs(1),
                _ => false,
            };
            if due || (stop && unsynced) {
                // fsync without holding `out`, so connections writing
                // through are not held behind the disk.
                let file = out.file.clone();
                self.unsynced.store(false, Ordering::Relaxed);
                drop(out);
                if let Some(f) = file {
                    let t = Instant::now();
                    let synced = f.sync_data();
                    last_fsync = t.elapsed();
                    last_group = if policy == FSYNC_ALWAYS { group } else { 0 };
                    self.fsynced(synced, policy);
                }
                last_sync = Instant::now();
            } else {
                drop(out);
            }
            self.durable.fetch_max(end, Ordering::AcqRel);
            self.notify();
            if stop {
                return;
            }
        }
    }

    /// Write `bytes` after whatever a failed write left. Under `always` a
    /// failure ends the process, as Redis ends it: the policy cannot be kept.
    /// Otherwise the unwritten bytes stay in the backlog, the status says
    /// why, and the next write or the writer thread's retry tries again.
    fn write_out(&self, out: &mut Out, bytes: &[u8]) {
        let Some(f) = out.file.clone() else {
            return;
        };
        let retrying = !out.backlog.is_empty();
        if retrying {
            out.backlog.extend_from_slice(bytes);
        }
        let data: &[u8] = if retrying { &out.backlog } else { bytes };
        let (done, err) = write_all_or_count(&f, data);
        let Some(e) = err else {
            out.len += done as u64;
            self.stats
                .current_size
                .fetch_add(done as u64, Ordering::Relaxed);
            if retrying {
                out.backlog.clear();
                self.backlog_len.store(0, Ordering::Relaxed);
                crate::logging::log_warning("AOF write error looks solved, Redis can write again.");
            }
            self.stats.last_write_ok.store(true, Ordering::Relaxed);
            return;
        };
        let mut kept = done;
        if done > 0 {
            // Cut the partial write back, so the file ends at a whole buffer;
            // if that fails too, what reached the file stays counted.
            // The file may not be in append mode: write on from its end.
            if f.set_len(out.len).is_ok() && (&*f).seek(SeekFrom::Start(out.len)).is_ok() {
                kept = 0;
            } else {
                out.len += done as u64;
                self.stats
                    .current_size
                    .fetch_add(done as u64, Ordering::Relaxed);
            }
        }
        let why = if done > 0 {
            format!(
                "Short write while writing to the AOF file: (nwritten={done}, expected={})",
                data.len()
            )
        } else {
            format!("Error writing to the AOF file: {}", strerror_of(&e))
        };
        if self.policy.load(Ordering::Relaxed) == FSYNC_ALWAYS {
            crate::logging::log_warning(&why);
            crate::logging::log_warning(
                "Can't recover from AOF write error when the AOF fsync policy is 'always'. \
                 Exiting...",
            );
            std::process::exit(1);
        }
        if out
            .logged
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(30))
        {
            crate::logging::log_warning(&why);
            out.logged = Some(Instant::now());
        }
        let errno = e.raw_os_error().unwrap_or(ENOSPC);
        self.stats.write_errno.store(errno, Ordering::Relaxed);
        self.stats.last_write_ok.store(false, Ordering::Relaxed);
        if retrying {
            out.backlog.drain(..kept);
        } else {
            out.backlog.extend_from_slice(&bytes[kept..]);
        }
        self.backlog_len
            .store(out.backlog.len() as u64, Ordering::Relaxed);
    }
}

/// Write all of `data`, retrying interrupted and short writes; on an error,
/// how much was written before it and the error.
fn write_all_or_count(mut f: &File, data: &[u8]) -> (usize, Option<std::io::Error>) {
    let mut done = 0;
    while done < data.len() {
        match f.write(&data[done..]) {
            Ok(0) => return (done, Some(std::io::Error::from_raw_os_error(ENOSPC))),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (done, Some(e)),
        }
    }
    (done, None)
}

/// ENOSPC, what a write that takes nothing means.
const ENOSPC: i32 = 28;

/// The C library's text for an OS error number, without Rust's suffix.
pub fn strerror(errno: i32) -> String {
    strerror_of(&std::io::Error::from_raw_os_error(errno))
}

/// An I/O error as the C library words it, without Rust's "(os error N)".
pub fn strerror_of(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(at) => s[..at].to_string(),
        None => s,
    }
}
