//! End-to-end runs of the shipped scenario files with `--short`: the built
//! keel-bench starts redis-server and this workspace's keel-server itself,
//! and the JSON report must hold every step, measured where the server has
//! the commands and unsupported where it does not. Also: the Bloom scenario
//! against a small stand-in server that has BF.* (Debian's Redis lacks
//! them), a malformed file, and an unreachable target.

#![allow(clippy::unwrap_used)]

use bytes::Bytes;
use keel_resp::{parse_frame, Frame};
use keel_testkit::keel_binary;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output};

fn scenario(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("keel-bench-test-{}-{name}", std::process::id()))
}

/// Run `keel-bench run FILE --short --json OUT extra...`; the output and the
/// parsed JSON (if written).
fn run(file: &PathBuf, extra: &[&str]) -> (Output, Option<Value>) {
    // Tests run in parallel and several run the same scenario: each run gets
    // its own file.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let json = tmp(&format!(
        "{}-{n}.json",
        file.file_stem().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_file(&json);
    let keel = format!("keel-server={}", keel_binary().display());
    let out = Command::new(env!("CARGO_BIN_EXE_keel-bench"))
        .arg("run")
        .arg(file)
        .args(["--short", "--bin", &keel, "--json"])
        .arg(&json)
        .args(extra)
        .output()
        .unwrap();
    let value = std::fs::read_to_string(&json)
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    let _ = std::fs::remove_file(&json);
    (out, value)
}

fn text(o: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// (target names, [(step name, [outcome per target])]).
fn outcomes(v: &Value) -> (Vec<String>, Vec<(String, Vec<Value>)>) {
    let targets = v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    let steps = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["outcomes"].as_array().unwrap().clone(),
            )
        })
        .collect();
    (targets, steps)
}

fn assert_done(step: &str, target: &str, o: &Value) {
    assert_eq!(o["status"], "done", "{step} on {target}: {o}");
    assert!(o["ok"].as_u64().unwrap() > 0, "{step} on {target}: {o}");
    assert_eq!(o["failed"].as_u64().unwrap(), 0, "{step} on {target}: {o}");
}

fn assert_unsupported(step: &str, target: &str, o: &Value, needle: &str) {
    assert_eq!(o["status"], "unsupported", "{step} on {target}: {o}");
    let reason = o["reason"].as_str().unwrap();
    assert!(reason.contains(needle), "{step} on {target}: {reason}");
}

#[test]
fn bloom_dedup_runs_on_keel_and_is_unsupported_without_bloom_filters() {
    let (out, v) = run(&scenario("bloom-dedup.toml"), &[]);
    assert!(out.status.success(), "{}", text(&out));
    let (targets, steps) = outcomes(&v.unwrap());
    assert_eq!(targets, ["redis", "keel"]);
    let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["warm-up insert-guids", "insert-guids", "check-existence"]
    );
    for (step, os) in &steps {
        // Debian's Redis has no RedisBloom module.
        assert_unsupported(step, "redis", &os[0], "BF.");
        // Keel answers every request; a check of a fresh id that answers 1
        // is a false positive, counted as a failure, and rare at 1e-4.
        let keel = &os[1];
        assert_eq!(keel["status"], "done", "{step} on keel: {keel}");
        let ok = keel["ok"].as_u64().unwrap();
        let failed = keel["failed"].as_u64().unwrap();
        assert!(ok > 0, "{step} on keel: {keel}");
        assert!(failed * 100 <= ok, "{step} on keel: {keel}");
    }
}

#[test]
fn persistence_measures_redis_under_each_fsync_policy() {
    let (out, v) = run(&scenario("persistence.toml"), &[]);
    assert!(out.status.success(), "{}", text(&out));
    let (targets, steps) = outcomes(&v.unwrap());
    assert_eq!(
        targets,
        [
            "redis-no",
            "redis-everysec",
            "redis-always",
            "keel-no",
            "keel-everysec",
            "keel-always"
        ]
    );
    assert_eq!(steps.len(), 2 * 4, "PING, SET, GET, EVAL_SET at -c 1 and 8");
    for (step, os) in &steps {
        for (t, o) in targets.iter().zip(os) {
            assert_done(step, t, o);
        }
    }
    assert!(steps.iter().any(|(n, _)| n == "EVAL_SET 3B -c 8"));
}

