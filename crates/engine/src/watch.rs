//! WATCH bookkeeping: which sessions watch which keys, and marking them dirty when
//! a write lands. Kept off the hot path by an atomic count of watched keys.

use crate::session::Session;
use bytes::Bytes;
use hashbrown::HashMap;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The sessions watching one key: client id and that session's dirty flag.
type Watchers = Vec<(u64, Arc<AtomicBool>)>;

#[derive(Default)]
pub struct Watches {
    count: AtomicUsize,
    by_key: Mutex<HashMap<(usize, Bytes), Watchers>>,
}

impl Watches {
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Watch `key` in `db`; `live` says whether it holds a value now, so EXEC
    /// can tell when it has since expired.
    pub fn watch(&self, session: &mut Session, db: usize, key: &[u8], live: bool) {
        // Copied: a slice would keep the whole request buffer it came from alive.
        let key = Bytes::copy_from_slice(key);
        let mut map = self.by_key.lock();
        let id = session.id();
        if map
            .get(&(db, key.clone()))
            .is_some_and(|list| list.iter().any(|(w, _)| *w == id))
        {
            return;
        }
        if live {
            session.watched_live.push((db, key.clone()));
        }
        map.entry((db, key.clone()))
            .or_default()
            .push((session.id(), session.watch_dirty.clone()));
        self.count.fetch_add(1, Ordering::Relaxed);
        session.watched.push((db, key));
        session
            .handle
            .watching
            .store(session.watched.len(), Ordering::Relaxed);
    }

    pub fn unwatch_all(&self, session: &mut Session) {
        session.watched_live.clear();
        if session.watched.is_empty() {
            session.watch_dirty.store(false, Ordering::SeqCst);
            return;
        }
        let mut map = self.by_key.lock();
        for (db, key) in session.watched.drain(..) {
            if let Some(list) = map.get_mut(&(db, key.clone())) {
                list.retain(|(id, _)| *id != session.handle.id);
                if list.is_empty() {
                    map.remove(&(db, key));
                }
            }
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        session.watch_dirty.store(false, Ordering::SeqCst);
        session.handle.watching.store(0, Ordering::Relaxed);
    }

    /// A key was modified: every session watching it will fail its EXEC.
    pub fn touch(&self, db: usize, key: &[u8]) {
        if !self.any() {
            return;
        }
        let map = self.by_key.lock();
        if let Some(list) = map.get(&(db, Bytes::copy_from_slice(key))) {
            for (_, flag) in list {
                flag.store(true, Ordering::SeqCst);
            }
        }
    }

    /// Whole databases are about to change (FLUSHDB, FLUSHALL, SWAPDB): mark the
    /// watchers of each watched `(db, key)` for which `affected` holds. Redis
    /// invalidates only keys that exist on either side of the change.
    pub fn touch_where(&self, mut affected: impl FnMut(usize, &[u8]) -> bool) {
        if !self.any() {
            return;
        }
        let map = self.by_key.lock();
        for ((db, key), list) in map.iter() {
            if affected(*db, key) {
                for (_, flag) in list {
                    flag.store(true, Ordering::SeqCst);
                }
            }
        }
    }
}
