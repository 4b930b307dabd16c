//! MONITOR: every command the server runs, as a line, to each monitoring client.
//!
//! The executor feeds a command after it ran (so `SELECT 3` is shown in database
//! 3, as Redis 7.0 shows it), from whichever worker thread ran it, while it
//! still holds its shard locks: lines of commands that touch the same keys are
//! in execution order, and lines of one connection are in its order. Each
//! monitor has a [`MonitorFeed`], a byte buffer its connection drains and writes.
//!
//! Cost when nobody monitors: one relaxed atomic load per command
//! ([`Monitors::active`]). Commands flagged `admin` or `skip_monitor` are never
//! shown; neither is a blocked command when it is served (it was shown when it
//! was sent), nor a command refused before it ran (unknown, arity, NOAUTH,
//! queued by MULTI: queued commands are shown when EXEC runs them).

use crate::declare::Flags;
use crate::error::CmdError;
use crate::kernel::CommandSpec;
use crate::kernel::Ctx;
use crate::kernel::Engine;
use crate::session::Session;
use bytes::Bytes;
use std::sync::atomic::Ordering;

pub use crate::client::{FeedReady, MonitorFeed};

pub(crate) mod state;
pub use self::state::Monitors;

/// Feed the command that just ran in `ctx` to the monitors, unless Redis
/// hides it. Called only when [`Monitors::active`].
pub(crate) fn feed(ctx: &mut Ctx<'_>, spec: &CommandSpec, argv: &[Bytes]) {
    let redacted = std::mem::take(&mut ctx.redacted);
    if spec.flags.contains(Flags::ADMIN)
        || spec.flags.contains(Flags::SKIP_MONITOR)
        || ctx.session.serving.is_some()
    {
        return;
    }
    let now_us = ctx.engine.clock.now_us();
    // Commands a script runs show `lua` where the client's address goes.
    let addr = if ctx.in_script {
        "lua"
    } else {
        ctx.session.handle.addr.as_str()
    };
    let line = format_line(now_us, ctx.session.db, addr, argv, &redacted);
    ctx.engine.monitors.push(&line);
}

/// Show a script command (EVAL, FCALL: `skip_monitor`) before the commands
/// it runs, as Redis does.
pub fn feed_script(ctx: &Ctx<'_>, argv: &[Bytes]) {
    let now_us = ctx.engine.clock.now_us();
    let line = format_line(now_us, ctx.session.db, &ctx.session.handle.addr, argv, &[]);
    ctx.engine.monitors.push(&line);
}

