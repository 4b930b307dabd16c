//! The multi-part AOF manifest (Redis 7.0): which files make up the append-only log, and the
//! names Redis gives them.
//!
//! Pure functions only: parsing and formatting the manifest text, naming files, and the
//! bookkeeping a rewrite does on the list. Creating, renaming, fsyncing and deleting the files is
//! the caller's job; `AOF.md` spells out the order that keeps a rewrite crash-safe.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::command::c_strtol;

/// Suffix of the manifest's name: `<appendfilename>.manifest`.
pub const MANIFEST_SUFFIX: &str = ".manifest";
/// Prefix Redis puts on files it writes before renaming them into place.
pub const TEMP_PREFIX: &str = "temp-";
const BASE_SUFFIX: &str = ".base";
const INCR_SUFFIX: &str = ".incr";
const RDB_FORMAT_SUFFIX: &str = ".rdb";
const AOF_FORMAT_SUFFIX: &str = ".aof";
/// Redis reads the manifest with `fgets` into a buffer of this many bytes plus one.
const MANIFEST_MAX_LINE_BYTES: usize = 1024;

/// What a file listed in the manifest is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AofFileKind {
    /// `b`: the snapshot the log starts from (RDB or commands). At most one.
    Base,
    /// `h`: replaced by a rewrite, kept only until it is deleted.
    History,
    /// `i`: commands appended after the base, in sequence order.
    Incr,
}

impl AofFileKind {
    /// The manifest's one-letter type.
    pub fn letter(self) -> char {
        match self {
            AofFileKind::Base => 'b',
            AofFileKind::History => 'h',
            AofFileKind::Incr => 'i',
        }
    }
}

/// One file line of the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AofFile {
    /// A bare file name inside the append-only directory.
    pub name: String,
    /// Redis reads it with `atoll`: any non-zero value, negative ones included.
    pub seq: i64,
    pub kind: AofFileKind,
}

impl AofFile {
    /// Where the file lies, given the append-only directory.
    pub fn path(&self, dir: &Path) -> PathBuf {
        dir.join(&self.name)
    }
}

/// Why a manifest was refused. Display is Redis's own text for each case.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ManifestErrorKind {
    #[error("Found an empty AOF manifest")]
    Empty,
    #[error("The AOF manifest file contains too long line")]
    LineTooLong,
    #[error("Invalid AOF manifest file format")]
    InvalidFormat,
    #[error("File can't be a path, just a filename")]
    NotABaseName,
    #[error("Found duplicate base file information")]
    DuplicateBase,
    #[error("Found a non-monotonic sequence number")]
    NonMonotonicSeq,
    #[error("Unknown AOF file type")]
    UnknownType,
}

/// A refused manifest: why, and for errors tied to a line, its number (from 1, comment lines
/// counted) and its text after trimming, as Redis reports them.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{kind}")]
pub struct ManifestError {
    pub kind: ManifestErrorKind,
    pub line: Option<(usize, Vec<u8>)>,
}

/// The parsed manifest. Load order is the base, then `incr` in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<AofFile>,
    pub incr: Vec<AofFile>,
    /// Newest first, as Redis keeps them.
    pub history: Vec<AofFile>,
    /// Sequence of the current base: the next base gets one more.
    pub curr_base_seq: i64,
    /// Sequence of the last incremental file: the next one gets one more.
    pub curr_incr_seq: i64,
}

