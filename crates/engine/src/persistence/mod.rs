//! Persistence as the engine drives it: when to snapshot, the AOF's fsync
//! policy and effect stream, loading at start-up. The file formats live in
//! `keel_persist`; this module decides what goes in them and when.
//!
//! - `aof`: the append-only file, group commit, the multi-part directory.
//! - `snapshot`: fork-free snapshots (the per-table copy-on-write of
//!   `keel_store`), SAVE/BGSAVE/BGREWRITEAOF jobs, save points.
//! - `load`: reading an RDB or an AOF into the keyspace.

pub mod aof;
pub mod load;
pub mod snapshot;
pub mod state;

use std::sync::atomic::Ordering;
use std::sync::Arc;

pub use aof::Aof;
pub use state::{PersistStats, Persistence};

/// Load what is on disk and start the AOF if it is on: before clients are
/// served. Redis's order: the AOF when `appendonly` is yes, else the RDB.
pub fn start(engine: &Arc<crate::Engine>) -> Result<(), String> {
    let p = &engine.persist;
    p.aof.policy.store(
        aof::policy_of(&engine.config.get("appendfsync")),
        Ordering::Relaxed,
    );
    p.aof.timestamps.store(
        engine.config.get_bool("aof-timestamp-enabled"),
        Ordering::Relaxed,
    );
    p.loading.store(true, Ordering::Relaxed);
    let started = std::time::Instant::now();
    let r = if engine.config.get_bool("appendonly") {
        start_aof(engine)
    } else {
        let path = snapshot::rdb_path(engine);
        if path.is_file() {
            load::load_rdb(engine, &path, &mut load::insert_locking(engine)).map(|l| {
                crate::logging::log_notice(&format!(
                    "DB loaded from disk: {:.3} seconds ({} keys, {} expired keys skipped)",
                    started.elapsed().as_secs_f64(),
                    l.keys,
                    l.expired
                ));
                p.stats.load_keys_loaded.store(l.keys, Ordering::Relaxed);
                p.stats
                    .load_keys_expired
                    .store(l.expired, Ordering::Relaxed);
                // A replica resumes its master's history from its snapshot,
                // as Redis's does, so its first PSYNC can continue it.
                if let Some((id, offset, db)) = l.repl.as_ref() {
                    if !engine.config.get("replicaof").is_empty() {
                        engine.repl.restore(id, *offset);
                        engine.follow.stream_db.store(*db as u64, Ordering::Relaxed);
                    }
                }
            })
        } else {
            Ok(())
        }
    };
    p.loading.store(false, Ordering::Relaxed);
    p.dirty_at_save
        .store(engine.stats.dirty(), Ordering::Relaxed);
    r
}

fn start_aof(engine: &Arc<crate::Engine>) -> Result<(), String> {
    let p = &engine.persist;
    let started = std::time::Instant::now();
    let loaded = load::load_aof(engine)?;
    let dir = std::path::PathBuf::from(engine.config.get("appenddirname"));
    let filename = engine.config.get("appendfilename");
    match loaded {
        Some((manifest, l)) if manifest.base.is_some() || !manifest.incr.is_empty() => {
            crate::logging::log_notice(&format!(
                "DB loaded from append only file: {:.3} seconds",
                started.elapsed().as_secs_f64()
            ));
            p.stats.load_keys_loaded.store(l.keys, Ordering::Relaxed);
            let mut files = p.aof.files.lock();
            files.dir = dir.clone();
            files.filename = filename.clone();
            files.manifest = manifest;
            let base_size = files
                .manifest
                .base
                .as_ref()
                .and_then(|b| std::fs::metadata(dir.join(&b.name)).ok())
                .map_or(0, |m| m.len());
            let incr_size: u64 = files
                .manifest
                .incr
                .iter()
                .filter_map(|f| std::fs::metadata(dir.join(&f.name)).ok())
                .map(|m| m.len())
                .sum();
            p.aof.stats.base_size.store(base_size, Ordering::Relaxed);
            let had_incr = !files.manifest.incr.is_empty();
            let incr = files.manifest.last_incr_or_new(&filename);
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(&incr.name))
                .map_err(|e| format!("Can't open the append-only file {}: {e}", incr.name))?;
            if !had_incr {
                files
                    .persist_manifest()
                    .map_err(|e| format!("Can't write the AOF manifest: {e}"))?;
            }
            drop(files);
            p.aof.start(file);
            p.aof.stats.current_size.store(incr_size, Ordering::Relaxed);
            Ok(())
        }
        _ => {
            // No AOF yet: write a base of the current dataset (as Redis 7
            // does on its first start with appendonly yes) and log from it.
            snapshot::start_rewrite(engine, snapshot::Locks::Take)
                .map_err(|_| "Can't create the AOF base file".to_string())?;
            while p.any_job() {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            if !p.stats.aof_last_rewrite_ok.load(Ordering::Relaxed) {
                return Err("Can't create the AOF base file (see the log)".into());
            }
            Ok(())
        }
    }
}

