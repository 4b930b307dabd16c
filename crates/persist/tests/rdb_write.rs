//! Model-based round trip: random store values of every encoding, written with `RdbWriter`, read
//! back with the reader and converted, come out equal to what went in, encoding included.

use keel_persist::rdb::{read_all, to_store_value, RdbWriter, WriteOptions};
use keel_store::bloom::Chain;
use keel_store::hash::{new_hash, HashMut};
use keel_store::list::End;
use keel_store::{CompactLimits, Value};
use proptest::prelude::*;

/// A small deterministic generator, so a failing case is reproduced from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An element: often a canonical integer of some width, sometimes text of some length.
    fn elem(&mut self, long: bool) -> Vec<u8> {
        match self.below(6) {
            0 => (self.next() as i64 >> self.below(64))
                .to_string()
                .into_bytes(),
            1 => self.below(200).to_string().into_bytes(),
            2 => b"007".to_vec(),
            _ => {
                let max = if long { 300 } else { 40 };
                let len = self.below(max) as usize;
                let pool = if self.below(2) == 0 { 4 } else { 256 };
                (0..len).map(|_| self.below(pool) as u8).collect()
            }
        }
    }
}

/// A value of kind `kind` (0..=7) with about `size` elements, built the way commands build them.
fn value(kind: u8, seed: u64, size: usize, limits: &CompactLimits) -> Value {
    let mut r = Rng(seed | 1);
    let n = size.max(1);
    match kind {
        0 => {
            let long = r.below(4) == 0;
            Value::str(&r.elem(long).repeat(if long { 1 + size } else { 1 }))
        }
        1 => {
            let mut v = new_hash();
            let mut h = HashMut::of(&mut v).expect("hash");
            let long = r.below(5) == 0;
            for i in 0..n {
                let mut f = r.elem(false);
                f.extend_from_slice(format!(":{i}").as_bytes());
                h.set(&f, &r.elem(long), limits);
            }
            v
        }
        2 => {
            let ints = r.below(2) == 0;
            let first = if ints { b"1".to_vec() } else { r.elem(false) };
            let mut v = Value::new_set(&first, 1, limits);
            v.set_add(&first, limits);
            for _ in 0..n {
                let m = if ints {
                    (r.next() as i64 >> r.below(64)).to_string().into_bytes()
                } else {
                    r.elem(false)
                };
                v.set_add(&m, limits);
            }
            v
        }
        3 => {
            let mut v = keel_store::list::new_value();
            let long = r.below(3) == 0;
            for _ in 0..n {
                let e = r.elem(long);
                keel_store::list::push(&mut v, End::Right, &[e], limits);
            }
            v
        }
        4 => {
            let mut pairs: Vec<(Vec<u8>, f64)> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            let long = r.below(5) == 0;
            for _ in 0..n {
                let m = r.elem(long);
                if !seen.insert(m.clone()) {
                    continue;
                }
                let s = match r.below(6) {
                    0 => (r.below(1000) as f64) - 500.0,
                    1 => (r.next() as f64) / 7.0,
                    2 => f64::INFINITY,
                    3 => f64::NEG_INFINITY,
                    4 => 1.0 / (1 + r.below(1000)) as f64,
                    _ => f64::from_bits(r.next() >> 2),
                };
                pairs.push((m, s));
            }
            keel_store::zset::from_pairs(&pairs, limits)
        }
        5 | 6 => {
            let cap = 1 + r.below(50 * n.min(20) as u64);
            let err = [0.1, 0.01, 0.001, 0.25][r.below(4) as usize];
            let mut c = if kind == 6 {
                let exp = [None, Some(1), Some(2), Some(4)][r.below(4) as usize];
                Chain::new_blocked(cap, err, exp).expect("blocked")
            } else {
                let exp = [0u32, 1, 2, 4][r.below(4) as usize];
                Chain::new(cap, err, exp, r.below(4) == 0).expect("classic")
            };
            for i in 0..(r.below(3 * cap)) {
                if c.add(format!("item{i}").as_bytes()).is_err() {
                    break;
                }
            }
            Value::Bloom(Box::new(c))
        }
        _ => {
            // A large list of many quicklist nodes.
            let mut v = keel_store::list::new_value();
            let items: Vec<Vec<u8>> = (0..n * 40).map(|_| r.elem(false)).collect();
            keel_store::list::push(&mut v, End::Right, &items, limits);
            v
        }
    }
}