impl Manifest {
    /// Parses manifest bytes with Redis 7.0's rules: `#` lines are skipped; every other line
    /// must end in a newline and hold `file <name> seq <n> type <b|h|i>` (keys in any case and
    /// order, unknown key/value pairs ignored, names quoted like `redis-cli` arguments); blank
    /// lines are errors; one base at most; incremental sequence numbers strictly increase.
    pub fn parse(text: &[u8]) -> Result<Manifest, ManifestError> {
        let mut m = Manifest::default();
        let mut max_incr_seq: i64 = 0;
        let mut linenum = 0usize;
        let mut rest = text;
        if rest.is_empty() {
            return Err(ManifestError {
                kind: ManifestErrorKind::Empty,
                line: None,
            });
        }
        while !rest.is_empty() {
            let window = &rest[..rest.len().min(MANIFEST_MAX_LINE_BYTES)];
            let take = window
                .iter()
                .position(|&b| b == b'\n')
                .map_or(window.len(), |i| i + 1);
            let chunk = &rest[..take];
            rest = &rest[take..];
            linenum += 1;
            if chunk.first() == Some(&b'#') {
                continue;
            }
            // C string functions stop at the first NUL.
            let chunk = chunk.split(|&b| b == 0).next().unwrap_or_default();
            if !chunk.contains(&b'\n') {
                return Err(ManifestError {
                    kind: ManifestErrorKind::LineTooLong,
                    line: None,
                });
            }
            let line = trim(chunk);
            let err = |kind| ManifestError {
                kind,
                line: Some((linenum, line.to_vec())),
            };
            if line.is_empty() {
                return Err(err(ManifestErrorKind::InvalidFormat));
            }
            let args = split_args(line).ok_or_else(|| err(ManifestErrorKind::InvalidFormat))?;
            if args.len() < 6 || args.len() % 2 != 0 {
                return Err(err(ManifestErrorKind::InvalidFormat));
            }
            let (mut name, mut seq, mut kind) = (None, 0i64, 0u8);
            for pair in args.chunks_exact(2) {
                let (key, value) = (&pair[0], &pair[1]);
                if key.eq_ignore_ascii_case(b"file") {
                    let value = value.split(|&b| b == 0).next().unwrap_or_default();
                    if value.contains(&b'/') || value.contains(&b'\\') {
                        return Err(err(ManifestErrorKind::NotABaseName));
                    }
                    // Keel keeps names as text: a name that is not UTF-8 is refused.
                    name = Some(
                        String::from_utf8(value.to_vec())
                            .map_err(|_| err(ManifestErrorKind::InvalidFormat))?,
                    );
                } else if key.eq_ignore_ascii_case(b"seq") {
                    seq = c_strtol(value).0;
                } else if key.eq_ignore_ascii_case(b"type") {
                    kind = value.first().copied().unwrap_or(0);
                }
            }
            let Some(name) = name.filter(|_| seq != 0 && kind != 0) else {
                return Err(err(ManifestErrorKind::InvalidFormat));
            };
            match kind {
                b'b' => {
                    if m.base.is_some() {
                        return Err(err(ManifestErrorKind::DuplicateBase));
                    }
                    m.curr_base_seq = seq;
                    m.base = Some(AofFile {
                        name,
                        seq,
                        kind: AofFileKind::Base,
                    });
                }
                b'h' => m.history.push(AofFile {
                    name,
                    seq,
                    kind: AofFileKind::History,
                }),
                b'i' => {
                    if seq <= max_incr_seq {
                        return Err(err(ManifestErrorKind::NonMonotonicSeq));
                    }
                    max_incr_seq = seq;
                    m.curr_incr_seq = seq;
                    m.incr.push(AofFile {
                        name,
                        seq,
                        kind: AofFileKind::Incr,
                    });
                }
                _ => return Err(err(ManifestErrorKind::UnknownType)),
            }
        }
        Ok(m)
    }

