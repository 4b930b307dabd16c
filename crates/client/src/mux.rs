//! One multiplexed connection with smart batching.
//!
//! Callers append their encoded request to a shared output buffer and their
//! reply slot to a shared FIFO, under one short lock, so the order of slots
//! is the order of requests on the wire. A writer task swaps the whole buffer
//! out and sends it with one write: everything queued while the previous
//! write was in flight goes out together, and an idle writer is woken at
//! once, so there is no linger delay. A reader task cuts complete replies off
//! its input and completes slots from the front of the FIFO. A caller that
//! gave up (timeout) has dropped its receiver; its reply is read and
//! discarded, so the stream never falls out of step.

use crate::error::{Error, Result};
use bytes::{Bytes, BytesMut};
use keel_resp::{frame_len, parse_frame, Frame};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Notify};

/// Where one request's reply goes.
pub(crate) type ReplySlot = oneshot::Sender<Result<Frame>>;

/// A request: its encoded bytes and the slots of the replies it expects
/// (one for a command, several for an explicit pipeline).
pub(crate) struct Job {
    pub bytes: Bytes,
    pub slots: Slots,
}

/// One slot without a vector for the common single command.
pub(crate) enum Slots {
    One(ReplySlot),
    Many(Vec<ReplySlot>),
}

impl IntoIterator for Slots {
    type Item = ReplySlot;
    type IntoIter =
        std::iter::Chain<std::option::IntoIter<ReplySlot>, std::vec::IntoIter<ReplySlot>>;

    fn into_iter(self) -> Self::IntoIter {
        match self {
            Slots::One(s) => Some(s).into_iter().chain(Vec::new()),
            Slots::Many(v) => None.into_iter().chain(v),
        }
    }
}

/// State shared by callers, the writer and the reader.
struct Queue {
    /// Encoded requests not yet handed to the socket.
    out: BytesMut,
    /// Requests in `out` (for backpressure).
    unsent: usize,
    /// Reply slots of every request queued or sent, oldest first.
    waiting: VecDeque<ReplySlot>,
    /// The writer is parked waiting for work and must be woken.
    writer_idle: bool,
    /// Why the connection stopped, once it has.
    closed: Option<String>,
}

struct Shared {
    queue: Mutex<Queue>,
    /// Mirrors `queue.closed.is_some()` for a lock-free check.
    closed: AtomicBool,
    writer_wake: Notify,
    /// Woken whenever the writer takes the buffer, for callers held back by
    /// backpressure.
    room: Notify,
    queue_len: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding this lock cannot leave it half-updated in a
        // way later users would misread, so a poisoned lock is still used.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stop the connection: fail every waiting caller with `why`.
    fn close(&self, why: &str) {
        let waiting = {
            let mut q = self.lock();
            if q.closed.is_none() {
                q.closed = Some(why.to_string());
            }
            self.closed.store(true, Ordering::Release);
            q.out.clear();
            q.unsent = 0;
            std::mem::take(&mut q.waiting)
        };
        for slot in waiting {
            let _ = slot.send(Err(Error::Disconnected(why.to_string())));
        }
        self.writer_wake.notify_one();
        self.room.notify_waiters();
    }
}

/// Closes the connection when the last handle to it is dropped, so the tasks
/// do not outlive every client.
struct Lifeline(Arc<Shared>);

impl Drop for Lifeline {
    fn drop(&mut self) {
        self.0.close("client dropped");
    }
}

/// The sending side of a running connection.
#[derive(Clone)]
pub(crate) struct Mux {
    shared: Arc<Shared>,
    _life: Arc<Lifeline>,
}

impl Mux {
    /// Start the writer and reader tasks on an established connection.
    pub fn start(stream: TcpStream, queue_len: usize) -> Mux {
        let (read, write) = stream.into_split();
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                out: BytesMut::with_capacity(64 * 1024),
                unsent: 0,
                waiting: VecDeque::with_capacity(1024),
                writer_idle: false,
                closed: None,
            }),
            closed: AtomicBool::new(false),
            writer_wake: Notify::new(),
            room: Notify::new(),
            queue_len: queue_len.max(1),
        });
        tokio::spawn(writer(shared.clone(), write));
        tokio::spawn(reader(shared.clone(), read));
        Mux {
            _life: Arc::new(Lifeline(shared.clone())),
            shared,
        }
    }

    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// Queue a job, waiting for room while `queue_len` requests are still
    /// unsent (backpressure). Gives the job back if the connection stopped.
    pub async fn send(&self, job: Job) -> std::result::Result<(), Job> {
        let shared = &self.shared;
        loop {
            // Registered before checking, so a wake between the check and
            // the wait is not lost.
            let room = shared.room.notified();
            {
                let mut q = shared.lock();
                if q.closed.is_some() {
                    return Err(job);
                }
                if q.unsent < shared.queue_len {
                    q.out.extend_from_slice(&job.bytes);
                    for slot in job.slots {
                        q.unsent += 1;
                        q.waiting.push_back(slot);
                    }
                    let wake_writer = std::mem::take(&mut q.writer_idle);
                    drop(q);
                    if wake_writer {
                        shared.writer_wake.notify_one();
                    }
                    return Ok(());
                }
            }
            room.await;
        }
    }
}

