//! Fuzz the server's request parser with what a client might send.
//!
//! Properties: it never panics; every request it reports lies inside the buffer
//! and uses at least one byte; a complete request is never reported from a
//! strict prefix of its bytes (so arrival in pieces cannot change the result);
//! and the arguments, re-encoded as a multibulk, parse back to the same
//! arguments using exactly the re-encoded bytes.

#![no_main]

use keel_resp::{parse_request, Request, RequestLimits};
use libfuzzer_sys::fuzz_target;

/// Above this many bytes only a few prefixes are tried, keeping each run linear-ish.
const ALL_PREFIXES_UP_TO: usize = 512;

fn args_of(buf: &[u8], req: Request) -> (Vec<Vec<u8>>, usize) {
    match req {
        Request::Ranges { args, consumed } => {
            assert!(consumed > 0 && consumed <= buf.len());
            let args = args
                .iter()
                .map(|&(s, e)| {
                    assert!(s <= e && e <= consumed, "range {s}..{e} past {consumed}");
                    buf[s..e].to_vec()
                })
                .collect();
            (args, consumed)
        }
        Request::Owned { args, consumed } => {
            assert!(consumed > 0 && consumed <= buf.len());
            (args, consumed)
        }
    }
}

fn multibulk(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn check_prefixes(buf: &[u8], consumed: usize, limits: &RequestLimits) {
    let cuts: Vec<usize> = if consumed <= ALL_PREFIXES_UP_TO {
        (0..consumed).collect()
    } else {
        vec![0, 1, consumed / 3, consumed / 2, consumed - 2, consumed - 1]
    };
    for cut in cuts {
        let got = parse_request(&buf[..cut], limits);
        assert!(
            matches!(got, Ok(None)),
            "prefix of {cut} of a {consumed}-byte request gave {got:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let limits = RequestLimits::default();
    // Walk the buffer the way the connection loop does: request after request
    // until one is incomplete or malformed.
    let mut rest = data;
    while let Ok(Some(req)) = parse_request(rest, &limits) {
        let (args, consumed) = args_of(rest, req);
        check_prefixes(rest, consumed, &limits);

        let again = multibulk(&args);
        match parse_request(&again, &limits) {
            Ok(Some(req)) => {
                let (args2, consumed2) = args_of(&again, req);
                assert_eq!(args2, args);
                assert_eq!(consumed2, again.len());
            }
            other => panic!("re-encoded {args:?} parsed as {other:?}"),
        }
        rest = &rest[consumed..];
    }
});
