//! Files move between Keel and a real Redis 7.0: an RDB Keel writes (every encoding, expiries,
//! two databases) loads into redis-server and passes redis-check-rdb; a file redis-server SAVEs
//! reads back in Keel with the values Redis reports.

use std::path::{Path, PathBuf};
use std::process::Command;

use keel_persist::rdb::{parse_payload, read_all, to_store_value, RdbWriter, WriteOptions};
use keel_store::bloom::Chain;
use keel_store::hash::{new_hash, HashMut};
use keel_store::list::End;
use keel_store::{CompactLimits, Value};
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
    let d = std::env::temp_dir().join(format!("keel-persist-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// A key's value read back over a connection.
trait DumpValue {
    fn value(&mut self, key: &[u8]) -> Value;
}

impl DumpValue for Conn {
    /// The key's value as Redis dumps it, converted to a store value.
    fn value(&mut self, key: &[u8]) -> Value {
        let Reply::Bulk(Some(p)) = self.cmd(&[b"DUMP", key]) else {
            panic!("no dump for {key:?}");
        };
        to_store_value(
            parse_payload(&p).expect("payload"),
            &CompactLimits::default(),
        )
        .expect("converts")
    }
}

/// Whether two values hold the same content; sets and hashes in any order, since Redis keeps
/// small sets of strings in hash tables, which it dumps in table order.
fn same(a: &Value, b: &Value) -> bool {
    let pairs = |v: &Value| {
        let mut p = Vec::new();
        if let Some(h) = keel_store::hash::HashRef::of(v) {
            h.for_each(|f, x| p.push((f.to_vec(), x.to_vec())));
        }
        p.sort();
        p
    };
    let members = |v: &Value| {
        let mut m = v.set_members();
        m.sort();
        m
    };
    match a.value_type() {
        keel_store::ValueType::Set => b.value_type() == a.value_type() && members(a) == members(b),
        keel_store::ValueType::Hash => b.value_type() == a.value_type() && pairs(a) == pairs(b),
        _ => a == b,
    }
}

/// One value of each encoding Redis 7.0 has, and a Bloom filter.
fn every_encoding() -> Vec<(&'static str, Value)> {
    let limits = CompactLimits::default();
    let hash = |n: usize, long: bool| {
        let mut v = new_hash();
        let mut h = HashMut::of(&mut v).expect("hash");
        for i in 0..n {
            let val = if long { "x".repeat(100) } else { i.to_string() };
            h.set(format!("f{i}").as_bytes(), val.as_bytes(), &limits);
        }
        v
    };
    let set = |members: Vec<String>| {
        let mut v = Value::new_set(members[0].as_bytes(), members.len(), &limits);
        for m in &members {
            v.set_add(m.as_bytes(), &limits);
        }
        v
    };
    let list = |n: usize| {
        let mut v = keel_store::list::new_value();
        let items: Vec<String> = (0..n).map(|i| format!("e{i}")).collect();
        keel_store::list::push(&mut v, End::Right, &items, &limits);
        v
    };
    let zset = |n: usize| {
        let pairs: Vec<(Vec<u8>, f64)> = (0..n)
            .map(|i| (format!("m{i}").into_bytes(), i as f64 / 3.0 - 10.0))
            .collect();
        keel_store::zset::from_pairs(&pairs, &limits)
    };
    let mut bloom = Chain::new(100, 0.01, 2, false).expect("bloom");
    for i in 0..350 {
        let _ = bloom.add(format!("item{i}").as_bytes());
    }
    vec![
        ("int", Value::str(b"-12345")),
        ("bigint", Value::str(b"8261657684473197624")),
        ("short", Value::str(b"hello")),
        ("long", Value::str("abc".repeat(200).as_bytes())),
        ("hash:lp", hash(5, false)),
        ("hash:ht", hash(600, false)),
        ("hash:long", hash(3, true)),
        (
            "set:ints",
            set((0..50).map(|i| (i * 1_000_003).to_string()).collect()),
        ),
        ("set:strs", set((0..50).map(|i| format!("s{i}")).collect())),
        ("set:ht", set((0..1000).map(|i| format!("s{i}")).collect())),
        ("list:small", list(10)),
        ("list:big", list(20_000)),
        ("zset:lp", zset(20)),
        ("zset:sl", zset(500)),
        ("bf", Value::Bloom(Box::new(bloom))),
    ]
}

/// A key, its value and its absolute expiry in Unix milliseconds.
type Key = (String, Value, Option<u64>);

fn write_file(path: &Path, dbs: &[(u64, Vec<Key>)]) {
    let f = std::fs::File::create(path).expect("create");
    let aux = vec![
        (b"redis-ver".to_vec(), b"7.0.15".to_vec()),
        (b"redis-bits".to_vec(), b"64".to_vec()),
    ];
    let mut w = RdbWriter::new(
        std::io::BufWriter::new(f),
        WriteOptions {
            compress: true,
            checksum: true,
            aux,
        },
    )
    .expect("header");
    for (db, keys) in dbs {
        let volatile = keys.iter().filter(|k| k.2.is_some()).count() as u64;
        w.select_db(*db, keys.len() as u64, volatile)
            .expect("select");
        for (k, v, exp) in keys {
            w.write_entry(k.as_bytes(), v, *exp).expect("entry");
        }
    }
    w.finish().expect("finish");
}

#[test]
fn redis_loads_what_keel_writes() {
    if !have_redis() {
        return;
    }
    let dir = scratch_dir("to-redis");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    let values = every_encoding();
    let db0: Vec<Key> = values
        .iter()
        .filter(|(k, _)| *k != "bf")
        .enumerate()
        .map(|(i, (k, v))| {
            let exp = (i % 3 == 0).then_some(now_ms + 3_600_000);
            (k.to_string(), v.clone(), exp)
        })
        .collect();
    let db5 = vec![
        ("other".to_string(), Value::str(b"db5"), None),
        ("gone".to_string(), Value::str(b"x"), Some(now_ms - 1000)),
    ];
    let file = dir.join("keel.rdb");
    write_file(&file, &[(0, db0.clone()), (5, db5)]);

    let check = Command::new("redis-check-rdb")
        .arg(&file)
        .output()
        .expect("redis-check-rdb runs");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );

    let port = keel_testkit::free_port();
    let dir_s = dir.to_str().expect("utf-8 path");
    let _server =
        keel_testkit::start_with("redis", port, &["--dir", dir_s, "--dbfilename", "keel.rdb"]);
    let mut c = Conn::open(port);
    c.ready();
    assert_eq!(c.int(&[b"DBSIZE"]), db0.len() as i64);
    for (k, v, exp) in &db0 {
        let got = c.value(k.as_bytes());
        assert!(same(&got, v), "{k}: {got:?}");
        let pttl = c.int(&[b"PTTL", k.as_bytes()]);
        match exp {
            Some(_) => assert!((3_500_000..=3_600_000).contains(&pttl), "{k}: {pttl}"),
            None => assert_eq!(pttl, -1, "{k}"),
        }
    }
    assert_eq!(
        c.cmd(&[b"OBJECT", b"ENCODING", b"set:ints"]),
        Reply::Bulk(Some(b"intset".to_vec()))
    );
    assert_eq!(
        c.cmd(&[b"OBJECT", b"ENCODING", b"zset:sl"]),
        Reply::Bulk(Some(b"skiplist".to_vec()))
    );
    assert_eq!(
        c.cmd(&[b"LINDEX", b"list:big", b"19999"]),
        Reply::Bulk(Some(b"e19999".to_vec()))
    );
    assert_eq!(c.cmd(&[b"SELECT", b"5"]), Reply::Simple("OK".into()));
    assert_eq!(c.int(&[b"DBSIZE"]), 1);
    assert_eq!(
        c.cmd(&[b"GET", b"other"]),
        Reply::Bulk(Some(b"db5".to_vec()))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn keel_reads_what_redis_saves() {
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
    c.cmd(&[b"DEBUG", b"POPULATE", b"300", b"pop", b"30"]);
    let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
    let w = |s: &str| {
        s.split(' ')
            .map(|x| x.as_bytes().to_vec())
            .collect::<Vec<_>>()
    };
    cmds.push(w("HSET h a 1 b 2 c hello"));
    cmds.push(w("SADD si 1 2 3 -40000 9999999999"));
    cmds.push(w("SADD ss a b c"));
    cmds.push(w("RPUSH l a b 1 2 300 -5000"));
    cmds.push(w("ZADD z 1 a 2.5 b -inf c 0.1 d"));
    cmds.push(w("SET s 12345"));
    cmds.push(w("PEXPIREAT s 4102444800000"));
    for i in 0..200 {
        cmds.push(w(&format!("HSET hbig field{i} {}", "v".repeat(i))));
        cmds.push(w(&format!("ZADD zbig {i}.25 member{i}")));
        cmds.push(w(&format!("SADD sbig m{i}")));
    }
    cmds.push(w("SELECT 2"));
    cmds.push(w("SET indb2 yes"));
    for cmd in &cmds {
        let args: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
        let r = c.cmd(&args);
        assert!(!matches!(r, Reply::Error(_)), "{cmd:?}: {r:?}");
    }
    c.cmd(&[b"SELECT", b"0"]);
    assert_eq!(c.cmd(&[b"SAVE"]), Reply::Simple("OK".into()));
    let data = std::fs::read(dir.join("r.rdb")).expect("saved file");
    let mut entries = Vec::new();
    read_all(&data, |e| entries.push(e)).expect("Keel reads Redis's file");
    assert_eq!(entries.len(), 300 + 10);
    for e in entries {
        if e.db == 2 {
            assert_eq!(e.key, b"indb2");
            continue;
        }
        if e.key == b"s" {
            assert_eq!(e.expire_at_ms, Some(4_102_444_800_000));
        }
        let mine = to_store_value(e.value, &CompactLimits::default()).expect("converts");
        let theirs = c.value(&e.key);
        assert!(
            same(&mine, &theirs),
            "{:?}",
            String::from_utf8_lossy(&e.key)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
