//! Loading at start-up (and DEBUG RELOAD): an RDB file straight into the
//! tables, or the AOF's files in manifest order, whose commands run through
//! the one execution path like any client's.

use crate::kernel::Engine;
use crate::session::{ClientHandle, Session};
use bytes::Bytes;
use keel_persist::aof::{detect_file_format, AofItem, BaseFormat, CommandReader, Manifest};
use keel_persist::rdb::{to_store_value, RdbItem, RdbReader};
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Stores one loaded key: database, key, value, absolute expiry (0: none).
pub type Insert<'a> = dyn FnMut(usize, &[u8], keel_store::Value, u64) + 'a;

/// What one load read.
#[derive(Debug, Default, Clone)]
pub struct Loaded {
    pub keys: u64,
    pub expired: u64,
    /// The replication history the snapshot is the state of (its
    /// `repl-id`, `repl-offset` and `repl-stream-db` fields), if it says.
    pub repl: Option<(String, u64, usize)>,
}

/// Read the RDB at `path` into the keyspace. A key already present is
/// replaced. `insert` is told each key; the caller locks (start-up) or
/// already holds every lock (DEBUG RELOAD).
pub fn load_rdb(engine: &Engine, path: &Path, insert: &mut Insert<'_>) -> Result<Loaded, String> {
    let name = path.display().to_string();
    let data = std::fs::read(path).map_err(|e| format!("Can't read {name}: {e}"))?;
    read_rdb(engine, &name, &data, insert, false).map(|(l, _)| l)
}

