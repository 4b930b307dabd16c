//! `keel-bench pubsub`: publish/subscribe throughput. Subscribers listen on
//! one of `--channels` channels each (subscriber j on channel j mod C),
//! publishers send PUBLISH to theirs (publisher i on channel i mod C), each
//! with `--pipeline` commands in flight, for `--seconds`. The run ends when
//! every message published has reached every subscriber of its channel (or
//! nothing more arrives for five seconds), and reports published and
//! delivered messages per second over that whole time and the server's CPU
//! time per delivered message.
//!
//! Connections speak raw RESP2 so the tool itself stays cheap: a subscriber
//! counts the bytes it reads, and since every channel name has the same
//! length every message has the same encoded size.

use crate::load;
use anyhow::{bail, Context};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const USAGE: &str = "\
Usage: keel-bench pubsub [options]
  -h <host>           server host (127.0.0.1)
  -p <port>           server port (6379)
  --publishers <n>    publishing connections (1)
  --subscribers <n>   subscribed connections (1)
  --channels <n>      channels; subscriber j listens on j mod n, publisher i
                      publishes on i mod n (1)
  -d <bytes>          message size (100)
  -P <n>              PUBLISH commands in flight per publisher (1)
  --seconds <s>       how long publishers publish (5)
  --threads <n>       the tool's own threads (2)
  --label <text>      the name printed for this run (host:port)
";

struct Options {
    host: String,
    port: u16,
    publishers: usize,
    subscribers: usize,
    channels: usize,
    size: usize,
    pipeline: usize,
    seconds: f64,
    threads: usize,
    label: Option<String>,
}

fn parse(args: &[String]) -> anyhow::Result<Option<Options>> {
    let mut o = Options {
        host: "127.0.0.1".into(),
        port: 6379,
        publishers: 1,
        subscribers: 1,
        channels: 1,
        size: 100,
        pipeline: 1,
        seconds: 5.0,
        threads: 2,
        label: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--help" {
            return Ok(None);
        }
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        let count = || -> anyhow::Result<usize> {
            match value.parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => bail!("{flag} wants a positive integer, not {value:?}"),
            }
        };
        match flag.as_str() {
            "-h" => o.host = value.clone(),
            "-p" => {
                o.port = value
                    .parse()
                    .with_context(|| format!("bad port {value:?}"))?
            }
            "--publishers" => o.publishers = count()?,
            "--subscribers" => o.subscribers = count()?,
            "--channels" => o.channels = count()?,
            "-d" => o.size = count()?,
            "-P" => o.pipeline = count()?,
            "--threads" => o.threads = count()?,
            "--seconds" => {
                o.seconds = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| *s > 0.0 && s.is_finite())
                    .with_context(|| format!("--seconds wants a positive number, not {value:?}"))?
            }
            "--label" => o.label = Some(value.clone()),
            _ => bail!("unknown option {flag} (try --help)"),
        }
    }
    Ok(Some(o))
}

/// Channel names all of one length, so all messages are of one size.
fn channel(i: usize) -> Vec<u8> {
    format!("bench:pubsub:{i:06}").into_bytes()
}

