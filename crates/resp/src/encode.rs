//! Reply encoding for RESP2 and RESP3.

use crate::frame::Frame;
use bytes::{BufMut, BytesMut};

/// The protocol a connection negotiated with HELLO (RESP2 until then).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    #[default]
    Resp2,
    Resp3,
}

#[inline]
fn put_int_line(out: &mut BytesMut, prefix: u8, n: i64) {
    // The whole line in one copy: this runs for every element of every
    // aggregate reply, and three separate puts each paid a capacity check.
    // Most are one or two digits (bulk lengths, small counts).
    if (0..100).contains(&n) {
        let n = n as u8;
        if n < 10 {
            out.extend_from_slice(&[prefix, b'0' + n, b'\r', b'\n']);
        } else {
            out.extend_from_slice(&[prefix, b'0' + n / 10, b'0' + n % 10, b'\r', b'\n']);
        }
        return;
    }
    put_long_int_line(out, prefix, n);
}

fn put_long_int_line(out: &mut BytesMut, prefix: u8, n: i64) {
    let mut line = [0u8; 24];
    line[0] = prefix;
    let mut b = itoa::Buffer::new();
    let digits = b.format(n).as_bytes();
    line[1..1 + digits.len()].copy_from_slice(digits);
    let len = 1 + digits.len();
    line[len..len + 2].copy_from_slice(b"\r\n");
    out.extend_from_slice(&line[..len + 2]);
}

