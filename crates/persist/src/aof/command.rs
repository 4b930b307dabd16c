//! Commands as an append-only file holds them: RESP arrays of bulk strings, with `#` annotation
//! lines between them.
//!
//! [`encode_command`] writes one command the way Redis appends it. [`CommandReader`] reads a file
//! of them back with the same leniency as Redis 7.0's loader (see `AOF.md`): lines are read in
//! chunks of at most 1023 bytes, counts are parsed like C's `atoi`/`strtol`, and the two bytes after
//! a bulk string are skipped without being looked at. It never trusts a length the file claims: it
//! reserves memory only as bytes actually arrive, and refuses a bulk string longer than a cap.

use std::io::{self, BufRead, BufReader, Read};

use thiserror::Error;

/// Longest bulk string the reader accepts by default: Redis's default `proto-max-bulk-len`.
pub const DEFAULT_MAX_BULK_LEN_BYTES: u64 = 512 * 1024 * 1024;

/// Redis reads each protocol line of an AOF into a 1024-byte buffer with `fgets`, so a line is
/// consumed at most 1023 bytes at a time; the rest of a longer line is read as the next line.
const LINE_CHUNK_BYTES: usize = 1023;

/// Largest piece reserved at once while reading a bulk string: memory follows the bytes read,
/// not the length the file claims.
const RESERVE_STEP_BYTES: usize = 64 * 1024;

