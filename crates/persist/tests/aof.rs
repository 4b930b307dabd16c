//! The multi-part AOF Redis 7.0.15 wrote: its manifest parses, its base is an RDB, its
//! incremental file reads into the commands that were run. Then `keel-check-aof` and Debian's
//! `redis-check-aof` run side by side on good and damaged copies and must agree.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use keel_persist::aof::{
    detect_file_format, detect_format, files_to_load, load_plan, AofFileKind, BaseFormat,
    CommandReader, Manifest,
};
use keel_persist::rdb::read_all;

const REF_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/reference/files/redis-7.0.15-multipart-aof"
);
const REDIS_CHECK_AOF: &str = "/usr/bin/redis-check-aof";

/// The reference directory, from `shared/` beside the checkout or `$KEEL_SHARED_DIR`.
fn reference_dir() -> Option<PathBuf> {
    let candidates = [
        Some(PathBuf::from(REF_DIR)),
        std::env::var_os("KEEL_SHARED_DIR").map(|d| {
            Path::new(&d)
                .join("reference/files")
                .join("redis-7.0.15-multipart-aof")
        }),
    ];
    for dir in candidates.into_iter().flatten() {
        if dir.join("appendonly.aof.manifest").is_file() {
            return Some(dir);
        }
    }
    // CI runs beside shared/: there a missing file is a failure, not a skip.
    if std::env::var_os("CI").is_some() {
        panic!("reference directory {REF_DIR} is not available under CI");
    }
    eprintln!("SKIPPED: reference directory {REF_DIR} is not available");
    None
}

fn s(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|a| a.as_bytes().to_vec()).collect()
}

#[test]
fn reference_multipart_aof_reads() {
    let Some(dir) = reference_dir() else { return };
    let text = std::fs::read(dir.join("appendonly.aof.manifest")).expect("manifest");
    let m = Manifest::parse(&text).expect("manifest parses");
    let base = m.base.as_ref().expect("a base");
    assert_eq!(base.name, "appendonly.aof.2.base.rdb");
    assert_eq!((base.seq, base.kind), (2, AofFileKind::Base));
    assert_eq!(m.incr.len(), 1);
    assert_eq!(m.incr[0].name, "appendonly.aof.2.incr.aof");
    assert!(m.history.is_empty());
    assert_eq!(m.to_text().as_bytes(), &text[..]);

    let files = files_to_load(&dir, &m);
    assert_eq!(files.len(), 2);
    let base_bytes = std::fs::read(&files[0]).expect("base");
    assert_eq!(detect_format(&base_bytes), BaseFormat::Rdb);
    assert_eq!(
        detect_file_format(&files[0]).expect("base"),
        BaseFormat::Rdb
    );
    assert_eq!(
        detect_file_format(&files[1]).expect("incr"),
        BaseFormat::Commands
    );
    let plan = load_plan(&dir, &m);
    assert_eq!(plan.len(), 2);
    assert!(!plan[0].last && plan[1].last);
    let mut keys = Vec::new();
    read_all(&base_bytes, |e| {
        keys.push(String::from_utf8_lossy(&e.key).into_owned())
    })
    .expect("base reads");
    keys.sort();
    assert_eq!(keys, ["a", "e", "f", "h", "l", "s", "z"]);

    let incr = std::fs::File::open(&files[1]).expect("incr");
    let cmds: Vec<_> = CommandReader::new(incr)
        .map(|c| c.expect("valid command"))
        .collect();
    let argvs: Vec<_> = cmds.iter().map(|c| c.argv.clone()).collect();
    assert_eq!(
        argvs,
        vec![
            s(&["SELECT", "0"]),
            s(&["set", "after", "rewrite"]),
            s(&["incr", "a"]),
            s(&["del", "l"]),
            s(&["PEXPIREAT", "a", "1795697382551"]),
            s(&["set", "db2key", "v"]),
            s(&["MULTI"]),
            s(&["SET", "tx1", "a"]),
            s(&["SET", "tx2", "b"]),
            s(&["EXEC"]),
        ]
    );
    assert_eq!(cmds[0].offset, 0);
    assert_eq!(cmds[1].offset, 23);
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A writable copy of the reference directory, damaged by `damage`.
fn copy_of(src: &Path, damage: impl FnOnce(&Path)) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "keel-aof-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    for entry in std::fs::read_dir(src).expect("read dir") {
        let entry = entry.expect("entry");
        let to = dir.join(entry.file_name());
        std::fs::write(&to, std::fs::read(entry.path()).expect("read")).expect("write");
    }
    damage(&dir);
    dir
}

