//! The link to the master a replica follows: one thread that connects,
//! does the handshake Redis's replica does, takes a full sync or continues
//! from where it was, then applies the master's stream in order.
//!
//! The handshake, as Redis 7's replica sends it: `PING` (an `-NOAUTH`
//! answer is fine), `AUTH [masteruser] masterauth` when set, `REPLCONF
//! listening-port <port>`, `REPLCONF ip-address <ip>` when
//! `replica-announce-ip` is set, `REPLCONF capa eof capa psync2`, then
//! `PSYNC <replid> <offset+1>` naming this server's own history.
//!
//! The answer is `+CONTINUE [<new id>]` (the stream follows at once) or
//! `+FULLRESYNC <replid> <offset>` and a snapshot: `$<length>\r\n` and that
//! many bytes, or `$EOF:<40-byte mark>\r\n`, the RDB and the mark again.
//! Lone newlines before it are the master's keepalives while it prepares the
//! snapshot. The snapshot is saved as a temporary file, renamed to
//! `dbfilename` and loaded in place of the dataset; the stream follows.
//!
//! The stream is commands as a client sends them. Each is run in the
//! master's session (nothing is replied) and its bytes, as read, go on to
//! this server's backlog and replicas: the offset is the master's. `REPLCONF
//! GETACK` is answered with `REPLCONF ACK <offset>`, and an ACK goes out
//! every second regardless.

use bytes::{Bytes, BytesMut};
use keel_engine::logging::{log_notice, log_warning};
use keel_engine::replication::follow::LinkState;
use keel_engine::Engine;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a read waits before the link looks at REPLICAOF and the timeout.
const POLL: Duration = Duration::from_millis(100);

/// Start the thread that follows whatever master `REPLICAOF` names.
pub fn spawn(engine: Arc<Engine>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("keel-repl".into())
        .spawn(move || loop {
            let ((host, port), gen) = engine.follow.wait_target();
            let mut link = Link {
                e: &engine,
                gen,
                s: None,
                buf: BytesMut::new(),
                last_io: Instant::now(),
            };
            let outcome = link.run(&host, port);
            drop(link);
            if engine.follow.gen() != gen {
                continue;
            }
            if let Err(why) = outcome {
                log_warning(&why);
            }
            engine.follow.set_state(LinkState::Connect);
            engine
                .follow
                .down_since_ms
                .store(engine.now_ms(), Ordering::Relaxed);
            engine.follow.pause(gen, 1000);
        })
        .map(|_| ())
}

struct Link<'a> {
    e: &'a Engine,
    gen: u64,
    s: Option<TcpStream>,
    buf: BytesMut,
    last_io: Instant,
}

type Res<T> = Result<T, String>;

