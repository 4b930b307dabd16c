use super::*;
use proptest::prelude::*;

fn id(ms: u64, seq: u64) -> StreamId {
    StreamId::new(ms, seq)
}

#[test]
fn radix_tree_nodes_count_as_redis_s_rax() {
    // One entry a block, so every id is a key; the counts are Redis 7.0's
    // XINFO STREAM `radix-tree-nodes` after each XADD.
    let lim = NodeLimits {
        max_bytes: 4096,
        max_entries: 1,
    };
    let mut s = Stream::new();
    assert_eq!(s.radix_tree_nodes(), 1);
    let steps = [
        (id(1, 0), 2),
        (id(1, 1), 4),
        (id(2, 0), 8),
        (id(256, 0), 11),
        (id(257, 5), 14),
        (id(65536, 0), 17),
    ];
    for (i, want) in steps {
        assert!(s.append(i, &[(b"f", b"v")], lim));
        assert_eq!(s.radix_tree_nodes(), want, "after {i}");
    }
    // A removal merges the chain it leaves back into one node.
    assert!(s.delete(id(1, 1)));
    assert_eq!(s.radix_tree_nodes(), 15);
}

#[test]
fn appends_reads_and_splits_blocks() {
    let mut s = Stream::new();
    let lim = NodeLimits {
        max_bytes: 4096,
        max_entries: 3,
    };
    for i in 1..=10 {
        let v = i.to_string();
        assert!(s.append(id(i, 0), &[(b"f", v.as_bytes())], lim));
    }
    assert!(!s.append(id(10, 0), &[(b"f", b"x")], lim));
    assert_eq!(s.len(), 10);
    assert_eq!(s.block_count(), 4);
    assert_eq!(s.first_id(), id(1, 0));
    let all: Vec<_> = s
        .range(StreamId::MIN, StreamId::MAX)
        .map(|e| e.id)
        .collect();
    assert_eq!(all, (1..=10).map(|i| id(i, 0)).collect::<Vec<_>>());
    let e = s.get(id(7, 0)).expect("present");
    assert_eq!(e.fields().collect::<Vec<_>>(), vec![(&b"f"[..], &b"7"[..])]);
    let rev: Vec<_> = s.rev_range(id(3, 0), id(8, 0)).map(|e| e.id.ms).collect();
    assert_eq!(rev, vec![8, 7, 6, 5, 4, 3]);
}

#[test]
fn different_fields_and_deletion() {
    let mut s = Stream::new();
    let lim = NodeLimits::default();
    s.append(id(1, 1), &[(b"a", b"1"), (b"b", b"2")], lim);
    s.append(id(1, 2), &[(b"c", b"3")], lim);
    s.append(id(5, 0), &[(b"a", b"4"), (b"b", b"5")], lim);
    let e = s.get(id(1, 2)).expect("present");
    assert_eq!(e.fields().collect::<Vec<_>>(), vec![(&b"c"[..], &b"3"[..])]);
    assert!(s.delete(id(1, 1)));
    assert!(!s.delete(id(1, 1)));
    assert_eq!(s.first_id(), id(1, 2));
    assert_eq!(s.max_deleted_id(), id(1, 1));
    assert!(s.delete(id(1, 2)));
    assert!(s.delete(id(5, 0)));
    assert_eq!(s.len(), 0);
    assert_eq!(s.block_count(), 0);
    assert_eq!(s.first_id(), StreamId::MIN);
    assert_eq!(s.last_id(), id(5, 0));
    assert_eq!(s.entries_added(), 3);
}

#[test]
fn approximate_trim_removes_whole_blocks_only() {
    let mut s = Stream::new();
    let lim = NodeLimits {
        max_bytes: 0,
        max_entries: 10,
    };
    for i in 1..=95 {
        s.append(id(i, 0), &[(b"f", b"v")], lim);
    }
    assert_eq!(s.trim(TrimTo::MaxLen(50), true, 0), 40);
    assert_eq!(s.len(), 55);
    assert_eq!(s.first_id(), id(41, 0));
    assert_eq!(s.trim(TrimTo::MaxLen(50), false, 0), 5);
    assert_eq!(s.len(), 50);
    assert_eq!(s.first_id(), id(46, 0));
    // The block 41-50 (five live) and 51-60 go whole; 61-70 holds 70.
    assert_eq!(s.trim(TrimTo::MinId(id(70, 0)), true, 0), 15);
    assert_eq!(s.trim(TrimTo::MinId(id(70, 0)), true, 5), 0);
    assert_eq!(s.trim(TrimTo::MinId(id(70, 0)), false, 0), 9);
    assert_eq!(s.first_id(), id(70, 0));
}

