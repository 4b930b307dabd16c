//! `keel-streams`'s `streams` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::stream::{id::parse_redis, Entry, Stream, StreamId, TrimTo};
use keel_store::{Value, ValueType};
use keel_streams::streams::*;
use std::fmt::Write as _;

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    #[test]
    fn add_range_and_errors() {
        let mut e = TestEngine::new();
        assert_eq!(e.run(&["XADD", "s", "1-1", "a", "1"]), bulk("1-1"));
        assert_eq!(e.run(&["XADD", "s", "1-*", "a", "2"]), bulk("1-2"));
        assert_eq!(
            e.run(&["XADD", "s", "1-1", "a", "1"]),
            error(
                "ERR The ID specified in XADD is equal or smaller than the target stream top item"
            )
        );
        assert_eq!(
            e.run(&["XADD", "s", "0-0", "a", "1"]),
            error("ERR The ID specified in XADD must be greater than 0-0")
        );
        assert_eq!(
            e.run(&["XADD", "s", "*", "a"]),
            error("ERR wrong number of arguments for 'xadd' command")
        );
        assert_eq!(e.run(&["XLEN", "s"]), Frame::Integer(2));
        assert_eq!(
            e.run(&["XADD", "n", "NOMKSTREAM", "*", "a", "1"]),
            Frame::Null
        );
        assert_eq!(e.run(&["EXISTS", "n"]), Frame::Integer(0));
        let Frame::Array(items) = e.run(&["XRANGE", "s", "(1-1", "+"]) else {
            panic!("array")
        };
        assert_eq!(items.len(), 1);
        assert_eq!(
            e.run(&["XRANGE", "s", "-", "+", "COUNT", "0"]),
            Frame::NullArray
        );
        assert_eq!(e.run(&["XDEL", "s", "1-1", "9-9"]), Frame::Integer(1));
        assert_eq!(e.run(&["TYPE", "s"]), Frame::Simple("stream".into()));
        assert_eq!(e.run(&["XTRIM", "s", "MAXLEN", "0"]), Frame::Integer(1));
        assert_eq!(e.run(&["XLEN", "s"]), Frame::Integer(0));
        assert_eq!(
            e.run(&["XSETID", "s", "1-0", "MAXDELETEDID", "2-0"]),
            error(
                "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
            )
        );
        assert_eq!(e.run(&["XREAD", "STREAMS", "s", "0"]), Frame::NullArray);
    }
}
