//! Reads the RDB file Redis 7.0.15 wrote (every core encoding) and checks every key against the
//! JSON listing written alongside it; then damages the file and checks that reading never panics
//! and always fails with an offset or a checksum error.

use keel_persist::rdb::{read_all, RdbEntry, RdbErrorKind, RdbValue};
use serde_json::Value;

const RDB: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/reference/files/redis-7.0.15-core.rdb"
);
const JSON: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/reference/files/redis-7.0.15-core.json"
);

mod common;
use common::load;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn str_of(v: &Value) -> String {
    v.as_str().expect("hex string").to_string()
}

fn check(entry: &RdbEntry, want: &Value) {
    let name = format!("{}/{}", entry.db, String::from_utf8_lossy(&entry.key));
    assert_eq!(
        entry.expire_at_ms,
        want["expire_at_ms"].as_i64(),
        "expiry of {name}"
    );
    let wv = &want["value_hex"];
    let ty = want["type"].as_str().expect("type");
    match (&entry.value, ty) {
        (RdbValue::String(s), "string") => assert_eq!(hex(s), str_of(wv), "{name}"),
        (RdbValue::List(l), "list") => {
            let got: Vec<String> = l.iter().map(|x| hex(x)).collect();
            let want: Vec<String> = wv.as_array().expect("list").iter().map(str_of).collect();
            assert_eq!(got, want, "{name}");
        }
        (RdbValue::Set(s), "set") => {
            let mut got: Vec<Vec<u8>> = s.clone();
            got.sort();
            let got: Vec<String> = got.iter().map(|x| hex(x)).collect();
            let want: Vec<String> = wv.as_array().expect("set").iter().map(str_of).collect();
            assert_eq!(got, want, "{name}");
        }
        (RdbValue::Hash(h), "hash") => {
            let mut got = h.clone();
            got.sort();
            let got: Vec<(String, String)> = got.iter().map(|(f, v)| (hex(f), hex(v))).collect();
            let want: Vec<(String, String)> = wv
                .as_array()
                .expect("hash")
                .iter()
                .map(|p| (str_of(&p[0]), str_of(&p[1])))
                .collect();
            assert_eq!(got, want, "{name}");
        }
        (RdbValue::ZSet(z), "zset") => {
            let want = wv.as_array().expect("zset");
            assert_eq!(z.len(), want.len(), "{name}");
            for ((m, s), w) in z.iter().zip(want) {
                assert_eq!(hex(m), str_of(&w[0]), "{name}");
                let ws = match &w[1] {
                    Value::String(t) => t.parse::<f64>().expect("score"),
                    n => n.as_f64().expect("score"),
                };
                assert!(
                    *s == ws || (s.is_nan() && ws.is_nan()),
                    "{name}: {s} != {ws}"
                );
            }
        }
        (v, t) => panic!("{name}: read {v:?}, listing says {t}"),
    }
}

#[test]
fn every_key_of_redis_7_0_15_core_rdb() {
    let (Some(rdb), Some(json)) = (load(RDB), load(JSON)) else {
        return;
    };
    let listing: Value = serde_json::from_slice(&json).expect("json");
    let keys = listing["keys"].as_object().expect("keys");
    let mut seen = std::collections::HashSet::new();
    let aux = read_all(&rdb, |e| {
        let name = format!("{}/{}", e.db, String::from_utf8_lossy(&e.key));
        let want = keys
            .get(&name)
            .unwrap_or_else(|| panic!("{name} is not in the listing"));
        check(&e, want);
        assert!(seen.insert(name.clone()), "{name} read twice");
    })
    .expect("the file reads");
    assert_eq!(seen.len(), keys.len(), "every listed key was read");
    assert!(
        aux.iter().any(|(k, v)| k == b"redis-ver" && v == b"7.0.15"),
        "{aux:?}"
    );
}

fn read_err(data: &[u8]) -> Result<(), keel_persist::rdb::RdbError> {
    read_all(data, |_| {}).map(|_| ())
}

