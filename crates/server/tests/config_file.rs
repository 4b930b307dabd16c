//! Start-up from redis.conf files with the real `keel-server` binary: Debian's
//! stock file, `daemonize` with its pid file, and where the log goes.

use keel_testkit::free_port;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_keel-server");

/// The file Debian's redis-server package installs (`make deps` installs it).
const STOCK_CONF: &str = "/etc/redis/redis.conf";

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("keel-config-file-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}

/// Send one command in RESP and read the reply's first line.
fn command(port: u16, args: &[&str]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(req.as_bytes()).expect("write");
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run the binary in the foreground until it returns (a daemonizing server
/// returns at once); its exit code and what it printed. Reading stops at EOF,
/// so a daemon that kept the launcher's stdout open would fail the test.
fn launch(args: &[&str], cwd: &Path) -> (i32, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn keel-server");
    let (tx, rx) = std::sync::mpsc::channel();
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        let _ = out.read_to_string(&mut text);
        let _ = tx.send(text);
    });
    let text = match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(t) => t,
        Err(_) => {
            let _ = child.kill();
            panic!("keel-server {args:?} kept its output open (still in the foreground?)");
        }
    };
    let status = child.wait().expect("wait");
    (status.code().unwrap_or(-1), text)
}

/// Stop the daemon whose pid is in `pidfile` with SIGTERM and check that it
/// removes the file on its way out.
fn terminate_daemon(pidfile: &Path) {
    let pid = std::fs::read_to_string(pidfile).expect("pid file");
    let pid = pid.trim();
    assert!(pid.parse::<u32>().is_ok(), "pid file holds {pid:?}");
    let killed = Command::new("kill")
        .args(["-TERM", pid])
        .status()
        .expect("run kill");
    assert!(killed.success());
    wait_for("the pid file to be removed", || !pidfile.exists());
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Debian's stock redis.conf, with only its `port` line changed, starts Keel.
///
/// The file names the system's log file, pid file and data directory; options
/// after it point those into a temporary directory, so the test neither writes
/// under /var nor needs root. Every line of the stock file is still read and
/// checked. If Keel refuses lines, every refused line is reported in one run.
///
/// This needs `slowlog-log-slower-than`, `slowlog-max-len` and
/// `latency-monitor-threshold`, which the SLOWLOG and LATENCY commands bring.
#[test]
fn debian_stock_redis_conf_starts_keel_with_only_the_port_changed() {
    let stock = std::fs::read_to_string(STOCK_CONF).unwrap_or_else(|e| {
        panic!("{STOCK_CONF}: {e} (make deps installs Debian's redis-server package)")
    });
    let port = free_port();
    let mut changed = 0;
    let text: Vec<String> = stock
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("port ") {
                changed += 1;
                format!("port {port}")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert_eq!(changed, 1, "the stock file has one port line");
    let dir = temp_dir("debian");
    let conf = dir.join("redis.conf");
    std::fs::write(&conf, text.join("\n") + "\n").expect("write conf");
    let pidfile = dir.join("keel.pid");
    let log = dir.join("keel.log");
    let conf_s = conf.to_string_lossy().into_owned();
    let pid_s = pidfile.to_string_lossy().into_owned();
    let log_s = log.to_string_lossy().into_owned();
    let dir_s = dir.to_string_lossy().into_owned();
    let (code, out) = launch(
        &[
            &conf_s,
            "--pidfile",
            &pid_s,
            "--logfile",
            &log_s,
            "--dir",
            &dir_s,
        ],
        &dir,
    );
    assert_eq!(code, 0, "Keel refused the stock redis.conf:\n{out}");
    // `daemonize yes`: the launcher returned, the server runs on.
    wait_for("the pid file", || !read(&pidfile).trim().is_empty());
    wait_for("the server to listen", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert_eq!(command(port, &["PING"]), "+PONG\r\n");
    let daemonize = command(port, &["CONFIG", "GET", "daemonize"]);
    assert!(daemonize.ends_with("$3\r\nyes\r\n"), "{daemonize:?}");
    let events = command(port, &["CONFIG", "GET", "notify-keyspace-events"]);
    assert!(events.ends_with("$0\r\n\r\n"), "{events:?}");
    terminate_daemon(&pidfile);
    let logged = read(&log);
    assert!(logged.contains("Ready to accept connections"), "{logged}");
    // Every no-op in the stock file is at its default: nothing to report.
    assert!(!logged.contains("has no effect"), "{logged}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn daemonize_writes_the_pid_file_and_removes_it_on_sigterm() {
    let dir = temp_dir("daemon");
    let port = free_port();
    let pidfile = dir.join("keel.pid");
    let log = dir.join("keel.log");
    let conf = dir.join("keel.conf");
    std::fs::write(
        &conf,
        format!(
            "port {port}\nbind 127.0.0.1\ndaemonize yes\npidfile {}\nlogfile {}\n\
             activerehashing no\n",
            pidfile.display(),
            log.display()
        ),
    )
    .expect("write conf");
    let (code, out) = launch(&[&conf.to_string_lossy()], &dir);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.is_empty(),
        "a daemon prints nothing to its launcher: {out}"
    );
    wait_for("the pid file", || !read(&pidfile).trim().is_empty());
    wait_for("the server to listen", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert_eq!(command(port, &["PING"]), "+PONG\r\n");
    let pid: u32 = read(&pidfile).trim().parse().expect("a pid");
    assert!(
        read(&log).contains(&format!("pid={pid}")),
        "the pid file names the server"
    );
    terminate_daemon(&pidfile);
    let logged = read(&log);
    assert!(logged.contains("Received SIGTERM"), "{logged}");
    // One line for the recorded no-op set away from its default.
    assert_eq!(
        logged.matches("'activerehashing no'").count(),
        1,
        "{logged}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_pid_file_that_cannot_be_written_is_a_warning() {
    let dir = temp_dir("nopid");
    let port = free_port();
    let log = dir.join("keel.log");
    let port_s = port.to_string();
    let log_s = log.to_string_lossy().into_owned();
    let (code, out) = launch(
        &[
            "--port",
            &port_s,
            "--bind",
            "127.0.0.1",
            "--daemonize",
            "yes",
            "--pidfile",
            "/nonexistent-keel-dir/keel.pid",
            "--logfile",
            &log_s,
        ],
        &dir,
    );
    assert_eq!(code, 0, "{out}");
    wait_for("the server to listen", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert_eq!(command(port, &["PING"]), "+PONG\r\n");
    assert!(
        read(&log).contains("Failed to write PID file: No such file or directory"),
        "{}",
        read(&log)
    );
    // No pid to signal: SHUTDOWN stops it (nothing to save).
    let _ = command(port, &["SHUTDOWN"]);
    wait_for("the server to stop", || {
        TcpStream::connect(("127.0.0.1", port)).is_err()
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn daemonized_without_a_logfile_logs_nowhere_and_detaches() {
    let dir = temp_dir("devnull");
    let port = free_port();
    let pidfile = dir.join("keel.pid");
    let port_s = port.to_string();
    let pid_s = pidfile.to_string_lossy().into_owned();
    // `launch` reads the launcher's stdout to EOF: a daemon that kept it
    // (rather than /dev/null) would hang there and fail.
    let (code, out) = launch(
        &[
            "--port",
            &port_s,
            "--bind",
            "127.0.0.1",
            "--daemonize",
            "yes",
            "--pidfile",
            &pid_s,
        ],
        &dir,
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.is_empty(), "{out}");
    wait_for("the pid file", || !read(&pidfile).trim().is_empty());
    wait_for("the server to listen", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert_eq!(command(port, &["PING"]), "+PONG\r\n");
    terminate_daemon(&pidfile);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_refused_line_is_reported_with_its_file_and_line() {
    let dir = temp_dir("errors");
    let inc = dir.join("inc.conf");
    std::fs::write(&inc, "activedefrag yes\n").expect("write include");
    let conf = dir.join("keel.conf");
    std::fs::write(
        &conf,
        format!(
            "port {}\nfrobnicate yes\ninclude {}\ntls-replication yes\nhz 10\n",
            free_port(),
            inc.display()
        ),
    )
    .expect("write conf");
    let (code, out) = launch(
        &[&conf.to_string_lossy(), "--notify-keyspace-events", "KEQ"],
        &dir,
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(out.matches("FATAL CONFIG FILE ERROR").count(), 4, "{out}");
    for want in [
        format!(
            "{}, at line 2\n>>> 'frobnicate yes'\nBad directive",
            conf.display()
        ),
        format!(
            "{}, at line 1\n>>> 'activedefrag yes'\n'activedefrag yes' needs active defragmentation, which is not available",
            inc.display()
        ),
        "at line 4\n>>> 'tls-replication yes'\n'tls-replication yes' needs TLS".to_string(),
        "(command line), at line 1\n>>> 'notify-keyspace-events KEQ'\nInvalid event class character. Use 'Ag$lshzxeKEtmdn'."
            .to_string(),
    ] {
        assert!(out.contains(&want), "missing {want:?} in:\n{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_that_cannot_listen_leaves_no_pid_file() {
    let dir = temp_dir("busy");
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port_s = taken.local_addr().expect("addr").port().to_string();
    let pidfile = dir.join("keel.pid");
    let pid_s = pidfile.to_string_lossy().into_owned();
    let (code, out) = launch(
        &[
            "--port",
            &port_s,
            "--bind",
            "127.0.0.1",
            "--pidfile",
            &pid_s,
        ],
        &dir,
    );
    assert_eq!(code, 1, "{out}");
    assert!(!pidfile.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
