//! End-to-end protocol tests against the real `keel-server` binary: raw RESP over
//! TCP (framing, pipelining, malformed input, size limits, maxclients) and the
//! process lifecycle (config errors at start-up, SIGTERM).

use keel_testkit::free_port;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_keel-server");

/// A running server, killed when dropped so a failing test leaves nothing behind.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let port = free_port();
        let port_s = port.to_string();
        let mut args = vec![
            "--port",
            &port_s,
            "--bind",
            "127.0.0.1",
            "--threads",
            "1",
            "--save",
            "",
        ];
        args.extend_from_slice(extra);
        let child = Command::new(BIN)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn keel-server");
        let mut s = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = s.child.try_wait() {
                panic!("keel-server exited early with {status}");
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return s;
            }
            assert!(Instant::now() < deadline, "keel-server did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn connect(&self) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        s.set_nodelay(true).expect("nodelay");
        Conn { s }
    }

    /// A connection that has been served a PING, retrying while the server still
    /// counts an earlier, already closed connection against `maxclients`.
    fn connect_served(&self) -> Conn {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let mut c = self.connect();
            c.send(b"PING\r\n");
            let mut buf = [0u8; 7];
            if c.s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n" {
                return c;
            }
            assert!(Instant::now() < deadline, "no connection slot freed up");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A `Vm*` figure from /proc/PID/status, in KiB.
    fn proc_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("Vm line")
    }

    /// Resident set size in KiB.
    fn rss_kib(&self) -> u64 {
        self.proc_kib("VmRSS:")
    }

    /// Virtual size in KiB: catches reservations that are never touched, which
    /// the resident size would not show.
    fn vsz_kib(&self) -> u64 {
        self.proc_kib("VmSize:")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Conn {
    s: TcpStream,
}

impl Conn {
    fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("write");
    }

    /// Read exactly `expected.len()` bytes and compare.
    fn expect(&mut self, expected: &[u8]) {
        let mut got = vec![0u8; expected.len()];
        self.s.read_exact(&mut got).unwrap_or_else(|e| {
            panic!(
                "reading {:?}: {e}",
                String::from_utf8_lossy(expected).as_ref()
            )
        });
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected)
        );
    }

    /// Read until the peer closes; returns everything read. Fails if the server
    /// keeps the connection open past the read timeout.
    fn read_to_close(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        match self.s.read_to_end(&mut out) {
            Ok(_) => out,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => out,
            Err(e) => panic!(
                "connection not closed ({e}); read so far {:?}",
                String::from_utf8_lossy(&out)
            ),
        }
    }

    /// Assert nothing arrives within a short wait and the connection stays open.
    fn expect_silence(&mut self) {
        self.s
            .set_read_timeout(Some(Duration::from_millis(300)))
            .expect("timeout");
        let mut b = [0u8; 64];
        match self.s.read(&mut b) {
            Ok(0) => panic!("server closed the connection"),
            Ok(n) => panic!("unexpected reply {:?}", String::from_utf8_lossy(&b[..n])),
            Err(e) => assert!(
                matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "{e}"
            ),
        }
        self.s
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
    }
}

