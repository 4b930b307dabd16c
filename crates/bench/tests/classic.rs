//! The keel-bench binary in redis-benchmark mode against a started
//! keel-server and redis-server: quiet output, a two-target comparison with
//! its table and JSON, failures counted and shown, an unreachable target.

#![allow(clippy::unwrap_used)]
use keel_testkit::{free_port, Server};
use std::process::{Command, Output};

fn start(kind: &str) -> Server {
    keel_testkit::start(kind, free_port())
}

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keel-bench"))
        .args(args)
        .output()
        .expect("keel-bench runs")
}

fn rps_of(line: &str) -> f64 {
    let after = line.split(": ").nth(1).expect("a rate");
    after.split(' ').next().unwrap().parse().expect("a number")
}

#[test]
fn quiet_tests_against_keel_report_a_rate_per_test() {
    let keel = start("keel");
    let port = keel.port.to_string();
    let out = bench(&[
        "-p",
        &port,
        "-t",
        "set,get,ping_mbulk",
        "-n",
        "2000",
        "-q",
        "-r",
        "100",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    for (line, name) in lines.iter().zip(["PING_MBULK", "SET", "GET"]) {
        assert!(line.starts_with(&format!("{name}: ")), "{line}");
        assert!(line.contains(" requests per second, p50="), "{line}");
        assert!(!line.contains("failed"), "{line}");
        assert!(rps_of(line) > 0.0, "{line}");
    }
}

#[test]
fn comparing_keel_and_redis_writes_a_table_and_json_and_counts_failures() {
    let redis = start("redis");
    let keel = start("keel");
    let dir = std::env::temp_dir().join(format!("keel-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("run.json");
    let redis_t = format!("redis=127.0.0.1:{}", redis.port);
    let keel_t = format!("keel=127.0.0.1:{}", keel.port);
    let out = bench(&[
        "--target",
        &redis_t,
        "--target",
        &keel_t,
        "-t",
        "set,get,ping_mbulk,lpush",
        "-n",
        "2000",
        "-c",
        "10",
        "-P",
        "4",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("SET on redis: "), "{stdout}");
    assert!(stdout.contains("SET on keel: "), "{stdout}");
    // The comparison table: a header and a ratio per target.
    assert!(stdout.contains("ratio"), "{stdout}");

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["targets"][0]["name"], "redis");
    assert_eq!(v["targets"][1]["name"], "keel");
    let steps = v["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["PING_MBULK", "SET", "GET", "LPUSH"]);
    for step in steps {
        for o in step["outcomes"].as_array().unwrap() {
            assert_eq!(o["status"], "done");
            assert_eq!(o["ok"], 2000, "{o}");
            assert_eq!(o["failed"], 0, "{o}");
            assert!(o["elapsed"].as_f64().unwrap() > 0.0);
            assert!(o["latency"]["count"].as_u64().unwrap() == 2000);
            assert!(o["client_cpu"].as_f64().is_some());
        }
    }

    // Keel refuses MIGRATE (it has no client to another instance): every one
    // fails there, is counted, and says why (Redis answers NOKEY at once).
    let out = bench(&[
        "--target",
        &redis_t,
        "--target",
        &keel_t,
        "-n",
        "500",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "MIGRATE",
        "127.0.0.1",
        "1",
        "nokey",
        "0",
        "100",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("MIGRATE 127.0.0.1 1 nokey 0 100 on keel: "))
        .unwrap_or_else(|| panic!("a MIGRATE line for keel in {stdout}"));
    assert!(
        line.contains("500 failed") && line.contains("MIGRATE is not available"),
        "{line}"
    );
    assert!(
        stdout.contains("on keel: 500 x ERR MIGRATE is not available"),
        "{stdout}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let migrate = &v["steps"][0]["outcomes"];
    assert_eq!(migrate[0]["ok"], 500);
    assert_eq!(migrate[1]["ok"], 0);
    assert_eq!(migrate[1]["failed"], 500);
    assert!(migrate[1]["failure_kinds"][0][0]
        .as_str()
        .unwrap()
        .contains("MIGRATE is not available"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn default_output_and_csv_follow_redis_benchmark() {
    let redis = start("redis");
    let port = redis.port.to_string();
    let out = bench(&["-p", &port, "-t", "get", "-n", "1000", "-c", "5"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("====== GET ======\n  1000 requests completed in "),
        "{stdout}"
    );
    assert!(stdout.contains("  5 parallel clients\n"), "{stdout}");
    assert!(stdout.contains("throughput summary: "), "{stdout}");
    assert!(
        stdout.contains("avg       min       p50       p95       p99       max"),
        "{stdout}"
    );
    let out = bench(&["-p", &port, "-t", "ping_inline,incr", "-n", "1000", "--csv"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"");
    assert!(lines[1].starts_with("\"PING_INLINE\",\""), "{stdout}");
    assert!(lines[2].starts_with("\"INCR\",\""), "{stdout}");
    assert_eq!(lines.len(), 3);
}

#[test]
fn an_unreachable_target_fails_with_its_address() {
    let port = free_port().to_string();
    let out = bench(&["-p", &port, "-t", "set", "-n", "10"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
}

#[test]
fn a_target_that_is_down_is_reported_once_not_per_test() {
    let redis = start("redis");
    let redis_t = format!("redis=127.0.0.1:{}", redis.port);
    let port = free_port();
    let gone = format!("gone=127.0.0.1:{port}");
    let dir = std::env::temp_dir().join(format!("keel-bench-down-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("run.json");
    let out = bench(&[
        "--target",
        &redis_t,
        "--target",
        &gone,
        "-t",
        "set,get,incr",
        "-n",
        "200",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let addr = format!("127.0.0.1:{port}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches(&addr).count(), 1, "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let told: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("cannot connect"))
        .collect();
    assert_eq!(told.len(), 1, "{stdout}");
    assert!(told[0].contains("gone: failed at 3 steps"), "{}", told[0]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["targets"][0]["version"], "redis 7.0.15");
    assert!(v["targets"][1]["version"].is_null());
    assert_eq!(v["steps"].as_array().unwrap().len(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}
