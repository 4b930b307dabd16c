//! The network layer: one listener per worker thread (SO_REUSEPORT spreads new
//! connections across them) and the connection loop.
//!
//! A connection reads whatever has arrived, runs every complete command in the
//! buffer through `Engine::execute`, and writes all the replies with one write.
//! Nothing here interprets commands.

use bytes::{Bytes, BytesMut};
use keel_engine::blocking::BlockWait;
use keel_engine::{Engine, Session};
use keel_resp::{encode, parse_request_resuming, Frame, Progress, Request, RequestLimits};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const READ_CHUNK: usize = 16 * 1024;

/// Bind a listening socket that other threads can bind too (SO_REUSEPORT).
pub fn bind(addr: SocketAddr, backlog: i32) -> std::io::Result<std::net::TcpListener> {
    let domain = if addr.is_ipv4() {
        socket2::Domain::IPV4
    } else {
        socket2::Domain::IPV6
    };
    let sock = socket2::Socket::new(domain, socket2::Type::STREAM, Some(socket2::Protocol::TCP))?;
    sock.set_reuse_address(true)?;
    sock.set_reuse_port(true)?;
    if addr.is_ipv6() {
        sock.set_only_v6(true)?;
    }
    sock.set_nonblocking(true)?;
    sock.bind(&addr.into())?;
    sock.listen(backlog.max(1))?;
    Ok(sock.into())
}

/// Accept connections until shutdown, serving each on this thread.
pub async fn accept_loop(
    engine: Arc<Engine>,
    listener: std::net::TcpListener,
    stop: Arc<tokio::sync::Notify>,
) {
    let listener = match TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            crate::warn!("cannot register listener: {e}");
            return;
        }
    };
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.notified() => return,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                crate::warn!("accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        if engine.shutdown_requested.load(Ordering::Relaxed) {
            return;
        }
        let engine = engine.clone();
        tokio::spawn(async move {
            serve(engine, stream, peer).await;
        });
    }
}

async fn refuse(mut stream: TcpStream, msg: &[u8]) {
    let _ = stream.write_all(msg).await;
    let _ = stream.shutdown().await;
}

async fn serve(engine: Arc<Engine>, stream: TcpStream, peer: SocketAddr) {
    let local = stream
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let Some(mut session) = engine.try_connect(peer.to_string(), local) else {
        refuse(stream, b"-ERR max number of clients reached\r\n").await;
        return;
    };
    let _ = stream.set_nodelay(true);
    let keepalive = engine.config.get_i64("tcp-keepalive");
    if keepalive > 0 {
        let ka = socket2::TcpKeepalive::new()
            .with_time(std::time::Duration::from_secs(keepalive as u64));
        let _ = socket2::SockRef::from(&stream).set_tcp_keepalive(&ka);
    }
    // A duplicate of the socket lets CLIENT KILL and SHUTDOWN close it from
    // another thread, waking the blocked read with no cost on the request path.
    let (stream, closer) = match stream.into_std().and_then(|s| {
        let dup = s.try_clone()?;
        Ok((TcpStream::from_std(s)?, dup))
    }) {
        Ok(x) => x,
        Err(e) => {
            crate::warn!("cannot set up connection from {peer}: {e}");
            engine.disconnect(&mut session);
            return;
        }
    };
    *session.handle.closer.lock() = Some(Box::new(move || {
        let _ = closer.shutdown(std::net::Shutdown::Both);
    }));
    let _ = connection_loop(&engine, &mut session, stream).await;
    engine.disconnect(&mut session);
}

async fn connection_loop(
    engine: &Engine,
    session: &mut Session,
    mut stream: TcpStream,
) -> std::io::Result<()> {
    let mut rbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut wbuf = BytesMut::with_capacity(READ_CHUNK);
    // How far the incomplete request at the front of `rbuf` has been parsed.
    let mut progress: Option<Progress> = None;
    let mut pending = Pending::default();
    loop {
        if rbuf.capacity() - rbuf.len() < READ_CHUNK / 4 {
            rbuf.reserve(READ_CHUNK);
        }
        let idle_timeout = engine.config.idle_timeout_s();
        let n = if idle_timeout > 0 {
            let dur = std::time::Duration::from_secs(idle_timeout as u64);
            match tokio::time::timeout(dur, stream.read_buf(&mut rbuf)).await {
                Ok(r) => r?,
                Err(_) => return Ok(()),
            }
        } else {
            stream.read_buf(&mut rbuf).await?
        };
        if n == 0 || session.handle.is_killed() {
            return Ok(());
        }
        engine
            .stats
            .net_input_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
        let mut step = process(
            engine,
            session,
            &mut rbuf,
            &mut wbuf,
            &mut progress,
            &mut pending,
            false,
        );
        loop {
            if !wbuf.is_empty() {
                engine
                    .stats
                    .net_output_bytes
                    .fetch_add(wbuf.len() as u64, Ordering::Relaxed);
                stream.write_all(&wbuf).await?;
                wbuf.clear();
                if wbuf.capacity() > 4 * 1024 * 1024 {
                    wbuf = BytesMut::with_capacity(READ_CHUNK);
                }
            }
            match step {
                Step::Close => return Ok(()),
                Step::Continue => break,
                Step::Blocked => {
                    let Some(reply) = wait_blocked(engine, session, &mut stream, &mut rbuf).await
                    else {
                        return Ok(());
                    };
                    encode(&reply, session.proto, &mut wbuf);
                    // The commands that came after the blocking one, and any
                    // that arrived while it waited, run now.
                    step = process(
                        engine,
                        session,
                        &mut rbuf,
                        &mut wbuf,
                        &mut progress,
                        &mut pending,
                        true,
                    );
                }
            }
        }
        if rbuf.len() as i64 > engine.config.query_buffer_limit() {
            return Ok(());
        }
    }
}

