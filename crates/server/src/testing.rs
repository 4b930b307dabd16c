//! The kernel's test engine serving every family's commands: what the
//! families' unit tests and the kernel's behaviour tests run against.
//! `TestEngine::new()` and `TestEngine::recording(start_ms)` come from
//! [`Assembled`].

use crate::families::{table, AllFamilies};
use keel_engine::testing::Recorder;
pub use keel_engine::testing::TestEngine;
use std::sync::Arc;

/// The constructors of a test engine with every family.
pub trait Assembled: Sized {
    fn new() -> Self;
    /// An engine whose effect log is kept in the returned recorder, with the
    /// clock starting at `start_ms`.
    fn recording(start_ms: u64) -> (Self, Arc<Recorder>);
}

impl Assembled for TestEngine {
    fn new() -> TestEngine {
        TestEngine::with_commands(table(), Box::new(AllFamilies))
    }

    fn recording(start_ms: u64) -> (TestEngine, Arc<Recorder>) {
        TestEngine::recording_with(start_ms, table(), Box::new(AllFamilies))
    }
}
