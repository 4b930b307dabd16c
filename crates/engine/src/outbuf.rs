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

use crate::session::ClientHandle;
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
    limits: OnceLock<Arc<OutputLimits>>,
    /// Bytes queued on the client's push feed, not yet taken by its connection.
    pub queued: AtomicUsize,
    /// When the client went above its soft limit (ms since the epoch; 0: not above).
    soft_since_ms: AtomicU64,
    /// Closed for going over a limit: nothing more is queued for it.
    over: AtomicBool,
    /// The connection holds back commands until its replies are written (they
    /// reached the flush threshold, above the soft limit): the replies those
    /// commands would add keep the client above its soft limit meanwhile.
    held: AtomicBool,
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

/// A client's class for the limits: `pubsub` while subscribed to anything.
pub fn class_of(h: &ClientHandle) -> usize {
    if h.subs.iter().any(|n| n.load(Ordering::Relaxed) > 0) {
        PUBSUB
    } else {
        NORMAL
    }
}

/// What Redis counts as a client's output memory when `pending` bytes wait
/// for its socket: all but its fixed reply buffer's worth.
pub fn omem_of(pending: usize) -> usize {
    pending.saturating_sub(REPLY_CHUNK_BYTES)
}

/// `h`'s output memory as CLIENT LIST's `omem` shows it and the limits judge
/// it, with `pending` bytes waiting for its socket: what its buffers hold
/// beyond the fixed reply buffer, counted as Redis counts its reply blocks,
/// by the space they take (the pending buffer's capacity) rather than the
/// bytes still in them.
pub fn omem(h: &ClientHandle, pending: usize) -> usize {
    let beyond = omem_of(pending);
    if beyond == 0 {
        return 0;
    }
    h.bufs
        .out_cap()
        .saturating_sub(REPLY_CHUNK_BYTES)
        .max(beyond)
}

