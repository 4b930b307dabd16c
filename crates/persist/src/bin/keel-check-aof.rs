//! `keel-check-aof [--fix|--truncate-to-timestamp T] FILE|MANIFEST`: checks an append-only file
//! the way Redis 7.0's `redis-check-aof` does, with the same lines, prompts and exit codes.
//!
//! The check is deliberately Redis's and not the loader's: it insists on `\r\n` after every
//! count and string, tracks MULTI/EXEC pairing, counts lines across all the files it checks,
//! and reports the first bad byte as `0x<offset>: <reason>`. `--fix` cuts the last file (and
//! only the last) after its last valid command once the user answers `y`. An RDB preamble or
//! base is checked with Keel's RDB reader; its report keeps Redis's summary lines but not the
//! per-field `[offset N] AUX FIELD` lines.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::process;
use std::time::{SystemTime, UNIX_EPOCH};

use keel_persist::aof::{rdb_tail_start, Manifest, RDB_MAGIC};
use keel_persist::rdb::{RdbErrorKind, RdbReader};

/// Redis reads a count line into a 128-byte buffer, an annotation into a 1024-byte one.
const COUNT_LINE_BUF: usize = 128;
const ANNOTATION_LINE_BUF: usize = 1024;
const MANIFEST_LINE_BUF: usize = 1025;

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Ok,
    Empty,
    Truncated,
    TimestampTruncated,
}

/// Prints what is pending and exits with status 1, as `redis-check-aof` does on any failure.
fn die() -> ! {
    let _ = io::stdout().flush();
    process::exit(1)
}

/// The text `strerror` gives for an I/O error, without Rust's " (os error N)" suffix.
fn strerror(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A Redis log line: `<pid>:C <dd Mon yyyy HH:MM:SS.mmm> # <msg>` (time in UTC).
fn server_log(msg: &str) {
    server_log_bytes(msg.as_bytes());
}

/// [`server_log`] for a message that may hold any bytes (a manifest line).
fn server_log_bytes(msg: &[u8]) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let ms = now.as_millis() as i64;
    let (secs, millis) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.get((m as usize).wrapping_sub(1)).unwrap_or(&"Jan");
    let mut line = format!(
        "{}:C {:02} {} {} {:02}:{:02}:{:02}.{:03} # ",
        process::id(),
        d,
        month,
        y,
        sod / 3600,
        sod % 3600 / 60,
        sod % 60,
        millis,
    )
    .into_bytes();
    line.extend_from_slice(msg);
    line.push(b'\n');
    let _ = io::stdout().lock().write_all(&line);
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `printf("%02x", c)` of a C `char`: bytes from 0x80 are sign-extended.
fn c_char_hex(b: u8) -> String {
    if b >= 0x80 {
        format!("ffffff{b:02x}")
    } else {
        format!("{b:02x}")
    }
}

/// C's `strtol` over bytes that end at the first NUL: (value, bytes consumed, overflowed).
fn strtol(s: &[u8]) -> (i64, usize, bool) {
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
    let start = i;
    let (mut v, mut overflow) = (0i64, false);
    while let Some(d) = s.get(i).filter(|b| b.is_ascii_digit()) {
        let d = i64::from(d - b'0');
        if !overflow {
            let next = v.checked_mul(10).and_then(|v| {
                if negative {
                    v.checked_sub(d)
                } else {
                    v.checked_add(d)
                }
            });
            match next {
                Some(n) => v = n,
                None => overflow = true,
            }
        }
        i += 1;
    }
    if i == start {
        return (0, 0, false);
    }
    if overflow {
        v = if negative { i64::MIN } else { i64::MAX };
    }
    (v, i, overflow)
}

/// glibc's `dirname`.
fn dirname(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.starts_with('/') { "/" } else { "." }.to_string();
    }
    match trimmed.rfind('/') {
        None => ".".to_string(),
        Some(i) => {
            let parent = trimmed[..i].trim_end_matches('/');
            if parent.is_empty() {
                "/".to_string()
            } else {
                parent.to_string()
            }
        }
    }
}