/// Appends one command to `out` as Redis writes it to the AOF:
/// `*<argc>\r\n` then `$<len>\r\n<arg>\r\n` per argument.
pub fn encode_command<A: AsRef<[u8]>>(out: &mut Vec<u8>, argv: &[A]) {
    out.push(b'*');
    out.extend_from_slice(argv.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for arg in argv {
        let arg = arg.as_ref();
        out.push(b'$');
        out.extend_from_slice(arg.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Appends the timestamp annotation Redis writes before a command when `aof-timestamp-enabled`
/// is on and the second has changed: `#TS:<unix seconds>\r\n`.
pub fn encode_timestamp_annotation(out: &mut Vec<u8>, unix_secs: i64) {
    out.extend_from_slice(b"#TS:");
    out.extend_from_slice(unix_secs.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// One command read from the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AofCommand {
    pub argv: Vec<Vec<u8>>,
    /// File offset of the command's first byte (its `*`).
    pub offset: u64,
}

/// One `#` line: Redis skips these when loading. The only kind Redis writes is `#TS:<secs>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    /// File offset of the `#`.
    pub offset: u64,
    /// The line as read, `#` included, line ending excluded.
    pub text: Vec<u8>,
}

impl Annotation {
    /// The Unix time in seconds of a `#TS:` annotation, if this is one that parses.
    pub fn timestamp(&self) -> Option<i64> {
        let digits = self.text.strip_prefix(b"#TS:")?;
        std::str::from_utf8(digits).ok()?.parse().ok()
    }
}

/// What [`CommandReader::next_item`] yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AofItem {
    Command(AofCommand),
    Annotation(Annotation),
}

/// What went wrong, without where.
#[derive(Debug, Error)]
pub enum AofErrorKind {
    /// The file ends inside a command: everything before the error's offset is valid, and is
    /// what `aof-load-truncated yes` keeps.
    #[error("unexpected end of file")]
    Truncated,
    /// The file ends inside a MULTI block: the offset is where that MULTI starts; Redis reverts
    /// the transaction and treats the file as truncated there.
    #[error("incomplete MULTI/EXEC transaction at end of file")]
    IncompleteMulti,
    /// Bytes that are not a command where a command must be.
    #[error("bad file format: {0}")]
    Corrupt(&'static str),
    /// A bulk string longer than the reader's cap.
    #[error("bulk string of {len} bytes exceeds the limit of {max} bytes")]
    BulkTooLong { len: u64, max: u64 },
    /// The underlying reader failed.
    #[error("read error: {0}")]
    Io(#[from] io::Error),
}

/// A reading error and the byte offset it concerns: for a truncation, the end of the valid
/// prefix; for corruption, the start of the line or string found bad.
#[derive(Debug, Error)]
#[error("{kind} at byte offset {offset}")]
pub struct AofError {
    pub offset: u64,
    pub kind: AofErrorKind,
}

impl AofError {
    /// True when the file is valid up to `offset` and merely ends early (a torn write or an
    /// unfinished transaction): the case `aof-load-truncated` decides on.
    pub fn is_truncation(&self) -> bool {
        matches!(
            self.kind,
            AofErrorKind::Truncated | AofErrorKind::IncompleteMulti
        )
    }
}

/// Streams the commands of an append-only file (or of the tail after an RDB preamble).
///
/// After an error, or once the end is reached, it yields nothing more.
pub struct CommandReader<R> {
    inner: BufReader<R>,
    pos: u64,
    max_bulk_len: u64,
    /// End of the last complete command: where a truncated file would be cut.
    valid_up_to: u64,
    /// Where the file would be cut if it ended now inside an open MULTI.
    valid_before_multi: u64,
    in_multi: bool,
    done: bool,
    annotations_seen: u64,
    last_annotation: Option<Annotation>,
}

impl<R> std::fmt::Debug for CommandReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandReader")
            .field("pos", &self.pos)
            .field("valid_up_to", &self.valid_up_to)
            .field("in_multi", &self.in_multi)
            .finish()
    }
}

impl<R: Read> CommandReader<R> {
    /// Reads from the start of a file.
    pub fn new(inner: R) -> Self {
        Self::starting_at(inner, 0)
    }

    /// Reads `inner` as the part of a file that starts at `offset` (after an RDB preamble), so
    /// that offsets name positions in the whole file.
    pub fn starting_at(inner: R, offset: u64) -> Self {
        CommandReader {
            inner: BufReader::new(inner),
            pos: offset,
            max_bulk_len: DEFAULT_MAX_BULK_LEN_BYTES,
            valid_up_to: offset,
            valid_before_multi: offset,
            in_multi: false,
            done: false,
            annotations_seen: 0,
            last_annotation: None,
        }
    }

    /// Sets the longest bulk string accepted (a server with a raised `proto-max-bulk-len` may
    /// have written longer ones).
    pub fn with_max_bulk_len(mut self, max: u64) -> Self {
        self.max_bulk_len = max;
        self
    }

    /// End of the last complete command read: the length of the valid prefix so far.
    pub fn valid_up_to(&self) -> u64 {
        self.valid_up_to
    }

    /// How many annotation lines [`Iterator::next`] has skipped.
    pub fn annotations_seen(&self) -> u64 {
        self.annotations_seen
    }

    /// The last annotation met, if any.
    pub fn last_annotation(&self) -> Option<&Annotation> {
        self.last_annotation.as_ref()
    }

    /// The next command or annotation, `None` at the clean end of the file.
    pub fn next_item(&mut self) -> Option<Result<AofItem, AofError>> {
        if self.done {
            return None;
        }
        let r = self.read_item();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }

    fn fail<T>(&self, offset: u64, kind: AofErrorKind) -> Option<Result<T, AofError>> {
        Some(Err(AofError { offset, kind }))
    }

    fn read_item(&mut self) -> Option<Result<AofItem, AofError>> {
        let start = self.pos;
        let line = match self.read_line_chunk() {
            Ok(l) => l,
            Err(e) => return self.fail(start, AofErrorKind::Io(e)),
        };
        match line.first() {
            None => {
                if self.in_multi {
                    return self.fail(self.valid_before_multi, AofErrorKind::IncompleteMulti);
                }
                None
            }
            Some(b'#') => {
                let text = strip_line_end(&line).to_vec();
                Some(Ok(AofItem::Annotation(Annotation {
                    offset: start,
                    text,
                })))
            }
            Some(b'*') => self.read_command(start, &line),
            Some(_) => self.fail(start, AofErrorKind::Corrupt("expected '*'")),
        }
    }

    /// A short read: Redis cuts the file after the last complete command, even inside a
    /// transaction (the next load then reverts the unfinished MULTI).
    fn truncated<T>(&self) -> Option<Result<T, AofError>> {
        self.fail(self.valid_up_to, AofErrorKind::Truncated)
    }

    fn read_command(&mut self, start: u64, header: &[u8]) -> Option<Result<AofItem, AofError>> {
        // Redis treats a lone `*` at the end of the file as a short read.
        if header.len() == 1 {
            return self.truncated();
        }
        // Redis parses the count with atoi: C's strtol narrowed to an int.
        let argc = c_strtol(&header[1..]).0 as i32;
        if argc < 1 {
            return self.fail(start, AofErrorKind::Corrupt("invalid argument count"));
        }
        let mut argv = Vec::with_capacity((argc as usize).min(64));
        for _ in 0..argc {
            let at = self.pos;
            let line = match self.read_line_chunk() {
                Ok(l) => l,
                Err(e) => return self.fail(at, AofErrorKind::Io(e)),
            };
            match line.first() {
                None => return self.truncated(),
                Some(b'$') => {}
                Some(_) => return self.fail(at, AofErrorKind::Corrupt("expected '$'")),
            }
            // strtol read into an unsigned long: a negative length would wrap to an absurd one.
            let len = c_strtol(&line[1..]).0;
            let Ok(len) = u64::try_from(len) else {
                return self.fail(at, AofErrorKind::Corrupt("negative bulk length"));
            };
            if len > self.max_bulk_len {
                return self.fail(
                    at,
                    AofErrorKind::BulkTooLong {
                        len,
                        max: self.max_bulk_len,
                    },
                );
            }
            let arg = match self.read_exact_bounded(len) {
                Ok(Some(a)) => a,
                Ok(None) => return self.truncated(),
                Err(e) => return self.fail(at, AofErrorKind::Io(e)),
            };
            // The two bytes after the string are skipped unchecked, as Redis's loader does.
            match self.read_exact_bounded(2) {
                Ok(Some(_)) => {}
                Ok(None) => return self.truncated(),
                Err(e) => return self.fail(at, AofErrorKind::Io(e)),
            }
            argv.push(arg);
        }
        // Redis remembers where the last MULTI started, nested or not, and forgets the open
        // transaction only at EXEC.
        if let Some(name) = argv.first() {
            if name.eq_ignore_ascii_case(b"multi") {
                self.valid_before_multi = self.valid_up_to;
                self.in_multi = true;
            } else if name.eq_ignore_ascii_case(b"exec") {
                self.in_multi = false;
            }
        }
        self.valid_up_to = self.pos;
        Some(Ok(AofItem::Command(AofCommand {
            argv,
            offset: start,
        })))
    }

    /// Reads up to and including the next `\n`, at most [`LINE_CHUNK_BYTES`] bytes; empty at the
    /// end of the input.
    fn read_line_chunk(&mut self) -> io::Result<Vec<u8>> {
        let mut line = Vec::new();
        while line.len() < LINE_CHUNK_BYTES {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                break;
            }
            let room = LINE_CHUNK_BYTES - line.len();
            let window = &buf[..buf.len().min(room)];
            let (take, found) = match window.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (window.len(), false),
            };
            line.extend_from_slice(&window[..take]);
            self.inner.consume(take);
            self.pos += take as u64;
            if found {
                break;
            }
        }
        Ok(line)
    }

    /// Reads exactly `len` bytes, or `None` if the input ends first. Memory grows with the
    /// bytes read, never ahead of them by more than [`RESERVE_STEP_BYTES`].
    fn read_exact_bounded(&mut self, len: u64) -> io::Result<Option<Vec<u8>>> {
        let mut out = Vec::new();
        let mut left = len;
        while left > 0 {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(None);
            }
            let take = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            if out.capacity() - out.len() < take {
                let want = usize::try_from(left)
                    .unwrap_or(usize::MAX)
                    .min(RESERVE_STEP_BYTES)
                    .max(take);
                out.reserve(want);
            }
            out.extend_from_slice(&buf[..take]);
            self.inner.consume(take);
            self.pos += take as u64;
            left -= take as u64;
        }
        Ok(Some(out))
    }
}

