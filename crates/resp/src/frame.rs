//! The value model shared by replies and parsed frames.

use bytes::Bytes;

/// One RESP value. RESP3-only types are downgraded by the encoder when the
/// connection speaks RESP2 (maps become flat arrays, doubles become bulk strings,
/// booleans become integers, sets become arrays).
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// `+OK`
    Simple(Bytes),
    /// `-ERR ...`: the text after the dash, including the error code.
    Error(Bytes),
    Integer(i64),
    Bulk(Bytes),
    /// A missing bulk string: `$-1` in RESP2, `_` in RESP3.
    Null,
    /// A missing array: `*-1` in RESP2, `_` in RESP3.
    NullArray,
    Array(Vec<Frame>),
    /// RESP3 map; a flat array of key, value, key, value in RESP2.
    Map(Vec<(Frame, Frame)>),
    /// RESP3 set; an array in RESP2.
    Set(Vec<Frame>),
    /// RESP3 double; a bulk string in RESP2.
    Double(f64),
    /// RESP3 boolean; the integer 1 or 0 in RESP2.
    Boolean(bool),
    /// RESP3 verbatim string with its three-letter format; a bulk string in RESP2.
    Verbatim(&'static str, Bytes),
    /// RESP3 big number; a bulk string in RESP2.
    BigNumber(Bytes),
    /// RESP3 push; an array in RESP2.
    Push(Vec<Frame>),
    /// A reply already encoded, valid as is in RESP2 and RESP3 (see
    /// `BulkArray`). The parser never produces it.
    Encoded(Bytes),
}

impl Frame {
    pub fn ok() -> Frame {
        Frame::Simple(Bytes::from_static(b"OK"))
    }

    pub fn simple(s: &'static str) -> Frame {
        Frame::Simple(Bytes::from_static(s.as_bytes()))
    }

    pub fn error(text: impl Into<String>) -> Frame {
        Frame::Error(Bytes::from(text.into()))
    }

    pub fn bulk(b: impl Into<Bytes>) -> Frame {
        Frame::Bulk(b.into())
    }

    pub fn bulk_from_slice(b: &[u8]) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(b))
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_))
    }
}
