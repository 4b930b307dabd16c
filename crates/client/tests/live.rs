//! keel-client against real servers: the keel-server binary from this workspace
//! and Debian's redis-server, each started on a free loopback port.

use keel_client::{Client, Error, Frame, Options};
use keel_testkit::{free_port, stable_port, start};
use std::time::Duration;

fn url(port: u16) -> String {
    format!("redis://127.0.0.1:{port}")
}

/// Ten thousand tasks share one client; each must get its own replies back.
async fn ten_thousand_tasks(port: u16) {
    let client = Client::connect(&url(port)).await.expect("connect");
    client.flushall().await.expect("flushall");
    let mut tasks = Vec::new();
    for i in 0..10_000u32 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            let key = format!("task:{i}");
            for n in 1..=3i64 {
                assert_eq!(c.incr(&key).await.expect("incr"), n);
            }
            let own = format!("value-{i}");
            c.set(format!("v:{i}"), &own).await.expect("set");
            assert_eq!(
                c.get(format!("v:{i}")).await.expect("get").as_deref(),
                Some(own.as_bytes())
            );
        }));
    }
    for t in tasks {
        t.await.expect("task finished");
    }
    assert_eq!(client.dbsize().await.expect("dbsize"), 20_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_tasks_keel() {
    let s = start("keel", free_port());
    ten_thousand_tasks(s.port).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_tasks_redis() {
    let s = start("redis", free_port());
    ten_thousand_tasks(s.port).await;
}

async fn resp3_and_errors(port: u16) {
    let c3 = Client::connect(&format!("{}?protocol=3", url(port)))
        .await
        .expect("connect resp3");
    c3.set("k", "v").await.expect("set");
    assert_eq!(c3.cmd(&["GET", "missing"]).await.expect("get"), Frame::Null);
    match c3.cmd(&["HELLO"]).await.expect("hello") {
        Frame::Map(fields) => assert!(fields
            .iter()
            .any(|(k, v)| k == &Frame::bulk("proto") && v == &Frame::Integer(3))),
        other => panic!("HELLO in RESP3 should be a map, got {other:?}"),
    }
    let c2 = Client::connect(&url(port)).await.expect("connect resp2");
    assert_eq!(c2.cmd(&["GET", "missing"]).await.expect("get"), Frame::Null);
    match c2.cmd(&["INCR", "k"]).await {
        Err(Error::Server(text)) => assert_eq!(text, "ERR value is not an integer or out of range"),
        other => panic!("expected a server error, got {other:?}"),
    }
    // The stream is still in step after an error reply.
    assert_eq!(c2.get("k").await.expect("get").as_deref(), Some(&b"v"[..]));
}

#[tokio::test]
async fn resp3_and_errors_keel() {
    let s = start("keel", free_port());
    resp3_and_errors(s.port).await;
}

#[tokio::test]
async fn resp3_and_errors_redis() {
    let s = start("redis", free_port());
    resp3_and_errors(s.port).await;
}

async fn timeout_keeps_stream_in_step(port: u16) {
    let options = Options {
        timeout: Some(Duration::from_millis(100)),
        ..Options::default()
    };
    let c = Client::connect_with(&url(port), options)
        .await
        .expect("connect");
    c.set("k", "v").await.expect("set");
    // The server is busy for 300 ms: this request times out, and its reply,
    // arriving later, must be discarded rather than handed to the next caller.
    match c.cmd(&["DEBUG", "SLEEP", "0.3"]).await {
        Err(Error::Timeout(_)) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    for _ in 0..50 {
        assert_eq!(c.get("k").await.expect("get").as_deref(), Some(&b"v"[..]));
    }
}

#[tokio::test]
async fn timeout_keeps_stream_in_step_keel() {
    let s = start("keel", free_port());
    timeout_keeps_stream_in_step(s.port).await;
}

#[tokio::test]
async fn timeout_keeps_stream_in_step_redis() {
    let s = start("redis", free_port());
    timeout_keeps_stream_in_step(s.port).await;
}

async fn restart_mid_load(kind: &str) {
    let port = stable_port();
    let server = start(kind, port);
    // A timeout as a backstop: whatever happens, no request may hang.
    let options = Options {
        timeout: Some(Duration::from_secs(3)),
        ..Options::default()
    };
    let c = Client::connect_with(&url(port), options)
        .await
        .expect("connect");
    c.set("k", "v").await.expect("set");
    let load: Vec<_> = (0..200)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move {
                let mut failed = 0;
                for _ in 0..50 {
                    if c.incr(format!("n{i}")).await.is_err() {
                        failed += 1;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                failed
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(30)).await;
    drop(server);
    // In-flight and new requests fail with a clear error instead of hanging.
    match tokio::time::timeout(Duration::from_secs(5), c.get("k")).await {
        Ok(Err(Error::Disconnected(_) | Error::Connect { .. })) => {}
        other => panic!("expected a connection error, got {other:?}"),
    }
    // Stay down longer than one whole reconnect round (5 attempts, 20 ms
    // backoff doubling: ~620 ms), so the callers still running see it fail
    // whatever the timing of the kill; a server that comes back within the
    // round is, by design, invisible to them.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let _server = start(kind, port);
    let mut failures = 0;
    for t in load {
        failures += tokio::time::timeout(Duration::from_secs(20), t)
            .await
            .expect("no hang")
            .expect("task");
    }
    assert!(failures > 0, "the restart should have failed some requests");
    c.set("after", "restart").await.expect("reconnected");
    assert_eq!(
        c.get("after").await.expect("get").as_deref(),
        Some(&b"restart"[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_mid_load_keel() {
    restart_mid_load("keel").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_mid_load_redis() {
    restart_mid_load("redis").await;
}

#[tokio::test]
async fn pipeline_and_transaction_keel() {
    let s = start("keel", free_port());
    let c = Client::connect(&url(s.port)).await.expect("connect");
    let mut p = c.pipeline();
    p.add(&["SET", "a", "1"])
        .add(&["INCR", "a"])
        .add(&["GET", "a"]);
    let replies: Vec<Frame> = p
        .execute()
        .await
        .expect("pipeline")
        .into_iter()
        .map(|r| r.expect("reply"))
        .collect();
    assert_eq!(
        replies,
        vec![Frame::ok(), Frame::Integer(2), Frame::bulk("2")]
    );
    let mut t = c.transaction();
    t.add(&["INCR", "a"]).add(&["INCR", "a"]);
    let replies = t.execute().await.expect("transaction");
    assert_eq!(replies, vec![Ok(Frame::Integer(3)), Ok(Frame::Integer(4))]);
    let mut bad = c.transaction();
    bad.add(&["GET"]);
    match bad.execute().await {
        Err(Error::Server(text)) => {
            assert!(text.starts_with("ERR wrong number of arguments"), "{text}")
        }
        other => panic!("expected the queued error, got {other:?}"),
    }
}

#[tokio::test]
async fn refused_connection_is_a_clear_error() {
    let port = free_port();
    match Client::connect(&url(port)).await {
        Err(Error::Connect { addr, .. }) => assert_eq!(addr, format!("127.0.0.1:{port}")),
        other => panic!("expected a connect error, got {other:?}"),
    }
}

/// Replies of many megabytes arrive over many reads, interleaved with small
/// ones, and a queue of one request still serves 200 callers (backpressure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_replies_and_backpressure_keel() {
    let s = start("keel", free_port());
    let options = Options {
        queue_len: 1,
        ..Options::default()
    };
    let c = Client::connect_with(&url(s.port), options)
        .await
        .expect("connect");
    let big: Vec<u8> = (0..8 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    c.set("big", big.clone()).await.expect("set big");
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let c = c.clone();
            let big = big.clone();
            tokio::spawn(async move {
                if i % 50 == 0 {
                    let got = c.get("big").await.expect("get big").expect("present");
                    assert!(got == big, "8 MiB value came back different");
                } else {
                    assert_eq!(c.incr(format!("n{i}")).await.expect("incr"), 1);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
}

/// A pool spreads requests over several connections (CLIENT LIST shows them)
/// and every task still gets its own replies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_of_connections_keel() {
    let s = start("keel", free_port());
    let options = Options {
        connections: 4,
        ..Options::default()
    };
    let c = Client::connect_with(&url(s.port), options)
        .await
        .expect("connect");
    let tasks: Vec<_> = (0..1000)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move {
                c.set(format!("p{i}"), format!("{i}")).await.expect("set");
                assert_eq!(
                    c.get(format!("p{i}")).await.expect("get"),
                    Some(bytes::Bytes::from(format!("{i}")))
                );
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
    let Frame::Bulk(list) = c.cmd(&["CLIENT", "LIST"]).await.expect("client list") else {
        panic!("CLIENT LIST should be a bulk string")
    };
    assert_eq!(String::from_utf8_lossy(&list).lines().count(), 4);
}

/// The typed methods of the other families, against redis-server (Keel serves
/// them from the issues that add those families).
async fn families(c: &Client) {
    assert_eq!(
        c.hset(b"h", &[(b"f1", b"a"), (b"f2", b"b")])
            .await
            .expect("hset"),
        2
    );
    assert_eq!(
        c.hget(b"h", b"f1").await.expect("hget").as_deref(),
        Some(&b"a"[..])
    );
    let mut all = c.hgetall(b"h").await.expect("hgetall");
    all.sort();
    assert_eq!(
        all,
        vec![
            (bytes::Bytes::from("f1"), bytes::Bytes::from("a")),
            (bytes::Bytes::from("f2"), bytes::Bytes::from("b"))
        ]
    );
    assert_eq!(c.hdel(b"h", &[b"f1", b"zz"]).await.expect("hdel"), 1);
    assert_eq!(c.sadd(b"s", &[b"x", b"y", b"x"]).await.expect("sadd"), 2);
    assert!(c.sismember(b"s", b"y").await.expect("sismember"));
    assert_eq!(c.smembers(b"s").await.expect("smembers").len(), 2);
    assert_eq!(c.srem(b"s", &[b"x"]).await.expect("srem"), 1);
    assert_eq!(c.rpush(b"l", &[b"a", b"b"]).await.expect("rpush"), 2);
    assert_eq!(c.lpush(b"l", &[b"z"]).await.expect("lpush"), 3);
    assert_eq!(
        c.lrange(b"l", 0, -1).await.expect("lrange"),
        vec!["z", "a", "b"]
    );
    assert_eq!(
        c.lpop(b"l").await.expect("lpop").as_deref(),
        Some(&b"z"[..])
    );
    assert_eq!(
        c.rpop(b"l").await.expect("rpop").as_deref(),
        Some(&b"b"[..])
    );
    assert_eq!(c.llen(b"l").await.expect("llen"), 1);
    assert_eq!(
        c.zadd(b"z", &[(2.5, b"b"), (1.0, b"a")])
            .await
            .expect("zadd"),
        2
    );
    assert_eq!(c.zscore(b"z", b"b").await.expect("zscore"), Some(2.5));
    assert_eq!(c.zscore(b"z", b"nope").await.expect("zscore"), None);
    assert_eq!(c.zrange(b"z", 0, -1).await.expect("zrange"), vec!["a", "b"]);
    assert_eq!(c.zrem(b"z", &[b"a"]).await.expect("zrem"), 1);
    // Without the Bloom module, BF.* is an unknown command: a clear server error.
    match c.bf_add(b"bf", b"item").await {
        Err(Error::Server(text)) => assert!(text.contains("unknown command"), "{text}"),
        other => panic!("expected an unknown-command error, got {other:?}"),
    }
}

#[tokio::test]
async fn family_methods_redis_resp2_and_resp3() {
    let s = start("redis", free_port());
    let c2 = Client::connect(&url(s.port)).await.expect("connect");
    families(&c2).await;
    c2.flushall().await.expect("flushall");
    let c3 = Client::connect(&format!("{}?protocol=3", url(s.port)))
        .await
        .expect("connect resp3");
    families(&c3).await;
}
