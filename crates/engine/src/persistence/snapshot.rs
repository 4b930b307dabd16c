//! Snapshots without fork(): a flip starts a copy-on-write snapshot in every
//! table at one instant (all shard locks held, a pointer set per table, no
//! data copied); then the image is written one shard and one chunk at a time,
//! each chunk under that shard's lock only, while clients keep writing. The
//! store keeps, per table, the flip-time version of any entry changed before
//! the writer reached it (see `keel_store::Table::begin_snapshot`).
//!
//! SAVE (and DEBUG RELOAD, SHUTDOWN) writes with every lock held, as Redis's
//! SAVE blocks; BGSAVE and BGREWRITEAOF write on a background thread.

use crate::kernel::Ctx;
use crate::kernel::Engine;
use keel_persist::rdb::{RdbWriter, WriteOptions};
use keel_store::{Shard, Value};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Entries written per lock hold by a background job.
const CHUNK: usize = 256;

pub use super::state::{Job, JobKind};

/// Receives one entry of the image: key, value, absolute expiry.
pub type Emit<'a> = keel_store::keyspace::SnapshotEmit<'a>;
/// Runs its argument on every shard, all of them locked.
pub type ForEachShard<'a> = dyn FnMut(&mut dyn FnMut(&mut Shard)) + 'a;
/// Drains one database of the image into the emitter.
type Step<'a> = dyn FnMut(usize, &mut Emit<'_>) + 'a;

/// Keys and keys with an expiry, per database, at the flip.
pub type Counts = Vec<(u64, u64)>;

/// Start a snapshot in every table of every shard `for_each` visits (all of
/// them, with their locks held).
pub fn flip(dbs: usize, for_each: &mut ForEachShard<'_>) -> Counts {
    let mut counts = vec![(0u64, 0u64); dbs];
    for_each(&mut |shard: &mut Shard| {
        for (db, c) in counts.iter_mut().enumerate().take(shard.databases()) {
            let t = shard.db(db);
            c.0 += t.len() as u64;
            c.1 += t.volatile_len() as u64;
            t.begin_snapshot(db);
        }
    });
    counts
}

/// Hand up to `budget` entries of database `db`'s image in `shard` to `emit`;
/// true once that shard's part of the image is complete.
fn drain(shard: &mut Shard, db: usize, budget: usize, emit: &mut Emit<'_>) -> bool {
    shard
        .snapshot_table(db)
        .is_none_or(|t| t.snapshot_step(budget, emit))
}

/// Where the image goes: an RDB, or (an AOF base with
/// `aof-use-rdb-preamble no`) the commands that rebuild each key.
enum Out<W: std::io::Write> {
    Rdb(RdbWriter<W>),
    Commands { w: W, buf: Vec<u8> },
}

/// Writes the image, remembering the first error (the image is still
/// drained to the end, so the tables drop their snapshot state).
struct ImageWriter<W: std::io::Write> {
    w: Option<Out<W>>,
    err: Option<std::io::Error>,
    /// The background job writing it: stopped once the generation moves on.
    gen: Option<u64>,
}

impl<W: std::io::Write> ImageWriter<W> {
    fn entry(
        &mut self,
        db: usize,
        selected: &mut bool,
        counts: &Counts,
        k: &[u8],
        v: &Value,
        e: Option<u64>,
    ) {
        let Some(w) = self.w.as_mut() else { return };
        if self.err.is_some() {
            return;
        }
        let r = (|| match w {
            Out::Rdb(w) => {
                if !*selected {
                    let (n, vol) = counts.get(db).copied().unwrap_or((0, 0));
                    w.select_db(db as u64, n, vol)?;
                    *selected = true;
                }
                w.write_entry(k, v, e)
            }
            Out::Commands { w, buf } => {
                buf.clear();
                if !*selected {
                    let n = db.to_string();
                    keel_persist::aof::encode_command(buf, &[b"SELECT".as_slice(), n.as_bytes()]);
                    *selected = true;
                }
                keel_persist::aof::commands_for(buf, k, v, e);
                w.write_all(buf)
            }
        })();
        if let Err(e) = r {
            self.err = Some(e);
        }
    }
}