#[test]
fn byte_limit_splits_like_redis() {
    let mut s = Stream::new();
    let lim = NodeLimits {
        max_bytes: 100,
        max_entries: 0,
    };
    let big = [b'x'; 40];
    for i in 1..=6 {
        s.append(id(i, 0), &[(b"f", &big[..])], lim);
    }
    assert!(s.block_count() >= 3, "{}", s.block_count());
}

#[test]
fn loads_blocks_and_rejects_bad_order() {
    let mut src = Stream::new();
    let lim = NodeLimits {
        max_bytes: 0,
        max_entries: 2,
    };
    for i in 1..=5 {
        src.append(id(i, 0), &[(b"f", b"v"), (b"g", b"w")], lim);
    }
    src.delete(id(2, 0));
    let mut dst = Stream::new();
    for b in src.blocks() {
        let master: Vec<&[u8]> = b.master_fields().collect();
        let entries: Vec<_> = b
            .entries()
            .map(|(i, del, _, f)| (i, del, f.collect::<Vec<_>>()))
            .collect();
        assert!(dst.load_block(b.master, &master, entries));
    }
    assert!(dst.finish_load(4, id(5, 0), id(2, 0), 5));
    assert_eq!(
        collect_owned(&dst),
        collect_owned(&src),
        "round trip through blocks"
    );
    assert!(!dst.load_block(
        id(1, 0),
        &[b"f"],
        vec![(id(1, 0), false, vec![(&b"f"[..], &b"v"[..])])]
    ));
    let mut bad = Stream::new();
    assert!(!bad.load_block(
        id(3, 0),
        &[b"f"],
        vec![(id(2, 0), false, vec![(&b"f"[..], &b"v"[..])])]
    ));
}

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn collect_owned(s: &Stream) -> Vec<(StreamId, Pairs)> {
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
fn block_validation_never_panics_on_garbage() {
    for seed in 0u8..=255 {
        let data: Vec<u8> = (0u8..64)
            .map(|i| seed.wrapping_mul(31).wrapping_add(i.wrapping_mul(7)))
            .collect();
        let _ = block::Block::validate(id(1, 0), data);
    }
}

#[derive(Clone, Debug)]
enum Op {
    Add(u64, u8, u8),
    Del(u64),
    Trim(bool, bool, u64, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..4, 0u8..3, 0u8..50).prop_map(|(d, f, v)| Op::Add(d, f, v)),
        2 => (0u64..200).prop_map(Op::Del),
        1 => (any::<bool>(), any::<bool>(), 0u64..60, 0u64..40).prop_map(|(m, a, n, l)| Op::Trim(m, a, n, l)),
    ]
}

type Model = BTreeMap<StreamId, Pairs>;

proptest! {
    /// Against a BTreeMap: adds, deletions, ranges both ways and trimming
    /// (exact trims equal the model's; approximate ones remove a prefix of
    /// at most what exact trimming would, never more).
    #[test]
    fn behaves_like_a_btreemap(ops in prop::collection::vec(op(), 1..150), max_entries in 1u64..8) {
        let lim = NodeLimits { max_bytes: 200, max_entries };
        let mut s = Stream::new();
        let mut m: Model = BTreeMap::new();
        let mut next = 1u64;
        for o in ops {
            match o {
                Op::Add(d, f, v) => {
                    next += d;
                    let i = id(next / 2, next % 2);
                    let fields: Pairs = (0..=f).map(|k| (vec![b'a' + k], vec![v; usize::from(v % 5)])).collect();
                    let refs: Vec<(&[u8], &[u8])> = fields.iter().map(|(a, b)| (&a[..], &b[..])).collect();
                    let expect = m.keys().next_back().is_none_or(|l| *l < i) && s.last_id() < i;
                    prop_assert_eq!(s.append(i, &refs, lim), expect || s.entries_added() == 0 && i > StreamId::MIN);
                    if s.get(i).is_some() { m.insert(i, fields); }
                    next += 1;
                }
                Op::Del(k) => {
                    let i = id(k / 2, k % 2);
                    prop_assert_eq!(s.delete(i), m.remove(&i).is_some());
                }
                Op::Trim(maxlen, approx, n, limit) => {
                    let to = if maxlen { TrimTo::MaxLen(n) } else { TrimTo::MinId(id(n, 0)) };
                    let before = m.len() as u64;
                    let removed = s.trim(to, approx, if approx { limit } else { 0 });
                    let exact: u64 = match to {
                        TrimTo::MaxLen(n) => before.saturating_sub(n),
                        TrimTo::MinId(min) => m.range(..min).count() as u64,
                    };
                    if approx { prop_assert!(removed <= exact); } else { prop_assert_eq!(removed, exact); }
                    for _ in 0..removed { let k = *m.keys().next().expect("entry"); m.remove(&k); }
                }
            }
            prop_assert_eq!(s.len(), m.len() as u64);
            prop_assert_eq!(s.first_id(), m.keys().next().copied().unwrap_or(StreamId::MIN));
            prop_assert_eq!(collect_owned(&s), m.iter().map(|(k, v)| (*k, v.clone())).collect::<Vec<_>>());
        }
        let keys: Vec<StreamId> = m.keys().copied().collect();
        if let (Some(a), Some(b)) = (keys.first(), keys.last().filter(|b| b.ms > 0)) {
            let lo = id(a.ms, 1);
            let hi = id(b.ms, 0).max(lo);
            let fwd: Vec<StreamId> = s.range(lo, hi).map(|e| e.id).collect();
            let mut rev: Vec<StreamId> = s.rev_range(lo, hi).map(|e| e.id).collect();
            rev.reverse();
            let model: Vec<StreamId> = m.range(lo..=hi).map(|(k, _)| *k).collect();
            prop_assert_eq!(&fwd, &model);
            prop_assert_eq!(&rev, &model);
        }
    }
}

