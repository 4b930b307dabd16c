//! The network layer: the listening sockets, the acceptor that hands each new
//! connection to a worker thread, and the connection loop.
//!
//! A listening socket is bound once, without `SO_REUSEPORT`, so no other
//! socket, in this process or another, can bind the same address while Keel
//! listens. One acceptor thread accepts on all of them, admits or refuses the
//! client (`maxclients`), and hands the socket to the least loaded worker.
//!
//! A connection reads whatever has arrived, runs every complete command in the
//! buffer through `Engine::execute`, and writes all the replies with one write.
//! Plain TCP connections start in their worker's event loop ([`reactor`]);
//! a connection that comes to wait for more than its socket, and every TLS
//! connection, is served by the worker's tokio runtime through the async
//! connection loop below, which can start from the step the event loop had
//! reached. CLIENT KILL, SHUTDOWN and the clients cron reach a connection
//! through the waker on its handle. Nothing here interprets commands.

use bytes::{Bytes, BytesMut};
use keel_engine::blocking::BlockWait;
use keel_engine::session::BufferStats;
use keel_engine::{ClientHandle, Engine, Session};
use keel_resp::{encode, parse_request_into, Frame, Parsed, Progress, RequestLimits};
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};

mod reactor;
mod replica;

const READ_CHUNK: usize = 16 * 1024;
/// A query buffer is trimmed only when it wastes more than this (Redis's figure).
const QBUF_WASTE_BYTES: usize = 4 * 1024;
/// Above this a query buffer is trimmed when twice its recent peak (Redis's
/// PROTO_RESIZE_THRESHOLD).
const QBUF_RESIZE_BYTES: usize = 32 * 1024;
/// Seconds without a command after which a client gives back its buffers.
const IDLE_SHRINK_S: u64 = 2;
/// Reply bytes a connection queues, at most (plus one reply), before it stops
/// running commands and writes them: a client that does not read holds this
/// much, not everything its pipeline asks for. Raised past the client's
/// output buffer limits, so it reaches them.
const FLUSH_FLOOR: usize = 1024 * 1024;
/// How often a connection stuck on its socket above its soft output limit
/// looks again whether the soft seconds have passed.
const SOFT_RECHECK: Duration = Duration::from_millis(250);

/// One address of the `bind` directive: `*` is every IPv4 address, `::*`
/// every IPv6 one, and a leading `-` makes the address optional (skipped when
/// the host does not have it), as in Redis.
fn bind_target(word: &str, port: u16) -> Result<(SocketAddr, bool), String> {
    let optional = word.starts_with('-');
    let host = word.trim_start_matches('-');
    let ip = match host {
        "*" => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        "::*" => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        _ => match host.parse::<IpAddr>() {
            Ok(ip) => ip,
            // A name, resolved as Redis does: IPv6 when it has a colon.
            Err(_) => (host, port)
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.find(|a| a.is_ipv6() == host.contains(':')))
                .map(|a| a.ip())
                .ok_or_else(|| format!("{host}:{port}: Name or service not known"))?,
        },
    };
    Ok((SocketAddr::new(ip, port), optional))
}

/// An OS error as Redis prints it: the message without Rust's "(os error N)".
fn os_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Bind one listening socket. `SO_REUSEADDR` lets a restarted server bind at
/// once past connections in TIME_WAIT; there is deliberately no
/// `SO_REUSEPORT`, which would let a second server share the port.
pub fn bind(
    addr: SocketAddr,
    backlog: i32,
) -> Result<std::net::TcpListener, (String, std::io::Error)> {
    let domain = if addr.is_ipv4() {
        socket2::Domain::IPV4
    } else {
        socket2::Domain::IPV6
    };
    let step = |what: &str| {
        let what = what.to_string();
        move |e: std::io::Error| (format!("{what}: {}", os_text(&e)), e)
    };
    let sock = socket2::Socket::new(domain, socket2::Type::STREAM, Some(socket2::Protocol::TCP))
        .map_err(step("socket"))?;
    sock.set_reuse_address(true)
        .map_err(step("setsockopt SO_REUSEADDR"))?;
    if addr.is_ipv6() {
        sock.set_only_v6(true).map_err(step("setsockopt"))?;
    }
    sock.set_nonblocking(true).map_err(step("fcntl"))?;
    sock.bind(&addr.into()).map_err(step("bind"))?;
    sock.listen(backlog.max(1)).map_err(step("listen"))?;
    Ok(sock.into())
}

/// A bound listening socket and the address it was asked for.
#[derive(Debug)]
pub struct Bound {
    addr: SocketAddr,
    sock: std::net::TcpListener,
}

/// Bind every `bind` address at `port`, reusing the sockets of `keep` that
/// already listen on one of them. Each failure is logged as Redis logs it; an
/// address the host lacks or whose protocol it lacks is skipped, any other
/// failure fails the whole call (`keep`'s unused sockets are handed back).
/// Port 0 listens nowhere.
pub fn bind_all(
    words: &str,
    port: u16,
    backlog: i32,
    keep: Vec<Bound>,
) -> Result<(Vec<Bound>, Vec<Bound>), Vec<Bound>> {
    let mut keep = keep;
    let mut out: Vec<Bound> = Vec::new();
    let give_back = |mut keep: Vec<Bound>, out: Vec<Bound>| {
        keep.extend(out);
        keep
    };
    if port == 0 {
        return Ok((out, keep));
    }
    for word in words.split_whitespace() {
        let (addr, optional) = match bind_target(word, port) {
            Ok(t) => t,
            Err(e) => {
                crate::warn!("Warning: Could not create server TCP listening socket {e}");
                return Err(give_back(keep, out));
            }
        };
        if let Some(i) = keep.iter().position(|b| b.addr == addr) {
            out.push(keep.swap_remove(i));
            continue;
        }
        match bind(addr, backlog) {
            Ok(sock) => out.push(Bound { addr, sock }),
            Err((text, e)) => {
                let host = word.trim_start_matches('-');
                crate::warn!(
                    "Warning: Could not create server TCP listening socket {host}:{port}: {text}"
                );
                let code = e.raw_os_error().unwrap_or(0);
                let absent = code == libc::EADDRNOTAVAIL;
                let unsupported = [
                    libc::ENOPROTOOPT,
                    libc::EPROTONOSUPPORT,
                    libc::ESOCKTNOSUPPORT,
                    libc::EPFNOSUPPORT,
                    libc::EAFNOSUPPORT,
                ]
                .contains(&code);
                if (absent && optional) || unsupported {
                    continue;
                }
                return Err(give_back(keep, out));
            }
        }
    }
    Ok((out, keep))
}

/// A connection on its way from the acceptor to a worker: the socket and the
/// client already registered for it.
pub struct Incoming {
    stream: std::net::TcpStream,
    session: Session,
    /// Set for a connection to a `tls-port` listener: the handshake comes first.
    tls: Option<crate::tls::TlsAcceptor>,
}

/// What a worker's runtime serves: connections that start there (TLS, and
/// clients protected mode refuses), and connections the worker's event loop
/// handed over when they came to wait for something other than their socket.
pub(crate) enum RuntimeWork {
    New(Box<Incoming>),
    Resume(Box<reactor::Handoff>),
}

/// Give `work` to a worker's runtime; a runtime that is gone drops the
/// connection, which leaves the worker's count and the client list.
fn to_runtime(
    engine: &Engine,
    runtime: &mpsc::UnboundedSender<RuntimeWork>,
    load: &AtomicUsize,
    work: RuntimeWork,
) {
    if let Err(mpsc::error::SendError(lost)) = runtime.send(work) {
        load.fetch_sub(1, Ordering::Relaxed);
        let mut session = match lost {
            RuntimeWork::New(i) => i.session,
            RuntimeWork::Resume(h) => h.session,
        };
        engine.disconnect(&mut session);
    }
}