/// Note the replication history at a flip (every shard locked: a replica
/// feeds its master's bytes on under the command's locks, so the offset is
/// the data's), for the image's `repl-*` fields.
fn capture_repl(engine: &Engine) {
    let repl = engine.repl.active().then(|| {
        let (id, offset) = engine.repl.history();
        let db = engine.follow.stream_db.load(Ordering::Relaxed);
        (id, offset, db)
    });
    *engine.persist.snapshot_repl.lock() = repl;
}

fn options(engine: &Engine, aof_base: bool) -> WriteOptions {
    let c = &engine.config;
    let now_s = engine.now_ms() / 1000;
    let mut aux = vec![
        (
            b"redis-ver".to_vec(),
            crate::version::REDIS_VERSION.as_bytes().to_vec(),
        ),
        (b"redis-bits".to_vec(), b"64".to_vec()),
        (b"ctime".to_vec(), now_s.to_string().into_bytes()),
        (
            b"used-mem".to_vec(),
            (engine.used_memory)().to_string().into_bytes(),
        ),
    ];
    if !aof_base {
        // As Redis: a snapshot says which replication history it is the
        // state of, so a replica restarted from it can continue (PSYNC).
        if let Some((id, offset, db)) = engine.persist.snapshot_repl.lock().clone() {
            aux.push((b"repl-stream-db".to_vec(), db.to_string().into_bytes()));
            aux.push((b"repl-id".to_vec(), id.into_bytes()));
            aux.push((b"repl-offset".to_vec(), offset.to_string().into_bytes()));
        }
    }
    let base: &[u8] = if aof_base { b"1" } else { b"0" };
    aux.push((b"aof-base".to_vec(), base.to_vec()));
    WriteOptions {
        compress: c.get_bool("rdbcompression"),
        checksum: c.get_bool("rdbchecksum"),
        aux,
    }
}

/// Write the flipped image to `tmp`, fsync it; `step(db, emit)` drains one
/// database from every shard.
#[allow(clippy::too_many_arguments)]
fn write_image(
    engine: &Engine,
    tmp: &Path,
    counts: &Counts,
    libs: &[bytes::Bytes],
    aof_base: bool,
    gen: Option<u64>,
    step: &mut Step<'_>,
) -> std::io::Result<()> {
    let commands = aof_base && !engine.config.get_bool("aof-use-rdb-preamble");
    let opened = File::create(tmp).and_then(|f| {
        let mut w = BufWriter::with_capacity(1 << 16, f);
        if commands {
            use std::io::Write;
            let mut buf = Vec::new();
            keel_persist::aof::function_load_commands(&mut buf, libs);
            w.write_all(&buf)?;
            Ok(Out::Commands { w, buf: Vec::new() })
        } else {
            RdbWriter::new(w, options(engine, aof_base)).and_then(|mut w| {
                w.set_list_size(engine.config.compact_limits().list_size);
                w.write_libraries(libs)?;
                Ok(Out::Rdb(w))
            })
        }
    });
    let written = match opened {
        Ok(w) => write_entries(engine, w, counts, gen, step),
        Err(e) => Err(e),
    };
    let finished = written.and_then(|w| w.into_inner().map_err(|e| e.into_error()));
    match finished.and_then(|f| f.sync_all()) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(tmp);
            Err(e)
        }
    }
}

/// Drain the flipped image into `w` and finish it; the output back. The
/// image is drained to the end even after an error, so the tables drop
/// their snapshot state.
fn write_entries<W: std::io::Write>(
    engine: &Engine,
    w: Out<W>,
    counts: &Counts,
    gen: Option<u64>,
    step: &mut Step<'_>,
) -> std::io::Result<W> {
    let mut out = ImageWriter {
        w: Some(w),
        err: None,
        gen,
    };
    for db in 0..counts.len() {
        let mut selected = false;
        step(db, &mut |k, v, e| {
            out.entry(db, &mut selected, counts, k, v, e)
        });
    }
    if out
        .gen
        .is_some_and(|g| engine.persist.job_gen.load(Ordering::SeqCst) != g)
        && out.err.is_none()
    {
        out.err = Some(std::io::Error::other("the snapshot was stopped"));
    }
    if let Some(e) = out.err {
        return Err(e);
    }
    match out.w {
        Some(Out::Rdb(w)) => w.finish(),
        Some(Out::Commands { w, .. }) => Ok(w),
        None => Err(std::io::Error::other("no writer")),
    }
}

