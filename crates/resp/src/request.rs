//! Server-side request parsing: one command out of the front of a read buffer.
//!
//! A request is either a RESP multibulk of bulk strings (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`)
//! or an inline line (`GET k\r\n`) as typed into telnet. The parser works in two
//! passes over borrowed bytes: it first finds where each argument lies, and only when
//! the whole command is present does it report the argument ranges. Nothing is
//! allocated from a length the client merely claims.

use thiserror::Error;

/// Redis 7 rejects a multibulk header above this many arguments (the
/// argument vector grows with what arrives, never with the claim).
pub const MAX_MULTIBULK_LEN: i64 = i32::MAX as i64;
/// Redis rejects an inline request (a line without `*`) longer than this.
pub const MAX_INLINE_BYTES: usize = 64 * 1024;

/// An unauthenticated client may send no more arguments than this (Redis's
/// answer to CVE-2021-32675: strangers cannot make the server buffer much).
pub const UNAUTHENTICATED_MULTIBULK_LEN: i64 = 10;
/// ... and no bulk argument longer than this.
pub const UNAUTHENTICATED_BULK_LEN: i64 = 16 * 1024;

#[derive(Clone, Copy, Debug)]
pub struct RequestLimits {
    /// `proto-max-bulk-len`: the largest bulk argument accepted.
    pub max_bulk_len: i64,
    /// False until the client has authenticated, when a password is required.
    pub authenticated: bool,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            max_bulk_len: 512 * 1024 * 1024,
            authenticated: true,
        }
    }
}

/// A malformed request. The Display text is what Redis sends before closing the
/// connection (after `-ERR `).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
    #[error("Protocol error: expected '$', got '{0}'")]
    ExpectedDollar(char),
    #[error("Protocol error: too big mbulk count string")]
    TooBigMultibulkString,
    #[error("Protocol error: too big bulk count string")]
    TooBigBulkString,
    #[error("Protocol error: too big inline request")]
    TooBigInline,
    #[error("Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
    #[error("Protocol error: unauthenticated multibulk length")]
    UnauthenticatedMultibulkLength,
    #[error("Protocol error: unauthenticated bulk length")]
    UnauthenticatedBulkLength,
}

/// A parsed request: the argument byte ranges inside the buffer it was parsed from,
/// and how many bytes it used. Inline requests may need unquoting, so they carry
/// owned arguments instead of ranges.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    Ranges {
        args: Vec<(usize, usize)>,
        consumed: usize,
    },
    Owned {
        args: Vec<Vec<u8>>,
        consumed: usize,
    },
}

/// Parse one request from the front of `buf`.
///
/// Returns `Ok(None)` when more bytes are needed. An empty inline line or `*0`
/// yields a request with no arguments, which callers skip as Redis does.
pub fn parse_request(buf: &[u8], limits: &RequestLimits) -> Result<Option<Request>, ProtocolError> {
    parse_request_resuming(buf, limits, &mut None)
}

/// How far an incomplete multibulk request at the front of a buffer has been
/// parsed. Passing it back with the same buffer, grown by a later read, resumes
/// at the first unparsed argument, so a request that arrives in many small
/// pieces costs time linear in its size rather than quadratic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    count: i64,
    args: Vec<(usize, usize)>,
    pos: usize,
}

/// [`parse_request`] that resumes from, and on an incomplete multibulk leaves,
/// a [`Progress`]. The progress is only valid for the same buffer front.
pub fn parse_request_resuming(
    buf: &[u8],
    limits: &RequestLimits,
    progress: &mut Option<Progress>,
) -> Result<Option<Request>, ProtocolError> {
    let mut args = Vec::new();
    Ok(
        parse_request_into(buf, limits, progress, &mut args)?.map(|parsed| match parsed {
            Parsed::Ranges { consumed } => Request::Ranges { args, consumed },
            Parsed::Owned { args, consumed } => Request::Owned { args, consumed },
        }),
    )
}

