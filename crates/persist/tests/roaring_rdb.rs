//! Roaring bitmaps in snapshots: written as redis-roaring's `reroaring` and `roaring64` module
//! types and read back equal, a value laid out as redis-roaring writes it loads, and damaged
//! bitmaps are refused without panicking or allocating what they claim.

use keel_persist::rdb::{
    dump_payload, module_id, parse_payload, read_all, to_store_value, RdbValue, RdbWriter,
    WriteOptions,
};
use keel_store::roaring::{Bitmap32, Bitmap64};
use keel_store::{CompactLimits, Value};
use proptest::prelude::*;

fn bitmaps() -> Vec<Value> {
    let mut full = Bitmap32::new();
    full.insert_range(..);
    let mut runs = Bitmap32::new();
    runs.insert_range(10..200_000);
    runs.insert(u32::MAX);
    let mut wide = Bitmap64::new();
    wide.insert_range(1 << 33..(1 << 33) + 100_000);
    wide.insert(u64::MAX);
    vec![
        Value::Roaring(Box::default()),
        Value::Roaring(Box::new([1u32, 5, 70_000].into_iter().collect())),
        Value::Roaring(Box::new((0..100_000u32).step_by(3).collect())),
        Value::Roaring(Box::new(runs)),
        Value::Roaring(Box::new(full)),
        Value::Roaring64(Box::default()),
        Value::Roaring64(Box::new(wide)),
    ]
}

fn convert(v: RdbValue) -> Value {
    to_store_value(v, &CompactLimits::default()).expect("converts")
}

#[test]
fn snapshot_round_trip_with_and_without_compression() {
    for compress in [true, false] {
        let opts = WriteOptions {
            compress,
            ..WriteOptions::default()
        };
        let values = bitmaps();
        let mut w = RdbWriter::new(Vec::new(), opts).expect("header");
        for (i, v) in values.iter().enumerate() {
            w.write_entry(format!("k{i}").as_bytes(), v, None)
                .expect("entry");
        }
        let file = w.finish().expect("finish");
        let mut got = Vec::new();
        read_all(&file, |e| got.push(e)).expect("reads back");
        assert_eq!(got.len(), values.len());
        for (e, v) in got.into_iter().zip(&values) {
            assert_eq!(&convert(e.value), v);
        }
    }
}

#[test]
fn dump_payloads_round_trip() {
    for v in bitmaps() {
        let p = dump_payload(&v);
        assert_eq!(convert(parse_payload(&p).expect("parses")), v);
    }
}

/// The module value as redis-roaring 1.x saves a 32-bit bitmap of few members: module id
/// (`reroaring`, encoding version 1), a string opcode with CRoaring's array format (tag 1,
/// count, members little-endian), the end opcode.
#[test]
fn redis_roaring_array_format_loads() {
    let mut bytes = vec![1u8];
    bytes.extend_from_slice(&3u32.to_le_bytes());
    for x in [7u32, 9, 4_000_000_000] {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    let mut raw = vec![5u8, bytes.len() as u8];
    raw.extend_from_slice(&bytes);
    raw.push(0);
    let id = module_id(b"reroaring", 1).expect("charset");
    let v = convert(RdbValue::Module { id, raw });
    let want: Bitmap32 = [7u32, 9, 4_000_000_000].into_iter().collect();
    assert_eq!(v, Value::Roaring(Box::new(want)));
    // Keel writes the same bytes back for so small a bitmap.
    let p = dump_payload(&v);
    assert!(p.windows(bytes.len()).any(|w| w == bytes.as_slice()));
}

#[test]
fn damaged_bitmaps_are_refused() {
    let id = module_id(b"reroaring", 1).expect("charset");
    let id64 = module_id(b"roaring64", 1).expect("charset");
    let cases: Vec<(u64, Vec<u8>)> = vec![
        // Array format claiming a billion members in 4 bytes.
        (
            id,
            [
                vec![5, 9, 1],
                1_000_000_000u32.to_le_bytes().to_vec(),
                vec![0, 0, 0, 0, 0],
            ]
            .concat(),
        ),
        // Unknown format tag.
        (id, vec![5, 1, 9, 0]),
        // Portable format with a container count past the bytes present.
        (
            id,
            [
                vec![5, 9, 2],
                12346u32.to_le_bytes().to_vec(),
                60_000u32.to_le_bytes().to_vec(),
                vec![0],
            ]
            .concat(),
        ),
        // 64-bit: a bucket count of 2^60 in 8 bytes.
        (
            id64,
            [vec![5, 8], (1u64 << 60).to_le_bytes().to_vec(), vec![0]].concat(),
        ),
        // No end opcode.
        (id, vec![5, 1, 1]),
        // Another encoding version.
        (
            module_id(b"reroaring", 2).expect("charset"),
            vec![5, 1, 1, 0],
        ),
    ];
    for (id, raw) in cases {
        let r = to_store_value(
            RdbValue::Module {
                id,
                raw: raw.clone(),
            },
            &CompactLimits::default(),
        );
        assert!(r.is_err(), "{raw:?} loaded");
    }
}

proptest! {
    #[test]
    fn damaged_payloads_never_panic(
        which in 0usize..7,
        at in any::<usize>(),
        byte in any::<u8>(),
        junk in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let v = &bitmaps()[which];
        if let Value::Roaring(b) = v {
            if b.len() > 1_000_000 {
                return Ok(());
            }
        }
        let p = dump_payload(v);
        let mut body = p[..p.len() - 10].to_vec();
        let i = at % body.len();
        body[i] = byte;
        if at % 3 == 0 {
            body.extend_from_slice(&junk);
        }
        if let Ok(RdbValue::Module { id, raw }) = parse_payload(&seal(&body)) {
            let _ = to_store_value(RdbValue::Module { id, raw }, &CompactLimits::default());
        }
        // And arbitrary bytes as the bitmap itself.
        let _ = keel_store::roaring::load32(&junk);
        let _ = keel_store::roaring::load64(&junk);
    }
}

fn seal(body: &[u8]) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&10u16.to_le_bytes());
    let crc = keel_persist::crc64::crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

