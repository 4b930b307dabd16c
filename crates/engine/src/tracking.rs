//! Client-side caching (CLIENT TRACKING): which clients read which keys, and
//! the invalidation messages they are sent when those keys change.
//!
//! The tracking table maps a key name (regardless of database, as in Redis) to
//! the ids of the clients that read it. It is split in stripes by the key's
//! shard, each behind its own mutex: a read-only command of a tracking client
//! records its keys while it still holds its shard locks, and a write
//! invalidates the keys it changed while it holds them too, so a client can
//! never read a value, have it changed by another thread, and then be recorded
//! as its reader with no invalidation to come; and writers on different
//! shards do not contend. The tracking clients' modes sit behind a read-write
//! lock, read on every delivery; BCAST prefixes and the keys waiting to be
//! broadcast behind one more mutex, taken by writes only while some client
//! broadcasts. Messages go to the receiving client's push feed (the queue
//! pub/sub messages use), encoded for its protocol, and are written by its
//! connection between replies.
//!
//! Cost when no client tracks and the table is empty: one relaxed load per
//! command ([`Tracking::active`]).

use crate::declare::{Flags, Group};
use crate::error::CmdError;
use crate::kernel::CommandSpec;
use crate::kernel::Ctx;
use crate::kernel::Engine;
use crate::session::{ClientHandle, Session};
use bytes::{BufMut, Bytes, BytesMut};
use hashbrown::HashMap;
use keel_resp::Frame;
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

pub(crate) mod state;
use self::state::{Bcast, Payload, Stripe, Tracker, STRIPES};
pub use self::state::{Tracking, BCAST, BROKEN, CACHING, NOLOOP, ON, OPTIN, OPTOUT};

impl Tracking {
    /// Whether any client tracks or any key is remembered: the one check on
    /// the request path.
    #[inline]
    pub fn active(&self) -> bool {
        self.live.load(Ordering::Relaxed)
    }

    /// Recompute `live` after clients or keys came or went. Keys only grow
    /// while some client tracks, so a reader that finds `live` false has
    /// nothing to invalidate.
    fn refresh(&self, clients: usize) {
        let live = clients > 0 || self.keys.load(Ordering::Relaxed) > 0;
        self.live.store(live, Ordering::Relaxed);
    }

    fn stripe(&self, engine: &Engine, key: &[u8]) -> &Mutex<Stripe> {
        &self.stripes[engine.keyspace.shard_of(key) % STRIPES]
    }

