//! `keel-roaring`'s `index` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_roaring::index::*;
use keel_store::index::{BitmapIndex, Query};
use keel_store::num::parse_i64;
use keel_store::{Value, ValueType};

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn bulks(v: &[&str]) -> Frame {
        Frame::Array(
            v.iter()
                .map(|s| Frame::bulk(Bytes::copy_from_slice(s.as_bytes())))
                .collect(),
        )
    }

    fn err(s: &str) -> Frame {
        Frame::Error(Bytes::copy_from_slice(s.as_bytes()))
    }

    fn setup() -> TestEngine {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["IDX.CREATE", "i"]), Frame::ok());
        for (id, c, s, p) in [
            ("a", "red", "s", Some("pa")),
            ("b", "red", "m", None),
            ("c", "blue", "m", Some("pc")),
        ] {
            let mut argv = vec!["IDX.ADD", "i", id, "colour", c, "size", s];
            if let Some(p) = p {
                argv.extend(["PAYLOAD", p]);
            }
            assert_eq!(t.run(&argv), Frame::Integer(1));
        }
        t
    }

    #[test]
    fn create_add_search_del_drop() {
        let mut t = setup();
        assert_eq!(t.run(&["IDX.CREATE", "i"]), err("ERR index already exists"));
        assert_eq!(
            t.run(&["IDX.SEARCH", "i", "colour", "red"]),
            bulks(&["a", "b"])
        );
        assert_eq!(
            t.run(&["idx.search", "i", "colour", "red", "size", "m"]),
            bulks(&["b"])
        );
        assert_eq!(
            t.run(&["IDX.SEARCH", "i", "size", "m", "WITHPAYLOAD"]),
            Frame::Array(vec![
                Frame::bulk(Bytes::from_static(b"b")),
                Frame::Null,
                Frame::bulk(Bytes::from_static(b"c")),
                Frame::bulk(Bytes::from_static(b"pc")),
            ])
        );
        assert_eq!(
            t.run(&["IDX.SEARCH", "i", "colour", "red", "DEFAULT", "size", "m"]),
            bulks(&["b"])
        );
        assert_eq!(
            t.run(&["IDX.SEARCH", "i", "colour", "red", "limit", "1"]),
            bulks(&["a"])
        );
        assert_eq!(t.run(&["IDX.SEARCH", "i", "colour", "green"]), bulks(&[]));
        // Replace whole: "a" loses size=s and its payload.
        assert_eq!(
            t.run(&["IDX.ADD", "i", "a", "colour", "blue"]),
            Frame::Integer(0)
        );
        assert_eq!(t.run(&["IDX.SEARCH", "i", "size", "s"]), bulks(&[]));
        assert_eq!(t.run(&["IDX.DEL", "i", "a"]), Frame::Integer(1));
        assert_eq!(t.run(&["IDX.DEL", "i", "a"]), Frame::Integer(0));
        assert_eq!(t.run(&["IDX.SEARCH", "i", "colour", "blue"]), bulks(&["c"]));
        let Frame::Map(info) = t.run(&["IDX.INFO", "i"]) else {
            panic!("IDX.INFO replies a map");
        };
        let figures: Vec<(Frame, Frame)> = info.into_iter().take(4).collect();
        let field = |s: &str| Frame::bulk(Bytes::copy_from_slice(s.as_bytes()));
        assert_eq!(
            figures,
            vec![
                (field("entities"), Frame::Integer(2)),
                (field("pairs"), Frame::Integer(3)),
                (field("attributes"), Frame::Integer(2)),
                (field("payload_bytes"), Frame::Integer(2)),
            ]
        );
        assert_eq!(t.run(&["TYPE", "i"]), Frame::simple("keelindex"));
        assert_eq!(t.run(&["IDX.DROP", "i"]), Frame::ok());
        assert_eq!(t.run(&["EXISTS", "i"]), Frame::Integer(0));
    }

    #[test]
    fn errors() {
        let mut t = setup();
        let none = err("ERR no such index");
        assert_eq!(t.run(&["IDX.ADD", "nope", "x", "a", "v"]), none);
        assert_eq!(t.run(&["IDX.DEL", "nope", "x"]), none);
        assert_eq!(t.run(&["IDX.SEARCH", "nope", "a", "v"]), none);
        assert_eq!(t.run(&["IDX.INFO", "nope"]), none);
        assert_eq!(t.run(&["IDX.DROP", "nope"]), none);
        t.run(&["SET", "s", "x"]);
        let wrong = err("WRONGTYPE Operation against a key holding the wrong kind of value");
        for argv in [
            &["IDX.CREATE", "s"][..],
            &["IDX.ADD", "s", "x", "a", "v"],
            &["IDX.DEL", "s", "x"],
            &["IDX.SEARCH", "s", "a", "v"],
            &["IDX.INFO", "s"],
            &["IDX.DROP", "s"],
        ] {
            assert_eq!(t.run(argv), wrong, "{argv:?}");
        }
        let arity = |c: &str| err(&format!("ERR wrong number of arguments for '{c}' command"));
        assert_eq!(t.run(&["IDX.ADD", "i", "x", "a"]), arity("idx.add"));
        assert_eq!(
            t.run(&["IDX.ADD", "i", "x", "a", "v", "b"]),
            arity("idx.add")
        );
        assert_eq!(
            t.run(&["IDX.ADD", "i", "x", "PAYLOAD", "p"]),
            arity("idx.add")
        );
        assert_eq!(t.run(&["IDX.CREATE"]), arity("idx.create"));
        assert_eq!(t.run(&["IDX.SEARCH", "i", "a"]), arity("idx.search"));
        assert_eq!(t.run(&["IDX.DEL", "i"]), arity("idx.del"));
        assert_eq!(t.run(&["IDX.INFO", "i", "x"]), arity("idx.info"));
        assert_eq!(t.run(&["IDX.DROP", "i", "x"]), arity("idx.drop"));
        let syntax = err("ERR syntax error");
        assert_eq!(
            t.run(&["IDX.ADD", "i", "x", "PAYLOAD", "p", "a", "v"]),
            syntax
        );
        assert_eq!(t.run(&["IDX.SEARCH", "i", "a", "v", "b"]), syntax);
        assert_eq!(t.run(&["IDX.SEARCH", "i", "LIMIT", "1"]), syntax);
        assert_eq!(t.run(&["IDX.SEARCH", "i", "a", "v", "LIMIT"]), syntax);
        assert_eq!(
            t.run(&["IDX.SEARCH", "i", "a", "v", "DEFAULT", "a"]),
            syntax
        );
        assert_eq!(
            t.run(&["IDX.SEARCH", "i", "a", "v", "WITHPAYLOAD", "x"]),
            syntax
        );
        let not_int = err("ERR value is not an integer or out of range");
        assert_eq!(
            t.run(&["IDX.SEARCH", "i", "a", "v", "LIMIT", "-1"]),
            not_int
        );
        assert_eq!(t.run(&["IDX.SEARCH", "i", "a", "v", "LIMIT", "x"]), not_int);
        // Errors leave the index as it was.
        assert_eq!(
            t.run(&["IDX.SEARCH", "i", "colour", "red"]),
            bulks(&["a", "b"])
        );
    }
}
