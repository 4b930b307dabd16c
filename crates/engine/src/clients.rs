//! Describing a connected client: its CLIENT LIST line and the memory it
//! holds. CLIENT LIST and INFO report these, and so do the kernel's ACL log
//! (`client-info`) and client eviction, which is why they live here.

use crate::outbuf::REPLY_CHUNK_BYTES;
use crate::session::ClientHandle;
use bytes::Bytes;
use std::sync::atomic::Ordering;

/// The buffer fields of a CLIENT LIST line, Redis 7.0's meanings mapped onto
/// Keel's two buffers: `qbuf`/`qbuf-free` the read buffer, `argv-mem` the
/// arguments of the command running (the caller's own), `rbs`/`rbp` the reply
/// buffer's size and recent peak, `obl` pending reply bytes up to Redis's
/// 16 KiB buffer and `oll`/`omem` the 16 KiB blocks and bytes beyond it, and
/// `tot-mem` all of it plus the client's own structures.
fn buffer_fields(h: &ClientHandle, argv_mem: usize) -> String {
    let b = &h.bufs;
    let pending = crate::client::pending_of(h);
    let obl = pending.min(REPLY_CHUNK_BYTES);
    let beyond = pending - obl;
    let oll = beyond.div_ceil(REPLY_CHUNK_BYTES);
    let omem = crate::client::omem(h, pending);
    let own = std::mem::size_of::<ClientHandle>() + std::mem::size_of::<crate::Session>();
    let tot = b.held() + argv_mem + own;
    format!(
        "qbuf={} qbuf-free={} argv-mem={argv_mem} multi-mem=0 rbs={} rbp={} obl={obl} \
         oll={oll} omem={omem} tot-mem={tot} events={}",
        b.qbuf(),
        b.qbuf_free(),
        b.out_cap(),
        b.out_peak.load(Ordering::Relaxed),
        if pending > 0 { "rw" } else { "r" },
    )
}

/// The memory a client's connection holds, as CLIENT LIST's `tot-mem` counts
/// it, for INFO's `mem_clients_normal`.
pub fn client_memory(h: &ClientHandle) -> usize {
    h.bufs.held() + std::mem::size_of::<ClientHandle>() + std::mem::size_of::<crate::Session>()
}

/// One CLIENT LIST / CLIENT INFO line, in Redis 7.2's field order, at `now`;
/// `self_id` is the caller's id and `argv` its running command's arguments.
pub fn client_line_for(
    engine: &crate::kernel::Engine,
    now: u64,
    self_id: u64,
    h: &ClientHandle,
    argv: &[Bytes],
) -> String {
    let text = |v: &parking_lot::Mutex<Option<Bytes>>| {
        v.lock()
            .as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    let in_multi = h.in_multi.load(Ordering::Relaxed);
    let mut flags = String::new();
    if h.monitor.load(Ordering::Relaxed) {
        flags.push('O');
    } else if h.replica.load(Ordering::Relaxed) {
        flags.push('S');
    } else if h.master.load(Ordering::Relaxed) {
        flags.push('M');
    }
    let subs = h.subs.each_ref().map(|n| n.load(Ordering::Relaxed));
    if subs.iter().any(|&n| n > 0) {
        flags.push('P');
    }
    if in_multi {
        flags.push('x');
    }
    if h.paused.load(Ordering::Relaxed) || h.blocked.load(Ordering::Relaxed) {
        flags.push('b');
    }
    crate::tracking::list_flags(h, &mut flags);
    if h.no_evict.load(Ordering::Relaxed) {
        flags.push('e');
    }
    if h.no_touch.load(Ordering::Relaxed) {
        flags.push('T');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let multi = if in_multi {
        h.multi_queued.load(Ordering::Relaxed) as i64
    } else {
        -1
    };
    let last = h.last_cmd.load(Ordering::Relaxed);
    let cmd = if last < engine.commands.len() {
        engine.commands.full_name(last)
    } else {
        "NULL".to_string()
    };
    let age = now.saturating_sub(h.created_ms) / 1000;
    let idle = now.saturating_sub(h.last_interaction_ms.load(Ordering::Relaxed)) / 1000;
    let argv_mem = if h.id == self_id {
        argv.iter().map(Bytes::len).sum()
    } else {
        0
    };
    format!(
        "id={} addr={} laddr={} fd={} name={} age={age} idle={idle} flags={flags} db={} \
         sub={} psub={} ssub={} multi={multi} {} cmd={cmd} user={} redir={} resp={} \
         lib-name={} lib-ver={}\n",
        h.id,
        h.addr,
        h.laddr,
        h.fd.load(Ordering::Relaxed),
        text(&h.name),
        h.db.load(Ordering::Relaxed),
        subs[0],
        subs[1],
        subs[2],
        buffer_fields(h, argv_mem),
        h.user.lock(),
        h.redirect.load(Ordering::Relaxed),
        h.resp.load(Ordering::Relaxed),
        text(&h.lib_name),
        text(&h.lib_ver),
    )
}
