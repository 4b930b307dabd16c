//! `keel-check-rdb` against files good and damaged: its lines and exit status follow
//! `redis-check-rdb`'s.

mod common;
use common::{load, reference};

use std::path::PathBuf;
use std::process::Command;

use keel_persist::rdb::{RdbWriter, WriteOptions};
use keel_store::Value;

fn scratch(name: &str, data: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("keel-check-rdb-{}-{name}", std::process::id()));
    std::fs::write(&p, data).expect("write scratch file");
    p
}

/// Runs a checker on `path`: its exit success and its output.
fn check(bin: &str, path: &std::path::Path) -> Option<(bool, String)> {
    let out = Command::new(bin).arg(path).output().ok()?;
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

const KEEL: &str = env!("CARGO_BIN_EXE_keel-check-rdb");

#[test]
fn redis_core_file_checks_as_redis_check_rdb_reports_it() {
    let Some(rdb) = load(&reference("redis-7.0.15-core.rdb")) else {
        return;
    };
    let path = scratch("core.rdb", &rdb);
    let (ok, out) = check(KEEL, &path).expect("runs");
    assert!(ok, "{out}");
    for line in [
        "[offset 27] AUX FIELD redis-ver = '7.0.15'",
        "[offset 82] Selecting DB ID 0",
        "[offset 258848] Selecting DB ID 3",
        "[offset 546793] Checksum OK",
        "[offset 546793] \\o/ RDB looks OK! \\o/",
        "[info] 544 keys read",
        "[info] 121 expires",
    ] {
        assert!(out.contains(line), "{line} missing from:\n{out}");
    }
    // Damage: a truncated copy, a flipped byte inside a value, a wrong checksum.
    let mut cases = vec![("trunc", rdb[..3000].to_vec())];
    let mut flipped = rdb.clone();
    flipped[5000] = 0x63;
    cases.push(("flip", flipped));
    let mut crc = rdb.clone();
    let n = crc.len();
    crc[n - 1] ^= 1;
    cases.push(("crc", crc));
    for (name, data) in cases {
        let p = scratch(name, &data);
        let (ok, out) = check(KEEL, &p).expect("runs");
        assert!(!ok, "{name}: {out}");
        assert!(out.contains("--- RDB ERROR DETECTED ---"), "{name}: {out}");
        assert!(
            out.contains("[additional info] Last key read: '"),
            "{name}: {out}"
        );
        if let Some((redis_ok, redis_out)) = check("redis-check-rdb", &p) {
            assert_eq!(ok, redis_ok, "{name}: {redis_out}");
        }
        let _ = std::fs::remove_file(p);
    }
    let _ = std::fs::remove_file(path);
}

#[test]
fn keel_written_files_check_clean_and_odd_arguments_fail() {
    let opts = WriteOptions {
        compress: true,
        checksum: false,
        aux: vec![(b"redis-ver".to_vec(), b"7.0.15".to_vec())],
    };
    let mut w = RdbWriter::new(Vec::new(), opts).expect("header");
    w.select_db(2, 1, 0).expect("select");
    w.write_entry(b"k", &Value::str(b"v"), None).expect("entry");
    let path = scratch("keel.rdb", &w.finish().expect("finish"));
    let (ok, out) = check(KEEL, &path).expect("runs");
    assert!(ok, "{out}");
    assert!(
        out.contains("[offset 27] AUX FIELD redis-ver = '7.0.15'"),
        "{out}"
    );
    assert!(out.contains("Selecting DB ID 2"), "{out}");
    assert!(out.contains("checksum disabled"), "{out}");
    if let Some((redis_ok, redis_out)) = check("redis-check-rdb", &path) {
        assert!(redis_ok, "{redis_out}");
    }
    let _ = std::fs::remove_file(&path);
    let (ok, out) = check(KEEL, &path).expect("runs");
    assert!(!ok && out.contains("can't open"), "{out}");
    let status = Command::new(KEEL).status().expect("runs");
    assert!(!status.success());
}

#[test]
fn module_types_keel_cannot_serve_are_reported() {
    // RedisBloom's reference file holds only types Keel serves.
    if let Some(rdb) = load(&reference("redisbloom-2.4.23.rdb")) {
        let path = scratch("bloom.rdb", &rdb);
        let (ok, out) = check(KEEL, &path).expect("runs");
        assert!(ok, "{out}");
        let _ = std::fs::remove_file(path);
    }
    // One RedisJSON document: a module id (as a 64-bit length) and an empty payload.
    let id = keel_persist::rdb::module_id(b"ReJSON-RL", 3).expect("a valid name");
    let mut rdb = b"REDIS0010\xfe\x00\x07\x03doc\x81".to_vec();
    rdb.extend_from_slice(&id.to_be_bytes());
    rdb.extend_from_slice(b"\x00\xff");
    rdb.extend_from_slice(&[0; 8]);
    let path = scratch("json.rdb", &rdb);
    let (ok, out) = check(KEEL, &path).expect("runs");
    assert!(!ok);
    assert!(
        out.contains("module type ReJSON-RL is not supported by Keel yet (RedisJSON documents)"),
        "{out}"
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn damaged_function_libraries_are_reported_as_redis_check_rdb_does() {
    let head = b"REDIS0010\xfa\x09redis-ver\x067.0.15".to_vec();
    let cases: [(&str, &[u8], &str); 3] = [
        (
            "payload",
            b"\xf5\x40",
            "[offset 29] Failed loading library, Failed loading library payload",
        ),
        (
            "description",
            b"\xf6\x06oldlib\x03LUA\x01",
            "[offset 40] Failed loading library, Failed loading library description",
        ),
        (
            "blob",
            b"\xf6\x06oldlib\x03LUA\x00\x30abc",
            "[offset 41] Failed loading library, Failed loading library blob",
        ),
    ];
    for (name, tail, line) in cases {
        let mut data = head.clone();
        data.extend_from_slice(tail);
        let p = scratch(&format!("fn-{name}.rdb"), &data);
        let mut outputs = vec![check(KEEL, &p).expect("runs")];
        outputs.extend(check("redis-check-rdb", &p));
        for (ok, out) in outputs {
            assert!(!ok, "{name}: {out}");
            assert!(out.contains(line), "{name}: {line} missing from:\n{out}");
            assert!(
                out.contains("[additional info] While doing: read-functions"),
                "{name}: {out}"
            );
        }
        let _ = std::fs::remove_file(p);
    }
}

/// The line after `--- RDB ERROR DETECTED ---`: where and why.
fn error_line(out: &str) -> Option<&str> {
    let mut lines = out.lines();
    lines.find(|l| l.contains("RDB ERROR DETECTED"))?;
    lines.next()
}

#[test]
fn damaged_headers_are_reported_in_redis_check_rdbs_words() {
    let cases: [(&str, &[u8], &str); 4] = [
        ("empty", b"", "[offset 0] Unexpected EOF reading RDB file"),
        (
            "short",
            b"REDIS00",
            "[offset 0] Unexpected EOF reading RDB file",
        ),
        (
            "newer",
            b"REDIS0012\xfe\x00\xff",
            "[offset 9] Can't handle RDB format version 12",
        ),
        (
            "signature",
            b"RODIS0010\xff",
            "[offset 9] Wrong signature trying to load DB from file",
        ),
    ];
    for (name, data, want) in cases {
        let p = scratch(name, data);
        let (ok, out) = check(KEEL, &p).expect("runs");
        assert!(!ok, "{name}: {out}");
        assert_eq!(error_line(&out), Some(want), "{name}: {out}");
        if let Some((redis_ok, redis_out)) = check("redis-check-rdb", &p) {
            assert!(!redis_ok, "{name}: {redis_out}");
            assert_eq!(error_line(&redis_out), Some(want), "{name}: {redis_out}");
        }
        let _ = std::fs::remove_file(p);
    }
}