    /// The manifest as Redis writes it: the base, then history, then incremental files, one
    /// `file <name> seq <n> type <t>\n` line each, names quoted when they need it.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let all = self.base.iter().chain(&self.history).chain(&self.incr);
        for f in all {
            out.push_str("file ");
            if needs_repr(f.name.as_bytes()) {
                out.push_str(&repr(f.name.as_bytes()));
            } else {
                out.push_str(&f.name);
            }
            out.push_str(&format!(" seq {} type {}\n", f.seq, f.kind.letter()));
        }
        out
    }

    /// True when it lists neither a base nor an incremental file: there is nothing to load.
    pub fn is_empty(&self) -> bool {
        self.base.is_none() && self.incr.is_empty()
    }

    /// The files to load, in order: the base, then every incremental file.
    pub fn load_order(&self) -> impl Iterator<Item = &AofFile> {
        self.base.iter().chain(&self.incr)
    }

    /// Adds a new incremental file after the others (the one a rewrite starts appending to)
    /// and returns it.
    pub fn next_incr(&mut self, appendfilename: &str) -> AofFile {
        self.curr_incr_seq += 1;
        let f = AofFile {
            name: incr_name(appendfilename, self.curr_incr_seq),
            seq: self.curr_incr_seq,
            kind: AofFileKind::Incr,
        };
        self.incr.push(f.clone());
        f
    }

    /// The incremental file to append to: the last one, or a new one if there is none.
    pub fn last_incr_or_new(&mut self, appendfilename: &str) -> AofFile {
        match self.incr.last() {
            Some(f) => f.clone(),
            None => self.next_incr(appendfilename),
        }
    }

    /// Installs a new base (RDB-format when `rdb`, as with `aof-use-rdb-preamble yes`) and
    /// moves the old base, if any, to the front of the history. Returns the new base.
    pub fn new_base(&mut self, appendfilename: &str, rdb: bool) -> AofFile {
        if let Some(mut old) = self.base.take() {
            old.kind = AofFileKind::History;
            self.history.insert(0, old);
        }
        self.curr_base_seq += 1;
        let f = AofFile {
            name: base_name(appendfilename, self.curr_base_seq, rdb),
            seq: self.curr_base_seq,
            kind: AofFileKind::Base,
        };
        self.base = Some(f.clone());
        f
    }

    /// After a rewrite succeeds, the incremental files it covered become history (newest
    /// first). With `keep_last` (the log is on and appending to the last file, which was opened
    /// when the rewrite started) the last one stays.
    pub fn mark_rewritten_incr_as_history(&mut self, keep_last: bool) {
        let keep = usize::from(keep_last && !self.incr.is_empty());
        let covered = self.incr.len() - keep;
        for mut f in self.incr.drain(..covered) {
            f.kind = AofFileKind::History;
            self.history.insert(0, f);
        }
    }

    /// Removes and returns the history files, for the caller to delete once the manifest
    /// without them is on disk.
    pub fn take_history(&mut self) -> Vec<AofFile> {
        std::mem::take(&mut self.history)
    }

    /// What Redis 7 does to adopt an old single-file AOF named `appendfilename`: the manifest
    /// gets that file, under its own name, as base with sequence 1 (incremental files and
    /// history are kept). The caller then writes the manifest and moves the file into the
    /// append-only directory, in that order.
    pub fn adopt_old_style_file(&mut self, appendfilename: &str) {
        self.base = Some(AofFile {
            name: appendfilename.to_string(),
            seq: 1,
            kind: AofFileKind::Base,
        });
        self.curr_base_seq = 1;
    }
}

/// Whether Redis 7 would upgrade an old single-file AOF at start-up. `old_file_exists` says
/// whether `appendfilename` exists in the working directory, `dir_exists` whether the
/// append-only directory does, `manifest` is what was loaded from it (empty if none), and
/// `in_dir_exists` whether `appendfilename` already exists inside the directory. Redis upgrades
/// when the old file exists and either the directory is missing, or the manifest lists
/// nothing, or it lists only a base of that name which is not yet in the directory (a crash
/// between writing the manifest and moving the file).
pub fn needs_upgrade(
    old_file_exists: bool,
    dir_exists: bool,
    manifest: &Manifest,
    appendfilename: &str,
    in_dir_exists: bool,
) -> bool {
    if !old_file_exists {
        return false;
    }
    let interrupted = manifest.incr.is_empty()
        && manifest
            .base
            .as_ref()
            .is_some_and(|b| b.name == appendfilename)
        && !in_dir_exists;
    !dir_exists || manifest.is_empty() || interrupted
}

/// `<appendfilename>.manifest`
pub fn manifest_name(appendfilename: &str) -> String {
    format!("{appendfilename}{MANIFEST_SUFFIX}")
}

/// `temp-<appendfilename>.manifest`: written, fsynced, then renamed over the manifest.
pub fn temp_manifest_name(appendfilename: &str) -> String {
    format!("{TEMP_PREFIX}{appendfilename}{MANIFEST_SUFFIX}")
}

/// `<appendfilename>.<seq>.base.rdb` or `.base.aof`.
pub fn base_name(appendfilename: &str, seq: i64, rdb: bool) -> String {
    let format = if rdb {
        RDB_FORMAT_SUFFIX
    } else {
        AOF_FORMAT_SUFFIX
    };
    format!("{appendfilename}.{seq}{BASE_SUFFIX}{format}")
}

