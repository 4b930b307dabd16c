//! The kernel's test engine, with every family's commands.

#[allow(unused_imports)]
pub use keel_engine::testing::*;
pub use keel_server::testing::{Assembled, TestEngine};
