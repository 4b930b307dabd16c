//! Test helpers: run commands against an engine with a manual clock, no sockets.
//! The kernel serves no command of its own: whoever tests builds the engine
//! with the command table and families it needs (the server's
//! `keel_server::testing` wraps this with every family).

use crate::clock::ManualClock;
use crate::engine::EngineBuilder;
use crate::families::Families;
use crate::kernel::CommandTable;
use crate::kernel::Engine;
use crate::session::Session;
use bytes::Bytes;
use keel_resp::Frame;
use std::sync::Arc;

pub struct TestEngine {
    pub engine: Engine,
    pub clock: Arc<ManualClock>,
    pub session: Session,
}

impl TestEngine {
    /// An engine serving `commands`, its clock at 1,700,000,000,000 ms.
    pub fn with_commands(commands: CommandTable, families: Box<dyn Families>) -> TestEngine {
        TestEngine::build(1_700_000_000_000, None, commands, families)
    }

    /// An engine whose effect log is kept in the returned recorder, with the
    /// clock starting at `start_ms`.
    pub fn recording_with(
        start_ms: u64,
        commands: CommandTable,
        families: Box<dyn Families>,
    ) -> (TestEngine, Arc<Recorder>) {
        let rec = Arc::new(Recorder::default());
        (
            TestEngine::build(start_ms, Some(rec.clone()), commands, families),
            rec,
        )
    }

    fn build(
        start_ms: u64,
        sink: Option<Arc<Recorder>>,
        commands: CommandTable,
        families: Box<dyn Families>,
    ) -> TestEngine {
        let clock = Arc::new(ManualClock::new(start_ms));
        let b = EngineBuilder {
            commands,
            families,
            clock: clock.clone(),
            sink: sink.map(|r| r as Arc<dyn crate::kernel::EffectSink>),
            ..EngineBuilder::default()
        };
        b.config
            .set("enable-debug-command", &["yes"], true)
            .expect("valid directive");
        // No save points: a unit test must not write dump.rdb (FLUSHALL and
        // SHUTDOWN save when they are set).
        b.config.set("save", &[""], true).expect("valid directive");
        let engine = b.build();
        let session = engine.connect("127.0.0.1:1".into(), "127.0.0.1:6379".into());
        TestEngine {
            engine,
            clock,
            session,
        }
    }

    /// Run one command on the test session.
    pub fn run(&mut self, argv: &[&str]) -> Frame {
        let argv: Vec<Bytes> = argv
            .iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        decoded(self.engine.execute(&mut self.session, argv))
    }

    /// A second session on the same engine.
    pub fn other_session(&self) -> Session {
        self.engine
            .connect("127.0.0.1:2".into(), "127.0.0.1:6379".into())
    }

    /// Whether `argv`, sent by another session, finishes within 300 ms while
    /// `guard` (a shard lock the test holds) is held. A command that waits
    /// must finish once the guard is dropped.
    pub fn finishes_while_held<G>(&self, guard: G, argv: &[&str]) -> bool {
        use std::time::Duration;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut session = self.other_session();
                let _ = tx.send(self.run_as(&mut session, argv));
            });
            let done = rx.recv_timeout(Duration::from_millis(300)).is_ok();
            drop(guard);
            if !done {
                rx.recv_timeout(Duration::from_secs(10))
                    .expect("finishes once unlocked");
            }
            done
        })
    }

    pub fn run_as(&self, session: &mut Session, argv: &[&str]) -> Frame {
        let argv: Vec<Bytes> = argv
            .iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        decoded(self.engine.execute(session, argv))
    }
}

/// The reply as a client would read it: pre-encoded parts (`Frame::Encoded`)
/// parsed back into frames, so tests compare structures, not encodings. An
/// empty encoding is no reply at all (a second MONITOR, CLIENT REPLY OFF) and
/// stays as it is. A reply of several frames (SUBSCRIBE's confirmations, one
/// per channel) comes back as an array of them.
pub fn decoded(f: Frame) -> Frame {
    match f {
        Frame::Encoded(raw) if raw.is_empty() => Frame::Encoded(raw),
        Frame::Encoded(raw) => {
            let mut frames = Vec::new();
            let mut at = 0;
            while at < raw.len() {
                match keel_resp::parse_frame(&raw.slice(at..)) {
                    Ok(Some((frame, n))) => {
                        frames.push(frame);
                        at += n;
                    }
                    other => panic!("an encoded reply must hold whole frames: {other:?}"),
                }
            }
            if frames.len() == 1 {
                frames.pop().unwrap_or(Frame::Null)
            } else {
                Frame::Array(frames)
            }
        }
        Frame::Array(items) => Frame::Array(items.into_iter().map(decoded).collect()),
        Frame::Set(items) => Frame::Set(items.into_iter().map(decoded).collect()),
        Frame::Push(items) => Frame::Push(items.into_iter().map(decoded).collect()),
        Frame::Map(pairs) => Frame::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (decoded(k), decoded(v)))
                .collect(),
        ),
        other => other,
    }
}

pub fn bulk(s: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

#[allow(dead_code)]
pub fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

pub fn ok() -> Frame {
    Frame::ok()
}

pub fn error(s: &str) -> Frame {
    Frame::Error(Bytes::copy_from_slice(s.as_bytes()))
}

/// An effect log that keeps what it is given, for tests of what a command
/// logs (see [`TestEngine::recording`]).
#[derive(Default)]
pub struct Recorder(parking_lot::Mutex<Vec<(usize, Vec<String>)>>);

impl crate::kernel::EffectSink for Recorder {
    fn append(&self, db: usize, argv: &[Bytes]) {
        let argv = argv
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        self.0.lock().push((db, argv));
    }
}

impl Recorder {
    /// Every logged command, with the database it was logged for.
    pub fn entries(&self) -> Vec<(usize, Vec<String>)> {
        self.0.lock().clone()
    }

    /// Every logged command.
    pub fn commands(&self) -> Vec<Vec<String>> {
        self.0.lock().iter().map(|(_, a)| a.clone()).collect()
    }
}
