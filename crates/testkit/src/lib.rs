//! Test support shared by the crates whose integration tests talk to real
//! servers: free loopback ports, this workspace's `keel-server` binary, and a
//! started `keel-server` or Debian `redis-server` that is killed when dropped;
//! and, in [`resp`], a bare RESP client for tests that compare raw replies.
//! Tests only; panics are the way it reports a broken test environment.

pub mod resp;

pub use resp::{Conn, Reply};

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A started server, killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
    /// Keel's working directory, removed when the server is dropped.
    dir: Option<PathBuf>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A port the kernel has just found free.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A free port outside the kernel's ephemeral range, for a server that is
/// stopped and started again on the same port: a port from `free_port` could
/// be handed to a test running alongside while it is briefly unused, and a
/// reconnect would reach that test's listener.
pub fn stable_port() -> u16 {
    let seed = u64::from(std::process::id())
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::from(d.subsec_nanos()))
            .unwrap_or(0);
    for i in 0..1000u64 {
        let port =
            20_000 + ((seed.wrapping_mul(2_654_435_761).wrapping_add(i * 7919)) % 10_000) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in 20000-29999");
}

/// This workspace's keel-server: `KEEL_SERVER` if set, else the debug or
/// release build under `target/`.
pub fn keel_binary() -> PathBuf {
    if let Ok(p) = std::env::var("KEEL_SERVER") {
        return PathBuf::from(p);
    }
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
    for profile in ["debug", "release"] {
        let p = target.join(profile).join("keel-server");
        if p.exists() {
            return p;
        }
    }
    panic!("keel-server is not built: run `cargo build --bin keel-server` (cargo test --workspace builds it)");
}

/// Start `kind` ("keel" or "redis") on `port`, bound to loopback with DEBUG
/// enabled and (Redis) persistence off, and wait until it accepts connections.
pub fn start(kind: &str, port: u16) -> Server {
    start_with(kind, port, &[])
}

/// [`start`] with extra command-line arguments (`--dir`, `--dbfilename`, ...) after the usual
/// ones, so they override them.
pub fn start_with(kind: &str, port: u16, extra: &[&str]) -> Server {
    let port_s = port.to_string();
    let mut dir = None;
    let mut cmd = if kind == "keel" {
        // Files a test makes Keel write (FLUSHALL's or SAVE's dump.rdb) go to
        // a directory of its own, never into the source tree; `--dir` in
        // `extra` still wins.
        let d = std::env::temp_dir().join(format!("keel-testkit-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&d).expect("a directory for the server");
        let mut c = Command::new(keel_binary());
        c.arg("--dir").arg(&d);
        dir = Some(d);
        c
    } else {
        let mut c = Command::new("redis-server");
        c.args(["--save", "", "--appendonly", "no"]);
        c
    };
    let child = cmd
        .args(["--port", &port_s, "--bind", "127.0.0.1"])
        .args(["--enable-debug-command", "yes"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {kind} (make deps installs redis-server): {e}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{kind} did not start listening");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server { child, port, dir }
}