impl Link<'_> {
    fn stale(&self) -> bool {
        self.e.follow.gen() != self.gen
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.e.config.get_i64("repl-timeout").max(1) as u64)
    }

    /// Read more into `buf`: waits, looking every [`POLL`] at REPLICAOF
    /// (`Ok(false)`: the link is no longer wanted) and at `repl-timeout`.
    /// With `tick`, back within a second even with nothing read, so the
    /// stream's ACK goes out.
    fn fill(&mut self, tick: bool) -> Res<bool> {
        let started = Instant::now();
        let mut chunk = [0u8; 64 * 1024];
        loop {
            if self.stale() {
                return Ok(false);
            }
            let s = self.s.as_mut().ok_or("not connected")?;
            match s.read(&mut chunk) {
                Ok(0) => return Err("Connection with master lost.".into()),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    self.last_io = Instant::now();
                    self.e
                        .follow
                        .last_io_ms
                        .store(self.e.now_ms(), Ordering::Relaxed);
                    return Ok(true);
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if self.last_io.elapsed() > self.timeout() {
                        return Err("MASTER timeout: no data nor PING received...".into());
                    }
                    if tick && started.elapsed() >= Duration::from_millis(900) {
                        return Ok(true);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("Error reading from MASTER: {e}")),
            }
        }
    }

    /// One reply line, without its line end; `None` once the link is no
    /// longer wanted.
    fn line(&mut self) -> Res<Option<String>> {
        loop {
            if let Some(at) = self.buf.iter().position(|&b| b == b'\n') {
                let line = self.buf.split_to(at + 1);
                let text = String::from_utf8_lossy(&line[..at]);
                return Ok(Some(text.trim_end_matches('\r').to_string()));
            }
            if self.buf.len() > 64 * 1024 {
                return Err("Reply line from MASTER too long".into());
            }
            if !self.fill(false)? {
                return Ok(None);
            }
        }
    }

    fn send(&mut self, argv: &[&[u8]]) -> Res<()> {
        let mut out = Vec::new();
        out.extend_from_slice(format!("*{}\r\n", argv.len()).as_bytes());
        for a in argv {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        let s = self.s.as_mut().ok_or("not connected")?;
        s.write_all(&out)
            .map_err(|e| format!("Error writing to MASTER: {e}"))
    }

    /// Send a command of the handshake and read its one-line reply.
    fn ask(&mut self, argv: &[&[u8]]) -> Res<Option<String>> {
        self.send(argv)?;
        self.line()
    }

    fn run(&mut self, host: &str, port: u16) -> Res<()> {
        let f = &self.e.follow;
        f.set_state(LinkState::Connecting);
        log_notice(&format!("Connecting to MASTER {host}:{port}"));
        let addr = (host, port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| format!("Unable to connect to MASTER: can't resolve {host}"))?;
        let s = TcpStream::connect_timeout(&addr, self.timeout())
            .map_err(|e| format!("Unable to connect to MASTER: {e}"))?;
        s.set_read_timeout(Some(POLL)).map_err(|e| e.to_string())?;
        let _ = s.set_nodelay(!self.e.config.get_bool("repl-disable-tcp-nodelay"));
        let laddr = s.local_addr().map(|a| a.to_string()).unwrap_or_default();
        self.s = Some(s);
        self.last_io = Instant::now();
        log_notice("MASTER <-> REPLICA sync started");
        f.set_state(LinkState::Handshake);
        let Some(pong) = self.ask(&[b"PING"])? else {
            return Ok(());
        };
        if pong.starts_with('-')
            && !pong.starts_with("-NOAUTH")
            && !pong.starts_with("-NOPERM")
            && !pong.starts_with("-ERR operation not permitted")
        {
            return Err(format!("Error reply to PING from master: '{pong}'"));
        }
        log_notice("Master replied to PING, replication can continue...");
        let pass = self.e.config.get("masterauth");
        if !pass.is_empty() {
            let user = self.e.config.get("masteruser");
            let reply = if user.is_empty() {
                self.ask(&[b"AUTH", pass.as_bytes()])?
            } else {
                self.ask(&[b"AUTH", user.as_bytes(), pass.as_bytes()])?
            };
            let Some(reply) = reply else { return Ok(()) };
            if reply.starts_with('-') {
                return Err(format!("Unable to AUTH to MASTER: {reply}"));
            }
        }
        let announced = self.e.config.get_i64("replica-announce-port");
        let port_here = if announced > 0 {
            announced as u64
        } else {
            self.e.tcp_port.load(Ordering::Relaxed)
        };
        let port_here = port_here.to_string();
        if let Some(r) = self.ask(&[b"REPLCONF", b"listening-port", port_here.as_bytes()])? {
            if r.starts_with('-') {
                log_notice(&format!(
                    "(Non critical) Master does not understand REPLCONF listening-port: {r}"
                ));
            }
        } else {
            return Ok(());
        }
        let ip = self.e.config.get("replica-announce-ip");
        if !ip.is_empty()
            && self
                .ask(&[b"REPLCONF", b"ip-address", ip.as_bytes()])?
                .is_none()
        {
            return Ok(());
        }
        if self
            .ask(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])?
            .is_none()
        {
            return Ok(());
        }
        let (replid, offset) = self.e.repl.history();
        let next = (offset + 1).to_string();
        self.send(&[b"PSYNC", replid.as_bytes(), next.as_bytes()])?;
        log_notice(&format!(
            "Trying a partial resynchronization (request {replid}:{next})."
        ));
        let reply = loop {
            match self.line()? {
                None => return Ok(()),
                Some(l) if l.is_empty() => continue,
                Some(l) => break l,
            }
        };
        let backlog = self.e.config.get_i64("repl-backlog-size").max(1) as usize;
        if let Some(rest) = reply.strip_prefix("+FULLRESYNC ") {
            let mut words = rest.split_whitespace();
            let id = words.next().unwrap_or_default().to_string();
            let off: u64 = words
                .next()
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| format!("Bad FULLRESYNC reply from MASTER: '{reply}'"))?;
            log_notice(&format!("Full resync from master: {id}:{off}"));
            if !self.full_sync(&id, off, backlog)? {
                return Ok(());
            }
        } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
            let id = rest.trim();
            let id = if id.is_empty() { replid.as_str() } else { id };
            log_notice("Successful partial resynchronization with master.");
            self.e.repl.follow_continue(id, backlog);
            log_notice("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
        } else {
            return Err(format!("Unexpected reply to PSYNC from master: {reply}"));
        }
        self.stream(laddr, host, port)
    }

    /// Receive the snapshot, save it as `dbfilename` and load it. False
    /// when the link is no longer wanted.
    fn full_sync(&mut self, replid: &str, offset: u64, backlog: usize) -> Res<bool> {
        let f = &self.e.follow;
        f.set_state(LinkState::Sync);
        f.sync_read.store(0, Ordering::Relaxed);
        f.sync_started_ms.store(self.e.now_ms(), Ordering::Relaxed);
        let header = loop {
            match self.line()? {
                None => return Ok(false),
                Some(l) if l.is_empty() => continue,
                Some(l) => break l,
            }
        };
        let mark = match header.strip_prefix("$EOF:") {
            Some(m) if m.len() == 40 => Some(m.as_bytes().to_vec()),
            Some(_) => return Err(format!("Bad EOF mark from MASTER: '{header}'")),
            None => None,
        };
        let length = match mark {
            Some(_) => None,
            None => Some(
                header
                    .strip_prefix('$')
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or_else(|| {
                        format!("Bad protocol from MASTER, the first byte is not '$': '{header}'")
                    })?,
            ),
        };
        f.sync_total
            .store(length.map_or(-1, |n| n as i64), Ordering::Relaxed);
        log_notice(&format!(
            "MASTER <-> REPLICA sync: receiving {}",
            length.map_or(
                "streamed RDB from master with EOF to disk".to_string(),
                |n| { format!("{n} bytes from master to disk") }
            )
        ));
        let dest = keel_engine::persistence::snapshot::rdb_path(self.e);
        let tmp = dest.with_file_name(format!(
            "temp-{}.{}.rdb",
            self.e.now_ms() / 1000,
            std::process::id()
        ));
        let mut file = std::fs::File::create(&tmp).map_err(|e| {
            format!("Opening the temp file needed for MASTER <-> REPLICA synchronization: {e}")
        })?;
        let received = self.receive(&mut file, length, mark.as_deref());
        let outcome = received.and_then(|whole| {
            if whole {
                file.sync_all()
                    .map_err(|e| format!("Failed trying to sync the temp DB to disk: {e}"))?;
            }
            Ok(whole)
        });
        drop(file);
        if outcome != Ok(true) {
            // A snapshot cut short (the link dropped, REPLICAOF changed) or
            // not written whole is thrown away; the dataset is untouched.
            let _ = std::fs::remove_file(&tmp);
            return outcome;
        }
        std::fs::rename(&tmp, &dest).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!(
                "Failed trying to rename the temp DB into {}: {e}",
                dest.display()
            )
        })?;
        log_notice("MASTER <-> REPLICA sync: Flushing old data");
        log_notice("MASTER <-> REPLICA sync: Loading DB in memory");
        let loaded = keel_engine::replication::load_full_sync(self.e, &dest).map_err(|why| {
            format!("Failed trying to load the MASTER synchronization DB from disk: {why}")
        })?;
        for id in self.e.repl.follow_full(replid, offset, backlog) {
            if let Some(h) = self.e.clients.lock().get(&id) {
                h.kill();
            }
        }
        self.e.follow.read_offset.store(offset, Ordering::Relaxed);
        self.e.follow.stream_db.store(0, Ordering::Relaxed);
        if self.e.persist.aof.on() {
            // The AOF has the old dataset: a rewrite gives it the new one.
            self.e
                .persist
                .rewrite_scheduled
                .store(true, Ordering::Relaxed);
        }
        log_notice(&format!(
            "MASTER <-> REPLICA sync: Finished with success ({} keys)",
            loaded.keys
        ));
        Ok(true)
    }

    /// Copy the snapshot from the link into `file`: `length` bytes, or up
    /// to the EOF `mark`. False when the link is no longer wanted.
    fn receive(
        &mut self,
        file: &mut std::fs::File,
        length: Option<u64>,
        mark: Option<&[u8]>,
    ) -> Res<bool> {
        let mut got: u64 = 0;
        let write = |file: &mut std::fs::File, data: &[u8]| {
            file.write_all(data)
                .map_err(|e| format!("Write error writing the temp DB to disk: {e}"))
        };
        loop {
            match (length, mark) {
                (Some(n), _) => {
                    let take = (self.buf.len() as u64).min(n - got) as usize;
                    let data = self.buf.split_to(take);
                    write(file, &data)?;
                    got += take as u64;
                    if got == n {
                        return Ok(true);
                    }
                }
                (None, Some(m)) => {
                    if self.buf.len() >= m.len() && self.buf.ends_with(m) {
                        let data = self.buf.split_to(self.buf.len() - m.len());
                        self.buf.clear();
                        write(file, &data)?;
                        return Ok(true);
                    }
                    // Hold back what could be the start of the mark.
                    let keep = m.len().min(self.buf.len());
                    let data = self.buf.split_to(self.buf.len() - keep);
                    got += data.len() as u64;
                    write(file, &data)?;
                }
                (None, None) => return Err("a snapshot has a length or a mark".into()),
            }
            self.e.follow.sync_read.store(got, Ordering::Relaxed);
            if !self.fill(false)? {
                return Ok(false);
            }
        }
    }

    fn ack(&mut self) -> Res<()> {
        let off = self.e.repl.offset().to_string();
        self.send(&[b"REPLCONF", b"ACK", off.as_bytes()])
    }

    /// Apply the master's stream until the link drops or is no longer wanted.
    fn stream(&mut self, laddr: String, host: &str, port: u16) -> Res<()> {
        let e = self.e;
        let mut session = e.master_session(format!("{host}:{port}"), laddr);
        // The stream goes on in the database it was in (0 after a full sync).
        session.db = e.follow.stream_db.load(Ordering::Relaxed) as usize;
        let result = self.apply(&mut session);
        e.disconnect(&mut session);
        result
    }

    fn apply(&mut self, session: &mut keel_engine::session::Session) -> Res<()> {
        let e = self.e;
        e.follow.set_state(LinkState::Connected);
        self.ack()?;
        let mut acked = Instant::now();
        let limits = keel_resp::RequestLimits::default();
        let mut batch: Vec<(Vec<Bytes>, Bytes)> = Vec::new();
        loop {
            loop {
                // What is read is parsed first and the keys hinted, so the
                // commands' cache misses overlap as a pipeline's do.
                while batch.len() < 64 {
                    let req = keel_resp::parse_request(&self.buf, &limits)
                        .map_err(|err| format!("Protocol error from MASTER: {err}"))?;
                    let Some(req) = req else { break };
                    // The request's bytes as read go on to this server's
                    // backlog and replicas (a newline keepalive too: it counts
                    // in the offset, as Redis counts it).
                    batch.push(match req {
                        keel_resp::Request::Ranges { args, consumed } => {
                            let raw = self.buf.split_to(consumed).freeze();
                            let argv = args.iter().map(|&(a, b)| raw.slice(a..b)).collect();
                            (argv, raw)
                        }
                        keel_resp::Request::Owned { args, consumed } => {
                            let raw = self.buf.split_to(consumed).freeze();
                            (args.into_iter().map(Bytes::from).collect(), raw)
                        }
                    });
                }
                if batch.is_empty() {
                    break;
                }
                for (argv, _) in &batch {
                    e.prefetch(session, argv);
                }
                let mut tick = keel_engine::clock::Tick::new(&*e.clock);
                for (argv, raw) in batch.drain(..) {
                    let getack = argv.len() >= 2
                        && argv[0].eq_ignore_ascii_case(b"REPLCONF")
                        && argv[1].eq_ignore_ascii_case(b"GETACK");
                    if getack {
                        // The offset before the GETACK, as Redis's replica answers.
                        self.ack()?;
                        acked = Instant::now();
                    }
                    // The executor feeds the bytes on under the command's
                    // locks (see `Session::upstream_raw`); a transaction's go
                    // on whole at its EXEC, as a Redis replica proxies them.
                    session.upstream_raw.push(raw);
                    if !getack && !argv.is_empty() {
                        e.execute_with(session, &argv, &mut tick, None);
                    }
                    if session.multi.is_none() && !session.upstream_raw.is_empty() {
                        // What ran nothing under a lock (PING, SELECT, an error).
                        let held = std::mem::take(&mut session.upstream_raw);
                        e.repl.feed_raw(&held);
                    }
                    e.follow
                        .stream_db
                        .store(session.db as u64, Ordering::Relaxed);
                }
            }
            e.follow
                .read_offset
                .store(e.repl.offset() + self.buf.len() as u64, Ordering::Relaxed);
            if acked.elapsed() >= Duration::from_secs(1) {
                self.ack()?;
                acked = Instant::now();
            }
            if !self.fill(true)? {
                return Ok(());
            }
            if session.handle.is_killed() {
                // CLIENT KILL TYPE master: reconnect, as Redis does.
                return Err("Connection with master lost.".into());
            }
        }
    }
}