#[test]
fn truncated_files_fail_with_an_offset() {
    let Some(rdb) = load(RDB) else { return };
    let mut cuts: Vec<usize> = (0..100).collect();
    cuts.extend((0..100).map(|i| i * rdb.len() / 100));
    cuts.extend(rdb.len() - 12..rdb.len());
    for cut in cuts {
        let err = read_err(&rdb[..cut]).expect_err("a truncated file cannot read");
        assert!(err.offset <= cut, "cut at {cut}: {err}");
        assert!(err.to_string().contains("at byte offset"), "{err}");
    }
}

#[test]
fn flipped_bytes_fail_with_an_offset_or_checksum() {
    let Some(rdb) = load(RDB) else { return };
    let mut at: Vec<usize> = (0..100).collect();
    at.extend((0..100).map(|i| i * 7919 % rdb.len()));
    at.extend(rdb.len() - 10..rdb.len());
    let mut data = rdb.clone();
    let mut checksums = 0;
    for pos in at {
        for mask in [0x01u8, 0xff] {
            data[pos] ^= mask;
            let err = read_err(&data).expect_err("a damaged file cannot read");
            data[pos] ^= mask;
            assert!(err.offset <= rdb.len(), "flip at {pos}: {err}");
            if matches!(err.kind, RdbErrorKind::Checksum { .. }) {
                checksums += 1;
            }
        }
    }
    assert!(
        checksums > 0,
        "some flips land in payloads and only the checksum catches them"
    );
}

#[test]
fn wrong_magic_and_version_are_refused() {
    let e = read_err(b"RODIS0010\xff").expect_err("bad magic");
    assert_eq!((e.offset, e.kind), (0, RdbErrorKind::BadMagic));
    let e = read_err(b"REDIS0012\xff").expect_err("future version");
    assert_eq!(e.kind, RdbErrorKind::BadVersion(12));
}

const BLOOM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/reference/files/redisbloom-2.4.23.rdb"
);

#[test]
fn module_values_of_redisbloom_are_kept_with_their_ids() {
    let Some(rdb) = load(BLOOM) else { return };
    let mut ids = std::collections::BTreeSet::new();
    let mut keys = 0;
    read_all(&rdb, |e| {
        keys += 1;
        match e.value {
            RdbValue::Module { id, raw } => {
                assert_eq!(
                    raw.last(),
                    Some(&0),
                    "a module value ends with its end opcode"
                );
                ids.insert(id);
            }
            v => panic!("{:?} is not a module value: {v:?}", e.key),
        }
    })
    .expect("the file reads");
    // Bloom, cuckoo, count-min, top-k and t-digest: five module types.
    assert_eq!(ids.len(), 5, "{ids:?} over {keys} keys");
}

#[test]
fn every_key_of_redis_7_0_15_core_rdb_becomes_an_equal_store_value() {
    let (Some(rdb), Some(json)) = (load(RDB), load(JSON)) else {
        return;
    };
    let listing: Value = serde_json::from_slice(&json).expect("json");
    let keys = listing["keys"].as_object().expect("keys");
    let limits = keel_store::CompactLimits::default();
    let mut n = 0;
    read_all(&rdb, |e| {
        let name = format!("{}/{}", e.db, String::from_utf8_lossy(&e.key));
        let want = &keys[&name];
        let v = keel_persist::rdb::to_store_value(e.value, &limits)
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(v.value_type().name(), want["type"], "{name}");
        assert!(
            common::same_value(&common::listed(&v), &want["value_hex"]),
            "{name}"
        );
        // Redis 7.0 has no listpack lists and keeps sets of strings in tables; everything else
        // lands in the encoding Redis reports.
        let enc = want["encoding"].as_str().expect("encoding");
        if !matches!(enc, "quicklist" | "hashtable" | "embstr" | "raw" | "int") {
            assert_eq!(v.encoding(), enc, "{name}");
        }
        n += 1;
    })
    .expect("the file reads");
    assert_eq!(n, keys.len());
}