fn bulk(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

fn command(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", parts.len()).into_bytes();
    for p in parts {
        bulk(&mut out, p);
    }
    out
}

/// A message as a RESP2 subscriber receives it.
fn message_frame(ch: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = b"*3\r\n".to_vec();
    bulk(&mut out, b"message");
    bulk(&mut out, ch);
    bulk(&mut out, payload);
    out
}

fn confirmation_frame(ch: &[u8]) -> Vec<u8> {
    let mut out = b"*3\r\n".to_vec();
    bulk(&mut out, b"subscribe");
    bulk(&mut out, ch);
    out.extend_from_slice(b":1\r\n");
    out
}

struct Shared {
    received_bytes: AtomicU64,
    published: AtomicU64,
    /// Deliveries owed: each PUBLISH counts its channel's subscribers.
    expected: AtomicU64,
    subscribed: AtomicUsize,
    closed: AtomicUsize,
    stop: AtomicBool,
}

async fn subscriber(addr: String, ch: Vec<u8>, shared: Arc<Shared>) -> anyhow::Result<()> {
    let mut s = TcpStream::connect(&addr).await?;
    s.set_nodelay(true)?;
    s.write_all(&command(&[b"SUBSCRIBE", &ch])).await?;
    let want = confirmation_frame(&ch);
    let mut got = vec![0; want.len()];
    s.read_exact(&mut got).await?;
    if got != want {
        bail!(
            "unexpected confirmation {:?}",
            String::from_utf8_lossy(&got)
        );
    }
    shared.subscribed.fetch_add(1, Ordering::SeqCst);
    let mut buf = vec![0; 16 * 1024];
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            shared.closed.fetch_add(1, Ordering::SeqCst);
            return Ok(());
        }
        shared.received_bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
}

async fn publisher(
    addr: String,
    ch: Vec<u8>,
    listeners: u64,
    size: usize,
    pipeline: usize,
    shared: Arc<Shared>,
) -> anyhow::Result<()> {
    let mut s = TcpStream::connect(&addr).await?;
    s.set_nodelay(true)?;
    let payload = vec![b'x'; size];
    let one = command(&[b"PUBLISH", &ch, &payload]);
    let batch = one.repeat(pipeline);
    let mut buf = vec![0; 64 * 1024];
    while !shared.stop.load(Ordering::Relaxed) {
        s.write_all(&batch).await?;
        // Each reply is one integer line.
        let mut lines = 0;
        while lines < pipeline {
            let n = s.read(&mut buf).await?;
            if n == 0 {
                bail!("the server closed a publisher's connection");
            }
            if buf[0] != b':' {
                bail!(
                    "PUBLISH replied {:?}",
                    String::from_utf8_lossy(&buf[..n.min(120)])
                );
            }
            lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
        }
        shared
            .published
            .fetch_add(pipeline as u64, Ordering::Relaxed);
        shared
            .expected
            .fetch_add(pipeline as u64 * listeners, Ordering::Relaxed);
    }
    Ok(())
}

