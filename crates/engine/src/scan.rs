//! The SCAN family's shared arguments and reply: the cursor, MATCH, COUNT
//! and TYPE options, and the `[cursor, items]` reply of SCAN, HSCAN, SSCAN and
//! ZSCAN.

use crate::args::{is, parse_i64, Args};
use crate::error::CmdError;
use bytes::Bytes;
use keel_resp::Frame;

/// Parse a cursor the way Redis's `strtoul` call does: an optional sign, then
/// digits (none at all reads as 0); a minus wraps; overflow or any other byte
/// is an invalid cursor.
pub fn parse_cursor(raw: &[u8]) -> Result<u64, CmdError> {
    let invalid = || CmdError::err("invalid cursor");
    let (negative, digits) = match raw.first() {
        Some(b'-') => (true, &raw[1..]),
        Some(b'+') => (false, &raw[1..]),
        _ => (false, raw),
    };
    if digits.is_empty() && raw.len() == 1 {
        return Err(invalid());
    }
    let mut n: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return Err(invalid());
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or_else(invalid)?;
    }
    Ok(if negative { n.wrapping_neg() } else { n })
}

/// The MATCH and COUNT options of HSCAN, SSCAN and ZSCAN, in any order and
/// repeated (the last wins): a COUNT below 1 is a syntax error, as in Redis,
/// and MATCH * filters nothing.
pub fn parse_scan_options<'a>(args: &mut Args<'a>) -> Result<(usize, Option<&'a [u8]>), CmdError> {
    let o = scan_options(args, false)?;
    Ok((o.count, o.pattern))
}

/// The SCAN family's options.
pub struct ScanOptions<'a> {
    pub count: usize,
    /// `None` for no MATCH or MATCH *.
    pub pattern: Option<&'a [u8]>,
    /// SCAN's TYPE, as given.
    pub type_name: Option<&'a [u8]>,
}

/// Parse the SCAN family's options; `with_type` admits SCAN's TYPE.
pub fn scan_options<'a>(args: &mut Args<'a>, with_type: bool) -> Result<ScanOptions<'a>, CmdError> {
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut type_name: Option<&[u8]> = None;
    while let Some(opt) = args.next_opt() {
        if is(opt, "COUNT") {
            let n = parse_i64(args.next_arg()?)?;
            if n < 1 {
                return Err(CmdError::Syntax);
            }
            count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if is(opt, "MATCH") {
            let p = args.next_arg()?;
            pattern = (p.as_ref() != b"*").then_some(p.as_ref());
        } else if with_type && is(opt, "TYPE") {
            type_name = Some(args.next_arg()?.as_ref());
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok(ScanOptions {
        count,
        pattern,
        type_name,
    })
}

/// The reply of every SCAN-family command: the next cursor as a bulk string,
/// then the items found (`scan_reply(0, vec![])` for a missing key).
pub fn scan_reply(next: u64, items: Vec<Frame>) -> Frame {
    Frame::Array(vec![
        Frame::Bulk(Bytes::from(next.to_string())),
        Frame::Array(items),
    ])
}

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn cursor_parsing_matches_strtoul() {
        assert_eq!(parse_cursor(b"0"), Ok(0));
        assert_eq!(parse_cursor(b""), Ok(0));
        assert_eq!(parse_cursor(b"+7"), Ok(7));
        assert_eq!(parse_cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Ok(u64::MAX));
        assert!(parse_cursor(b"-").is_err());
        assert!(parse_cursor(b"1x").is_err());
    }
}
