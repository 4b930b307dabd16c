//! Function libraries between Keel's formats and a real Redis 7.0: the libraries of a file
//! redis-server SAVEs and of its FUNCTION DUMP payloads read back in Keel; a file and a payload
//! Keel writes load into redis-server and pass both checkers; a command-form AOF base is the
//! one Redis's rewrite writes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_persist::aof::{commands_for, encode_command, function_load_commands};
use keel_persist::rdb::{
    decode_function_dump, encode_function_dump, encode_function_dump_with, RdbItem, RdbReader,
    RdbWriter, WriteOptions,
};
use keel_store::Value;
use keel_testkit::{Conn, Reply};

/// Whether redis-server is there to test against; under CI it must be.
fn have_redis() -> bool {
    let ok = Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "redis-server is required under CI"
        );
        eprintln!("SKIPPED: redis-server is not installed");
    }
    ok
}

fn scratch_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("keel-persist-fn-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Two libraries, the first long enough to be LZF-compressed in files and payloads.
fn libraries() -> Vec<Bytes> {
    vec![
        Bytes::from(
            "#!lua name=alpha\n\
             redis.register_function('fa', function(keys, args) return args[1] end)\n\
             redis.register_function('fb', function(keys, args) return #keys end)\n",
        ),
        Bytes::from_static(b"#!lua name=b\nredis.register_function('fc', function() return 3 end)"),
    ]
}

/// What these tests do on a connection besides single commands.
trait Libraries {
    fn load_libraries(&mut self);
    fn dumped(&mut self) -> Vec<Bytes>;
    fn runs_libraries(&mut self);
}

impl Libraries for Conn {
    fn load_libraries(&mut self) {
        for code in libraries() {
            self.ok(&[b"FUNCTION", b"LOAD", &code]);
        }
    }

    /// The libraries FUNCTION DUMP holds, in its order (Redis's own library order).
    fn dumped(&mut self) -> Vec<Bytes> {
        let p = self.bulk(&[b"FUNCTION", b"DUMP"]);
        decode_function_dump(&p).expect("Keel reads Redis's FUNCTION DUMP")
    }

    /// Whether the libraries of [`libraries`] are loaded and run.
    fn runs_libraries(&mut self) {
        assert_eq!(
            self.cmd(&[b"FCALL", b"fa", b"0", b"hi"]),
            Reply::Bulk(Some(b"hi".to_vec()))
        );
        assert_eq!(
            self.cmd(&[b"FCALL", b"fb", b"2", b"k1", b"k2"]),
            Reply::Int(2)
        );
        assert_eq!(self.cmd(&[b"FCALL", b"fc", b"0"]), Reply::Int(3));
    }
}

fn sorted(mut v: Vec<Bytes>) -> Vec<Bytes> {
    v.sort();
    v
}

#[test]
fn keel_reads_the_libraries_redis_saves_and_dumps() {
    if !have_redis() {
        return;
    }
    let dir = scratch_dir("from-redis");
    let port = keel_testkit::free_port();
    let dir_s = dir.to_str().expect("utf-8 path");
    let _server =
        keel_testkit::start_with("redis", port, &["--dir", dir_s, "--dbfilename", "r.rdb"]);
    let mut c = Conn::open(port);
    c.ready();
    c.load_libraries();
    c.ok(&[b"SET", b"k", b"v"]);
    let dumped = c.dumped();
    assert_eq!(sorted(dumped.clone()), sorted(libraries()));
    assert_eq!(c.cmd(&[b"SAVE"]), Reply::Simple("OK".into()));

    let data = std::fs::read(dir.join("r.rdb")).expect("saved file");
    let mut r = RdbReader::new(&data).expect("header");
    let mut items = Vec::new();
    while let Some(item) = r.next_item().expect("Keel reads Redis's file") {
        items.push(item);
    }
    // The libraries, in the order FUNCTION DUMP lists them, then the key.
    let want: Vec<RdbItem> = dumped.into_iter().map(RdbItem::Library).collect();
    assert!(matches!(items.pop(), Some(RdbItem::Entry(e)) if e.key == b"k"));
    assert_eq!(items, want);
    // The libraries follow the AUX fields, the long one compressed.
    let aux_end = *r.aux_ends().last().expect("aux fields");
    let libs = &data[aux_end..];
    assert_eq!(libs[0], 0xf5);
    assert!(libs.windows(2).any(|w| w == [0xf5, 0xc3]));

    // With compression off, Keel's payload is Redis's, byte for byte.
    c.ok(&[b"CONFIG", b"SET", b"rdbcompression", b"no"]);
    let theirs = c.bulk(&[b"FUNCTION", b"DUMP"]);
    let order = decode_function_dump(&theirs).expect("reads");
    assert_eq!(encode_function_dump_with(&order, false), theirs);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn redis_loads_the_libraries_keel_writes() {
    if !have_redis() {
        return;
    }
    let dir = scratch_dir("to-redis");
    let opts = WriteOptions {
        aux: vec![
            (b"redis-ver".to_vec(), b"7.0.15".to_vec()),
            (b"redis-bits".to_vec(), b"64".to_vec()),
        ],
        ..WriteOptions::default()
    };
    let mut w = RdbWriter::new(Vec::new(), opts).expect("header");
    w.write_libraries(&libraries()).expect("libraries");
    w.select_db(0, 1, 0).expect("select");
    w.write_entry(b"k", &Value::str(b"v"), None).expect("key");
    let file = dir.join("keel.rdb");
    std::fs::write(&file, w.finish().expect("finish")).expect("write file");

    for checker in ["redis-check-rdb", env!("CARGO_BIN_EXE_keel-check-rdb")] {
        let out = Command::new(checker).arg(&file).output().expect("runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{checker}: {text}");
        assert!(text.contains("[info] 1 keys read"), "{checker}: {text}");
    }

    let port = keel_testkit::free_port();
    let dir_s = dir.to_str().expect("utf-8 path");
    let _server =
        keel_testkit::start_with("redis", port, &["--dir", dir_s, "--dbfilename", "keel.rdb"]);
    let mut c = Conn::open(port);
    c.ready();
    c.runs_libraries();
    assert_eq!(c.bulk(&[b"GET", b"k"]), b"v");

    // A payload Keel encodes restores into Redis (after a flush), and one Keel damaged is
    // refused with the text Keel's error carries.
    c.ok(&[b"FUNCTION", b"FLUSH"]);
    let p = encode_function_dump(&libraries());
    assert_eq!(
        c.cmd(&[b"FUNCTION", b"RESTORE", &p]),
        Reply::Simple("OK".into())
    );
    c.runs_libraries();
    let mut bad = p.clone();
    bad[3] ^= 1;
    let theirs = c.cmd(&[b"FUNCTION", b"RESTORE", &bad, b"REPLACE"]);
    let mine = decode_function_dump(&bad).expect_err("damaged");
    assert_eq!(theirs, Reply::Error(format!("ERR {mine}")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits until no AOF rewrite is running or scheduled.
fn rewrite_done(c: &mut Conn) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = String::from_utf8(c.bulk(&[b"INFO", b"persistence"])).expect("text");
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            return;
        }
        assert!(Instant::now() < deadline, "rewrite did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn base_aof(dir: &Path) -> Vec<u8> {
    let d = dir.join("appendonlydir");
    let name = std::fs::read_dir(&d)
        .expect("aof dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".base.aof"))
        .max()
        .expect("a command-form base");
    std::fs::read(d.join(name)).expect("base")
}

#[test]
fn a_command_base_loads_libraries_as_redis_rewrites_them() {
    if !have_redis() {
        return;
    }
    let dir = scratch_dir("aof");
    let port = keel_testkit::free_port();
    let dir_s = dir.to_str().expect("utf-8 path");
    let aof = [
        "--dir",
        dir_s,
        "--appendonly",
        "yes",
        "--aof-use-rdb-preamble",
        "no",
    ];
    let server = keel_testkit::start_with("redis", port, &aof);
    let mut c = Conn::open(port);
    c.ready();
    rewrite_done(&mut c);
    c.load_libraries();
    c.ok(&[b"SET", b"k", b"v"]);
    c.ok(&[b"BGREWRITEAOF"]);
    rewrite_done(&mut c);
    let theirs = base_aof(&dir);
    let order = c.dumped();
    drop(server);

    let mut mine = Vec::new();
    function_load_commands(&mut mine, &order);
    encode_command(&mut mine, &[b"SELECT".as_slice(), b"0"]);
    commands_for(&mut mine, b"k", &Value::str(b"v"), None);
    assert_eq!(
        String::from_utf8_lossy(&mine),
        String::from_utf8_lossy(&theirs)
    );

    // Keel's base, as the only file of a fresh directory, loads into Redis.
    let fresh = scratch_dir("aof-keel");
    let d = fresh.join("appendonlydir");
    std::fs::create_dir_all(&d).expect("aof dir");
    std::fs::write(d.join("appendonly.aof.1.base.aof"), &mine).expect("base");
    std::fs::write(
        d.join("appendonly.aof.manifest"),
        "file appendonly.aof.1.base.aof seq 1 type b\n",
    )
    .expect("manifest");
    let port = keel_testkit::free_port();
    let fresh_s = fresh.to_str().expect("utf-8 path");
    let _server =
        keel_testkit::start_with("redis", port, &["--dir", fresh_s, "--appendonly", "yes"]);
    let mut c = Conn::open(port);
    c.ready();
    c.runs_libraries();
    assert_eq!(c.bulk(&[b"GET", b"k"]), b"v");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&fresh);
}
