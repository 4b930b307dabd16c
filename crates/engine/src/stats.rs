//! Server statistics for INFO. Counters on the request path are kept per thread
//! (each thread only adds to its own cache lines) and summed when INFO asks.

use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Per-command counters (INFO commandstats).
#[derive(Default)]
pub struct CmdCounters {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    pub rejected: AtomicU64,
    pub failed: AtomicU64,
}

#[derive(Default, Clone, Copy, Debug)]
pub struct CmdTotals {
    pub calls: u64,
    pub usec: u64,
    pub rejected: u64,
    pub failed: u64,
}

/// One thread's counters, indexed by command id.
pub struct ThreadStats {
    pub cmds: Box<[CmdCounters]>,
}

/// Global, rarely written counters.
#[derive(Default)]
pub struct Stats {
    threads: Mutex<Vec<Arc<ThreadStats>>>,
    pub total_connections: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub connected_clients: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub expired_keys: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub dirty: AtomicU64,
    pub active_expire_cycles: AtomicU64,
}

thread_local! {
    static LOCAL: RefCell<Option<Arc<ThreadStats>>> = const { RefCell::new(None) };
}

impl Stats {
    /// Run `f` with this thread's counters, registering them on first use.
    pub fn with_local<R>(&self, ncmds: usize, f: impl FnOnce(&ThreadStats) -> R) -> R {
        LOCAL.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.as_ref().is_none_or(|s| s.cmds.len() != ncmds) {
                let ts = Arc::new(ThreadStats {
                    cmds: (0..ncmds).map(|_| CmdCounters::default()).collect(),
                });
                self.threads.lock().push(ts.clone());
                *slot = Some(ts);
            }
            match slot.as_ref() {
                Some(ts) => f(ts),
                None => unreachable!("initialised above"),
            }
        })
    }

    pub fn command_totals(&self, id: usize) -> CmdTotals {
        let mut t = CmdTotals::default();
        for ts in self.threads.lock().iter() {
            if let Some(c) = ts.cmds.get(id) {
                t.calls += c.calls.load(Ordering::Relaxed);
                t.usec += c.usec.load(Ordering::Relaxed);
                t.rejected += c.rejected.load(Ordering::Relaxed);
                t.failed += c.failed.load(Ordering::Relaxed);
            }
        }
        t
    }

    pub fn total_commands(&self) -> u64 {
        self.threads
            .lock()
            .iter()
            .flat_map(|ts| ts.cmds.iter())
            .map(|c| c.calls.load(Ordering::Relaxed))
            .sum()
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        for ts in self.threads.lock().iter() {
            for c in ts.cmds.iter() {
                c.calls.store(0, Ordering::Relaxed);
                c.usec.store(0, Ordering::Relaxed);
                c.rejected.store(0, Ordering::Relaxed);
                c.failed.store(0, Ordering::Relaxed);
            }
        }
        for a in [
            &self.total_connections,
            &self.rejected_connections,
            &self.net_input_bytes,
            &self.net_output_bytes,
            &self.expired_keys,
            &self.keyspace_hits,
            &self.keyspace_misses,
            &self.active_expire_cycles,
        ] {
            a.store(0, Ordering::Relaxed);
        }
    }
}