/// Read an RDB snapshot from `data`. With `tail`, the snapshot may be
/// followed by commands (an AOF written with an RDB preamble): the offset
/// where they start is returned.
fn read_rdb(
    engine: &Engine,
    name: &str,
    data: &[u8],
    insert: &mut Insert<'_>,
    tail: bool,
) -> Result<(Loaded, Option<u64>), String> {
    let started = Instant::now();
    let mut last_log = Instant::now();
    let now = engine.now_ms();
    let limits = engine.config.compact_limits();
    let dbs = engine.keyspace.databases() as u64;
    let bad = |e: keel_persist::rdb::RdbError| {
        format!("Error reading the RDB file {name}: {e}. Unrecoverable error, aborting now.")
    };
    let mut r = RdbReader::new(data).map_err(bad)?;
    // A snapshot brings its own libraries (DEBUG RELOAD drops those loaded).
    *engine.scripting.functions.write() = Default::default();
    engine.scripting.bump_generation();
    let mut out = Loaded::default();
    loop {
        let entry = match r.next_item() {
            Ok(Some(RdbItem::Entry(entry))) => entry,
            Ok(Some(RdbItem::Library(code))) => {
                let lib = engine.scripting.build_library(code).and_then(|lib| {
                    engine
                        .scripting
                        .functions
                        .write()
                        .add(lib, true)
                        .map_err(|e| format!("ERR {e}"))
                });
                if let Err(e) = lib {
                    return Err(format!("Failed loading library, {e}"));
                }
                engine.scripting.bump_generation();
                continue;
            }
            Ok(None) => {
                out.repl = repl_of(r.aux());
                return Ok((out, None));
            }
            Err(e) => match keel_persist::aof::rdb_tail_start(&e) {
                Some(at) if tail => return Ok((out, Some(at as u64))),
                _ => return Err(bad(e)),
            },
        };
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
                crate::logging::log_notice(&format!(
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
            crate::logging::log_notice(&format!(
                "Loading {name}: {} keys loaded so far ({:.1} s)",
                out.keys,
                started.elapsed().as_secs_f64()
            ));
        }
    }
}

/// The `repl-*` fields of a snapshot, when all three are there and sound.
fn repl_of(aux: &[(Vec<u8>, Vec<u8>)]) -> Option<(String, u64, usize)> {
    let get = |name: &[u8]| {
        aux.iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    };
    let id = get(b"repl-id").filter(|id| id.len() == 40)?;
    let offset = get(b"repl-offset")?.parse::<u64>().ok()?;
    let db = get(b"repl-stream-db")?.parse::<usize>().ok()?;
    Some((id.to_string(), offset, db))
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
                crate::logging::log_notice(&format!(
                    "Loading the single-file AOF {} (it is replaced by a new multi part AOF)",
                    old.display()
                ));
                let loaded = load_file(engine, &old, true)?;
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
    let n = manifest.incr.len() + usize::from(manifest.base.is_some());
    for (i, f) in manifest.load_order().enumerate() {
        let path = dir.join(&f.name);
        let size = std::fs::metadata(&path).map(|m| m.len()).map_err(|e| {
            format!(
                "The AOF file {} doesn't exist or can't be read: {}",
                path.display(),
                super::aof::strerror_of(&e)
            )
        })?;
        if size > 0 {
            let loaded = load_file(engine, &path, i + 1 == n)?;
            crate::logging::log_notice(&format!("DB loaded from AOF file {}", f.name));
            total.keys += loaded.keys;
            total.expired += loaded.expired;
        }
    }
    Ok(Some((manifest, total)))
}

/// One AOF file: an RDB snapshot (a base, or an old file's preamble) and/or
/// commands. `last`: the file the log was appending to, which may be torn.
fn load_file(engine: &Engine, path: &Path, last: bool) -> Result<Loaded, String> {
    let name = path.display().to_string();
    let format = detect_file_format(path).map_err(|e| format!("Can't read {name}: {e}"))?;
    let (loaded, commands_at) = match format {
        BaseFormat::Rdb => {
            let data = std::fs::read(path).map_err(|e| format!("Can't read {name}: {e}"))?;
            let (l, tail) = read_rdb(engine, &name, &data, &mut insert_locking(engine), true)?;
            match tail {
                Some(at) => (l, at),
                None => return Ok(l),
            }
        }
        BaseFormat::Commands => (Loaded::default(), 0),
    };
    replay(engine, path, commands_at, last)?;
    Ok(loaded)
}

/// Run every command of an AOF file from byte `from` on. A file that ends
/// inside a command (or inside MULTI, which the reader reports at the MULTI)
/// is cut back there when it is the last file and `aof-load-truncated` is
/// yes; anything else malformed stops.
fn replay(engine: &Engine, path: &Path, from: u64, last: bool) -> Result<(), String> {
    let name = path.display().to_string();
    let mut file = std::fs::File::open(path).map_err(|e| format!("Can't open {name}: {e}"))?;
    file.seek(SeekFrom::Start(from))
        .map_err(|e| format!("Can't read {name}: {e}"))?;
    let mut reader = CommandReader::starting_at(file, from);
    let handle = Arc::new(ClientHandle::new(
        u64::MAX,
        "aof".into(),
        String::new(),
        engine.now_ms(),
    ));
    let mut session = Session::new(handle, true);
    let mut cut: Option<u64> = None;
    while let Some(item) = reader.next_item() {
        match item {
            Ok(AofItem::Annotation(_)) => {}
            Ok(AofItem::Command(cmd)) => {
                let argv: Vec<Bytes> = cmd.argv.into_iter().map(Bytes::from).collect();
                let Some(first) = argv.first() else {
                    continue;
                };
                if engine.resolve(&argv).is_err() {
                    return Err(format!(
                        "Unknown command '{}' reading the append only file {name} at byte offset {}",
                        String::from_utf8_lossy(first),
                        cmd.offset
                    ));
                }
                engine.execute(&mut session, argv);
            }
            Err(e) if e.is_truncation() && last => {
                cut = Some(e.offset);
                break;
            }
            Err(e) => {
                return Err(format!(
                    "Bad file format reading the append only file {name} at byte offset {}: {e}. \
                     Make a backup of your AOF file, then use keel-check-aof --fix <filename.manifest>",
                    e.offset
                ));
            }
        }
    }
    if session.multi.is_some() {
        // The reader reported the unfinished MULTI; drop what was queued.
        engine.execute(&mut session, vec![Bytes::from_static(b"DISCARD")]);
        crate::logging::log_warning("Revert incomplete MULTI/EXEC transaction in AOF file");
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
        crate::logging::log_warning(&format!(
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
        crate::logging::log_warning(&format!(
            "AOF {name} loaded anyway because aof-load-truncated is enabled (cut at byte offset {at})"
        ));
    }
    Ok(())
}
