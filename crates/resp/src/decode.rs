//! General RESP2/RESP3 frame parsing, used by clients and tests to read replies.

use crate::frame::Frame;
use crate::request::parse_i64;
use bytes::Bytes;
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    #[error("invalid frame type byte {0:#04x}")]
    BadType(u8),
    #[error("invalid length or integer")]
    BadInteger,
    #[error("invalid double")]
    BadDouble,
    #[error("missing CRLF after bulk payload")]
    MissingCrlf,
    #[error("frames nested too deeply")]
    TooDeep,
}

const MAX_DEPTH: usize = 64;

/// Parse one frame from the front of `buf`; `Ok(None)` when incomplete. Returns
/// the frame and the number of bytes it used.
pub fn parse_frame(buf: &Bytes) -> Result<Option<(Frame, usize)>, FrameError> {
    let mut pos = 0;
    match parse_at(buf, &mut pos, 0)? {
        Some(f) => Ok(Some((f, pos))),
        None => Ok(None),
    }
}

/// The length of the first complete frame in `buf`, without building it:
/// `Ok(None)` when the frame is incomplete. A reader uses it to cut complete
/// replies off its buffer and leave a partial one in place, so a large reply
/// arriving over many reads is neither copied nor parsed again on each read;
/// a load generator uses it to count replies it never needs to build. Only
/// lengths are checked: a malformed line inside a complete frame is left for
/// `parse_frame` to reject. RESP3 attributes (`|`) count with the frame they
/// precede.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, FrameError> {
    let mut pos = 0;
    // Frames still to skip; aggregates add their elements instead of recursing.
    let mut pending: usize = 1;
    while pending > 0 {
        let Some(&t) = buf.get(pos) else {
            return Ok(None);
        };
        let Some(eol) = find_crlf(buf, pos + 1) else {
            return Ok(None);
        };
        let l = &buf[pos + 1..eol];
        pos = eol + 2;
        pending -= 1;
        match t {
            b'+' | b'-' | b'_' | b'#' | b'(' | b':' | b',' => {}
            b'$' | b'=' | b'!' => {
                let n = int_of(l)?;
                if n >= 0 {
                    let end = pos.saturating_add(n as usize);
                    let Some(crlf) = buf.get(end..end.saturating_add(2)) else {
                        return Ok(None);
                    };
                    if crlf != b"\r\n" {
                        return Err(FrameError::MissingCrlf);
                    }
                    pos = end + 2;
                }
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let n = usize::try_from(int_of(l)?).unwrap_or(0);
                let items = match t {
                    b'%' => n.saturating_mul(2),
                    b'|' => n.saturating_mul(2).saturating_add(1),
                    _ => n,
                };
                pending = pending.saturating_add(items);
            }
            other => return Err(FrameError::BadType(other)),
        }
    }
    Ok(Some(pos))
}

/// Index of the next CRLF at or after `from`.
fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        let cr = at + buf.get(at..)?.iter().position(|&b| b == b'\r')?;
        match buf.get(cr + 1) {
            Some(b'\n') => return Some(cr),
            Some(_) => at = cr + 1,
            None => return None,
        }
    }
}

fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let eol = find_crlf(buf, *pos)?;
    let l = buf.get(*pos..eol)?;
    *pos = eol + 2;
    Some(l)
}

fn int_of(l: &[u8]) -> Result<i64, FrameError> {
    parse_i64(l).ok_or(FrameError::BadInteger)
}