/// A full sync's snapshot: flip every table now (the caller's `also` runs
/// at the flip's instant, every shard locked: it joins the replica to the
/// stream there), then write the image as an RDB into `w` on a background
/// thread, one chunk per lock hold, and hand `done` the outcome. Err when
/// another background job holds the tables' snapshot.
pub fn start_image_to<W: std::io::Write + Send + 'static>(
    engine: &Engine,
    locks: Locks<'_, '_>,
    also: &mut dyn FnMut(),
    w: W,
    done: Box<dyn FnOnce(std::io::Result<()>) + Send>,
) -> Result<(), JobKind> {
    let p = &engine.persist;
    let taken = take_first(engine, &locks);
    let mut job = p.job.lock();
    if let Some(j) = job.as_ref() {
        return Err(j.kind);
    }
    let Some(me) = owned(engine) else {
        return Err(JobKind::Replication);
    };
    let mut libs = Vec::new();
    let counts = flip_with(engine, locks, taken, &mut || {
        libs = libraries(engine);
        also();
    });
    let gen = p.job_gen.fetch_add(1, Ordering::SeqCst) + 1;
    *job = Some(Job {
        kind: JobKind::Replication,
        gen,
        started: Instant::now(),
    });
    drop(job);
    let spawned = std::thread::Builder::new()
        .name("keel-repl-sync".into())
        .spawn(move || {
            let e = &*me;
            let r = RdbWriter::new(w, options(e, false)).and_then(|mut w| {
                w.set_list_size(e.config.compact_limits().list_size);
                w.write_libraries(&libs)?;
                write_entries(e, Out::Rdb(w), &counts, Some(gen), &mut |db, emit| {
                    drain_background(e, gen, db, emit)
                })
            });
            if e.persist.job_gen.load(Ordering::SeqCst) == gen {
                end_job(e, gen);
            }
            done(r.map(drop));
        });
    if spawned.is_err() {
        abort_all(engine);
        end_job(engine, gen);
        return Err(JobKind::Replication);
    }
    Ok(())
}

/// The snapshot file's path: `dbfilename` in the working directory (`dir`).
pub fn rdb_path(engine: &Engine) -> PathBuf {
    PathBuf::from(engine.config.get("dbfilename"))
}

/// SAVE: write the image with every shard lock held (the caller's guards).
pub fn save_foreground(ctx: &mut Ctx<'_>) -> Result<(), String> {
    let engine = ctx.engine;
    let dbs = engine.keyspace.databases();
    save_with(engine, dbs, &mut |f| ctx.for_each_shard(|s| f(s)))
}

/// The function libraries' code, as an image holds them. FUNCTION LOAD and
/// friends take every shard, so this read under the flip's locks is the
/// libraries at the flip.
pub fn libraries(engine: &Engine) -> Vec<bytes::Bytes> {
    engine
        .scripting
        .functions
        .read()
        .libraries
        .values()
        .map(|l| l.code.clone())
        .collect()
}

/// Flip and write the whole image while `for_each` holds every shard.
pub fn save_with(
    engine: &Engine,
    dbs: usize,
    for_each: &mut ForEachShard<'_>,
) -> Result<(), String> {
    let p = &engine.persist;
    if p.any_job() {
        // SHUTDOWN and DEBUG RELOAD stop a background job, as Redis kills its
        // child: its thread sees the flag, and the tables drop its state.
        p.job_gen.fetch_add(1, Ordering::SeqCst);
        *p.job.lock() = None;
        for_each(&mut |s| {
            for db in 0..s.databases() {
                s.db(db).abort_snapshot();
            }
        });
    }
    let counts = flip(dbs, for_each);
    capture_repl(engine);
    let libs = libraries(engine);
    let tmp = PathBuf::from(format!("temp-{}.rdb", std::process::id()));
    let dirty = engine.stats.dirty();
    let r = write_image(
        engine,
        &tmp,
        &counts,
        &libs,
        false,
        None,
        &mut |db, emit| {
            for_each(&mut |s| {
                drain(s, db, usize::MAX, emit);
            })
        },
    );
    finish_rdb(engine, &tmp, r, dirty, false)
}