/// The state `redis-check-aof` keeps across the files of one run.
struct Checker {
    /// Line counter: starts at 1 and is never reset between files.
    line: i64,
    /// Where the last read started: the offset an error names.
    epos: u64,
    /// Raw bytes: a bad prefix byte is echoed as it was read.
    error: Vec<u8>,
    to_timestamp: i64,
    /// The buffer `*` lines are read into, as C leaves it between reads: a short line
    /// overwrites only its own bytes and NUL, so an error may show a byte left over from an
    /// earlier line. (Redis reads `$` lines into a buffer that, in practice, holds zeros there.)
    count_buf: [u8; COUNT_LINE_BUF],
}

/// A file being checked: buffered reads with the position and end-of-file flag `FILE*` keeps.
struct Input {
    r: BufReader<File>,
    pos: u64,
    eof: bool,
}

impl Input {
    fn peek(&mut self) -> Option<u8> {
        match self.r.fill_buf() {
            Ok(b) if !b.is_empty() => Some(b[0]),
            Ok(_) => {
                self.eof = true;
                None
            }
            Err(e) => {
                println!("Failed to read from AOF: {}, aborting...", strerror(&e));
                die()
            }
        }
    }

    /// `fgets(buf, size, fp)`: up to `size - 1` bytes, stopping after a newline. Empty when
    /// nothing could be read.
    fn fgets(&mut self, size: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while out.len() + 1 < size {
            let buf = match self.r.fill_buf() {
                Ok(b) => b,
                Err(e) => {
                    println!("Failed to read from AOF: {}, aborting...", strerror(&e));
                    die()
                }
            };
            if buf.is_empty() {
                self.eof = true;
                break;
            }
            let room = size - 1 - out.len();
            let window = &buf[..buf.len().min(room)];
            let (take, nl) = match window.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (window.len(), false),
            };
            out.extend_from_slice(&window[..take]);
            self.r.consume(take);
            self.pos += take as u64;
            if nl {
                break;
            }
        }
        out
    }

    /// `fread` of `len` bytes without keeping them: returns how many were read, the first
    /// bytes (up to `keep`) and the last two.
    fn skim(&mut self, len: u64, keep: usize) -> (u64, Vec<u8>, [u8; 2]) {
        let (mut got, mut head, mut last) = (0u64, Vec::new(), [0u8; 2]);
        while got < len {
            let buf = match self.r.fill_buf() {
                Ok(b) => b,
                Err(e) => {
                    println!("Failed to read from AOF: {}, aborting...", strerror(&e));
                    die()
                }
            };
            if buf.is_empty() {
                self.eof = true;
                break;
            }
            let take = buf
                .len()
                .min(usize::try_from(len - got).unwrap_or(usize::MAX));
            let piece = &buf[..take];
            if head.len() < keep {
                let n = (keep - head.len()).min(piece.len());
                head.extend_from_slice(&piece[..n]);
            }
            for &b in piece.iter().rev().take(2).rev() {
                last = [last[1], b];
            }
            self.r.consume(take);
            self.pos += take as u64;
            got += take as u64;
        }
        (got, head, last)
    }
}

/// The byte at `i` of a C string buffer holding `line` and its terminating NUL.
fn at(line: &[u8], i: usize) -> u8 {
    line.get(i).copied().unwrap_or(0)
}

impl Checker {
    fn set_error(&mut self, msg: String) {
        self.set_error_bytes(msg.as_bytes());
    }

    fn set_error_bytes(&mut self, msg: &[u8]) {
        self.error = format!("0x{:>16x}: ", self.epos).into_bytes();
        self.error.extend_from_slice(msg);
    }

    /// Checks the two bytes at `a`, `b` are `\r\n`, counting the line.
    fn consume_newline(&mut self, a: u8, b: u8) -> bool {
        if (a, b) != (b'\r', b'\n') {
            self.set_error(format!(
                "Expected \\r\\n, got: {}{}",
                c_char_hex(a),
                c_char_hex(b)
            ));
            return false;
        }
        self.line += 1;
        true
    }