fn parse_at(buf: &Bytes, pos: &mut usize, depth: usize) -> Result<Option<Frame>, FrameError> {
    if depth > MAX_DEPTH {
        return Err(FrameError::TooDeep);
    }
    let Some(&t) = buf.get(*pos) else {
        return Ok(None);
    };
    let start = *pos;
    *pos += 1;
    let Some(l) = line(buf, pos) else {
        *pos = start;
        return Ok(None);
    };
    let l_start = start + 1;
    let l_bytes = || buf.slice(l_start..l_start + l.len());
    let frame = match t {
        b'+' => Frame::Simple(l_bytes()),
        b'-' => Frame::Error(l_bytes()),
        b':' => Frame::Integer(int_of(l)?),
        b'_' => Frame::Null,
        b'#' => Frame::Boolean(l == b"t"),
        b',' => {
            let s = std::str::from_utf8(l).map_err(|_| FrameError::BadDouble)?;
            Frame::Double(match s {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                _ => s.parse().map_err(|_| FrameError::BadDouble)?,
            })
        }
        b'(' => Frame::BigNumber(l_bytes()),
        b'$' | b'=' | b'!' => {
            let n = int_of(l)?;
            if n < 0 {
                return Ok(Some(Frame::Null));
            }
            let n = n as usize;
            let s = *pos;
            if buf.len() < s + n + 2 {
                *pos = start;
                return Ok(None);
            }
            if &buf[s + n..s + n + 2] != b"\r\n" {
                return Err(FrameError::MissingCrlf);
            }
            *pos = s + n + 2;
            let data = buf.slice(s..s + n);
            match t {
                b'=' if n >= 4 => Frame::Verbatim("txt", data.slice(4..)),
                b'!' => Frame::Error(data),
                _ => Frame::Bulk(data),
            }
        }
        b'*' | b'~' | b'>' | b'%' => {
            let n = int_of(l)?;
            if n < 0 {
                return Ok(Some(Frame::NullArray));
            }
            let n = n as usize;
            let count = if t == b'%' { n.saturating_mul(2) } else { n };
            let mut items = Vec::with_capacity(count.min(buf.len() - *pos));
            for _ in 0..count {
                match parse_at(buf, pos, depth + 1)? {
                    Some(f) => items.push(f),
                    None => {
                        *pos = start;
                        return Ok(None);
                    }
                }
            }
            match t {
                b'*' => Frame::Array(items),
                b'~' => Frame::Set(items),
                b'>' => Frame::Push(items),
                _ => {
                    let mut pairs = Vec::with_capacity(n);
                    let mut it = items.into_iter();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        pairs.push((k, v));
                    }
                    Frame::Map(pairs)
                }
            }
        }
        other => return Err(FrameError::BadType(other)),
    };
    Ok(Some(frame))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::{encode, Protocol};
    use bytes::BytesMut;
    use proptest::prelude::*;

    fn arb_frame() -> impl Strategy<Value = Frame> {
        let leaf = prop_oneof![
            "[a-zA-Z0-9 ]{0,12}".prop_map(|s| Frame::Simple(Bytes::from(s))),
            "[a-zA-Z0-9 ]{0,12}".prop_map(|s| Frame::Error(Bytes::from(s))),
            any::<i64>().prop_map(Frame::Integer),
            proptest::collection::vec(any::<u8>(), 0..32).prop_map(|v| Frame::Bulk(Bytes::from(v))),
            Just(Frame::Null),
            any::<bool>().prop_map(Frame::Boolean),
            (-1e9f64..1e9).prop_map(Frame::Double),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Array),
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Set),
                proptest::collection::vec((inner.clone(), inner), 0..4).prop_map(Frame::Map),
            ]
        })
    }

    #[test]
    fn frame_len_handles_nesting_nulls_and_bad_input() {
        let r = b"*2\r\n*-1\r\n%1\r\n+k\r\n$-1\r\n:9\r\n";
        assert_eq!(frame_len(r), Ok(Some(r.len() - 4)));
        assert_eq!(frame_len(b"|1\r\n+a\r\n+b\r\n:1\r\n"), Ok(Some(16)));
        assert_eq!(frame_len(b"$3\r\nabcXY"), Err(FrameError::MissingCrlf));
        assert_eq!(frame_len(b"?\r\n"), Err(FrameError::BadType(b'?')));
        assert_eq!(frame_len(b"$x\r\n"), Err(FrameError::BadInteger));
        assert_eq!(frame_len(b"+a\rb\r\n"), Ok(Some(6)));
    }

    proptest! {
        #[test]
        fn resp3_roundtrip(f in arb_frame()) {
            let mut out = BytesMut::new();
            encode(&f, Protocol::Resp3, &mut out);
            let bytes = out.freeze();
            let (back, used) = parse_frame(&bytes).expect("valid").expect("complete");
            prop_assert_eq!(used, bytes.len());
            // Doubles go through %.17g, which round-trips exactly.
            prop_assert_eq!(back, f);
            prop_assert_eq!(frame_len(&bytes), Ok(Some(used)));
            for cut in 0..bytes.len() {
                prop_assert_eq!(parse_frame(&bytes.slice(..cut)), Ok(None));
                prop_assert_eq!(frame_len(&bytes[..cut]), Ok(None));
            }
        }

        #[test]
        fn attributes_count_with_their_frame(n in 0usize..3) {
            let mut attr = format!("|{n}\r\n");
            for i in 0..n {
                attr.push_str(&format!("+k{i}\r\n:{i}\r\n"));
            }
            let whole = format!("{attr}$3\r\nabc\r\n");
            prop_assert_eq!(frame_len(format!("{whole}+next\r\n").as_bytes()), Ok(Some(whole.len())));
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..128)) {
            let bytes = Bytes::from(data);
            // Where the parser finds a whole frame, the skipper finds the same end.
            if let Ok(Some((_, used))) = parse_frame(&bytes) {
                prop_assert_eq!(frame_len(&bytes), Ok(Some(used)));
            }
        }
    }
}