fn finish_rdb(
    engine: &Engine,
    tmp: &Path,
    written: std::io::Result<()>,
    dirty: u64,
    background: bool,
) -> Result<(), String> {
    let p = &engine.persist;
    let dest = rdb_path(engine);
    let root = || {
        std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default()
    };
    let r = written
        .map_err(|e| {
            format!(
                "Write error saving DB on disk: {}",
                super::aof::strerror_of(&e)
            )
        })
        .and_then(|()| {
            std::fs::rename(tmp, &dest).map_err(|e| {
                format!(
                    "Error moving temp DB file {} on the final destination {} (in server root \
                     dir {}): {e}",
                    tmp.display(),
                    dest.display(),
                    root()
                )
            })
        });
    match r {
        Ok(()) => {
            crate::logging::log_notice("DB saved on disk");
            p.dirty_at_save.store(dirty, Ordering::Relaxed);
            engine
                .last_save_s
                .store(engine.now_ms() / 1000, Ordering::Relaxed);
            p.stats.rdb_saves.fetch_add(1, Ordering::Relaxed);
            if background {
                p.stats.rdb_last_bgsave_ok.store(true, Ordering::Relaxed);
            }
            p.writes_refused.store(false, Ordering::Relaxed);
            Ok(())
        }
        Err(why) => {
            let _ = std::fs::remove_file(tmp);
            crate::logging::log_warning(&why);
            // As Redis: only a failed background save stops writes; a
            // failed SAVE or SHUTDOWN save is the caller's to see.
            if background {
                p.stats.rdb_last_bgsave_ok.store(false, Ordering::Relaxed);
                p.stats
                    .last_bgsave_try_s
                    .store(engine.now_ms() / 1000, Ordering::Relaxed);
                if engine.config.get_bool("stop-writes-on-bgsave-error")
                    && !engine.config.get("save").is_empty()
                {
                    p.writes_refused.store(true, Ordering::Relaxed);
                }
            }
            Err(why)
        }
    }
}

/// Drain every shard's part of database `db` from a background thread, one
/// chunk per lock hold.
fn drain_background(engine: &Engine, gen: u64, db: usize, emit: &mut Emit<'_>) {
    for s in 0..engine.keyspace.shard_count() {
        loop {
            if engine.persist.job_gen.load(Ordering::Relaxed) != gen {
                return;
            }
            let mut g = engine.keyspace.lock(s);
            if drain(&mut g, db, CHUNK, emit) {
                break;
            }
        }
    }
}

/// Where a flip can take its locks: the command's own guards (it declared
/// ALL_SHARDS), or every shard locked here (cron).
pub enum Locks<'c, 'a> {
    Held(&'c mut Ctx<'a>),
    Take,
}

/// Every shard, locked before the job slot when the caller holds none: a
/// command that holds its shards takes the job slot after them (BGSAVE,
/// INFO), so the cron must take them in that order too.
type Taken<'e> = Option<Vec<(usize, keel_store::ShardGuard<'e>)>>;

fn take_first<'e>(engine: &'e Engine, locks: &Locks<'_, '_>) -> Taken<'e> {
    matches!(locks, Locks::Take).then(|| engine.lock_all_shards())
}

fn flip_with(
    engine: &Engine,
    locks: Locks<'_, '_>,
    taken: Taken<'_>,
    also: &mut dyn FnMut(),
) -> Counts {
    let dbs = engine.keyspace.databases();
    match locks {
        Locks::Held(ctx) => {
            let c = flip(dbs, &mut |f| ctx.for_each_shard(|s| f(s)));
            capture_repl(engine);
            also();
            c
        }
        Locks::Take => {
            let mut guards: Vec<_> = taken
                .unwrap_or_else(|| engine.lock_all_shards())
                .into_iter()
                .map(|(_, g)| g)
                .collect();
            let c = flip(dbs, &mut |f| {
                for g in guards.iter_mut() {
                    f(g);
                }
            });
            capture_repl(engine);
            also();
            c
        }
    }
}