    fn read_long(&mut self, f: &mut Input, prefix: u8) -> Option<i64> {
        self.epos = f.pos;
        let buf = f.fgets(COUNT_LINE_BUF);
        let first = *buf.first()?;
        let mut zeroed = [0u8; COUNT_LINE_BUF];
        let cbuf = if prefix == b'*' {
            &mut self.count_buf
        } else {
            &mut zeroed
        };
        cbuf[..buf.len()].copy_from_slice(&buf);
        cbuf[buf.len()] = 0;
        let (v, used, _) = strtol(&buf[1..]);
        let end = 1 + used;
        let (a, b) = (cbuf[end], cbuf[(end + 1).min(COUNT_LINE_BUF - 1)]);
        if first != prefix {
            let mut msg = format!("Expected prefix '{}', got: '", prefix as char).into_bytes();
            msg.push(first);
            msg.push(b'\'');
            self.set_error_bytes(&msg);
            return None;
        }
        if !self.consume_newline(a, b) {
            return None;
        }
        Some(v)
    }

    /// Reads one `$<len>\r\n<bytes>\r\n`; returns the string's bytes up to its first NUL, or
    /// the first 6 of them (enough to recognise MULTI and EXEC).
    fn read_string(&mut self, f: &mut Input) -> Option<Vec<u8>> {
        let len = self.read_long(f, b'$')?;
        if !(0..=i64::MAX - 2).contains(&len) {
            self.set_error(format!(
                "Expected to read string of {len} bytes, which is not in the suitable range"
            ));
            return None;
        }
        let total = len + 2;
        self.epos = f.pos;
        let (got, head, last) = f.skim(total as u64, 6);
        if got != total as u64 {
            self.set_error(format!("Expected to read {total} bytes, got {got} bytes"));
            return None;
        }
        if !self.consume_newline(last[0], last[1]) {
            return None;
        }
        let body = &head[..head.len().min(len as usize)];
        Some(body.split(|&b| b == 0).next().unwrap_or_default().to_vec())
    }

    fn process_resp(&mut self, f: &mut Input, filepath: &str, multi: &mut i64) -> bool {
        let Some(argc) = self.read_long(f, b'*') else {
            return false;
        };
        let mut i = 0;
        while i < argc {
            let Some(s) = self.read_string(f) else {
                return false;
            };
            if i == 0 {
                if s.eq_ignore_ascii_case(b"multi") {
                    let was = *multi;
                    *multi += 1;
                    if was != 0 {
                        self.set_error(format!("Unexpected MULTI in AOF {filepath}"));
                        return false;
                    }
                } else if s.eq_ignore_ascii_case(b"exec") {
                    *multi -= 1;
                    if *multi != 0 {
                        self.set_error(format!("Unexpected EXEC in AOF {filepath}"));
                        return false;
                    }
                }
            }
            i += 1;
        }
        true
    }

    /// Returns false when the file was cut at a timestamp annotation.
    fn process_annotation(
        &mut self,
        f: &mut Input,
        file: &File,
        filepath: &str,
        last_file: bool,
    ) -> bool {
        self.epos = f.pos;
        let buf = f.fgets(ANNOTATION_LINE_BUF);
        if buf.is_empty() {
            println!("Failed to read annotations from AOF {filepath}, aborting...");
            die()
        }
        if self.to_timestamp == 0 || !buf.starts_with(b"#TS:") {
            return true;
        }
        let line = buf.split(|&b| b == 0).next().unwrap_or_default();
        let (ts, used, overflow) = strtol(&line[4..]);
        if overflow || at(line, 4 + used) != b'\r' {
            println!("Invalid timestamp annotation");
            die()
        }
        if ts <= self.to_timestamp {
            return true;
        }
        if self.epos == 0 {
            println!(
                "AOF {filepath} has nothing before timestamp {}, aborting...",
                self.to_timestamp
            );
            die()
        }
        if !last_file {
            println!(
                "Failed to truncate AOF {filepath} to timestamp {} to offset {} because it is not the last file.",
                self.to_timestamp, self.epos
            );
            println!("If you insist, please delete all files after this file according to the manifest file and delete the corresponding records in manifest file manually. Then re-run redis-check-aof.");
            die()
        }
        if file.set_len(self.epos).is_err() {
            println!(
                "Failed to truncate AOF {filepath} to timestamp {}",
                self.to_timestamp
            );
            die()
        }
        false
    }