/// The acceptor's side of one worker.
pub struct WorkerLink {
    events: Arc<reactor::LoopShared>,
    runtime: mpsc::UnboundedSender<RuntimeWork>,
    /// Connections the worker serves now, in its event loop and its runtime.
    load: Arc<AtomicUsize>,
}

/// A worker's side: its event loop's queue, and its runtime's inbox.
pub struct WorkerInbox {
    events: Arc<reactor::LoopShared>,
    runtime: mpsc::UnboundedSender<RuntimeWork>,
    rx: mpsc::UnboundedReceiver<RuntimeWork>,
    load: Arc<AtomicUsize>,
}

pub fn worker_channel() -> std::io::Result<(WorkerLink, WorkerInbox)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let load = Arc::new(AtomicUsize::new(0));
    let events = Arc::new(reactor::LoopShared::new()?);
    Ok((
        WorkerLink {
            events: events.clone(),
            runtime: tx.clone(),
            load: load.clone(),
        },
        WorkerInbox {
            events,
            runtime: tx,
            rx,
            load,
        },
    ))
}

impl WorkerInbox {
    /// Split into the event loop's part and the runtime's.
    pub fn split(self) -> (reactor::EventLoop, RuntimeInbox) {
        let event_loop = reactor::EventLoop::new(self.events, self.runtime, self.load.clone());
        (
            event_loop,
            RuntimeInbox {
                rx: self.rx,
                load: self.load,
            },
        )
    }
}

/// Where a worker's runtime receives its connections.
pub struct RuntimeInbox {
    rx: mpsc::UnboundedReceiver<RuntimeWork>,
    load: Arc<AtomicUsize>,
}