fn round_trip(entries: &[(u64, Vec<u8>, Value, Option<u64>)], opts: WriteOptions, list_size: i64) {
    let mut w = RdbWriter::new(Vec::new(), opts.clone()).expect("header");
    w.set_list_size(list_size);
    let mut db = None;
    for (d, k, v, exp) in entries {
        if db != Some(*d) {
            let here: Vec<_> = entries.iter().filter(|e| e.0 == *d).collect();
            let volatile = here.iter().filter(|e| e.3.is_some()).count();
            w.select_db(*d, here.len() as u64, volatile as u64)
                .expect("select");
            db = Some(*d);
        }
        w.write_entry(k, v, *exp).expect("entry");
    }
    let written = w.bytes_written();
    let file = w.finish().expect("finish");
    // The end marker and the checksum follow.
    assert_eq!(file.len() as u64, written + 9);
    if !opts.checksum {
        assert_eq!(&file[file.len() - 8..], &[0; 8]);
    }
    let limits = CompactLimits::default();
    let mut got = Vec::new();
    let aux = read_all(&file, |e| got.push(e)).expect("reads back");
    assert_eq!(aux, opts.aux);
    assert_eq!(got.len(), entries.len());
    for (e, (d, k, v, exp)) in got.into_iter().zip(entries) {
        assert_eq!((e.db, &e.key), (*d, k));
        assert_eq!(e.expire_at_ms, exp.map(|x| x as i64));
        let back = to_store_value(e.value, &limits).expect("converts");
        assert_eq!(back.encoding(), v.encoding(), "{k:?}");
        assert_eq!(&back, v, "{k:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random_values_round_trip(
        specs in proptest::collection::vec((0u8..8, any::<u64>(), 0usize..700, any::<bool>(), any::<bool>()), 1..10),
        compress in any::<bool>(),
        checksum in any::<bool>(),
    ) {
        let limits = CompactLimits::default();
        let entries: Vec<_> = specs
            .iter()
            .enumerate()
            .map(|(i, &(kind, seed, size, expires, db1))| {
                let size = if size > 600 { size * 20 } else { size % 40 };
                (
                    u64::from(db1) * 7,
                    format!("key:{i}").into_bytes(),
                    value(kind, seed, size, &limits),
                    expires.then_some(1_700_000_000_000 + seed % 1_000_000),
                )
            })
            .collect::<Vec<_>>();
        let mut entries = entries;
        entries.sort_by_key(|e| e.0);
        let aux = vec![(b"redis-ver".to_vec(), b"7.0.15".to_vec()), (b"redis-bits".to_vec(), b"64".to_vec())];
        round_trip(&entries, WriteOptions { compress, checksum, aux }, -2);
    }
}

#[test]
fn list_nodes_follow_the_node_size() {
    let limits = CompactLimits::default();
    let mut v = keel_store::list::new_value();
    let items: Vec<Vec<u8>> = (0..1000)
        .map(|i| format!("element-{i}").into_bytes())
        .collect();
    keel_store::list::push(&mut v, End::Right, &items, &limits);
    for fill in [-5, -2, -1, 1, 7, 128] {
        let mut w = RdbWriter::new(Vec::new(), WriteOptions::default()).expect("header");
        w.set_list_size(fill);
        w.write_entry(b"l", &v, None).expect("entry");
        let file = w.finish().expect("finish");
        // Type 18, key "l", then the node count.
        let at = 9 + 3;
        let nodes = match file[at] >> 6 {
            0 => u64::from(file[at] & 0x3f),
            _ => (u64::from(file[at] & 0x3f) << 8) | u64::from(file[at + 1]),
        };
        let expect = match fill {
            // About 14 bytes an element against 4 KiB, 8 KiB, 64 KiB nodes.
            -1 => 4..=5,
            -2 => 2..=3,
            -5 => 1..=1,
            1 => 1000..=1000,
            7 => 143..=143,
            _ => 8..=8,
        };
        assert!(expect.contains(&nodes), "fill {fill}: {nodes} nodes");
        round_trip(
            &[(0, b"l".to_vec(), v.clone(), None)],
            WriteOptions::default(),
            fill,
        );
    }
}

#[test]
fn a_long_list_streams_out_as_the_same_bytes() {
    let limits = CompactLimits::default();
    let mut v = keel_store::list::new_value();
    let items: Vec<Vec<u8>> = (0..300_000)
        .map(|i| format!("value-{}", (i as u64) * 7919 % 100_003).into_bytes())
        .collect();
    keel_store::list::push(&mut v, End::Right, &items, &limits);
    let opts = WriteOptions {
        compress: true,
        checksum: true,
        aux: Vec::new(),
    };
    let mut w = RdbWriter::new(Vec::new(), opts).expect("header");
    w.write_entry(b"l", &v, None).expect("entry");
    let file = w.finish().expect("finish");
    assert!(file.len() > 1 << 20, "{}", file.len());
    // The record after "REDIS0010" is the DUMP payload's body with the key put in.
    let p = keel_persist::rdb::dump_payload(&v);
    let mut record = vec![p[0], 1, b'l'];
    record.extend_from_slice(&p[1..p.len() - 10]);
    assert_eq!(&file[9..file.len() - 9], record.as_slice());
    round_trip(&[(0, b"l".to_vec(), v, None)], WriteOptions::default(), -2);
}
