//! Server statistics for INFO. Counters on the request path are kept per thread
//! (each thread only adds to its own cache lines) and summed when INFO asks.

use crate::histogram::{Counts, Histogram};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::OnceLock;

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

/// One thread's counters. Only the owning thread writes them, so increments are a
/// plain load and store (see [`bump`]); other threads only read them for INFO.
pub struct ThreadStats {
    /// Indexed by command id.
    pub cmds: Box<[CmdCounters]>,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub dirty: AtomicU64,
    /// Error replies sent (INFO total_error_replies).
    pub error_replies: AtomicU64,
    /// Error replies by their first word (INFO errorstats). Only the owning
    /// thread adds, so the lock is uncontended except while INFO reads.
    pub errors: Mutex<Vec<(Box<str>, u64)>>,
    /// Latency histograms by command id, created on a command's first
    /// recorded call (latency-tracking).
    pub latency: Box<[OnceLock<Histogram>]>,
}

/// At most this many distinct error prefixes are tracked per thread, so a
/// stream of novel error codes cannot grow the table without bound.
pub const MAX_ERROR_KINDS: usize = 128;

impl ThreadStats {
    /// Count one error reply whose text is `text` (without the leading `-`).
    pub fn count_error(&self, text: &[u8]) {
        bump(&self.error_replies, 1);
        let end = text.iter().position(|&b| b == b' ').unwrap_or(text.len());
        let code = &text[..end];
        let mut errors = self.errors.lock();
        if let Some(e) = errors.iter_mut().find(|(k, _)| k.as_bytes() == code) {
            e.1 += 1;
        } else if errors.len() < MAX_ERROR_KINDS {
            errors.push((String::from_utf8_lossy(code).into(), 1));
        }
    }

    /// Record a call of command `id` that took `usec` microseconds.
    #[inline]
    pub fn record_latency(&self, id: usize, usec: u64) {
        if let Some(h) = self.latency.get(id) {
            h.get_or_init(Histogram::default).record_usec(usec);
        }
    }
}
pub use crate::counter::bump;

/// Global, rarely written counters.
#[derive(Default)]
pub struct Stats {
    threads: Mutex<Vec<Arc<ThreadStats>>>,
    pub total_connections: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub connected_clients: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    /// Socket reads that returned data, and reply flushes (INFO
    /// total_reads_processed / total_writes_processed).
    pub reads_processed: AtomicU64,
    pub writes_processed: AtomicU64,
    /// Idle connections' buffers given back (INFO reply_buffer_shrinks).
    pub reply_buffer_shrinks: AtomicU64,
    pub expired_keys: AtomicU64,
    /// Clients closed by `maxmemory-clients` (INFO evicted_clients).
    pub evicted_clients: AtomicU64,
    pub active_expire_cycles: AtomicU64,
    /// Time spent in active expiry cycles, and how many ran out of time.
    pub expire_cycle_us: AtomicU64,
    pub expire_time_cap_reached: AtomicU64,
    /// `used_memory` once the server was set up, before loading any data
    /// (INFO used_memory_startup).
    pub memory_startup: AtomicU64,
    /// Highest `used_memory` seen (INFO used_memory_peak).
    pub memory_peak: AtomicU64,
    /// Recent per-second rates for INFO's instantaneous_* fields.
    pub rates: InstantRates,
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
                    keyspace_hits: AtomicU64::new(0),
                    keyspace_misses: AtomicU64::new(0),
                    dirty: AtomicU64::new(0),
                    error_replies: AtomicU64::new(0),
                    errors: Mutex::new(Vec::new()),
                    latency: (0..ncmds).map(|_| OnceLock::new()).collect(),
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

    fn sum_threads(&self, f: impl Fn(&ThreadStats) -> &AtomicU64) -> u64 {
        self.threads
            .lock()
            .iter()
            .map(|ts| f(ts).load(Ordering::Relaxed))
            .sum()
    }

    pub fn keyspace_hits(&self) -> u64 {
        self.sum_threads(|ts| &ts.keyspace_hits)
    }

    pub fn keyspace_misses(&self) -> u64 {
        self.sum_threads(|ts| &ts.keyspace_misses)
    }