    /// INFO: tracking clients, keys, items and prefixes.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        (
            self.clients.read().len(),
            self.keys.load(Ordering::Relaxed),
            self.items.load(Ordering::Relaxed),
            self.bcast.lock().prefixes.len(),
        )
    }

    /// Turn tracking on for `session` (options already checked).
    fn enable(&self, session: &mut Session, redirect: u64, options: u8, prefixes: &[Bytes]) {
        let id = session.id();
        let mut clients = self.clients.write();
        let t = clients.entry(id).or_insert_with(|| Tracker {
            handle: session.handle.clone(),
            redirect: 0,
            flags: AtomicU8::new(0),
            prefixes: BTreeSet::new(),
        });
        t.redirect = redirect;
        t.flags.store(
            ON | (options & (BCAST | OPTIN | OPTOUT | NOLOOP)),
            Ordering::Relaxed,
        );
        if options & BCAST != 0 {
            let mut added = Vec::new();
            if prefixes.is_empty() {
                added.push(Bytes::new());
            }
            added.extend(prefixes.iter().map(|p| Bytes::copy_from_slice(p)));
            added.retain(|p| t.prefixes.insert(p.clone()));
            let mut bcast = self.bcast.lock();
            for p in added {
                bcast.prefixes.entry(p).or_default().push(id);
            }
            self.bcast_any
                .store(!bcast.prefixes.is_empty(), Ordering::Relaxed);
        }
        self.refresh(clients.len());
        drop(clients);
        session.tracking = (session.tracking & CACHING) | ON | (options & !CACHING);
        session
            .handle
            .tracking
            .store(ON | (options & BCAST), Ordering::Relaxed);
        session
            .handle
            .redirect
            .store(redirect as i64, Ordering::Relaxed);
    }

    /// Turn tracking off (CLIENT TRACKING OFF, RESET, disconnect). The keys
    /// the client read stay in the table until they change, as in Redis.
    pub fn disable(&self, session: &mut Session) {
        if session.tracking & ON == 0 {
            return;
        }
        let id = session.id();
        let mut clients = self.clients.write();
        if let Some(t) = clients.remove(&id) {
            if !t.prefixes.is_empty() {
                let mut bcast = self.bcast.lock();
                for p in &t.prefixes {
                    if let Some(list) = bcast.prefixes.get_mut(p) {
                        list.retain(|c| *c != id);
                        if list.is_empty() {
                            bcast.prefixes.remove(p);
                        }
                    }
                }
                self.bcast_any
                    .store(!bcast.prefixes.is_empty(), Ordering::Relaxed);
            }
        }
        self.refresh(clients.len());
        drop(clients);
        session.tracking = 0;
        session.handle.tracking.store(0, Ordering::Relaxed);
        session.handle.redirect.store(-1, Ordering::Relaxed);
    }

    /// Remember that client `id` read `keys` (under their shards' locks);
    /// then keep the table within `tracking-table-max-keys`, invalidating
    /// keys to make room.
    fn remember(&self, engine: &Engine, id: u64, keys: &[&[u8]]) {
        for &k in keys {
            let mut stripe = self.stripe(engine, k).lock();
            let readers = match stripe.get_mut(k) {
                Some(r) => r,
                None => {
                    self.keys.fetch_add(1, Ordering::Relaxed);
                    self.live.store(true, Ordering::Relaxed);
                    stripe.entry(Bytes::copy_from_slice(k)).or_default()
                }
            };
            if !readers.contains(&id) {
                readers.push(id);
                self.items.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.limit(engine);
    }

    /// Past `tracking-table-max-keys`, invalidate keys until the table fits.
    fn limit(&self, engine: &Engine) {
        let max = engine.config.ops.tracking_max_keys.load(Ordering::Relaxed);
        if max <= 0 {
            return;
        }
        let mut at = 0;
        while self.keys.load(Ordering::Relaxed) > max as usize && at < STRIPES {
            // The table has no order worth keeping: any key will do, as
            // Redis takes one by a random walk.
            let taken = {
                let mut stripe = self.stripes[at].lock();
                let key = stripe.keys().next().cloned();
                key.and_then(|k| stripe.remove_entry(&k))
            };
            match taken {
                Some((key, readers)) => self.forget(engine, 0, &key, readers),
                None => at += 1,
            }
        }
    }

    /// Called by the server's cron: keep the table within a limit lowered
    /// since the last read, and send broadcasts nobody's batch sent.
    pub fn cron(&self, engine: &Engine) {
        if !self.active() {
            return;
        }
        self.limit(engine);
        self.refresh(self.clients.read().len());
        self.broadcast(engine);
    }

    /// `keys` changed, by client `writer` (0: by the server, expiring them).
    pub fn invalidate(&self, engine: &Engine, writer: u64, keys: &[Bytes]) {
        for key in keys {
            let taken = self.stripe(engine, key).lock().remove(&key[..]);
            if let Some(readers) = taken {
                self.forget(engine, writer, key, readers);
            }
        }
        if self.bcast_any.load(Ordering::Relaxed) {
            let mut bcast = self.bcast.lock();
            let Bcast { prefixes, pending } = &mut *bcast;
            for prefix in prefixes.keys() {
                for key in keys.iter().filter(|k| k.starts_with(prefix)) {
                    let changed = pending.entry(prefix.clone()).or_default();
                    changed.insert(key.clone(), writer);
                    self.pending.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    /// A key left the table: send its readers (those still tracking in
    /// default mode) an invalidation.
    fn forget(&self, engine: &Engine, writer: u64, key: &Bytes, readers: Vec<u64>) {
        self.keys.fetch_sub(1, Ordering::Relaxed);
        self.items.fetch_sub(readers.len(), Ordering::Relaxed);
        let clients = self.clients.read();
        let one = [key.clone()];
        for id in readers {
            let Some(t) = clients.get(&id) else {
                continue;
            };
            let f = t.flags();
            if f & BCAST != 0 || (f & NOLOOP != 0 && id == writer) {
                continue;
            }
            deliver(engine, t, &Payload::Keys(&one));
        }
        if self.keys.load(Ordering::Relaxed) == 0 && clients.is_empty() {
            self.live.store(false, Ordering::Relaxed);
        }
    }

    /// Send BCAST clients the keys changed under their prefixes since the
    /// last call: one message per prefix, keys in byte order, leaving out a
    /// NOLOOP client's own changes. Redis does this once per turn of its
    /// event loop; Keel once per batch of commands a connection ran (and
    /// after each active-expiry step), before the batch's replies are sent.
    pub fn broadcast(&self, engine: &Engine) {
        if !self.pending.load(Ordering::Relaxed) {
            if self.bcast_any.load(Ordering::Relaxed) {
                // Another thread (the cron, another connection) may have
                // taken what this batch changed and be delivering it under
                // the lock: wait for it, so the messages are queued before
                // this batch's replies go.
                drop(self.bcast.lock());
            }
            return;
        }
        // Lock order: clients, then bcast (as enable and disable take them).
        let clients = self.clients.read();
        let mut bcast = self.bcast.lock();
        self.pending.store(false, Ordering::Relaxed);
        let pending = std::mem::take(&mut bcast.pending);
        for (prefix, changed) in pending {
            let Some(ids) = bcast.prefixes.get(&prefix) else {
                continue;
            };
            for id in ids {
                let Some(t) = clients.get(id) else {
                    continue;
                };
                let noloop = t.flags() & NOLOOP != 0;
                let keys: Vec<Bytes> = changed
                    .iter()
                    .filter(|(_, w)| !noloop || **w != *id)
                    .map(|(k, _)| k.clone())
                    .collect();
                if !keys.is_empty() {
                    deliver(engine, t, &Payload::Keys(&keys));
                }
            }
        }
    }

    /// The whole dataset, or one database of it, was emptied (every shard is
    /// locked): every tracking client is sent a null invalidation and the
    /// table is forgotten.
    pub fn flushed(&self, engine: &Engine) {
        let clients = self.clients.read();
        for t in clients.values() {
            deliver(engine, t, &Payload::Flush);
        }
        for stripe in self.stripes.iter() {
            let mut stripe = stripe.lock();
            let items: usize = stripe.values().map(Vec::len).sum();
            self.keys.fetch_sub(stripe.len(), Ordering::Relaxed);
            self.items.fetch_sub(items, Ordering::Relaxed);
            *stripe = HashMap::new();
        }
        self.refresh(clients.len());
    }

    fn info(&self, session: &Session) -> Frame {
        let clients = self.clients.read();
        let t = clients.get(&session.id());
        let mut flags = Vec::new();
        let word = |w: &'static str| Frame::Bulk(Bytes::from_static(w.as_bytes()));
        let f = t.map_or(0, Tracker::flags);
        let caching = session.tracking & CACHING != 0;
        flags.push(word(if f & ON != 0 { "on" } else { "off" }));
        if f & BCAST != 0 {
            flags.push(word("bcast"));
        }
        if f & OPTIN != 0 {
            flags.push(word("optin"));
            if caching {
                flags.push(word("caching-yes"));
            }
        }
        if f & OPTOUT != 0 {
            flags.push(word("optout"));
            if caching {
                flags.push(word("caching-no"));
            }
        }
        if f & NOLOOP != 0 {
            flags.push(word("noloop"));
        }
        if f & BROKEN != 0 {
            flags.push(word("broken_redirect"));
        }
        let redirect = t.map_or(-1, |t| t.redirect as i64);
        let prefixes = t.map_or(Vec::new(), |t| {
            t.prefixes.iter().map(|p| Frame::Bulk(p.clone())).collect()
        });
        Frame::Map(vec![
            (word("flags"), Frame::Set(flags)),
            (word("redirect"), Frame::Integer(redirect)),
            (word("prefixes"), Frame::Array(prefixes)),
        ])
    }

    /// The BCAST prefixes client `id` has, for the overlap checks.
    fn prefixes_of(&self, id: u64) -> Vec<Bytes> {
        self.clients
            .read()
            .get(&id)
            .map(|t| t.prefixes.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// Queue one invalidation for tracking client `t`: on its own connection in
/// RESP3, or on its redirect target's (a RESP3 push, or a RESP2 pub/sub
/// message on `__redis__:invalidate` when the target has subscriptions).
fn deliver(engine: &Engine, t: &Tracker, payload: &Payload<'_>) {
    let tracker_resp3 = t.handle.resp.load(Ordering::Relaxed) == 3;
    let (target, redirected) = if t.redirect != 0 {
        let found = engine.clients.lock().get(&t.redirect).cloned();
        match found {
            Some(h) => (h, true),
            None => {
                t.flags.fetch_or(BROKEN, Ordering::Relaxed);
                t.handle.tracking.fetch_or(BROKEN, Ordering::Relaxed);
                if tracker_resp3 {
                    let mut out = BytesMut::new();
                    out.put_slice(b">2\r\n$21\r\ntracking-redir-broken\r\n");
                    out.put_slice(format!(":{}\r\n", t.redirect).as_bytes());
                    push_to(&t.handle, &out);
                }
                return;
            }
        }
    } else {
        (t.handle.clone(), false)
    };
    let mut out = BytesMut::new();
    if target.resp.load(Ordering::Relaxed) == 3 {
        out.put_slice(b">2\r\n$10\r\ninvalidate\r\n");
    } else if redirected && target.subs.iter().any(|n| n.load(Ordering::Relaxed) > 0) {
        out.put_slice(b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n");
    } else {
        return;
    }
    match payload {
        Payload::Keys(keys) => {
            out.put_slice(format!("*{}\r\n", keys.len()).as_bytes());
            for k in keys.iter() {
                out.put_slice(format!("${}\r\n", k.len()).as_bytes());
                out.put_slice(k);
                out.put_slice(b"\r\n");
            }
        }
        // Redis writes the null of the tracking client's protocol, even to a
        // redirect target of the other.
        Payload::Flush if tracker_resp3 => out.put_slice(b"_\r\n"),
        Payload::Flush => out.put_slice(b"$-1\r\n"),
    }
    push_to(&target, &out);
}

fn push_to(handle: &Arc<ClientHandle>, bytes: &[u8]) {
    let (feed, created) = handle.push_feed();
    feed.push(bytes);
    if created {
        // Its connection did not drain a feed before: have it look again.
        handle.wake();
    }
}

/// After a command ran (still under its locks): a read-only command of a
/// client tracking in default mode records the keys it read.
pub(crate) fn after_read(ctx: &mut Ctx<'_>, spec: &CommandSpec, argv: &[Bytes]) {
    let mode = ctx.session.tracking;
    if mode & ON == 0
        || mode & BCAST != 0
        || !spec.flags.contains(Flags::READONLY)
        || spec.flags.contains(Flags::SCRIPT)
        || spec.group == Group::Pubsub
    {
        return;
    }
    let caching = mode & CACHING != 0;
    if (mode & OPTIN != 0 && !caching) || (mode & OPTOUT != 0 && caching) {
        return;
    }
    let mut pos = Vec::new();
    spec.keys.positions(argv, &mut pos);
    if pos.is_empty() {
        return;
    }
    let keys: Vec<&[u8]> = pos.iter().map(|&i| &argv[i][..]).collect();
    let engine = ctx.engine;
    engine.tracking.remember(engine, ctx.session.id(), &keys);
}

/// Keys a command changed, invalidated while its locks are held.
pub(crate) fn changed(ctx: &Ctx<'_>, keys: &[Bytes]) {
    let engine = ctx.engine;
    engine.tracking.invalidate(engine, ctx.session.id(), keys);
}

/// Keys the active expiry cycle removed (under their shard's lock).
pub fn expired(engine: &Engine, keys: &[keel_store::CompactBytes]) {
    let keys: Vec<Bytes> = keys
        .iter()
        .map(|k| Bytes::copy_from_slice(k.as_slice()))
        .collect();
    engine.tracking.invalidate(engine, 0, &keys);
    engine.tracking.broadcast(engine);
}

/// CLIENT CACHING lasts for one command: it is cleared after any command
/// but CLIENT's own and those queued in (or opening) a transaction.
pub(crate) fn end_caching(session: &mut Session, was_client: bool) {
    if !was_client && session.multi.is_none() {
        session.tracking &= !CACHING;
    }
}

fn err(msg: &str) -> CmdError {
    CmdError::err(msg.to_string())
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN]
/// [OPTOUT] [NOLOOP], with Redis 7.0's checks in Redis's order.
pub fn client_tracking(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> Result<Frame, CmdError> {
    let mut redirect: u64 = 0;
    let mut options = 0u8;
    let mut prefixes: Vec<Bytes> = Vec::new();
    let mut j = 3;
    while j < argv.len() {
        let a = &argv[j];
        let more = j + 1 < argv.len();
        if a.eq_ignore_ascii_case(b"REDIRECT") && more {
            j += 1;
            if redirect != 0 {
                return Err(err("A client can only redirect to a single other client"));
            }
            let id = crate::args::parse_i64(&argv[j])?;
            let exists = u64::try_from(id)
                .ok()
                .is_some_and(|id| ctx.engine.clients.lock().contains_key(&id));
            if !exists {
                return Err(err("The client ID you want redirect to does not exist"));
            }
            redirect = id as u64;
        } else if a.eq_ignore_ascii_case(b"BCAST") {
            options |= BCAST;
        } else if a.eq_ignore_ascii_case(b"OPTIN") {
            options |= OPTIN;
        } else if a.eq_ignore_ascii_case(b"OPTOUT") {
            options |= OPTOUT;
        } else if a.eq_ignore_ascii_case(b"NOLOOP") {
            options |= NOLOOP;
        } else if a.eq_ignore_ascii_case(b"PREFIX") && more {
            j += 1;
            prefixes.push(argv[j].clone());
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let mode = &argv[2];
    if mode.eq_ignore_ascii_case(b"OFF") {
        ctx.engine.tracking.disable(ctx.session);
        return Ok(Frame::ok());
    }
    if !mode.eq_ignore_ascii_case(b"ON") {
        return Err(CmdError::Syntax);
    }
    let current = ctx.session.tracking;
    if options & BCAST == 0 && !prefixes.is_empty() {
        return Err(err("PREFIX option requires BCAST mode to be enabled"));
    }
    if current & ON != 0 && (current & BCAST) != (options & BCAST) {
        return Err(err(
            "You can't switch BCAST mode on/off before disabling tracking for this client, \
             and then re-enabling it with a different mode.",
        ));
    }
    if options & BCAST != 0 && options & (OPTIN | OPTOUT) != 0 {
        return Err(err("OPTIN and OPTOUT are not compatible with BCAST"));
    }
    if options & OPTIN != 0 && options & OPTOUT != 0 {
        return Err(err("You can't specify both OPTIN mode and OPTOUT mode"));
    }
    if (options & OPTIN != 0 && current & OPTOUT != 0)
        || (options & OPTOUT != 0 && current & OPTIN != 0)
    {
        return Err(err(
            "You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, \
             and then re-enabling it with a different mode.",
        ));
    }
    let mut early = None;
    if options & BCAST != 0 {
        match prefix_collision(ctx, &prefixes) {
            Collision::None => {}
            Collision::Refused(msg) => return Err(CmdError::msg(msg)),
            // Redis replies with the error and yet goes on to enable
            // tracking and reply OK: both replies are sent.
            Collision::RefusedButEnabled(msg) => early = Some(msg),
        }
    }
    if redirect != 0 {
        // The target's connection starts draining its push feed now.
        let target = ctx.engine.clients.lock().get(&redirect).cloned();
        if let Some(h) = target {
            let (_, created) = h.push_feed();
            if created {
                h.wake();
            }
        }
    }
    let _ = ctx.session.handle.push_feed();
    ctx.engine
        .tracking
        .enable(ctx.session, redirect, options, &prefixes);
    match early {
        None => Ok(Frame::ok()),
        Some(msg) => {
            let mut out = BytesMut::new();
            keel_resp::encode(&Frame::error(msg), ctx.proto(), &mut out);
            keel_resp::encode(&Frame::ok(), ctx.proto(), &mut out);
            Ok(Frame::Encoded(out.freeze()))
        }
    }
}

pub enum Collision {
    None,
    Refused(String),
    RefusedButEnabled(String),
}

/// Redis's prefix checks: a new prefix may not overlap (be a prefix of, or
/// have as prefix) one the client has, nor one given after it. Redis reports
/// an overlap between two new prefixes other than the first as an error and
/// still enables tracking; so does this.
fn prefix_collision(ctx: &Ctx<'_>, prefixes: &[Bytes]) -> Collision {
    let overlaps = |a: &[u8], b: &[u8]| {
        let n = a.len().min(b.len());
        a[..n] == b[..n]
    };
    let existing = ctx.engine.tracking.prefixes_of(ctx.session.id());
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for (i, p) in prefixes.iter().enumerate() {
        if let Some(old) = existing.iter().find(|old| overlaps(old, p)) {
            return Collision::Refused(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single \
                 client must not overlap.",
                text(p),
                text(old)
            ));
        }
        if let Some(other) = prefixes[i + 1..].iter().find(|o| overlaps(p, o)) {
            let msg = format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a \
                 single client must not overlap.",
                text(p),
                text(other)
            );
            return if i == 0 {
                Collision::Refused(msg)
            } else {
                Collision::RefusedButEnabled(msg)
            };
        }
    }
    Collision::None
}

/// CLIENT CACHING YES|NO.
pub fn client_caching(ctx: &mut Ctx<'_>, opt: &[u8]) -> Result<Frame, CmdError> {
    let mode = ctx.session.tracking;
    if mode & ON == 0 {
        return Err(err(
            "CLIENT CACHING can be called only when the client is in tracking mode with OPTIN \
             or OPTOUT mode enabled",
        ));
    }
    if opt.eq_ignore_ascii_case(b"YES") {
        if mode & OPTIN == 0 {
            return Err(err(
                "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if opt.eq_ignore_ascii_case(b"NO") {
        if mode & OPTOUT == 0 {
            return Err(err(
                "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(CmdError::Syntax);
    }
    ctx.session.tracking |= CACHING;
    Ok(Frame::ok())
}

/// CLIENT GETREDIR.
pub fn client_getredir(ctx: &Ctx<'_>) -> Frame {
    if ctx.session.tracking & ON == 0 {
        return Frame::Integer(-1);
    }
    Frame::Integer(ctx.session.handle.redirect.load(Ordering::Relaxed))
}

/// CLIENT TRACKINGINFO.
pub fn client_trackinginfo(ctx: &Ctx<'_>) -> Frame {
    ctx.engine.tracking.info(ctx.session)
}

/// CLIENT LIST flags for tracking: `t`, `R`, `B`, in Redis's order.
pub fn list_flags(handle: &ClientHandle, out: &mut String) {
    let f = handle.tracking.load(Ordering::Relaxed);
    if f & ON != 0 {
        out.push('t');
    }
    if f & BROKEN != 0 {
        out.push('R');
    }
    if f & BCAST != 0 {
        out.push('B');
    }
}