#[test]
fn cache_schemas_measure_the_seed_method_and_keels_variant() {
    let html = tmp("cache.html");
    let (out, v) = run(
        &scenario("cache-schemas.toml"),
        &["--html", html.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v = v.unwrap();
    let (targets, steps) = outcomes(&v);
    assert_eq!(targets, ["redis", "keel"]);
    // 4 schemas x (seed write + read, Keel's write + read), then 2 kinds x
    // 3 arrangements x (write + read).
    assert_eq!(steps.len(), 16 + 12);
    let metric = |o: &Value, name: &str| {
        o["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m[0] == name)
            .and_then(|m| m[1].as_f64())
    };
    for (step, os) in &steps {
        for (target, o) in targets.iter().zip(os) {
            assert_done(step, target, o);
            if step.starts_with("seed ") {
                assert_eq!(metric(o, "iterations"), Some(2.0), "{step} on {target}");
                assert!(metric(o, "mean ms").unwrap() > 0.0, "{step} on {target}");
            } else if step.starts_with("write") {
                let mem = metric(o, "memory bytes")
                    .unwrap_or_else(|| panic!("{step}: no memory figure in {o}"));
                assert!(mem > 0.0, "{step} on {target}: {mem}");
            }
            // Server CPU from the scheduler's nanosecond counters.
            if std::path::Path::new("/proc/self/schedstat").exists() {
                assert_eq!(o["server_cpu_source"], "schedstat", "{step} on {target}");
            }
        }
    }
    // The study writes a hash with one command: one request per iteration,
    // a step of well under the 100 ms interval, and still a line of several
    // buckets (sized to the step) in the report.
    let (_, os) = steps
        .iter()
        .find(|(n, _)| n == "seed O3_Set_Hash x200")
        .unwrap();
    for o in os {
        assert_eq!(o["ok"], 2, "{o}");
        assert!(o["interval"].as_f64().unwrap() < 0.01, "{o}");
        assert!(o["timeline"].as_array().unwrap().len() > 1, "{o}");
    }
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_file(&html);
    let section = page
        .split("<h2>seed O3_Set_Hash x200</h2>")
        .nth(1)
        .unwrap()
        .split("<h2>")
        .next()
        .unwrap();
    assert!(section.matches("<polyline").count() >= 2, "{section}");
    // The study's table shape, both servers side by side, then Keel's own.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("| Method | redis mean | redis stddev | redis rank | keel mean |"),
        "{stdout}"
    );
    for m in [
        "| O3_Set_Hash |",
        "| O4_Get_Sets |",
        "| O2_ReadHash_RequestIdAndProductIdInKey |",
    ] {
        assert!(stdout.contains(m), "{m}: {stdout}");
    }
    assert!(stdout.contains("Keel's variant"), "{stdout}");
    assert!(
        page.contains("Seed 002&#39;s method"),
        "the tables are in the page too"
    );
}

#[test]
fn reports_say_what_ran_where_and_how() {
    let html = tmp("meta.html");
    let (out, v) = run(
        &scenario("cache-schemas.toml"),
        &["--html", html.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v = v.unwrap();
    let meta = &v["meta"];
    let line = meta["command_line"].as_str().unwrap();
    assert!(
        line.contains(" run ") && line.contains("cache-schemas.toml") && line.contains("--short"),
        "{line}"
    );
    let date = meta["date"].as_str().unwrap();
    assert!(
        date.len() == 20 && date.starts_with("20") && date.ends_with('Z'),
        "{date}"
    );
    let cores = meta["host"]["cores"].as_u64().unwrap();
    assert!(cores >= 1);
    let model = meta["host"]["model"].as_str().unwrap();
    assert!(!model.is_empty());
    assert_eq!(v["targets"][0]["version"], "redis 7.0.15");
    let keel = v["targets"][1]["version"].as_str().unwrap();
    assert!(
        keel.starts_with("keel ") && keel.contains("redis_version 7.0.15"),
        "{keel}"
    );
    for t in v["targets"].as_array().unwrap() {
        assert!(t["threads"].as_u64().unwrap() >= 1, "{t}");
    }
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_file(&html);
    for needle in [
        date,
        "redis 7.0.15",
        keel,
        &format!("{cores} cores"),
        "--short",
    ] {
        assert!(page.contains(needle), "{needle}");
    }
    assert!(page.contains("<dt>srv us/req</dt>") && page.contains("<dt>cpu us/req</dt>"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("legend: srv us/req:"), "{stdout}");
    assert!(stdout.contains(&format!("run: {date}")), "{stdout}");
}

#[test]
fn batching_runs_every_mode_on_both_servers() {
    let html = tmp("batching.html");
    let (out, v) = run(
        &scenario("batching.toml"),
        &["--html", html.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    let (targets, steps) = outcomes(&v.unwrap());
    assert_eq!(targets, ["redis", "keel"]);
    let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "request-response c=1",
            "pipeline 8 c=1",
            "auto-pipelining c=1",
            "request-response c=32",
            "pipeline 8 c=32",
            "auto-pipelining c=32"
        ]
    );
    for (step, os) in &steps {
        for (t, o) in targets.iter().zip(os) {
            assert_done(step, t, o);
            assert!(o["server_cpu"].is_number(), "{step} on {t}: {o}");
        }
    }
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_file(&html);
    assert!(page.contains("auto-pipelining c=32") && page.contains("<svg"));
    assert!(!page.contains("http://") && !page.contains("https://"));
}

/// A stand-in server with Bloom filter commands: every 50th BF.EXISTS
/// answers 1, so false positives must be counted as failures.
fn fake_bloom_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut s) = conn else { return };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let mut checks = 0u64;
                loop {
                    let n = match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    buf.extend_from_slice(&chunk[..n]);
                    let mut out = Vec::new();
                    loop {
                        let data = Bytes::copy_from_slice(&buf);
                        let Ok(Some((Frame::Array(args), used))) = parse_frame(&data) else {
                            break;
                        };
                        buf.drain(..used);
                        let name = match &args[0] {
                            Frame::Bulk(b) => String::from_utf8_lossy(b).to_ascii_uppercase(),
                            _ => String::new(),
                        };
                        let reply: Vec<u8> = match name.as_str() {
                            "PING" => b"+PONG\r\n".to_vec(),
                            "COMMAND" => {
                                let mut r = format!("*{}\r\n", args.len() - 2).into_bytes();
                                for _ in 2..args.len() {
                                    r.extend_from_slice(b"*1\r\n$1\r\nx\r\n");
                                }
                                r
                            }
                            "DEL" => b":0\r\n".to_vec(),
                            "BF.RESERVE" => b"+OK\r\n".to_vec(),
                            "BF.ADD" => b":1\r\n".to_vec(),
                            "BF.EXISTS" => {
                                checks += 1;
                                if checks.is_multiple_of(50) {
                                    b":1\r\n".to_vec()
                                } else {
                                    b":0\r\n".to_vec()
                                }
                            }
                            "BF.DEBUG" => b"*2\r\n$9\r\nsize:1234\r\n$7\r\nbytes:9\r\n".to_vec(),
                            "INFO" => b"$20\r\nused_memory:4242\r\n\r\n\r\n".to_vec(),
                            _ => b"-ERR unknown command\r\n".to_vec(),
                        };
                        out.extend_from_slice(&reply);
                    }
                    if s.write_all(&out).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn bloom_dedup_counts_false_positives_as_failures() {
    let port = fake_bloom_server();
    let target = format!("bloom=127.0.0.1:{port}");
    let (out, v) = run(&scenario("bloom-dedup.toml"), &["--target", &target]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ok stats") && stdout.contains("fail stats"),
        "{stdout}"
    );
    assert!(stdout.contains("size:1234"), "{stdout}");
    let (targets, steps) = outcomes(&v.unwrap());
    assert_eq!(targets, ["bloom"]);
    assert_done(&steps[0].0, "bloom", &steps[0].1[0]);
    assert_done(&steps[1].0, "bloom", &steps[1].1[0]);
    let check = &steps[2].1[0];
    assert_eq!(check["status"], "done");
    let failed = check["failed"].as_u64().unwrap();
    let all = failed + check["ok"].as_u64().unwrap();
    assert!(failed > 0 && failed * 50 <= all + 50, "{check}");
    assert_eq!(check["failure_kinds"][0][0], "false positive");
    let metric = |name: &str| {
        check["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m[0] == name)
            .map(|m| m[1].as_f64().unwrap())
            .unwrap_or_else(|| panic!("no {name} in {check}"))
    };
    assert!((metric("desired error rate %") - 0.01).abs() < 1e-9);
    assert!((metric("actual error rate %") - 2.0).abs() < 0.5);
    assert_eq!(metric("items in filter"), 1234.0);
    assert_eq!(metric("used_memory bytes"), 4242.0);
}

#[test]
fn a_malformed_file_names_the_line_and_key() {
    let bad = tmp("bad.toml");
    std::fs::write(
        &bad,
        "title = \"x\"\nkind = \"batching\"\n[params]\ncallers = [1, 0]\n",
    )
    .unwrap();
    let (out, _) = run(&bad, &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml"), "{err}");
    assert!(
        err.contains("line 4") && err.contains("params.callers"),
        "{err}"
    );
    std::fs::write(
        &bad,
        "title = \"x\"\nkind = \"batching\"\n[params]\ncalers = [1]\n",
    )
    .unwrap();
    let (out, _) = run(&bad, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 4") && err.contains("calers"), "{err}");
    let _ = std::fs::remove_file(&bad);
}

#[test]
fn an_unreachable_target_fails_and_the_run_goes_on() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gone = format!("gone=127.0.0.1:{port}");
    let fake = format!("bloom=127.0.0.1:{}", fake_bloom_server());
    let (out, v) = run(
        &scenario("bloom-dedup.toml"),
        &["--target", &gone, "--target", &fake],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach"));
    let (_, steps) = outcomes(&v.unwrap());
    for (step, os) in &steps {
        assert_eq!(os[0]["status"], "failed", "{step}");
        assert_eq!(os[1]["status"], "done", "{step}");
    }
}