/// A request parsed by [`parse_request_into`]: its argument ranges were
/// appended to the caller's list, or (inline, possibly unquoted) it owns them.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Ranges { consumed: usize },
    Owned { args: Vec<Vec<u8>>, consumed: usize },
}

/// [`parse_request_resuming`] that appends a multibulk's argument ranges to
/// `ranges`, a list the caller keeps from one request to the next, so that
/// parsing a request allocates nothing. On `Ok(None)` or an error, `ranges`
/// is as it was (an incomplete request's ranges go into the progress).
///
/// Inlined into each caller, with the multibulk parser: in the connection
/// loop they are most of a request's parsing cost, and calls there cost
/// about 25 instructions per request.
#[inline(always)]
pub fn parse_request_into(
    buf: &[u8],
    limits: &RequestLimits,
    progress: &mut Option<Progress>,
    ranges: &mut Vec<(usize, usize)>,
) -> Result<Option<Parsed>, ProtocolError> {
    let base = ranges.len();
    let parsed = if let Some(p) = progress.take() {
        ranges.extend_from_slice(&p.args);
        parse_multibulk_args(buf, limits, p.count, p.pos, base, ranges, progress)
    } else {
        match buf.first() {
            None => return Ok(None),
            Some(b'*') => parse_multibulk(buf, limits, base, ranges, progress),
            Some(_) => parse_inline(buf),
        }
    };
    if !matches!(parsed, Ok(Some(Parsed::Ranges { .. }))) {
        ranges.truncate(base);
    }
    parsed
}

/// The common case of a length line, read in one pass: up to 18 digits at
/// `at` (no leading zero but in "0" itself) followed by CRLF. Returns the
/// value and where its CR is; anything else (a sign, more digits, a line not
/// all here yet) is `None`, and the general path decides, with the same
/// result: the first CRLF after `at` is then the one found here.
#[inline]
fn short_length(buf: &[u8], at: usize) -> Option<(i64, usize)> {
    let digits = buf.get(at..)?;
    let mut v: i64 = 0;
    let mut n = 0;
    while n < digits.len() && n < 18 && digits[n].is_ascii_digit() {
        v = v * 10 + i64::from(digits[n] - b'0');
        n += 1;
    }
    if n == 0 || (n > 1 && digits[0] == b'0') || digits.get(n..n + 2) != Some(b"\r\n") {
        return None;
    }
    Some((v, at + n))
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let hay = buf.get(from..)?;
    let mut i = 0;
    while let Some(off) = memchr_nl(&hay[i..]) {
        let pos = i + off;
        if pos > 0 && hay[pos - 1] == b'\r' {
            return Some(from + pos - 1);
        }
        i = pos + 1;
    }
    None
}

fn memchr_nl(hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == b'\n')
}

/// Parse a decimal integer the way Redis's `string2ll` does: optional minus, digits,
/// no spaces, no plus sign, no leading zeros other than "0" itself.
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        let d = i64::from(c - b'0');
        v = if neg {
            v.checked_mul(10)?.checked_sub(d)?
        } else {
            v.checked_mul(10)?.checked_add(d)?
        };
    }
    if neg && v == 0 {
        return None;
    }
    Some(v)
}

