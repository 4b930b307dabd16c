//! Fuzz the general RESP2/RESP3 frame parser that clients and tests use.
//!
//! Properties: it never panics, reports a length inside the buffer, and for a
//! frame that parses, encoding it as RESP3 and parsing again gives the same
//! frame. A few things the wire cannot carry are compared in canonical form:
//! RESP3 has one null (so a null array comes back as a null), line replies
//! carry no CR or LF (the encoder turns them into spaces, which matters for
//! `!` blob errors), and NaN equals NaN.

#![no_main]

use bytes::{Bytes, BytesMut};
use keel_resp::{encode, parse_frame, Frame, Protocol};
use libfuzzer_sys::fuzz_target;

fn no_crlf(b: &Bytes) -> Bytes {
    Bytes::from(
        b.iter()
            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
            .collect::<Vec<u8>>(),
    )
}

fn canonical(f: &Frame) -> Frame {
    match f {
        Frame::NullArray => Frame::Null,
        Frame::Simple(s) => Frame::Simple(no_crlf(s)),
        Frame::Error(s) => Frame::Error(no_crlf(s)),
        Frame::Array(v) => Frame::Array(v.iter().map(canonical).collect()),
        Frame::Set(v) => Frame::Set(v.iter().map(canonical).collect()),
        Frame::Push(v) => Frame::Push(v.iter().map(canonical).collect()),
        Frame::Map(v) => Frame::Map(
            v.iter()
                .map(|(k, x)| (canonical(k), canonical(x)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn same(a: &Frame, b: &Frame) -> bool {
    match (a, b) {
        (Frame::Double(x), Frame::Double(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Frame::Array(x), Frame::Array(y))
        | (Frame::Set(x), Frame::Set(y))
        | (Frame::Push(x), Frame::Push(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Frame::Map(x), Frame::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| same(k1, k2) && same(v1, v2))
        }
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let buf = Bytes::copy_from_slice(data);
    let Ok(Some((frame, used))) = parse_frame(&buf) else {
        return;
    };
    assert!(used > 0 && used <= buf.len());

    let mut out = BytesMut::new();
    encode(&frame, Protocol::Resp3, &mut out);
    let wire = out.freeze();
    match parse_frame(&wire) {
        Ok(Some((back, used2))) => {
            let want = canonical(&frame);
            assert!(same(&back, &want), "{frame:?} came back as {back:?}");
            assert_eq!(used2, wire.len());
        }
        other => panic!("{frame:?} encoded as {wire:?} parsed as {other:?}"),
    }

    // Encoding for RESP2 must not panic either, whatever the frame holds.
    let mut out2 = BytesMut::new();
    encode(&frame, Protocol::Resp2, &mut out2);
});