/// The engine as an owned handle, for a background thread.
fn owned(engine: &Engine) -> Option<Arc<Engine>> {
    engine.me.get().and_then(std::sync::Weak::upgrade)
}

/// BGSAVE: flip now, write on a background thread. Err when a job runs.
pub fn start_bgsave(engine: &Engine, locks: Locks<'_, '_>) -> Result<(), JobKind> {
    let p = &engine.persist;
    let taken = take_first(engine, &locks);
    let mut job = p.job.lock();
    if let Some(j) = job.as_ref() {
        return Err(j.kind);
    }
    let Some(me) = owned(engine) else {
        return Err(JobKind::Bgsave);
    };
    let dirty = engine.stats.dirty();
    let mut libs = Vec::new();
    let counts = flip_with(engine, locks, taken, &mut || libs = libraries(engine));
    let gen = p.job_gen.fetch_add(1, Ordering::SeqCst) + 1;
    *job = Some(Job {
        kind: JobKind::Bgsave,
        gen,
        started: Instant::now(),
    });
    drop(job);
    p.bgsave_scheduled.store(false, Ordering::Relaxed);
    crate::logging::log_notice("Background saving started (fork-free snapshot)");
    let spawned = std::thread::Builder::new()
        .name("keel-bgsave".into())
        .spawn(move || {
            let e = &*me;
            let tmp = PathBuf::from(format!("temp-{}-{gen}.rdb", std::process::id()));
            let started = Instant::now();
            let r = write_image(
                e,
                &tmp,
                &counts,
                &libs,
                false,
                Some(gen),
                &mut |db, emit| drain_background(e, gen, db, emit),
            );
            if e.persist.job_gen.load(Ordering::SeqCst) != gen {
                // Stopped by SHUTDOWN or DEBUG RELOAD: not a failure.
                let _ = std::fs::remove_file(&tmp);
                return;
            }
            let ok = finish_rdb(e, &tmp, r, dirty, true).is_ok();
            if ok {
                crate::logging::log_notice("Background saving terminated with success");
            }
            e.persist
                .stats
                .rdb_last_bgsave_time_sec
                .store(started.elapsed().as_secs() as i64, Ordering::Relaxed);
            end_job(e, gen);
        });
    if spawned.is_err() {
        abort_all(engine);
        end_job(engine, gen);
        return Err(JobKind::Bgsave);
    }
    Ok(())
}

/// The AOF directory's path and file name prefix.
fn aof_dir(engine: &Engine) -> (PathBuf, String) {
    (
        PathBuf::from(engine.config.get("appenddirname")),
        engine.config.get("appendfilename"),
    )
}

