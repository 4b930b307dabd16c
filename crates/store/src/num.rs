//! Numeric parsing and formatting with Redis's exact rules.

/// Redis's `string2ll`: optional '-', digits, no leading zeros or spaces, in range.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        let d = i64::from(c - b'0');
        v = if neg {
            v.checked_mul(10)?.checked_sub(d)?
        } else {
            v.checked_mul(10)?.checked_add(d)?
        };
    }
    if neg && v == 0 {
        return None;
    }
    Some(v)
}

/// `strtod`'s reading of a whole argument, as Redis uses it for score ranges
/// and timeouts: a decimal or hexadecimal (`0x1.8p3`) number, or an `inf` /
/// `infinity` spelling, with no surrounding spaces; NaN is refused. A value
/// beyond the `f64` range comes back as `strtod` gives it: infinite, or zero
/// (see [`parse_f64_in_range`]).
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    read_f64(s).map(|(v, _)| v)
}

/// As [`parse_f64`], also refusing what `strtod` reports out of range (a
/// finite number too large, or a non-zero one too small, for an `f64`), as
/// Redis does for scores, increments and weights.
pub fn parse_f64_in_range(s: &[u8]) -> Option<f64> {
    match read_f64(s)? {
        (v, Reading::Finite { nonzero }) if v.is_infinite() || (v == 0.0 && nonzero) => None,
        (v, _) => Some(v),
    }
}

/// What the text of a float said, beyond its value.
enum Reading {
    Infinity,
    /// Digits, and whether any mantissa digit was non-zero.
    Finite {
        nonzero: bool,
    },
}

fn read_f64(s: &[u8]) -> Option<(f64, Reading)> {
    if s.is_empty() || s.len() > 5120 {
        return None;
    }
    if s.iter().all(|&c| c.is_ascii_digit() || c == b'.') {
        // Plain digits and points (the usual argument): what the general
        // path below reads, without its lowercase copy.
        let v: f64 = std::str::from_utf8(s).ok()?.parse().ok()?;
        let nonzero = s.iter().any(|c| matches!(c, b'1'..=b'9'));
        return Some((v, Reading::Finite { nonzero }));
    }
    let text = std::str::from_utf8(s).ok()?;
    if text.starts_with(|c: char| c.is_whitespace()) || text.ends_with(|c: char| c.is_whitespace())
    {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let (negative, body) = match lower.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, lower.strip_prefix('+').unwrap_or(&lower)),
    };
    let sign = if negative { -1.0 } else { 1.0 };
    if body == "inf" || body == "infinity" {
        return Some((sign * f64::INFINITY, Reading::Infinity));
    }
    if let Some(hex) = body.strip_prefix("0x") {
        let (v, nonzero) = parse_hex_float(hex)?;
        return Some((sign * v, Reading::Finite { nonzero }));
    }
    // Rust's parser takes "nan", "inf" and "infinity" too; only the spellings
    // above are numbers here, and only decimal digits, '.', 'e' and signs
    // belong in the rest.
    if !body
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-'))
    {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    let mantissa = body.split('e').next().unwrap_or("");
    let nonzero = mantissa.bytes().any(|c| matches!(c, b'1'..=b'9'));
    Some((v, Reading::Finite { nonzero }))
}

/// The magnitude written by a C99 hexadecimal float after its `0x`: hex
/// digits with an optional point (at least one digit), then an optional
/// binary exponent `p[+-]digits`. Returns the value, rounded to nearest, and
/// whether any digit was non-zero.
fn parse_hex_float(s: &str) -> Option<(f64, bool)> {
    let (digits, exp_text) = match s.find('p') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mut mantissa: u128 = 0;
    let mut exp2: i64 = 0;
    let (mut any, mut nonzero, mut sticky, mut after_point) = (false, false, false, false);
    for c in digits.chars() {
        if c == '.' {
            if after_point {
                return None;
            }
            after_point = true;
            continue;
        }
        let d = c.to_digit(16)?;
        any = true;
        nonzero |= d != 0;
        if mantissa >> 120 == 0 {
            mantissa = mantissa * 16 + u128::from(d);
            if after_point {
                exp2 -= 4;
            }
        } else {
            // Past 120 bits only whether anything is left matters (rounding).
            sticky |= d != 0;
            if !after_point {
                exp2 += 4;
            }
        }
    }
    if !any {
        return None;
    }
    if let Some(e) = exp_text {
        let (neg, e) = match e.as_bytes().first() {
            Some(b'-') => (true, &e[1..]),
            Some(b'+') => (false, &e[1..]),
            _ => (false, e),
        };
        if e.is_empty() || !e.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        // Anything past a few thousand is as good as infinite.
        let n: i64 = e.get(..e.len().min(7))?.parse().ok()?;
        let n = if e.len() > 7 { 10_000_000 } else { n };
        exp2 += if neg { -n } else { n };
    }
    if mantissa == 0 {
        return Some((0.0, nonzero));
    }
    // The low bit stands for every dropped digit, so the one rounding of the
    // 128-bit mantissa to 53 bits breaks ties the right way.
    let mut v = (mantissa | u128::from(sticky)) as f64;
    let mut e = exp2;
    while e > 0 {
        let step = e.min(1000);
        v *= 2f64.powi(step as i32);
        e -= step;
        if v.is_infinite() {
            break;
        }
    }
    while e < 0 {
        let step = e.max(-1000);
        v *= 2f64.powi(step as i32);
        e -= step;
        if v == 0.0 {
            break;
        }
    }
    Some((v, nonzero))
}

