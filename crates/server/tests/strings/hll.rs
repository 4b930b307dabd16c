//! `keel-strings`'s `hll` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::hll::{self, Encoding, HllError, REGISTERS};
use keel_store::{StrBytes, Value};
use keel_strings::hll::*;
use keel_strings::strings::read_str;
use std::sync::atomic::Ordering;

#[cfg(test)]
mod tests {
    use keel_engine::testing::TestEngine;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn int(n: i64) -> Frame {
        Frame::Integer(n)
    }

    fn err(f: &Frame) -> String {
        match f {
            Frame::Error(e) => String::from_utf8_lossy(e).into_owned(),
            other => panic!("not an error: {other:?}"),
        }
    }

    #[test]
    fn pfadd_pfcount_and_cache() {
        let mut e = TestEngine::new();
        assert_eq!(e.run(&["PFADD", "h"]), int(1));
        assert_eq!(e.run(&["PFADD", "h"]), int(0));
        assert_eq!(e.run(&["PFADD", "h", "a", "b", "c"]), int(1));
        assert_eq!(e.run(&["PFADD", "h", "a"]), int(0));
        assert_eq!(e.run(&["PFCOUNT", "h"]), int(3));
        assert_eq!(e.run(&["PFCOUNT", "h"]), int(3));
        assert_eq!(e.run(&["PFCOUNT", "nokey"]), int(0));
        assert_eq!(e.run(&["PFADD", "g", "c", "d"]), int(1));
        assert_eq!(e.run(&["PFCOUNT", "h", "g", "nokey"]), int(4));
        assert_eq!(e.run(&["PFMERGE", "m", "h", "g"]), Frame::ok());
        assert_eq!(e.run(&["PFCOUNT", "m"]), int(4));
        assert_eq!(
            e.run(&["PFDEBUG", "ENCODING", "m"]),
            Frame::Simple("sparse".into())
        );
    }

    #[test]
    fn wrong_values_are_refused_unchanged() {
        let mut e = TestEngine::new();
        e.run(&["SET", "s", "not an hll"]);
        e.run(&["LPUSH", "l", "x"]);
        let not_hll = "WRONGTYPE Key is not a valid HyperLogLog string value.";
        assert_eq!(err(&e.run(&["PFADD", "s", "a"])), not_hll);
        assert_eq!(err(&e.run(&["PFCOUNT", "s"])), not_hll);
        assert_eq!(err(&e.run(&["PFMERGE", "s"])), not_hll);
        assert!(err(&e.run(&["PFADD", "l", "a"])).starts_with("WRONGTYPE Operation"));
        // A sparse body one byte short (its header all ASCII: the cache is
        // valid).
        let mut v = keel_store::hll::new_sparse();
        v.pop();
        let v = String::from_utf8_lossy(&v).into_owned();
        assert_eq!(e.run(&["SET", "c", &v]), Frame::ok());
        let corrupt = "INVALIDOBJ Corrupted HLL object detected";
        assert_eq!(err(&e.run(&["PFADD", "c", "a"])), corrupt);
        // A valid cache is answered without reading the body, as in Redis.
        assert_eq!(e.run(&["PFCOUNT", "c"]), int(0));
        assert_eq!(err(&e.run(&["PFCOUNT", "c", "c"])), corrupt);
        assert_eq!(err(&e.run(&["PFMERGE", "d", "c"])), corrupt);
        assert_eq!(e.run(&["EXISTS", "d"]), int(0));
        assert_eq!(err(&e.run(&["PFDEBUG", "GETREG", "c"])), corrupt);
    }

    #[test]
    fn pfdebug_and_selftest() {
        let mut e = TestEngine::new();
        assert_eq!(
            err(&e.run(&["PFDEBUG", "GETREG", "h"])),
            "ERR The specified key does not exist"
        );
        e.run(&["PFADD", "h", "a", "b", "c"]);
        assert_eq!(
            e.run(&["PFDEBUG", "DECODE", "h"]),
            Frame::Bulk("Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603".into())
        );
        assert_eq!(
            err(&e.run(&["PFDEBUG", "nope", "h"])),
            "ERR Unknown PFDEBUG subcommand 'nope'"
        );
        let Frame::Array(regs) = e.run(&["PFDEBUG", "GETREG", "h"]) else {
            panic!("GETREG is an array")
        };
        assert_eq!(regs.len(), 16384);
        assert_eq!(regs[8436], int(1));
        assert_eq!(
            e.run(&["PFDEBUG", "ENCODING", "h"]),
            Frame::Simple("dense".into())
        );
        assert_eq!(e.run(&["PFDEBUG", "TODENSE", "h"]), int(0));
        assert_eq!(
            err(&e.run(&["PFDEBUG", "DECODE", "h"])),
            "ERR HLL encoding is not sparse"
        );
        assert_eq!(e.run(&["PFCOUNT", "h"]), int(3));
        assert_eq!(e.run(&["PFSELFTEST"]), Frame::ok());
    }
}
