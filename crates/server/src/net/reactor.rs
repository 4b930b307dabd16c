//! A worker's event loop: the plain TCP connections of one worker thread, in
//! one level-triggered epoll set, each read, run and answered in place.
//!
//! A request costs one `epoll_pwait` (shared by every connection it finds
//! ready), one `recvfrom` and one `sendto`, and nothing else: no task to
//! schedule, no timer to arm, no waker to register. The loop serves a
//! connection for as long as all it waits for is its socket's next bytes or
//! its push messages (pub/sub, invalidations, MONITOR lines: the feed wakes
//! the loop for it). When it comes to wait for anything else (a blocked
//! command, CLIENT PAUSE, the AOF's fsync under `appendfsync always`, a
//! socket that takes no more replies), the loop hands it, buffers and parse
//! state included, to the worker's tokio runtime, which serves it from that
//! step on until it closes.
//!
//! Other threads reach the loop through [`LoopShared`]: the acceptor's new
//! connections, and wake-ups of one connection (CLIENT KILL, the clients
//! cron, a push feed created for it) go into a queue, and one write to an
//! eventfd in the epoll set makes the loop look at it.
//!
//! Epoll event data is a token: the connection's slot in `conns` in the low
//! 32 bits, the slot's generation in the high 32, so a wake-up queued for a
//! connection that has since closed never reaches the slot's next one.

use super::*;
use std::future::Future;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::AtomicBool;

/// The eventfd's token.
const WAKE_TOKEN: u64 = u64::MAX;
/// Events taken per `epoll_pwait`.
const EVENTS: usize = 256;
/// How often the loop gives back its allocator's free pages and closes
/// clients idle past `timeout`.
const TICK: Duration = Duration::from_millis(250);
/// Loop turns between two looks at the clock for the tick, when busy.
const TURNS_PER_CLOCK: u32 = 64;

/// What other threads hand to a worker's event loop.
#[derive(Default)]
struct Queue {
    incoming: Vec<Incoming>,
    woken: Vec<u64>,
}

/// A worker event loop's mailbox.
pub struct LoopShared {
    eventfd: OwnedFd,
    /// An eventfd write is pending: further wake-ups need none.
    signalled: AtomicBool,
    queue: std::sync::Mutex<Queue>,
}

