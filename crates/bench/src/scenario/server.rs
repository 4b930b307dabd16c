//! Servers a scenario starts and talks to outside the measured load: finding
//! the program, a free port, a private directory and log file, waiting for
//! PING, stopping with SHUTDOWN NOSAVE (then a kill), the server's CPU time
//! from /proc, and a small blocking admin connection for setup commands
//! (FLUSHALL, BF.RESERVE, INFO, COMMAND INFO).

use bytes::{Bytes, BytesMut};
use keel_resp::{encode_command, parse_frame, Frame};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Split a command line into words: whitespace separates, single quotes keep
/// text as is (`''` is an empty word), double quotes allow `\"` and `\\`.
pub fn split_command(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => cur.push(c),
                            None => return Err("unterminated double quote".into()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// Where to find programs: `--bin NAME=PATH` first, `KEEL_SERVER` for
/// keel-server, then PATH, then (keel-server only) this build's own
/// directory and the workspace's target/release and target/debug.
#[derive(Debug, Clone, Default)]
pub struct Bins {
    pub overrides: HashMap<String, PathBuf>,
}

impl Bins {
    pub fn find(&self, program: &str) -> Result<PathBuf, String> {
        if let Some(p) = self.overrides.get(program) {
            return if p.is_file() {
                Ok(p.clone())
            } else {
                Err(format!("--bin {program}={} is not a file", p.display()))
            };
        }
        if program.contains('/') {
            let p = PathBuf::from(program);
            return if p.is_file() {
                Ok(p)
            } else {
                Err(format!("{program} does not exist"))
            };
        }
        let keel = program == "keel-server";
        if keel {
            if let Some(p) = std::env::var_os("KEEL_SERVER") {
                let p = PathBuf::from(p);
                return if p.is_file() {
                    Ok(p)
                } else {
                    Err(format!("KEEL_SERVER={} is not a file", p.display()))
                };
            }
        }
        if let Some(path) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&path) {
                let p = dir.join(program);
                if p.is_file() {
                    return Ok(p);
                }
            }
        }
        if keel {
            let mut dirs = Vec::new();
            if let Some(d) = std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(Path::to_path_buf))
            {
                dirs.push(d);
            }
            let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
            dirs.push(target.join("release"));
            dirs.push(target.join("debug"));
            for d in dirs {
                let p = d.join(program);
                if p.is_file() {
                    return Ok(p);
                }
            }
            return Err(
                "keel-server was not found on PATH nor in this workspace's target/release \
                 or target/debug: build it with `cargo build --release -p keel-server`, or \
                 point at it with KEEL_SERVER=PATH or --bin keel-server=PATH"
                    .into(),
            );
        }
        Err(format!(
            "{program} was not found on PATH (install it, or pass --bin {program}=PATH)"
        ))
    }
}

pub fn free_port() -> std::io::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// A server process this run started.
pub struct Server {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
    pub log: PathBuf,
    pub program: String,
    stopped: bool,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Server({} on {})", self.program, self.port)
    }
}

/// Why a server could not be started.
#[derive(Debug, Clone)]
pub struct StartError {
    pub message: String,
    /// The server ran and refused its configuration (an unknown directive,
    /// a feature missing from this build): the target lacks a feature.
    pub refused_config: bool,
}

static DIR_SEQ: AtomicU64 = AtomicU64::new(0);