/// A worker's runtime: it serves the connections that wait on more than
/// their socket (blocked commands, CLIENT PAUSE, `appendfsync always`, a full
/// socket, push messages, TLS) until they close.
pub async fn worker_loop(engine: Arc<Engine>, inbox: RuntimeInbox, stop: Arc<Notify>) {
    start_durable_relay();
    let RuntimeInbox { mut rx, load } = inbox;
    loop {
        let work = tokio::select! {
            i = rx.recv() => match i {
                Some(i) => i,
                None => return,
            },
            _ = stop.notified() => return,
        };
        let engine = engine.clone();
        let load = load.clone();
        tokio::spawn(async move {
            match work {
                RuntimeWork::New(i) => serve(engine, i.stream, i.session, i.tls).await,
                RuntimeWork::Resume(h) => resume(engine, *h).await,
            }
            load.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// Requests to the acceptor thread.
enum Control {
    /// CONFIG SET bind/port: listen there instead; report whether it worked.
    Rebind {
        bind: String,
        port: u16,
        done: std::sync::mpsc::SyncSender<Result<(), String>>,
    },
    /// CONFIG SET tls-*: the TLS listeners at `port` (0: none) hand their
    /// connections to `acceptor` from now on.
    Tls {
        bind: String,
        port: u16,
        acceptor: Option<crate::tls::TlsAcceptor>,
        done: std::sync::mpsc::SyncSender<Result<(), String>>,
    },
}

/// The engine's handle on the network layer (CONFIG SET bind, port, maxclients).
pub struct NetHandle {
    ctl: mpsc::UnboundedSender<Control>,
    reserved_fds: u64,
}

impl NetHandle {
    pub fn new(reserved_fds: u64) -> (NetHandle, ControlInbox) {
        let (ctl, rx) = mpsc::unbounded_channel();
        (NetHandle { ctl, reserved_fds }, ControlInbox(rx))
    }
}

pub struct ControlInbox(mpsc::UnboundedReceiver<Control>);

impl NetHandle {
    fn ask(
        &self,
        req: Control,
        result: std::sync::mpsc::Receiver<Result<(), String>>,
    ) -> Result<(), String> {
        if self.ctl.send(req).is_err() {
            return Err("the acceptor is not running".into());
        }
        result
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| Err("the acceptor did not answer".into()))
    }
}

impl keel_engine::engine::NetControl for NetHandle {
    fn rebind(&self, bind: &str, port: u16) -> Result<(), String> {
        let (done, result) = std::sync::mpsc::sync_channel(1);
        let req = Control::Rebind {
            bind: bind.to_string(),
            port,
            done,
        };
        self.ask(req, result)
    }

    fn reload_tls(&self, config: &keel_engine::config::Config) -> Result<(), String> {
        let port = u16::try_from(config.get_i64("tls-port")).unwrap_or(0);
        let acceptor = if port == 0 {
            None
        } else {
            match crate::tls::acceptor(config) {
                Ok(a) => Some(a),
                Err(e) => {
                    crate::warn!("{e}");
                    return Err("Unable to update TLS configuration. Check server logs.".into());
                }
            }
        };
        let (done, result) = std::sync::mpsc::sync_channel(1);
        let req = Control::Tls {
            bind: config.get("bind"),
            port,
            acceptor,
            done,
        };
        self.ask(req, result)
            .map_err(|_| "Unable to listen on this port. Check server logs.".into())
    }

    fn fit_maxclients(&self, maxclients: u64) -> Result<(), u64> {
        let fit = crate::fdlimit::adjust(maxclients, self.reserved_fds);
        if fit >= maxclients {
            Ok(())
        } else {
            Err(fit)
        }
    }
}

/// An `accept` failure log line at most this often: a process out of
/// descriptors fails every accept, and each would otherwise log.
const ACCEPT_LOG_EVERY: Duration = Duration::from_secs(1);

/// The acceptor thread's loop: accept on every listener, refuse clients past
/// `maxclients`, hand the rest to the least loaded worker, and rebind when
/// CONFIG SET asks.
pub async fn accept_loop(
    engine: Arc<Engine>,
    bound: Vec<Bound>,
    workers: Vec<WorkerLink>,
    ctl: ControlInbox,
    backlog: i32,
    tls: Option<(Vec<Bound>, crate::tls::TlsAcceptor)>,
    stop: Arc<Notify>,
) {
    let mut ctl = ctl.0;
    let mut listeners = register(bound);
    let (mut tls_listeners, mut acceptor) = match tls {
        Some((bound, acceptor)) => (register(bound), Some(acceptor)),
        None => (Vec::new(), None),
    };
    let mut next = 0usize;
    let mut next_tls = 0usize;
    let mut last_log: Option<Instant> = None;
    loop {
        let mut tls = None;
        let accepted = tokio::select! {
            r = accept_any(&listeners, &mut next) => r,
            r = accept_any(&tls_listeners, &mut next_tls), if acceptor.is_some() => {
                tls = acceptor.clone();
                r
            }
            Some(req) = ctl.recv() => {
                match req {
                    Control::Rebind { bind, port, done } => {
                        let (result, now) =
                            rebind(std::mem::take(&mut listeners), &bind, port, backlog);
                        listeners = now;
                        // The TLS listeners follow `bind` too, at their port.
                        let tls_port = tls_listeners.first().map(|(a, _)| a.port());
                        if let (Ok(()), Some(tls_port)) = (&result, tls_port) {
                            let (_, now) = rebind(
                                std::mem::take(&mut tls_listeners),
                                &bind,
                                tls_port,
                                backlog,
                            );
                            tls_listeners = now;
                        }
                        let _ = done.send(result);
                    }
                    Control::Tls { bind, port, acceptor: new, done } => {
                        let (result, now) =
                            rebind(std::mem::take(&mut tls_listeners), &bind, port, backlog);
                        tls_listeners = now;
                        if result.is_ok() {
                            acceptor = new;
                        }
                        let _ = done.send(result);
                    }
                }
                continue;
            }
            _ = stop.notified() => return,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                if last_log.is_none_or(|t| t.elapsed() >= ACCEPT_LOG_EVERY) {
                    crate::warn!("Accepting client connection: accept: {}", os_text(&e));
                    last_log = Some(Instant::now());
                }
                if is_out_of_resources(&e) {
                    // Nothing can be accepted until a descriptor frees up; the
                    // pending connections wait in the backlog meanwhile.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                continue;
            }
        };
        if engine.shutdown_requested.load(Ordering::Relaxed) {
            return;
        }
        admit(&engine, stream, peer, &workers, tls);
    }
}

fn is_out_of_resources(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

fn register(bound: Vec<Bound>) -> Vec<(SocketAddr, TcpListener)> {
    bound
        .into_iter()
        .filter_map(|b| match TcpListener::from_std(b.sock) {
            Ok(l) => Some((b.addr, l)),
            Err(e) => {
                crate::warn!("cannot register listener {}: {e}", b.addr);
                None
            }
        })
        .collect()
}

/// Accept on whichever listener has a connection, starting from a different
/// one each time so none starves.
async fn accept_any(
    listeners: &[(SocketAddr, TcpListener)],
    next: &mut usize,
) -> std::io::Result<(TcpStream, SocketAddr)> {
    std::future::poll_fn(|cx| {
        let n = listeners.len();
        for k in 0..n {
            let i = (*next + k) % n;
            if let Poll::Ready(r) = listeners[i].1.poll_accept(cx) {
                *next = i + 1;
                return Poll::Ready(r);
            }
        }
        Poll::Pending
    })
    .await
}

/// Replace the listeners by those of `bind` at `port`, keeping the sockets of
/// addresses that stay. On failure the old listeners all stay.
fn rebind(
    old: Vec<(SocketAddr, TcpListener)>,
    bind: &str,
    port: u16,
    backlog: i32,
) -> (Result<(), String>, Vec<(SocketAddr, TcpListener)>) {
    // Back to std sockets to share `bind_all` with start-up; a socket that
    // cannot make the trip is simply closed.
    let keep: Vec<Bound> = old
        .into_iter()
        .filter_map(|(addr, l)| l.into_std().ok().map(|sock| Bound { addr, sock }))
        .collect();
    match bind_all(bind, port, backlog, keep) {
        Ok((now, unused)) => {
            drop(unused);
            (Ok(()), register(now))
        }
        Err(keep) => (Err("bind failed".into()), register(keep)),
    }
}

/// Register the client for a new connection and pass it to a worker, or
/// refuse it at once when `maxclients` are connected.
fn admit(
    engine: &Engine,
    stream: TcpStream,
    peer: SocketAddr,
    workers: &[WorkerLink],
    tls: Option<crate::tls::TlsAcceptor>,
) {
    let local = stream
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let Some(session) = engine.try_connect(peer.to_string(), local) else {
        // A TLS client could not read the text before its handshake.
        if tls.is_none() {
            refuse(&stream, b"-ERR max number of clients reached\r\n");
        }
        return;
    };

    let Some(worker) = workers
        .iter()
        .min_by_key(|w| w.load.load(Ordering::Relaxed))
    else {
        return;
    };
    let stream = match stream.into_std() {
        Ok(s) => s,
        Err(e) => {
            crate::warn!("cannot hand over connection from {peer}: {e}");
            let mut session = session;
            engine.disconnect(&mut session);
            return;
        }
    };
    worker.load.fetch_add(1, Ordering::Relaxed);
    let incoming = Incoming {
        stream,
        session,
        tls,
    };
    // Plain TCP goes to the worker's event loop, TLS to its runtime.
    if incoming.tls.is_none() {
        worker.events.send(incoming);
    } else {
        let work = RuntimeWork::New(Box::new(incoming));
        to_runtime(engine, &worker.runtime, &worker.load, work);
    }
}

/// What a client refused by protected mode reads before the connection closes.
const PROTECTED_DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected \
mode is enabled and no password is set for the default user. In this mode connections are only \
accepted from the loopback interface. If you want to connect from external computers to Redis you \
may adopt one of the following solutions: 1) Just disable protected mode sending the command \
'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same \
host the server is running, however MAKE SURE Redis is not publicly accessible from internet if \
you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable \
the protected mode by editing the Redis configuration file, and setting the protected mode option \
to 'no', and then restarting the server. 3) If you started the server manually just for testing, \
restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the \
default user. NOTE: You only need to do one of the above things in order for the server to start \
accepting connections from the outside.\r\n";

/// Protected mode (Redis 7.0's rule): while it is on and the default user
/// needs no password, only loopback clients are served, whatever `bind` says.
fn protected_mode_refuses(enabled: bool, no_password: bool, peer: IpAddr) -> bool {
    let local = match peer {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v| v.is_loopback()),
    };
    enabled && no_password && !local
}

/// Best effort, as Redis: a fresh socket takes a short error without blocking,
/// and the socket closes when dropped.
fn refuse(stream: &TcpStream, msg: &[u8]) {
    let _ = stream.try_write(msg);
}

async fn serve(
    engine: Arc<Engine>,
    stream: std::net::TcpStream,
    mut session: Session,
    tls: Option<crate::tls::TlsAcceptor>,
) {
    let Some(mut stream) = on_runtime(&engine, stream, &mut session) else {
        return;
    };
    set_up_socket(&engine, &stream, &session);
    let wake = runtime_waker(&session);
    // Checked once the connection is set up (after the TLS handshake), as
    // Redis does, so a TLS client can read why it is refused.
    let denied = refused_by_protected_mode(&engine, &stream);
    if !session.handle.is_killed() {
        match tls {
            None if denied => deny(&engine, &mut stream).await,
            None => {
                let _ = connection_loop(&engine, &mut session, &mut stream, &wake).await;
            }
            Some(acceptor) => {
                if let Some(mut tls) = handshake(&engine, &session, acceptor, stream, &wake).await {
                    if denied {
                        deny(&engine, &mut tls).await;
                    } else {
                        let _ = connection_loop(&engine, &mut session, &mut tls, &wake).await;
                    }
                }
            }
        }
    }
    *session.handle.waker.lock() = None;
    // Gone from CLIENT LIST before the client sees the close, as in Redis,
    // where freeing a client does both at once.
    engine.disconnect(&mut session);
}

/// The socket registered with this runtime; on failure the client is let go.
fn on_runtime(
    engine: &Engine,
    stream: std::net::TcpStream,
    session: &mut Session,
) -> Option<TcpStream> {
    match TcpStream::from_std(stream) {
        Ok(s) => Some(s),
        Err(e) => {
            crate::warn!("cannot set up connection from {}: {e}", session.handle.addr);
            engine.disconnect(session);
            None
        }
    }
}

/// Options every client socket gets, and its descriptor for CLIENT LIST.
fn set_up_socket<S: std::os::fd::AsFd + AsRawFd>(engine: &Engine, stream: &S, session: &Session) {
    let _ = socket2::SockRef::from(stream).set_nodelay(true);
    set_keepalive(stream, engine.config.get_i64("tcp-keepalive"));
    session
        .handle
        .fd
        .store(stream.as_raw_fd(), Ordering::Relaxed);
}

/// CLIENT KILL, SHUTDOWN and the clients cron wake a connection on the
/// runtime through this; it holds no descriptor.
fn runtime_waker(session: &Session) -> Arc<Notify> {
    let wake = Arc::new(Notify::new());
    let w = wake.clone();
    *session.handle.waker.lock() = Some(Box::new(move || w.notify_one()));
    wake
}

fn refused_by_protected_mode<S: std::os::fd::AsFd>(engine: &Engine, stream: &S) -> bool {
    socket2::SockRef::from(stream)
        .peer_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .is_some_and(|peer| {
            protected_mode_refuses(
                engine.config.get_bool("protected-mode"),
                engine.acl.default_user().nopass(),
                peer.ip(),
            )
        })
}

/// A connection the event loop handed over: it goes on where it stopped,
/// on this runtime, until it closes.
async fn resume(engine: Arc<Engine>, h: reactor::Handoff) {
    let reactor::Handoff {
        stream,
        mut session,
        mut st,
        step,
    } = h;
    let Some(mut stream) = on_runtime(&engine, stream, &mut session) else {
        return;
    };
    let wake = runtime_waker(&session);
    // A wake while the connection had no waker: look at what it was for.
    if session.handle.shrink.load(Ordering::Relaxed) {
        wake.notify_one();
    }
    if !session.handle.is_killed() {
        let _ = run_loop(
            &engine,
            &mut session,
            &mut stream,
            &wake,
            &mut st,
            Some(step),
        )
        .await;
    }
    *session.handle.waker.lock() = None;
    engine.disconnect(&mut session);
}

/// `tcp-keepalive`, as Redis sets it: the first probe after `secs` idle
/// seconds, then one every third of that, and the peer is dropped after three
/// unanswered probes. 0 leaves keepalive off.
fn set_keepalive<S: std::os::fd::AsFd>(stream: &S, secs: i64) {
    if secs <= 0 {
        return;
    }
    let secs = secs as u64;
    let ka = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(secs))
        .with_interval(Duration::from_secs((secs / 3).max(1)))
        .with_retries(3);
    let _ = socket2::SockRef::from(stream).set_tcp_keepalive(&ka);
}

/// Refuse a client protected mode does not serve: Redis's text, counted as
/// a rejected connection, then the close.
async fn deny<S: tokio::io::AsyncWrite + Unpin>(engine: &Engine, stream: &mut S) {
    use tokio::io::AsyncWriteExt;
    engine
        .stats
        .rejected_connections
        .fetch_add(1, Ordering::Relaxed);
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(PROTECTED_DENIED).await?;
        stream.flush().await
    })
    .await;
}