/// Format the result of INCRBYFLOAT the way Redis does (`%.17Lg` of a long double,
/// which for doubles means the shortest exact decimal, without exponent for
/// reasonable magnitudes and with trailing zeros removed).
pub fn format_incr_float(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e17 {
        return format!("{}", v as i64);
    }
    let s = format!("{v}");
    if s.contains('e') {
        format!("{v:.17}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        s
    }
}

pub fn i64_to_bytes(v: i64) -> Vec<u8> {
    v.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"1e3"), Some(1000.0));
        assert_eq!(parse_f64(b"abc"), None);
        assert_eq!(parse_f64(b"infinity"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"-nan"), None);
        assert_eq!(parse_f64(b"1e400"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"-1e-400"), Some(-0.0));
    }

    #[test]
    fn hexadecimal_floats_as_strtod_reads_them() {
        for (text, want) in [
            ("0x10", 16.0),
            ("0X1P+2", 4.0),
            ("0x1.8", 1.5),
            ("-0x.8p1", -1.0),
            ("0x1p-1074", 5e-324),
            ("0x1.fffffffffffff8p0", 2.0),
            (
                "0x1.fffffffffffff7ffffffffffffffffffffffffffffp0",
                1.9999999999999998,
            ),
            (
                "0x1.00000000000008000000000000000000000000001p0",
                1.0000000000000002,
            ),
            ("+0x0.0p5", 0.0),
        ] {
            assert_eq!(parse_f64(text.as_bytes()), Some(want), "{text}");
        }
        for bad in [
            "0x", "0x.", "0x1p", "0x1p+", "0x1.2.3", "0xg", "0x1 ", "x10", "0x1e",
        ] {
            // "0x1e" is 30 in hex: fine; the rest are not numbers.
            if bad == "0x1e" {
                assert_eq!(parse_f64(bad.as_bytes()), Some(30.0));
            } else {
                assert_eq!(parse_f64(bad.as_bytes()), None, "{bad}");
            }
        }
        assert_eq!(parse_f64(b"0x1p99999999999"), Some(f64::INFINITY));
    }

    #[test]
    fn in_range_refuses_what_strtod_reports_out_of_range() {
        assert_eq!(parse_f64_in_range(b"1e400"), None);
        assert_eq!(parse_f64_in_range(b"-1e400"), None);
        assert_eq!(parse_f64_in_range(b"1e-400"), None);
        assert_eq!(parse_f64_in_range(b"0x1p-2000"), None);
        assert_eq!(parse_f64_in_range(b"0x1p2000"), None);
        assert_eq!(parse_f64_in_range(b"1e-310"), Some(1e-310));
        assert_eq!(parse_f64_in_range(b"0e-999"), Some(0.0));
        assert_eq!(parse_f64_in_range(b"0.000e5000"), Some(0.0));
        assert_eq!(parse_f64_in_range(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64_in_range(b"1.5"), Some(1.5));
        // Plain digits and points, read without the lowercase copy.
        let tiny = format!("0.{}1", "0".repeat(400));
        assert_eq!(parse_f64_in_range(tiny.as_bytes()), None);
        let zeros = format!("0.{}", "0".repeat(400));
        assert_eq!(parse_f64_in_range(zeros.as_bytes()), Some(0.0));
        let huge = format!("1{}", "0".repeat(400));
        assert_eq!(parse_f64_in_range(huge.as_bytes()), None);
        assert_eq!(parse_f64(huge.as_bytes()), Some(f64::INFINITY));
        assert_eq!(parse_f64_in_range(b"0.5"), Some(0.5));
        assert_eq!(parse_f64_in_range(b"1."), Some(1.0));
        assert_eq!(parse_f64_in_range(b".25"), Some(0.25));
        assert_eq!(parse_f64_in_range(b"."), None);
        assert_eq!(parse_f64_in_range(b"1.2.3"), None);
        assert_eq!(format_incr_float(10.5), "10.5");
        assert_eq!(format_incr_float(3.0), "3");
        assert_eq!(format_incr_float(5.0e3), "5000");
    }
}