/// `<appendfilename>.<seq>.incr.aof`
pub fn incr_name(appendfilename: &str, seq: i64) -> String {
    format!("{appendfilename}.{seq}{INCR_SUFFIX}{AOF_FORMAT_SUFFIX}")
}

/// `temp-<appendfilename>.incr`: where Redis appends while the log is being switched on
/// (a rewrite with no incremental file yet); renamed to the next incremental name when the
/// rewrite completes.
pub fn temp_incr_name(appendfilename: &str) -> String {
    format!("{TEMP_PREFIX}{appendfilename}{INCR_SUFFIX}")
}

/// `temp-rewriteaof-bg-<pid>.aof`: the finished rewrite, in the working directory, before the
/// parent renames it into the append-only directory as the new base.
pub fn temp_rewrite_bg_name(pid: u32) -> String {
    format!("temp-rewriteaof-bg-{pid}.aof")
}

/// `temp-rewriteaof-<pid>.aof`: the rewrite while it is being written.
pub fn temp_rewrite_name(pid: u32) -> String {
    format!("temp-rewriteaof-{pid}.aof")
}

/// The paths to load, in order (base first), inside the append-only directory `dir`.
pub fn files_to_load(dir: &Path, manifest: &Manifest) -> Vec<PathBuf> {
    manifest.load_order().map(|f| f.path(dir)).collect()
}

/// One file to load, with what the loader must know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFile {
    pub path: PathBuf,
    /// `Base` or `Incr`. Only a base may start with an RDB snapshot
    /// ([`super::detect_file_format`] tells).
    pub kind: AofFileKind,
    /// Only the last file may be truncated; a short read in any other is fatal, as in Redis
    /// ("Fatal error: the truncated file is not the last file").
    pub last: bool,
}

/// [`files_to_load`] with each file's kind and whether it is the last one.
pub fn load_plan(dir: &Path, manifest: &Manifest) -> Vec<LoadFile> {
    let total = manifest.load_order().count();
    manifest
        .load_order()
        .enumerate()
        .map(|(i, f)| LoadFile {
            path: f.path(dir),
            kind: f.kind,
            last: i + 1 == total,
        })
        .collect()
}

