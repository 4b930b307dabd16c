//! Persistence's data: the [`Persistence`] the Engine holds (the AOF, the
//! background job in progress, what INFO persistence reports). Names no engine;
//! the parent module and its `snapshot` and `load` children drive it.

use super::aof::Aof;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    Bgsave,
    Rewrite,
    /// A full sync's snapshot, written to a replica.
    Replication,
}

pub struct Job {
    pub kind: JobKind,
    pub gen: u64,
    pub started: Instant,
}

/// Counters and state INFO persistence reports.
#[derive(Default)]
pub struct PersistStats {
    pub rdb_saves: AtomicU64,
    pub rdb_last_bgsave_ok: AtomicBool,
    pub rdb_last_bgsave_time_sec: AtomicI64,
    pub aof_rewrites: AtomicU64,
    pub aof_last_rewrite_ok: AtomicBool,
    pub aof_last_rewrite_time_sec: AtomicI64,
    pub aof_rewrites_consecutive_failures: AtomicU64,
    /// Unix seconds of the last failed AOF rewrite (for the retry delay).
    pub last_rewrite_fail_s: AtomicU64,
    pub load_keys_loaded: AtomicU64,
    pub load_keys_expired: AtomicU64,
    /// Unix seconds of the last failed background save (for the retry delay).
    pub last_bgsave_try_s: AtomicU64,
}

pub struct Persistence {
    pub aof: Arc<Aof>,
    /// The snapshot job in progress, if any (one at a time: the copy-on-write
    /// state lives in the tables).
    pub job: Mutex<Option<Job>>,
    pub bgsave_scheduled: AtomicBool,
    pub rewrite_scheduled: AtomicBool,
    /// `dirty` as of the image the last successful save wrote.
    pub dirty_at_save: AtomicU64,
    pub loading: AtomicBool,
    /// The current background job's generation: moved on to stop it
    /// (SHUTDOWN, DEBUG RELOAD), which its thread notices between chunks.
    pub job_gen: AtomicU64,
    /// SHUTDOWN already fsynced and saved what it had to.
    pub shutdown_done: AtomicBool,
    /// Writes are refused (stop-writes-on-bgsave-error after a failed save).
    pub writes_refused: AtomicBool,
    /// The replication id, offset and stream database at the last
    /// snapshot's flip, for its RDB's `repl-*` fields (None: no history).
    pub snapshot_repl: Mutex<Option<(String, u64, u64)>>,
    pub stats: PersistStats,
}

impl Default for Persistence {
    fn default() -> Self {
        let stats = PersistStats::default();
        stats.rdb_last_bgsave_ok.store(true, Ordering::Relaxed);
        stats.aof_last_rewrite_ok.store(true, Ordering::Relaxed);
        stats.rdb_last_bgsave_time_sec.store(-1, Ordering::Relaxed);
        stats.aof_last_rewrite_time_sec.store(-1, Ordering::Relaxed);
        let aof = Aof::default();
        aof.stats.last_write_ok.store(true, Ordering::Relaxed);
        Persistence {
            aof: Arc::new(aof),
            job: Mutex::new(None),
            bgsave_scheduled: AtomicBool::new(false),
            rewrite_scheduled: AtomicBool::new(false),
            dirty_at_save: AtomicU64::new(0),
            loading: AtomicBool::new(false),
            job_gen: AtomicU64::new(0),
            shutdown_done: AtomicBool::new(false),
            writes_refused: AtomicBool::new(false),
            snapshot_repl: Mutex::new(None),
            stats,
        }
    }
}

impl Persistence {
    pub fn job_running(&self, kind: JobKind) -> bool {
        self.job.lock().as_ref().is_some_and(|j| j.kind == kind)
    }

    pub fn any_job(&self) -> bool {
        self.job.lock().is_some()
    }
}
