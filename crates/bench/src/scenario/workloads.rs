//! The requests the seed scenarios send, as `Workload`s: fixed commands,
//! random-key SET/GET (plain or through EVAL), an 80/20 GET/SET mix, records
//! written and read in order, and the Bloom filter's BF.ADD / BF.EXISTS with
//! fresh UUIDs, where an EXISTS answering 1 is a false positive.

use crate::load::{Verdict, Workload};
use crate::rng::Rng;
use keel_resp::Frame;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

/// Append one command as a RESP array of bulk strings.
pub fn push_cmd(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.push(b'*');
    push_num(out, args.len() as u64);
    out.extend_from_slice(b"\r\n");
    for a in args {
        out.push(b'$');
        push_num(out, a.len() as u64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn push_num(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// `key:` and the index, zero-padded so every key is `size` bytes (longer
/// only if the index needs more digits), like redis-benchmark's
/// `key:000000000042`.
pub fn key_into(buf: &mut Vec<u8>, idx: u64, size: usize) {
    buf.clear();
    buf.extend_from_slice(b"key:");
    let mut digits = Vec::with_capacity(20);
    push_num(&mut digits, idx);
    let pad = size.saturating_sub(4 + digits.len());
    buf.resize(4 + pad, b'0');
    buf.extend_from_slice(&digits);
}

thread_local! {
    static KEY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Shorten a server error to the part that names the failure (Redis
/// appends the command's arguments to some errors).
pub fn reason(e: &[u8]) -> Cow<'static, str> {
    let text = String::from_utf8_lossy(e);
    let text = text
        .split(", with args beginning with")
        .next()
        .unwrap_or("");
    let mut end = text.len().min(120);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(text[..end].trim_end().to_string())
}

/// The same command every time (PING).
pub struct Fixed(pub Vec<u8>);

impl Fixed {
    pub fn new(args: &[&[u8]]) -> Fixed {
        let mut out = Vec::new();
        push_cmd(&mut out, args);
        Fixed(out)
    }
}

impl Workload for Fixed {
    fn next(&self, _rng: &mut Rng, out: &mut Vec<u8>) -> u32 {
        out.extend_from_slice(&self.0);
        0
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Set,
    Get,
    /// SET through a Lua script, as the persistence study did.
    EvalSet,
}

pub const EVAL_SET_SCRIPT: &[u8] = b"return redis.call('SET', KEYS[1], ARGV[1])";

/// One operation on a random key of `keyspace`.
pub struct KeyValue {
    pub op: Op,
    pub keyspace: u64,
    pub key_size: usize,
    pub value: Vec<u8>,
}

impl Workload for KeyValue {
    fn next(&self, rng: &mut Rng, out: &mut Vec<u8>) -> u32 {
        KEY.with(|k| {
            let mut k = k.borrow_mut();
            key_into(&mut k, rng.below(self.keyspace), self.key_size);
            match self.op {
                Op::Set => push_cmd(out, &[b"SET", &k, &self.value]),
                Op::Get => push_cmd(out, &[b"GET", &k]),
                Op::EvalSet => push_cmd(out, &[b"EVAL", EVAL_SET_SCRIPT, b"1", &k, &self.value]),
            }
        });
        0
    }
}

/// GET with probability `get_ratio`, else SET, on random keys.
pub struct Mix {
    pub get_ratio: f64,
    pub keyspace: u64,
    pub key_size: usize,
    pub value: Vec<u8>,
}

impl Workload for Mix {
    fn next(&self, rng: &mut Rng, out: &mut Vec<u8>) -> u32 {
        let get = rng.unit() < self.get_ratio;
        KEY.with(|k| {
            let mut k = k.borrow_mut();
            key_into(&mut k, rng.below(self.keyspace), self.key_size);
            if get {
                push_cmd(out, &[b"GET", &k]);
            } else {
                push_cmd(out, &[b"SET", &k, &self.value]);
            }
        });
        u32::from(get)
    }
}

/// What a reply in order must look like.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Expect {
    /// Anything but an error.
    Any,
    /// A string (a record read back); nil means the record is missing.
    Value,
    /// An array (or map or set) of exactly this many elements, counting a
    /// map's pairs twice as RESP2 sends them.
    Elements(usize),
    /// The integer 1 (SISMEMBER of a record that is there); 0 means the
    /// record is missing.
    One,
}

/// Builds request `i` of a `Sequence`.
pub type Build = Box<dyn Fn(u64, &mut Vec<u8>) + Send + Sync>;

/// Request `i` is `build(i % count)`, in order across all workers: records
/// written then read back one by one.
pub struct Sequence {
    next: AtomicU64,
    count: u64,
    build: Build,
    expect: Expect,
}

impl Sequence {
    pub fn new(count: u64, expect: Expect, build: Build) -> Sequence {
        Sequence {
            next: AtomicU64::new(0),
            count: count.max(1),
            build,
            expect,
        }
    }
}

impl Workload for Sequence {
    fn next(&self, _rng: &mut Rng, out: &mut Vec<u8>) -> u32 {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.count;
        (self.build)(i, out);
        0
    }

    fn parses_replies(&self) -> bool {
        self.expect != Expect::Any
    }

    fn judge(&self, _tag: u32, reply: &Frame) -> Verdict {
        match (reply, self.expect) {
            (Frame::Error(e), _) => Verdict::Fail(reason(e)),
            (_, Expect::Any) => Verdict::Ok,
            (Frame::Bulk(_) | Frame::Simple(_) | Frame::Verbatim(..), Expect::Value) => Verdict::Ok,
            (Frame::Null, Expect::Value) => Verdict::Fail("record missing".into()),
            (Frame::Integer(1) | Frame::Boolean(true), Expect::One) => Verdict::Ok,
            (Frame::Integer(_) | Frame::Boolean(_), Expect::One) => {
                Verdict::Fail("record missing".into())
            }
            (Frame::Array(a) | Frame::Set(a), Expect::Elements(n)) if a.len() == n => Verdict::Ok,
            (Frame::Map(m), Expect::Elements(n)) if m.len() * 2 == n => Verdict::Ok,
            (Frame::Array(_) | Frame::Set(_) | Frame::Map(_), Expect::Elements(_)) => {
                Verdict::Fail("wrong number of records".into())
            }
            _ => Verdict::Fail("unexpected reply type".into()),
        }
    }
}

/// BF.ADD of a fresh lowercase UUID.
pub struct BloomAdd {
    pub key: Vec<u8>,
}

impl Workload for BloomAdd {
    fn next(&self, rng: &mut Rng, out: &mut Vec<u8>) -> u32 {
        let mut id = Vec::with_capacity(36);
        rng.uuid(&mut id);
        push_cmd(out, &[b"BF.ADD", &self.key, &id]);
        0
    }
}

/// BF.EXISTS of a fresh UUID (never inserted): 1 is a false positive.
pub struct BloomCheck {
    pub key: Vec<u8>,
}

pub const FALSE_POSITIVE: &str = "false positive";

impl Workload for BloomCheck {
    fn next(&self, rng: &mut Rng, out: &mut Vec<u8>) -> u32 {
        let mut id = Vec::with_capacity(36);
        rng.uuid(&mut id);
        push_cmd(out, &[b"BF.EXISTS", &self.key, &id]);
        0
    }

    fn parses_replies(&self) -> bool {
        true
    }

    fn judge(&self, _tag: u32, reply: &Frame) -> Verdict {
        match reply {
            Frame::Integer(1) | Frame::Boolean(true) => Verdict::Fail(FALSE_POSITIVE.into()),
            Frame::Integer(0) | Frame::Boolean(false) => Verdict::Ok,
            Frame::Error(e) => Verdict::Fail(reason(e)),
            _ => Verdict::Fail("unexpected reply to BF.EXISTS".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use keel_resp::parse_frame;

    fn args_of(buf: &[u8]) -> Vec<String> {
        let (f, used) = parse_frame(&Bytes::copy_from_slice(buf)).unwrap().unwrap();
        assert_eq!(used, buf.len());
        match f {
            Frame::Array(a) => a
                .into_iter()
                .map(|x| match x {
                    Frame::Bulk(b) => String::from_utf8(b.to_vec()).unwrap(),
                    other => panic!("{other:?}"),
                })
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn commands_encode_as_resp_arrays() {
        let mut out = Vec::new();
        push_cmd(&mut out, &[b"SET", b"k", b""]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    }

    #[test]
    fn keys_have_the_asked_size() {
        let mut k = Vec::new();
        key_into(&mut k, 42, 20);
        assert_eq!(k, b"key:0000000000000042");
        key_into(&mut k, 123_456, 6);
        assert_eq!(k, b"key:123456");
    }

    #[test]
    fn mix_keeps_its_ratio_and_eval_wraps_set() {
        let m = Mix {
            get_ratio: 0.8,
            keyspace: 100,
            key_size: 20,
            value: vec![b'x'; 100],
        };
        let mut rng = Rng::seeded(3);
        let mut gets = 0;
        for _ in 0..10_000 {
            let mut out = Vec::new();
            let tag = m.next(&mut rng, &mut out);
            let a = args_of(&out);
            assert_eq!(a[1].len(), 20);
            if tag == 1 {
                assert_eq!(a[0], "GET");
                gets += 1;
            } else {
                assert_eq!((a[0].as_str(), a[2].len()), ("SET", 100));
            }
        }
        assert!((7700..8300).contains(&gets), "{gets}");
        let e = KeyValue {
            op: Op::EvalSet,
            keyspace: 10,
            key_size: 16,
            value: b"abc".to_vec(),
        };
        let mut out = Vec::new();
        e.next(&mut rng, &mut out);
        let a = args_of(&out);
        assert_eq!(a[0], "EVAL");
        assert!(a[1].contains("redis.call('SET'"));
        assert_eq!((a[2].as_str(), a[4].as_str()), ("1", "abc"));
    }

    #[test]
    fn bloom_check_counts_a_one_as_a_false_positive() {
        let c = BloomCheck {
            key: b"test".to_vec(),
        };
        assert!(c.parses_replies());
        assert_eq!(
            c.judge(0, &Frame::Integer(1)),
            Verdict::Fail(FALSE_POSITIVE.into())
        );
        assert_eq!(c.judge(0, &Frame::Integer(0)), Verdict::Ok);
        let e = Frame::error("ERR unknown command 'BF.EXISTS', with args beginning with: 'x'");
        assert_eq!(
            c.judge(0, &e),
            Verdict::Fail("ERR unknown command 'BF.EXISTS'".into())
        );
        let mut out = Vec::new();
        c.next(&mut Rng::seeded(1), &mut out);
        let a = args_of(&out);
        assert_eq!(
            (a[0].as_str(), a[1].as_str(), a[2].len()),
            ("BF.EXISTS", "test", 36)
        );
    }

    #[test]
    fn sequence_walks_records_in_order_and_checks_counts() {
        let s = Sequence::new(
            3,
            Expect::Elements(4),
            Box::new(|i, out| push_cmd(out, &[b"GET", i.to_string().as_bytes()])),
        );
        let mut rng = Rng::seeded(1);
        let keys: Vec<String> = (0..5)
            .map(|_| {
                let mut out = Vec::new();
                s.next(&mut rng, &mut out);
                args_of(&out)[1].clone()
            })
            .collect();
        assert_eq!(keys, ["0", "1", "2", "0", "1"]);
        let two = Frame::Array(vec![Frame::Null, Frame::Null]);
        assert!(matches!(s.judge(0, &two), Verdict::Fail(_)));
        let four = Frame::Map(vec![(Frame::Null, Frame::Null), (Frame::Null, Frame::Null)]);
        assert_eq!(s.judge(0, &four), Verdict::Ok);
        let v = Sequence::new(1, Expect::Value, Box::new(|_, _| {}));
        assert_eq!(
            v.judge(0, &Frame::Null),
            Verdict::Fail("record missing".into())
        );
    }
}
