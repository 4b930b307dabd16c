//! The version Keel speaks as.

/// The Redis version Keel reports to clients (HELLO and INFO alike): the release
/// whose replies and errors Keel matches. Keel also accepts the 7.2 additions
/// CLIENT SETINFO and NO-TOUCH, which clients send without checking the version.
pub const REDIS_VERSION: &str = "7.0.15";
