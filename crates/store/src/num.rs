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

/// Redis's `string2ld`/`strtold` acceptance for INCRBYFLOAT and scores: a finite or
/// infinite decimal with no surrounding spaces; NaN is refused.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() > 5120 {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    if text.starts_with(|c: char| c.is_whitespace()) || text.ends_with(|c: char| c.is_whitespace())
    {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let v = match lower.as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => {
            // Rust accepts "nan"/"inf" spellings handled above and rejects hex floats,
            // which Redis's strtold would take; those are vanishingly rare in practice.
            if lower.contains("nan") || lower.contains("inf") {
                return None;
            }
            text.parse::<f64>().ok()?
        }
    };
    if v.is_nan() {
        None
    } else {
        Some(v)
    }
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
        assert_eq!(format_incr_float(10.5), "10.5");
        assert_eq!(format_incr_float(3.0), "3");
        assert_eq!(format_incr_float(5.0e3), "5000");
    }
}