    /// Checks an RDB snapshot at the start of `file`, printing `redis-check-rdb`'s summary.
    /// Returns where the snapshot ends.
    fn check_rdb(&mut self, file: &mut File, name: &str) -> u64 {
        let mut data = Vec::new();
        if let Err(e) = file.read_to_end(&mut data) {
            println!(
                "Failed to read from AOF {name}: {}, aborting...",
                strerror(&e)
            );
            die()
        }
        println!("[offset 0] Checking RDB file {name}");
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let (mut keys, mut expires, mut expired) = (0u64, 0u64, 0u64);
        let result = RdbReader::new(&data).and_then(|mut r| loop {
            match r.next_entry() {
                Ok(Some(e)) => {
                    keys += 1;
                    if let Some(at) = e.expire_at_ms {
                        expires += 1;
                        if at < now_ms {
                            expired += 1;
                        }
                    }
                }
                Ok(None) => break Ok((data.len(), r.version())),
                Err(e) => match rdb_tail_start(&e) {
                    Some(end) => break Ok((end, r.version())),
                    None => break Err(e),
                },
            }
        });
        let summary = |keys, expires, expired| {
            println!("[info] {keys} keys read");
            println!("[info] {expires} expires");
            println!("[info] {expired} already expired");
        };
        match result {
            Ok((end, version)) => {
                let checksum = data.get(end.saturating_sub(8)..end).unwrap_or_default();
                if version >= 5 && checksum.iter().all(|&b| b == 0) {
                    println!("[offset {end}] RDB file was saved with checksum disabled: no check performed.");
                } else if version >= 5 {
                    println!("[offset {end}] Checksum OK");
                }
                println!("[offset {end}] \\o/ RDB looks OK! \\o/");
                summary(keys, expires, expired);
                println!("RDB preamble is OK, proceeding with AOF tail...");
                end as u64
            }
            Err(e) => {
                println!("--- RDB ERROR DETECTED ---");
                let (offset, msg) = match e.kind {
                    RdbErrorKind::Truncated => {
                        (e.offset, "Unexpected EOF reading RDB file".to_string())
                    }
                    RdbErrorKind::Checksum { .. } => (e.offset + 8, "RDB CRC error".to_string()),
                    ref k => (e.offset, k.to_string()),
                };
                println!("[offset {offset}] {msg}");
                summary(keys, expires, expired);
                println!("RDB preamble of AOF file is not sane, aborting.");
                die()
            }
        }
    }