/// One monitor line: `+<secs>.<usecs> [<db> <addr>] "arg" ...` and CRLF, every
/// argument quoted and escaped the way Redis's `sdscatrepr` does, those at the
/// `redacted` positions replaced by `(redacted)`.
pub fn format_line(
    now_us: u64,
    db: usize,
    addr: &str,
    argv: &[Bytes],
    redacted: &[usize],
) -> Vec<u8> {
    let mut out = format!(
        "+{}.{:06} [{} {}]",
        now_us / 1_000_000,
        now_us % 1_000_000,
        db,
        addr
    )
    .into_bytes();
    for (i, arg) in argv.iter().enumerate() {
        out.push(b' ');
        if redacted.contains(&i) {
            out.extend_from_slice(b"\"(redacted)\"");
        } else {
            quote_into(arg, &mut out);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Append `arg` in double quotes with C-style escapes: `\\ \" \n \r \t \a \b`,
/// printable ASCII as is, any other byte as `\xhh`.
pub fn quote_into(arg: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &c in arg {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            b' '..=b'~' => out.push(c),
            _ => out.extend_from_slice(&[
                b'\\',
                b'x',
                HEX[usize::from(c >> 4)],
                HEX[usize::from(c & 15)],
            ]),
        }
    }
    out.push(b'"');
}

/// Redis treats a monitor as a replica, which may not touch the keyspace: it
/// may still run PING, CLIENT, RESET, QUIT and the like.
pub(crate) fn refuse(spec: &CommandSpec) -> Option<CmdError> {
    (spec.flags.contains(Flags::WRITE)
        || spec.flags.contains(Flags::READONLY)
        || spec.flags.contains(Flags::MAY_REPLICATE))
    .then(|| CmdError::err("Replica can't interact with the keyspace"))
}

/// Make `session` a monitor (MONITOR).
pub fn start(engine: &Engine, session: &mut Session) {
    if session.monitor.is_none() {
        session.monitor = Some(engine.monitors.add_client(&session.handle));
        session.handle.monitor.store(true, Ordering::Relaxed);
    }
}

/// End `session`'s monitoring, if it monitors (RESET, disconnect).
pub fn stop(engine: &Engine, session: &mut Session) {
    if session.monitor.take().is_some() {
        engine.monitors.remove(session.id());
        session.handle.monitor.store(false, Ordering::Relaxed);
    }
}

/// Record that argument `pos` of the running command must not be shown
/// (AUTH's password, HELLO's AUTH credentials).
pub fn redact(ctx: &mut Ctx<'_>, pos: usize) {
    if ctx.engine.monitors.active() {
        ctx.redacted.push(pos);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientHandle;
    use bytes::BytesMut;
    use std::sync::Arc;

    fn line(argv: &[&[u8]], redacted: &[usize]) -> String {
        let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        String::from_utf8(format_line(
            1_700_000_000_000_042,
            3,
            "127.0.0.1:5",
            &argv,
            redacted,
        ))
        .expect("ascii")
    }

    #[test]
    fn line_format_and_escapes() {
        assert_eq!(
            line(&[b"SET", b"k", b"a\"b\\c\n\r\t\x07\x08\x01\xff \x7f~"], &[]),
            "+1700000000.000042 [3 127.0.0.1:5] \"SET\" \"k\" \
             \"a\\\"b\\\\c\\n\\r\\t\\a\\b\\x01\\xff \\x7f~\"\r\n"
        );
        assert_eq!(
            line(&[b"AUTH", b"u", b"p"], &[1, 2]),
            "+1700000000.000042 [3 127.0.0.1:5] \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n"
        );
        assert_eq!(
            line(&[b"get", b""], &[]),
            "+1700000000.000042 [3 127.0.0.1:5] \"get\" \"\"\r\n"
        );
    }

    #[test]
    fn feeds_fan_out_and_close() {
        let m = Monitors::default();
        assert!(!m.active());
        let a = m.add(1);
        let b = m.add(2);
        assert!(m.active());
        m.push(b"x\r\n");
        m.remove(1);
        m.push(b"y\r\n");
        let mut out = BytesMut::new();
        a.take_into(&mut out);
        assert!(out.is_empty(), "a removed feed is cleared");
        b.take_into(&mut out);
        assert_eq!(&out[..], b"x\r\ny\r\n");
        m.remove(2);
        assert!(!m.active());
    }

    #[test]
    fn a_feed_past_its_clients_limit_is_dropped_and_the_client_killed() {
        let h = Arc::new(ClientHandle::new(3, String::new(), String::new(), 0));
        let limits = Arc::new(crate::outbuf::OutputLimits::default());
        limits.set_from("normal 100000 0 0");
        h.bufs.output.attach(limits);
        let m = Monitors::default();
        let f = m.add_client(&h);
        let line = [b'x'; 1000];
        for _ in 100..(100 + crate::outbuf::REPLY_CHUNK_BYTES / 1000) {
            f.push(&line);
        }
        assert!(!h.is_killed());
        assert!(h.bufs.output.queued.load(Ordering::Relaxed) > 0);
        // Nobody takes the lines: the publisher's side stops them at the limit.
        for _ in 0..1000 {
            f.push(&line);
        }
        assert!(h.is_killed());
        assert!(h.bufs.output.is_over());
        assert_eq!(h.bufs.output.queued.load(Ordering::Relaxed), 0);
        let mut out = BytesMut::new();
        f.take_into(&mut out);
        assert!(out.is_empty(), "what was queued is let go");
        m.remove(3);
    }

    #[test]
    fn a_clients_feeds_add_up_in_its_queued_bytes() {
        let h = Arc::new(ClientHandle::new(4, String::new(), String::new(), 0));
        let queued = || h.bufs.output.queued.load(Ordering::Relaxed);
        let a = MonitorFeed::for_client(&h);
        let b = MonitorFeed::for_client(&h);
        a.push(b"12345");
        b.push(b"123");
        assert_eq!(queued(), 8);
        let mut out = BytesMut::new();
        a.take_into(&mut out);
        assert_eq!(queued(), 3);
        a.push(b"1");
        drop(b);
        assert_eq!(queued(), 1);
        a.close();
        assert_eq!(queued(), 0);
    }
}
