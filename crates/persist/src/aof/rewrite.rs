//! A base file in command form (`aof-use-rdb-preamble no`): each key as the
//! commands that rebuild it, in RESP, as Redis's AOF rewrite writes them.
//!
//! - string: `SET key value`
//! - list: `RPUSH key e1 .. e64` per 64 elements, in order
//! - set: `SADD key m1 .. m64` per 64 members
//! - sorted set: `ZADD key s1 m1 .. s64 m64` per 64 pairs, scores printed so
//!   they parse back to the same double
//! - hash: `HMSET key f1 v1 .. f64 v64` per 64 pairs
//! - Bloom filter: `BF.LOADCHUNK key 1 <header>` then one `BF.LOADCHUNK key
//!   <iter> <chunk>` per SCANDUMP chunk, as RedisBloom rewrites its filters
//! - Roaring bitmap (32 or 64-bit): each run of three or more consecutive
//!   members as `R.SETRANGE key first last+1` (`R64.SETRANGE`; the end is
//!   exclusive), the other members as `R.APPENDINTARRAY key m1 .. m64` per 64,
//!   and a member at the top of the universe, which no exclusive end can
//!   reach, by append; an empty bitmap as `R.SETRANGE key 0 0`
//! - bitmap index: `IDX.CREATE key`, then per entity in search order `IDX.ADD key id attr
//!   value .. [PAYLOAD payload]`
//! - an expiry: `PEXPIREAT key <unix ms>` after the key's commands
//!
//! Function libraries come first, before the first `SELECT`: `FUNCTION LOAD <code>` each.

use super::encode_command;
use bytes::Bytes;
use keel_store::hash::HashRef;
use keel_store::roaring::{self, RoaringSet};
use keel_store::Value;

/// Elements per command, as Redis's rewrite batches them.
pub const ITEMS_PER_COMMAND: usize = 64;

/// Append `FUNCTION LOAD <code>` for each library, in the order given, as Redis's rewrite
/// writes them ahead of the data (no `REPLACE`: the base loads into an empty server).
pub fn function_load_commands(out: &mut Vec<u8>, libs: &[Bytes]) {
    for code in libs {
        encode_command(out, &[b"FUNCTION".as_slice(), b"LOAD", code]);
    }
}

