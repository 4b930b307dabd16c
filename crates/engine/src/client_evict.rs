//! Client eviction (`maxmemory-clients`), as Redis 7.0 does it: when the
//! memory all evictable connections hold (their buffers, queued replies and
//! pushes, and their own structures) is over the limit, the clients holding
//! the most are closed until it is not. A client with CLIENT NO-EVICT on is
//! never chosen. The limit is bytes, or a percentage of `maxmemory` (none
//! while `maxmemory` is 0). Checked by the server's cron at `hz`; nothing is
//! done while the limit is 0.

use crate::kernel::Engine;
use crate::session::ClientHandle;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The limit in bytes now (0: none).
pub fn limit(engine: &Engine) -> u64 {
    let v = engine.config.get("maxmemory-clients");
    match v.strip_suffix('%') {
        Some(p) => {
            let p: u64 = p.parse().unwrap_or(0);
            engine.config.ops.evict.maxmemory() / 100 * p
                + engine.config.ops.evict.maxmemory() % 100 * p / 100
        }
        None => v.parse().unwrap_or(0),
    }
}

/// What a client holds, as client eviction counts it: CLIENT LIST's
/// `tot-mem` plus replies and pushes queued beyond its reply buffer.
pub fn memory_of(h: &ClientHandle) -> u64 {
    let beyond = crate::client::pending_of(h).saturating_sub(h.bufs.out_cap());
    (crate::clients::client_memory(h) + beyond) as u64
}

/// Close the biggest evictable clients until their total is within the
/// limit. Returns how many were closed.
pub fn cron(engine: &Engine) -> usize {
    let limit = limit(engine);
    if limit == 0 {
        return 0;
    }
    let mut clients: Vec<(u64, Arc<ClientHandle>)> = engine
        .clients
        .lock()
        .values()
        .filter(|h| !h.no_evict.load(Ordering::Relaxed) && !h.is_killed())
        .map(|h| (memory_of(h), h.clone()))
        .collect();
    let mut total: u64 = clients.iter().map(|(m, _)| m).sum();
    if total <= limit {
        return 0;
    }
    clients.sort_by_key(|c| std::cmp::Reverse(c.0));
    let mut closed = 0;
    let now = engine.now_ms();
    for (mem, h) in clients {
        if total <= limit {
            break;
        }
        crate::logging::log_notice(&format!(
            "Evicting client: {}",
            crate::clients::client_line_for(engine, now, 0, &h, &[])
        ));
        h.kill();
        total -= mem;
        closed += 1;
    }
    engine
        .stats
        .evicted_clients
        .fetch_add(closed as u64, Ordering::Relaxed);
    closed
}