/// The figures `BF.DEBUG` prints for each Bloom filter of the RedisBloom file, from its `.txt`.
fn bf_debug_lines(txt: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    let mut lines = txt.lines();
    while let Some(l) = lines.next() {
        if let Some(key) = l.strip_prefix("> BF.DEBUG ") {
            let reply = lines.next().expect("reply");
            let items: Vec<String> = reply
                .split("b'")
                .skip(1)
                .map(|s| s.split('\'').next().expect("quoted").to_string())
                .collect();
            out.insert(key.to_string(), items);
        }
    }
    out
}

#[test]
fn redisbloom_filters_load_with_their_figures_and_other_types_are_named() {
    let Some(rdb) = load(BLOOM) else { return };
    let Some(txt) = load(&BLOOM.replace(".rdb", ".txt")) else {
        return;
    };
    let want = bf_debug_lines(&String::from_utf8(txt).expect("utf-8"));
    assert_eq!(want.len(), 3);
    let limits = keel_store::CompactLimits::default();
    let mut blooms = 0;
    let mut rank_sketches = 0;
    let mut others = Vec::new();
    let mut sketches = Vec::new();
    read_all(&rdb, |e| {
        let key = String::from_utf8_lossy(&e.key).to_string();
        let raw = match &e.value {
            RdbValue::Module { raw, .. } => raw.clone(),
            _ => Vec::new(),
        };
        match keel_persist::rdb::to_store_value(e.value, &limits) {
            Ok(v @ keel_store::Value::Bloom(_)) => {
                // Keel writes the filter back exactly as RedisBloom did: type byte and the
                // 9-byte module id, then the same module data.
                let p = keel_persist::rdb::dump_payload(&v);
                assert_eq!(&p[10..p.len() - 10], raw.as_slice(), "{key}");
                let keel_store::Value::Bloom(chain) = v else {
                    unreachable!()
                };
                assert_eq!(chain.debug_lines(), want[&key], "{key}");
                // Items that were added answer present; the filters hold real bits.
                assert!(chain.exists(b"item1"), "{key}");
                blooms += 1;
            }
            Ok(v @ (keel_store::Value::Cuckoo(_) | keel_store::Value::Cms(_))) => {
                // Written back byte for byte as RedisBloom wrote it.
                let p = keel_persist::rdb::dump_payload(&v);
                assert_eq!(&p[10..p.len() - 10], raw.as_slice(), "{key}");
                sketches.push((key, v));
            }
            Ok(keel_store::Value::TopK(t)) => {
                // The replies RedisBloom gave before saving (TOPK.LIST WITHCOUNT, TOPK.QUERY).
                let list: Vec<(String, u32)> = t
                    .list()
                    .iter()
                    .map(|(i, c)| (String::from_utf8_lossy(i).to_string(), *c))
                    .collect();
                let want: Vec<(String, u32)> = ["t25", "t36", "t16", "t1", "t4"]
                    .iter()
                    .map(|i| (i.to_string(), 147))
                    .collect();
                assert_eq!(list, want, "{key}");
                assert_eq!((t.k(), t.width(), t.depth(), t.decay()), (5, 100, 7, 0.9));
                assert!(!t.query(b"t0") && t.query(b"t1") && !t.query(b"t9"));
                rank_sketches += 1;
            }
            Ok(v @ keel_store::Value::TDigest(_)) => {
                // Written back byte for byte as RedisBloom saved it.
                let p = keel_persist::rdb::dump_payload(&v);
                assert_eq!(&p[10..p.len() - 10], raw.as_slice(), "{key}");
                let keel_store::Value::TDigest(mut t) = v else {
                    unreachable!()
                };
                assert_eq!(
                    t.quantiles_sorted(&[0.0, 0.01, 0.5, 0.99, 1.0]),
                    [
                        0.0,
                        10.335714285714287,
                        500.12604198863295,
                        990.7775675675675,
                        1000.6
                    ]
                );
                assert_eq!(t.cdf(100.0), 0.09809512722638315);
                assert_eq!(t.cdf(500.0), 0.4998724193951576);
                assert_eq!(t.size(), 5000);
                rank_sketches += 1;
            }
            Ok(v) => panic!("{key}: {v:?}"),
            Err(err) => others.push((key, err.to_string())),
        }
    })
    .expect("the file reads");
    assert_eq!(blooms, 3);
    // The cuckoo filters and sketches answer as RedisBloom did (the `.txt`'s CF.INFO,
    // CF.COUNT, CF.EXISTS, CMS.INFO and CMS.QUERY replies).
    sketches.sort_by(|a, b| a.0.cmp(&b.0));
    let mut seen = Vec::new();
    for (key, v) in &sketches {
        match (key.as_str(), v) {
            ("cf:default" | "cf:tuned", keel_store::Value::Cuckoo(cf)) => {
                let tuned = key == "cf:tuned";
                let figures = (
                    cf.size_bytes(),
                    cf.num_buckets(),
                    cf.num_filters(),
                    cf.num_items(),
                    cf.num_deletes(),
                    cf.bucket_size(),
                    cf.expansion(),
                    cf.max_iterations(),
                );
                let want = if tuned {
                    (1608, 128, 2, 600, 0, 4, 2, 50)
                } else {
                    (2120, 512, 2, 1400, 100, 2, 1, 20)
                };
                assert_eq!(figures, want, "{key}");
                assert_eq!(cf.count(b"item150"), if tuned { 1 } else { 2 }, "{key}");
                assert!(cf.exists(b"item50"), "{key}");
            }
            ("cms:dim" | "cms:prob", keel_store::Value::Cms(c)) => {
                let q: Vec<u64> = ["w0", "w1", "w5", "w30", "absent"]
                    .iter()
                    .map(|w| c.query(w.as_bytes()))
                    .collect();
                let want = if key == "cms:dim" {
                    ((200, 5, 7995), vec![84, 84, 84, 84, 0])
                } else {
                    ((2000, 7, 1500), vec![51, 51, 48, 48, 0])
                };
                assert_eq!(((c.width(), c.depth(), c.count()), q), want, "{key}");
            }
            _ => panic!("{key}: unexpected {v:?}"),
        }
        seen.push(key.as_str());
    }
    assert_eq!(seen, ["cf:default", "cf:tuned", "cms:dim", "cms:prob"]);
    others.sort();
    // Top-k and t-digest, checked above against RedisBloom's replies.
    assert_eq!(rank_sketches, 2);
    assert!(others.is_empty(), "{others:?}");
}