/// BGREWRITEAOF (and turning the AOF on): a new incremental file is created
/// and named in the manifest first (so loading the old base, old incremental
/// files and the new, still empty one is complete at every moment); the flip
/// then moves the log to it and snapshots every table; the new base is
/// written in the background and a second manifest replaces the old files.
pub fn start_rewrite(engine: &Engine, locks: Locks<'_, '_>) -> Result<(), JobKind> {
    let p = &engine.persist;
    let taken = take_first(engine, &locks);
    let mut job = p.job.lock();
    if let Some(j) = job.as_ref() {
        return Err(j.kind);
    }
    let Some(me) = owned(engine) else {
        return Err(JobKind::Rewrite);
    };
    let aof = p.aof.clone();
    let (dir, filename) = aof_dir(engine);
    let turning_on = engine.config.get_bool("appendonly") && !aof.on();
    let logging = aof.on() || turning_on;
    // The incremental file the log moves to at the flip, made before it
    // without locks. With the log already on it is named in the manifest
    // now (the old base and files plus this one are complete at every
    // moment); when the AOF is being turned on, only once its base exists.
    let prepared = (|| -> std::io::Result<Option<File>> {
        std::fs::create_dir_all(&dir)?;
        let mut files = aof.files.lock();
        files.dir = dir.clone();
        files.filename = filename.clone();
        if !logging {
            return Ok(None);
        }
        let incr = files.manifest.next_incr(&filename);
        let f = File::create(dir.join(&incr.name))?;
        if !turning_on {
            files.persist_manifest()?;
        }
        Ok(Some(f))
    })();
    let incr_file = match prepared {
        Ok(f) => f,
        Err(e) => {
            crate::logging::log_warning(&format!("Can't start the AOF rewrite: {e}"));
            rewrite_failed(engine);
            return Err(JobKind::Rewrite);
        }
    };
    let rdb = engine.config.get_bool("aof-use-rdb-preamble");
    let mut incr_file = incr_file;
    let mut libs = Vec::new();
    let counts = flip_with(engine, locks, taken, &mut || {
        libs = libraries(engine);
        if let Some(f) = incr_file.take() {
            if turning_on {
                aof.start(f);
            } else if logging {
                aof.switch_to(f);
            }
        }
    });
    let gen = p.job_gen.fetch_add(1, Ordering::SeqCst) + 1;
    *job = Some(Job {
        kind: JobKind::Rewrite,
        gen,
        started: Instant::now(),
    });
    drop(job);
    p.rewrite_scheduled.store(false, Ordering::Relaxed);
    crate::logging::log_notice(
        "Background append only file rewriting started (fork-free snapshot)",
    );
    let spawned = std::thread::Builder::new()
        .name("keel-aofrw".into())
        .spawn(move || {
            let e = &*me;
            let started = Instant::now();
            let tmp = dir.join(format!("temp-rewriteaof-bg-{}.aof", std::process::id()));
            let r = write_image(e, &tmp, &counts, &libs, true, Some(gen), &mut |db, emit| {
                drain_background(e, gen, db, emit)
            });
            let r = r.and_then(|()| finish_rewrite(e, &tmp, rdb, logging));
            let st = &e.persist.stats;
            match r {
                Ok(()) => {
                    crate::logging::log_notice("Background AOF rewrite finished successfully");
                    st.aof_rewrites.fetch_add(1, Ordering::Relaxed);
                    st.aof_last_rewrite_ok.store(true, Ordering::Relaxed);
                    st.aof_rewrites_consecutive_failures
                        .store(0, Ordering::Relaxed);
                }
                Err(err) => {
                    crate::logging::log_warning(&format!("Background AOF rewrite failed: {err}"));
                    let _ = std::fs::remove_file(&tmp);
                    if turning_on {
                        // No base, so the log is not a complete AOF yet:
                        // stop it and try again later, as Redis keeps
                        // waiting for a rewrite that succeeds.
                        e.persist.aof.stop();
                        e.persist.rewrite_scheduled.store(true, Ordering::Relaxed);
                    }
                    rewrite_failed(e);
                }
            }
            st.aof_last_rewrite_time_sec
                .store(started.elapsed().as_secs() as i64, Ordering::Relaxed);
            end_job(e, gen);
        });
    if spawned.is_err() {
        abort_all(engine);
        end_job(engine, gen);
        return Err(JobKind::Rewrite);
    }
    Ok(())
}

/// The new base is on disk: name it, and make the manifest say new base +
/// (when logging) the incremental file opened at the flip; everything older
/// is history, deleted once the manifest no longer names it.
fn finish_rewrite(engine: &Engine, tmp: &Path, rdb: bool, logging: bool) -> std::io::Result<()> {
    let aof = &engine.persist.aof;
    let mut files = aof.files.lock();
    let filename = files.filename.clone();
    let base = files.manifest.new_base(&filename, rdb);
    let dest = files.dir.join(&base.name);
    std::fs::rename(tmp, &dest)?;
    files.manifest.mark_rewritten_incr_as_history(logging);
    // As Redis: the manifest names the replaced files as history until they
    // are deleted, so a crash in between leaves them known, not loaded.
    files.persist_manifest()?;
    let history = files.manifest.take_history();
    if !history.is_empty() {
        for f in history {
            let _ = std::fs::remove_file(files.dir.join(&f.name));
        }
        files.persist_manifest()?;
    }
    let base_size = std::fs::metadata(&dest).map_or(0, |m| m.len());
    aof.stats.base_size.store(base_size, Ordering::Relaxed);
    Ok(())
}

