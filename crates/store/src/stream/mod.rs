//! The stream type: entries with ids, stored compactly, and consumer groups.

pub mod groups;
pub mod id;

pub use groups::{Consumer, Group, Groups, Pending};
pub use id::StreamId;