/// Append the commands that rebuild `key` to `out`.
pub fn commands_for(out: &mut Vec<u8>, key: &[u8], value: &Value, expire_at_ms: Option<u64>) {
    match value {
        Value::Str(s) => encode_command(out, &[b"SET".as_slice(), key, s.as_slice()]),
        Value::ListPacked(_) | Value::List(_) => {
            let mut items: Vec<Vec<u8>> = Vec::new();
            keel_store::list::range_with(value, 0, -1, |e| items.push(e.to_vec()));
            batched(out, b"RPUSH", key, items.iter().map(|e| vec![e.as_slice()]));
        }
        Value::SetInts(_) | Value::SetPacked(_) | Value::Set(_) => {
            let members = value.set_members();
            batched(
                out,
                b"SADD",
                key,
                members.iter().map(|m| vec![m.as_slice()]),
            );
        }
        Value::ZSetPacked(_) | Value::ZSet(_) => {
            let pairs: Vec<(String, Vec<u8>)> = keel_store::zset::to_vec(value)
                .into_iter()
                .map(|(m, s)| (score_text(s), m))
                .collect();
            batched(
                out,
                b"ZADD",
                key,
                pairs.iter().map(|(s, m)| vec![s.as_bytes(), m.as_slice()]),
            );
        }
        Value::HashPacked(_) | Value::Hash(_) => {
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            if let Some(h) = HashRef::of(value) {
                h.for_each(|f, v| pairs.push((f.to_vec(), v.to_vec())));
            }
            batched(
                out,
                b"HMSET",
                key,
                pairs.iter().map(|(f, v)| vec![f.as_slice(), v.as_slice()]),
            );
        }
        Value::Roaring(b) => roaring_commands(out, key, &**b, b"R.SETRANGE", b"R.APPENDINTARRAY"),
        Value::Roaring64(b) => {
            roaring_commands(out, key, &**b, b"R64.SETRANGE", b"R64.APPENDINTARRAY")
        }
        Value::Bloom(chain) => {
            let header = chain.header_bytes();
            encode_command(out, &[b"BF.LOADCHUNK".as_slice(), key, b"1", &header]);
            let mut iter = 1u64;
            while let Some((next, chunk)) = chain.chunk_after(iter) {
                let at = iter.to_string();
                encode_command(
                    out,
                    &[b"BF.LOADCHUNK".as_slice(), key, at.as_bytes(), chunk],
                );
                iter = next;
            }
        }
        Value::Stream(s) => stream_commands(out, key, s),
        Value::Index(index) => {
            encode_command(out, &[b"IDX.CREATE".as_slice(), key]);
            let mut argv: Vec<&[u8]> = Vec::new();
            for e in index.entities() {
                argv.clear();
                argv.extend([b"IDX.ADD".as_slice(), key, e.id()]);
                for (a, v) in e.pairs() {
                    argv.extend([a, v]);
                }
                if let Some(p) = e.payload() {
                    argv.extend([b"PAYLOAD".as_slice(), p]);
                }
                encode_command(out, &argv);
            }
        }
    }
    if let Some(at) = expire_at_ms {
        let at = at.to_string();
        encode_command(out, &[b"PEXPIREAT".as_slice(), key, at.as_bytes()]);
    }
}

/// The commands that rebuild a Roaring bitmap: runs by range, the rest by append, so the log
/// grows with the runs and scattered members, not with the cardinality.
fn roaring_commands<B: RoaringSet>(
    out: &mut Vec<u8>,
    key: &[u8],
    b: &B,
    setrange: &'static [u8],
    append: &'static [u8],
) {
    if b.is_empty() {
        encode_command(out, &[setrange, key, b"0", b"0"]);
        return;
    }
    let mut singles: Vec<String> = Vec::new();
    let flush = |out: &mut Vec<u8>, singles: &mut Vec<String>| {
        batched(out, append, key, singles.iter().map(|m| vec![m.as_bytes()]));
        singles.clear();
    };
    for (lo, hi) in roaring::runs(b) {
        let (first, last): (u64, u64) = (lo.into(), hi.into());
        let top: u64 = B::MAX.into();
        // `R.SETRANGE` takes an exclusive end, so the top id goes by append.
        let upto = if last == top { last - 1 } else { last };
        if upto >= first && upto - first >= 2 {
            let (a, z) = (first.to_string(), (upto + 1).to_string());
            encode_command(out, &[setrange, key, a.as_bytes(), z.as_bytes()]);
        } else {
            singles.extend((first..=upto).map(|m| m.to_string()));
        }
        if last == top {
            singles.push(last.to_string());
        }
        if singles.len() >= ITEMS_PER_COMMAND * 16 {
            flush(out, &mut singles);
        }
    }
    flush(out, &mut singles);
}

