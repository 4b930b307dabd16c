//! `keel-bench pubsub` against a started keel-server and redis-server: every
//! message published reaches every subscriber of its channel, and the line
//! says so with a delivery rate and the server's CPU per message.

#![allow(clippy::unwrap_used)]
use keel_testkit::{free_port, Server};
use std::process::Command;

fn run(server: &Server, extra: &[&str]) -> String {
    let port = server.port.to_string();
    let mut args = vec!["pubsub", "-p", &port, "--seconds", "0.3"];
    args.extend_from_slice(extra);
    let out = Command::new(env!("CARGO_BIN_EXE_keel-bench"))
        .args(&args)
        .output()
        .expect("keel-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `delivered D/s` and `N of M delivered` from the report line.
fn delivered(line: &str) -> (f64, u64, u64) {
    let rate = line.split("delivered ").nth(1).unwrap();
    let rate: f64 = rate.split('/').next().unwrap().parse().unwrap();
    let counts = line.split("; ").last().unwrap();
    let mut words = counts.split(' ');
    let got: u64 = words.next().unwrap().parse().unwrap();
    assert_eq!(words.next(), Some("of"), "{line}");
    let want: u64 = words.next().unwrap().parse().unwrap();
    (rate, got, want)
}

#[test]
fn fan_out_and_fan_in_deliver_everything_on_both_servers() {
    for kind in ["keel", "redis"] {
        let server = keel_testkit::start(kind, free_port());
        for extra in [
            &["--subscribers", "20", "-P", "4"][..],
            &[
                "--publishers",
                "5",
                "--subscribers",
                "6",
                "--channels",
                "3",
                "-d",
                "10",
            ][..],
        ] {
            let line = run(&server, extra);
            let (rate, got, want) = delivered(&line);
            assert!(rate > 0.0 && got == want && want > 0, "{kind}: {line}");
            assert!(line.contains(" us/delivered ("), "{kind}: {line}");
            assert!(!line.contains("disconnected"), "{kind}: {line}");
        }
    }
}

#[test]
fn bad_options_are_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_keel-bench"))
        .args(["pubsub", "-P", "0"])
        .output()
        .expect("keel-bench runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("-P wants a positive integer"));
}