#[inline(always)]
fn parse_multibulk(
    buf: &[u8],
    limits: &RequestLimits,
    base: usize,
    ranges: &mut Vec<(usize, usize)>,
    progress: &mut Option<Progress>,
) -> Result<Option<Parsed>, ProtocolError> {
    let (count, eol) = match short_length(buf, 1) {
        Some(found) => found,
        None => {
            let Some(eol) = find_crlf(buf, 1) else {
                if buf.len() > MAX_INLINE_BYTES {
                    return Err(ProtocolError::TooBigMultibulkString);
                }
                return Ok(None);
            };
            let count = parse_i64(&buf[1..eol]).ok_or(ProtocolError::InvalidMultibulkLength)?;
            (count, eol)
        }
    };
    if count > MAX_MULTIBULK_LEN {
        return Err(ProtocolError::InvalidMultibulkLength);
    }
    if !limits.authenticated && count > UNAUTHENTICATED_MULTIBULK_LEN {
        return Err(ProtocolError::UnauthenticatedMultibulkLength);
    }
    let pos = eol + 2;
    if count <= 0 {
        return Ok(Some(Parsed::Ranges { consumed: pos }));
    }
    // Reserve no more than the bytes present could hold: each argument takes at
    // least four bytes (`$0\r\n`), so a huge claimed count costs nothing up front.
    let plausible = (buf.len() - pos) / 4 + 1;
    ranges.reserve((count as usize).min(plausible).min(1024));
    parse_multibulk_args(buf, limits, count, pos, base, ranges, progress)
}

/// Parse the bulk arguments of a multibulk whose header has been read, from
/// `pos`; the request's ranges found so far are those of `ranges` past `base`.
fn parse_multibulk_args(
    buf: &[u8],
    limits: &RequestLimits,
    count: i64,
    mut pos: usize,
    base: usize,
    ranges: &mut Vec<(usize, usize)>,
    progress: &mut Option<Progress>,
) -> Result<Option<Parsed>, ProtocolError> {
    let mut incomplete = |pos: usize, ranges: &mut Vec<(usize, usize)>| {
        *progress = Some(Progress {
            count,
            args: ranges[base..].to_vec(),
            pos,
        });
        Ok(None)
    };
    while ((ranges.len() - base) as i64) < count {
        let Some(&first) = buf.get(pos) else {
            return incomplete(pos, ranges);
        };
        if first != b'$' {
            return Err(ProtocolError::ExpectedDollar(char::from(first)));
        }
        let (len, eol) = match short_length(buf, pos + 1) {
            Some(found) => found,
            None => {
                let Some(eol) = find_crlf(buf, pos + 1) else {
                    if buf.len() - pos > MAX_INLINE_BYTES {
                        return Err(ProtocolError::TooBigBulkString);
                    }
                    return incomplete(pos, ranges);
                };
                let len = parse_i64(&buf[pos + 1..eol]).ok_or(ProtocolError::InvalidBulkLength)?;
                (len, eol)
            }
        };
        if len < 0 || len > limits.max_bulk_len {
            return Err(ProtocolError::InvalidBulkLength);
        }
        if !limits.authenticated && len > UNAUTHENTICATED_BULK_LEN {
            return Err(ProtocolError::UnauthenticatedBulkLength);
        }
        let start = eol + 2;
        let end = start
            .checked_add(len as usize)
            .ok_or(ProtocolError::InvalidBulkLength)?;
        if buf.len() < end + 2 {
            return incomplete(pos, ranges);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Err(ProtocolError::InvalidBulkLength);
        }
        ranges.push((start, end));
        pos = end + 2;
    }
    Ok(Some(Parsed::Ranges { consumed: pos }))
}