struct Outcome {
    published: u64,
    delivered: u64,
    expected: u64,
    publish_secs: f64,
    total_secs: f64,
    server_cpu: Option<(Duration, &'static str)>,
    closed: usize,
}

async fn run(o: &Options) -> anyhow::Result<Outcome> {
    let addr = format!("{}:{}", o.host, o.port);
    let shared = Arc::new(Shared {
        received_bytes: AtomicU64::new(0),
        published: AtomicU64::new(0),
        expected: AtomicU64::new(0),
        subscribed: AtomicUsize::new(0),
        closed: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
    });
    let payload = vec![b'x'; o.size];
    let frame_len = message_frame(&channel(0), &payload).len() as u64;
    let mut listeners = vec![0u64; o.channels];
    let mut subs = Vec::new();
    for j in 0..o.subscribers {
        listeners[j % o.channels] += 1;
        subs.push(tokio::spawn(subscriber(
            addr.clone(),
            channel(j % o.channels),
            shared.clone(),
        )));
    }
    let ready_by = Instant::now() + Duration::from_secs(30);
    while shared.subscribed.load(Ordering::SeqCst) < o.subscribers {
        if let Some(done) = subs.iter().position(|h| h.is_finished()) {
            let h = subs.swap_remove(done);
            h.await??;
            bail!("a subscriber ended before subscribing");
        }
        if Instant::now() > ready_by {
            bail!("subscribers not ready after 30 s");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let cpu_before = load::server_cpu(&addr, None);
    let start = Instant::now();
    let mut pubs = Vec::new();
    for i in 0..o.publishers {
        let c = i % o.channels;
        pubs.push(tokio::spawn(publisher(
            addr.clone(),
            channel(c),
            listeners[c],
            o.size,
            o.pipeline,
            shared.clone(),
        )));
    }
    tokio::time::sleep(Duration::from_secs_f64(o.seconds)).await;
    shared.stop.store(true, Ordering::Relaxed);
    for p in pubs {
        p.await??;
    }
    let publish_secs = start.elapsed().as_secs_f64();
    let expected = shared.expected.load(Ordering::SeqCst);
    // Wait for the subscribers to catch up, or to stop making progress.
    let mut last = (0, Instant::now());
    let mut end;
    loop {
        end = Instant::now();
        let got = shared.received_bytes.load(Ordering::SeqCst) / frame_len;
        if got >= expected {
            break;
        }
        if got != last.0 {
            last = (got, end);
        } else if end - last.1 > Duration::from_secs(5) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let cpu_after = load::server_cpu(&addr, None);
    let total_secs = (end - start).as_secs_f64();
    for s in &subs {
        s.abort();
    }
    let server_cpu = match (cpu_before, cpu_after) {
        (Some(a), Some(b)) => Some((b.total.saturating_sub(a.total), b.source)),
        _ => None,
    };
    Ok(Outcome {
        published: shared.published.load(Ordering::SeqCst),
        delivered: shared.received_bytes.load(Ordering::SeqCst) / frame_len,
        expected,
        publish_secs,
        total_secs,
        server_cpu,
        closed: shared.closed.load(Ordering::SeqCst),
    })
}

pub fn run_cli(args: &[String]) -> anyhow::Result<ExitCode> {
    let Some(o) = parse(args)? else {
        print!("{USAGE}");
        return Ok(ExitCode::SUCCESS);
    };
    let addr = format!("{}:{}", o.host, o.port);
    let label = o.label.clone().unwrap_or_else(|| addr.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.threads)
        .enable_all()
        .build()?;
    let out = rt.block_on(run(&o))?;
    rt.shutdown_background();
    let per_s = |n: u64| n as f64 / out.total_secs;
    let cpu = match out.server_cpu {
        Some((d, source)) if out.delivered > 0 => format!(
            "{:.3} us/delivered ({:.2} s server CPU, {source})",
            d.as_secs_f64() * 1e6 / out.delivered as f64,
            d.as_secs_f64()
        ),
        _ => "server CPU unknown".into(),
    };
    println!(
        "{label}: {} pub x {} sub on {} channel(s), {} B, P{}: published {:.0}/s, delivered {:.0}/s, {cpu}; {} of {} delivered in {:.2} s (published for {:.2} s){}",
        o.publishers,
        o.subscribers,
        o.channels,
        o.size,
        o.pipeline,
        per_s(out.published),
        per_s(out.delivered),
        out.delivered,
        out.expected,
        out.total_secs,
        out.publish_secs,
        if out.closed > 0 {
            format!(", {} subscribers disconnected", out.closed)
        } else {
            String::new()
        }
    );
    Ok(if out.delivered >= out.expected && out.closed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_the_sizes_redis_sends() {
        let ch = channel(7);
        assert_eq!(ch, b"bench:pubsub:000007");
        assert_eq!(channel(123_456).len(), ch.len());
        assert_eq!(
            message_frame(b"c", b"hi"),
            b"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n"
        );
        assert_eq!(
            confirmation_frame(b"c"),
            b"*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"
        );
    }

    #[test]
    fn options_are_checked() {
        let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let o = parse(&args("--publishers 50 --subscribers 1000 -P 16 -d 10"))
            .unwrap()
            .unwrap();
        assert_eq!(
            (o.publishers, o.subscribers, o.pipeline, o.size),
            (50, 1000, 16, 10)
        );
        assert!(parse(&args("-P 0")).is_err());
        assert!(parse(&args("--seconds -1")).is_err());
        assert!(parse(&args("--bogus 1")).is_err());
        assert!(parse(&args("--help")).unwrap().is_none());
    }
}
