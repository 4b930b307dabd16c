//! A bare RESP client for differential tests that must see replies exactly as
//! a server wrote them: simple strings and errors apart, bulk strings as raw
//! bytes, nil as nil, nothing decoded or retried the way a full client would.
//! It sends each command as a multibulk array and reads one reply; it panics
//! on anything unexpected, as test support does.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A reply: simple strings, errors and bulk strings as bytes, integers, arrays.
#[derive(Debug, PartialEq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

/// A connection to a server on a loopback port.
pub struct Conn(BufReader<TcpStream>);

impl Conn {
    /// Connects to `127.0.0.1:port`, with a 20 s read timeout.
    pub fn open(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        Conn(BufReader::new(s))
    }

    /// Waits out a server still loading its dataset (`-LOADING`), for up to 20 s.
    pub fn ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while let Reply::Error(e) = self.cmd(&[b"PING"]) {
            assert!(e.starts_with("LOADING") && Instant::now() < deadline, "{e}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends one command and reads its reply.
    pub fn cmd(&mut self, args: &[&[u8]]) -> Reply {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.0.get_mut().write_all(&out).expect("send");
        self.reply()
    }

    /// One reply line, without its line ending.
    pub fn line(&mut self) -> String {
        let mut l = String::new();
        self.0.read_line(&mut l).expect("reply line");
        l.trim_end().to_string()
    }

    /// Reads one reply.
    pub fn reply(&mut self) -> Reply {
        let l = self.line();
        let (t, rest) = l.split_at(1);
        match t {
            "+" => Reply::Simple(rest.into()),
            "-" => Reply::Error(rest.into()),
            ":" => Reply::Int(rest.parse().expect("int")),
            "$" => {
                let n: i64 = rest.parse().expect("len");
                if n < 0 {
                    return Reply::Bulk(None);
                }
                let mut b = vec![0u8; n as usize + 2];
                self.0.read_exact(&mut b).expect("bulk");
                b.truncate(n as usize);
                Reply::Bulk(Some(b))
            }
            "*" => {
                let n: i64 = rest.parse().expect("len");
                Reply::Array((0..n.max(0)).map(|_| self.reply()).collect())
            }
            _ => panic!("unexpected reply {l:?}"),
        }
    }

    /// Sends a command given as space-separated words; asserts it is not refused.
    pub fn words(&mut self, line: &str) -> Reply {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let r = self.cmd(&args);
        assert!(!matches!(r, Reply::Error(_)), "{line}: {r:?}");
        r
    }

    /// Sends a command; asserts it is not refused.
    pub fn ok(&mut self, args: &[&[u8]]) {
        let r = self.cmd(args);
        assert!(!matches!(r, Reply::Error(_)), "{args:?}: {r:?}");
    }

    /// Sends a command whose reply must be a non-nil bulk string.
    pub fn bulk(&mut self, args: &[&[u8]]) -> Vec<u8> {
        match self.cmd(args) {
            Reply::Bulk(Some(b)) => b,
            r => panic!("{args:?}: {r:?}"),
        }
    }

    /// Sends a command whose reply must be an integer.
    pub fn int(&mut self, args: &[&[u8]]) -> i64 {
        match self.cmd(args) {
            Reply::Int(i) => i,
            r => panic!("{args:?}: {r:?}"),
        }
    }
}
