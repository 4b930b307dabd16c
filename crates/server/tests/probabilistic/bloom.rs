//! `keel-probabilistic`'s `bloom` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_probabilistic::bloom::*;
use keel_resp::Frame;
use keel_store::bloom::{BloomError, Chain, Layout, MAX_CAPACITY, MAX_EXPANSION};
use keel_store::num::{parse_f64_in_range, parse_i64};
use keel_store::{Value, ValueType};

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};
    use keel_engine::testing::*;
    use keel_resp::{Frame, Protocol};
    use keel_server::testing::Assembled;

    fn yes() -> Frame {
        Frame::Boolean(true)
    }

    fn no() -> Frame {
        Frame::Boolean(false)
    }

    fn simple(s: &str) -> Frame {
        Frame::Simple(Bytes::copy_from_slice(s.as_bytes()))
    }

    fn bools(v: &[bool]) -> Frame {
        Frame::Array(v.iter().map(|b| Frame::Boolean(*b)).collect())
    }

    fn run_bytes(t: &mut TestEngine, argv: &[&[u8]]) -> Frame {
        let argv = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        decoded(t.engine.execute(&mut t.session, argv))
    }

    fn debug_lines(t: &mut TestEngine, key: &str) -> Vec<String> {
        let Frame::Array(lines) = t.run(&["BF.DEBUG", key]) else {
            panic!("BF.DEBUG replies an array");
        };
        lines
            .into_iter()
            .map(|l| match l {
                Frame::Simple(s) => String::from_utf8_lossy(&s).into_owned(),
                other => panic!("status line expected, got {other:?}"),
            })
            .collect()
    }

    #[test]
    fn golden_debug_output() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["BF.RESERVE", "k", "0.01", "10"]), ok());
        for i in 0..100 {
            let item = i.to_string();
            assert!(matches!(t.run(&["BF.ADD", "k", &item]), Frame::Boolean(_)));
        }
        assert_eq!(
            debug_lines(&mut t, "k"),
            [
                "size:99",
                "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005",
                "bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:20 ratio:0.0025",
                "bytes:72 bits:576 hashes:10 hashwidth:64 capacity:40 size:40 ratio:0.00125",
                "bytes:160 bits:1280 hashes:11 hashwidth:64 capacity:80 size:29 ratio:0.000625",
            ]
        );
        assert_eq!(t.run(&["BF.CARD", "k"]), int(99));
        assert_eq!(
            t.run(&["BF.INFO", "k", "FILTERS"]),
            Frame::Array(vec![int(4)])
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "capacity"]),
            Frame::Array(vec![int(150)])
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "Size"]),
            Frame::Array(vec![int(32 + 64 * 4 + 16 + 32 + 72 + 160)])
        );
    }

    #[test]
    fn add_exists_and_card() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["BF.EXISTS", "k", "a"]), no());
        assert_eq!(t.run(&["BF.CARD", "k"]), int(0));
        assert_eq!(t.run(&["BF.ADD", "k", "a"]), yes());
        assert_eq!(t.run(&["BF.ADD", "k", "a"]), no());
        assert_eq!(t.run(&["BF.EXISTS", "k", "a"]), yes());
        assert_eq!(t.run(&["BF.EXISTS", "k", "b"]), no());
        assert_eq!(
            t.run(&["BF.MADD", "k", "b", "a", "c"]),
            bools(&[true, false, true])
        );
        assert_eq!(
            t.run(&["BF.MEXISTS", "k", "a", "b", "c", "d"]),
            bools(&[true, true, true, false])
        );
        assert_eq!(
            t.run(&["BF.MEXISTS", "nokey", "a", "b"]),
            bools(&[false, false])
        );
        assert_eq!(t.run(&["BF.CARD", "k"]), int(3));
        // The filter made on demand has the configured defaults.
        assert_eq!(
            debug_lines(&mut t, "k")[1],
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:3 ratio:0.005"
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "SIZE"]),
            Frame::Array(vec![int(240)])
        );
        assert_eq!(t.run(&["TYPE", "k"]), simple("MBbloom--"));
        assert_eq!(t.run(&["OBJECT", "ENCODING", "k"]), bulk("raw"));
    }

    #[test]
    fn configured_defaults_shape_new_filters() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["CONFIG", "SET", "bf-error-rate", "0.001"]), ok());
        assert_eq!(t.run(&["CONFIG", "SET", "bf-initial-size", "7"]), ok());
        assert_eq!(t.run(&["CONFIG", "SET", "bf-expansion-factor", "0"]), ok());
        assert_eq!(
            t.run(&["BF.MADD", "k", "1", "2", "3", "4", "5", "6", "7", "8"]),
            Frame::Array(vec![
                yes(),
                yes(),
                yes(),
                yes(),
                yes(),
                yes(),
                yes(),
                error("ERR non scaling filter is full"),
            ])
        );
        let lines = debug_lines(&mut t, "k");
        assert!(
            lines[1].ends_with("capacity:7 size:7 ratio:0.001"),
            "{lines:?}"
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "EXPANSION"]),
            Frame::Array(vec![Frame::Null])
        );
        // BF.RESERVE takes its default growth from the configuration too.
        assert_eq!(t.run(&["CONFIG", "SET", "bf-expansion-factor", "3"]), ok());
        assert_eq!(t.run(&["BF.RESERVE", "r", "0.01", "10"]), ok());
        assert_eq!(
            t.run(&["BF.INFO", "r", "EXPANSION"]),
            Frame::Array(vec![int(3)])
        );
        let e = t.run(&["CONFIG", "SET", "bf-error-rate", "1"]);
        assert!(
            matches!(&e, Frame::Error(m) if String::from_utf8_lossy(m).contains("must be in the range")),
            "{e:?}"
        );
    }

    #[test]
    fn reserve_options_and_errors() {
        let mut t = TestEngine::new();
        let cases: &[(&[&str], &str)] = &[
            (&["BF.RESERVE", "k", "x", "10"], "ERR bad error rate"),
            (
                &["BF.RESERVE", "k", "0", "10"],
                "ERR error rate must be in the range (0.000000, 1.000000)",
            ),
            (
                &["BF.RESERVE", "k", "1", "10"],
                "ERR error rate must be in the range (0.000000, 1.000000)",
            ),
            (&["BF.RESERVE", "k", "0.01", "x"], "ERR bad capacity"),
            (&["BF.RESERVE", "k", "0.01", "1.5"], "ERR bad capacity"),
            (
                &["BF.RESERVE", "k", "0.01", "0"],
                "ERR capacity must be in the range [1, 1073741824]",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "1073741825"],
                "ERR capacity must be in the range [1, 1073741824]",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "10", "EXPANSION"],
                "ERR no expansion",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "10", "expansion", "x"],
                "ERR bad expansion",
            ),
            (
                &[
                    "BF.RESERVE",
                    "k",
                    "0.01",
                    "10",
                    "NONSCALING",
                    "EXPANSION",
                    "2",
                ],
                "Nonscaling filters cannot expand",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "32769"],
                "ERR expansion must be in the range [0, 32768]",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "-1"],
                "ERR expansion must be in the range [0, 32768]",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "10", "a", "b", "c", "d"],
                "ERR wrong number of arguments for 'bf.reserve' command",
            ),
            (
                &["BF.RESERVE", "k", "0.01"],
                "ERR wrong number of arguments for 'bf.reserve' command",
            ),
        ];
        for (argv, want) in cases {
            assert_eq!(t.run(argv), error(want), "{argv:?}");
        }
        assert_eq!(t.run(&["EXISTS", "k"]), int(0));
        // Unknown tokens are skipped; keywords are found anywhere.
        assert_eq!(
            t.run(&["BF.RESERVE", "k", "0.01", "10", "junk", "expansion", "4"]),
            ok()
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "EXPANSION"]),
            Frame::Array(vec![int(4)])
        );
        assert_eq!(
            t.run(&["BF.RESERVE", "k", "0.01", "10"]),
            error("ERR item exists")
        );
        t.run(&["SET", "s", "v"]);
        assert_eq!(
            t.run(&["BF.RESERVE", "s", "0.01", "10"]),
            error("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
        // EXPANSION 0 and NONSCALING both make a fixed-size filter.
        assert_eq!(
            t.run(&["BF.RESERVE", "z", "0.01", "2", "EXPANSION", "0"]),
            ok()
        );
        assert_eq!(t.run(&["BF.RESERVE", "n", "0.01", "2", "nonscaling"]), ok());
        for key in ["z", "n"] {
            assert_eq!(t.run(&["BF.MADD", key, "a", "b"]), bools(&[true, true]));
            assert_eq!(
                t.run(&["BF.ADD", key, "c"]),
                error("ERR non scaling filter is full")
            );
            assert_eq!(t.run(&["BF.ADD", key, "a"]), no());
            assert_eq!(
                t.run(&["BF.INFO", key, "EXPANSION"]),
                Frame::Array(vec![Frame::Null])
            );
        }
        // A non-scaling filter keeps the full rate; rates above 0.25 are capped.
        assert_eq!(
            debug_lines(&mut t, "n")[1],
            "bytes:8 bits:64 hashes:7 hashwidth:64 capacity:2 size:2 ratio:0.01"
        );
        assert_eq!(
            t.run(&["BF.RESERVE", "c", "0.9", "100", "NONSCALING"]),
            ok()
        );
        assert!(debug_lines(&mut t, "c")[1].ends_with("ratio:0.25"));
    }

    #[test]
    fn insert_options_and_errors() {
        let mut t = TestEngine::new();
        let arity = "ERR wrong number of arguments for 'bf.insert' command";
        let cases: &[(&[&str], &str)] = &[
            (&["BF.INSERT", "k", "ITEMS"], arity),
            (&["BF.INSERT", "k", "CAPACITY", "10"], arity),
            (&["BF.INSERT", "k", "CAPACITY", "10", "ITEMS"], arity),
            (&["BF.INSERT", "k", "NOCREATE", "ERROR"], arity),
            (&["BF.INSERT", "k", "NOCREATE", "CAPACITY"], arity),
            (
                &["BF.INSERT", "k", "ERROR", "x", "ITEMS", "a"],
                "Bad error rate",
            ),
            (
                &["BF.INSERT", "k", "EXPANSION", "x", "ITEMS", "a"],
                "Bad expansion",
            ),
            (
                &["BF.INSERT", "k", "CAPACITY", "x", "ITEMS", "a"],
                "Bad capacity",
            ),
            (
                &["BF.INSERT", "k", "BOGUS", "1", "ITEMS", "a"],
                "Unknown argument received",
            ),
            (
                &["BF.INSERT", "k", "", "ITEMS", "a"],
                "Unknown argument received",
            ),
            (
                &["BF.INSERT", "k", "NOCREATE", "ITEMS", "a"],
                "ERR not found",
            ),
            (
                &["BF.INSERT", "k", "ERROR", "0", "ITEMS", "a"],
                "ERR error rate must be in the range (0.000000, 1.000000)",
            ),
            (
                &["BF.INSERT", "k", "CAPACITY", "0", "ITEMS", "a"],
                "ERR capacity must be in the range [1, 1073741824]",
            ),
            (
                &["BF.INSERT", "k", "EXPANSION", "-3", "ITEMS", "a"],
                "ERR expansion must be in the range [0, 32768]",
            ),
        ];
        for (argv, want) in cases {
            assert_eq!(t.run(argv), error(want), "{argv:?}");
        }
        assert_eq!(t.run(&["EXISTS", "k"]), int(0));
        assert_eq!(
            t.run(&[
                "BF.INSERT",
                "k",
                "capacity",
                "3",
                "error",
                "0.1",
                "nonscaling",
                "items",
                "a",
                "b",
                "a",
                "c",
                "d",
                "e"
            ]),
            Frame::Array(vec![
                yes(),
                yes(),
                no(),
                yes(),
                error("ERR non scaling filter is full"),
            ])
        );
        assert_eq!(
            debug_lines(&mut t, "k")[1],
            "bytes:8 bits:64 hashes:4 hashwidth:64 capacity:3 size:3 ratio:0.1"
        );
        // Options are ignored once the filter exists; NOCREATE is satisfied.
        assert_eq!(
            t.run(&["BF.INSERT", "k", "CAPACITY", "0", "NOCREATE", "ITEMS", "a"]),
            bools(&[false])
        );
        // Keywords are told apart by their letters, as RedisBloom does.
        assert_eq!(
            t.run(&[
                "BF.INSERT",
                "e",
                "Cap",
                "5",
                "Er",
                "0.5",
                "Ex",
                "3",
                "I",
                "x"
            ]),
            bools(&[true])
        );
        let lines = debug_lines(&mut t, "e");
        assert!(
            lines[1].ends_with("capacity:5 size:1 ratio:0.25"),
            "{lines:?}"
        );
        assert_eq!(
            t.run(&["BF.INFO", "e", "EXPANSION"]),
            Frame::Array(vec![int(3)])
        );
        // The items may look like options.
        assert_eq!(
            t.run(&["BF.INSERT", "w", "ITEMS", "NOCREATE", "ITEMS"]),
            bools(&[true, true])
        );
        t.run(&["SET", "s", "v"]);
        let wrong = "WRONGTYPE Operation against a key holding the wrong kind of value";
        assert_eq!(t.run(&["BF.INSERT", "s", "ITEMS", "a"]), error(wrong));
        assert_eq!(t.run(&["BF.ADD", "s", "a"]), error(wrong));
        assert_eq!(t.run(&["BF.MADD", "s", "a"]), error(wrong));
    }

    #[test]
    fn reads_of_other_types_and_missing_keys() {
        let mut t = TestEngine::new();
        t.run(&["SET", "s", "v"]);
        let wrong = error("WRONGTYPE Operation against a key holding the wrong kind of value");
        assert_eq!(t.run(&["BF.EXISTS", "s", "v"]), no());
        assert_eq!(
            t.run(&["BF.MEXISTS", "s", "v", "w"]),
            bools(&[false, false])
        );
        assert_eq!(t.run(&["BF.CARD", "s"]), wrong);
        assert_eq!(t.run(&["BF.INFO", "s"]), wrong);
        assert_eq!(t.run(&["BF.DEBUG", "s"]), wrong);
        assert_eq!(t.run(&["BF.SCANDUMP", "s", "0"]), wrong);
        assert_eq!(t.run(&["BF.LOADCHUNK", "s", "1", "x"]), wrong);
        assert_eq!(t.run(&["BF.LOADCHUNK", "s", "5", "x"]), wrong);
        let nf = error("ERR not found");
        assert_eq!(t.run(&["BF.INFO", "m"]), nf);
        assert_eq!(t.run(&["BF.INFO", "m", "CAPACITY"]), nf);
        assert_eq!(t.run(&["BF.DEBUG", "m"]), nf);
        assert_eq!(t.run(&["BF.SCANDUMP", "m", "0"]), nf);
        assert_eq!(t.run(&["BF.SCANDUMP", "m", "x"]), nf);
        assert_eq!(t.run(&["BF.LOADCHUNK", "m", "9", "x"]), nf);
        t.run(&["BF.ADD", "k", "a"]);
        assert_eq!(
            t.run(&["BF.INFO", "k", "BOGUS"]),
            error("Invalid information value")
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "CAPACITY", "SIZE"]),
            error("ERR wrong number of arguments for 'bf.info' command")
        );
        assert_eq!(
            t.run(&["BF.SCANDUMP", "k", "x"]),
            error("Second argument must be numeric")
        );
        assert_eq!(
            t.run(&["BF.LOADCHUNK", "k", "x", "data"]),
            error("ERR Second argument must be numeric")
        );
        for (argv, name) in [
            (&["BF.ADD", "k"][..], "bf.add"),
            (&["BF.ADD", "k", "a", "b"][..], "bf.add"),
            (&["BF.MADD", "k"][..], "bf.madd"),
            (&["BF.EXISTS", "k"][..], "bf.exists"),
            (&["BF.MEXISTS", "k"][..], "bf.mexists"),
            (&["BF.CARD"][..], "bf.card"),
            (&["BF.INFO"][..], "bf.info"),
            (&["BF.DEBUG", "k", "x"][..], "bf.debug"),
            (&["BF.SCANDUMP", "k"][..], "bf.scandump"),
            (&["bf.loadchunk", "k", "1"][..], "bf.loadchunk"),
            (&["BF.INSERT", "k", "ITEMS"][..], "bf.insert"),
        ] {
            assert_eq!(
                t.run(argv),
                error(&format!(
                    "ERR wrong number of arguments for '{name}' command"
                )),
                "{argv:?}"
            );
        }
    }

    #[test]
    fn info_shapes_in_both_protocols() {
        let mut t = TestEngine::new();
        t.run(&["BF.RESERVE", "k", "0.001", "100"]);
        t.run(&["BF.MADD", "k", "a", "b"]);
        let full = t.run(&["BF.INFO", "k"]);
        let want = Frame::Map(vec![
            (simple("Capacity"), int(100)),
            (simple("Size"), int(296)),
            (simple("Number of filters"), int(1)),
            (simple("Number of items inserted"), int(2)),
            (simple("Expansion rate"), int(2)),
        ]);
        assert_eq!(full, want);
        // RESP2 sees the map as a flat array.
        let mut out = BytesMut::new();
        keel_resp::encode(&full, Protocol::Resp2, &mut out);
        assert!(out.starts_with(b"*10\r\n+Capacity\r\n:100\r\n+Size\r\n:296\r\n"));
        assert_eq!(
            t.run(&["BF.INFO", "k", "items"]),
            Frame::Array(vec![int(2)])
        );
        t.run(&["HELLO", "3"]);
        assert_eq!(t.run(&["BF.INFO", "k"]), want);
        assert_eq!(
            t.run(&["BF.INFO", "k", "items"]),
            Frame::Map(vec![(simple("Number of items inserted"), int(2))])
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "Expansion"]),
            Frame::Map(vec![(simple("Expansion rate"), int(2))])
        );
        t.run(&["BF.RESERVE", "f", "0.01", "100", "NONSCALING"]);
        let Frame::Map(fields) = t.run(&["BF.INFO", "f"]) else {
            panic!("map expected");
        };
        assert_eq!(fields[4], (simple("Expansion rate"), Frame::Null));
        // 960 bits at the full 1% rate (a scaling filter's first link would
        // take 1152 at half the rate).
        assert_eq!(fields[1], (simple("Size"), int(32 + 64 + 120)));
        // Booleans in RESP3 become 1 and 0 for RESP2 clients.
        let mut out = BytesMut::new();
        keel_resp::encode(
            &t.run(&["BF.MADD", "k", "a", "z"]),
            Protocol::Resp2,
            &mut out,
        );
        assert_eq!(&out[..], b"*2\r\n:0\r\n:1\r\n");
    }

    /// Dumps `key` with SCANDUMP and loads it into `copy` with LOADCHUNK.
    fn dump_into(t: &mut TestEngine, key: &str, copy: &str) -> usize {
        let mut iter = b"0".to_vec();
        let mut chunks = 0;
        loop {
            let Frame::Array(reply) = run_bytes(t, &[b"BF.SCANDUMP", key.as_bytes(), &iter]) else {
                panic!("SCANDUMP replies an array");
            };
            let [Frame::Integer(next), Frame::Bulk(data)] = &reply[..] else {
                panic!("[iter, data] expected, got {reply:?}");
            };
            if *next == 0 {
                assert!(data.is_empty());
                return chunks;
            }
            let next = next.to_string();
            assert_eq!(
                run_bytes(
                    t,
                    &[b"BF.LOADCHUNK", copy.as_bytes(), next.as_bytes(), data]
                ),
                ok()
            );
            chunks += 1;
            iter = next.into_bytes();
        }
    }

    fn check_copy(t: &mut TestEngine, key: &str, copy: &str, probes: usize) {
        assert_eq!(debug_lines(t, copy), debug_lines(t, key));
        assert_eq!(t.run(&["BF.INFO", copy]), t.run(&["BF.INFO", key]));
        assert_eq!(t.run(&["BF.CARD", copy]), t.run(&["BF.CARD", key]));
        let items: Vec<String> = (0..probes).map(|i| format!("item{i}")).collect();
        let mut argv = vec!["BF.MEXISTS", key];
        argv.extend(items.iter().map(String::as_str));
        let original = t.run(&argv);
        argv[1] = copy;
        assert_eq!(t.run(&argv), original);
    }

    #[test]
    fn scandump_loadchunk_round_trip_one_link() {
        let mut t = TestEngine::new();
        t.run(&["BF.RESERVE", "k", "0.01", "1000"]);
        for i in 0..300 {
            t.run(&["BF.ADD", "k", &format!("item{i}")]);
        }
        // Header, then one chunk for the one link.
        assert_eq!(dump_into(&mut t, "k", "copy"), 2);
        check_copy(&mut t, "k", "copy", 1000);
        // Past the end and before the start, the dump is over.
        for iter in ["100000", "-5"] {
            assert_eq!(
                t.run(&["BF.SCANDUMP", "k", iter]),
                Frame::Array(vec![int(0), bulk("")])
            );
        }
    }

    #[test]
    fn scandump_loadchunk_round_trip_twenty_links() {
        let mut t = TestEngine::new();
        t.run(&["BF.RESERVE", "k", "0.01", "2", "EXPANSION", "1"]);
        let mut i = 0;
        while debug_lines(&mut t, "k").len() < 21 {
            t.run(&["BF.ADD", "k", &format!("item{i}")]);
            i += 1;
        }
        assert_eq!(dump_into(&mut t, "k", "copy"), 21);
        check_copy(&mut t, "k", "copy", 200);
        // Adding to both keeps them identical.
        assert_eq!(
            t.run(&["BF.ADD", "copy", "new"]),
            t.run(&["BF.ADD", "k", "new"])
        );
        check_copy(&mut t, "k", "copy", 200);
    }

    #[test]
    fn blocked_layout_is_chosen_at_creation_and_round_trips() {
        let mut t = TestEngine::new();
        assert_eq!(
            t.run(&[
                "BF.RESERVE",
                "k",
                "0.01",
                "2",
                "EXPANSION",
                "2",
                "LAYOUT",
                "blocked"
            ]),
            ok()
        );
        let mut i = 0;
        while debug_lines(&mut t, "k").len() < 6 {
            t.run(&["BF.ADD", "k", &format!("item{i}")]);
            i += 1;
        }
        let lines = debug_lines(&mut t, "k");
        assert!(
            lines[1..].iter().all(|l| l.ends_with(" layout:blocked")),
            "{lines:?}"
        );
        for j in 0..i {
            assert_eq!(
                t.run(&["BF.EXISTS", "k", &format!("item{j}")]),
                Frame::Boolean(true)
            );
        }
        assert_eq!(dump_into(&mut t, "k", "copy"), 6);
        check_copy(&mut t, "k", "copy", 200);
        assert_eq!(debug_lines(&mut t, "copy"), lines);

        // BF.INSERT takes the option too; CLASSIC is RedisBloom's layout.
        t.run(&["BF.INSERT", "i", "LAYOUT", "BLOCKED", "ITEMS", "a", "b"]);
        assert!(debug_lines(&mut t, "i")[1].ends_with(" layout:blocked"));
        t.run(&["BF.RESERVE", "c", "0.01", "100", "LAYOUT", "CLASSIC"]);
        assert_eq!(
            debug_lines(&mut t, "c")[1],
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:0 ratio:0.005"
        );
    }

    #[test]
    fn layout_option_errors() {
        let mut t = TestEngine::new();
        let cases: &[(&[&str], &str)] = &[
            (
                &["BF.RESERVE", "k", "0.01", "100", "LAYOUT"],
                "ERR no layout",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "100", "LAYOUT", "dense"],
                "ERR layout must be CLASSIC or BLOCKED",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "2", "x", "y"],
                "ERR wrong number of arguments for 'bf.reserve' command",
            ),
            (
                &["BF.INSERT", "k", "LAYOUT"],
                "ERR wrong number of arguments for 'bf.insert' command",
            ),
            (
                &["BF.INSERT", "k", "LAYOUT", "x", "ITEMS", "a"],
                "ERR layout must be CLASSIC or BLOCKED",
            ),
        ];
        for (argv, want) in cases {
            assert_eq!(t.run(argv), error(want), "{argv:?}");
        }
        assert_eq!(t.run(&["EXISTS", "k"]), int(0));
        // The longest form: every RedisBloom option plus LAYOUT.
        assert_eq!(
            t.run(&[
                "BF.RESERVE",
                "k",
                "0.01",
                "100",
                "EXPANSION",
                "2",
                "LAYOUT",
                "BLOCKED",
                "x"
            ]),
            ok()
        );
    }

    #[test]
    fn blocked_filters_are_logged_with_their_layout() {
        let (mut t, rec) = keel_engine::testing::TestEngine::recording(1_700_000_000_000);
        t.run(&["BF.RESERVE", "r", "0.01", "100", "LAYOUT", "BLOCKED"]);
        t.run(&["BF.INSERT", "i", "LAYOUT", "BLOCKED", "ITEMS", "a"]);
        let log = rec.commands();
        assert_eq!(
            log[0],
            [
                "BF.RESERVE",
                "r",
                "0.01",
                "100",
                "EXPANSION",
                "2",
                "LAYOUT",
                "BLOCKED"
            ]
        );
        assert_eq!(
            &log[1][log[1].len() - 4..],
            ["LAYOUT", "BLOCKED", "ITEMS", "a"]
        );
    }

    #[test]
    fn loadchunk_refuses_bad_data() {
        let mut t = TestEngine::new();
        t.run(&["BF.MADD", "k", "a", "b"]);
        let Frame::Array(reply) = t.run(&["BF.SCANDUMP", "k", "0"]) else {
            panic!("array");
        };
        let Some(Frame::Bulk(header)) = reply.get(1) else {
            panic!("header");
        };
        assert_eq!(header.len(), 20 + 53);
        let bad = error("ERR received bad data");
        assert_eq!(
            run_bytes(&mut t, &[b"BF.LOADCHUNK", b"x", b"1", b"junk"]),
            bad
        );
        assert_eq!(
            run_bytes(&mut t, &[b"BF.LOADCHUNK", b"x", b"1", &header[..50]]),
            bad
        );
        assert_eq!(t.run(&["EXISTS", "x"]), int(0));
        assert_eq!(
            run_bytes(&mut t, &[b"BF.LOADCHUNK", b"x", b"1", header]),
            ok()
        );
        // The header onto an existing filter is a chunk at a negative offset.
        assert_eq!(
            run_bytes(&mut t, &[b"BF.LOADCHUNK", b"x", b"1", header]),
            bad
        );
        // Chunks must fall inside the bit arrays.
        assert_eq!(t.run(&["BF.LOADCHUNK", "x", "-1", "ab"]), bad);
        assert_eq!(t.run(&["BF.LOADCHUNK", "x", "146", "ab"]), bad);
        assert_eq!(t.run(&["BF.LOADCHUNK", "x", "999999999999", "ab"]), bad);
        assert_eq!(t.run(&["BF.LOADCHUNK", "x", "145", "ab"]), ok());
        // Loaded with zeroed bits and not yet given its chunk, the copy
        // holds nothing but keeps the header's count.
        assert_eq!(t.run(&["BF.CARD", "x"]), int(2));
    }

    #[test]
    fn writes_are_dirty_only_when_they_change_something() {
        let mut t = TestEngine::new();
        let dirty = |t: &mut TestEngine| {
            let info = t.run(&["INFO", "persistence"]);
            let (Frame::Verbatim(_, text) | Frame::Bulk(text)) = info else {
                panic!("INFO text");
            };
            let text = String::from_utf8_lossy(&text).into_owned();
            text.lines()
                .find_map(|l| l.strip_prefix("rdb_changes_since_last_save:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .expect("changes counter")
        };
        let before = dirty(&mut t);
        t.run(&["BF.ADD", "k", "a"]);
        let after_add = dirty(&mut t);
        assert!(after_add > before);
        t.run(&["BF.ADD", "k", "a"]);
        t.run(&["BF.MADD", "k", "a"]);
        t.run(&["BF.EXISTS", "k", "a"]);
        assert_eq!(dirty(&mut t), after_add);
        t.run(&["BF.MADD", "k", "b", "c"]);
        assert_eq!(dirty(&mut t), after_add + 2);
    }

    #[test]
    fn writes_are_logged_so_that_replay_does_not_depend_on_config() {
        let (mut t, rec) = keel_engine::testing::TestEngine::recording(1_700_000_000_000);
        let mut run = |argv: &[&str]| t.run(argv);
        run(&["BF.ADD", "k", "a"]);
        run(&["BF.ADD", "k", "a"]);
        run(&["BF.ADD", "k", "b"]);
        run(&["BF.MADD", "m", "x", "y"]);
        run(&[
            "BF.INSERT",
            "i",
            "CAPACITY",
            "5",
            "NONSCALING",
            "ITEMS",
            "p",
        ]);
        run(&["BF.RESERVE", "r", "0.01", "10", "x", "y", "z"]);
        run(&["BF.RESERVE", "q", "0.01", "10", "NONSCALING"]);
        run(&["BF.EXISTS", "k", "a"]);
        run(&["BF.LOADCHUNK", "k", "x", "y"]);
        let logged = rec.commands();
        let want: Vec<Vec<&str>> = vec![
            vec![
                "BF.INSERT",
                "k",
                "CAPACITY",
                "100",
                "ERROR",
                "1e-2",
                "EXPANSION",
                "2",
                "ITEMS",
                "a",
            ],
            vec!["BF.ADD", "k", "b"],
            vec![
                "BF.INSERT",
                "m",
                "CAPACITY",
                "100",
                "ERROR",
                "1e-2",
                "EXPANSION",
                "2",
                "ITEMS",
                "x",
                "y",
            ],
            vec![
                "BF.INSERT",
                "i",
                "CAPACITY",
                "5",
                "ERROR",
                "1e-2",
                "EXPANSION",
                "2",
                "NONSCALING",
                "ITEMS",
                "p",
            ],
            vec!["BF.RESERVE", "r", "0.01", "10", "EXPANSION", "2"],
            vec!["BF.RESERVE", "q", "0.01", "10", "NONSCALING"],
        ];
        assert_eq!(logged, want);
    }

    #[test]
    fn memory_usage_counts_the_bits() {
        let mut t = TestEngine::new();
        t.run(&["BF.RESERVE", "small", "0.01", "10"]);
        t.run(&["BF.RESERVE", "big", "0.0001", "1000000"]);
        let usage = |t: &mut TestEngine, k: &str| match t.run(&["MEMORY", "USAGE", k]) {
            Frame::Integer(n) => n,
            other => panic!("{other:?}"),
        };
        assert!(usage(&mut t, "small") < 1000);
        assert!(usage(&mut t, "big") > 2_576_608);
        assert_eq!(
            debug_lines(&mut t, "big")[1],
            "bytes:2576608 bits:20612864 hashes:15 hashwidth:64 capacity:1000000 size:0 ratio:5e-05"
        );
        // COPY clones the filter; the copy then changes on its own.
        assert_eq!(t.run(&["COPY", "small", "dup"]), int(1));
        assert_eq!(t.run(&["BF.ADD", "dup", "a"]), yes());
        assert_eq!(t.run(&["BF.EXISTS", "small", "a"]), no());
        assert_eq!(t.run(&["RENAME", "dup", "moved"]), ok());
        assert_eq!(t.run(&["BF.EXISTS", "moved", "a"]), yes());
    }
}