fn multibulk(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn bulk(v: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", v.len()).into_bytes();
    out.extend_from_slice(v);
    out.extend_from_slice(b"\r\n");
    out
}

#[test]
fn multibulk_and_inline_commands() {
    let srv = Server::start(&[]);
    let mut c = srv.connect();
    c.send(&multibulk(&[b"PING"]));
    c.expect(b"+PONG\r\n");
    c.send(&multibulk(&[b"SET", b"k", b"a\r\nb\0c"]));
    c.expect(b"+OK\r\n");
    c.send(&multibulk(&[b"GET", b"k"]));
    c.expect(&bulk(b"a\r\nb\0c"));
    c.send(b"PING\r\n");
    c.expect(b"+PONG\r\n");
    // Inline quoting follows redis-cli: double quotes with escapes, bare LF ends a line.
    c.send(b"SET  k2   \"x y\\x41\"\n");
    c.expect(b"+OK\r\n");
    c.send(b"GET k2\r\n");
    c.expect(&bulk(b"x yA"));
    c.send(b"ECHO 'it\\'s'\r\n");
    c.expect(&bulk(b"it's"));
    // Empty lines and empty multibulks are skipped without a reply.
    c.send(b"\r\n\r\n*0\r\n*-1\r\nPING\r\n");
    c.expect(b"+PONG\r\n");
    c.send(&multibulk(&[b"GET", b"missing"]));
    c.expect(b"$-1\r\n");
}

#[test]
fn pipelined_commands_reply_in_order() {
    let srv = Server::start(&[]);
    let mut c = srv.connect();
    let n = 2000;
    let mut req = Vec::new();
    let mut want = Vec::new();
    for i in 0..n {
        let k = format!("key:{i}");
        let v = format!("value:{i}");
        req.extend(multibulk(&[b"SET", k.as_bytes(), v.as_bytes()]));
        req.extend(multibulk(&[b"GET", k.as_bytes()]));
        // Mix in inline commands too: they share the same buffer.
        req.extend_from_slice(format!("ECHO {i}\r\n").as_bytes());
        want.extend_from_slice(b"+OK\r\n");
        want.extend(bulk(v.as_bytes()));
        want.extend(bulk(i.to_string().as_bytes()));
    }
    c.send(&req);
    c.expect(&want);
}

#[test]
fn command_split_across_writes() {
    let srv = Server::start(&[]);
    let mut c = srv.connect();
    let req = multibulk(&[b"SET", b"split", b"hello world"]);
    for chunk in req.chunks(3) {
        c.send(chunk);
        std::thread::sleep(Duration::from_millis(5));
    }
    c.expect(b"+OK\r\n");
    // Cut exactly between the CR and LF of a header, and of an inline line.
    c.send(b"*2\r\n$3\r");
    std::thread::sleep(Duration::from_millis(30));
    c.send(b"\nGET\r\n$5\r\nsplit\r");
    std::thread::sleep(Duration::from_millis(30));
    c.send(b"\nPI");
    std::thread::sleep(Duration::from_millis(30));
    c.send(b"NG\r");
    std::thread::sleep(Duration::from_millis(30));
    c.send(b"\n");
    c.expect(&bulk(b"hello world"));
    c.expect(b"+PONG\r\n");
    // A large value arriving in many reads.
    let big = vec![b'z'; 300_000];
    let req = multibulk(&[b"SET", b"big", &big]);
    for chunk in req.chunks(7919) {
        c.send(chunk);
    }
    c.expect(b"+OK\r\n");
    c.send(&multibulk(&[b"GET", b"big"]));
    c.expect(&bulk(&big));
}

/// Send `req` on a fresh connection and check the server answers with a protocol
/// error and closes the connection; replies for commands before it still arrive.
fn assert_protocol_error(srv: &Server, req: &[u8], want: &str) {
    let mut c = srv.connect();
    c.send(req);
    let got = c.read_to_close();
    assert_eq!(
        String::from_utf8_lossy(&got),
        want,
        "request {:?}",
        String::from_utf8_lossy(req)
    );
}

#[test]
fn malformed_requests_get_error_and_close() {
    let srv = Server::start(&[]);
    assert_protocol_error(
        &srv,
        b"*abc\r\n",
        "-ERR Protocol error: invalid multibulk length\r\n",
    );
    assert_protocol_error(
        &srv,
        b"*1\r\n+x\r\n",
        "-ERR Protocol error: expected '$', got '+'\r\n",
    );
    assert_protocol_error(
        &srv,
        b"*1\r\n$abc\r\n",
        "-ERR Protocol error: invalid bulk length\r\n",
    );
    assert_protocol_error(
        &srv,
        b"*1\r\n$-1\r\n",
        "-ERR Protocol error: invalid bulk length\r\n",
    );
    assert_protocol_error(
        &srv,
        b"PING\r\nSET a \"b\r\nPING\r\n",
        "+PONG\r\n-ERR Protocol error: unbalanced quotes in request\r\n",
    );
    // Commands pipelined ahead of the bad one are answered first.
    let mut req = multibulk(&[b"PING"]);
    req.extend_from_slice(b"*2\r\n$4\r\nECHO\r\n:1\r\n");
    assert_protocol_error(
        &srv,
        &req,
        "+PONG\r\n-ERR Protocol error: expected '$', got ':'\r\n",
    );
    // The server itself is unaffected.
    let mut c = srv.connect();
    c.send(b"PING\r\n");
    c.expect(b"+PONG\r\n");
}

#[test]
fn huge_claims_are_rejected_without_allocating() {
    let srv = Server::start(&[]);
    let mut warm = srv.connect();
    warm.send(b"PING\r\n");
    warm.expect(b"+PONG\r\n");
    let before = srv.rss_kib();
    let vsz_before = srv.vsz_kib();

    assert_protocol_error(
        &srv,
        b"*2147483648\r\n",
        "-ERR Protocol error: invalid multibulk length\r\n",
    );
    assert_protocol_error(
        &srv,
        b"*1\r\n$600000000\r\n",
        "-ERR Protocol error: invalid bulk length\r\n",
    );
    assert_protocol_error(
        &srv,
        b"*9223372036854775807\r\n",
        "-ERR Protocol error: invalid multibulk length\r\n",
    );

    // Claims inside the limits but with nothing behind them must not reserve
    // memory either: the server waits for the bytes to actually arrive.
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut c = srv.connect();
        c.send(b"*2147483647\r\n$3\r\nSET\r\n");
        c.expect_silence();
        held.push(c);
        let mut c = srv.connect();
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$500000000\r\nabc");
        c.expect_silence();
        held.push(c);
    }
    let after = srv.rss_kib();
    assert!(
        after < before + 32 * 1024,
        "RSS grew from {before} KiB to {after} KiB"
    );
    // Four 500 MB reservations would add 2 GB of address space.
    let vsz_after = srv.vsz_kib();
    assert!(
        vsz_after < vsz_before + 1024 * 1024,
        "virtual size grew from {vsz_before} KiB to {vsz_after} KiB"
    );
    eprintln!("rss {before}->{after} KiB, vsz {vsz_before}->{vsz_after} KiB");
    drop(held);
    warm.send(b"PING\r\n");
    warm.expect(b"+PONG\r\n");
}