fn private_dir() -> std::io::Result<PathBuf> {
    let n = DIR_SEQ.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("keel-bench-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The last `lines` lines of a log file.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = all.len().saturating_sub(lines);
    all[from..].join("\n")
}

impl Server {
    /// Start `command` (with `{port}`, `{dir}`, `{variant}` already or not yet
    /// substituted: `{port}` and `{dir}` are filled here) and wait until it
    /// answers PING.
    pub fn start(command: &str, bins: &Bins) -> Result<Server, StartError> {
        let fail = |m: String| StartError {
            message: m,
            refused_config: false,
        };
        let port = free_port().map_err(|e| fail(format!("no free port: {e}")))?;
        let dir = private_dir().map_err(|e| fail(format!("cannot create a temp dir: {e}")))?;
        let line = command
            .replace("{port}", &port.to_string())
            .replace("{dir}", &dir.display().to_string());
        let words = split_command(&line).map_err(fail)?;
        let Some((program, args)) = words.split_first() else {
            return Err(fail("the command is empty".into()));
        };
        let exe = bins.find(program).map_err(fail)?;
        let log = dir.join("server.log");
        let out = std::fs::File::create(&log)
            .map_err(|e| fail(format!("cannot create {}: {e}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(|e| fail(format!("cannot share the log file: {e}")))?;
        let child = Command::new(&exe)
            .args(args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| fail(format!("cannot start {}: {e}", exe.display())))?;
        let mut server = Server {
            child,
            port,
            dir,
            log,
            program: program.clone(),
            stopped: false,
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                server.stopped = true;
                let t = tail(&server.log, 8);
                let refused = t.contains("not available in this build")
                    || t.contains("Bad directive")
                    || t.contains("CONFIG FILE ERROR");
                return Err(StartError {
                    message: format!(
                        "{} exited at startup ({status}); last lines of its log:\n{}",
                        server.program,
                        indent(&t)
                    ),
                    refused_config: refused,
                });
            }
            if let Ok(mut a) = Admin::connect(&server.addr(), Duration::from_millis(500)) {
                if matches!(a.cmd(&["PING"]), Ok(Frame::Simple(_))) {
                    return Ok(server);
                }
            }
            if Instant::now() > deadline {
                let t = tail(&server.log, 8);
                return Err(fail(format!(
                    "{} did not answer PING within 15 s; last lines of its log:\n{}",
                    server.program,
                    indent(&t)
                )));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has exited (crashed) while it should be serving.
    pub fn died(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(format!(
                "{} exited during the run ({status}); last lines of its log:\n{}",
                self.program,
                indent(&tail(&self.log, 8))
            )),
            _ => None,
        }
    }

    /// CPU time the process has used so far (see `load::process_cpu`).
    pub fn cpu(&self) -> Option<crate::model::CpuTime> {
        crate::load::process_cpu(self.pid())
    }

    /// Threads the process runs now.
    pub fn threads(&self) -> Option<u32> {
        crate::load::process_threads(self.pid())
    }

    /// SHUTDOWN NOSAVE, then a kill if it has not exited within 3 s.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        if let Ok(mut a) = Admin::connect(&self.addr(), Duration::from_millis(500)) {
            let _ = a.send_only(&["SHUTDOWN", "NOSAVE"]);
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A blocking request/response connection for setup and inspection.
pub struct Admin {
    stream: TcpStream,
    buf: BytesMut,
}

impl Admin {
    pub fn connect(addr: &str, timeout: Duration) -> anyhow::Result<Admin> {
        let sock = addr
            .parse::<std::net::SocketAddr>()
            .ok()
            .map(|a| TcpStream::connect_timeout(&a, timeout))
            .unwrap_or_else(|| TcpStream::connect(addr));
        let stream = sock.map_err(|e| anyhow::anyhow!("cannot connect to {addr}: {e}"))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let _ = stream.set_nodelay(true);
        Ok(Admin {
            stream,
            buf: BytesMut::new(),
        })
    }

    fn send_only<A: AsRef<[u8]>>(&mut self, args: &[A]) -> std::io::Result<()> {
        let mut out = BytesMut::new();
        encode_command(args, &mut out);
        self.stream.write_all(&out)
    }

    /// One command, its reply (error replies are returned as `Frame::Error`).
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> anyhow::Result<Frame> {
        self.send_only(args)?;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let data: Bytes = self.buf.clone().freeze();
            match parse_frame(&data) {
                Ok(Some((frame, used))) => {
                    let _ = self.buf.split_to(used);
                    return Ok(frame);
                }
                Ok(None) => {}
                Err(e) => return Err(anyhow::anyhow!("bad reply from the server: {e}")),
            }
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(anyhow::anyhow!("the server closed the connection"));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Like `cmd`, but an error reply becomes an `Err` carrying its text.
    pub fn ok<A: AsRef<[u8]>>(&mut self, args: &[A]) -> anyhow::Result<Frame> {
        match self.cmd(args)? {
            Frame::Error(e) => Err(anyhow::anyhow!("{}", String::from_utf8_lossy(&e))),
            f => Ok(f),
        }
    }

    /// The first of `commands` the server does not know, by COMMAND INFO
    /// (a nil entry). `Ok(None)` when it knows them all or cannot tell.
    pub fn missing_command(&mut self, commands: &[&str]) -> anyhow::Result<Option<String>> {
        if commands.is_empty() {
            return Ok(None);
        }
        let mut args = vec!["COMMAND", "INFO"];
        args.extend_from_slice(commands);
        match self.cmd(&args)? {
            Frame::Array(items) => {
                for (item, name) in items.iter().zip(commands) {
                    if matches!(item, Frame::Null | Frame::NullArray) {
                        return Ok(Some(name.to_ascii_uppercase()));
                    }
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// A field of INFO (e.g. `used_memory`).
    pub fn info_field(&mut self, section: &str, field: &str) -> anyhow::Result<Option<String>> {
        let text = match self.ok(&["INFO", section])? {
            Frame::Bulk(b) | Frame::Simple(b) => String::from_utf8_lossy(&b).into_owned(),
            Frame::Verbatim(_, text) => String::from_utf8_lossy(&text).into_owned(),
            _ => return Ok(None),
        };
        Ok(text.lines().find_map(|l| {
            l.strip_prefix(field)
                .and_then(|r| r.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        }))
    }

    /// INFO `used_memory` less the clients' buffers (`mem_clients_normal`): what
    /// the dataset and the server itself hold.
    pub fn used_memory(&mut self) -> anyhow::Result<Option<f64>> {
        // Client buffers grow and shrink with the load and the server's
        // idle-buffer cron: left in, they can outweigh a small dataset's
        // growth between two readings. Both servers report them apart.
        let clients = self
            .info_field("memory", "mem_clients_normal")?
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        Ok(self
            .info_field("memory", "used_memory")?
            .and_then(|v| v.parse::<f64>().ok())
            .map(|used| used - clients))
    }
}

/// Text of a reply for notes and reports (arrays become one line each).
pub fn frame_text(f: &Frame) -> String {
    match f {
        Frame::Simple(b) | Frame::Bulk(b) | Frame::Error(b) => {
            String::from_utf8_lossy(b).into_owned()
        }
        Frame::Integer(i) => i.to_string(),
        Frame::Double(d) => d.to_string(),
        Frame::Null | Frame::NullArray => "(nil)".into(),
        Frame::Array(a) | Frame::Set(a) => a.iter().map(frame_text).collect::<Vec<_>>().join("\n"),
        Frame::Map(m) => m
            .iter()
            .map(|(k, v)| format!("{}: {}", frame_text(k), frame_text(v)))
            .collect::<Vec<_>>()
            .join("\n"),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_like_a_shell() {
        assert_eq!(
            split_command("redis-server --port {port} --save ''  --x \"a b\"").unwrap(),
            [
                "redis-server",
                "--port",
                "{port}",
                "--save",
                "",
                "--x",
                "a b"
            ]
        );
        assert_eq!(split_command("a 'b c'd").unwrap(), ["a", "b cd"]);
        assert!(split_command("a 'b").is_err());
        assert!(split_command("a \"b").is_err());
        assert!(split_command("   ").unwrap().is_empty());
    }

    #[test]
    fn missing_programs_are_explained() {
        let b = Bins::default();
        let e = b.find("no-such-program-keel-bench").unwrap_err();
        assert!(e.contains("not found on PATH"), "{e}");
        let mut o = Bins::default();
        o.overrides
            .insert("keel-server".into(), PathBuf::from("/nonexistent/keel"));
        assert!(o.find("keel-server").unwrap_err().contains("--bin"));
    }

    #[test]
    fn a_server_that_fails_at_startup_shows_its_log() {
        let e = Server::start(
            "sh -c 'echo bad directive >&2; exit 3' {port}",
            &Bins::default(),
        )
        .unwrap_err();
        assert!(e.message.contains("exited at startup"), "{}", e.message);
        assert!(e.message.contains("bad directive"), "{}", e.message);
    }
}
