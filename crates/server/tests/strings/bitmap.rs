//! `keel-strings`'s `bitmap` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::bits::{self, BitOp, FieldType, Overflow, Unit};
use keel_store::num::parse_i64;
use keel_store::Value;
use keel_strings::bitmap::*;
use keel_strings::strings::{read_str, str_buf_mut, write_len};

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    /// Changes counted as redis-server 7.0.15 counts them (INFO persistence
    /// `rdb_changes_since_last_save`): a write that leaves every bit as it was
    /// counts only when it created or grew the string.
    #[test]
    fn only_real_changes_count_as_dirty() {
        let mut t = TestEngine::new();
        let cases: &[(&[&str], u64)] = &[
            (&["SETBIT", "b", "3", "1"], 1),
            (&["SETBIT", "b", "3", "1"], 0),
            (&["SETBIT", "b", "3", "0"], 1),
            (&["SETBIT", "b", "100", "0"], 1),
            (&["SETBIT", "e", "5", "0"], 1),
            (&["BITFIELD", "b", "SET", "u8", "0", "0"], 0),
            (&["BITFIELD", "b", "INCRBY", "u8", "0", "0"], 0),
            (&["BITFIELD", "b", "INCRBY", "u8", "0", "1"], 1),
            (&["BITFIELD", "b", "INCRBY", "u8", "0", "256"], 0),
            (&["BITFIELD", "b", "GET", "u8", "0"], 0),
            (
                &[
                    "BITFIELD", "b", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "255",
                ],
                0,
            ),
            (
                &[
                    "BITFIELD", "c", "SET", "u8", "0", "1", "SET", "u8", "8", "1",
                ],
                2,
            ),
            (
                &[
                    "BITFIELD", "c", "SET", "u8", "0", "2", "SET", "u8", "8", "2", "SET", "u8",
                    "16", "0",
                ],
                3,
            ),
            (
                &[
                    "BITFIELD", "c", "SET", "u8", "0", "3", "SET", "u8", "0", "3",
                ],
                1,
            ),
            (&["BITFIELD", "c", "SET", "u8", "40", "0"], 1),
            (&["BITFIELD", "d", "INCRBY", "u8", "0", "0"], 1),
        ];
        for (argv, want) in cases {
            let before = t.engine.stats.dirty();
            t.run(argv);
            assert_eq!(t.engine.stats.dirty() - before, *want, "{argv:?}");
        }
    }

    #[test]
    fn setbit_grows_and_reports_old_bits() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["SETBIT", "k", "9", "1"]), int(0));
        assert_eq!(t.run(&["STRLEN", "k"]), int(2));
        assert_eq!(t.run(&["SETBIT", "k", "9", "0"]), int(1));
        assert_eq!(t.run(&["GETBIT", "k", "9"]), int(0));
        assert_eq!(t.run(&["GETBIT", "nokey", "9"]), int(0));
        assert_eq!(
            t.run(&["SETBIT", "k", "4294967296", "1"]),
            error("ERR bit offset is not an integer or out of range")
        );
        assert_eq!(
            t.run(&["SETBIT", "k", "1", "2"]),
            error("ERR bit is not an integer or out of range")
        );
        assert_eq!(t.run(&["STRLEN", "k"]), int(2));
    }

    #[test]
    fn setbit_keeps_ttl() {
        let mut t = TestEngine::new();
        t.run(&["SET", "k", "a", "PX", "100"]);
        t.run(&["SETBIT", "k", "100", "1"]);
        t.run(&["BITFIELD", "k", "SET", "u8", "200", "1"]);
        t.clock.advance(100);
        assert_eq!(t.run(&["GETBIT", "k", "100"]), int(0));
        assert_eq!(t.run(&["STRLEN", "k"]), int(0));
    }

    #[test]
    fn counting_and_searching() {
        let mut t = TestEngine::new();
        t.run(&["SET", "k", "foobar"]);
        assert_eq!(t.run(&["BITCOUNT", "k"]), int(26));
        assert_eq!(t.run(&["BITCOUNT", "k", "5", "30", "BIT"]), int(17));
        assert_eq!(t.run(&["BITCOUNT", "k", "0"]), error("ERR syntax error"));
        assert_eq!(t.run(&["BITCOUNT", "nokey", "0"]), int(0));
        assert_eq!(t.run(&["BITPOS", "k", "0"]), int(0));
        assert_eq!(t.run(&["BITPOS", "k", "1", "2", "-1", "BIT"]), int(2));
        assert_eq!(t.run(&["BITPOS", "nokey", "0"]), int(0));
        assert_eq!(t.run(&["BITPOS", "nokey", "1"]), int(-1));
        assert_eq!(
            t.run(&["BITPOS", "k", "3"]),
            error("ERR The bit argument must be 1 or 0.")
        );
    }

    #[test]
    fn bitop_stores_and_deletes() {
        let mut t = TestEngine::new();
        t.run(&["SET", "a", "ab"]);
        t.run(&["SET", "b", "c"]);
        assert_eq!(t.run(&["BITOP", "XOR", "d", "a", "b"]), int(2));
        assert_eq!(
            t.run(&["GET", "d"]),
            Frame::Bulk(bytes::Bytes::from_static(&[b'a' ^ b'c', b'b']))
        );
        assert_eq!(t.run(&["BITOP", "AND", "d", "x", "y"]), int(0));
        assert_eq!(t.run(&["GET", "d"]), Frame::Null);
        assert_eq!(
            t.run(&["BITOP", "NOT", "d", "a", "b"]),
            error("ERR BITOP NOT must be called with a single source key.")
        );
    }

    #[test]
    fn bitfield_ops() {
        let mut t = TestEngine::new();
        assert_eq!(
            t.run(&[
                "BITFIELD", "k", "SET", "u8", "0", "255", "INCRBY", "u8", "0", "1", "OVERFLOW",
                "FAIL", "INCRBY", "u8", "0", "-1", "GET", "i8", "0"
            ]),
            Frame::Array(vec![int(0), int(0), Frame::Null, int(0)])
        );
        assert_eq!(
            t.run(&["BITFIELD_RO", "k", "SET", "u8", "0", "1"]),
            error("ERR BITFIELD_RO only supports the GET subcommand")
        );
        assert_eq!(
            t.run(&["BITFIELD", "k", "GET", "u64", "0"]),
            error("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
        );
        assert_eq!(
            t.run(&["BITFIELD", "k", "OVERFLOW", "x"]),
            error("ERR Invalid OVERFLOW type specified")
        );
        assert_eq!(
            t.run(&["BITFIELD_RO", "k", "GET", "u4", "#1"]),
            Frame::Array(vec![int(0)])
        );
    }
}