/// How long a TLS client may take to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS handshake of a new connection, cut short by a kill, a shutdown or
/// the timeout. A client refused by it (a bad or missing certificate) is
/// logged as Redis logs it.
async fn handshake(
    engine: &Engine,
    session: &Session,
    acceptor: crate::tls::TlsAcceptor,
    stream: TcpStream,
    wake: &Notify,
) -> Option<crate::tls::TlsStream> {
    let _ = engine;
    tokio::select! {
        r = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => match r {
            Ok(Ok(tls)) => Some(tls),
            Ok(Err(e)) => {
                crate::log::log(
                    '-',
                    &format!(
                        "Error accepting a client connection: {e} (addr={})",
                        session.handle.addr
                    ),
                );
                None
            }
            Err(_) => None,
        },
        _ = wake.notified() => None,
    }
}

/// A client connection's stream as the connection loop uses it: plain TCP or
/// TLS. Reads go through `AsyncRead`; writes first try without waiting, and
/// wait only when the socket is full, so plain TCP keeps its direct path.
pub(crate) trait Conn: tokio::io::AsyncRead + Unpin {
    /// Write what the socket takes now; `WouldBlock` when it takes nothing.
    fn try_write_now(&mut self, buf: &[u8]) -> std::io::Result<usize>;
    /// Wait until writing can go on, writing part of `buf` (or flushing what
    /// is queued when `buf` is empty) when the stream writes through a
    /// buffer of its own. Returns how many bytes of `buf` it took.
    fn poll_wait_write(
        &mut self,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>>;
    /// Wait until a read would find something.
    fn poll_wait_readable(&self, cx: &mut std::task::Context<'_>) -> Poll<std::io::Result<()>>;
    /// Bytes taken by `try_write_now`/`poll_wait_write` still wait to be sent.
    fn unflushed(&self) -> bool;
}

impl Conn for TcpStream {
    #[inline]
    fn try_write_now(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.try_write(buf)
    }
    #[inline]
    fn poll_wait_write(
        &mut self,
        cx: &mut std::task::Context<'_>,
        _buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.poll_write_ready(cx).map_ok(|()| 0)
    }
    #[inline]
    fn poll_wait_readable(&self, cx: &mut std::task::Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_read_ready(cx)
    }
    #[inline]
    fn unflushed(&self) -> bool {
        false
    }
}

impl Conn for crate::tls::TlsStream {
    fn try_write_now(&mut self, _buf: &[u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::WouldBlock.into())
    }
    fn poll_wait_write(
        &mut self,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        use tokio::io::AsyncWrite;
        let this = std::pin::Pin::new(self);
        if buf.is_empty() {
            this.poll_flush(cx).map_ok(|()| 0)
        } else {
            this.poll_write(cx, buf)
        }
    }
    fn poll_wait_readable(&self, _cx: &mut std::task::Context<'_>) -> Poll<std::io::Result<()>> {
        // Decrypted bytes may wait inside the TLS session: just read.
        Poll::Ready(Ok(()))
    }
    fn unflushed(&self) -> bool {
        self.get_ref().1.wants_write()
    }
}

/// What a wait for the client ended with.
enum Wait {
    /// This many bytes arrived.
    Read(usize),
    /// The client closed, or stayed idle past `timeout`.
    Closed,
    /// Someone woke the connection (kill, clients cron).
    Woken,
}

/// Wait for bytes from the client and read them into `rbuf`. A buffer given
/// back while idle is taken again only once bytes are there to read.
async fn read_some<S: Conn>(
    engine: &Engine,
    handle: &ClientHandle,
    stream: &mut S,
    rbuf: &mut BytesMut,
    wake: &Notify,
) -> std::io::Result<Wait> {
    let idle_timeout = engine.config.idle_timeout_s();
    let wait = async {
        if rbuf.capacity() == 0 {
            tokio::select! {
                biased;
                r = std::future::poll_fn(|cx| stream.poll_wait_readable(cx)) => r?,
                _ = wake.notified() => return Ok(Wait::Woken),
            }
        }
        if rbuf.capacity() - rbuf.len() < READ_CHUNK / 4 {
            rbuf.reserve(READ_CHUNK);
            BufferStats::set(&handle.bufs.qbuf_cap, rbuf.capacity());
        }
        tokio::select! {
            biased;
            r = stream.read_buf(rbuf) => match r? {
                0 => Ok(Wait::Closed),
                n => Ok(Wait::Read(n)),
            },
            _ = wake.notified() => Ok(Wait::Woken),
        }
    };
    if idle_timeout <= 0 {
        return wait.await;
    }
    // Idle time counts from the last command, not from this wait.
    let idle_ms = engine
        .now_ms()
        .saturating_sub(handle.last_interaction_ms.load(Ordering::Relaxed));
    let left = (idle_timeout as u64 * 1000).saturating_sub(idle_ms);
    match tokio::time::timeout(Duration::from_millis(left), wait).await {
        Ok(r) => r,
        Err(_) => Ok(Wait::Closed),
    }
}

/// Write all of `wbuf`, then empty it. Returns false when the client was
/// killed while its replies waited for the socket.
async fn write_replies<S: Conn>(
    engine: &Engine,
    handle: &ClientHandle,
    stream: &mut S,
    wbuf: &mut BytesMut,
    wake: &Notify,
) -> std::io::Result<bool> {
    let st = &engine.stats;
    st.net_output_bytes
        .fetch_add(wbuf.len() as u64, Ordering::Relaxed);
    st.writes_processed.fetch_add(1, Ordering::Relaxed);
    let bufs = &handle.bufs;
    BufferStats::raise(&bufs.out_peak, wbuf.len());
    let mut done = 0;
    while done < wbuf.len() || stream.unflushed() {
        // Only a reply the socket cannot take at once waits here, and only
        // then does CLIENT LIST see it pending.
        if done < wbuf.len() {
            match stream.try_write_now(&wbuf[done..]) {
                Ok(n) => {
                    done += n;
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        BufferStats::set(&bufs.out_pending, wbuf.len() - done);
        BufferStats::set(&bufs.out_cap, wbuf.capacity());
        if keel_engine::client::over_limit(handle, keel_engine::client::pending_of(handle)) {
            return Ok(false);
        }
        let soft = keel_engine::client::soft_pending(handle);
        tokio::select! {
            biased;
            r = std::future::poll_fn(|cx| stream.poll_wait_write(cx, &wbuf[done..])) => done += r?,
            _ = wake.notified() => {
                if handle.is_killed() {
                    return Ok(false);
                }
            }
            _ = tokio::time::sleep(SOFT_RECHECK), if soft => {}
        }
    }
    replies_written(handle, wbuf);
    Ok(true)
}

/// Every reply in `wbuf` went out: empty it, and keep it from holding on to
/// a large reply's space.
fn replies_written(handle: &ClientHandle, wbuf: &mut BytesMut) {
    let bufs = &handle.bufs;
    wbuf.clear();
    bufs.output.hold(false);
    if wbuf.capacity() > 4 * 1024 * 1024 {
        *wbuf = BytesMut::with_capacity(READ_CHUNK);
    }
    BufferStats::set(&bufs.out_pending, 0);
    BufferStats::set(&bufs.out_cap, wbuf.capacity());
}

/// SHUTDOWN closed this client on its way out: like Redis, which exits
/// without flushing replies, it gets no reply, only the closed connection.
fn exiting(engine: &Engine, handle: &ClientHandle) -> bool {
    handle.is_killed() && engine.shutdown_requested.load(Ordering::Relaxed)
}

/// The clients cron asked for buffer space back (Redis's query buffer
/// resizing): an empty buffer is released, a part-filled one shrinks to what
/// it holds. The next read takes a fresh chunk.
fn give_back_buffers(
    engine: &Engine,
    handle: &ClientHandle,
    rbuf: &mut BytesMut,
    wbuf: Option<&mut BytesMut>,
) {
    handle.shrink.store(false, Ordering::Relaxed);
    if rbuf.is_empty() {
        *rbuf = BytesMut::new();
    } else if rbuf.capacity() - rbuf.len() > QBUF_WASTE_BYTES {
        let mut exact = BytesMut::with_capacity(rbuf.len());
        exact.extend_from_slice(rbuf);
        *rbuf = exact;
    }
    let bufs = &handle.bufs;
    BufferStats::set(&bufs.qbuf_cap, rbuf.capacity());
    if let Some(wbuf) = wbuf {
        if wbuf.is_empty() && wbuf.capacity() > 0 {
            *wbuf = BytesMut::new();
            engine
                .stats
                .reply_buffer_shrinks
                .fetch_add(1, Ordering::Relaxed);
        }
        BufferStats::set(&bufs.out_cap, wbuf.capacity());
    }
}

/// Redis's clientsCron, for buffers: a client idle for more than two seconds,
/// or whose query buffer is over twice the most it held since the last look,
/// is asked to give back what it does not use. Called about once a second.
pub fn clients_cron(engine: &Engine) {
    let now = engine.now_ms();
    for h in engine.clients.lock().values() {
        let b = &h.bufs;
        let qbuf = b.qbuf();
        let cap = b
            .qbuf
            .load(Ordering::Relaxed)
            .max(b.qbuf_cap.load(Ordering::Relaxed));
        let peak = b.qbuf_peak.load(Ordering::Relaxed);
        let idle = now.saturating_sub(h.last_interaction_ms.load(Ordering::Relaxed)) / 1000
            > IDLE_SHRINK_S;
        let wasteful = cap - qbuf > QBUF_WASTE_BYTES;
        let oversized = cap > QBUF_RESIZE_BYTES && cap / 2 > peak;
        let idle_output = idle && b.out_cap() > 0 && b.out_pending() == 0;
        if ((wasteful && (idle || oversized)) || idle_output)
            && !h.shrink.swap(true, Ordering::Relaxed)
        {
            h.wake();
        }
        b.qbuf_peak.store(qbuf, Ordering::Relaxed);
        b.out_peak.store(0, Ordering::Relaxed);
    }
}

/// A connection's buffers and parse state: what moves with it when the
/// worker's event loop hands it to the worker's runtime.
pub(crate) struct ConnState {
    rbuf: BytesMut,
    wbuf: BytesMut,
    /// How far the incomplete request at the front of `rbuf` has been parsed.
    progress: Option<Progress>,
    pending: Pending,
}

impl ConnState {
    fn new(handle: &ClientHandle) -> ConnState {
        let wbuf = BytesMut::with_capacity(READ_CHUNK);
        BufferStats::set(&handle.bufs.out_cap, wbuf.capacity());
        ConnState {
            rbuf: BytesMut::with_capacity(READ_CHUNK),
            wbuf,
            progress: None,
            pending: Pending::default(),
        }
    }
}

async fn connection_loop<S: Conn>(
    engine: &Engine,
    session: &mut Session,
    stream: &mut S,
    wake: &Notify,
) -> std::io::Result<()> {
    let mut st = ConnState::new(&session.handle);
    run_loop(engine, session, stream, wake, &mut st, None).await
}

/// The connection loop, from its top, or from `resume`: the step a
/// connection handed over by the event loop had reached, its replies (if
/// any) still in `st.wbuf`.
async fn run_loop<S: Conn>(
    engine: &Engine,
    session: &mut Session,
    stream: &mut S,
    wake: &Notify,
    st: &mut ConnState,
    mut resume: Option<Step>,
) -> std::io::Result<()> {
    let handle = session.handle.clone();
    let bufs = &handle.bufs;
    let ConnState {
        rbuf,
        wbuf,
        progress,
        pending,
    } = st;
    loop {
        let mut step = match resume.take() {
            Some(step) => step,
            None => {
                let read = if session.has_push_feed() {
                    monitor_read(engine, session, stream, rbuf, wake).await?
                } else {
                    read_some(engine, &handle, stream, rbuf, wake).await?
                };
                let n = match read {
                    Wait::Read(n) => n,
                    Wait::Closed => return Ok(()),
                    Wait::Woken => {
                        if handle.is_killed() {
                            return Ok(());
                        }
                        if handle.shrink.load(Ordering::Relaxed) {
                            give_back_buffers(engine, &handle, rbuf, Some(wbuf));
                        }
                        continue;
                    }
                };
                if handle.is_killed() {
                    return Ok(());
                }
                BufferStats::set(&bufs.qbuf, rbuf.len());
                BufferStats::raise(&bufs.qbuf_peak, rbuf.len());
                if let Some(feed) = session.handle.pushes.get() {
                    // Messages that arrived before these commands go out before their replies.
                    flush_messages(feed, wbuf);
                }
                count_read(engine, n);
                process(engine, session, rbuf, wbuf, progress, pending, false)
            }
        };
        loop {
            if engine.tracking.active() {
                broadcast_invalidations(engine, session, wbuf);
            }
            if matches!(step, Step::Close) && exiting(engine, &handle) {
                return Ok(());
            }
            let seq = handle.aof_seq.swap(0, Ordering::Relaxed);
            if seq != 0 {
                if engine.persist.aof.waits_for_fsync() {
                    wait_durable(engine, seq).await;
                } else {
                    engine.persist.aof.write_through(seq);
                }
            }
            if !wbuf.is_empty() && !write_replies(engine, &handle, stream, wbuf, wake).await? {
                return Ok(());
            }
            match step {
                Step::Close => return Ok(()),
                Step::Continue => break,
                Step::Flush => {}
                Step::Blocked => {
                    let Some(reply) = wait_blocked(engine, session, stream, rbuf, wake).await
                    else {
                        return Ok(());
                    };
                    send_reply(session, session.reply_flags, &reply, wbuf);
                }
                Step::Paused => {
                    if !wait_unpaused(engine, session, stream, rbuf, wake).await {
                        return Ok(());
                    }
                }
                Step::Replica => {
                    if !replica::start(engine, session, stream, wake).await? {
                        return Ok(());
                    }
                }
            }
            // The rest of the batch: after a flush, or after the blocking
            // command was served or the held one may run (it runs first), plus
            // whatever arrived while the connection waited.
            step = process(engine, session, rbuf, wbuf, progress, pending, true);
        }
        BufferStats::set(&bufs.qbuf, rbuf.len());
        BufferStats::set(&bufs.qbuf_cap, rbuf.capacity());
        if rbuf.len() as i64 > engine.config.query_buffer_limit() {
            return Ok(());
        }
    }
}

/// A read of `n` bytes, in INFO's counters.
#[inline]
fn count_read(engine: &Engine, n: usize) {
    let st = &engine.stats;
    st.net_input_bytes.fetch_add(n as u64, Ordering::Relaxed);
    st.reads_processed.fetch_add(1, Ordering::Relaxed);
}

thread_local! {
    /// This worker's connections waiting for the AOF (`appendfsync always`).
    static DURABLE_LOCAL: Arc<Notify> = Arc::new(Notify::new());
}

/// One relay per worker: the AOF thread wakes each worker once per fsync,
/// and the worker wakes its own waiting connections (a wake from another
/// thread costs a system call each; one per worker instead of one per
/// connection).
static DURABLE_RELAYS: std::sync::Mutex<Vec<Arc<Notify>>> = std::sync::Mutex::new(Vec::new());

/// The AOF has made more writes durable: wake every worker's relay. A relay
/// busy at that moment keeps the permit and runs again.
pub fn durable_wake_all() {
    if let Ok(relays) = DURABLE_RELAYS.lock() {
        for r in relays.iter() {
            r.notify_one();
        }
    }
}

/// Start this worker's relay (inside its runtime).
fn start_durable_relay() {
    let relay = Arc::new(Notify::new());
    if let Ok(mut relays) = DURABLE_RELAYS.lock() {
        relays.push(relay.clone());
    }
    let local = DURABLE_LOCAL.with(Arc::clone);
    tokio::spawn(async move {
        loop {
            relay.notified().await;
            local.notify_waiters();
        }
    });
}

/// Under `appendfsync always`, hold the replies until the fsync that covers
/// this connection's last write: the AOF thread fsyncs once for every write
/// that arrived meanwhile, from any connection (group commit).
async fn wait_durable(engine: &Engine, seq: u64) {
    let aof = &engine.persist.aof;
    let local = DURABLE_LOCAL.with(Arc::clone);
    loop {
        let notified = local.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if !aof.must_wait(seq) {
            return;
        }
        notified.await;
    }
}

/// Wait until the blocked command of `session` is served or times out, reading
/// (not running) what the client sends meanwhile so a closed connection is
/// noticed. Returns its reply, or `None` when the connection must close.
async fn wait_blocked<S: Conn>(
    engine: &Engine,
    session: &mut Session,
    stream: &mut S,
    rbuf: &mut BytesMut,
    wake: &Notify,
) -> Option<Frame> {
    let req = session.blocked.as_ref()?;
    let slot = req.slot.clone();
    // A deadline past what the clock can represent is no deadline.
    let deadline = req
        .timeout
        .and_then(|d| tokio::time::Instant::now().checked_add(d));
    let sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    let handle = session.handle.clone();
    tokio::pin!(sleep);
    // Pushes (invalidations, RESP3 pub/sub messages) go out while it waits.
    let feed = handle.pushes.get().cloned();
    loop {
        tokio::select! {
            _ = BlockWait(slot.clone()) => break,
            _ = &mut sleep => {
                engine.cancel_block(session);
                break;
            }
            // Closed or killed: disconnecting removes the waiter.
            _ = read_while_waiting(engine, &handle, stream, rbuf, wake) => return None,
            Some(f) = async { feed.as_ref()?.ready().await; feed.as_ref() } => {
                let mut out = BytesMut::new();
                f.take_into(&mut out);
                // Written like replies: counted, and under the output limits.
                if !matches!(write_replies(engine, &handle, stream, &mut out, wake).await, Ok(true)) {
                    return None;
                }
            }
        }
    }
    // Given up: the slot closes at once, or soon if a writer served the client
    // just before; that reply then wins.
    BlockWait(slot).await;
    engine.block_reply(session)
}

/// Requests parsed but not run yet: those after a blocking command wait for it.
/// Every argument of a batch is a slice of the batch's one frozen buffer, kept
/// in one list whose room is used again by the next batch, so a request costs
/// no allocation of its own.
#[derive(Default)]
struct Pending {
    /// The arguments of the requests of the batch being run, in order.
    args: Vec<Bytes>,
    /// The requests not run yet: where each one's arguments lie in `args`.
    cmds: VecDeque<Range<usize>>,
    /// Where the parser puts the argument ranges it finds (kept for its room).
    ranges: Vec<(usize, usize)>,
    /// The requests found in the read buffer, before they are frozen.
    found: Vec<Found>,
    /// A protocol error after them: answered, then the connection closes.
    bad: Option<String>,
}

/// A complete request found in the read buffer: where it starts and which of
/// the parser's ranges are its arguments, or (inline) its own arguments.
enum Found {
    Ranges { start: usize, ranges: Range<usize> },
    Owned(Vec<Vec<u8>>),
}

impl Pending {
    /// The batch is done: its arguments are let go, so that the read buffer
    /// gets its room back, but the lists keep theirs.
    fn drained(&mut self) {
        if self.cmds.is_empty() {
            self.args.clear();
        }
    }
}

/// What the connection does after running what it had.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Read more.
    Continue,
    /// Write the replies, then close.
    Close,
    /// Write the replies, then wait for the blocked command.
    Blocked,
    /// Write the replies, then wait for CLIENT PAUSE to let the next command run.
    Paused,
    /// Write the replies, then run the commands still waiting.
    Flush,
    /// Write the replies, then serve the connection as a replica's link
    /// (PSYNC or SYNC ran).
    Replica,
}

/// Run every complete request in `rbuf`, appending replies to `wbuf`. `resumed`
/// says a blocked command just finished: requests that arrived meanwhile may be
/// complete in `rbuf` and must run without waiting for another read.
fn process(
    engine: &Engine,
    session: &mut Session,
    rbuf: &mut BytesMut,
    wbuf: &mut BytesMut,
    progress: &mut Option<Progress>,
    pending: &mut Pending,
    resumed: bool,
) -> Step {
    let mut tick = keel_engine::clock::Tick::new(&*engine.clock);
    loop {
        // Before authentication each request is parsed only after the previous
        // one ran, so `AUTH` followed by a large command in the same write gets
        // the limits of an authenticated client, as in Redis.
        let one_at_a_time = !session.authenticated;
        match process_batch(
            engine,
            session,
            rbuf,
            wbuf,
            &mut tick,
            one_at_a_time,
            progress,
            pending,
        ) {
            Batch::Close => return Step::Close,
            Batch::Blocked => return Step::Blocked,
            Batch::Paused => return Step::Paused,
            Batch::Full => return Step::Flush,
            Batch::Replica => return Step::Replica,
            Batch::NeedMore => return Step::Continue,
            Batch::Ran => {
                if !one_at_a_time && !resumed {
                    return Step::Continue;
                }
            }
        }
    }
}

enum Batch {
    /// Requests ran; more complete ones may follow in the buffer.
    Ran,
    /// No complete request is buffered.
    NeedMore,
    /// The connection must close once the replies are written.
    Close,
    /// A command blocked; the rest wait in `Pending`.
    Blocked,
    /// CLIENT PAUSE holds a command; it and the rest wait in `Pending`.
    Paused,
    /// The replies reached the flush threshold; the rest wait in `Pending`.
    Full,
    /// PSYNC or SYNC ran: the connection is a replica's from here on.
    Replica,
}

/// Find the complete requests at the front of `rbuf` (at most one when
/// `only_one`), freeze their bytes once so every argument is a slice of one
/// shared buffer, and run them. Requests left over from a blocked command run
/// first, before anything new is parsed.
#[allow(clippy::too_many_arguments)]
fn process_batch(
    engine: &Engine,
    session: &mut Session,
    rbuf: &mut BytesMut,
    wbuf: &mut BytesMut,
    tick: &mut keel_engine::clock::Tick,
    only_one: bool,
    progress: &mut Option<Progress>,
    pending: &mut Pending,
) -> Batch {
    if pending.cmds.is_empty() && pending.bad.is_none() {
        let limits = RequestLimits {
            max_bulk_len: engine.config.proto_max_bulk_len(),
            authenticated: session.authenticated,
        };
        pending.ranges.clear();
        pending.found.clear();
        let mut used = 0usize;
        while used < rbuf.len() && (!only_one || pending.found.is_empty()) {
            // Only the request at `used` can be the incomplete one `progress`
            // describes: every request before it in this loop completed.
            let first = pending.ranges.len();
            match parse_request_into(&rbuf[used..], &limits, progress, &mut pending.ranges) {
                Ok(None) => break,
                Ok(Some(Parsed::Ranges { consumed })) => {
                    pending.found.push(Found::Ranges {
                        start: used,
                        ranges: first..pending.ranges.len(),
                    });
                    used += consumed;
                }
                Ok(Some(Parsed::Owned { args, consumed })) => {
                    pending.found.push(Found::Owned(args));
                    used += consumed;
                }
                Err(e) => {
                    pending.bad = Some(format!("ERR {e}"));
                    break;
                }
            }
        }
        if pending.found.is_empty() && pending.bad.is_none() {
            return Batch::NeedMore;
        }
        let frame = rbuf.split_to(used).freeze();
        // While the batch runs, CLIENT INFO sees the whole batch as buffered, as
        // Redis's query buffer holds it until every command in it has run.
        let bufs = &session.handle.bufs;
        BufferStats::set(&bufs.qbuf, frame.len() + rbuf.len());
        BufferStats::set(&bufs.qbuf_cap, frame.len() + rbuf.capacity());
        let Pending {
            args,
            cmds,
            ranges,
            found,
            ..
        } = pending;
        for req in found.drain(..) {
            let at = args.len();
            match req {
                Found::Ranges { start, ranges: r } => args.extend(
                    ranges[r]
                        .iter()
                        .map(|&(s, e)| frame.slice(start + s..start + e)),
                ),
                Found::Owned(owned) => args.extend(owned.into_iter().map(Bytes::from)),
            }
            cmds.push_back(at..args.len());
        }
        if cmds.len() > 1 {
            for r in cmds.iter().take(LOOKAHEAD) {
                engine.prefetch(session, &args[r.clone()]);
            }
        }
    }
    // Past this many reply bytes the output buffer limits and the flush
    // threshold are looked at: one comparison per reply otherwise.
    let check_at = if keel_engine::client::limited(&session.handle) {
        keel_engine::outbuf::REPLY_CHUNK_BYTES
    } else {
        FLUSH_FLOOR
    };
    let batch = run_pending(engine, session, wbuf, tick, pending, check_at);
    pending.drained();
    batch
}

/// Each command's entry is hinted this many commands ahead of running it, so
/// the cache misses of a pipeline overlap instead of coming one after another.
const LOOKAHEAD: usize = 8;

/// Run the requests waiting in `pending`, in order, until they are done or one
/// of them stops the batch.
fn run_pending(
    engine: &Engine,
    session: &mut Session,
    wbuf: &mut BytesMut,
    tick: &mut keel_engine::clock::Tick,
    pending: &mut Pending,
    check_at: usize,
) -> Batch {
    while let Some(r) = pending.cmds.pop_front() {
        if let Some(ahead) = pending.cmds.get(LOOKAHEAD - 1) {
            engine.prefetch(session, &pending.args[ahead.clone()]);
        }
        let argv = &pending.args[r.clone()];
        if argv.is_empty() {
            continue;
        }
        let flags_before = session.reply_flags;
        // With every reply sent, a handler may encode its reply here itself.
        let out = (flags_before == 0).then_some(&mut *wbuf);
        let reply = engine.execute_with(session, argv, tick, out);
        if session.postponed.take().is_some() {
            pending.cmds.push_front(r);
            return Batch::Paused;
        }
        if session.blocked.is_some() {
            // Served at once (clients ahead of it were being served), or wait.
            match engine.block_reply(session) {
                Some(reply) => send_reply(session, flags_before, &reply, wbuf),
                None => return Batch::Blocked,
            }
        } else {
            send_reply(session, flags_before, &reply, wbuf);
        }
        if session.tracking != 0 {
            // Invalidations of this client's own writes follow the reply.
            if let Some(feed) = session.handle.pushes.get() {
                flush_messages(feed, wbuf);
            }
        }
        if session.close_after_reply || session.handle.is_killed() {
            return Batch::Close;
        }
        if session.sync.as_ref().is_some_and(|s| !s.started) {
            return Batch::Replica;
        }
        if wbuf.len() >= check_at {
            if let Some(full) = output_full(&session.handle, wbuf) {
                return full;
            }
        }
    }
    if let Some(e) = pending.bad.take() {
        engine.count_error_reply(e.as_bytes());
        send_reply(session, session.reply_flags, &Frame::error(e), wbuf);
        return Batch::Close;
    }
    Batch::Ran
}

/// The replies in `wbuf` reached the point where the output buffer limits are
/// checked: close the client past them (its replies are dropped, as Redis
/// drops a client's output when it closes it for its limits), or stop running
/// commands until they are written past the flush threshold.
fn output_full(handle: &ClientHandle, wbuf: &mut BytesMut) -> Option<Batch> {
    let queued = handle.bufs.output.queued.load(Ordering::Relaxed);
    if keel_engine::client::over_limit(handle, wbuf.len() + queued) {
        wbuf.clear();
        return Some(Batch::Close);
    }
    let full = wbuf.len() >= keel_engine::client::flush_threshold(handle, FLUSH_FLOOR);
    handle.bufs.output.hold(full);
    full.then_some(Batch::Full)
}

/// Encode a command's reply, unless CLIENT REPLY holds it back; `before` is
/// the session's CLIENT REPLY state as the command started.
#[inline]
fn send_reply(session: &mut Session, before: u8, reply: &Frame, wbuf: &mut BytesMut) {
    if (before | session.reply_flags) == 0 || session.take_reply_turn(before) {
        encode(reply, session.proto, wbuf);
    }
}

/// After a batch, before its replies go: keys it changed under BCAST prefixes
/// are broadcast, this client's own share following its replies.
#[cold]
fn broadcast_invalidations(engine: &Engine, session: &Session, wbuf: &mut BytesMut) {
    engine.tracking.broadcast(engine);
    if session.tracking != 0 {
        if let Some(feed) = session.handle.pushes.get() {
            flush_messages(feed, wbuf);
        }
    }
}

/// Move the messages queued for this client (subscriptions, invalidations)
/// to its reply buffer, which counts them as output when written. Redis 7.0
/// sends them even while CLIENT REPLY is off.
fn flush_messages(feed: &keel_engine::monitor::MonitorFeed, wbuf: &mut BytesMut) {
    feed.take_into(wbuf);
}

/// Read for a monitoring client: while it sends nothing, write the lines fed to
/// it (none while its replies are off). Monitors never time out, as in Redis.
/// A replica's link writes at once past this much queued stream.
const REPLICA_BATCH: usize = 64 << 10;

async fn monitor_read<S: Conn>(
    engine: &Engine,
    session: &Session,
    stream: &mut S,
    rbuf: &mut BytesMut,
    wake: &Notify,
) -> std::io::Result<Wait> {
    let Some(feed) = session.push_feed() else {
        return read_some(engine, &session.handle, stream, rbuf, wake).await;
    };
    let mut lines = BytesMut::new();
    loop {
        if session.handle.is_killed() {
            return Ok(Wait::Woken);
        }
        if feed.is_closed() {
            return read_some(engine, &session.handle, stream, rbuf, wake).await;
        }
        if rbuf.capacity() - rbuf.len() < READ_CHUNK / 4 {
            rbuf.reserve(READ_CHUNK);
            BufferStats::set(&session.handle.bufs.qbuf_cap, rbuf.capacity());
        }
        let idle_left = idle_left(engine, session);
        tokio::select! {
            r = stream.read_buf(rbuf) => return Ok(match r? {
                0 => Wait::Closed,
                n => Wait::Read(n),
            }),
            _ = wake.notified() => return Ok(Wait::Woken),
            _ = async {
                match idle_left {
                    Some(left) => tokio::time::sleep(left).await,
                    None => std::future::pending().await,
                }
            } => return Ok(Wait::Closed),
            _ = feed.ready() => {
                if session.handle.replica.load(Ordering::Relaxed) && feed.queued() < REPLICA_BATCH {
                    // A replica's stream is written a millisecond's worth at
                    // a time (as Redis writes it once per event loop), not a
                    // write or a wake-up per command.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                feed.take_into(&mut lines);
                // MONITOR's lines are dropped while replies are off, pushes are
                // not. Written like replies: under the output buffer limits, and
                // a client killed while the socket is full is let go at once.
                let off = session.reply_flags & keel_engine::session::REPLY_OFF != 0;
                let dropped = off && session.monitor.is_some();
                if !dropped
                    && !lines.is_empty()
                    && !write_replies(engine, &session.handle, stream, &mut lines, wake).await?
                {
                    return Ok(Wait::Closed);
                }
                lines.clear();
            }
        }
    }
}

/// How long a client with a push feed may stay idle before `timeout` closes
/// it: monitors and subscribers never time out, as in Redis; a client that
/// only receives invalidations does.
fn idle_left(engine: &Engine, session: &Session) -> Option<Duration> {
    let timeout = engine.config.idle_timeout_s();
    if timeout <= 0 || session.monitor.is_some() || keel_engine::pubsub::subscribed(session) {
        return None;
    }
    let idle_ms = engine
        .now_ms()
        .saturating_sub(session.handle.last_interaction_ms.load(Ordering::Relaxed));
    Some(Duration::from_millis(
        (timeout as u64 * 1000).saturating_sub(idle_ms),
    ))
}

/// Wait until CLIENT PAUSE ends (UNPAUSE or its deadline) so the held command
/// can run again, reading (not running) what the client sends meanwhile so a
/// closed connection is noticed. Returns false when the connection must close.
async fn wait_unpaused<S: Conn>(
    engine: &Engine,
    session: &Session,
    stream: &mut S,
    rbuf: &mut BytesMut,
    wake: &Notify,
) -> bool {
    let _held = engine.pause.hold(&session.handle);
    loop {
        let now = engine.now_ms();
        let Some((_, end_ms)) = engine.pause.current(now) else {
            return true;
        };
        // Re-checked at least hourly, so a far deadline needs no huge timer.
        let left = u64::try_from(end_ms).unwrap_or(0).saturating_sub(now);
        let sleep = tokio::time::sleep(std::time::Duration::from_millis(left.min(3_600_000)));
        tokio::select! {
            _ = engine.pause.wait() => return true,
            _ = sleep => {}
            _ = read_while_waiting(engine, &session.handle, stream, rbuf, wake) => return false,
        }
    }
}

/// While a command waits (blocked, or held by CLIENT PAUSE), read but do not
/// run what the client sends, so a closed connection is noticed, and give
/// buffers back when the clients cron asks. Ends only when the connection
/// must close (closed, killed, or over the query buffer limit); reading is
/// cancel-safe, so dropping it when the wait ends loses nothing.
async fn read_while_waiting<S: Conn>(
    engine: &Engine,
    handle: &ClientHandle,
    stream: &mut S,
    rbuf: &mut BytesMut,
    wake: &Notify,
) {
    loop {
        if rbuf.capacity() - rbuf.len() < READ_CHUNK / 4 {
            rbuf.reserve(READ_CHUNK);
            BufferStats::set(&handle.bufs.qbuf_cap, rbuf.capacity());
        }
        tokio::select! {
            _ = wake.notified() => {
                if handle.is_killed() {
                    return;
                }
                if handle.shrink.load(Ordering::Relaxed) {
                    give_back_buffers(engine, handle, rbuf, None);
                }
            }
            r = stream.read_buf(rbuf) => match r {
                Ok(n) if n > 0 && !handle.is_killed() => {
                    let st = &engine.stats;
                    st.net_input_bytes.fetch_add(n as u64, Ordering::Relaxed);
                    st.reads_processed.fetch_add(1, Ordering::Relaxed);
                    if rbuf.len() as i64 > engine.config.query_buffer_limit() {
                        return;
                    }
                }
                _ => return,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free_port() -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    }

    #[test]
    fn protected_mode_serves_only_loopback_without_a_password() {
        let outside: IpAddr = "192.0.2.7".parse().expect("ip");
        let outside6: IpAddr = "2001:db8::7".parse().expect("ip");
        for lo in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            let lo: IpAddr = lo.parse().expect("ip");
            assert!(!protected_mode_refuses(true, true, lo), "{lo}");
        }
        assert!(protected_mode_refuses(true, true, outside));
        assert!(protected_mode_refuses(true, true, outside6));
        // Off, or a password set: everyone is served.
        assert!(!protected_mode_refuses(false, true, outside));
        assert!(!protected_mode_refuses(true, false, outside));
        assert!(PROTECTED_DENIED.starts_with(b"-DENIED Redis is running in protected mode"));
        assert!(PROTECTED_DENIED.ends_with(b"from the outside.\r\n"));
    }

    #[test]
    fn keepalive_is_set_as_redis_sets_it() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let c = std::net::TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let sock = socket2::SockRef::from(&c);
        set_keepalive(&c, 0);
        assert!(!sock.keepalive().expect("get"));
        set_keepalive(&c, 300);
        assert!(sock.keepalive().expect("get"));
        assert_eq!(
            sock.keepalive_time().expect("idle"),
            Duration::from_secs(300)
        );
        assert_eq!(
            sock.keepalive_interval().expect("intvl"),
            Duration::from_secs(100)
        );
        assert_eq!(sock.keepalive_retries().expect("cnt"), 3);
    }

    #[test]
    fn bind_words_as_redis_reads_them() {
        let any4: SocketAddr = "0.0.0.0:7".parse().expect("addr");
        assert_eq!(bind_target("*", 7), Ok((any4, false)));
        let any6: SocketAddr = "[::]:7".parse().expect("addr");
        assert_eq!(bind_target("-::*", 7), Ok((any6, true)));
        let lo6: SocketAddr = "[::1]:7".parse().expect("addr");
        assert_eq!(bind_target("-::1", 7), Ok((lo6, true)));
        assert!(bind_target("no-such-host.invalid", 7).is_err());
    }

    #[test]
    fn rebinding_keeps_sockets_of_addresses_that_stay() {
        let port = free_port();
        let (first, unused) = bind_all("127.0.0.1", port, 16, Vec::new()).expect("bind");
        assert!(unused.is_empty());
        assert_eq!(first.len(), 1);
        let fd = first[0].sock.as_raw_fd();
        // The same address again: the socket is reused, not bound twice.
        let (again, unused) = bind_all("127.0.0.1", port, 16, first).expect("rebind");
        assert!(unused.is_empty());
        assert_eq!(again[0].sock.as_raw_fd(), fd);
        // A taken address fails the call and hands every socket back.
        let taken = std::net::TcpListener::bind("127.0.0.2:0").expect("bind");
        let taken_port = taken.local_addr().expect("addr").port();
        let back = bind_all("127.0.0.2", taken_port, 16, again).expect_err("taken");
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].sock.as_raw_fd(), fd);
        // Another port: a new socket, and the old one is handed back unused.
        let (moved, unused) = bind_all("127.0.0.1", free_port(), 16, back).expect("move");
        assert_eq!(moved.len(), 1);
        assert_eq!(unused.len(), 1);
        // Port 0 listens nowhere.
        let (none, unused) = bind_all("127.0.0.1", 0, 16, moved).expect("port 0");
        assert!(none.is_empty());
        assert_eq!(unused.len(), 1);
    }

    #[test]
    fn a_second_listener_on_a_bound_address_is_refused() {
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        let _first = bind(addr, 16).expect("first");
        let (text, e) = bind(addr, 16).expect_err("second");
        assert_eq!(e.raw_os_error(), Some(libc::EADDRINUSE));
        assert_eq!(text, "bind: Address already in use");
    }
}
