//! `client-output-buffer-limit` against the real `keel-server` binary: a
//! subscriber that stops reading is closed once a publisher floods it past
//! its class's hard limit, and one under the default limits is not. Each test
//! runs against Keel and against redis-server, which behave alike.

use keel_testkit::{stable_port, start_with};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn command(words: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n", w.len()).as_bytes());
        out.extend_from_slice(w);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A subscriber to `ch` that has read its confirmation and reads nothing more.
fn stalled_subscriber(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s.write_all(&command(&[b"SUBSCRIBE", b"ch"]))
        .expect("subscribe");
    let mut confirmation = [0u8; 64];
    let mut got = 0;
    while !confirmation[..got].ends_with(b":1\r\n") {
        let n = s.read(&mut confirmation[got..]).expect("confirmation");
        assert!(n > 0, "closed before confirming");
        got += n;
    }
    s
}

/// Publish 64 KiB messages on `ch` until nobody receives them; returns how
/// many bytes that took, or None if `budget` bytes were not enough.
fn publish_until_nobody_hears(port: u16, budget: usize) -> Option<usize> {
    let p = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    p.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut w = p.try_clone().expect("clone");
    let mut r = BufReader::new(p);
    let message = vec![b'm'; 64 * 1024];
    let publish = command(&[b"PUBLISH", b"ch", &message]);
    let mut sent = 0;
    while sent < budget {
        w.write_all(&publish).expect("publish");
        sent += message.len();
        let mut line = String::new();
        r.read_line(&mut line).expect("reply");
        if line == ":0\r\n" {
            return Some(sent);
        }
        assert_eq!(line, ":1\r\n");
    }
    None
}

#[test]
fn a_stalled_subscriber_is_closed_at_the_pubsub_hard_limit() {
    for kind in ["keel", "redis"] {
        stalled_subscriber_is_closed(kind);
    }
}

fn stalled_subscriber_is_closed(kind: &str) {
    let server = start_with(
        kind,
        stable_port(),
        &["--client-output-buffer-limit", "pubsub 1mb 256kb 60"],
    );
    let mut sub = stalled_subscriber(server.port);
    // Socket buffers on both ends take some megabytes before the server holds any.
    let sent = publish_until_nobody_hears(server.port, 256 << 20)
        .unwrap_or_else(|| panic!("{kind}: the subscriber was never closed"));
    assert!(sent > 1 << 20, "{kind}: closed after only {sent} bytes");
    // What it had been sent before the close arrives, then the end.
    let mut sink = vec![0u8; 1 << 20];
    loop {
        match sub.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => panic!("{kind}: expected the connection to end: {e}"),
        }
    }
}

#[test]
fn the_default_limits_keep_a_subscriber_stalled_for_a_few_megabytes() {
    for kind in ["keel", "redis"] {
        let server = start_with(kind, stable_port(), &[]);
        let _sub = stalled_subscriber(server.port);
        // Under the default 32 MiB hard limit a few megabytes do not close it.
        assert_eq!(
            publish_until_nobody_hears(server.port, 8 << 20),
            None,
            "{kind}"
        );
    }
}
