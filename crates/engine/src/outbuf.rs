//! Client output buffer limits (`client-output-buffer-limit`).
//!
//! A client's class is `pubsub` while it has any subscription and `normal`
//! otherwise (a monitor is `normal`, as in Redis; `replica` is stored and
//! shown but limits nobody, there being no replication). Its output memory is
//! what is queued for it and not yet written to its socket, beyond the first
//! 16 KiB (Redis's reply buffer, which its limits do not count): pending
//! replies and queued pushes. Past the hard limit it is closed at once; above
//! the soft limit for longer than the soft seconds it is closed too.
//!
//! Checked where output grows: on the publisher's side when a push is queued
//! on a feed (so a subscriber whose task never wakes still stays bounded), and
//! by the connection after each reply and while it waits for the socket. Cost
//! while a class has no limits: the class and two atomic loads, only once more
//! than 16 KiB waits.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Output bytes Redis keeps in its fixed reply buffer, outside its limits and
/// its `omem`.
pub const REPLY_CHUNK_BYTES: usize = 16 * 1024;

/// The classes, in `client-output-buffer-limit`'s order.
pub const NORMAL: usize = 0;
pub const REPLICA: usize = 1;
pub const PUBSUB: usize = 2;

/// One class's limits: hard bytes, soft bytes, soft seconds (0: none).
#[derive(Default)]
struct ClassLimits {
    hard: AtomicU64,
    soft: AtomicU64,
    soft_secs: AtomicU64,
}

/// The limits in force, mirrored from the config on every change.
#[derive(Default)]
pub struct OutputLimits {
    classes: [ClassLimits; 3],
}

impl OutputLimits {
    /// Take the limits from `value`, the directive in CONFIG GET's form
    /// (`normal 0 0 0 slave ... pubsub ...`).
    pub fn set_from(&self, value: &str) {
        let words: Vec<&str> = value.split_whitespace().collect();
        for group in words.chunks(4) {
            let [name, hard, soft, secs] = group else {
                continue;
            };
            let class = match *name {
                "normal" => NORMAL,
                "slave" | "replica" => REPLICA,
                "pubsub" => PUBSUB,
                _ => continue,
            };
            let c = &self.classes[class];
            let n = |w: &str| w.parse::<u64>().unwrap_or(0);
            c.hard.store(n(hard), Ordering::Relaxed);
            c.soft.store(n(soft), Ordering::Relaxed);
            c.soft_secs.store(n(secs), Ordering::Relaxed);
        }
    }

    /// `class`'s hard bytes, soft bytes and soft seconds.
    pub fn get(&self, class: usize) -> (u64, u64, u64) {
        let c = &self.classes[class];
        (
            c.hard.load(Ordering::Relaxed),
            c.soft.load(Ordering::Relaxed),
            c.soft_secs.load(Ordering::Relaxed),
        )
    }
}

/// One client's side of the limits, kept on its handle.
#[derive(Default)]
pub struct OutputState {
    pub(crate) limits: OnceLock<Arc<OutputLimits>>,
    /// Bytes queued on the client's push feed, not yet taken by its connection.
    pub queued: AtomicUsize,
    /// When the client went above its soft limit (ms since the epoch; 0: not above).
    pub(crate) soft_since_ms: AtomicU64,
    /// Closed for going over a limit: nothing more is queued for it.
    pub(crate) over: AtomicBool,
    /// The connection holds back commands until its replies are written (they
    /// reached the flush threshold, above the soft limit): the replies those
    /// commands would add keep the client above its soft limit meanwhile.
    pub(crate) held: AtomicBool,
}

impl OutputState {
    /// Put the client under `limits` (done when it connects).
    pub fn attach(&self, limits: Arc<OutputLimits>) {
        let _ = self.limits.set(limits);
    }

    /// Whether the client was closed for overcoming its limits.
    pub fn is_over(&self) -> bool {
        self.over.load(Ordering::Relaxed)
    }

    /// Say whether the connection holds back commands behind unwritten replies.
    pub fn hold(&self, on: bool) {
        if self.held.load(Ordering::Relaxed) != on {
            self.held.store(on, Ordering::Relaxed);
        }
    }
}
