//! Stream entry ids: a millisecond time and a sequence number, both 64-bit,
//! written `ms-seq`.

use std::fmt;

/// An entry id. Ordered by time, then sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The id right after this one, or `None` past the last possible id.
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self.ms.checked_add(1).map(|ms| StreamId { ms, seq: 0 }),
        }
    }

    /// The id right before this one, or `None` before `0-0`.
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self
                .ms
                .checked_sub(1)
                .map(|ms| StreamId { ms, seq: u64::MAX }),
        }
    }

    /// Parses `ms-seq`, or a bare `ms` whose sequence is then `missing_seq`
    /// (0 where the id starts a range, `u64::MAX` where it ends one). The
    /// special forms (`-`, `+`, `$`, `>`, `*`, `ms-*`, a `(` prefix) belong to
    /// the commands that accept them and are not handled here.
    pub fn parse(s: &[u8], missing_seq: u64) -> Option<StreamId> {
        match s.iter().position(|&b| b == b'-') {
            None => Some(StreamId {
                ms: parse_u64(s)?,
                seq: missing_seq,
            }),
            Some(i) => Some(StreamId {
                ms: parse_u64(&s[..i])?,
                seq: parse_u64(&s[i + 1..])?,
            }),
        }
    }

    /// The 16-byte big-endian form Redis uses as a radix-tree key and in RDB files.
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.ms.to_be_bytes());
        out[8..].copy_from_slice(&self.seq.to_be_bytes());
        out
    }

    pub fn from_be_bytes(b: [u8; 16]) -> StreamId {
        let (ms, seq) = b.split_at(8);
        StreamId {
            ms: u64::from_be_bytes(ms.try_into().expect("8 bytes")),
            seq: u64::from_be_bytes(seq.try_into().expect("8 bytes")),
        }
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// An unsigned decimal of at most 20 digits, without sign or spaces.
fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

/// How Redis's stream commands read an id (`streamParseID`): `ms-seq`, or a
/// bare `ms` whose sequence is `missing_seq`; split at the first `-`, each
/// number read the way Redis's `string2ull` does (a canonical integer, or
/// else C's `strtoull`: leading blanks and a sign allowed, the whole text
/// consumed, a `-` sign wrapping); at most 127 bytes. With `star_seq`,
/// `ms-*` reads as `ms` with no sequence given. Returns the id and whether
/// its sequence was given. The forms `-`, `+`, `$`, `>` and `(` belong to
/// the commands.
pub fn parse_redis(s: &[u8], missing_seq: u64, star_seq: bool) -> Option<(StreamId, bool)> {
    if s.len() > 127 {
        return None;
    }
    // The text is a C string there: it ends at a NUL.
    let s = s.split(|&b| b == 0).next().unwrap_or(s);
    let (ms, seq) = match s.iter().position(|&b| b == b'-') {
        None => (s, None),
        Some(i) => (&s[..i], Some(&s[i + 1..])),
    };
    let ms = string2ull(ms)?;
    match seq {
        None => Some((
            StreamId {
                ms,
                seq: missing_seq,
            },
            true,
        )),
        Some(b"*") if star_seq => Some((StreamId { ms, seq: 0 }, false)),
        Some(seq) => Some((
            StreamId {
                ms,
                seq: string2ull(seq)?,
            },
            true,
        )),
    }
}

/// Redis's `string2ull`: a canonical signed integer (refused when negative),
/// else what `strtoull` accepts in full.
fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(n) = canonical_i64(s) {
        return u64::try_from(n).ok();
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits.iter().try_fold(0u64, |n, &b| {
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })?;
    Some(if neg { n.wrapping_neg() } else { n })
}

/// Redis's `string2ll`: an optional `-`, then digits without a leading zero
/// (or a lone `0`), within 64 bits.
fn canonical_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits[0] == b'0' && (digits.len() > 1 || neg) {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    text.parse::<i64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_and_bare_ids() {
        assert_eq!(StreamId::parse(b"5-3", 0), Some(StreamId::new(5, 3)));
        assert_eq!(StreamId::parse(b"5", 0), Some(StreamId::new(5, 0)));
        assert_eq!(
            StreamId::parse(b"5", u64::MAX),
            Some(StreamId::new(5, u64::MAX))
        );
        assert_eq!(
            StreamId::parse(b"18446744073709551615-18446744073709551615", 0),
            Some(StreamId::MAX)
        );
        for bad in [
            &b""[..],
            b"-",
            b"5-",
            b"-5",
            b"a-1",
            b"1-2-3",
            b"+1",
            b"18446744073709551616",
        ] {
            assert_eq!(
                StreamId::parse(bad, 0),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn steps_and_orders() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
        assert!(StreamId::new(1, 9) < StreamId::new(2, 0));
        let id = StreamId::new(0x0102, 7);
        assert_eq!(StreamId::from_be_bytes(id.to_be_bytes()), id);
        assert_eq!(id.to_string(), "258-7");
    }

    #[test]
    fn parses_as_redis_does() {
        let p = |s: &str| parse_redis(s.as_bytes(), 0, true);
        assert_eq!(p("5"), Some((StreamId::new(5, 0), true)));
        assert_eq!(p("05-01"), Some((StreamId::new(5, 1), true)));
        assert_eq!(p(" 5"), Some((StreamId::new(5, 0), true)));
        assert_eq!(p("+5"), Some((StreamId::new(5, 0), true)));
        assert_eq!(p("5-*"), Some((StreamId::new(5, 0), false)));
        assert_eq!(parse_redis(b"5-*", 0, false), None);
        for bad in [
            "-5",
            "5-",
            "",
            "1-2-3",
            "a",
            "5-*-",
            "18446744073709551616",
            "-",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
        assert_eq!(p(&"1".repeat(128)), None);
    }
}