#[test]
fn inline_request_over_64k_is_rejected() {
    let srv = Server::start(&[]);
    // Just under the limit is a normal (if unknown) command.
    let mut c = srv.connect();
    let mut line = b"ECHO ".to_vec();
    line.resize(line.len() + 60 * 1024, b'a');
    line.extend_from_slice(b"\r\n");
    c.send(&line);
    c.expect(&bulk(&vec![b'a'; 60 * 1024]));

    // Over the limit without a newline: rejected as soon as the buffer passes 64 KiB.
    let mut c = srv.connect();
    let big = vec![b'a'; 64 * 1024 + 100];
    c.send(&big);
    let got = c.read_to_close();
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR Protocol error: too big inline request\r\n"
    );

    // Over the limit with the newline arriving in the same write.
    let mut c = srv.connect();
    let mut big = b"ECHO ".to_vec();
    big.resize(big.len() + 70 * 1024, b'b');
    big.extend_from_slice(b"\r\n");
    c.send(&big);
    let got = c.read_to_close();
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR Protocol error: too big inline request\r\n"
    );
}

#[test]
fn maxclients_refuses_extra_connections() {
    let srv = Server::start(&["--maxclients", "2"]);
    // The start-up probe may still hold a slot for a moment; both of these are
    // registered once they have been answered.
    let a = srv.connect_served();
    let mut b = srv.connect_served();
    let mut c = srv.connect();
    let got = c.read_to_close();
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR max number of clients reached\r\n"
    );
    // Closing one frees a slot.
    drop(a);
    let _d = srv.connect_served();
    b.send(b"PING\r\n");
    b.expect(b"+PONG\r\n");
}