/// The bytes waiting for `h`'s socket as its connection and feed last said.
pub fn pending_of(h: &ClientHandle) -> usize {
    h.bufs.out_pending() + h.bufs.output.queued.load(Ordering::Relaxed)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Whether `h`, with `pending` bytes waiting for its socket, must be closed for
/// its output buffer limits, as Redis decides it: at or past the hard limit,
/// or at or past the soft limit continuously for more than the soft seconds.
/// The first time it is, the client is marked over and a warning is logged;
/// the caller closes it (or asks its connection to).
pub fn over_limit(h: &ClientHandle, pending: usize) -> bool {
    judge(h, pending, true)
}

/// [`over_limit`] for a message pushed from another connection: it may start
/// the soft seconds but never stops them, since its view of the pending
/// bytes can catch the owner's connection between taking queued messages
/// and publishing them as pending.
pub fn over_limit_on_push(h: &ClientHandle, pending: usize) -> bool {
    judge(h, pending, false)
}

fn judge(h: &ClientHandle, pending: usize, may_reset: bool) -> bool {
    let state = &h.bufs.output;
    if state.over.load(Ordering::Relaxed) {
        return true;
    }
    let Some(limits) = state.limits.get() else {
        return false;
    };
    let (hard, soft, secs) = limits.get(class_of(h));
    if hard == 0 && soft == 0 {
        return false;
    }
    let used = omem(h, pending) as u64;
    let mut close = hard > 0 && used >= hard;
    if !close {
        let since = state.soft_since_ms.load(Ordering::Relaxed);
        let held = since != 0 && state.held.load(Ordering::Relaxed);
        if soft > 0 && (used >= soft || held) {
            let now = now_ms();
            if since == 0 {
                state.soft_since_ms.store(now, Ordering::Relaxed);
            } else if now.saturating_sub(since) > secs.saturating_mul(1000) {
                close = true;
            }
        } else if may_reset && state.soft_since_ms.load(Ordering::Relaxed) != 0 {
            state.soft_since_ms.store(0, Ordering::Relaxed);
        }
    }
    if close && !state.over.swap(true, Ordering::Relaxed) {
        let name = h
            .name
            .lock()
            .as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default();
        crate::logging::log_warning(&format!(
            "Client id={} addr={} laddr={} fd={} name={} omem={} scheduled to be closed ASAP \
             for overcoming of output buffer limits.",
            h.id,
            h.addr,
            h.laddr,
            h.fd.load(Ordering::Relaxed),
            name,
            used,
        ));
    }
    close
}

/// Whether `h`'s class has any limit now: only then does its connection
/// look at its output before it reaches the flush threshold.
pub fn limited(h: &ClientHandle) -> bool {
    match h.bufs.output.limits.get() {
        Some(limits) => {
            let (hard, soft, _) = limits.get(class_of(h));
            hard > 0 || soft > 0
        }
        None => false,
    }
}

/// Whether `h` is above its soft limit and waiting out the soft seconds: its
/// connection, stuck on the socket, checks again later.
pub fn soft_pending(h: &ClientHandle) -> bool {
    h.bufs.output.soft_since_ms.load(Ordering::Relaxed) != 0
}

/// How many reply bytes a connection may queue before it stops running
/// commands and writes them first: at least `floor`, and past `h`'s limits so
/// that a client that does not read reaches them (and is closed) rather than
/// being merely held back.
pub fn flush_threshold(h: &ClientHandle, floor: usize) -> usize {
    let Some(limits) = h.bufs.output.limits.get() else {
        return floor;
    };
    let (hard, soft, _) = limits.get(class_of(h));
    let past = |n: u64| usize::try_from(n).unwrap_or(usize::MAX / 2) + REPLY_CHUNK_BYTES + 1;
    let mut t = floor;
    if hard > 0 {
        t = t.max(past(hard));
    } else if soft > 0 {
        t = t.max(past(soft));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(limits: &str) -> ClientHandle {
        let h = ClientHandle::new(7, "127.0.0.1:9".into(), "127.0.0.1:1".into(), 0);
        let l = Arc::new(OutputLimits::default());
        l.set_from(limits);
        h.bufs.output.attach(l);
        h
    }

    #[test]
    fn hard_limit_counts_beyond_the_reply_buffer() {
        let h = client("normal 1000 0 0 slave 0 0 0 pubsub 0 0 0");
        assert!(!over_limit(&h, REPLY_CHUNK_BYTES + 999));
        assert!(over_limit(&h, REPLY_CHUNK_BYTES + 1000));
        assert!(h.bufs.output.is_over());
        // Once over, always over.
        assert!(over_limit(&h, 0));
    }

    #[test]
    fn class_follows_subscriptions() {
        let h = client("normal 0 0 0 pubsub 10 0 0");
        assert!(!over_limit(&h, 1 << 30), "normal has no limits");
        h.subs[1].store(1, Ordering::Relaxed);
        assert_eq!(class_of(&h), PUBSUB);
        assert!(over_limit(&h, REPLY_CHUNK_BYTES + 10));
    }

    #[test]
    fn soft_limit_needs_time_and_resets_below() {
        let h = client("normal 0 100 1");
        assert!(!over_limit(&h, REPLY_CHUNK_BYTES + 100));
        assert!(soft_pending(&h));
        assert!(!over_limit(&h, REPLY_CHUNK_BYTES + 100));
        assert!(!over_limit(&h, 10));
        assert!(!soft_pending(&h), "below the soft limit the clock restarts");
        // Commands held back behind the replies keep it above the soft limit.
        assert!(!over_limit(&h, REPLY_CHUNK_BYTES + 100));
        h.bufs.output.hold(true);
        assert!(!over_limit(&h, 10));
        assert!(soft_pending(&h));
        h.bufs.output.hold(false);
        assert!(!over_limit(&h, 10));
        assert!(!soft_pending(&h));
        h.bufs
            .output
            .soft_since_ms
            .store(now_ms() - 1500, Ordering::Relaxed);
        assert!(over_limit(&h, REPLY_CHUNK_BYTES + 100));
    }

    #[test]
    fn output_memory_is_the_space_the_pending_buffer_takes() {
        let h = client("normal 0 100000 1");
        crate::session::BufferStats::set(&h.bufs.out_cap, REPLY_CHUNK_BYTES + 200_000);
        // 10 bytes beyond the reply buffer, in a buffer 200 KB beyond it: as
        // CLIENT LIST's omem shows it, past the soft limit.
        assert_eq!(omem(&h, REPLY_CHUNK_BYTES + 10), 200_000);
        assert!(!over_limit(&h, REPLY_CHUNK_BYTES + 10));
        assert!(soft_pending(&h));
        // Nothing beyond the reply buffer: no output memory, whatever the space.
        assert_eq!(omem(&h, REPLY_CHUNK_BYTES), 0);
    }

    #[test]
    fn a_push_starts_the_soft_seconds_but_never_stops_them() {
        let h = client("normal 0 100 1");
        assert!(!over_limit_on_push(&h, REPLY_CHUNK_BYTES + 100));
        assert!(soft_pending(&h));
        assert!(!over_limit_on_push(&h, 10));
        assert!(
            soft_pending(&h),
            "a push's low view does not restart the clock"
        );
        assert!(!over_limit(&h, 10));
        assert!(!soft_pending(&h), "the connection's own does");
    }

    #[test]
    fn flush_threshold_lies_past_the_limits() {
        let h = client("normal 0 0 0");
        assert_eq!(flush_threshold(&h, 4096), 4096);
        let h = client("normal 1000000 10 1");
        assert!(flush_threshold(&h, 4096) > 1000000 + REPLY_CHUNK_BYTES);
        let h = client("normal 0 50000 1");
        assert!(flush_threshold(&h, 4096) > 50000 + REPLY_CHUNK_BYTES);
    }
}
