//! Client-side caching's data: the [`Tracking`] table the Engine holds and the
//! tracking flags a client's handle shows. Names no session or engine; the
//! parent module drives it.

use crate::client::ClientHandle;
use bytes::Bytes;
use hashbrown::HashMap;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// Tracking is on.
pub const ON: u8 = 1;
/// Broadcasting mode: every change under the client's prefixes.
pub const BCAST: u8 = 2;
/// Only keys read right after CLIENT CACHING YES are tracked.
pub const OPTIN: u8 = 4;
/// Keys read right after CLIENT CACHING NO are not tracked.
pub const OPTOUT: u8 = 8;
/// No invalidation for the client's own writes.
pub const NOLOOP: u8 = 16;
/// CLIENT CACHING was given for the next command (session only).
pub const CACHING: u8 = 32;
/// The redirect target is gone (registry and CLIENT LIST only).
pub const BROKEN: u8 = 64;

/// Stripes of the tracking table: as many as the keyspace has shards by
/// default, so a command's stripes are as uncontended as its shards.
pub(crate) const STRIPES: usize = 64;

/// One tracking client as the registry knows it.
pub(crate) struct Tracker {
    pub(crate) handle: Arc<ClientHandle>,
    pub(crate) redirect: u64,
    /// `ON`..`NOLOOP`, and `BROKEN` once a delivery found the target gone.
    pub(crate) flags: AtomicU8,
    pub(crate) prefixes: BTreeSet<Bytes>,
}

impl Tracker {
    pub(crate) fn flags(&self) -> u8 {
        self.flags.load(Ordering::Relaxed)
    }
}

/// Key -> the clients that read it since it last changed.
pub(crate) type Stripe = HashMap<Bytes, Vec<u64>>;

#[derive(Default)]
pub(crate) struct Bcast {
    /// BCAST prefix -> the clients registered for it.
    pub(crate) prefixes: BTreeMap<Bytes, Vec<u64>>,
    /// BCAST prefix -> keys changed under it since the last broadcast, each
    /// with the client that changed it last (0: the server).
    pub(crate) pending: BTreeMap<Bytes, BTreeMap<Bytes, u64>>,
}

/// Every tracking client and the keys they read.
pub struct Tracking {
    /// Some client tracks or some key is remembered.
    pub(crate) live: AtomicBool,
    /// Some client broadcasts.
    pub(crate) bcast_any: AtomicBool,
    /// Changed keys wait to be broadcast.
    pub(crate) pending: AtomicBool,
    /// Keys in the table, and client ids summed over them (INFO).
    pub(crate) keys: AtomicUsize,
    pub(crate) items: AtomicUsize,
    pub(crate) stripes: Box<[Mutex<Stripe>]>,
    pub(crate) clients: RwLock<HashMap<u64, Tracker>>,
    pub(crate) bcast: Mutex<Bcast>,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            live: AtomicBool::new(false),
            bcast_any: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            keys: AtomicUsize::new(0),
            items: AtomicUsize::new(0),
            stripes: (0..STRIPES).map(|_| Mutex::default()).collect(),
            clients: RwLock::default(),
            bcast: Mutex::default(),
        }
    }
}

/// What an invalidation message carries.
pub(crate) enum Payload<'a> {
    Keys(&'a [Bytes]),
    /// FLUSHDB/FLUSHALL: a null, in the tracking client's protocol.
    Flush,
}