fn patch(path: &Path, at: usize, byte: u8) {
    let mut b = std::fs::read(path).expect("read");
    b[at] = byte;
    std::fs::write(path, b).expect("write");
}

fn cut(path: &Path, len: u64) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    f.set_len(len).expect("truncate");
}

fn append(path: &Path, bytes: &[u8]) {
    let mut b = std::fs::read(path).expect("read");
    b.extend_from_slice(bytes);
    std::fs::write(path, b).expect("write");
}

/// Exit code, normalised output lines, and each file's name and bytes afterwards.
type Run = (i32, Vec<String>, Vec<(String, Vec<u8>)>);

/// Runs a checker in `dir` and returns its exit code, its output with Redis's log prefix and
/// the program name normalised (and, with `summary_only`, without the RDB checker's detail
/// lines, which Keel's RDB reader reports differently), and the files' bytes afterwards.
fn run(tool: &str, dir: &Path, args: &[&str], stdin: &str, summary_only: bool) -> Run {
    use std::io::Write;
    let mut child = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn checker");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("stdin");
    let out = child.wait_with_output().expect("checker output");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines = text
        .lines()
        .map(|l| match l.find(":C ").zip(l.find(" # ")) {
            Some((c, h)) if c < h && l[..c].bytes().all(|b| b.is_ascii_digit()) => {
                format!("LOG# {}", &l[h + 3..])
            }
            _ => l.to_string(),
        })
        .map(|l| match l.strip_prefix("Usage: ") {
            Some(rest) => format!("Usage: X {}", rest.split_once(' ').map_or("", |x| x.1)),
            None => l,
        })
        .filter(|l| !l.starts_with("[offset") && !l.starts_with("[additional"))
        .filter(|l| !summary_only || !l.starts_with("[info]"))
        .collect();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| {
            let e = e.expect("entry");
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).expect("read"),
            )
        })
        .collect();
    files.sort();
    (out.status.code().unwrap_or(-1), lines, files)
}

struct Case {
    name: &'static str,
    damage: fn(&Path),
    args: &'static [&'static str],
    stdin: &'static str,
    expect_rc: i32,
    /// A line Redis prints that Keel must print too (checked on Redis's side, so the case
    /// really exercises what it names).
    key_line: &'static str,
    summary_only: bool,
}

