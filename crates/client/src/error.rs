//! Client errors: one enum, each variant saying what went wrong in plain words.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    /// The server answered with an error reply (`-ERR ...`); the text is verbatim.
    #[error("server error: {0}")]
    Server(String),
    #[error("connection to {addr} refused or failed: {reason}")]
    Connect { addr: String, reason: String },
    /// The connection broke while the request was queued or in flight.
    #[error("connection lost before the reply arrived: {0}")]
    Disconnected(String),
    #[error("no reply within {0:?}")]
    Timeout(std::time::Duration),
    #[error("protocol violation from the server: {0}")]
    Protocol(String),
    #[error("invalid URL: {0}")]
    Url(String),
    /// A reply of a type the typed method cannot turn into its result.
    #[error("unexpected reply: {0}")]
    UnexpectedReply(String),
}

pub type Result<T> = std::result::Result<T, Error>;