/// One command per `ITEMS_PER_COMMAND` items, each item one or two words.
/// A stream as Redis's rewrite rebuilds it: XADD per entry (or, when it has
/// none, `XADD key MAXLEN 0 0-1 x y` to create it), XSETID with its metadata, then
/// each group with XGROUP CREATE ... ENTRIESREAD, its consumers with pending
/// entries through XCLAIM ... FORCE JUSTID, the others with XGROUP
/// CREATECONSUMER.
fn stream_commands(out: &mut Vec<u8>, key: &[u8], s: &keel_store::stream::Stream) {
    use keel_store::stream::StreamId;
    let mut argv: Vec<Vec<u8>> = Vec::new();
    let emit = |out: &mut Vec<u8>, argv: &[Vec<u8>]| {
        let refs: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        encode_command(out, &refs);
    };
    let first = s.range(StreamId::MIN, StreamId::MAX).next().is_some();
    if first {
        for e in s.range(StreamId::MIN, StreamId::MAX) {
            argv.clear();
            argv.push(b"XADD".to_vec());
            argv.push(key.to_vec());
            argv.push(e.id.to_string().into_bytes());
            for (f, v) in e.fields() {
                argv.push(f.to_vec());
                argv.push(v.to_vec());
            }
            emit(out, &argv);
        }
    } else {
        // Redis creates an empty stream with a throwaway entry 0-1 trimmed at
        // once; the XSETID below restores its real last id.
        emit(
            out,
            &[
                b"XADD".to_vec(),
                key.to_vec(),
                b"MAXLEN".to_vec(),
                b"0".to_vec(),
                b"0-1".to_vec(),
                b"x".to_vec(),
                b"y".to_vec(),
            ],
        );
    }
    emit(
        out,
        &[
            b"XSETID".to_vec(),
            key.to_vec(),
            s.last_id().to_string().into_bytes(),
            b"ENTRIESADDED".to_vec(),
            s.entries_added().to_string().into_bytes(),
            b"MAXDELETEDID".to_vec(),
            s.max_deleted_id().to_string().into_bytes(),
        ],
    );
    let Some(groups) = &s.groups else {
        return;
    };
    for (name, g) in &groups.groups {
        let read = g
            .entries_read
            .map_or_else(|| b"-1".to_vec(), |n| n.to_string().into_bytes());
        emit(
            out,
            &[
                b"XGROUP".to_vec(),
                b"CREATE".to_vec(),
                key.to_vec(),
                name.clone(),
                g.last_id.to_string().into_bytes(),
                b"ENTRIESREAD".to_vec(),
                read,
            ],
        );
        // By consumer, as Redis walks them: pending entries claimed back,
        // consumers without any created.
        for (cname, c) in &g.consumers {
            if c.pending.is_empty() {
                emit(
                    out,
                    &[
                        b"XGROUP".to_vec(),
                        b"CREATECONSUMER".to_vec(),
                        key.to_vec(),
                        name.clone(),
                        cname.clone(),
                    ],
                );
                continue;
            }
            for id in &c.pending {
                let Some(p) = g.pel.get(id) else { continue };
                emit(
                    out,
                    &[
                        b"XCLAIM".to_vec(),
                        key.to_vec(),
                        name.clone(),
                        cname.clone(),
                        b"0".to_vec(),
                        id.to_string().into_bytes(),
                        b"TIME".to_vec(),
                        p.delivery_time.to_string().into_bytes(),
                        b"RETRYCOUNT".to_vec(),
                        p.delivery_count.to_string().into_bytes(),
                        b"JUSTID".to_vec(),
                        b"FORCE".to_vec(),
                    ],
                );
            }
        }
    }
}

fn batched<'a>(
    out: &mut Vec<u8>,
    cmd: &'static [u8],
    key: &'a [u8],
    items: impl Iterator<Item = Vec<&'a [u8]>>,
) {
    let mut argv: Vec<&[u8]> = vec![cmd, key];
    let mut n = 0;
    for item in items {
        argv.extend(item);
        n += 1;
        if n == ITEMS_PER_COMMAND {
            encode_command(out, &argv);
            argv.truncate(2);
            n = 0;
        }
    }
    if n > 0 {
        encode_command(out, &argv);
    }
}

