//! The keel-server library: the command table assembled from every family
//! crate, and a test engine serving it. The binary (`main.rs`) adds the
//! listener, the connection loop and configuration loading.
//!
//! Owns: the full list of families; nothing else names it. Must not: hold
//! command behaviour, which lives in the families and the kernel.

pub mod families;
pub mod testing;
