//! `keel-keyspace`'s `dump` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_keyspace::dump::*;
use keel_persist::rdb::{dump_payload_with, parse_payload, to_store_value};
use keel_resp::Frame;

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use keel_engine::testing::{decoded, ok, TestEngine};
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn run(t: &mut TestEngine, argv: &[&[u8]]) -> Frame {
        let argv = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        decoded(t.engine.execute(&mut t.session, argv))
    }

    #[test]
    fn restore_logs_absolute_deadlines_and_deletions() {
        let (mut t, rec) = TestEngine::recording(1_700_000_000_000);
        run(&mut t, &[b"SET", b"src", b"v"]);
        let Frame::Bulk(p) = run(&mut t, &[b"DUMP", b"src"]) else {
            panic!("no payload");
        };
        assert_eq!(run(&mut t, &[b"RESTORE", b"a", b"5000", &p]), ok());
        assert_eq!(run(&mut t, &[b"RESTORE", b"b", b"0", &p]), ok());
        assert_eq!(
            run(&mut t, &[b"RESTORE", b"c", b"1800000000000", &p, b"ABSTTL"]),
            ok()
        );
        // Past deadlines: nothing created, and a replaced key is deleted.
        assert_eq!(run(&mut t, &[b"RESTORE", b"d", b"1", &p, b"ABSTTL"]), ok());
        assert_eq!(
            run(&mut t, &[b"RESTORE", b"b", b"1", &p, b"ABSTTL", b"REPLACE"]),
            ok()
        );
        assert_eq!(run(&mut t, &[b"EXISTS", b"b", b"d"]), Frame::Integer(0));
        let p = String::from_utf8_lossy(&p).into_owned();
        let log = rec.commands();
        let want: Vec<Vec<String>> = [
            vec!["SET", "src", "v"],
            vec!["RESTORE", "a", "1700000005000", &p, "ABSTTL"],
            vec!["RESTORE", "b", "0", &p],
            vec!["RESTORE", "c", "1800000000000", &p, "ABSTTL"],
            vec!["DEL", "b"],
        ]
        .iter()
        .map(|v| v.iter().map(|s| s.to_string()).collect())
        .collect();
        assert_eq!(log, want);
    }
}