/// A rewrite failed: count it and hold automatic retries back a while.
fn rewrite_failed(engine: &Engine) {
    let st = &engine.persist.stats;
    st.aof_last_rewrite_ok.store(false, Ordering::Relaxed);
    st.aof_rewrites_consecutive_failures
        .fetch_add(1, Ordering::Relaxed);
    st.last_rewrite_fail_s
        .store(engine.now_ms() / 1000, Ordering::Relaxed);
}

/// Drop the snapshot state of every table (a job that could not start).
fn abort_all(engine: &Engine) {
    for i in 0..engine.keyspace.shard_count() {
        let mut g = engine.keyspace.lock(i);
        for db in 0..g.databases() {
            g.db(db).abort_snapshot();
        }
    }
}

/// The cron's part: scheduled jobs and `save` points.
pub fn cron(engine: &Engine) {
    let p = &engine.persist;
    if p.any_job() {
        return;
    }
    let now_s = engine.now_ms() / 1000;
    let failed_s = p.stats.last_rewrite_fail_s.load(Ordering::Relaxed);
    let rewrite_may_retry =
        p.stats.aof_last_rewrite_ok.load(Ordering::Relaxed) || now_s.saturating_sub(failed_s) >= 5;
    if p.rewrite_scheduled.load(Ordering::Relaxed) && rewrite_may_retry {
        let _ = start_rewrite(engine, Locks::Take);
        return;
    }
    if p.bgsave_scheduled.load(Ordering::Relaxed) {
        let _ = start_bgsave(engine, Locks::Take);
        return;
    }
    let changes = engine
        .stats
        .dirty()
        .saturating_sub(p.dirty_at_save.load(Ordering::Relaxed));
    let last = engine.last_save_s.load(Ordering::Relaxed);
    let retry_ok = p.stats.rdb_last_bgsave_ok.load(Ordering::Relaxed)
        || now_s.saturating_sub(p.stats.last_bgsave_try_s.load(Ordering::Relaxed)) >= 5;
    // Writes are refused until a save succeeds: rather than wait for the
    // next save point, which may be an hour away (Redis waits), try again
    // every second, so writes resume soon after the disk has room again.
    if p.writes_refused.load(Ordering::Relaxed)
        && now_s.saturating_sub(p.stats.last_bgsave_try_s.load(Ordering::Relaxed)) >= 1
    {
        let _ = start_bgsave(engine, Locks::Take);
        return;
    }
    let points = engine.config.get("save");
    let words: Vec<u64> = points
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    for pair in words.chunks(2) {
        if let [secs, n] = *pair {
            if changes >= n && now_s.saturating_sub(last) >= secs && retry_ok {
                crate::logging::log_notice(&format!("{n} changes in {secs} seconds. Saving..."));
                let _ = start_bgsave(engine, Locks::Take);
                return;
            }
        }
    }
    // Automatic AOF rewrite.
    let aof = &p.aof;
    if aof.on() {
        let pct = engine.config.get_i64("auto-aof-rewrite-percentage");
        let min = engine.config.get_i64("auto-aof-rewrite-min-size").max(0) as u64;
        let base = aof.stats.base_size.load(Ordering::Relaxed).max(1);
        let size = base + aof.stats.current_size.load(Ordering::Relaxed);
        if pct > 0 && size > min && (size - base) * 100 / base >= pct as u64 && rewrite_may_retry {
            crate::logging::log_notice(&format!(
                "Starting automatic rewriting of AOF on {}% growth",
                (size - base) * 100 / base
            ));
            let _ = start_rewrite(engine, Locks::Take);
        }
    }
}

/// A job's thread is done: forget it, unless a newer one replaced it.
fn end_job(engine: &Engine, gen: u64) {
    let mut job = engine.persist.job.lock();
    if job.as_ref().is_some_and(|j| j.gen == gen) {
        *job = None;
    }
}
