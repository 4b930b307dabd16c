//! The network layer against the real `keel-server` binary: one owner per
//! port, the descriptor limit and `maxclients`, and listeners that CONFIG SET
//! moves at run time.

use keel_testkit::free_port;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_keel-server");

/// A started keel-server whose log goes to a file; killed when dropped.
struct Server {
    child: Child,
    port: u16,
    log: std::path::PathBuf,
}

impl Server {
    /// Start `prefix... keel-server --port P ... extra`, wait until it listens.
    fn start_with(prefix: &[&str], port: u16, extra: &[&str]) -> Server {
        let log = std::env::temp_dir().join(format!(
            "keel-net-test-{}-{port}-{}.log",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        ));
        let child = spawn(prefix, port, extra, &log);
        let s = Server { child, port, log };
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut s = s;
        loop {
            if let Ok(Some(status)) = s.child.try_wait() {
                panic!("keel-server exited early with {status}:\n{}", s.log_text());
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return s;
            }
            assert!(Instant::now() < deadline, "keel-server did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn start(extra: &[&str]) -> Server {
        Server::start_with(&[], free_port(), extra)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn connect(&self) -> Conn {
        Conn::to(self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

fn spawn(prefix: &[&str], port: u16, extra: &[&str], log: &std::path::Path) -> Child {
    let out = std::fs::File::create(log).expect("log file");
    let err = out.try_clone().expect("log file");
    let port_s = port.to_string();
    let mut args: Vec<&str> = prefix.to_vec();
    args.push(BIN);
    args.extend([
        "--port",
        &port_s,
        "--bind",
        "127.0.0.1",
        "--threads",
        "2",
        "--save",
        "",
    ]);
    args.extend_from_slice(extra);
    Command::new(args[0])
        .args(&args[1..])
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", args[0]))
}

/// Run a keel-server that is expected to stop at start-up; its status and log.
fn run_to_exit(port: u16) -> (std::process::ExitStatus, String) {
    let log = std::env::temp_dir().join(format!("keel-net-exit-{}-{port}.log", std::process::id()));
    let mut child = spawn(&[], port, &[], &log);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "a second server on a held port kept running:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    (status, text)
}

struct Conn {
    s: TcpStream,
}

impl Conn {
    fn to(port: u16) -> Conn {
        Conn::at("127.0.0.1", port).expect("connect")
    }

    fn at(host: &str, port: u16) -> std::io::Result<Conn> {
        let s = TcpStream::connect((host, port))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        Ok(Conn { s })
    }

    /// Send one command (inline words, RESP-encoded) and read one reply line
    /// or bulk, as text.
    fn cmd(&mut self, args: &[&str]) -> String {
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        self.s.write_all(req.as_bytes()).expect("write");
        self.reply()
    }

    fn reply(&mut self) -> String {
        let line = self.line();
        if let Some(len) = line.strip_prefix('$') {
            let Ok(len) = len.parse::<usize>() else {
                return line;
            };
            let mut body = vec![0u8; len + 2];
            self.s.read_exact(&mut body).expect("bulk");
            body.truncate(len);
            return String::from_utf8_lossy(&body).into_owned();
        }
        if let Some(n) = line.strip_prefix('*') {
            let n: usize = n.parse().unwrap_or(0);
            let items: Vec<String> = (0..n).map(|_| self.reply()).collect();
            return items.join("\n");
        }
        line
    }

    fn line(&mut self) -> String {
        let mut out = Vec::new();
        let mut b = [0u8; 1];
        while !out.ends_with(b"\r\n") {
            match self.s.read(&mut b) {
                Ok(1) => out.push(b[0]),
                _ => break,
            }
        }
        String::from_utf8_lossy(&out).trim_end().to_string()
    }

    fn ping(&mut self) -> String {
        self.cmd(&["PING"])
    }
}

fn info_field(info: &str, name: &str) -> String {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn a_second_server_on_a_held_port_exits_before_ready() {
    let first = Server::start(&[]);
    let (status, log) = run_to_exit(first.port);
    assert!(!status.success(), "{log}");
    let port = first.port;
    assert!(
        log.contains(&format!(
            "# Warning: Could not create server TCP listening socket 127.0.0.1:{port}: bind: Address already in use"
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "# Failed listening on port {port} (TCP), aborting."
        )),
        "{log}"
    );
    assert!(!log.contains("Ready to accept"), "{log}");
    // Every connection still reaches the first server.
    for _ in 0..20 {
        let mut c = first.connect();
        assert_eq!(c.ping(), "+PONG");
    }
}

#[test]
fn a_port_held_by_another_program_is_refused() {
    let held = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = held.local_addr().expect("addr").port();
    let (status, log) = run_to_exit(port);
    assert!(!status.success(), "{log}");
    assert!(log.contains("bind: Address already in use"), "{log}");
}

#[test]
fn a_restart_after_a_clean_shutdown_binds_at_once() {
    let first = Server::start(&[]);
    let port = first.port;
    // Connections the server closes itself leave its side in TIME_WAIT.
    let mut conns: Vec<Conn> = (0..5).map(|_| first.connect()).collect();
    for c in &mut conns {
        assert_eq!(c.ping(), "+PONG");
    }
    let mut first = first;
    let _ = conns[0].cmd(&["SHUTDOWN", "NOSAVE"]);
    let status = first.child.wait().expect("wait");
    assert!(status.success(), "{}", first.log_text());
    let again = Server::start_with(&[], port, &[]);
    assert_eq!(again.connect().ping(), "+PONG");
    assert!(
        !again.log_text().contains("Could not create"),
        "{}",
        again.log_text()
    );
}

/// The soft descriptor limit this test process may give a child: 1024 where
/// the test itself can hold that many sockets, otherwise a smaller one.
fn child_nofile() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft: u64 = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    if soft >= 1200 {
        1024
    } else {
        256
    }
}

#[test]
fn a_low_fd_limit_clamps_maxclients_and_every_client_past_it_is_refused() {
    let nofile = child_nofile();
    let limit = format!("--nofile={nofile}:{nofile}");
    let server = Server::start_with(&["prlimit", &limit], free_port(), &[]);
    let maxclients = nofile - 32;
    let log = server.log_text();
    assert!(
        log.contains(&format!(
            "# Current maximum open files is {nofile}. maxclients has been reduced to {maxclients} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
        )),
        "{log}"
    );
    assert!(
        log.contains(
            "# You requested maxclients of 10000 requiring at least 10032 max file descriptors."
        ),
        "{log}"
    );
    // The probe connection of the start-up wait may still be counted.
    std::thread::sleep(Duration::from_millis(100));
    let mut conns: Vec<Conn> = Vec::new();
    let mut first = server.connect();
    assert_eq!(
        first.cmd(&["CONFIG", "GET", "maxclients"]),
        format!("maxclients\n{maxclients}")
    );
    for _ in 1..maxclients {
        let mut c = server.connect();
        c.s.write_all(b"PING\r\n").expect("write");
        conns.push(c);
    }
    for c in &mut conns {
        assert_eq!(c.line(), "+PONG");
    }
    let extra = 10;
    for _ in 0..extra {
        let mut c = server.connect();
        assert_eq!(c.line(), "-ERR max number of clients reached");
        // Kept open: the server closed its side, so it holds no descriptor.
        conns.push(c);
    }
    let stats = first.cmd(&["INFO", "stats"]);
    assert_eq!(
        info_field(&stats, "rejected_connections"),
        extra.to_string()
    );
    let clients = first.cmd(&["INFO", "clients"]);
    assert_eq!(
        info_field(&clients, "connected_clients"),
        maxclients.to_string()
    );
    // A higher maxclients than the limit allows is refused, as in Redis.
    assert_eq!(
        first.cmd(&["CONFIG", "SET", "maxclients", "5000"]),
        format!("-ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with {maxclients}")
    );
    assert_eq!(
        first.cmd(&["CONFIG", "GET", "maxclients"]),
        format!("maxclients\n{maxclients}")
    );
    assert!(
        !server.log_text().contains("Accepting client connection"),
        "{}",
        server.log_text()
    );
}

#[test]
fn config_set_port_moves_the_listener_and_keeps_connections() {
    let server = Server::start(&[]);
    let mut c = server.connect();
    let new_port = free_port();
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "port", &new_port.to_string()]),
        "+OK"
    );
    assert_eq!(Conn::to(new_port).ping(), "+PONG");
    assert!(Conn::at("127.0.0.1", server.port).is_err());
    assert_eq!(c.ping(), "+PONG");
    let info = c.cmd(&["INFO", "server"]);
    assert_eq!(info_field(&info, "tcp_port"), new_port.to_string());
    // A port another program holds: the listener stays where it was.
    let held = TcpListener::bind("127.0.0.1:0").expect("bind");
    let held_port = held.local_addr().expect("addr").port().to_string();
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "port", &held_port]),
        "-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs."
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "port"]),
        format!("port\n{new_port}")
    );
    assert_eq!(Conn::to(new_port).ping(), "+PONG");
}

