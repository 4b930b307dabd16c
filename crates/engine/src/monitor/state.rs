//! The monitor registry's data: the [`Monitors`] the Engine holds. Names no
//! session or engine; the parent module feeds it.

use crate::client::{ClientHandle, MonitorFeed};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The monitoring clients.
#[derive(Default)]
pub struct Monitors {
    count: AtomicUsize,
    feeds: Mutex<Vec<Arc<MonitorFeed>>>,
}

impl Monitors {
    /// Whether any client monitors: the one check on the request path.
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Register client `id` as a monitor.
    pub fn add(&self, id: u64) -> Arc<MonitorFeed> {
        self.add_feed(Arc::new(MonitorFeed::new(id)))
    }

    /// Register the client of `handle` as a monitor, its feed under the
    /// client's output buffer limits.
    pub fn add_client(&self, handle: &Arc<ClientHandle>) -> Arc<MonitorFeed> {
        self.add_feed(Arc::new(MonitorFeed::for_client(handle)))
    }

    fn add_feed(&self, feed: Arc<MonitorFeed>) -> Arc<MonitorFeed> {
        let mut feeds = self.feeds.lock();
        feeds.push(feed.clone());
        self.count.store(feeds.len(), Ordering::Relaxed);
        feed
    }

    /// Stop feeding client `id` (RESET, disconnect).
    pub fn remove(&self, id: u64) {
        let mut feeds = self.feeds.lock();
        feeds.retain(|f| {
            if f.client_id == id {
                f.close();
            }
            f.client_id != id
        });
        self.count.store(feeds.len(), Ordering::Relaxed);
    }

    /// Append one encoded line to every monitor.
    pub(crate) fn push(&self, line: &[u8]) {
        for f in self.feeds.lock().iter() {
            f.push(line);
        }
    }
}
