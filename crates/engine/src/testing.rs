//! Test helpers: run commands against an engine with a manual clock, no sockets.

use crate::clock::ManualClock;
use crate::engine::{Engine, EngineBuilder};
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
    pub fn new() -> TestEngine {
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let b = EngineBuilder {
            clock: clock.clone(),
            ..EngineBuilder::default()
        };
        b.config
            .set("enable-debug-command", &["yes"], true)
            .expect("valid directive");
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
        self.engine.execute(&mut self.session, argv)
    }

    /// A second session on the same engine.
    pub fn other_session(&self) -> Session {
        self.engine
            .connect("127.0.0.1:2".into(), "127.0.0.1:6379".into())
    }

    pub fn run_as(&self, session: &mut Session, argv: &[&str]) -> Frame {
        let argv: Vec<Bytes> = argv
            .iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        self.engine.execute(session, argv)
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
