//! `keel-probabilistic`'s `cms` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_probabilistic::cms::*;
use keel_resp::Frame;
use keel_store::cms::{dims_for, CountMinSketch};
use keel_store::num::{parse_f64_in_range, parse_i64};
use keel_store::{Value, ValueType};

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn ints(v: &[i64]) -> Frame {
        Frame::Array(v.iter().map(|n| Frame::Integer(*n)).collect())
    }

    fn err(t: &mut TestEngine, argv: &[&str]) -> String {
        match t.run(argv) {
            Frame::Error(e) => String::from_utf8_lossy(&e).into_owned(),
            other => panic!("{argv:?}: {other:?}"),
        }
    }

    #[test]
    fn init_incr_query_info() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["CMS.INITBYDIM", "a", "200", "5"]), Frame::ok());
        assert_eq!(
            err(&mut t, &["CMS.INITBYDIM", "a", "200", "5"]),
            "CMS: key already exists"
        );
        assert_eq!(
            err(&mut t, &["CMS.INITBYDIM", "b", "0", "5"]),
            "CMS: invalid width"
        );
        assert_eq!(
            err(&mut t, &["CMS.INITBYDIM", "b", "5", "x"]),
            "CMS: invalid depth"
        );
        assert_eq!(
            err(&mut t, &["CMS.INITBYDIM", "b", "1073741824", "1073741824"]),
            "CMS: invalid init arguments"
        );
        assert_eq!(
            err(&mut t, &["CMS.INITBYPROB", "b", "1", "0.5"]),
            "CMS: invalid overestimation value"
        );
        assert_eq!(
            err(&mut t, &["CMS.INITBYPROB", "b", "0.1", "0"]),
            "CMS: invalid prob value"
        );
        assert_eq!(
            t.run(&["CMS.INITBYPROB", "p", "0.001", "0.01"]),
            Frame::ok()
        );
        assert_eq!(
            t.run(&["CMS.INFO", "p"]),
            Frame::Map(vec![
                (Frame::simple("width"), Frame::Integer(2000)),
                (Frame::simple("depth"), Frame::Integer(7)),
                (Frame::simple("count"), Frame::Integer(0)),
            ])
        );
        assert_eq!(
            t.run(&["CMS.INCRBY", "a", "x", "3", "y", "4"]),
            ints(&[3, 4])
        );
        assert_eq!(
            err(&mut t, &["CMS.INCRBY", "a", "x", "-1"]),
            "CMS: Number cannot be negative"
        );
        assert_eq!(
            err(&mut t, &["CMS.INCRBY", "a", "x", "q"]),
            "CMS: Cannot parse number"
        );
        assert_eq!(
            err(&mut t, &["CMS.INCRBY", "nope", "x", "1"]),
            "CMS: key does not exist"
        );
        assert_eq!(t.run(&["CMS.QUERY", "a", "x", "y", "z"]), ints(&[3, 4, 0]));
        let Frame::Array(r) = t.run(&["CMS.INCRBY", "a", "x", "4294967295", "z", "1"]) else {
            panic!("array")
        };
        assert!(matches!(&r[0], Frame::Error(e) if &e[..] == b"CMS: INCRBY overflow"));
        assert_eq!(r[1], Frame::Integer(1));
        assert_eq!(t.run(&["CMS.QUERY", "a", "x"]), ints(&[3]));
    }

    #[test]
    fn merge_checks_and_weights() {
        let mut t = TestEngine::new();
        for k in ["d", "s1", "s2"] {
            t.run(&["CMS.INITBYDIM", k, "10", "3"]);
        }
        t.run(&["CMS.INITBYDIM", "other", "11", "3"]);
        t.run(&["CMS.INCRBY", "s1", "a", "2"]);
        t.run(&["CMS.INCRBY", "s2", "a", "5"]);
        assert_eq!(
            t.run(&["CMS.MERGE", "d", "2", "s1", "s2", "WEIGHTS", "3", "1"]),
            Frame::ok()
        );
        assert_eq!(t.run(&["CMS.QUERY", "d", "a"]), ints(&[11]));
        assert_eq!(
            err(&mut t, &["CMS.MERGE", "nope", "1", "s1"]),
            "CMS: key does not exist"
        );
        assert_eq!(
            err(&mut t, &["CMS.MERGE", "d", "x", "s1"]),
            "CMS: invalid numkeys"
        );
        assert_eq!(
            err(&mut t, &["CMS.MERGE", "d", "0", "s1"]),
            "CMS: Number of keys must be positive"
        );
        assert_eq!(
            err(&mut t, &["CMS.MERGE", "d", "2", "s1"]),
            "CMS: wrong number of keys"
        );
        assert_eq!(
            err(&mut t, &["CMS.MERGE", "d", "1", "s1", "WEIGHTS"]),
            "CMS: wrong number of keys/weights"
        );
        assert_eq!(
            err(&mut t, &["CMS.MERGE", "d", "1", "s1", "WEIGHTS", "x"]),
            "CMS: invalid weight value"
        );
        assert_eq!(
            err(&mut t, &["CMS.MERGE", "d", "1", "other"]),
            "CMS: width/depth is not equal"
        );
        assert_eq!(
            err(&mut t, &["CMS.MERGE", "d", "1", "s1", "WEIGHTS", "-1"]),
            "CMS: MERGE overflow"
        );
        assert_eq!(t.run(&["CMS.QUERY", "d", "a"]), ints(&[11]));
        assert_eq!(t.run(&["CMS.MERGE", "d", "2", "d", "s1"]), Frame::ok());
        assert_eq!(t.run(&["CMS.QUERY", "d", "a"]), ints(&[13]));
    }
}