/// Run the binary expecting it to fail at start-up; returns (exit code, stderr+stdout).
fn run_failing(args: &[&str]) -> (i32, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("keel-server {args:?} kept running");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut text = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut text);
    }
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut text);
    }
    (status.code().unwrap_or(-1), text)
}

fn temp_file(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("keel-tcp-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write config");
    path
}

#[test]
fn unknown_directive_on_command_line_fails_startup() {
    let port = free_port().to_string();
    let (code, text) = run_failing(&["--port", &port, "--frobnicate", "yes"]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("(command line)"), "{text}");
    assert!(text.contains("line 2"), "{text}");
    assert!(text.contains("frobnicate"), "{text}");
}

#[test]
fn unknown_directive_in_config_file_fails_startup() {
    let port = free_port();
    let path = temp_file(
        "bad.conf",
        &format!("# a comment\nport {port}\n\nbind 127.0.0.1\nnot-a-directive 42\n"),
    );
    let path_s = path.to_string_lossy().into_owned();
    let (code, text) = run_failing(&[&path_s]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains(&path_s), "{text}");
    assert!(text.contains("line 5"), "{text}");
    assert!(text.contains("not-a-directive"), "{text}");

    // A bad value for a known directive is reported the same way.
    let path = temp_file("bad-value.conf", "port notanumber\n");
    let path_s = path.to_string_lossy().into_owned();
    let (code, text) = run_failing(&[&path_s]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("line 1"), "{text}");
    assert!(text.contains("port"), "{text}");

    // A missing file names the file.
    let (code, text) = run_failing(&["/nonexistent/keel.conf"]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("/nonexistent/keel.conf"), "{text}");
}

#[test]
fn config_file_is_applied() {
    let port = free_port();
    let path = temp_file(
        "good.conf",
        &format!("port {port}\nbind 127.0.0.1\nthreads 1\nmaxclients 1\nsave \"\"\n"),
    );
    let mut child = Command::new(BIN)
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let srv = Server {
        port,
        child: {
            // Wait for the listener before handing it to the guard.
            let deadline = Instant::now() + Duration::from_secs(10);
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                if let Ok(Some(st)) = child.try_wait() {
                    panic!("exited early: {st}");
                }
                assert!(Instant::now() < deadline, "did not listen");
                std::thread::sleep(Duration::from_millis(20));
            }
            child
        },
    };
    // maxclients 1 from the file: one client works, a second is refused.
    let mut a = srv.connect_served();
    let mut b = srv.connect();
    assert_eq!(
        String::from_utf8_lossy(&b.read_to_close()),
        "-ERR max number of clients reached\r\n"
    );
    a.send(b"PING\r\n");
    a.expect(b"+PONG\r\n");
}

#[test]
fn sigterm_exits_cleanly_with_a_log_line() {
    let mut srv = Server::start(&[]);
    let mut c = srv.connect();
    c.send(b"PING\r\n");
    c.expect(b"+PONG\r\n");
    let status = Command::new("kill")
        .args(["-TERM", &srv.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(st) = srv.child.try_wait().expect("wait") {
            break st;
        }
        assert!(Instant::now() < deadline, "server ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(exit.code(), Some(0), "{exit}");
    let mut log = String::new();
    if let Some(mut out) = srv.child.stdout.take() {
        out.read_to_string(&mut log).expect("read log");
    }
    assert!(log.contains("Received SIGTERM"), "{log}");
    assert!(log.contains("ready to exit"), "{log}");
    // Clients are disconnected, not left hanging.
    let rest = c.read_to_close();
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
}