/// The words of each RESP command in `out`.
fn commands(out: &[u8]) -> Vec<Vec<String>> {
    let text = String::from_utf8_lossy(out);
    let mut lines = text.split("\r\n");
    let mut cmds = Vec::new();
    while let Some(head) = lines.next() {
        let Some(n) = head.strip_prefix('*') else {
            break;
        };
        let n: usize = n.parse().expect("count");
        let words = (0..n)
            .map(|_| {
                lines.next();
                lines.next().expect("word").to_string()
            })
            .collect();
        cmds.push(words);
    }
    cmds
}

#[test]
fn aof_rewrite_uses_ranges_and_batches() {
    let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let b: Bitmap32 = [
        1u32,
        2,
        3,
        4,
        10,
        11,
        u32::MAX - 3,
        u32::MAX - 2,
        u32::MAX - 1,
        u32::MAX,
    ]
    .into_iter()
    .collect();
    let mut out = Vec::new();
    keel_persist::aof::commands_for(&mut out, b"k", &Value::Roaring(Box::new(b)), None);
    assert_eq!(
        commands(&out),
        vec![
            w(&["R.SETRANGE", "k", "1", "5"]),
            w(&["R.SETRANGE", "k", "4294967292", "4294967295"]),
            w(&["R.APPENDINTARRAY", "k", "10", "11", "4294967295"]),
        ]
    );
    let mut full = Bitmap32::new();
    full.insert_range(..);
    let mut out = Vec::new();
    keel_persist::aof::commands_for(&mut out, b"f", &Value::Roaring(Box::new(full)), Some(7));
    assert_eq!(
        commands(&out),
        vec![
            w(&["R.SETRANGE", "f", "0", "4294967295"]),
            w(&["R.APPENDINTARRAY", "f", "4294967295"]),
            w(&["PEXPIREAT", "f", "7"]),
        ]
    );
    let mut out = Vec::new();
    keel_persist::aof::commands_for(&mut out, b"e", &Value::Roaring64(Box::default()), None);
    assert_eq!(commands(&out), vec![w(&["R64.SETRANGE", "e", "0", "0"])]);
    let scattered: Bitmap64 = (0..200u64).map(|x| x * 1_000_003).collect();
    let mut out = Vec::new();
    keel_persist::aof::commands_for(&mut out, b"s", &Value::Roaring64(Box::new(scattered)), None);
    let cmds = commands(&out);
    assert_eq!(cmds.len(), 4);
    assert!(cmds.iter().all(|c| c[0] == "R64.APPENDINTARRAY"));
    assert_eq!(cmds.iter().map(|c| c.len() - 2).sum::<usize>(), 200);
}
