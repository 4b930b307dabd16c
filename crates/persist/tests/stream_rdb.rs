//! Streams through the RDB format: Keel's own round trip (blocks, deleted
//! entries, metadata, consumer groups), and DUMP payloads exchanged with a
//! real redis-server 7.0 both ways, checked by Redis's own XINFO STREAM FULL.

use std::process::Command;

use keel_persist::rdb::{dump_payload, parse_payload, to_store_value};
use keel_store::stream::{Consumer, Group, Groups, NodeLimits, Pending, Stream, StreamId};
use keel_store::{CompactLimits, Value};
use keel_testkit::{Conn, Reply};

fn round_trip(s: &Stream) -> Stream {
    let payload = dump_payload(&Value::Stream(Box::new(s.clone())));
    match to_store_value(
        parse_payload(&payload).expect("payload reads"),
        &CompactLimits::default(),
    )
    .expect("converts")
    {
        Value::Stream(s) => *s,
        other => panic!("not a stream: {other:?}"),
    }
}

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn entries(s: &Stream) -> Vec<(StreamId, Pairs)> {
    s.range(StreamId::MIN, StreamId::MAX)
        .map(|e| {
            (
                e.id,
                e.fields().map(|(f, v)| (f.to_vec(), v.to_vec())).collect(),
            )
        })
        .collect()
}

#[test]
fn a_stream_survives_its_own_payload() {
    let mut s = Stream::new();
    let lim = NodeLimits {
        max_bytes: 4096,
        max_entries: 7,
    };
    for i in 1..=40u64 {
        let v = i.to_string();
        let fields: Vec<(&[u8], &[u8])> = if i % 5 == 0 {
            vec![(b"other", v.as_bytes()), (b"x", b"-12345678901")]
        } else {
            vec![(b"f", v.as_bytes()), (b"g", b"some text")]
        };
        assert!(s.append(StreamId::new(1000 + i, i % 3), &fields, lim));
    }
    s.delete(StreamId::new(1001, 1));
    s.delete(StreamId::new(1020, 2));
    s.trim(keel_store::stream::TrimTo::MaxLen(30), false, 0);
    s.last_id = StreamId::new(5000, 0);
    let mut groups = Groups::default();
    let mut g = Group {
        last_id: StreamId::new(1030, 0),
        entries_read: Some(30),
        ..Group::default()
    };
    g.pel.insert(
        StreamId::new(1025, 1),
        Pending {
            consumer: b"alice".to_vec(),
            delivery_time: 1_700_000_000_000,
            delivery_count: 3,
        },
    );
    let mut alice = Consumer {
        seen_time: 1_700_000_000_001,
        active_time: 1_700_000_000_001,
        ..Consumer::default()
    };
    alice.pending.insert(StreamId::new(1025, 1));
    g.consumers.insert(b"alice".to_vec(), alice);
    g.consumers.insert(
        b"bob".to_vec(),
        Consumer {
            seen_time: 5,
            active_time: 5,
            ..Consumer::default()
        },
    );
    groups.groups.insert(b"g1".to_vec(), g);
    groups.groups.insert(b"g2".to_vec(), Group::default());
    s.groups = Some(Box::new(groups));

    let back = round_trip(&s);
    assert_eq!(entries(&back), entries(&s));
    assert_eq!(back.len(), s.len());
    assert_eq!(back.last_id(), s.last_id());
    assert_eq!(back.first_id(), s.first_id());
    assert_eq!(back.max_deleted_id(), s.max_deleted_id());
    assert_eq!(back.entries_added(), s.entries_added());
    assert_eq!(back.block_count(), s.block_count());
    assert_eq!(back.groups, s.groups);
}

#[test]
fn corrupt_payloads_are_refused_not_panicked_on() {
    let mut s = Stream::new();
    for i in 1..=20u64 {
        s.append(
            StreamId::new(i, 0),
            &[(b"f", i.to_string().as_bytes())],
            NodeLimits::default(),
        );
    }
    let payload = dump_payload(&Value::Stream(Box::new(s)));
    // Every single-byte change and every truncation either reads as some
    // stream or is refused; none panics.
    for i in 0..payload.len() {
        for delta in [1u8, 0x80, 0xff] {
            let mut p = payload.clone();
            p[i] = p[i].wrapping_add(delta);
            if let Ok(v) = parse_payload(&p) {
                let _ = to_store_value(v, &CompactLimits::default());
            }
        }
        let _ = parse_payload(&payload[..i]);
    }
}

// --- against redis-server ------------------------------------------------------

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

#[test]
fn dump_payloads_cross_between_keel_and_redis() {
    if !have_redis() {
        return;
    }
    let port = keel_testkit::free_port();
    let _server = keel_testkit::start_with("redis", port, &[]);
    let mut c = Conn::open(port);
    c.words("CONFIG SET stream-node-max-entries 10");
    for i in 1..=57 {
        if i % 4 == 0 {
            c.words(&format!("XADD s {i}-1 other {i} more x"));
        } else {
            c.words(&format!("XADD s {i}-1 f {i} g text{i}"));
        }
    }
    c.words("XDEL s 3-1 20-1");
    c.words("XTRIM s MAXLEN = 50");
    c.words("XGROUP CREATE s g1 0");
    c.words("XGROUP CREATE s g2 $");
    c.words("XREADGROUP GROUP g1 alice COUNT 3 STREAMS s >");
    c.words("XREADGROUP GROUP g1 bob COUNT 2 STREAMS s >");
    c.words("XGROUP CREATECONSUMER s g1 carol");
    c.words("XACK s g1 9-1");
    c.words("XSETID s 100-0 ENTRIESADDED 70 MAXDELETEDID 20-1");
    c.words("XADD empty MAXLEN 0 5-5 f v");

    for key in ["s", "empty"] {
        let Reply::Bulk(Some(theirs)) = c.cmd(&[b"DUMP", key.as_bytes()]) else {
            panic!("dump");
        };
        let v = to_store_value(
            parse_payload(&theirs).expect("Keel reads Redis's payload"),
            &CompactLimits::default(),
        )
        .expect("converts");
        let Value::Stream(mine) = &v else {
            panic!("stream")
        };
        // The entries Keel read are the ones Redis lists.
        let Reply::Array(items) = c.cmd(&[b"XRANGE", key.as_bytes(), b"-", b"+"]) else {
            panic!("xrange");
        };
        assert_eq!(items.len() as u64, mine.len());
        let ours = dump_payload(&v);
        // Same listpacks, same metadata: Keel writes what Redis wrote.
        assert_eq!(ours, theirs, "{key}: DUMP payloads differ");
        let copy = format!("{key}-copy");
        assert_eq!(
            c.cmd(&[b"RESTORE", copy.as_bytes(), b"0", &ours]),
            Reply::Simple("OK".into())
        );
        let full = |c: &mut Conn, k: &str| c.cmd(&[b"XINFO", b"STREAM", k.as_bytes(), b"FULL"]);
        assert_eq!(full(&mut c, key), full(&mut c, &copy), "{key}");
    }
}
