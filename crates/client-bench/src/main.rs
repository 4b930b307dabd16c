//! `client-bench`: seed study 004's workload through four Rust clients against
//! one server: 80% GET / 20% SET, 20-byte keys, 100-byte values, N concurrent
//! tasks sharing one client, for a fixed time per point. Reports requests/s and
//! the client process's CPU time per request.
//!
//! Usage: client-bench URL [--tasks 1,16,256,1000] [--seconds 3] [--keys 10000]
//!        [--clients keel,redis-rs,fred,naive]

use anyhow::{anyhow, Context, Result};
use bytes::BytesMut;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const VALUE_LEN: usize = 100;

/// One shared client handle of each kind.
#[derive(Clone)]
enum Handle {
    Keel(keel_client::Client),
    RedisRs(redis::aio::MultiplexedConnection),
    Fred(fred::clients::Client),
    Naive(Arc<tokio::sync::Mutex<Naive>>),
}

/// The baseline: one connection, one request in flight at a time.
struct Naive {
    stream: tokio::net::TcpStream,
    buf: BytesMut,
}

impl Naive {
    async fn call(&mut self, args: &[&[u8]]) -> Result<()> {
        let mut out = BytesMut::new();
        keel_resp::encode_command(args, &mut out);
        self.stream.write_all(&out).await?;
        loop {
            let data = self.buf.clone().freeze();
            if let Some((_, n)) = keel_resp::parse_frame(&data).map_err(|e| anyhow!("{e}"))? {
                let _ = self.buf.split_to(n);
                return Ok(());
            }
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(anyhow!("server closed the connection"));
            }
        }
    }
}

fn key(i: u64) -> String {
    // 20 bytes: "key:" and 16 digits.
    format!("key:{i:016}")
}

async fn connect(kind: &str, url: &str) -> Result<Handle> {
    Ok(match kind {
        "keel" => Handle::Keel(keel_client::Client::connect(url).await?),
        "redis-rs" => {
            let c = redis::Client::open(url)?;
            Handle::RedisRs(c.get_multiplexed_async_connection().await?)
        }
        "fred" => {
            use fred::interfaces::ClientLike;
            let config = fred::types::config::Config::from_url(url)?;
            let c = fred::types::Builder::from_config(config).build()?;
            c.init().await?;
            Handle::Fred(c)
        }
        "naive" => {
            let addr = url.trim_start_matches("redis://").trim_end_matches('/');
            let stream = tokio::net::TcpStream::connect(addr)
                .await
                .context("naive connect")?;
            stream.set_nodelay(true)?;
            Handle::Naive(Arc::new(tokio::sync::Mutex::new(Naive {
                stream,
                buf: BytesMut::new(),
            })))
        }
        other => return Err(anyhow!("unknown client '{other}'")),
    })
}

async fn op(h: &Handle, k: &str, value: &[u8], write: bool) -> Result<()> {
    match h {
        Handle::Keel(c) => {
            if write {
                c.set(k, value).await?;
            } else {
                c.get(k).await?;
            }
        }
        Handle::RedisRs(c) => {
            let mut c = c.clone();
            if write {
                redis::cmd("SET")
                    .arg(k)
                    .arg(value)
                    .query_async::<()>(&mut c)
                    .await?;
            } else {
                redis::cmd("GET")
                    .arg(k)
                    .query_async::<Option<Vec<u8>>>(&mut c)
                    .await?;
            }
        }
        Handle::Fred(c) => {
            use fred::interfaces::KeysInterface;
            if write {
                c.set::<(), _, _>(k, value, None, None, false).await?;
            } else {
                c.get::<Option<Vec<u8>>, _>(k).await?;
            }
        }
        Handle::Naive(n) => {
            let mut n = n.lock().await;
            if write {
                n.call(&[b"SET", k.as_bytes(), value]).await?;
            } else {
                n.call(&[b"GET", k.as_bytes()]).await?;
            }
        }
    }
    Ok(())
}

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// One point: `tasks` tasks hammering `h` for `seconds`.
async fn run_point(h: &Handle, tasks: usize, seconds: f64, keys: u64) -> Result<(f64, f64, u64)> {
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let value = vec![b'v'; VALUE_LEN];
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let mut handles = Vec::with_capacity(tasks);
    for t in 0..tasks {
        let (h, done, errors, stop, value) = (
            h.clone(),
            done.clone(),
            errors.clone(),
            stop.clone(),
            value.clone(),
        );
        handles.push(tokio::spawn(async move {
            let mut x = (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            while !stop.load(Ordering::Relaxed) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let k = key(x % keys);
                let write = x % 10 < 2;
                if op(&h, &k, &value, write).await.is_err() {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let n_at_stop = done.load(Ordering::Relaxed);
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    for j in handles {
        let _ = j.await;
    }
    let rate = n_at_stop as f64 / elapsed;
    let cpu_us = if n_at_stop > 0 {
        cpu * 1e6 / n_at_stop as f64
    } else {
        0.0
    };
    Ok((rate, cpu_us, errors.load(Ordering::Relaxed)))
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args.first().ok_or_else(|| anyhow!("usage: client-bench URL [--tasks 1,16,256,1000] [--seconds 3] [--keys 10000] [--clients keel,redis-rs,fred,naive]"))?.clone();
    let opt = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_else(|| default.to_string())
    };
    let tasks: Vec<usize> = opt("--tasks", "1,16,256,1000")
        .split(',')
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    let seconds: f64 = opt("--seconds", "3").parse()?;
    let keys: u64 = opt("--keys", "10000").parse()?;
    let clients: Vec<String> = opt("--clients", "keel,redis-rs,fred,naive")
        .split(',')
        .map(str::to_string)
        .collect();

    // Load the keyspace so GETs find values.
    let loader = keel_client::Client::connect(&url).await?;
    let value = vec![b'v'; VALUE_LEN];
    let mut p = loader.pipeline();
    for i in 0..keys {
        p.add(&[b"SET".as_slice(), key(i).as_bytes(), &value]);
    }
    p.execute().await?;

    println!("| Client | Tasks | Requests/s | Client CPU us/req | Errors |");
    println!("|---|---:|---:|---:|---:|");
    for &t in &tasks {
        for kind in &clients {
            let h = connect(kind, &url).await?;
            let (rate, cpu_us, errors) = run_point(&h, t, seconds, keys).await?;
            println!("| {kind} | {t} | {rate:.0} | {cpu_us:.2} | {errors} |");
        }
    }
    Ok(())
}
