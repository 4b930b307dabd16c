//! The active expiry cycle: reclaims keys whose time has passed and that nobody
//! reads, within a CPU budget per run.
//!
//! Redis samples random volatile keys and repeats while more than 10% of a sample
//! was stale. Keel keeps each table's volatile keys ordered by deadline, so the
//! cycle never samples: it pops exactly the keys that are due, earliest first,
//! shard by shard, until none are due or the time budget for this run is spent. The
//! budget follows Redis's: a quarter of the cron period, scaled by
//! `active-expire-effort`.

use crate::kernel::Engine;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Keys removed per lock hold, so a big backlog never blocks one shard for long.
const BATCH: usize = 128;

/// Where the next cycle resumes, so every shard gets its turn under a tight budget.
#[derive(Default)]
pub struct ExpireCursor {
    next_shard: usize,
}

/// The time one cycle may use at the configured `hz` and effort.
pub fn cycle_budget(engine: &Engine) -> Duration {
    let hz = engine.config.get_i64("hz").clamp(1, 500) as u64;
    let effort = engine.config.get_i64("active-expire-effort").clamp(1, 10) as u64;
    // 25% of the period at effort 1, growing 2 percentage points per effort step.
    let percent = 25 + 2 * (effort - 1);
    Duration::from_micros(1_000_000 / hz * percent / 100)
}

/// Run one cycle; returns the number of keys removed.
pub fn active_expire_cycle(engine: &Engine, cursor: &mut ExpireCursor, budget: Duration) -> usize {
    // CLIENT PAUSE keeps the dataset still: nothing expires while it lasts.
    if engine.pause.holds_expiry(engine.now_ms()) {
        return 0;
    }
    if engine.config.ops.active_expire_off.load(Ordering::Relaxed) {
        return 0;
    }
    // A replica's keys expire when its master's DEL arrives.
    if engine.follow.following() {
        return 0;
    }
    let start = Instant::now();
    let shards = engine.keyspace.shard_count();
    let mut removed = 0usize;
    let mut capped = false;
    let mut keys = Vec::with_capacity(BATCH);
    // The clock is read once per cycle and again only after a full batch: an
    // idle server walks 64 shards of 16 tables at every tick, and a clock read
    // per table was most of what it spent.
    let mut now = engine.now_ms();
    for _ in 0..shards {
        let idx = cursor.next_shard % shards;
        let mut exhausted = true;
        let mut worked = false;
        {
            let mut shard = engine.keyspace.lock(idx);
            for db in 0..shard.databases() {
                if shard.db_ref(db).volatile_len() == 0 {
                    continue;
                }
                worked = true;
                loop {
                    keys.clear();
                    let n = shard.db(db).expire_due(now, BATCH, &mut keys);
                    removed += n;
                    let logging = engine.logging();
                    let mut dels = Vec::new();
                    for k in &keys {
                        engine.watches.touch(db, k.as_slice());
                        let class = crate::notify::Class::EXPIRED;
                        crate::notify::notify(engine, class, "expired", db, k.as_slice());
                        if logging {
                            dels.push((
                                db,
                                vec![
                                    Bytes::from_static(b"DEL"),
                                    Bytes::copy_from_slice(k.as_slice()),
                                ],
                            ));
                        }
                    }
                    if engine.tracking.active() {
                        crate::tracking::expired(engine, &keys);
                    }
                    if !dels.is_empty() {
                        if engine.persist.aof.on() {
                            engine.persist.aof.append(&dels, now);
                        }
                        if engine.repl.active() {
                            engine.repl.feed(&dels);
                        }
                        if let Some(sink) = engine.sink.as_ref() {
                            for (db, argv) in &dels {
                                sink.append(*db, argv);
                            }
                        }
                    }
                    if n < BATCH {
                        break;
                    }
                    now = engine.now_ms();
                    if start.elapsed() >= budget {
                        exhausted = false;
                        capped = true;
                        break;
                    }
                }
                if !exhausted {
                    break;
                }
            }
        }
        if !exhausted {
            break;
        }
        cursor.next_shard = (idx + 1) % shards;
        if worked && start.elapsed() >= budget {
            capped = true;
            break;
        }
    }
    engine
        .stats
        .expired_keys
        .fetch_add(removed as u64, Ordering::Relaxed);
    let st = &engine.stats;
    st.active_expire_cycles.fetch_add(1, Ordering::Relaxed);
    st.expire_cycle_us
        .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
    if capped {
        st.expire_time_cap_reached.fetch_add(1, Ordering::Relaxed);
    }
    let monitor = engine.config.ops.latency_monitor_ms.load(Ordering::Relaxed);
    let ms = start.elapsed().as_millis() as u64;
    let now_s = engine.now_ms() / 1000;
    engine
        .latency
        .sample_if_needed(monitor, "expire-cycle", now_s, ms);
    removed
}