fn parse_inline(buf: &[u8]) -> Result<Option<Parsed>, ProtocolError> {
    let Some(nl) = memchr_nl(buf) else {
        if buf.len() > MAX_INLINE_BYTES {
            return Err(ProtocolError::TooBigInline);
        }
        return Ok(None);
    };
    if nl > MAX_INLINE_BYTES {
        return Err(ProtocolError::TooBigInline);
    }
    let line = if nl > 0 && buf[nl - 1] == b'\r' {
        &buf[..nl - 1]
    } else {
        &buf[..nl]
    };
    let args = split_args(line).ok_or(ProtocolError::UnbalancedQuotes)?;
    Ok(Some(Parsed::Owned {
        args,
        consumed: nl + 1,
    }))
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Split an inline line into arguments with the quoting rules of redis-cli and
/// Redis's `sdssplitargs`: double quotes with backslash escapes (`\n`, `\xHH`, ...),
/// single quotes with only `\'` escaped. `None` for unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n {
            return Some(out);
        }
        let mut cur = Vec::new();
        let mut in_dq = false;
        let mut in_sq = false;
        loop {
            if in_dq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 3 < n && line[i + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex_val(line[i + 2]), hex_val(line[i + 3])) {
                        cur.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < n {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    // The closing quote must be followed by a space or the end.
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    in_dq = false;
                } else {
                    cur.push(c);
                }
                i += 1;
            } else if in_sq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    cur.push(b'\'');
                    i += 2;
                    continue;
                }
                if c == b'\'' {
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    in_sq = false;
                } else {
                    cur.push(c);
                }
                i += 1;
            } else {
                if i >= n || line[i].is_ascii_whitespace() {
                    break;
                }
                match line[i] {
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    c => cur.push(c),
                }
                i += 1;
            }
        }
        out.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // The one-pass length reader agrees with the general path (first
        // CRLF, then Redis's string2ll rules) wherever it answers.
        #[test]
        fn short_length_agrees_with_the_general_path(
            head in proptest::collection::vec(
                prop_oneof![4 => Just(b'0'), 4 => Just(b'7'), 4 => Just(b'9'), 1 => Just(b'-'),
                            1 => Just(b'+'), 1 => Just(b'\r'), 1 => Just(b'\n'), 1 => any::<u8>()],
                0..24),
            crlf in any::<bool>(),
        ) {
            let mut buf = b"$".to_vec();
            buf.extend_from_slice(&head);
            if crlf {
                buf.extend_from_slice(b"\r\n");
            }
            if let Some((v, eol)) = short_length(&buf, 1) {
                prop_assert_eq!(find_crlf(&buf, 1), Some(eol));
                prop_assert_eq!(parse_i64(&buf[1..eol]), Some(v));
            }
        }
    }

    fn args_of(buf: &[u8]) -> Vec<Vec<u8>> {
        match parse_request(buf, &RequestLimits::default())
            .expect("valid request")
            .expect("complete request")
        {
            Request::Ranges { args, .. } => args.iter().map(|&(s, e)| buf[s..e].to_vec()).collect(),
            Request::Owned { args, .. } => args,
        }
    }

    /// Arguments and whether to send them inline. Inline arguments are plain
    /// words, so they need no quoting; multibulk ones are any bytes.
    fn arb_request() -> impl Strategy<Value = (Vec<Vec<u8>>, bool)> {
        prop_oneof![
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..24), 1..5)
                .prop_map(|a| (a, false)),
            proptest::collection::vec("[A-Za-z0-9:_.-]{1,12}", 1..5)
                .prop_map(|a| (a.into_iter().map(String::into_bytes).collect(), true)),
        ]
    }

    fn encode_request(args: &[Vec<u8>], inline: bool) -> Vec<u8> {
        if inline {
            let mut line = args.join(&b' ');
            line.extend_from_slice(b"\r\n");
            return line;
        }
        let mut buf = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            buf.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            buf.extend_from_slice(a);
            buf.extend_from_slice(b"\r\n");
        }
        buf
    }

    #[test]
    fn multibulk_complete_and_partial() {
        let full = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        assert_eq!(args_of(full), vec![b"GET".to_vec(), b"k".to_vec()]);
        for cut in 0..full.len() {
            assert_eq!(
                parse_request(&full[..cut], &RequestLimits::default()),
                Ok(None),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn inline_with_quotes() {
        assert_eq!(
            args_of(b"set k \"a b\\x41\"\r\n"),
            vec![b"set".to_vec(), b"k".to_vec(), b"a bA".to_vec()]
        );
        assert_eq!(args_of(b"PING\n"), vec![b"PING".to_vec()]);
        assert_eq!(
            parse_request(b"set \"abc\r\n", &RequestLimits::default()),
            Err(ProtocolError::UnbalancedQuotes)
        );
    }

    #[test]
    fn rejects_huge_claims_without_allocating() {
        let lim = RequestLimits::default();
        assert_eq!(
            parse_request(b"*2147483648\r\n", &lim),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        // More than a million arguments is fine (Redis 7), and reserves
        // nothing until they come.
        assert_eq!(parse_request(b"*2147483647\r\n", &lim), Ok(None));
        assert_eq!(
            parse_request(b"*1\r\n$600000000\r\n", &lim),
            Err(ProtocolError::InvalidBulkLength)
        );
        // A plausible claim with nothing behind it is simply incomplete.
        assert_eq!(parse_request(b"*1000000\r\n", &lim), Ok(None));
        assert_eq!(
            parse_request(b"*1\r\n$-1\r\n", &lim),
            Err(ProtocolError::InvalidBulkLength)
        );
        assert_eq!(
            parse_request(b"*1\r\n+x\r\n", &lim),
            Err(ProtocolError::ExpectedDollar('+'))
        );
        assert_eq!(
            parse_request(b"*x\r\n", &lim),
            Err(ProtocolError::InvalidMultibulkLength)
        );
    }

    #[test]
    fn strangers_get_small_limits() {
        let lim = RequestLimits {
            authenticated: false,
            ..RequestLimits::default()
        };
        assert_eq!(
            parse_request(b"*11\r\n", &lim),
            Err(ProtocolError::UnauthenticatedMultibulkLength)
        );
        assert_eq!(
            parse_request(b"*2\r\n$4\r\nAUTH\r\n$16385\r\n", &lim),
            Err(ProtocolError::UnauthenticatedBulkLength)
        );
        assert!(matches!(
            parse_request(b"*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n", &lim),
            Ok(Some(_))
        ));
    }

    /// Feeding a request in pieces with the progress carried between calls gives
    /// the same request as parsing it whole, and never re-reads finished args.
    #[test]
    fn resuming_matches_whole_parse() {
        let mut req = b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n$0\r\n\r\n".to_vec();
        req.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        let whole = parse_request(&req, &RequestLimits::default()).unwrap();
        for step in 1..req.len() {
            let mut progress = None;
            let mut have = 0;
            let got = loop {
                have = (have + step).min(req.len());
                match parse_request_resuming(&req[..have], &RequestLimits::default(), &mut progress)
                {
                    Ok(Some(r)) => break r,
                    Ok(None) => assert!(have < req.len(), "step {step}: stuck"),
                    Err(e) => panic!("step {step}: {e}"),
                }
            };
            assert_eq!(Some(got), whole, "step {step}");
        }
    }

    #[test]
    fn progress_skips_parsed_arguments() {
        let mut progress = None;
        let lim = RequestLimits::default();
        let head = b"*3\r\n$1\r\na\r\n$1\r\nb\r\n";
        assert_eq!(parse_request_resuming(head, &lim, &mut progress), Ok(None));
        let p = progress.clone().unwrap();
        assert_eq!(p.args.len(), 2);
        // Corrupting the already-parsed bytes does not matter: they are not re-read.
        let mut buf = head.to_vec();
        buf[5] = b'#';
        buf.extend_from_slice(b"$1\r\nc\r\n");
        match parse_request_resuming(&buf, &lim, &mut progress)
            .unwrap()
            .unwrap()
        {
            Request::Ranges { args, consumed } => {
                assert_eq!(args.len(), 3);
                assert_eq!(consumed, buf.len());
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(progress, None);
    }

    #[test]
    fn inline_too_big() {
        let big = vec![b'a'; MAX_INLINE_BYTES + 1];
        assert_eq!(
            parse_request(&big, &RequestLimits::default()),
            Err(ProtocolError::TooBigInline)
        );
    }

    #[test]
    fn integer_parsing_matches_redis() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"01"), None);
        assert_eq!(parse_i64(b"+1"), None);
        assert_eq!(parse_i64(b"-0"), None);
        assert_eq!(parse_i64(b""), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = parse_request(&data, &RequestLimits::default());
        }

        /// Requests arrive in arbitrary pieces: a buffer holding any strict prefix
        /// of a request must read as incomplete, never as an error or a shorter
        /// command, and a pipeline of requests must come back one by one, in order.
        #[test]
        fn pipelines_parse_in_order_and_prefixes_wait(reqs in proptest::collection::vec(arb_request(), 1..6)) {
            let mut wire = Vec::new();
            let mut bounds = Vec::new();
            for (args, inline) in &reqs {
                let start = wire.len();
                wire.extend(encode_request(args, *inline));
                bounds.push((start, wire.len()));
            }
            let lim = RequestLimits::default();
            let mut pos = 0;
            for ((args, _), &(start, end)) in reqs.iter().zip(&bounds) {
                proptest::prop_assert_eq!(pos, start);
                for cut in start..end {
                    proptest::prop_assert_eq!(parse_request(&wire[start..cut], &lim), Ok(None));
                }
                let rest = &wire[pos..];
                let req = parse_request(rest, &lim);
                let (got, consumed) = match req {
                    Ok(Some(Request::Ranges { args, consumed })) => {
                        (args.iter().map(|&(s, e)| rest[s..e].to_vec()).collect::<Vec<_>>(), consumed)
                    }
                    Ok(Some(Request::Owned { args, consumed })) => (args, consumed),
                    other => return Err(proptest::test_runner::TestCaseError::fail(format!("{other:?}"))),
                };
                proptest::prop_assert_eq!(&got, args);
                proptest::prop_assert_eq!(consumed, end - start);
                pos += consumed;
            }
            proptest::prop_assert_eq!(pos, wire.len());
        }

        /// Parsing a pipeline in pieces into one list the caller keeps (with
        /// ranges of earlier requests already in it) gives each request's
        /// arguments as a whole parse does, leaves the earlier ranges alone,
        /// and leaves the list as it was while a request is incomplete.
        #[test]
        fn parsing_into_a_kept_list_matches_whole_parses(
            reqs in proptest::collection::vec(arb_request(), 1..6),
            step in 1usize..40,
            earlier in proptest::collection::vec((0usize..100, 0usize..100), 0..4),
        ) {
            let mut wire = Vec::new();
            for (args, inline) in &reqs {
                wire.extend(encode_request(args, *inline));
            }
            let lim = RequestLimits::default();
            let mut ranges = earlier.clone();
            let mut progress = None;
            let (mut pos, mut have) = (0, 0);
            for (args, _) in &reqs {
                let before = ranges.len();
                let got = loop {
                    match parse_request_into(&wire[pos..have], &lim, &mut progress, &mut ranges) {
                        Ok(Some(Parsed::Ranges { consumed })) => {
                            let got: Vec<Vec<u8>> = ranges[before..].iter().map(|&(s, e)| wire[pos + s..pos + e].to_vec()).collect();
                            break (got, consumed);
                        }
                        Ok(Some(Parsed::Owned { args, consumed })) => break (args, consumed),
                        Ok(None) => {
                            proptest::prop_assert_eq!(ranges.len(), before);
                            proptest::prop_assert!(have < wire.len(), "stuck");
                            have = (have + step).min(wire.len());
                        }
                        Err(e) => return Err(proptest::test_runner::TestCaseError::fail(format!("{e}"))),
                    }
                };
                proptest::prop_assert_eq!(&got.0, args);
                pos += got.1;
            }
            proptest::prop_assert_eq!(pos, wire.len());
            proptest::prop_assert_eq!(&ranges[..earlier.len()], &earlier[..]);
        }

        #[test]
        fn multibulk_roundtrip(args in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40), 1..8)) {
            let mut buf = format!("*{}\r\n", args.len()).into_bytes();
            for a in &args {
                buf.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                buf.extend_from_slice(a);
                buf.extend_from_slice(b"\r\n");
            }
            proptest::prop_assert_eq!(args_of(&buf), args);
        }
    }
}