#[test]
fn config_set_bind_adds_and_drops_addresses() {
    let server = Server::start(&[]);
    let port = server.port;
    let mut c = server.connect();
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "bind", "127.0.0.1 127.0.0.2"]),
        "+OK"
    );
    assert_eq!(
        Conn::at("127.0.0.2", port).expect("second address").ping(),
        "+PONG"
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "bind", "192.0.2.1"]),
        "-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses."
    );
    assert_eq!(Conn::at("127.0.0.2", port).expect("kept").ping(), "+PONG");
    // An optional address the host lacks is skipped.
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "bind", "-192.0.2.1 127.0.0.1"]),
        "+OK"
    );
    assert!(Conn::at("127.0.0.2", port).is_err());
    assert_eq!(Conn::to(port).ping(), "+PONG");
    assert_eq!(c.ping(), "+PONG");
}

#[test]
fn client_kill_closes_an_idle_connection_at_once() {
    let server = Server::start(&[]);
    let mut victim = server.connect();
    let id = victim.cmd(&["CLIENT", "ID"]);
    let id = id.trim_start_matches(':');
    let mut admin = server.connect();
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "ID", id]), ":1");
    let mut buf = [0u8; 1];
    assert_eq!(victim.s.read(&mut buf).expect("eof, not a timeout"), 0);
    let list = admin.cmd(&["CLIENT", "LIST"]);
    assert_eq!(list.lines().count(), 1, "{list}");
    let fd: i32 = list
        .split(' ')
        .find_map(|kv| kv.strip_prefix("fd="))
        .and_then(|v| v.parse().ok())
        .expect("fd field");
    assert!(fd > 2, "{list}");
}

/// The largest maxclients Redis takes starts the server at once, clamped to
/// what the descriptor limit allows: raising the limit starts from what the
/// kernel could grant, not from 2^32 descriptors 16 at a time.
#[test]
fn the_largest_maxclients_starts_at_once_clamped_to_the_limit() {
    let nofile = child_nofile();
    let limit = format!("--nofile={nofile}:{nofile}");
    let started = Instant::now();
    let server = Server::start_with(
        &["prlimit", &limit],
        free_port(),
        &["--maxclients", "4294967295"],
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "start-up took {:?}",
        started.elapsed()
    );
    let mut c = server.connect();
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "maxclients"]),
        format!("maxclients\n{}", nofile - 32)
    );
}
