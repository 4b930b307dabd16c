//! Taking several shard locks when a script may be waiting out of order.
//!
//! Everyone takes shard locks in ascending order, which cannot deadlock. A
//! script is the one exception: it locks its declared keys' shards, and a key
//! it did not declare may live in a lower shard. Without writes it never waits
//! for one: it tries the lock, and if that fails gives everything back and runs
//! again with every shard (`ScriptRun`). After a write it must wait, so it
//! raises `Scripting::escalating`; anyone else who holds some locks while
//! waiting for another (the only way to close a cycle) then lets go of all of
//! them and starts again once no script waits. Among scripts, only the one
//! holding `Scripting::token` waits for as long as it takes; another gives up
//! after a short wait with an error, so two of them cannot wait for each other.

use crate::kernel::Engine;
use keel_store::ShardGuard;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long one wait for a lock lasts before checking for waiting scripts.
const SLICE: Duration = Duration::from_micros(500);

impl Engine {
    /// Lock `shards` (ascending, distinct), stepping back while a script waits
    /// out of order. Callers hold no shard lock.
    pub fn lock_shards<'a>(&'a self, shards: &[usize]) -> Vec<(usize, ShardGuard<'a>)> {
        let ks = &self.keyspace;
        'again: loop {
            let mut held = Vec::with_capacity(shards.len());
            for &s in shards {
                if held.is_empty() {
                    held.push((s, ks.lock(s)));
                    continue;
                }
                if let Some(g) = ks.try_lock(s) {
                    held.push((s, g));
                    continue;
                }
                loop {
                    if let Some(g) = ks.try_lock_for(s, SLICE) {
                        held.push((s, g));
                        break;
                    }
                    if self.scripting.escalating.load(Ordering::SeqCst) > 0 {
                        drop(held);
                        while self.scripting.escalating.load(Ordering::SeqCst) > 0 {
                            std::thread::sleep(Duration::from_micros(100));
                        }
                        continue 'again;
                    }
                }
            }
            return held;
        }
    }

    /// Every shard, in order (ALL_SHARDS commands, snapshots).
    pub(crate) fn lock_all_shards(&self) -> Vec<(usize, ShardGuard<'_>)> {
        let all: Vec<usize> = (0..self.keyspace.shard_count()).collect();
        self.lock_shards(&all)
    }
}
