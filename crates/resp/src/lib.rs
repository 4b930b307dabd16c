//! RESP2/RESP3 codec for Keel.
//!
//! Owns the wire format only: parsing client requests (multibulk or inline) out of a
//! read buffer, parsing any RESP2/RESP3 frame (for clients and tests), and encoding
//! replies for either protocol version. Depends on `bytes` alone: no I/O, no server
//! state, no knowledge of commands.
//!
//! Invariants: a parser never allocates more than the bytes already received justify
//! (claimed lengths are checked against limits before any buffer is reserved), never
//! panics on any input, and reports "incomplete" rather than guessing.

mod decode;
mod encode;
mod frame;
mod request;

pub use decode::{frame_len, parse_frame, FrameError};
pub use encode::{encode, encode_command, encode_double, put_bulk, BulkArray, Protocol};
pub use frame::Frame;
pub use request::{
    parse_request, parse_request_into, parse_request_resuming, split_args, Parsed, Progress,
    ProtocolError, Request, RequestLimits, MAX_INLINE_BYTES, MAX_MULTIBULK_LEN,
};
