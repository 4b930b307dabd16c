//! Fuzz the stream block format (`keel_store::stream`, Keel's own packed
//! layout of a stream's entries) and the RDB stream loader.
//!
//! Input: a first byte choosing the target, then the bytes.
//! - Even: the bytes as one block in Keel's layout under master id 1-0.
//!   Nothing panics; a block that decodes reads as ascending ids from the
//!   master, and a stream rebuilt from what it read reads the same, as does
//!   that stream's own block after a trip through its bytes.
//! - Odd: the bytes as a DUMP payload body of RDB type 19 (a stream), with a
//!   valid footer added. Nothing panics; a stream that loads dumps back to a
//!   payload that loads to the same entries.

#![no_main]

use keel_persist::rdb::{dump_payload, parse_payload, to_store_value};
use keel_store::stream::{NodeLimits, Stream, StreamId};
use keel_store::{CompactLimits, Value};
use libfuzzer_sys::fuzz_target;

type Entries = Vec<(StreamId, Vec<(Vec<u8>, Vec<u8>)>)>;

fn entries(s: &Stream) -> Entries {
    s.range(StreamId::MIN, StreamId::MAX)
        .map(|e| (e.id, e.fields().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else { return };
    if mode & 1 == 0 {
        let master = StreamId::new(1, 0);
        let Some(s) = Stream::from_block_bytes(master, body.to_vec()) else { return };
        let read = entries(&s);
        assert!(read.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(read.first().map_or(true, |e| e.0 >= master));
        // Deleted entries are skipped by reads: rebuild only when there are none.
        if s.len() as usize == s.blocks().map(|b| (b.live() + b.deleted()) as usize).sum::<usize>() {
            let mut again = Stream::new();
            let unlimited = NodeLimits { max_bytes: 0, max_entries: 0 };
            for (id, fields) in &read {
                let refs: Vec<(&[u8], &[u8])> = fields.iter().map(|(f, v)| (&f[..], &v[..])).collect();
                assert!(again.append(*id, &refs, unlimited));
            }
            assert_eq!(entries(&again), read);
            for (m, bytes) in again.block_bytes() {
                let back = Stream::from_block_bytes(m, bytes.to_vec()).expect("own block decodes");
                assert_eq!(entries(&back), read);
            }
        }
        return;
    }
    let mut payload = vec![19u8];
    payload.extend_from_slice(body);
    payload.extend_from_slice(&10u16.to_le_bytes());
    let crc = keel_persist::crc64::crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    let Ok(v) = parse_payload(&payload) else { return };
    let Ok(v) = to_store_value(v, &CompactLimits::default()) else { return };
    let Value::Stream(s) = &v else { return };
    let again = to_store_value(parse_payload(&dump_payload(&v)).expect("own payload reads"), &CompactLimits::default())
        .expect("converts");
    let Value::Stream(t) = &again else { panic!("stream") };
    assert_eq!(entries(s), entries(t));
    assert_eq!(s.groups, t.groups);
});
