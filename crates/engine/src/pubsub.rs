//! Publish/subscribe: which clients listen to which channels, patterns and
//! shard channels, and delivery of published messages.
//!
//! A subscriber owns a [`MonitorFeed`], the same queue MONITOR uses: PUBLISH,
//! from whichever worker thread runs it, encodes the message for each
//! receiver's protocol and appends it to that receiver's feed while holding the
//! registry's lock, then wakes the receiver's task, which writes it between
//! replies. One lock for every publication means every subscriber sees the
//! messages of one publisher (indeed of all publishers) in one order.
//!
//! Cost when nobody subscribes: the connection checks one `Option` per read,
//! and PUBLISH reads two atomic counts of subscribed names instead of taking
//! the registry's lock, so publishing to nobody costs what a GET does.

use crate::session::{ClientHandle, Session};
use bytes::{Bytes, BytesMut};
use hashbrown::HashMap;
use keel_resp::{encode, Frame, Protocol};
use std::sync::atomic::Ordering;

pub(crate) mod state;
use self::state::Receiver;
pub use self::state::{Kind, PubSub, Subscriptions};

/// Whether `session` has any subscription (RESP2's subscribed mode).
pub fn subscribed(session: &Session) -> bool {
    session.pubsub.as_ref().is_some_and(|s| s.any())
}

fn kind_word(kind: Kind, sub: bool) -> &'static str {
    match (kind, sub) {
        (Kind::Channel, true) => "subscribe",
        (Kind::Channel, false) => "unsubscribe",
        (Kind::Pattern, true) => "psubscribe",
        (Kind::Pattern, false) => "punsubscribe",
        (Kind::Shard, true) => "ssubscribe",
        (Kind::Shard, false) => "sunsubscribe",
    }
}

/// A confirmation: `[kind, name or nil, count]`, a push in RESP3.
fn confirmation(kind: Kind, sub: bool, name: Option<&Bytes>, count: usize) -> Frame {
    Frame::Push(vec![
        Frame::Bulk(Bytes::from_static(kind_word(kind, sub).as_bytes())),
        name.map_or(Frame::Null, |n| Frame::Bulk(n.clone())),
        Frame::Integer(count as i64),
    ])
}

fn reported(subs: &Subscriptions, kind: Kind) -> usize {
    if kind == Kind::Shard {
        subs.count(Kind::Shard)
    } else {
        subs.plain()
    }
}

impl PubSub {
    /// Subscribe `session` to `names`; returns the confirmations, encoded.
    pub fn subscribe(&self, session: &mut Session, kind: Kind, names: &[Bytes]) -> Frame {
        let handle = session.handle.clone();
        let subs = session.pubsub.get_or_insert_with(|| {
            Box::new(Subscriptions {
                feed: handle.push_feed().0,
                names: Default::default(),
            })
        });
        let mut out = BytesMut::new();
        let mut reg = self.inner.lock();
        for name in names {
            let name = Bytes::copy_from_slice(name);
            let list = &mut subs.names[kind.index()];
            if !list.contains(&name) {
                list.push(name.clone());
                reg[kind.index()]
                    .entry(name.clone())
                    .or_default()
                    .push(Receiver {
                        handle: handle.clone(),
                        feed: subs.feed.clone(),
                    });
            }
            let c = confirmation(kind, true, Some(&name), reported(subs, kind));
            encode(&c, session.proto, &mut out);
        }
        self.note_sizes(&reg);
        drop(reg);
        publish_counts(&handle, subs);
        Frame::Encoded(out.freeze())
    }

    /// Unsubscribe `session` from `names`, or from every `kind` subscription
    /// when `names` is empty; returns the confirmations, encoded.
    pub fn unsubscribe(&self, session: &mut Session, kind: Kind, names: &[Bytes]) -> Frame {
        let proto = session.proto;
        let mut out = BytesMut::new();
        let Some(subs) = session.pubsub.as_mut() else {
            if names.is_empty() {
                encode(&confirmation(kind, false, None, 0), proto, &mut out);
            }
            for n in names {
                encode(&confirmation(kind, false, Some(n), 0), proto, &mut out);
            }
            return Frame::Encoded(out.freeze());
        };
        let all: Vec<Bytes>;
        let names = if names.is_empty() {
            all = subs.names[kind.index()].clone();
            if all.is_empty() {
                let c = confirmation(kind, false, None, reported(subs, kind));
                encode(&c, proto, &mut out);
                return Frame::Encoded(out.freeze());
            }
            &all[..]
        } else {
            names
        };
        let id = session.handle.id;
        let mut reg = self.inner.lock();
        for name in names {
            let list = &mut subs.names[kind.index()];
            if let Some(pos) = list.iter().position(|n| n == name) {
                list.remove(pos);
                remove_receiver(&mut reg[kind.index()], name, id);
            }
            let c = confirmation(kind, false, Some(name), reported(subs, kind));
            encode(&c, proto, &mut out);
        }
        self.note_sizes(&reg);
        drop(reg);
        publish_counts(&session.handle, subs);
        Frame::Encoded(out.freeze())
    }

    /// Drop every subscription of `session` (RESET, disconnect).
    pub fn drop_all(&self, session: &mut Session) {
        let Some(subs) = session.pubsub.as_mut() else {
            return;
        };
        let id = session.handle.id;
        let mut reg = self.inner.lock();
        for (i, names) in subs.names.iter_mut().enumerate() {
            for name in names.drain(..) {
                remove_receiver(&mut reg[i], &name, id);
            }
        }
        self.note_sizes(&reg);
        drop(reg);
        publish_counts(&session.handle, subs);
    }