/// A score as text that parses back to the same double (`inf`, `-inf`
/// included).
fn score_text(s: f64) -> String {
    if s.is_infinite() {
        if s > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{s}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands Redis 7.0's rewrite writes for the same stream (checked
    /// against its BGREWRITEAOF with `aof-use-rdb-preamble no`).
    #[test]
    fn a_stream_with_groups_is_rebuilt_as_redis_does() {
        use keel_store::stream::{Consumer, Group, Groups, NodeLimits, Pending, Stream, StreamId};
        let mut s = Stream::new();
        s.append(StreamId::new(1, 1), &[(b"f", b"v")], NodeLimits::default());
        s.append(StreamId::new(2, 0), &[(b"f", b"v")], NodeLimits::default());
        let mut g = Group {
            last_id: StreamId::new(2, 0),
            entries_read: Some(2),
            ..Group::default()
        };
        let mut alice = Consumer::default();
        for id in [StreamId::new(1, 1), StreamId::new(2, 0)] {
            g.pel.insert(
                id,
                Pending {
                    consumer: b"alice".to_vec(),
                    delivery_time: 1795552288960,
                    delivery_count: 1,
                },
            );
            alice.pending.insert(id);
        }
        g.consumers.insert(b"alice".to_vec(), alice);
        g.consumers.insert(b"bob".to_vec(), Consumer::default());
        let h = Group {
            last_id: StreamId::new(2, 0),
            ..Group::default()
        };
        let mut groups = Groups::default();
        groups.groups.insert(b"g".to_vec(), g);
        groups.groups.insert(b"h".to_vec(), h);
        s.groups = Some(Box::new(groups));
        let mut out = Vec::new();
        commands_for(&mut out, b"s", &Value::Stream(Box::new(s)), None);
        let mut want = Vec::new();
        for line in [
            "XADD s 1-1 f v",
            "XADD s 2-0 f v",
            "XSETID s 2-0 ENTRIESADDED 2 MAXDELETEDID 0-0",
            "XGROUP CREATE s g 2-0 ENTRIESREAD 2",
            "XCLAIM s g alice 0 1-1 TIME 1795552288960 RETRYCOUNT 1 JUSTID FORCE",
            "XCLAIM s g alice 0 2-0 TIME 1795552288960 RETRYCOUNT 1 JUSTID FORCE",
            "XGROUP CREATECONSUMER s g bob",
            "XGROUP CREATE s h 2-0 ENTRIESREAD -1",
        ] {
            let argv: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
            encode_command(&mut want, &argv);
        }
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&want)
        );
    }

    #[test]
    fn libraries_become_function_load_commands() {
        let mut out = Vec::new();
        function_load_commands(
            &mut out,
            &[
                Bytes::from_static(b"#!lua name=a\nreturn 1"),
                Bytes::from_static(b"#!lua name=b\r\nx"),
            ],
        );
        assert_eq!(
            out,
            b"*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n$21\r\n#!lua name=a\nreturn 1\r\n\
              *3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n$15\r\n#!lua name=b\r\nx\r\n"
                .as_slice()
        );
        let mut none = Vec::new();
        function_load_commands(&mut none, &[]);
        assert!(none.is_empty());
    }

    #[test]
    fn an_index_becomes_create_then_one_add_per_entity() {
        let mut idx = keel_store::index::BitmapIndex::new();
        idx.add(b"e1", &[(b"a", b"1")], Some(b"p")).expect("add");
        idx.add(b"e2", &[(b"a", b"2")], None).expect("add");
        let mut out = Vec::new();
        commands_for(&mut out, b"k", &Value::Index(Box::new(idx)), None);
        assert_eq!(
            out,
            b"*2\r\n$10\r\nIDX.CREATE\r\n$1\r\nk\r\n\
              *7\r\n$7\r\nIDX.ADD\r\n$1\r\nk\r\n$2\r\ne1\r\n$1\r\na\r\n$1\r\n1\r\n$7\r\nPAYLOAD\r\n$1\r\np\r\n\
              *5\r\n$7\r\nIDX.ADD\r\n$1\r\nk\r\n$2\r\ne2\r\n$1\r\na\r\n$1\r\n2\r\n"
                .as_slice()
        );
    }
}
