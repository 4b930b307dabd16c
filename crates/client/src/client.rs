//! `Client`: the handle callers clone and share. Every clone sends through the
//! same multiplexed connection; the connection is re-established, with backoff,
//! when a request finds it broken.

use crate::error::{Error, Result};
use crate::mux::{Job, Mux, Slots};
use crate::url::{self, ConnectInfo};
use bytes::{Bytes, BytesMut};
use keel_resp::{encode_command, parse_frame, Frame};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Mutex};

/// Settings beyond the URL.
#[derive(Debug, Clone)]
pub struct Options {
    /// Per-request timeout; `None` waits as long as the connection lives.
    pub timeout: Option<Duration>,
    /// Requests that may wait in the queue before callers are made to wait.
    pub queue_len: usize,
    /// Reconnection attempts before a request fails, doubling the wait each time.
    pub reconnect_attempts: u32,
    pub reconnect_backoff: Duration,
    /// Multiplexed connections to spread requests over (round robin), for
    /// servers that serve connections on several cores.
    pub connections: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: None,
            queue_len: 64 * 1024,
            reconnect_attempts: 5,
            reconnect_backoff: Duration::from_millis(20),
            connections: 1,
        }
    }
}

struct Shared {
    info: ConnectInfo,
    options: Options,
    conns: Vec<Conn>,
    next: std::sync::atomic::AtomicUsize,
}

/// One pooled connection.
struct Conn {
    /// The live connection; a plain lock, held only to clone or replace it.
    mux: std::sync::RwLock<Mux>,
    /// Held while reconnecting, so one caller reconnects and the rest wait.
    reconnecting: Mutex<()>,
    /// Failed reconnection rounds so far, with the last error: a caller that
    /// waited while a round failed reports that failure instead of starting a
    /// round of its own (otherwise every waiting caller retried in turn).
    failures: std::sync::Mutex<(u64, Option<Error>)>,
}

#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Client({})", self.shared.info.addr())
    }
}

/// Open a connection and run the handshake the URL asks for (HELLO 3, AUTH,
/// SELECT) with plain request/response before batching starts.
async fn open(info: &ConnectInfo, options: &Options) -> Result<Mux> {
    let addr = info.addr();
    let connect_err = |e: std::io::Error| Error::Connect {
        addr: addr.clone(),
        reason: e.to_string(),
    };
    let mut stream = TcpStream::connect(&addr).await.map_err(connect_err)?;
    stream.set_nodelay(true).map_err(connect_err)?;
    let mut hello: Vec<Vec<u8>> = Vec::new();
    if info.resp3 {
        hello.push(b"HELLO".to_vec());
        hello.push(b"3".to_vec());
        if let Some(pass) = &info.password {
            hello.push(b"AUTH".to_vec());
            hello.push(
                info.user
                    .clone()
                    .unwrap_or_else(|| "default".into())
                    .into_bytes(),
            );
            hello.push(pass.clone().into_bytes());
        }
        handshake(&mut stream, &hello).await?;
    } else if let Some(pass) = &info.password {
        let mut auth = vec![b"AUTH".to_vec()];
        if let Some(user) = &info.user {
            auth.push(user.clone().into_bytes());
        }
        auth.push(pass.clone().into_bytes());
        handshake(&mut stream, &auth).await?;
    }
    if info.db != 0 {
        handshake(
            &mut stream,
            &[b"SELECT".to_vec(), info.db.to_string().into_bytes()],
        )
        .await?;
    }
    Ok(Mux::start(stream, options.queue_len))
}

async fn handshake(stream: &mut TcpStream, args: &[Vec<u8>]) -> Result<Frame> {
    let mut out = BytesMut::new();
    encode_command(args, &mut out);
    let io = |e: std::io::Error| Error::Disconnected(e.to_string());
    stream.write_all(&out).await.map_err(io)?;
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        let data = buf.clone().freeze();
        match parse_frame(&data) {
            Ok(Some((Frame::Error(e), _))) => {
                return Err(Error::Server(String::from_utf8_lossy(&e).into_owned()))
            }
            Ok(Some((frame, _))) => return Ok(frame),
            Ok(None) => {}
            Err(e) => return Err(Error::Protocol(e.to_string())),
        }
        if stream.read_buf(&mut buf).await.map_err(io)? == 0 {
            return Err(Error::Disconnected("closed during handshake".into()));
        }
    }
}

