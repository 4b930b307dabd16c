//! Command errors. Each variant's Display is the exact text Redis sends after the
//! leading `-`, written once here.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CmdError {
    #[error("ERR wrong number of arguments for '{0}' command")]
    WrongArity(String),
    #[error("ERR unknown command '{name}', with args beginning with: {args}")]
    UnknownCommand { name: String, args: String },
    #[error("ERR unknown subcommand '{sub}'. Try {cmd} HELP.")]
    UnknownSubcommand { sub: String, cmd: String },
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    #[error("ERR value is not an integer or out of range")]
    NotInteger,
    #[error("ERR value is not a valid float")]
    NotFloat,
    #[error("ERR syntax error")]
    Syntax,
    #[error("ERR increment or decrement would overflow")]
    Overflow,
    #[error("ERR no such key")]
    NoSuchKey,
    #[error("NOAUTH Authentication required.")]
    NoAuth,
    #[error("WRONGPASS invalid username-password pair or user is disabled.")]
    WrongPass,
    #[error("ERR invalid expire time in '{0}' command")]
    InvalidExpire(&'static str),
    #[error("ERR DB index is out of range")]
    DbIndexOutOfRange,
    #[error("ERR {0} is out of range")]
    OutOfRange(&'static str),
    #[error("ERR Command not allowed inside a transaction")]
    NotAllowedInMulti,
    #[error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")]
    StringTooLong,
    #[error("ERR internal error while running '{0}'; the command was aborted")]
    Internal(String),
    /// Any other error: the full text including its code (`ERR ...`, `BUSY ...`).
    #[error("{0}")]
    Other(String),
}

impl CmdError {
    pub fn msg(text: impl Into<String>) -> CmdError {
        CmdError::Other(text.into())
    }

    /// `ERR <text>`
    pub fn err(text: impl std::fmt::Display) -> CmdError {
        CmdError::Other(format!("ERR {text}"))
    }
}

/// A HyperLogLog string that is not one, as the HLL commands report it.
impl From<keel_store::hll::HllError> for CmdError {
    fn from(e: keel_store::hll::HllError) -> CmdError {
        CmdError::msg(e.to_string())
    }
}
