//! Loading at start-up (and DEBUG RELOAD): an RDB file straight into the
//! tables, or the AOF's files in manifest order, whose commands run through
//! the one execution path like any client's.

use crate::engine::Engine;
use crate::session::{ClientHandle, Session};
use bytes::Bytes;
use keel_persist::aof::{AofItem, CommandReader, Manifest};
use keel_persist::rdb::{to_store_value, RdbReader};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Stores one loaded key: database, key, value, absolute expiry (0: none).
pub type Insert<'a> = dyn FnMut(usize, &[u8], keel_store::Value, u64) + 'a;

/// What one load read.
#[derive(Debug, Default, Clone, Copy)]
pub struct Loaded {
    pub keys: u64,
    pub expired: u64,
}

/// Read the RDB at `path` into the keyspace. A key already present is
/// replaced. `insert` is told each key; the caller locks (start-up) or
/// already holds every lock (DEBUG RELOAD).
pub fn load_rdb(engine: &Engine, path: &Path, insert: &mut Insert<'_>) -> Result<Loaded, String> {
    let name = path.display().to_string();
    let data = std::fs::read(path).map_err(|e| format!("Can't read {name}: {e}"))?;
    load_rdb_bytes(engine, &name, &data, insert)
}

pub fn load_rdb_bytes(
    engine: &Engine,
    name: &str,
    data: &[u8],
    insert: &mut Insert<'_>,
) -> Result<Loaded, String> {
    let started = Instant::now();
    let mut last_log = Instant::now();
    let now = engine.now_ms();
    let limits = engine.config.compact_limits();
    let dbs = engine.keyspace.databases() as u64;
    let bad = |e: keel_persist::rdb::RdbError| {
        format!("Error reading the RDB file {name}: {e}. Unrecoverable error, aborting now.")
    };
    let mut r = RdbReader::new(data).map_err(bad)?;
    let mut out = Loaded::default();
    while let Some(entry) = r.next_entry().map_err(bad)? {
        if entry.db >= dbs {
            return Err(format!(
                "FATAL: Data file was created with a Redis server configured to handle more \
                 than {dbs} databases. Exiting"
            ));
        }
        let expire = entry.expire_at_ms.map(|t| t.max(1) as u64);
        if expire.is_some_and(|t| t <= now) {
            out.expired += 1;
            continue;
        }
        let value = match to_store_value(entry.value, &limits) {
            Ok(v) => v,
            Err(keel_persist::rdb::ConvertError::Empty) => {
                // Redis skips an empty collection on load, with a note.
                crate::config::log_notice(&format!(
                    "RDB has empty key '{}'; it is skipped",
                    String::from_utf8_lossy(&entry.key)
                ));
                continue;
            }
            Err(e) => {
                return Err(format!("Error loading key from the RDB file {name}: {e}"));
            }
        };
        insert(entry.db as usize, &entry.key, value, expire.unwrap_or(0));
        out.keys += 1;
        if last_log.elapsed().as_secs() >= 2 {
            last_log = Instant::now();
            crate::config::log_notice(&format!(
                "Loading {name}: {} keys loaded so far ({:.1} s)",
                out.keys,
                started.elapsed().as_secs_f64()
            ));
        }
    }
    Ok(out)
}

/// Insert into the keyspace, one shard lock per key (start-up: nobody else
/// is running yet).
pub fn insert_locking(engine: &Engine) -> impl FnMut(usize, &[u8], keel_store::Value, u64) + '_ {
    let now = engine.now_ms();
    move |db, key, value, expire| {
        let mut g = engine.keyspace.lock(engine.keyspace.shard_of(key));
        g.db(db).insert(key, value, expire, now);
    }
}

/// The manifest's path, if the AOF directory has one.
pub fn manifest_path(engine: &Engine) -> PathBuf {
    PathBuf::from(engine.config.get("appenddirname"))
        .join(format!("{}.manifest", engine.config.get("appendfilename")))
}