    /// Checks one file: an old-style AOF (with or without an RDB preamble) or one file of a
    /// multi-part AOF.
    fn check_single(
        &mut self,
        name: &str,
        filepath: &str,
        last_file: bool,
        fix: bool,
        preamble: bool,
    ) -> Outcome {
        let mut file = match OpenOptions::new().read(true).write(true).open(filepath) {
            Ok(f) => f,
            Err(e) => {
                println!("Cannot open file {filepath}: {}, aborting...", strerror(&e));
                die()
            }
        };
        let size = match file.metadata() {
            Ok(m) => m.len(),
            Err(_) => {
                println!("Cannot stat file: {name}, aborting...");
                die()
            }
        };
        if size == 0 {
            return Outcome::Empty;
        }
        let start = if preamble {
            self.check_rdb(&mut file, name)
        } else {
            0
        };
        let reader = match file.try_clone() {
            Ok(mut f) => {
                if f.seek(SeekFrom::Start(start)).is_err() {
                    println!("Failed to fseek in AOF {name}");
                    die()
                }
                f
            }
            Err(e) => {
                println!("Cannot open file {filepath}: {}, aborting...", strerror(&e));
                die()
            }
        };
        let mut f = Input {
            r: BufReader::new(reader),
            pos: start,
            eof: false,
        };
        let mut pos = start;
        let mut multi = 0i64;
        loop {
            if multi == 0 {
                pos = f.pos;
            }
            match f.peek() {
                None => break,
                Some(b'#') => {
                    if !self.process_annotation(&mut f, &file, filepath, last_file) {
                        return Outcome::TimestampTruncated;
                    }
                }
                Some(b'*') => {
                    if !self.process_resp(&mut f, filepath, &mut multi) {
                        break;
                    }
                }
                Some(_) => {
                    println!("AOF {name} format error");
                    break;
                }
            }
        }
        if f.eof && multi != 0 && self.error.is_empty() {
            self.set_error("Reached EOF before reading EXEC for MULTI".to_string());
        }
        if !self.error.is_empty() {
            let mut out = io::stdout().lock();
            // Printed as a C string: a NUL byte read as the bad prefix ends it.
            let shown = self.error.split(|&b| b == 0).next().unwrap_or_default();
            let _ = out.write_all(shown);
            let _ = out.write_all(b"\n");
        }
        let diff = size - pos;
        if diff == 0 && self.to_timestamp != 0 {
            println!(
                "Truncate nothing in AOF {name} to timestamp {}",
                self.to_timestamp
            );
            return Outcome::Ok;
        }
        println!(
            "AOF analyzed: filename={name}, size={size}, ok_up_to={pos}, ok_up_to_line={}, diff={diff}",
            self.line
        );
        if diff > 0 {
            if !fix {
                println!("AOF {name} is not valid. Use the --fix option to try fixing it.");
                die()
            }
            if !last_file {
                println!("Failed to truncate AOF {name} because it is not the last file");
                die()
            }
            println!(
                "This will shrink the AOF {name} from {size} bytes, with {diff} bytes, to {pos} bytes"
            );
            print!("Continue? [y/N]: ");
            let _ = io::stdout().flush();
            let mut answer = [0u8; 1];
            let n = io::stdin().read(&mut answer).unwrap_or(0);
            if n == 0 || !answer[0].eq_ignore_ascii_case(&b'y') {
                println!("Aborting...");
                die()
            }
            if file.set_len(pos).is_err() {
                println!("Failed to truncate AOF {name}");
                die()
            }
            return Outcome::Truncated;
        }
        Outcome::Ok
    }

    fn report(&self, what: &str, name: &str, outcome: Outcome) {
        match outcome {
            Outcome::Ok => println!("{what}{name} is valid"),
            Outcome::Empty => println!("{what}{name} is empty"),
            Outcome::TimestampTruncated => println!(
                "Successfully truncated AOF {name} to timestamp {}",
                self.to_timestamp
            ),
            Outcome::Truncated => println!("Successfully truncated AOF {name}"),
        }
    }

    fn check_multi_part(&mut self, dirpath: &str, manifest_path: &str, fix: bool) {
        println!("Start checking Multi Part AOF");
        let text = match std::fs::read(manifest_path) {
            Ok(t) => t,
            Err(e) => {
                server_log(&format!(
                    "Fatal error: can't open the AOF manifest file {manifest_path} for reading: {}",
                    strerror(&e)
                ));
                die()
            }
        };
        let manifest = match Manifest::parse(&text) {
            Ok(m) => m,
            Err(e) => {
                server_log("\n*** FATAL AOF MANIFEST FILE ERROR ***\n");
                if let Some((n, line)) = &e.line {
                    server_log(&format!("Reading the manifest file, at line {n}\n"));
                    let mut msg = b">>> '".to_vec();
                    msg.extend_from_slice(line);
                    msg.extend_from_slice(b"'\n");
                    server_log_bytes(&msg);
                }
                server_log(&format!("{e}\n"));
                die()
            }
        };
        let total = usize::from(manifest.base.is_some()) + manifest.incr.len();
        let mut seen = 0;
        if let Some(base) = &manifest.base {
            let path = format!("{dirpath}/{}", base.name);
            seen += 1;
            let rdb = file_is_rdb(&path);
            println!(
                "Start to check BASE AOF ({} format).",
                if rdb { "RDB" } else { "RESP" }
            );
            let outcome = self.check_single(&base.name, &path, seen == total, fix, rdb);
            self.report("BASE AOF ", &base.name, outcome);
        }
        if !manifest.incr.is_empty() {
            println!("Start to check INCR files.");
            for incr in &manifest.incr {
                let path = format!("{dirpath}/{}", incr.name);
                seen += 1;
                let outcome = self.check_single(&incr.name, &path, seen == total, fix, false);
                self.report("INCR AOF ", &incr.name, outcome);
            }
        }
        println!("All AOF files and manifest are valid");
    }
}