const M: &str = "appendonly.aof.manifest";
const INCR: &str = "appendonly.aof.2.incr.aof";
const BASE: &str = "appendonly.aof.2.base.rdb";

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "good",
            damage: |_| {},
            args: &[M],
            stdin: "",
            expect_rc: 0,
            key_line: "All AOF files and manifest are valid",
            summary_only: false,
        },
        Case {
            name: "truncated tail",
            damage: |d| cut(&d.join(INCR), 250),
            args: &[M],
            stdin: "",
            expect_rc: 1,
            key_line: "AOF appendonly.aof.2.incr.aof is not valid. Use the --fix option to try fixing it.",
            summary_only: false,
        },
        Case {
            name: "truncated tail, fixed",
            damage: |d| cut(&d.join(INCR), 250),
            args: &["--fix", M],
            stdin: "y\n",
            expect_rc: 0,
            key_line: "Continue? [y/N]: Successfully truncated AOF appendonly.aof.2.incr.aof",
            summary_only: false,
        },
        Case {
            name: "truncated tail, fix refused",
            damage: |d| cut(&d.join(INCR), 250),
            args: &["--fix", M],
            stdin: "n\n",
            expect_rc: 1,
            key_line: "Continue? [y/N]: Aborting...",
            summary_only: false,
        },
        Case {
            name: "corrupt middle",
            damage: |d| patch(&d.join(INCR), 24, b'X'),
            args: &[M],
            stdin: "",
            expect_rc: 1,
            key_line: "0x              17: Expected \\r\\n, got: 580d",
            summary_only: false,
        },
        Case {
            name: "bad prefix, old-style",
            damage: |d| patch(&d.join(INCR), 0, b'X'),
            args: &[INCR],
            stdin: "",
            expect_rc: 1,
            key_line: "AOF appendonly.aof.2.incr.aof format error",
            summary_only: false,
        },
        Case {
            name: "unfinished transaction",
            damage: |d| cut(&d.join(INCR), 252),
            args: &[M],
            stdin: "",
            expect_rc: 1,
            key_line: "0x              f9: Reached EOF before reading EXEC for MULTI",
            summary_only: false,
        },
        Case {
            name: "corrupt RDB base",
            damage: |d| patch(&d.join(BASE), 200, b'Z'),
            args: &[M],
            stdin: "",
            expect_rc: 1,
            key_line: "--- RDB ERROR DETECTED ---",
            summary_only: true,
        },
        Case {
            name: "truncated RDB base",
            damage: |d| cut(&d.join(BASE), 150),
            args: &[M],
            stdin: "",
            expect_rc: 1,
            key_line: "RDB preamble of AOF file is not sane, aborting.",
            summary_only: true,
        },
        Case {
            name: "RDB base with a command tail",
            damage: |d| append(&d.join(BASE), b"*1\r\n$4\r\nPING\r\n"),
            args: &[M],
            stdin: "",
            expect_rc: 0,
            key_line: "AOF analyzed: filename=appendonly.aof.2.base.rdb, size=218, ok_up_to=218, ok_up_to_line=4, diff=0",
            summary_only: false,
        },
        Case {
            name: "bad manifest type",
            damage: |d| append(&d.join(M), b"file x seq 3 type q\n"),
            args: &[M],
            stdin: "",
            expect_rc: 1,
            key_line: "LOG# Unknown AOF file type",
            summary_only: false,
        },
        Case {
            name: "duplicate base",
            damage: |d| append(&d.join(M), b"file y seq 3 type b\n"),
            args: &[M],
            stdin: "",
            expect_rc: 1,
            key_line: "LOG# Found duplicate base file information",
            summary_only: false,
        },
        Case {
            name: "manifest names a missing file",
            damage: |d| append(&d.join(M), b"file \"a b\" seq 3 type i\n"),
            args: &[M],
            stdin: "",
            expect_rc: 1,
            key_line: "Cannot open file ./a b: No such file or directory, aborting...",
            summary_only: false,
        },
        Case {
            name: "truncate to timestamp",
            damage: |d| {
                std::fs::write(
                    d.join("ts.aof"),
                    b"*1\r\n$4\r\nPING\r\n#TS:100\r\n*1\r\n$4\r\nPING\r\n#TS:200\r\n*1\r\n$4\r\nPING\r\n",
                )
                .expect("write")
            },
            args: &["--truncate-to-timestamp", "150", "ts.aof"],
            stdin: "",
            expect_rc: 0,
            key_line: "Successfully truncated AOF ts.aof to timestamp 150",
            summary_only: false,
        },
        Case {
            name: "usage",
            damage: |_| {},
            args: &["--bogus", M],
            stdin: "",
            expect_rc: 1,
            key_line: "Usage: X [--fix|--truncate-to-timestamp $timestamp] <file.manifest|file.aof>",
            summary_only: false,
        },
    ]
}

#[test]
fn keel_check_aof_agrees_with_redis_check_aof() {
    let Some(src) = reference_dir() else { return };
    let redis_available = Path::new(REDIS_CHECK_AOF).is_file();
    if !redis_available {
        if std::env::var_os("CI").is_some() {
            panic!("{REDIS_CHECK_AOF} is not available under CI");
        }
        eprintln!("SKIPPED: {REDIS_CHECK_AOF} is not installed");
        return;
    }
    let keel = env!("CARGO_BIN_EXE_keel-check-aof");
    for case in cases() {
        let rdir = copy_of(&src, case.damage);
        let kdir = copy_of(&src, case.damage);
        let r = run(
            REDIS_CHECK_AOF,
            &rdir,
            case.args,
            case.stdin,
            case.summary_only,
        );
        let k = run(keel, &kdir, case.args, case.stdin, case.summary_only);
        let _ = std::fs::remove_dir_all(&rdir);
        let _ = std::fs::remove_dir_all(&kdir);
        assert_eq!(
            r.0, case.expect_rc,
            "{}: redis exit code\n{:#?}",
            case.name, r.1
        );
        assert!(
            r.1.iter().any(|l| l == case.key_line),
            "{}: redis did not print {:?}\n{:#?}",
            case.name,
            case.key_line,
            r.1
        );
        assert_eq!(k.0, r.0, "{}: exit codes\n{:#?}", case.name, k.1);
        assert_eq!(k.1, r.1, "{}: output", case.name);
        assert!(k.2 == r.2, "{}: files differ afterwards", case.name);
    }
}