impl LoopShared {
    pub fn new() -> std::io::Result<LoopShared> {
        // SAFETY: eventfd takes no pointers; a non-negative result is a new
        // descriptor that only this OwnedFd owns.
        #[allow(unsafe_code)]
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        #[allow(unsafe_code)]
        let eventfd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(LoopShared {
            eventfd,
            signalled: AtomicBool::new(false),
            queue: std::sync::Mutex::new(Queue::default()),
        })
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new connection for this worker.
    pub(crate) fn send(&self, incoming: Incoming) {
        self.queue().incoming.push(incoming);
        self.signal();
    }

    /// Have the loop look at the connection of `token`.
    fn wake(&self, token: u64) {
        self.queue().woken.push(token);
        self.signal();
    }

    fn signal(&self) {
        if !self.signalled.swap(true, Ordering::SeqCst) {
            let one: u64 = 1;
            // SAFETY: writes the 8 bytes of `one`, which outlives the call,
            // to the eventfd this struct owns.
            #[allow(unsafe_code)]
            let _ = unsafe {
                libc::write(
                    self.eventfd.as_raw_fd(),
                    (&one as *const u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
        }
    }

    /// Everything queued since the last look.
    fn take(&self) -> Queue {
        let mut count: u64 = 0;
        // SAFETY: reads at most 8 bytes into `count`, which outlives the call.
        #[allow(unsafe_code)]
        let _ = unsafe {
            libc::read(
                self.eventfd.as_raw_fd(),
                (&mut count as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        // Cleared before the queue is read, so a wake-up queued after this
        // point signals again.
        self.signalled.store(false, Ordering::SeqCst);
        std::mem::take(&mut *self.queue())
    }
}

/// A connection on its way from the event loop to the worker's runtime, and
/// the step it goes on from there.
pub(crate) struct Handoff {
    pub(super) stream: std::net::TcpStream,
    pub(super) session: Session,
    pub(super) st: ConnState,
    pub(super) step: Step,
}

/// One connection the loop serves.
struct Client {
    stream: std::net::TcpStream,
    /// The session's handle, held apart so that reading it needs no borrow
    /// of the session.
    handle: Arc<ClientHandle>,
    session: Session,
    st: ConnState,
    generation: u32,
    /// Wakes the loop for this connection: given to its push feed.
    waker: std::task::Waker,
}

/// A push feed's way back to the loop: it queues the connection's token.
struct FeedWaker {
    shared: Arc<LoopShared>,
    token: u64,
}

impl std::task::Wake for FeedWaker {
    fn wake(self: Arc<Self>) {
        self.shared.wake(self.token);
    }
}

/// What the loop does with a connection after looking at it.
enum Outcome {
    Keep,
    Close,
    /// Serve it on the runtime from this step.
    Handoff(Step),
}

/// One worker's event loop; [`EventLoop::run`] serves until the process ends.
pub struct EventLoop {
    shared: Arc<LoopShared>,
    runtime: mpsc::UnboundedSender<RuntimeWork>,
    load: Arc<AtomicUsize>,
    conns: Vec<Option<Client>>,
    generations: Vec<u32>,
    free: Vec<u32>,
}

impl EventLoop {
    pub(super) fn new(
        shared: Arc<LoopShared>,
        runtime: mpsc::UnboundedSender<RuntimeWork>,
        load: Arc<AtomicUsize>,
    ) -> EventLoop {
        EventLoop {
            shared,
            runtime,
            load,
            conns: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
        }
    }

    pub fn run(mut self, engine: &Engine) -> std::io::Result<()> {
        let epoll = Epoll::new()?;
        epoll.add(self.shared.eventfd.as_raw_fd(), WAKE_TOKEN)?;
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        let mut last_tick = Instant::now();
        let mut turns = 0u32;
        loop {
            let ready = epoll.wait(&mut events, TICK.as_millis() as i32)?;
            for ev in &events[..ready] {
                let token = ev.u64;
                if token == WAKE_TOKEN {
                    self.take_queue(engine, &epoll);
                } else {
                    self.serve(engine, &epoll, token);
                }
            }
            turns += 1;
            if ready == 0 || turns >= TURNS_PER_CLOCK {
                turns = 0;
                if last_tick.elapsed() >= TICK {
                    last_tick = Instant::now();
                    crate::alloc::collect_thread();
                    self.close_idle(engine, &epoll);
                }
            }
        }
    }

    fn client(&mut self, token: u64) -> Option<&mut Client> {
        let slot = (token & u64::from(u32::MAX)) as usize;
        let generation = (token >> 32) as u32;
        self.conns
            .get_mut(slot)?
            .as_mut()
            .filter(|c| c.generation == generation)
    }

    fn serve(&mut self, engine: &Engine, epoll: &Epoll, token: u64) {
        let Some(client) = self.client(token) else {
            return;
        };
        // A panic in a command ends its connection, not the worker.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            serve_readable(engine, client)
        }))
        .unwrap_or(Outcome::Close);
        self.settle(engine, epoll, token, outcome);
    }

    fn settle(&mut self, engine: &Engine, epoll: &Epoll, token: u64, outcome: Outcome) {
        match outcome {
            Outcome::Keep => {}
            Outcome::Close => self.close(engine, epoll, token),
            Outcome::Handoff(step) => self.hand_off(engine, epoll, token, step),
        }
    }

    fn take_queue(&mut self, engine: &Engine, epoll: &Epoll) {
        let Queue { incoming, woken } = self.shared.take();
        for i in incoming {
            self.admit(engine, epoll, i);
        }
        for token in woken {
            let Some(client) = self.client(token) else {
                continue;
            };
            let outcome = if client.handle.is_killed() {
                Outcome::Close
            } else {
                if client.handle.shrink.load(Ordering::Relaxed) {
                    let st = &mut client.st;
                    give_back_buffers(engine, &client.handle, &mut st.rbuf, Some(&mut st.wbuf));
                }
                serve_pushes(engine, client)
            };
            self.settle(engine, epoll, token, outcome);
        }
    }

    /// Take a new connection from the acceptor.
    fn admit(&mut self, engine: &Engine, epoll: &Epoll, incoming: Incoming) {
        let Incoming {
            stream,
            session,
            tls,
        } = incoming;
        if tls.is_some() || refused_by_protected_mode(engine, &stream) {
            // The runtime does the handshake, or tells the client why not.
            let work = RuntimeWork::New(Box::new(Incoming {
                stream,
                session,
                tls,
            }));
            to_runtime(engine, &self.runtime, &self.load, work);
            return;
        }
        set_up_socket(engine, &stream, &session);
        let slot = match self.free.pop() {
            Some(s) => s as usize,
            None => {
                self.conns.push(None);
                self.generations.push(0);
                self.conns.len() - 1
            }
        };
        self.generations[slot] = self.generations[slot].wrapping_add(1);
        let generation = self.generations[slot];
        let token = (u64::from(generation) << 32) | slot as u64;
        let shared = self.shared.clone();
        *session.handle.waker.lock() = Some(Box::new(move || shared.wake(token)));
        let waker = std::task::Waker::from(Arc::new(FeedWaker {
            shared: self.shared.clone(),
            token,
        }));
        let fd = stream.as_raw_fd();
        let handle = session.handle.clone();
        let killed = handle.is_killed();
        let st = ConnState::new(&handle);
        self.conns[slot] = Some(Client {
            stream,
            handle,
            session,
            st,
            generation,
            waker,
        });
        if killed || epoll.add(fd, token).is_err() {
            self.close(engine, epoll, token);
        }
    }

    /// Close the connection of `token`: gone from CLIENT LIST before the
    /// client sees the close, as in Redis.
    fn close(&mut self, engine: &Engine, epoll: &Epoll, token: u64) {
        let Some(mut client) = self.release(epoll, token) else {
            return;
        };
        *client.handle.waker.lock() = None;
        engine.disconnect(&mut client.session);
        self.load.fetch_sub(1, Ordering::Relaxed);
        drop(client);
    }

    fn hand_off(&mut self, engine: &Engine, epoll: &Epoll, token: u64, step: Step) {
        let Some(client) = self.release(epoll, token) else {
            return;
        };
        *client.handle.waker.lock() = None;
        let Client {
            stream,
            session,
            st,
            ..
        } = client;
        let work = RuntimeWork::Resume(Box::new(Handoff {
            stream,
            session,
            st,
            step,
        }));
        to_runtime(engine, &self.runtime, &self.load, work);
    }

    /// Take the connection of `token` out of the loop.
    fn release(&mut self, epoll: &Epoll, token: u64) -> Option<Client> {
        self.client(token)?;
        let slot = (token & u64::from(u32::MAX)) as usize;
        let client = self.conns[slot].take()?;
        epoll.delete(client.stream.as_raw_fd());
        self.free.push(slot as u32);
        Some(client)
    }

    /// `timeout`: clients idle past it are closed (the runtime's own
    /// connections time out by themselves).
    fn close_idle(&mut self, engine: &Engine, epoll: &Epoll) {
        let timeout = engine.config.idle_timeout_s();
        if timeout <= 0 {
            return;
        }
        let now = engine.now_ms();
        let limit = timeout as u64 * 1000;
        let idle: Vec<u64> = self
            .conns
            .iter()
            .enumerate()
            .filter_map(|(slot, c)| {
                let c = c.as_ref()?;
                // Monitors and subscribers never time out, as in Redis.
                if c.session.monitor.is_some() || keel_engine::pubsub::subscribed(&c.session) {
                    return None;
                }
                let last = c.handle.last_interaction_ms.load(Ordering::Relaxed);
                (now.saturating_sub(last) >= limit)
                    .then_some((u64::from(c.generation) << 32) | slot as u64)
            })
            .collect();
        for token in idle {
            self.close(engine, epoll, token);
        }
    }
}

/// The connection's socket is readable: read what arrived, run every
/// complete request, and write the replies, as the runtime's connection
/// loop does, unless the connection must wait for something else.
fn serve_readable(engine: &Engine, client: &mut Client) -> Outcome {
    let Client {
        stream,
        handle,
        session,
        st,
        ..
    } = client;
    let fd = stream.as_raw_fd();
    let bufs = &handle.bufs;
    let ConnState {
        rbuf,
        wbuf,
        progress,
        pending,
    } = st;
    if rbuf.capacity() - rbuf.len() < READ_CHUNK / 4 {
        rbuf.reserve(READ_CHUNK);
        BufferStats::set(&bufs.qbuf_cap, rbuf.capacity());
    }
    let n = match recv(fd, rbuf) {
        Ok(0) => return Outcome::Close,
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Outcome::Keep,
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Outcome::Keep,
        Err(_) => return Outcome::Close,
    };
    if handle.is_killed() {
        return Outcome::Close;
    }
    BufferStats::set(&bufs.qbuf, rbuf.len());
    BufferStats::raise(&bufs.qbuf_peak, rbuf.len());
    if let Some(feed) = handle.pushes.get() {
        // Messages that arrived before these commands go out before their replies.
        flush_messages(feed, wbuf);
    }
    count_read(engine, n);
    let mut step = process(engine, session, rbuf, wbuf, progress, pending, false);
    loop {
        if engine.tracking.active() {
            broadcast_invalidations(engine, session, wbuf);
        }
        if matches!(step, Step::Close) && exiting(engine, handle) {
            return Outcome::Close;
        }
        if handle.aof_seq.load(Ordering::Relaxed) != 0 {
            if engine.persist.aof.waits_for_fsync() {
                // The replies wait for the fsync: the runtime holds them.
                return Outcome::Handoff(step);
            }
            let seq = handle.aof_seq.swap(0, Ordering::Relaxed);
            engine.persist.aof.write_through(seq);
        }
        if !wbuf.is_empty() {
            match write_now(engine, handle, fd, wbuf) {
                Ok(true) => {}
                // The socket is full: the runtime waits for it.
                Ok(false) => return Outcome::Handoff(step),
                Err(_) => return Outcome::Close,
            }
        }
        match step {
            Step::Close => return Outcome::Close,
            Step::Continue => break,
            Step::Flush => {}
            Step::Blocked | Step::Paused | Step::Replica => return Outcome::Handoff(step),
        }
        step = process(engine, session, rbuf, wbuf, progress, pending, true);
    }
    BufferStats::set(&bufs.qbuf, rbuf.len());
    BufferStats::set(&bufs.qbuf_cap, rbuf.capacity());
    if rbuf.len() as i64 > engine.config.query_buffer_limit() {
        return Outcome::Close;
    }
    if !session.has_push_feed() {
        return Outcome::Keep;
    }
    serve_pushes(engine, client)
}

/// Write what the connection's push feed holds (MONITOR's lines are dropped
/// while its replies are off, other pushes are not), then have the feed wake
/// the loop when more comes. A socket that takes no more hands the
/// connection to the runtime.
#[inline(never)]
fn serve_pushes(engine: &Engine, client: &mut Client) -> Outcome {
    let Some(feed) = client.session.push_feed() else {
        return Outcome::Keep;
    };
    let fd = client.stream.as_raw_fd();
    let mut cx = std::task::Context::from_waker(&client.waker);
    loop {
        if feed.is_closed() {
            return Outcome::Keep;
        }
        let wbuf = &mut client.st.wbuf;
        let off = client.session.reply_flags & keel_engine::session::REPLY_OFF != 0;
        if off && client.session.monitor.is_some() {
            let mut dropped = BytesMut::new();
            feed.take_into(&mut dropped);
        } else {
            feed.take_into(wbuf);
        }
        if !wbuf.is_empty() {
            match write_now(engine, &client.handle, fd, wbuf) {
                Ok(true) => {}
                Ok(false) => return Outcome::Handoff(Step::Continue),
                Err(_) => return Outcome::Close,
            }
        }
        let mut ready = feed.ready();
        if std::pin::Pin::new(&mut ready).poll(&mut cx).is_pending() {
            return Outcome::Keep;
        }
    }
}

/// Write what the socket takes of `wbuf` now. True when all of it went;
/// otherwise `wbuf` keeps only what is left.
fn write_now(
    engine: &Engine,
    handle: &ClientHandle,
    fd: RawFd,
    wbuf: &mut BytesMut,
) -> std::io::Result<bool> {
    let mut done = 0;
    while done < wbuf.len() {
        match send(fd, &wbuf[done..]) {
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    let st = &engine.stats;
    st.net_output_bytes
        .fetch_add(done as u64, Ordering::Relaxed);
    st.writes_processed.fetch_add(1, Ordering::Relaxed);
    BufferStats::raise(&handle.bufs.out_peak, wbuf.len());
    if done < wbuf.len() {
        bytes::Buf::advance(wbuf, done);
        return Ok(false);
    }
    replies_written(handle, wbuf);
    Ok(true)
}

fn result(rc: libc::c_long) -> std::io::Result<usize> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// Read into `buf`'s spare capacity. A raw system call: the libc wrappers of
/// `recv`, `send` and `epoll_wait` are thread cancellation points, and
/// switching cancellation on and off around each costs more than the call.
fn recv(fd: RawFd, buf: &mut BytesMut) -> std::io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    // SAFETY: the kernel writes at most `spare.len()` bytes into `spare`,
    // memory `buf` owns and nothing else borrows during the call.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            fd,
            spare.as_mut_ptr(),
            spare.len(),
            0,
            std::ptr::null_mut::<libc::sockaddr>(),
            std::ptr::null_mut::<libc::socklen_t>(),
        )
    };
    let n = result(rc)?;
    // SAFETY: the kernel initialised the first `n` spare bytes.
    #[allow(unsafe_code)]
    unsafe {
        buf.set_len(buf.len() + n)
    };
    Ok(n)
}

fn send(fd: RawFd, data: &[u8]) -> std::io::Result<usize> {
    // SAFETY: the kernel reads at most `data.len()` bytes of `data`.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd,
            data.as_ptr(),
            data.len(),
            libc::MSG_NOSIGNAL,
            std::ptr::null::<libc::sockaddr>(),
            0,
        )
    };
    result(rc)
}

/// An epoll set, level-triggered: a connection with bytes left unread is
/// reported again on the next wait.
struct Epoll(OwnedFd);

impl Epoll {
    fn new() -> std::io::Result<Epoll> {
        // SAFETY: takes no pointers; a non-negative result is a new
        // descriptor owned by nothing else.
        #[allow(unsafe_code)]
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        #[allow(unsafe_code)]
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn add(&self, fd: RawFd, token: u64) -> std::io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: `ev` is valid for the call; the kernel copies it.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    fn delete(&self, fd: RawFd) {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as in `add`; the event is ignored for a deletion.
        #[allow(unsafe_code)]
        let _ = unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) };
    }

    /// Wait up to `timeout_ms` for events; how many were written to `events`.
    fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> std::io::Result<usize> {
        // SAFETY: the kernel writes at most `events.len()` events into
        // `events`; a null signal mask leaves the thread's as it is.
        #[allow(unsafe_code)]
        let rc = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait,
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                timeout_ms,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        match result(rc) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(0),
            r => r,
        }
    }
}