fn open_or_die(path: &str) -> File {
    match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            println!("Cannot open file {path}: {}", strerror(&e));
            die()
        }
    }
}

fn size_or_die(f: &File, path: &str) -> u64 {
    match f.metadata() {
        Ok(m) => m.len(),
        Err(_) => {
            println!("Cannot stat file: {path}");
            die()
        }
    }
}

/// At least 8 bytes, the first five `REDIS`.
fn file_is_rdb(path: &str) -> bool {
    let mut f = open_or_die(path);
    if size_or_die(&f, path) < 8 {
        return false;
    }
    let mut sig = [0u8; 5];
    f.read_exact(&mut sig).is_ok() && sig == RDB_MAGIC
}

/// A manifest has a line (read in chunks of 1024 bytes, `#` lines skipped) starting `file`.
fn file_is_manifest(path: &str) -> bool {
    let f = open_or_die(path);
    if size_or_die(&f, path) == 0 {
        return false;
    }
    let mut input = Input {
        r: BufReader::new(f),
        pos: 0,
        eof: false,
    };
    let mut found = false;
    loop {
        let chunk = input.fgets(MANIFEST_LINE_BUF);
        if chunk.is_empty() {
            return found;
        }
        if chunk[0] != b'#' && chunk.starts_with(b"file") {
            found = true;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let program = args.first().map_or("keel-check-aof", String::as_str);
    let usage = || -> ! {
        println!(
            "Usage: {program} [--fix|--truncate-to-timestamp $timestamp] <file.manifest|file.aof>"
        );
        die()
    };
    let mut checker = Checker {
        line: 1,
        epos: 0,
        error: Vec::new(),
        to_timestamp: 0,
        count_buf: [0; COUNT_LINE_BUF],
    };
    let mut fix = false;
    let filepath = match args.len() {
        2 => args[1].as_str(),
        3 if args[1] == "--fix" => {
            fix = true;
            args[2].as_str()
        }
        4 if args[1] == "--truncate-to-timestamp" => {
            let t = args[2].as_bytes();
            let (ts, used, overflow) = strtol(t);
            if overflow || used != t.len() {
                println!("Invalid timestamp, aborting...");
                die()
            }
            checker.to_timestamp = ts;
            args[3].as_str()
        }
        _ => usage(),
    };
    let dirpath = dirname(filepath);
    if file_is_manifest(filepath) {
        checker.check_multi_part(&dirpath, filepath, fix);
    } else {
        let rdb = file_is_rdb(filepath);
        println!("Start checking Old-Style AOF");
        let outcome = checker.check_single(filepath, filepath, true, fix, rdb);
        checker.report("AOF ", filepath, outcome);
    }
    let _ = io::stdout().flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirname_like_glibc() {
        assert_eq!(dirname("a.manifest"), ".");
        assert_eq!(dirname("d/a.manifest"), "d");
        assert_eq!(dirname("/a"), "/");
        assert_eq!(dirname("/x/y//"), "/x");
        assert_eq!(dirname("/"), "/");
        assert_eq!(dirname("d//a"), "d");
    }

    #[test]
    fn c_helpers() {
        assert_eq!(c_char_hex(0x58), "58");
        assert_eq!(c_char_hex(0xfe), "fffffffe");
        assert_eq!(strtol(b"12\r\n"), (12, 2, false));
        assert_eq!(strtol(b"\r\n"), (0, 0, false));
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_781), (2026, 11, 24));
    }
}
