//! Bitmap index updates are atomic to searches on other worker threads: writers on several
//! connections move entities between two values of an attribute (IDX.ADD replaces an entity
//! whole, payload included) and in and out of the index (IDX.DEL / IDX.ADD), while readers on
//! other connections check that every search sees whole updates only.

use bytes::{Bytes, BytesMut};
use keel_resp::{encode_command, parse_frame, Frame};
use keel_testkit::{free_port, start_with};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const FIXED: usize = 40;
const MOVING: usize = 40;

struct Conn {
    s: TcpStream,
    buf: BytesMut,
}

impl Conn {
    fn new(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        Conn {
            s,
            buf: BytesMut::new(),
        }
    }

    fn run(&mut self, argv: &[&str]) -> Frame {
        let mut out = BytesMut::new();
        encode_command(argv, &mut out);
        self.s.write_all(&out).expect("send");
        loop {
            let bytes = Bytes::copy_from_slice(&self.buf);
            if let Some((frame, used)) = parse_frame(&bytes).expect("well-formed reply") {
                let _ = self.buf.split_to(used);
                return frame;
            }
            let mut chunk = [0u8; 16 * 1024];
            let n = self.s.read(&mut chunk).expect("read");
            assert!(n > 0, "server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn strings(&mut self, argv: &[&str]) -> Vec<String> {
        match self.run(argv) {
            Frame::Array(items) => items
                .into_iter()
                .map(|f| match f {
                    Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
                    Frame::Null => "(nil)".to_string(),
                    other => panic!("unexpected element {other:?}"),
                })
                .collect(),
            other => panic!("unexpected reply {other:?} to {argv:?}"),
        }
    }
}

fn writer(port: u16, seed: usize) {
    let mut c = Conn::new(port);
    for round in 0..400 {
        let colour = if (round + seed).is_multiple_of(2) {
            "red"
        } else {
            "blue"
        };
        let f = format!("f{}", (round * 13 + seed * 7) % FIXED);
        let add = [
            "IDX.ADD", "i", &f, "kind", "k", "colour", colour, "PAYLOAD", colour,
        ];
        assert!(matches!(c.run(&add), Frame::Integer(0)));
        let m = format!("m{}", (round * 5 + seed) % MOVING);
        let reply = if round.is_multiple_of(3) {
            c.run(&["IDX.DEL", "i", &m])
        } else {
            c.run(&[
                "IDX.ADD", "i", &m, "kind", "k", "colour", colour, "PAYLOAD", colour,
            ])
        };
        assert!(matches!(reply, Frame::Integer(0 | 1)), "{reply:?}");
    }
}

/// Checks until `stop` (and at least a few times); returns how many rounds it checked.
fn reader(port: u16, stop: &AtomicBool) -> usize {
    let mut c = Conn::new(port);
    let mut checks = 0;
    while !stop.load(Ordering::Relaxed) || checks < 20 {
        for colour in ["red", "blue"] {
            let flat = c.strings(&[
                "IDX.SEARCH",
                "i",
                "colour",
                colour,
                "kind",
                "k",
                "WITHPAYLOAD",
            ]);
            for pair in flat.chunks(2) {
                assert_eq!(pair.get(1).map(String::as_str), Some(colour), "{pair:?}");
            }
        }
        // Three searches in one transaction see one state of the index.
        assert!(matches!(c.run(&["MULTI"]), Frame::Simple(_)));
        for argv in [
            &["IDX.SEARCH", "i", "colour", "red"][..],
            &["IDX.SEARCH", "i", "colour", "blue"],
            &["IDX.SEARCH", "i", "kind", "k"],
        ] {
            assert!(matches!(c.run(argv), Frame::Simple(_)));
        }
        let Frame::Array(replies) = c.run(&["EXEC"]) else {
            panic!("EXEC replies an array");
        };
        let sets: Vec<BTreeSet<Vec<u8>>> = replies
            .into_iter()
            .map(|r| match r {
                Frame::Array(ids) => ids
                    .into_iter()
                    .map(|f| match f {
                        Frame::Bulk(b) => b.to_vec(),
                        other => panic!("unexpected id {other:?}"),
                    })
                    .collect(),
                other => panic!("unexpected search reply {other:?}"),
            })
            .collect();
        let [red, blue, all] = &sets[..] else {
            panic!("three replies expected");
        };
        assert!(red.is_disjoint(blue), "an entity under both colours");
        assert_eq!(red.len() + blue.len(), all.len(), "counts not conserved");
        let fixed = all.iter().filter(|id| id.starts_with(b"f")).count();
        assert_eq!(fixed, FIXED, "a fixed entity went missing");
        checks += 1;
    }
    checks
}

#[test]
fn index_updates_are_atomic_to_searches_on_other_threads() {
    let port = free_port();
    let _server = start_with("keel", port, &["--threads", "4", "--save", ""]);
    let mut setup = Conn::new(port);
    assert_eq!(setup.run(&["IDX.CREATE", "i"]), Frame::ok());
    for n in 0..FIXED {
        let id = format!("f{n}");
        let add = [
            "IDX.ADD", "i", &id, "kind", "k", "colour", "red", "PAYLOAD", "red",
        ];
        assert_eq!(setup.run(&add), Frame::Integer(1));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || reader(port, &stop))
        })
        .collect();
    let writers: Vec<_> = (0..3)
        .map(|seed| std::thread::spawn(move || writer(port, seed)))
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().expect("reader") >= 20);
    }
    let all = setup.strings(&["IDX.SEARCH", "i", "kind", "k"]);
    assert!(all.len() >= FIXED);
}