fn trim(s: &[u8]) -> &[u8] {
    let strip = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let start = s.iter().position(|b| !strip(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !strip(b)).map_or(start, |i| i + 1);
    &s[start..end]
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t'..=b'\r')
}

/// Splits a line into arguments the way Redis splits configuration and manifest lines:
/// white space separates; `"..."` takes `\xHH`, `\n`, `\r`, `\t`, `\b`, `\a` and `\<c>`
/// escapes; `'...'` takes `\'`; a closing quote must be followed by white space or the end.
/// `None` for unbalanced quotes.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while at(i) != 0 && is_c_space(at(i)) {
            i += 1;
        }
        if at(i) == 0 {
            return Some(args);
        }
        let (mut inq, mut insq, mut done) = (false, false, false);
        let mut cur = Vec::new();
        while !done {
            let c = at(i);
            if inq {
                let hex = |b: u8| (b as char).to_digit(16);
                if c == b'\\' && at(i + 1) == b'x' {
                    if let (Some(h), Some(l)) = (hex(at(i + 2)), hex(at(i + 3))) {
                        cur.push((h * 16 + l) as u8);
                        i += 3;
                        i += 1;
                        continue;
                    }
                }
                if c == b'\\' && at(i + 1) != 0 {
                    i += 1;
                    cur.push(match at(i) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(i + 1) != 0 && !is_c_space(at(i + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else if insq {
                if c == b'\\' && at(i + 1) == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(i + 1) != 0 && !is_c_space(at(i + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    _ => cur.push(c),
                }
            }
            if at(i) != 0 {
                i += 1;
            }
        }
        args.push(cur);
    }
}

/// Whether Redis quotes a name when writing it to the manifest.
fn needs_repr(s: &[u8]) -> bool {
    s.iter()
        .any(|&b| matches!(b, b'\\' | b'"') || !(0x20..=0x7e).contains(&b) || b == b' ')
}

/// A quoted form that [`split_args`] reads back to the same bytes.
fn repr(s: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in s {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err_of(text: &str) -> ManifestError {
        Manifest::parse(text.as_bytes()).expect_err(text)
    }

    #[test]
    fn parses_and_formats_round_trip() {
        let text = "file appendonly.aof.2.base.rdb seq 2 type b\n\
                    file appendonly.aof.1.base.aof seq 1 type h\n\
                    file appendonly.aof.2.incr.aof seq 2 type i\n\
                    file appendonly.aof.3.incr.aof seq 3 type i\n";
        let m = Manifest::parse(text.as_bytes()).expect("parses");
        assert_eq!(m.base.as_ref().map(|b| b.seq), Some(2));
        assert_eq!(m.history.len(), 1);
        assert_eq!(m.incr.len(), 2);
        assert_eq!((m.curr_base_seq, m.curr_incr_seq), (2, 3));
        assert_eq!(m.to_text(), text);
        let names: Vec<_> = m.load_order().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "appendonly.aof.2.base.rdb",
                "appendonly.aof.2.incr.aof",
                "appendonly.aof.3.incr.aof"
            ]
        );
        assert_eq!(
            files_to_load(Path::new("/d"), &m)[0],
            PathBuf::from("/d/appendonly.aof.2.base.rdb")
        );
        let plan = load_plan(Path::new("/d"), &m);
        let shape: Vec<_> = plan.iter().map(|f| (f.kind, f.last)).collect();
        assert_eq!(
            shape,
            [
                (AofFileKind::Base, false),
                (AofFileKind::Incr, false),
                (AofFileKind::Incr, true)
            ]
        );
        assert_eq!(plan[2].path, PathBuf::from("/d/appendonly.aof.3.incr.aof"));
        assert!(load_plan(Path::new("/d"), &Manifest::default()).is_empty());
    }

    #[test]
    fn lenient_where_redis_is() {
        // Comments, key case, key order, extra pairs, CRLF and surrounding blanks.
        let m = Manifest::parse(b"# hi\n  TYPE i SEQ 5 FILE x extra 1 \r\n").expect("parses");
        assert_eq!(m.incr[0].name, "x");
        assert_eq!(m.incr[0].seq, 5);
        // Only comments: parses, but lists nothing.
        assert!(Manifest::parse(b"#a\n#b\n").expect("parses").is_empty());
        // atoll: "7abc" is 7; a negative base sequence is accepted.
        let m = Manifest::parse(b"file a seq 7abc type b\n").expect("parses");
        assert_eq!(m.base.map(|b| b.seq), Some(7));
        assert!(Manifest::parse(b"file a seq -2 type b\n").is_ok());
    }

    #[test]
    fn errors_are_redis_texts_with_their_line() {
        let e = err_of("");
        assert_eq!(e.to_string(), "Found an empty AOF manifest");
        let e = err_of("file a seq 1 type b");
        assert_eq!(e.kind, ManifestErrorKind::LineTooLong);
        assert_eq!(e.line, None);
        let e = err_of("file a seq 1 type b\n\nfile b seq 2 type i\n");
        assert_eq!(e.to_string(), "Invalid AOF manifest file format");
        assert_eq!(e.line, Some((2, Vec::new())));
        let e = err_of("file a/b seq 1 type b\n");
        assert_eq!(e.to_string(), "File can't be a path, just a filename");
        assert_eq!(e.line, Some((1, b"file a/b seq 1 type b".to_vec())));
        assert_eq!(
            err_of("#x\nfile a seq 0 type b\n").line.map(|l| l.0),
            Some(2)
        );
        assert_eq!(
            err_of("file a seq 3\n").kind,
            ManifestErrorKind::InvalidFormat
        );
        assert_eq!(
            err_of("file a seq 1 type b\nfile b seq 1 type b\n").to_string(),
            "Found duplicate base file information"
        );
        assert_eq!(
            err_of("file a seq 3 type i\nfile b seq 3 type i\n").to_string(),
            "Found a non-monotonic sequence number"
        );
        assert_eq!(
            err_of("file a seq 3 type q\n").to_string(),
            "Unknown AOF file type"
        );
        assert_eq!(
            err_of("file \"a seq 3 type i\n").kind,
            ManifestErrorKind::InvalidFormat
        );
        assert_eq!(
            err_of("file a seq 1 type \"\"\n").kind,
            ManifestErrorKind::InvalidFormat
        );
        let long = format!("file {} seq 1 type b\n", "x".repeat(1100));
        assert_eq!(err_of(&long).kind, ManifestErrorKind::LineTooLong);
    }

    #[test]
    fn names_needing_quotes_round_trip() {
        for name in ["a b", "q\"uote", "tab\there", "caf\u{e9}", "x'y"] {
            let m = Manifest {
                incr: vec![AofFile {
                    name: name.into(),
                    seq: 1,
                    kind: AofFileKind::Incr,
                }],
                curr_incr_seq: 1,
                ..Manifest::default()
            };
            let text = m.to_text();
            if name != "x'y" {
                assert_eq!(Manifest::parse(text.as_bytes()).expect(&text), m, "{text}");
            }
        }
        assert_eq!(repr(b"a b\x01"), "\"a b\\x01\"");
        // Redis refuses a backslash in a name as it does a slash.
        assert_eq!(
            err_of("file \"b\\\\s\" seq 1 type i\n").kind,
            ManifestErrorKind::NotABaseName
        );
        assert_eq!(
            split_args(b"set \"a\\x41\\n\" 'it\\'s' plain"),
            Some(vec![
                b"set".to_vec(),
                b"aA\n".to_vec(),
                b"it's".to_vec(),
                b"plain".to_vec()
            ])
        );
        assert_eq!(split_args(b"\"a\"b"), None);
    }

    #[test]
    fn rewrite_bookkeeping() {
        let mut m = Manifest::default();
        let incr = m.last_incr_or_new("appendonly.aof");
        assert_eq!(incr.name, "appendonly.aof.1.incr.aof");
        assert_eq!(m.last_incr_or_new("appendonly.aof"), incr);
        // A rewrite: open the next incremental file, then install the new base.
        let next = m.next_incr("appendonly.aof");
        assert_eq!(next.name, "appendonly.aof.2.incr.aof");
        let base = m.new_base("appendonly.aof", true);
        assert_eq!(base.name, "appendonly.aof.1.base.rdb");
        m.mark_rewritten_incr_as_history(true);
        assert_eq!(
            m.to_text(),
            "file appendonly.aof.1.base.rdb seq 1 type b\n\
             file appendonly.aof.1.incr.aof seq 1 type h\n\
             file appendonly.aof.2.incr.aof seq 2 type i\n"
        );
        m.new_base("appendonly.aof", false);
        m.mark_rewritten_incr_as_history(false);
        let gone: Vec<_> = m.take_history().into_iter().map(|f| f.name).collect();
        assert_eq!(
            gone,
            [
                "appendonly.aof.2.incr.aof",
                "appendonly.aof.1.base.rdb",
                "appendonly.aof.1.incr.aof"
            ]
        );
        assert_eq!(m.to_text(), "file appendonly.aof.2.base.aof seq 2 type b\n");
    }

    #[test]
    fn names() {
        assert_eq!(manifest_name("appendonly.aof"), "appendonly.aof.manifest");
        assert_eq!(temp_manifest_name("a.aof"), "temp-a.aof.manifest");
        assert_eq!(base_name("a.aof", 3, false), "a.aof.3.base.aof");
        assert_eq!(incr_name("a.aof", 4), "a.aof.4.incr.aof");
        assert_eq!(temp_incr_name("a.aof"), "temp-a.aof.incr");
        assert_eq!(temp_rewrite_bg_name(12), "temp-rewriteaof-bg-12.aof");
        assert_eq!(temp_rewrite_name(12), "temp-rewriteaof-12.aof");
    }

    #[test]
    fn upgrade_rules() {
        let empty = Manifest::default();
        assert!(!needs_upgrade(
            false,
            false,
            &empty,
            "appendonly.aof",
            false
        ));
        assert!(needs_upgrade(true, false, &empty, "appendonly.aof", false));
        assert!(needs_upgrade(true, true, &empty, "appendonly.aof", false));
        let mut m = Manifest::default();
        m.adopt_old_style_file("appendonly.aof");
        assert_eq!(m.to_text(), "file appendonly.aof seq 1 type b\n");
        assert!(needs_upgrade(true, true, &m, "appendonly.aof", false));
        assert!(!needs_upgrade(true, true, &m, "appendonly.aof", true));
        m.next_incr("appendonly.aof");
        assert!(!needs_upgrade(true, true, &m, "appendonly.aof", false));
    }
}