impl<R: Read> Iterator for CommandReader<R> {
    type Item = Result<AofCommand, AofError>;

    /// The next command, skipping (and counting) annotations.
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.next_item()? {
                Ok(AofItem::Command(c)) => return Some(Ok(c)),
                Ok(AofItem::Annotation(a)) => {
                    self.annotations_seen += 1;
                    self.last_annotation = Some(a);
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

fn strip_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// C's `strtol(s, &end, 10)` over a byte string that ends at its first NUL: skips leading
/// white space, takes an optional sign and decimal digits, saturates on overflow. Returns the
/// value, how many bytes it consumed (0 when there were no digits), and whether it overflowed.
pub(crate) fn c_strtol(s: &[u8]) -> (i64, usize, bool) {
    let s = s.split(|&b| b == 0).next().unwrap_or_default();
    let mut i = 0;
    while s.get(i).is_some_and(|b| matches!(b, b' ' | b'\t'..=b'\r')) {
        i += 1;
    }
    let negative = match s.get(i) {
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
    let digits_start = i;
    let mut value: i64 = 0;
    let mut overflow = false;
    while let Some(d) = s.get(i).filter(|b| b.is_ascii_digit()) {
        let d = i64::from(d - b'0');
        if !overflow {
            match value.checked_mul(10).and_then(|v| {
                if negative {
                    v.checked_sub(d)
                } else {
                    v.checked_add(d)
                }
            }) {
                Some(v) => value = v,
                None => overflow = true,
            }
        }
        i += 1;
    }
    if i == digits_start {
        return (0, 0, false);
    }
    if overflow {
        value = if negative { i64::MIN } else { i64::MAX };
    }
    (value, i, overflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(argv: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_command(&mut out, argv);
        out
    }

    fn read_all(data: &[u8]) -> (Vec<AofCommand>, Option<AofError>) {
        let mut cmds = Vec::new();
        for r in CommandReader::new(data) {
            match r {
                Ok(c) => cmds.push(c),
                Err(e) => return (cmds, Some(e)),
            }
        }
        (cmds, None)
    }

    #[test]
    fn encodes_like_redis() {
        assert_eq!(
            enc(&["SET", "key", ""]),
            b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$0\r\n\r\n"
        );
        let mut ts = Vec::new();
        encode_timestamp_annotation(&mut ts, 1_700_000_000);
        assert_eq!(ts, b"#TS:1700000000\r\n");
    }

    #[test]
    fn reads_commands_with_offsets_and_skips_annotations() {
        let mut f = enc(&["SELECT", "0"]);
        encode_timestamp_annotation(&mut f, 42);
        let second = f.len() as u64;
        f.extend(enc(&["set", "k", "v"]));
        let mut r = CommandReader::new(&f[..]);
        let a = r.next().expect("one").expect("ok");
        assert_eq!(a.argv, vec![b"SELECT".to_vec(), b"0".to_vec()]);
        assert_eq!(a.offset, 0);
        let b = r.next().expect("two").expect("ok");
        assert_eq!(b.offset, second);
        assert_eq!(r.annotations_seen(), 1);
        assert_eq!(
            r.last_annotation().and_then(Annotation::timestamp),
            Some(42)
        );
        assert!(r.next().is_none());
        assert!(r.next().is_none());
        assert_eq!(r.valid_up_to(), f.len() as u64);
    }

    #[test]
    fn next_item_reports_annotations() {
        let f = b"#TS:7\r\n*1\r\n$4\r\nPING\r\n";
        let mut r = CommandReader::new(&f[..]);
        match r.next_item() {
            Some(Ok(AofItem::Annotation(a))) => {
                assert_eq!(a.offset, 0);
                assert_eq!(a.text, b"#TS:7");
                assert_eq!(a.timestamp(), Some(7));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(r.next_item(), Some(Ok(AofItem::Command(c))) if c.offset == 7));
    }

    #[test]
    fn truncation_names_the_valid_prefix() {
        let mut f = enc(&["SET", "a", "1"]);
        let keep = f.len() as u64;
        f.extend(enc(&["SET", "b", "2"]));
        for cut in keep as usize + 1..f.len() {
            let (cmds, err) = read_all(&f[..cut]);
            assert_eq!(cmds.len(), 1, "cut {cut}");
            let err = err.expect("error");
            assert!(
                matches!(err.kind, AofErrorKind::Truncated),
                "cut {cut}: {err}"
            );
            assert_eq!(err.offset, keep);
            assert!(err.is_truncation());
        }
    }

    #[test]
    fn unfinished_multi_reverts_to_before_it() {
        let mut f = enc(&["SET", "a", "1"]);
        let before = f.len() as u64;
        f.extend(enc(&["MULTI"]));
        f.extend(enc(&["SET", "b", "2"]));
        let (cmds, err) = read_all(&f);
        assert_eq!(cmds.len(), 3);
        let err = err.expect("error");
        assert!(matches!(err.kind, AofErrorKind::IncompleteMulti));
        assert_eq!(err.offset, before);
        // Cut inside the queued command: a short read, cut after the last whole command, as
        // Redis does (its next load then reverts the MULTI).
        let (_, err) = read_all(&f[..f.len() - 3]);
        let err = err.expect("error");
        assert!(matches!(err.kind, AofErrorKind::Truncated));
        assert_eq!(err.offset, before + enc(&["MULTI"]).len() as u64);
        f.extend(enc(&["exec"]));
        assert!(read_all(&f).1.is_none());
    }

    #[test]
    fn corruption_is_not_truncation() {
        let cases: &[(&[u8], u64)] = &[
            (b"*1\r\n$4\r\nPING\r\nX", 14),
            (b"*0\r\n", 0),
            (b"*-1\r\n", 0),
            (b"*\r\n", 0),
            (b"*1\r\n:4\r\nPING\r\n", 4),
            (b"*1\r\n$-1\r\n", 4),
        ];
        for (f, at) in cases {
            let (_, err) = read_all(f);
            let err = err.expect("error");
            assert!(!err.is_truncation(), "{f:?}: {err}");
            assert_eq!(err.offset, *at, "{f:?}");
        }
    }

    #[test]
    fn redis_leniencies() {
        // A lone '*' at the end is a short read; the two bytes after a string are not checked;
        // counts parse like atoi.
        assert!(read_all(b"*").1.expect("err").is_truncation());
        let (cmds, err) = read_all(b"* 1x\r\n$2abc\r\nOKzz");
        assert!(err.is_none());
        assert_eq!(cmds[0].argv, vec![b"OK".to_vec()]);
        // atoi narrows to int: 2^32 + 1 is a count of one.
        let (cmds, err) = read_all(b"*4294967297\r\n$1\r\nx\r\n");
        assert!(err.is_none(), "{err:?}");
        assert_eq!(cmds.len(), 1);
    }

    #[test]
    fn claimed_lengths_are_never_allocated() {
        let (_, err) = read_all(b"*1\r\n$536870913\r\n");
        assert!(matches!(
            err.expect("error").kind,
            AofErrorKind::BulkTooLong { .. }
        ));
        let (_, err) = read_all(b"*2147483647\r\n$536870912\r\nabc");
        assert!(err.expect("error").is_truncation());
        let r = CommandReader::new(&b"*1\r\n$5\r\nhello\r\n"[..]).with_max_bulk_len(4);
        assert!(r.into_iter().any(|x| x.is_err()));
    }

    #[test]
    fn long_lines_are_read_in_chunks() {
        // A 2000-byte annotation: its tail after 1023 bytes is read as the next line.
        let mut f = vec![b'#'];
        f.extend_from_slice(&[b'a'; 1999]);
        f.extend_from_slice(b"\r\n");
        let (_, err) = read_all(&f);
        assert!(matches!(err.expect("error").kind, AofErrorKind::Corrupt(_)));
    }

    #[test]
    fn strtol_matches_c() {
        assert_eq!(c_strtol(b"  -12x"), (-12, 5, false));
        assert_eq!(c_strtol(b"x"), (0, 0, false));
        assert_eq!(c_strtol(b"-"), (0, 0, false));
        assert_eq!(c_strtol(b"99999999999999999999"), (i64::MAX, 20, true));
        assert_eq!(c_strtol(b"1\x002"), (1, 1, false));
        assert_eq!(c_strtol(b"\r\n5"), (5, 3, false));
    }

    mod model {
        use super::*;
        use proptest::prelude::*;

        fn argvs() -> impl Strategy<Value = Vec<Vec<Vec<u8>>>> {
            let arg = prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..40),
                Just(b"\r\n*$#".to_vec()),
            ];
            proptest::collection::vec(proptest::collection::vec(arg, 1..5), 0..8)
        }

        /// The file and where each command ends. MULTI/EXEC are kept out of the model so
        /// that a cut file is a plain truncation.
        fn build(cmds: &[Vec<Vec<u8>>]) -> (Vec<u8>, Vec<u64>) {
            let mut f = Vec::new();
            let mut ends = Vec::new();
            for argv in cmds {
                encode_command(&mut f, argv);
                ends.push(f.len() as u64);
            }
            (f, ends)
        }

        fn plain(cmds: &[Vec<Vec<u8>>]) -> bool {
            cmds.iter().all(|c| {
                !c[0].split(|&b| b == 0).next().is_some_and(|n| {
                    n.eq_ignore_ascii_case(b"multi") || n.eq_ignore_ascii_case(b"exec")
                })
            })
        }

        proptest! {
            #[test]
            fn encode_then_read_is_identity(cmds in argvs()) {
                prop_assume!(plain(&cmds));
                let (f, ends) = build(&cmds);
                let read: Vec<AofCommand> = CommandReader::new(&f[..])
                    .collect::<Result<_, _>>()
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(read.len(), cmds.len());
                let mut start = 0;
                for ((got, want), end) in read.iter().zip(&cmds).zip(&ends) {
                    prop_assert_eq!(&got.argv, want);
                    prop_assert_eq!(got.offset, start);
                    start = *end;
                }
            }

            #[test]
            fn any_cut_is_a_truncation_at_the_last_whole_command(
                cmds in argvs(),
                cut in any::<prop::sample::Index>(),
            ) {
                prop_assume!(plain(&cmds) && !cmds.is_empty());
                let (f, ends) = build(&cmds);
                let cut = cut.index(f.len() + 1) as u64;
                let whole = ends.iter().filter(|&&e| e <= cut).count();
                let mut r = CommandReader::new(&f[..cut as usize]);
                for want in &cmds[..whole] {
                    let got = r.next().expect("a command").map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(&got.argv, want);
                }
                let boundary = if whole == 0 { 0 } else { ends[whole - 1] };
                match r.next() {
                    None => prop_assert_eq!(boundary, cut),
                    Some(Ok(c)) => prop_assert!(false, "extra command {:?}", c),
                    Some(Err(e)) => {
                        prop_assert!(matches!(e.kind, AofErrorKind::Truncated), "{}", e);
                        prop_assert_eq!(e.offset, boundary);
                        prop_assert!(boundary < cut);
                    }
                }
            }

            #[test]
            fn damaged_files_fail_with_an_offset_or_parse(
                cmds in argvs(),
                flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
            ) {
                let (mut f, _) = build(&cmds);
                prop_assume!(!f.is_empty());
                for (at, byte) in flips {
                    let i = at.index(f.len());
                    f[i] = byte;
                }
                let mut r = CommandReader::new(&f[..]);
                let mut n = 0;
                while let Some(item) = r.next() {
                    match item {
                        Ok(c) => prop_assert!(c.offset < f.len() as u64),
                        Err(e) => {
                            prop_assert!(e.offset <= f.len() as u64, "{}", e);
                            prop_assert!(r.next().is_none());
                            break;
                        }
                    }
                    n += 1;
                    prop_assert!(n <= f.len());
                }
            }
        }
    }
}