/// Wait until the blocked command of `session` is served or times out, reading
/// (not running) what the client sends meanwhile so a closed connection is
/// noticed. Returns its reply, or `None` when the connection must close.
async fn wait_blocked(
    engine: &Engine,
    session: &mut Session,
    stream: &mut TcpStream,
    rbuf: &mut BytesMut,
) -> Option<Frame> {
    let req = session.blocked.as_ref()?;
    let slot = req.slot.clone();
    // A deadline past what the clock can represent is no deadline.
    let deadline = req
        .timeout
        .and_then(|d| tokio::time::Instant::now().checked_add(d));
    let mut wait = BlockWait(slot.clone());
    loop {
        if rbuf.capacity() - rbuf.len() < READ_CHUNK / 4 {
            rbuf.reserve(READ_CHUNK);
        }
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = &mut wait => break,
            _ = sleep => {
                engine.cancel_block(session);
                break;
            }
            r = stream.read_buf(rbuf) => match r {
                Ok(n) if n > 0 && !session.handle.is_killed() => {
                    engine
                        .stats
                        .net_input_bytes
                        .fetch_add(n as u64, Ordering::Relaxed);
                    if rbuf.len() as i64 > engine.config.query_buffer_limit() {
                        return None;
                    }
                }
                // Closed or killed: disconnecting removes the waiter.
                _ => return None,
            },
        }
    }
    // Given up: the slot closes at once, or soon if a writer served the client
    // just before; that reply then wins.
    BlockWait(slot).await;
    engine.block_reply(session)
}

/// Requests parsed but not run yet: those after a blocking command wait for it.
#[derive(Default)]
struct Pending {
    cmds: VecDeque<Vec<Bytes>>,
    /// A protocol error after them: answered, then the connection closes.
    bad: Option<String>,
}

/// What the connection does after running what it had.
enum Step {
    /// Read more.
    Continue,
    /// Write the replies, then close.
    Close,
    /// Write the replies, then wait for the blocked command.
    Blocked,
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
    // Hint each command's entry a few commands ahead of running it, so the
    // cache misses of a pipeline overlap instead of coming one after another.
    const LOOKAHEAD: usize = 8;
    if pending.cmds.is_empty() && pending.bad.is_none() {
        let limits = RequestLimits {
            max_bulk_len: engine.config.proto_max_bulk_len(),
            authenticated: session.authenticated,
        };
        let mut requests = Vec::new();
        let mut used = 0usize;
        while used < rbuf.len() && (!only_one || requests.is_empty()) {
            // Only the request at `used` can be the incomplete one `progress`
            // describes: every request before it in this loop completed.
            match parse_request_resuming(&rbuf[used..], &limits, progress) {
                Ok(None) => break,
                Ok(Some(req)) => {
                    let consumed = match &req {
                        Request::Ranges { consumed, .. } | Request::Owned { consumed, .. } => {
                            *consumed
                        }
                    };
                    requests.push((used, req));
                    used += consumed;
                }
                Err(e) => {
                    pending.bad = Some(format!("ERR {e}"));
                    break;
                }
            }
        }
        if requests.is_empty() && pending.bad.is_none() {
            return Batch::NeedMore;
        }
        let frame = rbuf.split_to(used).freeze();
        pending
            .cmds
            .extend(requests.into_iter().map(|(start, req)| {
                match req {
                    Request::Ranges { args, .. } => args
                        .into_iter()
                        .map(|(s, e)| frame.slice(start + s..start + e))
                        .collect(),
                    Request::Owned { args, .. } => args.into_iter().map(Bytes::from).collect(),
                }
            }));
        if pending.cmds.len() > 1 {
            for argv in pending.cmds.iter().take(LOOKAHEAD) {
                engine.prefetch(session, argv);
            }
        }
    }
    while let Some(argv) = pending.cmds.pop_front() {
        if let Some(ahead) = pending.cmds.get(LOOKAHEAD - 1) {
            engine.prefetch(session, ahead);
        }
        if argv.is_empty() {
            continue;
        }
        let reply = engine.execute_with(session, argv, tick);
        if session.blocked.is_some() {
            // Served at once (clients ahead of it were being served), or wait.
            match engine.block_reply(session) {
                Some(reply) => encode(&reply, session.proto, wbuf),
                None => return Batch::Blocked,
            }
        } else {
            encode(&reply, session.proto, wbuf);
        }
        if session.close_after_reply || session.handle.is_killed() {
            return Batch::Close;
        }
    }
    if let Some(e) = pending.bad.take() {
        engine.count_error_reply(e.as_bytes());
        encode(&Frame::error(e), session.proto, wbuf);
        return Batch::Close;
    }
    Batch::Ran
}
