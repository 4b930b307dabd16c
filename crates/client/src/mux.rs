//! One multiplexed connection with smart batching.
//!
//! Callers put encoded requests on a bounded MPSC queue. A writer task takes the
//! first request, then everything else already queued (up to a size cap), and
//! sends it all with one write; it only waits when the queue is empty, so there
//! is no linger delay. Before writing it hands each request's reply slot, in
//! queue order, to the reader task, which parses replies and completes the slots
//! first-in first-out. A caller that gave up (timeout) has dropped its receiver;
//! its reply is read and discarded, so the stream never falls out of step.

use crate::error::{Error, Result};
use bytes::{Bytes, BytesMut};
use keel_resp::{parse_frame, Frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

/// Where one request's reply goes.
pub(crate) type ReplySlot = oneshot::Sender<Result<Frame>>;

/// A request on the queue: its encoded bytes and the slots of the replies it
/// expects (one for a command, several for an explicit pipeline).
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

/// The sending side of a running connection.
#[derive(Clone)]
pub(crate) struct Mux {
    queue: mpsc::Sender<Job>,
}

/// Flush the batch once it holds this much, even if more is queued.
const MAX_BATCH_BYTES: usize = 256 * 1024;

impl Mux {
    /// Start the writer and reader tasks on an established connection.
    pub fn start(stream: TcpStream, queue_len: usize) -> Mux {
        let (read, write) = stream.into_split();
        let (queue, jobs) = mpsc::channel(queue_len.max(1));
        let (slots_tx, slots_rx) = mpsc::unbounded_channel();
        tokio::spawn(writer(jobs, write, slots_tx));
        tokio::spawn(reader(read, slots_rx));
        Mux { queue }
    }

    pub fn is_closed(&self) -> bool {
        self.queue.is_closed()
    }

    /// Queue a job, waiting for room when the queue is full (backpressure).
    pub async fn send(&self, job: Job) -> std::result::Result<(), Job> {
        self.queue.send(job).await.map_err(|e| e.0)
    }
}

async fn writer(
    mut jobs: mpsc::Receiver<Job>,
    mut out: OwnedWriteHalf,
    slots: mpsc::UnboundedSender<ReplySlot>,
) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    while let Some(first) = jobs.recv().await {
        let mut next = Some(first);
        while let Some(job) = next.take() {
            buf.extend_from_slice(&job.bytes);
            for slot in job.slots {
                if let Err(lost) = slots.send(slot) {
                    // The reader has stopped: the connection is gone.
                    let _ = lost
                        .0
                        .send(Err(Error::Disconnected("reader stopped".into())));
                }
            }
            if buf.len() < MAX_BATCH_BYTES {
                next = jobs.try_recv().ok();
            }
        }
        if let Err(e) = out.write_all(&buf).await {
            fail_queue(&mut jobs, &e.to_string());
            return;
        }
        buf.clear();
    }
}

/// Fail every job still queued once the connection cannot carry them.
fn fail_queue(jobs: &mut mpsc::Receiver<Job>, why: &str) {
    jobs.close();
    while let Ok(job) = jobs.try_recv() {
        for slot in job.slots {
            let _ = slot.send(Err(Error::Disconnected(why.to_string())));
        }
    }
}

async fn reader(mut input: OwnedReadHalf, mut slots: mpsc::UnboundedReceiver<ReplySlot>) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let why = loop {
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(64 * 1024);
        }
        match input.read_buf(&mut buf).await {
            Ok(0) => break "server closed the connection".to_string(),
            Ok(_) => {}
            Err(e) => break e.to_string(),
        }
        let data = buf.split().freeze();
        let mut used = 0;
        let failure = loop {
            match parse_frame(&data.slice(used..)) {
                Ok(Some((frame, n))) => {
                    used += n;
                    // Out-of-band pushes are not replies to anything queued.
                    if matches!(frame, Frame::Push(_)) {
                        continue;
                    }
                    let Ok(slot) = slots.try_recv() else {
                        break Some("a reply arrived with no request waiting".to_string());
                    };
                    let result = match frame {
                        Frame::Error(e) => {
                            Err(Error::Server(String::from_utf8_lossy(&e).into_owned()))
                        }
                        other => Ok(other),
                    };
                    // A caller that timed out has dropped its receiver: discard.
                    let _ = slot.send(result);
                }
                Ok(None) => break None,
                Err(e) => break Some(e.to_string()),
            }
        };
        if let Some(f) = failure {
            break format!("protocol violation: {f}");
        }
        buf.extend_from_slice(&data[used..]);
    };
    slots.close();
    while let Ok(slot) = slots.try_recv() {
        let _ = slot.send(Err(Error::Disconnected(why.clone())));
    }
}