proptest! {
    /// Arbitrary bytes as a block never panic; a real block's bytes decode
    /// back to its entries.
    #[test]
    fn block_bytes_decode_safely(garbage in prop::collection::vec(any::<u8>(), 0..200), n in 1u64..30) {
        let _ = Stream::from_block_bytes(id(1, 0), garbage);
        let mut s = Stream::new();
        let unlimited = NodeLimits { max_bytes: 0, max_entries: 0 };
        for i in 1..=n {
            let v = vec![b'x'; (i % 7) as usize];
            if i % 3 == 0 {
                s.append(id(i, i), &[(b"other", &v[..])], unlimited);
            } else {
                s.append(id(i, i), &[(b"f", &v[..]), (b"g", b"1")], unlimited);
            }
        }
        let (m, bytes) = s.block_bytes().next().expect("one block");
        let back = Stream::from_block_bytes(m, bytes.to_vec()).expect("decodes");
        prop_assert_eq!(collect_owned(&back), collect_owned(&s));
    }
}

#[test]
fn heap_bytes_count_groups_consumers_and_pending_entries() {
    let lim = NodeLimits::default();
    let mut s = Stream::new();
    for i in 1..=100 {
        assert!(s.append(id(i, 0), &[(b"f", b"v")], lim));
    }
    let bare = s.heap_bytes();
    let groups = s.groups.get_or_insert_with(Box::default);
    assert!(groups.create(b"g", StreamId::MIN, None));
    let with_group = s.heap_bytes();
    assert!(with_group > bare);
    let g = s
        .groups
        .as_mut()
        .and_then(|g| g.get_mut(b"g"))
        .expect("group");
    for i in 1..=100 {
        g.deliver(id(i, 0), b"consumer", 0);
    }
    // Each pending entry: the PEL's and the owner's B-tree entries and the
    // owner's name.
    assert!(
        s.heap_bytes() - with_group >= 100 * 100,
        "{}",
        s.heap_bytes()
    );
}

#[test]
fn an_id_below_deleted_entries_joins_their_block() {
    // XSETID may move the last id below deleted entries (it checks live ones
    // only); the next entry then follows them in the same block, as in Redis.
    let lim = NodeLimits::default();
    let mut s = Stream::new();
    for ms in [1, 5, 6] {
        assert!(s.append(id(ms, 0), &[(b"f", b"v")], lim));
    }
    assert!(s.delete(id(5, 0)));
    assert!(s.delete(id(6, 0)));
    s.last_id = id(2, 0);
    assert!(s.append(id(3, 0), &[(b"f", b"v")], lim));
    assert!(s.append(id(4, 0), &[(b"f", b"v")], lim));
    assert_eq!(s.block_count(), 1);
    let ids = |it: &mut dyn Iterator<Item = Entry<'_>>| it.map(|e| e.id.ms).collect::<Vec<_>>();
    assert_eq!(ids(&mut s.range(StreamId::MIN, id(3, 5))), [1, 3]);
    assert_eq!(ids(&mut s.range(id(2, 0), StreamId::MAX)), [3, 4]);
    assert_eq!(ids(&mut s.rev_range(id(3, 0), StreamId::MAX)), [4, 3]);
    assert_eq!(ids(&mut s.rev_range(StreamId::MIN, id(3, 0))), [3, 1]);
    assert!(s.get(id(4, 0)).is_some());
    assert!(s.delete(id(3, 0)));
    assert_eq!(ids(&mut s.range(StreamId::MIN, StreamId::MAX)), [1, 4]);
    // The block reads back from its own bytes.
    let (master, bytes) = s.block_bytes().next().expect("one block");
    let back = Stream::from_block_bytes(master, bytes.to_vec()).expect("valid");
    assert_eq!(back.len(), 2);
}