/// A bulk string (`$3\r\nfoo\r\n`), the same in RESP2 and RESP3.
#[inline]
pub fn put_bulk(out: &mut BytesMut, data: &[u8]) {
    // One reservation for the whole reply, so the copies below never grow it.
    out.reserve(data.len() + 24);
    put_int_line(out, b'$', data.len() as i64);
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

/// A one-line reply (`+` or `-`). Error texts often quote client input (an
/// unknown command name, a bad argument); a CR or LF in it would end the line
/// early and let the rest be read as further replies, so both become spaces, as
/// Redis does for its formatted errors.
fn put_line(out: &mut BytesMut, prefix: u8, text: &[u8]) {
    out.put_u8(prefix);
    if text.iter().any(|&b| b == b'\r' || b == b'\n') {
        out.extend(
            text.iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
    } else {
        out.put_slice(text);
    }
    out.put_slice(b"\r\n");
}

/// Format a double the way Redis 7.0 does in replies (`%.17g`, with `inf`/`-inf`).
pub fn encode_double(d: f64) -> String {
    if d.is_nan() {
        // As printf writes it: the sign bit shows (0/0 in C or Lua is -nan on x86-64).
        return if d.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    g17_exact(d).unwrap_or_else(|| format_g(d, 17))
}

/// `%.17g` by integer arithmetic for the doubles replies usually carry
/// (normal, about 1e-6 to 1e38): the 17 significant digits are the exact
/// value scaled by a power of ten, rounded half to even as printf rounds,
/// computed in 128 bits. `None` outside that range, where `format_g` (the
/// general, slower path) answers.
fn g17_exact(d: f64) -> Option<String> {
    let text = g17_text(d)?;
    std::str::from_utf8(text.as_slice()).ok().map(str::to_owned)
}

/// A double's reply text, short enough for the stack: `%.17g` is at most a
/// sign, 17 digits, a point and a four-character exponent, or a sign, "0.",
/// three zeros and 17 digits.
struct DoubleText {
    buf: [u8; 32],
    len: usize,
}

impl DoubleText {
    fn push(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
    fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// [`g17_exact`]'s text, written on the stack.
fn g17_text(d: f64) -> Option<DoubleText> {
    const POW10: [u128; 23] = {
        let mut t = [1u128; 23];
        let mut i = 1;
        while i < 23 {
            t[i] = t[i - 1] * 10;
            i += 1;
        }
        t
    };
    let bits = d.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 || biased == 0x7ff {
        return None; // zero, subnormal, inf, nan
    }
    let m = u128::from((bits & ((1u64 << 52) - 1)) | (1u64 << 52));
    // |d| = m * 2^e
    let e = biased - 1075;
    // |d| * 10^k, truncated and rounded half to even.
    let scaled = |k: i32| -> Option<(u128, u128)> {
        let (q, up) = if (0..=22).contains(&k) {
            let num = m * POW10[k as usize];
            if e >= 0 {
                let n = num.checked_mul(1u128.checked_shl(e as u32)?)?;
                return Some((n, n));
            }
            let s = (-e) as u32;
            if s >= 127 {
                return None;
            }
            let q = num >> s;
            let r = num & ((1u128 << s) - 1);
            let half = 1u128 << (s - 1);
            (q, r > half || (r == half && q & 1 == 1))
        } else if (-22..0).contains(&k) && (0..=74).contains(&e) {
            let num = m << e;
            let p = POW10[(-k) as usize];
            let (q, r) = (num / p, num % p);
            (q, r * 2 > p || (r * 2 == p && q & 1 == 1))
        } else {
            return None;
        };
        Some((q, q + u128::from(up)))
    };
    let mut exp10 = d.abs().log10().floor() as i32;
    let (mut q, mut n) = scaled(16 - exp10)?;
    // log10 can be one off near powers of ten: settle on the exponent whose
    // exact (unrounded) digits number 17.
    for _ in 0..2 {
        if q >= POW10[17] {
            exp10 += 1;
        } else if q < POW10[16] {
            exp10 -= 1;
        } else {
            break;
        }
        (q, n) = scaled(16 - exp10)?;
    }
    if !(POW10[16]..POW10[17]).contains(&q) {
        return None;
    }
    if n == POW10[17] {
        // Rounding carried into an 18th digit: printf moves the exponent.
        n = POW10[16];
        exp10 += 1;
    }
    // 17 digits fit a u64; two halves of 8 and 9 digits are two shorter
    // chains of divisions.
    let mut digits = [b'0'; 17];
    let (mut hi, mut lo) = ((n / 1_000_000_000) as u64, (n % 1_000_000_000) as u64);
    for k in (0..8).rev() {
        digits[k] = b'0' + (hi % 10) as u8;
        hi /= 10;
    }
    for k in (8..17).rev() {
        digits[k] = b'0' + (lo % 10) as u8;
        lo /= 10;
    }
    let trimmed =
        |s: &'_ [u8]| -> usize { s.iter().rposition(|&c| c != b'0').map_or(0, |p| p + 1) };
    let mut out = DoubleText {
        buf: [0; 32],
        len: 0,
    };
    if d < 0.0 {
        out.push(b"-");
    }
    if !(-4..17).contains(&exp10) {
        out.push(&digits[..1]);
        let rest = &digits[1..1 + trimmed(&digits[1..])];
        if !rest.is_empty() {
            out.push(b".");
            out.push(rest);
        }
        out.push(if exp10 < 0 { b"e-" } else { b"e+" });
        let a = exp10.unsigned_abs();
        if a >= 100 {
            out.push(&[b'0' + (a / 100) as u8]);
        }
        out.push(&[b'0' + (a / 10 % 10) as u8, b'0' + (a % 10) as u8]);
    } else if exp10 >= 0 {
        let (int, frac) = digits.split_at(exp10 as usize + 1);
        out.push(int);
        let frac = &frac[..trimmed(frac)];
        if !frac.is_empty() {
            out.push(b".");
            out.push(frac);
        }
    } else {
        out.push(b"0.");
        for _ in 0..(-exp10 - 1) {
            out.push(b"0");
        }
        out.push(&digits[..trimmed(&digits)]);
    }
    Some(out)
}

/// C's `%.{prec}g`.
fn format_g(d: f64, prec: usize) -> String {
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{:.*e}", prec - 1, d);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= prec as i32 {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.unsigned_abs())
    } else {
        // `%f` at `prec - 1 - exp` decimals prints these same significant
        // digits (both round the exact value at the same place): put the
        // point among them rather than formatting a second time.
        let (neg, m) = match mantissa.strip_prefix('-') {
            Some(m) => (true, m),
            None => (false, mantissa),
        };
        let (lead, rest) = m.split_at(1);
        let rest = rest.strip_prefix('.').unwrap_or(rest);
        let mut out = String::with_capacity(prec + 8);
        if neg {
            out.push('-');
        }
        if exp >= 0 {
            let int_len = exp as usize;
            out.push_str(lead);
            out.push_str(&rest[..int_len.min(rest.len())]);
            out.push('.');
            out.push_str(&rest[int_len.min(rest.len())..]);
        } else {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(lead);
            out.push_str(rest);
        }
        strip_zeros(&out).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Append a command as clients send it: a multibulk of bulk strings.
pub fn encode_command<A: AsRef<[u8]>>(args: &[A], out: &mut BytesMut) {
    put_int_line(out, b'*', args.len() as i64);
    for a in args {
        put_bulk(out, a.as_ref());
    }
}

/// Append the wire form of `frame` for `proto` to `out`.
pub fn encode(frame: &Frame, proto: Protocol, out: &mut BytesMut) {
    let r3 = proto == Protocol::Resp3;
    match frame {
        Frame::Simple(s) => put_line(out, b'+', s),
        Frame::Error(s) => put_line(out, b'-', s),
        Frame::Integer(n) => put_int_line(out, b':', *n),
        Frame::Bulk(b) => put_bulk(out, b),
        Frame::Null => out.put_slice(if r3 { b"_\r\n" } else { b"$-1\r\n" }),
        Frame::NullArray => out.put_slice(if r3 { b"_\r\n" } else { b"*-1\r\n" }),
        Frame::Array(items) => {
            put_int_line(out, b'*', items.len() as i64);
            for f in items {
                encode(f, proto, out);
            }
        }
        Frame::Set(items) => {
            put_int_line(out, if r3 { b'~' } else { b'*' }, items.len() as i64);
            for f in items {
                encode(f, proto, out);
            }
        }
        Frame::Encoded(raw) => out.extend_from_slice(raw),
        Frame::Push(items) => {
            put_int_line(out, if r3 { b'>' } else { b'*' }, items.len() as i64);
            for f in items {
                encode(f, proto, out);
            }
        }
        Frame::Map(pairs) => {
            if r3 {
                put_int_line(out, b'%', pairs.len() as i64);
            } else {
                put_int_line(out, b'*', 2 * pairs.len() as i64);
            }
            for (k, v) in pairs {
                encode(k, proto, out);
                encode(v, proto, out);
            }
        }
        Frame::Double(d) => {
            // The usual doubles format on the stack; the rest (zero, NaN,
            // infinities, the very large and small) through encode_double.
            let fast = g17_text(*d);
            let slow;
            let s = match &fast {
                Some(text) => text.as_slice(),
                None => {
                    slow = encode_double(*d);
                    slow.as_bytes()
                }
            };
            if r3 {
                out.put_u8(b',');
                out.put_slice(s);
                out.put_slice(b"\r\n");
            } else {
                put_bulk(out, s);
            }
        }
        Frame::Boolean(b) => {
            if r3 {
                out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" });
            } else {
                out.put_slice(if *b { b":1\r\n" } else { b":0\r\n" });
            }
        }
        Frame::Verbatim(fmt, b) => {
            if r3 {
                put_int_line(out, b'=', (b.len() + 4) as i64);
                out.put_slice(fmt.as_bytes());
                out.put_u8(b':');
                out.put_slice(b);
                out.put_slice(b"\r\n");
            } else {
                put_bulk(out, b);
            }
        }
        Frame::BigNumber(b) => {
            if r3 {
                out.put_u8(b'(');
                out.put_slice(b);
                out.put_slice(b"\r\n");
            } else {
                put_bulk(out, b);
            }
        }
    }
}

/// Room kept in front of a `BulkArray`'s elements for its `*<count>\r\n`
/// header, which is only known at the end: 1 + 20 digits + CRLF.
const HEADER_ROOM: usize = 24;

/// An array of bulk strings encoded as it is built, for replies of many
/// elements (LRANGE, HKEYS, ...): each element is copied once, straight into
/// the reply's buffer, with no `Frame` or `Bytes` per element. The encoding
/// is the same in RESP2 and RESP3.
pub struct BulkArray {
    buf: BytesMut,
    count: usize,
}

impl Default for BulkArray {
    fn default() -> Self {
        BulkArray::new()
    }
}

impl BulkArray {
    pub fn new() -> BulkArray {
        let mut buf = BytesMut::with_capacity(256);
        buf.resize(HEADER_ROOM, 0);
        BulkArray { buf, count: 0 }
    }

    pub fn push(&mut self, element: &[u8]) {
        put_int_line(&mut self.buf, b'$', element.len() as i64);
        self.buf.extend_from_slice(element);
        self.buf.extend_from_slice(b"\r\n");
        self.count += 1;
    }

    /// Starts an element that is itself an array of `len` parts; the parts
    /// follow with [`BulkArray::part`] and [`BulkArray::part_array`].
    pub fn push_array(&mut self, len: usize) {
        put_int_line(&mut self.buf, b'*', len as i64);
        self.count += 1;
    }

    /// A bulk string inside an element [`BulkArray::push_array`] started.
    pub fn part(&mut self, b: &[u8]) {
        put_int_line(&mut self.buf, b'$', b.len() as i64);
        self.buf.extend_from_slice(b);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A nested array header inside an element, its `len` parts following.
    pub fn part_array(&mut self, len: usize) {
        put_int_line(&mut self.buf, b'*', len as i64);
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn finish(mut self) -> Frame {
        let mut line = [0u8; HEADER_ROOM];
        line[0] = b'*';
        let mut b = itoa::Buffer::new();
        let digits = b.format(self.count).as_bytes();
        line[1..1 + digits.len()].copy_from_slice(digits);
        let len = 1 + digits.len();
        line[len..len + 2].copy_from_slice(b"\r\n");
        let start = HEADER_ROOM - (len + 2);
        self.buf[start..HEADER_ROOM].copy_from_slice(&line[..len + 2]);
        Frame::Encoded(self.buf.freeze().slice(start..))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn enc(f: &Frame, p: Protocol) -> Vec<u8> {
        let mut out = BytesMut::new();
        encode(f, p, &mut out);
        out.to_vec()
    }

    #[test]
    fn doubles_like_printf_g17() {
        assert_eq!(encode_double(1.5), "1.5");
        assert_eq!(encode_double(10.0), "10");
        assert_eq!(encode_double(0.1), "0.10000000000000001");
        assert_eq!(encode_double(1e20), "1e+20");
        assert_eq!(encode_double(1.25e-5), "1.2500000000000001e-05");
        assert_eq!(encode_double(f64::INFINITY), "inf");
        assert_eq!(encode_double(-3.0), "-3");
        assert_eq!(
            encode_double(123456789012345680.0),
            "1.2345678901234568e+17"
        );
        assert_eq!(encode_double(0.0001), "0.0001");
        assert_eq!(encode_double(-0.00012345), "-0.00012344999999999999");
        assert_eq!(encode_double(1e16), "10000000000000000");
        assert_eq!(encode_double(99999999999999984.0), "99999999999999984");
        assert_eq!(encode_double(99999999999999999.0), "1e+17");
        assert_eq!(encode_double(990.7775675675675), "990.77756756756753");
        assert_eq!(encode_double(-2.5), "-2.5");
        assert_eq!(encode_double(0.9), "0.90000000000000002");
    }

    /// The integer path gives `format_g`'s text for every double it takes on.
    #[test]
    fn g17_exact_agrees_with_the_general_path() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut taken = 0;
        let mut check = |d: f64| {
            if let Some(fast) = g17_exact(d) {
                assert_eq!(fast, format_g(d, 17), "{d:e}");
                taken += 1;
            }
        };
        for _ in 0..200_000 {
            // Any bit pattern, then values of the sizes replies carry.
            check(f64::from_bits(next()));
            let mag = (next() % 40) as i32 - 8;
            check((next() >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi(mag));
            check((next() % 1_000_000) as f64 / 1000.0);
            check(-((next() % (1 << 60)) as f64));
        }
        for d in [
            1e16,
            1e17,
            9.999999999999999e16,
            0.1,
            0.5,
            2.5,
            1e-5,
            1e-6,
            123456789012345680.0,
            1e22,
            1e23,
            990.7775675675675,
            500.12604198863295,
            4503599627370497.5,
        ] {
            check(d);
            check(-d);
        }
        assert!(taken > 300_000, "{taken}");
    }

    /// The digits placed around the point equal a second `%f`-style
    /// formatting at the decimals `%g` asks for.
    #[test]
    fn fixed_notation_matches_formatting_again() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = f64::from_bits(x);
            if !d.is_finite() || d == 0.0 {
                continue;
            }
            let scaled = d.abs().log10();
            if !(-4.5..17.0).contains(&scaled) {
                // Also draw values in the fixed range.
                let m = (x >> 11) as f64 / (1u64 << 53) as f64;
                let e = (x % 21) as i32 - 4;
                let v = m * 10f64.powi(e);
                check(v);
                continue;
            }
            check(d);
        }
        fn check(d: f64) {
            let sci = format!("{:.16e}", d);
            let exp: i32 = sci
                .split_once('e')
                .map_or(0, |(_, e)| e.parse().unwrap_or(0));
            if !(-4..17).contains(&exp) || d == 0.0 {
                return;
            }
            let decimals = (16 - exp).max(0) as usize;
            let want = strip_zeros(&format!("{:.*}", decimals, d)).to_string();
            assert_eq!(encode_double(d), want, "{d:e}");
        }
    }

    #[test]
    fn line_replies_cannot_inject_lines() {
        let e = Frame::error("ERR unknown command 'a\r\n+OK', with args beginning with: 'b\n'");
        assert_eq!(
            enc(&e, Protocol::Resp2),
            b"-ERR unknown command 'a  +OK', with args beginning with: 'b '\r\n"
        );
        assert_eq!(
            enc(&Frame::Simple(Bytes::from_static(b"x\ry")), Protocol::Resp3),
            b"+x y\r\n"
        );
        assert_eq!(enc(&Frame::ok(), Protocol::Resp2), b"+OK\r\n");
    }

    #[test]
    fn commands_are_multibulks() {
        let mut out = BytesMut::new();
        encode_command(&["SET", "k", ""], &mut out);
        assert_eq!(&out[..], b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    }

    #[test]
    fn resp2_downgrades() {
        let m = Frame::Map(vec![(Frame::bulk("a"), Frame::Integer(1))]);
        assert_eq!(enc(&m, Protocol::Resp2), b"*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&m, Protocol::Resp3), b"%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&Frame::Null, Protocol::Resp2), b"$-1\r\n");
        assert_eq!(enc(&Frame::NullArray, Protocol::Resp2), b"*-1\r\n");
        assert_eq!(enc(&Frame::Null, Protocol::Resp3), b"_\r\n");
        assert_eq!(enc(&Frame::Double(2.5), Protocol::Resp2), b"$3\r\n2.5\r\n");
        assert_eq!(enc(&Frame::Double(2.5), Protocol::Resp3), b",2.5\r\n");
        // The stack-written reply of every kind of double is encode_double's.
        for d in [
            0.0,
            -0.0,
            1e-300,
            -123.456,
            990.7775675675675,
            1e-5,
            -1.2345678901234567e-7,
            1e17,
            -9.999999999999999e16,
            1.7976931348623157e308,
            1e100,
            f64::NAN,
            f64::INFINITY,
        ] {
            let text = encode_double(d);
            let mut bulk = format!("${}\r\n{text}\r\n", text.len()).into_bytes();
            assert_eq!(enc(&Frame::Double(d), Protocol::Resp2), bulk, "{d:e}");
            bulk = format!(",{text}\r\n").into_bytes();
            assert_eq!(enc(&Frame::Double(d), Protocol::Resp3), bulk, "{d:e}");
        }
        assert_eq!(enc(&Frame::Boolean(true), Protocol::Resp2), b":1\r\n");
        assert_eq!(
            enc(
                &Frame::Verbatim("txt", Bytes::from_static(b"hi")),
                Protocol::Resp3
            ),
            b"=6\r\ntxt:hi\r\n"
        );
        assert_eq!(enc(&Frame::Integer(-42), Protocol::Resp2), b":-42\r\n");
        assert_eq!(
            enc(&Frame::Integer(i64::MIN), Protocol::Resp2),
            b":-9223372036854775808\r\n"
        );
    }

    #[test]
    fn integer_lines_are_decimal_for_every_width() {
        let mut probes: Vec<i64> = vec![i64::MIN, i64::MAX, -1, 0];
        for d in 0..19 {
            let p = 10i64.pow(d);
            probes.extend([p - 1, p, p + 1, -p, -p - 1]);
        }
        for n in probes {
            assert_eq!(
                enc(&Frame::Integer(n), Protocol::Resp2),
                format!(":{n}\r\n").into_bytes()
            );
        }
        for len in 0..300usize {
            let data = vec![b'x'; len];
            let want = [
                format!("${len}\r\n").into_bytes(),
                data.clone(),
                b"\r\n".to_vec(),
            ]
            .concat();
            assert_eq!(enc(&Frame::Bulk(Bytes::from(data)), Protocol::Resp2), want);
        }
    }

    #[test]
    fn bulk_array_encodes_like_an_array_of_bulks() {
        for n in [0usize, 1, 9, 10, 250] {
            let mut b = BulkArray::new();
            let mut items = Vec::new();
            for i in 0..n {
                let e = format!("e{i}").repeat(i % 4);
                b.push(e.as_bytes());
                items.push(Frame::Bulk(Bytes::from(e)));
            }
            assert_eq!(b.len(), n);
            let fast = b.finish();
            for proto in [Protocol::Resp2, Protocol::Resp3] {
                let (mut x, mut y) = (BytesMut::new(), BytesMut::new());
                encode(&fast, proto, &mut x);
                encode(&Frame::Array(items.clone()), proto, &mut y);
                assert_eq!(x, y, "{n} elements");
            }
        }
    }
}