/// CONFIG SET of a persistence directive took effect in the config; apply it.
pub fn config_changed(engine: &crate::Engine, name: &str) {
    let p = &engine.persist;
    match name {
        "appendfsync" => p.aof.policy.store(
            aof::policy_of(&engine.config.get("appendfsync")),
            Ordering::Relaxed,
        ),
        "aof-timestamp-enabled" => p.aof.timestamps.store(
            engine.config.get_bool("aof-timestamp-enabled"),
            Ordering::Relaxed,
        ),
        // Writes are refused only while both still ask for it.
        "stop-writes-on-bgsave-error" | "save"
            if !engine.config.get_bool("stop-writes-on-bgsave-error")
                || engine.config.get("save").is_empty() =>
        {
            p.writes_refused.store(false, Ordering::Relaxed);
        }
        "appendonly" => {
            if engine.config.get_bool("appendonly") {
                if !p.aof.on() {
                    // The cron starts it: a rewrite whose flip turns logging on.
                    p.rewrite_scheduled.store(true, Ordering::Relaxed);
                }
            } else if p.aof.on() {
                p.aof.stop();
            }
        }
        _ => {}
    }
}

/// Before exit: fsync the AOF; with `save` (SHUTDOWN SAVE, or save points on
/// SIGTERM) write a final snapshot. Err names what failed.
pub fn prepare_shutdown(engine: &crate::Engine, save: bool) -> Result<(), String> {
    let p = &engine.persist;
    p.aof.flush_and_sync();
    if save {
        crate::logging::log_notice("Saving the final RDB snapshot before exiting.");
        let dbs = engine.keyspace.databases();
        let mut guards: Vec<_> = engine
            .lock_all_shards()
            .into_iter()
            .map(|(_, g)| g)
            .collect();
        let r = snapshot::save_with(engine, dbs, &mut |f| {
            for g in guards.iter_mut() {
                f(g);
            }
        });
        drop(guards);
        r?;
    }
    Ok(())
}

/// Redis's refusal of writes after a failed background save.
pub const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently \
    unable to persist to disk. Commands that may modify the data set are disabled, because this \
    instance is configured to report errors during writes if RDB snapshotting fails \
    (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB \
    error.";

/// Whether the disk fails so that Redis would refuse writes now: a failed
/// background save under `stop-writes-on-bgsave-error`, or an AOF that
/// cannot be written or fsynced. Two relaxed loads.
#[inline]
pub fn disk_failing(engine: &crate::kernel::Engine) -> bool {
    engine.persist.writes_refused.load(Ordering::Relaxed) || engine.persist.aof.failing()
}

/// The error Redis gives while the disk fails, the RDB's first.
pub fn disk_error(engine: &crate::kernel::Engine) -> Option<String> {
    if engine.persist.writes_refused.load(Ordering::Relaxed) {
        return Some(MISCONF.to_string());
    }
    engine.persist.aof.refusal()
}

/// Redis's refusal of `spec` while the disk fails: every write command, an
/// EXEC whose transaction queued one, and PING, with what that does to a
/// transaction (see [`crate::transaction::refuse`]). Called only when
/// [`disk_failing`].
pub(crate) fn refusal(
    engine: &crate::kernel::Engine,
    session: &mut crate::session::Session,
    spec: &crate::kernel::CommandSpec,
) -> Option<crate::error::CmdError> {
    if session.master {
        return None;
    }
    if !crate::transaction::writes(engine, session, spec) && spec.name != "PING" {
        return None;
    }
    let text = disk_error(engine)?;
    Some(crate::transaction::refuse(engine, session, spec, &text))
}