/// A length as RDB encodes it at `at`: the value and the bytes it took.
fn rdb_len(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let first = *b.get(at)?;
    match first >> 6 {
        0 => Some((usize::from(first & 0x3f), 1)),
        1 => Some((
            (usize::from(first & 0x3f) << 8) | usize::from(*b.get(at + 1)?),
            2,
        )),
        2 if first == 0x80 => {
            let v = u32::from_be_bytes(b.get(at + 1..at + 5)?.try_into().ok()?);
            Some((v as usize, 5))
        }
        _ => None,
    }
}

#[test]
fn keel_compresses_every_lzf_string_of_the_core_rdb_as_redis_did() {
    let Some(rdb) = load(RDB) else { return };
    let mut same = 0;
    for at in 0..rdb.len() {
        if rdb[at] != 0xc3 {
            continue;
        }
        // Candidate: 0xC3, compressed length, original length, data.
        let Some((clen, a)) = rdb_len(&rdb, at + 1) else {
            continue;
        };
        let Some((ulen, b)) = rdb_len(&rdb, at + 1 + a) else {
            continue;
        };
        let start = at + 1 + a + b;
        let Some(data) = rdb.get(start..start + clen) else {
            continue;
        };
        if ulen <= 20 || clen > ulen - 4 {
            continue;
        }
        let Ok(plain) = keel_persist::lzf::decompress(data, ulen) else {
            continue;
        };
        let ours = keel_persist::lzf::compress_within(&plain, ulen - 4);
        assert_eq!(ours.as_deref(), Some(data), "LZF string at offset {at}");
        same += 1;
    }
    eprintln!("{same} LZF strings compared");
    assert!(same >= 20, "only {same} LZF strings found");
}
