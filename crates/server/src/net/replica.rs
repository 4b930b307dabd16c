//! A replica's link, master side: after PSYNC or SYNC the connection sends
//! the full sync's snapshot (when there is one to send) and from then on is
//! served as any client with a push feed: the replication stream arrives
//! through the feed, the replica's `REPLCONF ACK`s are run as commands, and
//! nothing is answered (see `keel_engine::replication` for the wire form).

use super::*;
use keel_engine::replication::{self, Pipe};

/// Closes the pipe when the connection stops reading it, so the snapshot
/// writer stops too.
struct Reading<'a>(&'a Pipe);

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Take the sync PSYNC or SYNC asked for: start the snapshot (waiting while
/// another background job holds it), send it, and put the replica online.
/// False when the connection must close.
pub(super) async fn start<S: Conn>(
    engine: &Engine,
    session: &mut Session,
    stream: &mut S,
    wake: &Notify,
) -> std::io::Result<bool> {
    let handle = session.handle.clone();
    let Some(req) = session.sync.as_mut() else {
        return Ok(true);
    };
    req.started = true;
    // A replica is sent no replies, only the stream.
    session.reply_flags |= keel_engine::session::REPLY_OFF;
    if !req.full {
        return Ok(true);
    }
    let replica = req.replica.clone();
    let (legacy, eof) = (req.legacy, req.capa_eof);
    let sync = loop {
        if let Some(s) = replication::start_full_sync(engine, &replica) {
            break s;
        }
        if handle.is_killed() {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let pipe = sync.pipe.clone();
    let _reading = Reading(&pipe);
    let mut out = BytesMut::new();
    if !legacy {
        out.extend_from_slice(sync.line.as_bytes());
    }
    let mark = replication::random_id(engine);
    if eof {
        out.extend_from_slice(format!("$EOF:{mark}\r\n").as_bytes());
    }
    // Without `capa eof` the length goes first: the image is gathered whole.
    let mut whole = Vec::new();
    loop {
        let chunk = tokio::select! {
            c = std::future::poll_fn(|cx| pipe.poll_chunk(cx)) => c,
            _ = wake.notified() => {
                if handle.is_killed() {
                    return Ok(false);
                }
                continue;
            }
        };
        match chunk {
            Some(Ok(c)) if eof => out.extend_from_slice(&c),
            Some(Ok(c)) => whole.extend_from_slice(&c),
            Some(Err(why)) => {
                keel_engine::logging::log_warning(&format!(
                    "Full sync of replica id {} failed: {why}",
                    replica.client_id
                ));
                return Ok(false);
            }
            None => break,
        }
        if !out.is_empty() && !write_replies(engine, &handle, stream, &mut out, wake).await? {
            return Ok(false);
        }
    }
    if eof {
        out.extend_from_slice(mark.as_bytes());
    } else {
        out.extend_from_slice(format!("${}\r\n", whole.len()).as_bytes());
        out.extend_from_slice(&whole);
    }
    if !write_replies(engine, &handle, stream, &mut out, wake).await? {
        return Ok(false);
    }
    let name = format!(
        "{}:{}",
        replica.ip.lock(),
        replica.port.load(Ordering::Relaxed)
    );
    if eof {
        // A replica reading an EOF-marked image looks for the mark at the
        // end of what it has read: the stream starts once it acknowledges
        // (its first REPLCONF ACK), as Redis starts it.
        keel_engine::logging::log_notice(&format!(
            "Streamed RDB transfer with replica {name} succeeded: waiting for REPLCONF ACK \
             from replica to enable streaming"
        ));
    } else {
        replica.go_online();
        keel_engine::logging::log_notice(&format!("Synchronization with replica {name} succeeded"));
    }
    Ok(true)
}