/// Load the AOF: base (RDB preamble or commands), then the incremental
/// files. Returns the manifest read (None: no AOF yet).
pub fn load_aof(engine: &Engine) -> Result<Option<(Manifest, Loaded)>, String> {
    let mpath = manifest_path(engine);
    let dir = PathBuf::from(engine.config.get("appenddirname"));
    let text = match std::fs::read(&mpath) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A single-file AOF of Redis before 7.0 in the working directory:
            // replay it; the base written at start-up then replaces it.
            let old = PathBuf::from(engine.config.get("appendfilename"));
            if old.is_file() {
                crate::config::log_notice(&format!(
                    "Loading the single-file AOF {} (it is replaced by a new multi part AOF)",
                    old.display()
                ));
                let loaded = replay(engine, &old, true)?;
                return Ok(Some((Manifest::default(), loaded)));
            }
            return Ok(None);
        }
        Err(e) => {
            return Err(format!(
                "Can't read the AOF manifest {}: {e}",
                mpath.display()
            ))
        }
    };
    let manifest = Manifest::parse(&text)
        .map_err(|e| format!("Invalid AOF manifest {}: {e}", mpath.display()))?;
    let mut total = Loaded::default();
    let files: Vec<_> = manifest
        .base
        .iter()
        .chain(manifest.incr.iter())
        .cloned()
        .collect();
    let n = files.len();
    for (i, f) in files.iter().enumerate() {
        let path = dir.join(&f.name);
        let last = i + 1 == n;
        let size = std::fs::metadata(&path).map(|m| m.len()).map_err(|e| {
            format!(
                "The AOF file {} doesn't exist or can't be read: {e}",
                path.display()
            )
        })?;
        if size == 0 {
            continue;
        }
        let is_rdb = {
            use std::io::Read;
            let mut head = [0u8; 5];
            std::fs::File::open(&path)
                .and_then(|mut fh| fh.read_exact(&mut head))
                .is_ok()
                && &head == b"REDIS"
        };
        let loaded = if is_rdb {
            let l = load_rdb(engine, &path, &mut insert_locking(engine))?;
            crate::config::log_notice(&format!(
                "DB loaded from base file {}: {} keys",
                f.name, l.keys
            ));
            l
        } else {
            let l = replay(engine, &path, last)?;
            crate::config::log_notice(&format!(
                "DB loaded from {} file {}",
                if i == 0 && manifest.base.is_some() {
                    "base"
                } else {
                    "incr"
                },
                f.name
            ));
            l
        };
        total.keys += loaded.keys;
        total.expired += loaded.expired;
    }
    Ok(Some((manifest, total)))
}

/// Run every command of an AOF file. A file that ends inside a command (or
/// inside MULTI) is cut back to its last complete one when it is the last
/// file and `aof-load-truncated` is yes; anything else malformed stops.
fn replay(engine: &Engine, path: &Path, last: bool) -> Result<Loaded, String> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| format!("Can't open {name}: {e}"))?;
    let mut reader = CommandReader::new(BufReader::with_capacity(1 << 16, file));
    let handle = Arc::new(ClientHandle::new(
        u64::MAX,
        "aof".into(),
        String::new(),
        engine.now_ms(),
    ));
    let mut session = Session::new(handle, true);
    let mut multi_at: Option<u64> = None;
    let mut count = 0u64;
    let mut cut: Option<u64> = None;
    while let Some(item) = reader.next_item() {
        match item {
            Ok(AofItem::Annotation(_)) => {}
            Ok(AofItem::Command(cmd)) => {
                let Some(first) = cmd.argv.first() else {
                    continue;
                };
                let argv: Vec<Bytes> = cmd.argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
                if engine.resolve(&argv).is_err() {
                    return Err(format!(
                        "Unknown command '{}' reading the append only file {name} at byte offset {}",
                        String::from_utf8_lossy(first),
                        cmd.offset
                    ));
                }
                if argv[0].eq_ignore_ascii_case(b"MULTI") {
                    multi_at = Some(cmd.offset);
                } else if argv[0].eq_ignore_ascii_case(b"EXEC") {
                    multi_at = None;
                }
                engine.execute(&mut session, argv);
                count += 1;
            }
            Err(e) => {
                if e.is_truncation() && last {
                    cut = Some(e.offset);
                    break;
                }
                return Err(format!(
                    "Bad file format reading the append only file {name} at byte offset {}: {e}. \
                     Make a backup of your AOF file, then use keel-check-aof --fix <filename.manifest>",
                    e.offset
                ));
            }
        }
    }
    if session.multi.is_some() {
        engine.execute(&mut session, vec![Bytes::from_static(b"DISCARD")]);
        if !last {
            return Err(format!(
                "Unexpected end of file reading the append only file {name}: an unfinished MULTI"
            ));
        }
        cut = Some(cut.map_or(multi_at.unwrap_or(0), |c| c.min(multi_at.unwrap_or(c))));
        crate::config::log_warning("Revert incomplete MULTI/EXEC transaction in AOF file");
    }
    if let Some(at) = cut {
        if !engine.config.get_bool("aof-load-truncated") {
            return Err(format!(
                "Unexpected end of file reading the append only file {name} at byte offset {at}. \
                 You can: 1) Make a backup of your AOF file, then use keel-check-aof --fix \
                 <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' \
                 configuration option to yes and restart the server."
            ));
        }
        crate::config::log_warning(&format!(
            "!!! Warning: short read while loading the AOF file {name}!!!"
        ));
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(at).and_then(|()| f.sync_all()));
        if let Err(e) = f {
            return Err(format!(
                "Can't truncate the AOF file {name} to {at} bytes: {e}"
            ));
        }
        crate::config::log_warning(&format!(
            "AOF {name} loaded anyway because aof-load-truncated is enabled (cut at byte offset {at})"
        ));
    }
    let _ = count;
    Ok(Loaded::default())
}

/// Whether load progress and state should show as loading (INFO).
pub fn set_loading(engine: &Engine, on: bool) {
    engine.persist.loading.store(on, Ordering::Relaxed);
}
