//! The pub/sub registry's data: the Engine holds a [`PubSub`], each subscribed
//! session its [`Subscriptions`]. Names no session or engine; the parent module
//! drives it.

use crate::client::{ClientHandle, MonitorFeed};
use bytes::Bytes;
use hashbrown::HashMap;
use parking_lot::Mutex;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// The three kinds of subscription.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    pub(crate) fn index(self) -> usize {
        match self {
            Kind::Channel => 0,
            Kind::Pattern => 1,
            Kind::Shard => 2,
        }
    }
}

#[derive(Clone)]
pub(crate) struct Receiver {
    pub(crate) handle: Arc<ClientHandle>,
    pub(crate) feed: Arc<MonitorFeed>,
}

/// Every subscription of every client.
#[derive(Default)]
pub struct PubSub {
    pub(crate) inner: Mutex<[HashMap<Bytes, Vec<Receiver>>; 3]>,
    /// How many names of each kind have subscribers: the registry's sizes,
    /// stored under its lock after every change, read without it.
    pub(crate) names: [AtomicUsize; 3],
}

/// One client's subscriptions and the feed its messages are queued on.
pub struct Subscriptions {
    pub feed: Arc<MonitorFeed>,
    /// Channel, pattern and shard-channel names, in subscription order.
    pub(crate) names: [Vec<Bytes>; 3],
}

impl Subscriptions {
    pub fn count(&self, kind: Kind) -> usize {
        self.names[kind.index()].len()
    }

    /// Channels and patterns: the count SUBSCRIBE and PSUBSCRIBE report.
    pub fn plain(&self) -> usize {
        self.count(Kind::Channel) + self.count(Kind::Pattern)
    }

    pub fn any(&self) -> bool {
        self.names.iter().any(|n| !n.is_empty())
    }
}
