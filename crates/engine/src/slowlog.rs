//! The slow log: commands whose execution took at least
//! `slowlog-log-slower-than` microseconds, newest first, at most
//! `slowlog-max-len` of them (SLOWLOG GET/LEN/RESET).
//!
//! Every worker thread logs into this one list. Its mutex is taken only for a
//! command that was slow enough, so a server whose commands stay under the
//! threshold pays one comparison per command and never touches it.

use bytes::Bytes;
use keel_resp::Frame;
use parking_lot::Mutex;
use std::collections::VecDeque;

/// Redis keeps at most this many arguments of a logged command...
pub const MAX_ARGS: usize = 32;
/// ...and at most this many bytes of each argument.
pub const MAX_ARG_BYTES: usize = 128;

/// One logged command.
pub struct Entry {
    pub id: u64,
    pub time_s: u64,
    pub usec: u64,
    pub argv: Vec<Bytes>,
    pub addr: String,
    pub name: Bytes,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    /// Newest first.
    entries: VecDeque<Entry>,
}

#[derive(Default)]
pub struct SlowLog {
    inner: Mutex<Inner>,
}

impl SlowLog {
    /// Log a command; drop the oldest entries beyond `max_len`.
    pub fn push(
        &self,
        max_len: usize,
        time_s: u64,
        usec: u64,
        argv: &[Bytes],
        addr: &str,
        name: Bytes,
    ) {
        if max_len == 0 {
            return;
        }
        let argv = shown_args(argv);
        let mut inner = self.inner.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.entries.push_front(Entry {
            id,
            time_s,
            usec,
            argv,
            addr: addr.to_string(),
            name,
        });
        inner.entries.truncate(max_len);
    }

    pub fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forget every entry; ids keep counting, as in Redis.
    pub fn reset(&self) {
        self.inner.lock().entries.clear();
    }

    /// The newest `count` entries in SLOWLOG GET's shape.
    pub fn newest(&self, count: usize) -> Vec<Frame> {
        let inner = self.inner.lock();
        inner
            .entries
            .iter()
            .take(count)
            .map(|e| {
                Frame::Array(vec![
                    Frame::Integer(e.id as i64),
                    Frame::Integer(e.time_s as i64),
                    Frame::Integer(e.usec as i64),
                    Frame::Array(e.argv.iter().cloned().map(Frame::Bulk).collect()),
                    Frame::Bulk(Bytes::copy_from_slice(e.addr.as_bytes())),
                    Frame::Bulk(e.name.clone()),
                ])
            })
            .collect()
    }
}

fn is(a: &[u8], word: &str) -> bool {
    a.eq_ignore_ascii_case(word.as_bytes())
}

/// Which arguments hold secrets Redis does not log: AUTH's, HELLO's AUTH
/// pair, and the value of CONFIG SET requirepass.
fn redacted(argv: &[Bytes]) -> Vec<bool> {
    let mut hide = vec![false; argv.len()];
    let Some(name) = argv.first() else {
        return hide;
    };
    if is(name, "AUTH") {
        hide.iter_mut().skip(1).for_each(|h| *h = true);
    } else if is(name, "HELLO") {
        let mut i = 2;
        while i < argv.len() {
            if is(&argv[i], "AUTH") {
                for h in hide.iter_mut().skip(i + 1).take(2) {
                    *h = true;
                }
                i += 3;
            } else {
                i += 1;
            }
        }
    } else if is(name, "CONFIG") && argv.get(1).is_some_and(|s| is(s, "SET")) {
        let mut i = 2;
        while i + 1 < argv.len() {
            if is(&argv[i], "requirepass") || is(&argv[i], "masterauth") {
                hide[i + 1] = true;
            }
            i += 2;
        }
    }
    hide
}

/// The arguments as the slow log keeps them: secrets redacted, copies (never
/// slices of a request buffer), at most [`MAX_ARGS`] with the last saying how
/// many more there were, each cut to [`MAX_ARG_BYTES`] with a note of the rest.
pub fn shown_args(argv: &[Bytes]) -> Vec<Bytes> {
    let hide = redacted(argv);
    let kept = argv.len().min(MAX_ARGS);
    let mut out = Vec::with_capacity(kept);
    for (j, a) in argv.iter().take(kept).enumerate() {
        if kept != argv.len() && j == kept - 1 {
            out.push(Bytes::from(format!(
                "... ({} more arguments)",
                argv.len() - kept + 1
            )));
        } else if hide[j] {
            out.push(Bytes::from_static(b"(redacted)"));
        } else if a.len() > MAX_ARG_BYTES {
            let mut v = a[..MAX_ARG_BYTES].to_vec();
            v.extend_from_slice(format!("... ({} more bytes)", a.len() - MAX_ARG_BYTES).as_bytes());
            out.push(Bytes::from(v));
        } else {
            out.push(Bytes::copy_from_slice(a));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<Bytes> {
        v.iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    #[test]
    fn long_commands_are_cut_like_redis() {
        let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let shown = shown_args(&args(&many));
        assert_eq!(shown.len(), 32);
        assert_eq!(shown[30], Bytes::from("30"));
        assert_eq!(shown[31], Bytes::from("... (9 more arguments)"));
        let big = "x".repeat(130);
        let shown = shown_args(&args(&["SET", "k", &big]));
        assert_eq!(shown[2].len(), 128 + "... (2 more bytes)".len());
        assert!(shown[2].ends_with(b"x... (2 more bytes)"));
    }

    #[test]
    fn secrets_are_redacted() {
        let r = Bytes::from_static(b"(redacted)");
        assert_eq!(
            shown_args(&args(&["AUTH", "u", "p"]))[1..],
            [r.clone(), r.clone()]
        );
        let h = shown_args(&args(&["hello", "3", "auth", "u", "p", "setname", "n"]));
        assert_eq!(h[3..5], [r.clone(), r.clone()]);
        assert_eq!(h[6], Bytes::from("n"));
        let c = shown_args(&args(&["config", "set", "requirepass", "s", "hz", "5"]));
        assert_eq!(c[3], r);
        assert_eq!(c[5], Bytes::from("5"));
    }

    #[test]
    fn newest_first_and_bounded() {
        let log = SlowLog::default();
        for i in 0..5 {
            log.push(3, 100, i, &args(&["GET", "k"]), "1.2.3.4:5", Bytes::new());
        }
        assert_eq!(log.len(), 3);
        let got = log.newest(2);
        let Frame::Array(first) = &got[0] else {
            panic!("entry")
        };
        assert_eq!(first[0], Frame::Integer(4));
        assert_eq!(first[2], Frame::Integer(4));
        log.reset();
        assert!(log.is_empty());
        log.push(3, 100, 9, &args(&["GET", "k"]), "a", Bytes::new());
        let Frame::Array(e) = &log.newest(10)[0] else {
            panic!("entry")
        };
        assert_eq!(e[0], Frame::Integer(5), "ids keep counting after RESET");
        log.push(0, 100, 9, &args(&["GET", "k"]), "a", Bytes::new());
        assert_eq!(log.len(), 1, "slowlog-max-len 0 logs nothing");
    }
}