    /// Deliver `message` on `channel`: to its subscribers and the matching
    /// patterns' (`Kind::Channel`), or to the shard channel's subscribers.
    /// Returns the number of receivers.
    pub fn publish(&self, kind: Kind, channel: &[u8], message: &[u8]) -> i64 {
        if !self.may_deliver(kind) {
            return 0;
        }
        let reg = self.inner.lock();
        let mut enc = Encodings::default();
        let mut n = 0;
        let word: &'static [u8] = if kind == Kind::Shard {
            b"smessage"
        } else {
            b"message"
        };
        if let Some(list) = reg[kind.index()].get(channel) {
            for r in list {
                let bytes = enc.get(&r.handle, || vec![bulk(word), bulk(channel), bulk(message)]);
                r.feed.push(bytes);
                n += 1;
            }
        }
        if kind == Kind::Channel {
            for (pattern, list) in reg[Kind::Pattern.index()].iter() {
                if !keel_store::glob::glob_match(pattern, channel, false) {
                    continue;
                }
                let mut penc = Encodings::default();
                for r in list {
                    let bytes = penc.get(&r.handle, || {
                        vec![
                            bulk(b"pmessage"),
                            Frame::Bulk(pattern.clone()),
                            bulk(channel),
                            bulk(message),
                        ]
                    });
                    r.feed.push(bytes);
                    n += 1;
                }
            }
        }
        n
    }

    /// Whether a `kind` publication could reach anyone: false, without the
    /// lock, when no channel (nor pattern) or shard channel has subscribers.
    /// A subscription confirmed to its client was counted before the reply
    /// left, so a PUBLISH sent after it sees it.
    pub fn may_deliver(&self, kind: Kind) -> bool {
        let n = |k: Kind| self.names[k.index()].load(Ordering::Acquire);
        match kind {
            Kind::Channel => n(Kind::Channel) + n(Kind::Pattern) > 0,
            Kind::Pattern | Kind::Shard => n(kind) > 0,
        }
    }

    fn note_sizes(&self, reg: &[HashMap<Bytes, Vec<Receiver>>; 3]) {
        for (count, map) in self.names.iter().zip(reg) {
            count.store(map.len(), Ordering::Release);
        }
    }

    /// Active channels (or shard channels) whose name matches `pattern`.
    pub fn channels(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let reg = self.inner.lock();
        reg[kind.index()]
            .keys()
            .filter(|c| pattern.is_none_or(|p| keel_store::glob::glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    /// What client `id` is subscribed to: channels, patterns, shard channels.
    pub fn names_of(&self, id: u64) -> [Vec<Bytes>; 3] {
        let reg = self.inner.lock();
        reg.each_ref().map(|names| {
            names
                .iter()
                .filter(|(_, rx)| rx.iter().any(|r| r.handle.id == id))
                .map(|(n, _)| n.clone())
                .collect()
        })
    }

    /// Subscribers of `channel` (patterns not counted).
    pub fn numsub(&self, kind: Kind, channel: &[u8]) -> usize {
        self.inner.lock()[kind.index()]
            .get(channel)
            .map_or(0, Vec::len)
    }

    /// How many distinct channels, patterns or shard channels have subscribers.
    pub fn active(&self, kind: Kind) -> usize {
        self.names[kind.index()].load(Ordering::Acquire)
    }
}

fn bulk(b: &[u8]) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(b))
}

fn remove_receiver(map: &mut HashMap<Bytes, Vec<Receiver>>, name: &[u8], id: u64) {
    if let Some(list) = map.get_mut(name) {
        list.retain(|r| r.handle.id != id);
        if list.is_empty() {
            map.remove(name);
        }
    }
}

/// Mirror the counts on the client's handle, for CLIENT LIST.
fn publish_counts(handle: &ClientHandle, subs: &Subscriptions) {
    for (i, n) in subs.names.iter().enumerate() {
        handle.subs[i].store(n.len(), Ordering::Relaxed);
    }
}

/// One message encoded once per protocol.
#[derive(Default)]
struct Encodings {
    resp2: Option<BytesMut>,
    resp3: Option<BytesMut>,
}

impl Encodings {
    fn get(&mut self, handle: &ClientHandle, parts: impl FnOnce() -> Vec<Frame>) -> &[u8] {
        let (slot, proto) = if handle.resp.load(Ordering::Relaxed) == 3 {
            (&mut self.resp3, Protocol::Resp3)
        } else {
            (&mut self.resp2, Protocol::Resp2)
        };
        slot.get_or_insert_with(|| {
            let mut out = BytesMut::new();
            encode(&Frame::Push(parts()), proto, &mut out);
            out
        })
    }
}

/// Redis 7.0's refusal in RESP2 subscribed mode, `None` for the commands it
/// still allows.
pub(crate) fn refuse(name: &str, full_name: String) -> Option<crate::error::CmdError> {
    const ALLOWED: &[&str] = &[
        "SUBSCRIBE",
        "UNSUBSCRIBE",
        "PSUBSCRIBE",
        "PUNSUBSCRIBE",
        "SSUBSCRIBE",
        "SUNSUBSCRIBE",
        "PING",
        "QUIT",
        "RESET",
    ];
    if ALLOWED.contains(&name) {
        return None;
    }
    Some(crate::error::CmdError::err(format!(
        "Can't execute '{full_name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    )))
}