async fn writer(shared: Arc<Shared>, mut out: OwnedWriteHalf) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut waited = false;
    loop {
        let wait_a_turn = {
            let mut q = shared.lock();
            if q.closed.is_some() {
                return;
            }
            // With replies still outstanding, the callers the reader is
            // completing will queue their next requests in a moment: give
            // them one scheduler turn to join this batch (not a timed
            // linger). A lone caller has nothing to wait for and is sent at
            // once, sparing the wake-ups a yield would cost.
            let others_in_flight = q.waiting.len() > q.unsent;
            if !q.out.is_empty() && others_in_flight && !waited {
                true
            } else {
                if q.out.is_empty() {
                    q.writer_idle = true;
                } else {
                    // Swap buffers: callers keep appending to the emptied
                    // one while this batch is written.
                    std::mem::swap(&mut q.out, &mut buf);
                    q.unsent = 0;
                }
                false
            }
        };
        waited = wait_a_turn;
        if wait_a_turn {
            tokio::task::yield_now().await;
            continue;
        }
        if buf.is_empty() {
            shared.writer_wake.notified().await;
            continue;
        }
        shared.room.notify_waiters();
        if let Err(e) = out.write_all(&buf).await {
            shared.close(&e.to_string());
            return;
        }
        buf.clear();
    }
}

async fn reader(shared: Arc<Shared>, mut input: OwnedReadHalf) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut replies: Vec<Result<Frame>> = Vec::new();
    let mut slots: Vec<ReplySlot> = Vec::new();
    let why = loop {
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(64 * 1024);
        }
        match input.read_buf(&mut buf).await {
            Ok(0) => break "server closed the connection".to_string(),
            Ok(_) => {}
            Err(e) => break e.to_string(),
        }
        // Cut off the complete replies only; a partial one stays in `buf`
        // and the next read appends to it.
        let mut complete = 0;
        let failure = loop {
            match frame_len(&buf[complete..]) {
                Ok(Some(n)) => complete += n,
                Ok(None) => break None,
                Err(e) => break Some(e.to_string()),
            }
        };
        let mut data = buf.split_to(complete).freeze();
        while !data.is_empty() {
            match parse_frame(&data) {
                Ok(Some((frame, n))) => {
                    data = data.slice(n..);
                    // Out-of-band pushes are not replies to anything queued.
                    if !matches!(frame, Frame::Push(_)) {
                        replies.push(match frame {
                            Frame::Error(e) => {
                                Err(Error::Server(String::from_utf8_lossy(&e).into_owned()))
                            }
                            other => Ok(other),
                        });
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    deliver(&shared, &mut replies, &mut slots);
                    shared.close(&format!("protocol violation: {e}"));
                    return;
                }
            }
        }
        if !deliver(&shared, &mut replies, &mut slots) {
            break "protocol violation: a reply arrived with no request waiting".to_string();
        }
        if let Some(f) = failure {
            break format!("protocol violation: {f}");
        }
    };
    shared.close(&why);
}

/// Complete the oldest waiting callers with `replies`, taking the lock once.
/// False if there were more replies than callers.
fn deliver(shared: &Shared, replies: &mut Vec<Result<Frame>>, slots: &mut Vec<ReplySlot>) -> bool {
    if replies.is_empty() {
        return true;
    }
    {
        let mut q = shared.lock();
        for _ in 0..replies.len() {
            match q.waiting.pop_front() {
                Some(s) => slots.push(s),
                None => break,
            }
        }
    }
    let matched = slots.len() == replies.len();
    for (slot, reply) in slots.drain(..).zip(replies.drain(..)) {
        // A caller that timed out has dropped its receiver: discard.
        let _ = slot.send(reply);
    }
    replies.clear();
    matched
}