    /// Changes to the dataset since start (INFO rdb_changes_since_last_save).
    pub fn dirty(&self) -> u64 {
        self.sum_threads(|ts| &ts.dirty)
    }

    pub fn total_commands(&self) -> u64 {
        self.threads
            .lock()
            .iter()
            .flat_map(|ts| ts.cmds.iter())
            .map(|c| c.calls.load(Ordering::Relaxed))
            .sum()
    }

    /// INFO total_error_replies.
    pub fn error_replies(&self) -> u64 {
        self.sum_threads(|ts| &ts.error_replies)
    }

    /// INFO errorstats: count per error code, in code order.
    pub fn error_counts(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for ts in self.threads.lock().iter() {
            for (k, n) in ts.errors.lock().iter() {
                *out.entry(k.to_string()).or_insert(0) += n;
            }
        }
        out
    }

    /// The latency histogram of command `id` summed over threads; `None` when
    /// no call of it has been recorded.
    pub fn latency_counts(&self, id: usize) -> Option<Counts> {
        let mut counts: Option<Counts> = None;
        for ts in self.threads.lock().iter() {
            if let Some(h) = ts.latency.get(id).and_then(OnceLock::get) {
                h.add_to(counts.get_or_insert_with(Counts::default));
            }
        }
        counts.filter(|c| c.total() > 0)
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
            // Redis keeps the dirty counter across RESETSTAT; hits and misses reset.
            ts.keyspace_hits.store(0, Ordering::Relaxed);
            ts.keyspace_misses.store(0, Ordering::Relaxed);
            ts.error_replies.store(0, Ordering::Relaxed);
            ts.errors.lock().clear();
            for h in ts.latency.iter().filter_map(OnceLock::get) {
                h.reset();
            }
        }
        for a in [
            &self.total_connections,
            &self.rejected_connections,
            &self.net_input_bytes,
            &self.net_output_bytes,
            &self.reads_processed,
            &self.writes_processed,
            &self.reply_buffer_shrinks,
            &self.expired_keys,
            &self.evicted_clients,
            &self.active_expire_cycles,
            &self.expire_cycle_us,
            &self.expire_time_cap_reached,
        ] {
            a.store(0, Ordering::Relaxed);
        }
    }
}

/// How many samples the instantaneous rates average over (Redis uses 16).
const RATE_SAMPLES: usize = 16;
/// Samples closer together than this are skipped, so rates do not depend on `hz`.
const RATE_PERIOD_MS: u64 = 100;

/// Per-second rates of a few counters, averaged over the last samples taken by
/// the server cron: [commands, net input bytes, net output bytes].
#[derive(Default)]
pub struct InstantRates {
    state: Mutex<RateState>,
}

#[derive(Default)]
struct RateState {
    last_ms: u64,
    last: [u64; 3],
    ring: [[f64; RATE_SAMPLES]; 3],
    next: usize,
}

impl InstantRates {
    /// Record the counters' current totals at `now_ms`.
    pub fn sample(&self, now_ms: u64, totals: [u64; 3]) {
        let mut st = self.state.lock();
        if st.last_ms == 0 {
            st.last_ms = now_ms;
            st.last = totals;
            return;
        }
        let dt = now_ms.saturating_sub(st.last_ms);
        if dt < RATE_PERIOD_MS {
            return;
        }
        let slot = st.next;
        for (i, total) in totals.iter().enumerate() {
            // Counters go backwards after CONFIG RESETSTAT: count that as no change.
            let delta = total.saturating_sub(st.last[i]);
            st.ring[i][slot] = delta as f64 * 1000.0 / dt as f64;
        }
        st.next = (slot + 1) % RATE_SAMPLES;
        st.last_ms = now_ms;
        st.last = totals;
    }

    /// The average per-second rate of each counter over the stored samples.
    pub fn per_second(&self) -> [f64; 3] {
        let st = self.state.lock();
        let mut out = [0.0; 3];
        for (o, ring) in out.iter_mut().zip(st.ring.iter()) {
            *o = ring.iter().sum::<f64>() / RATE_SAMPLES as f64;
        }
        out
    }
}