impl Client {
    /// Connect to `redis://[user:pass@]host:port/db[?protocol=3]`.
    pub async fn connect(url: &str) -> Result<Client> {
        Client::connect_with(url, Options::default()).await
    }

    pub async fn connect_with(url: &str, options: Options) -> Result<Client> {
        let info = url::parse(url)?;
        let mut conns = Vec::with_capacity(options.connections.max(1));
        for _ in 0..options.connections.max(1) {
            let mux = open(&info, &options).await?;
            conns.push(Conn {
                mux: std::sync::RwLock::new(mux),
                reconnecting: Mutex::new(()),
                failures: std::sync::Mutex::new((0, None)),
            });
        }
        Ok(Client {
            shared: Arc::new(Shared {
                info,
                options,
                conns,
                next: std::sync::atomic::AtomicUsize::new(0),
            }),
        })
    }

    /// The pooled connection the next request uses (round robin).
    fn pick(&self) -> &Conn {
        let conns = &self.shared.conns;
        let i = if conns.len() == 1 {
            0
        } else {
            self.shared
                .next
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                % conns.len()
        };
        &conns[i]
    }

    /// A live connection, reopened (with backoff) if it has broken.
    async fn mux(&self) -> Result<Mux> {
        let conn = self.pick();
        let current = || match conn.mux.read() {
            Ok(m) => m.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        let live = current();
        if !live.is_closed() {
            return Ok(live);
        }
        let failures = || match conn.failures.lock() {
            Ok(f) => f.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        let failed_before = failures().0;
        let _one_at_a_time = conn.reconnecting.lock().await;
        let live = current();
        if !live.is_closed() {
            return Ok(live);
        }
        let (failed_now, last_error) = failures();
        if failed_now != failed_before {
            return Err(
                last_error.unwrap_or_else(|| Error::Disconnected("reconnection failed".into()))
            );
        }
        let o = &self.shared.options;
        let mut wait = o.reconnect_backoff;
        let mut last = None;
        for _ in 0..o.reconnect_attempts.max(1) {
            match open(&self.shared.info, o).await {
                Ok(m) => {
                    match conn.mux.write() {
                        Ok(mut slot) => *slot = m.clone(),
                        Err(poisoned) => *poisoned.into_inner() = m.clone(),
                    }
                    return Ok(m);
                }
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(2));
        }
        let err = last.unwrap_or_else(|| Error::Disconnected("could not reconnect".into()));
        match conn.failures.lock() {
            Ok(mut f) => *f = (f.0 + 1, Some(err.clone())),
            Err(poisoned) => {
                let mut f = poisoned.into_inner();
                *f = (f.0 + 1, Some(err.clone()));
            }
        }
        Err(err)
    }

    /// Queue one encoded command and wait for its reply.
    async fn submit_one(&self, bytes: Bytes) -> Result<Frame> {
        let request = async {
            let (tx, rx) = oneshot::channel();
            let mux = self.mux().await?;
            let job = Job {
                bytes,
                slots: Slots::One(tx),
            };
            if mux.send(job).await.is_err() {
                return Err(Error::Disconnected(
                    "connection closed before the request was sent".into(),
                ));
            }
            rx.await
                .unwrap_or_else(|_| Err(Error::Disconnected("reply slot dropped".into())))
        };
        match self.shared.options.timeout {
            // The timeout covers reconnecting and queueing too. When it fires the
            // receiver is dropped; the reply is discarded when it arrives,
            // keeping the stream in step.
            Some(t) => tokio::time::timeout(t, request)
                .await
                .map_err(|_| Error::Timeout(t))?,
            None => request.await,
        }
    }

    /// Queue encoded requests expecting `replies` replies, and wait for them.
    async fn submit(&self, bytes: Bytes, replies: usize) -> Result<Vec<Result<Frame>>> {
        let mut receivers = Vec::with_capacity(replies);
        let mut slots = Vec::with_capacity(replies);
        for _ in 0..replies {
            let (tx, rx) = oneshot::channel();
            slots.push(tx);
            receivers.push(rx);
        }
        let mux = self.mux().await?;
        if mux
            .send(Job {
                bytes,
                slots: Slots::Many(slots),
            })
            .await
            .is_err()
        {
            return Err(Error::Disconnected(
                "connection closed before the request was sent".into(),
            ));
        }
        let wait_all = async {
            let mut out = Vec::with_capacity(receivers.len());
            for rx in receivers {
                out.push(
                    rx.await
                        .unwrap_or_else(|_| Err(Error::Disconnected("reply slot dropped".into()))),
                );
            }
            out
        };
        match self.shared.options.timeout {
            Some(t) => tokio::time::timeout(t, wait_all)
                .await
                .map_err(|_| Error::Timeout(t)),
            None => Ok(wait_all.await),
        }
    }

    /// Run any command; server error replies become `Error::Server`.
    pub async fn cmd<A: AsRef<[u8]>>(&self, args: &[A]) -> Result<Frame> {
        // Sized up front: growing the buffer while encoding cost more than the
        // rest of the request path.
        let size = 16 + args.iter().map(|a| a.as_ref().len() + 16).sum::<usize>();
        let mut buf = BytesMut::with_capacity(size);
        encode_command(args, &mut buf);
        self.submit_one(buf.freeze()).await
    }

    /// Send one command already encoded as a RESP multibulk (a load generator
    /// encodes once and skips building argument lists). The bytes must hold
    /// exactly one command, or replies fall out of step.
    pub async fn send_encoded(&self, command: Bytes) -> Result<Frame> {
        self.submit_one(command).await
    }

    /// An explicit pipeline: commands sent together, replies in order.
    pub fn pipeline(&self) -> Pipeline {
        Pipeline {
            client: self.clone(),
            buf: BytesMut::new(),
            count: 0,
            transaction: false,
        }
    }

    /// Commands wrapped in MULTI ... EXEC; `execute` returns EXEC's replies.
    pub fn transaction(&self) -> Pipeline {
        let mut p = self.pipeline();
        p.transaction = true;
        p.add(&["MULTI"]);
        p
    }
}

/// Requests collected to be sent in one go.
pub struct Pipeline {
    client: Client,
    buf: BytesMut,
    count: usize,
    transaction: bool,
}

impl Pipeline {
    pub fn add<A: AsRef<[u8]>>(&mut self, args: &[A]) -> &mut Pipeline {
        encode_command(args, &mut self.buf);
        self.count += 1;
        self
    }

    /// Send everything; one result per command (for a transaction, EXEC's
    /// replies, or the EXEC error).
    pub async fn execute(mut self) -> Result<Vec<Result<Frame>>> {
        if self.transaction {
            self.add(&["EXEC"]);
        }
        let replies = self.client.submit(self.buf.freeze(), self.count).await?;
        if !self.transaction {
            return Ok(replies);
        }
        // Replies are OK, QUEUED..., then EXEC's array (or nil if WATCH aborted).
        let queued = replies
            .get(1..replies.len().saturating_sub(1))
            .unwrap_or(&[]);
        let queued_error = queued.iter().find_map(|r| r.as_ref().err().cloned());
        match replies.into_iter().last() {
            Some(Ok(Frame::Array(items))) => Ok(items
                .into_iter()
                .map(|f| match f {
                    Frame::Error(e) => Err(Error::Server(String::from_utf8_lossy(&e).into_owned())),
                    other => Ok(other),
                })
                .collect()),
            Some(Ok(Frame::NullArray | Frame::Null)) => {
                Err(Error::Server("EXEC aborted: a watched key changed".into()))
            }
            Some(Err(e)) => Err(queued_error.unwrap_or(e)),
            other => Err(Error::UnexpectedReply(format!("{other:?}"))),
        }
    }
}
