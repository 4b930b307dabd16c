//! A software model of the x86 80-bit `long double`, as far as INCRBYFLOAT needs it.
//!
//! Redis parses INCRBYFLOAT operands with `strtold`, adds them as `long double`
//! (64-bit mantissa on x86-64) and prints the sum with `%.17Lf` before trimming
//! trailing zeros. Doing the same sum in `f64` prints differently for ordinary
//! inputs (0.1 + 0.2 is `0.3` in Redis, `0.30000000000000004` in f64), and the
//! stored string is what later commands read back, so the model is exact:
//! correctly rounded decimal and hexadecimal parsing, round-half-even addition,
//! and exact fixed-point printing.
//!
//! Subnormal results are kept at full precision instead of losing bits; they all
//! print as `0`, so only a later addition of two such tiny numbers could tell.

use std::cmp::Ordering;

/// `strtold`'s input limit in Redis: longer strings are not numbers.
const MAX_CHARS: usize = 5 * 1024;
/// Exponent range of normal long doubles, for a value `mant * 2^exp` with the
/// mantissa's top bit set.
const MAX_EXP: i64 = 16384 - 64;
const MIN_EXP: i64 = -16446 - 64;

/// A finite long double: `(-1)^neg * mant * 2^exp`, `mant` 0 or with bit 63 set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongDouble {
    neg: bool,
    mant: u64,
    exp: i64,
}

/// Why INCRBYFLOAT refused to produce a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncrFloatError {
    /// An operand is not a number `strtold` accepts (Redis: not a valid float).
    NotFloat,
    /// The sum is infinite or NaN.
    NanOrInfinity,
}

/// A parsed operand: finite, or an infinity (which any sum turns into an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    Finite(LongDouble),
    Infinite,
}

/// INCRBYFLOAT's arithmetic: `current + incr` printed as Redis stores it.
pub fn incr_by_float(current: &[u8], incr: &[u8]) -> Result<String, IncrFloatError> {
    let a = parse(current).ok_or(IncrFloatError::NotFloat)?;
    let b = parse(incr).ok_or(IncrFloatError::NotFloat)?;
    match (a, b) {
        (Parsed::Finite(a), Parsed::Finite(b)) => a
            .sum(b)
            .map(|v| v.to_human_string())
            .ok_or(IncrFloatError::NanOrInfinity),
        _ => Err(IncrFloatError::NanOrInfinity),
    }
}

/// Parse like Redis's `string2ld`: the whole string must be one `strtold`
/// number (decimal, `0x` hexadecimal, or infinity), no leading space, no NaN,
/// and no result that overflows or underflows to zero.
pub fn parse(s: &[u8]) -> Option<Parsed> {
    if s.is_empty() || s.len() >= MAX_CHARS {
        return None;
    }
    // strtold stops at a NUL, and Redis then finds it did not consume the
    // whole argument: a value with an embedded NUL is not a number.
    if s.contains(&0) {
        return None;
    }
    if s.first()
        .is_some_and(|c| c.is_ascii_whitespace() || *c == 0x0b)
    {
        return None;
    }
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if s.is_empty() {
        // Nothing converted, and the end pointer sits on the terminator.
        return Some(Parsed::Finite(LongDouble::ZERO));
    }
    if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
        return Some(Parsed::Infinite);
    }
    let v = if body.len() > 2 && body[0] == b'0' && (body[1] | 0x20) == b'x' {
        parse_hex(&body[2..])?
    } else {
        parse_decimal(body)?
    };
    Some(Parsed::Finite(LongDouble { neg, ..v }))
}

fn parse_decimal(s: &[u8]) -> Option<LongDouble> {
    let mut n = Big::default();
    let mut digits = 0i64;
    let mut frac = 0i64;
    let mut seen_digit = false;
    let mut seen_dot = false;
    let mut i = 0;
    while let Some(&c) = s.get(i) {
        match c {
            b'0'..=b'9' => {
                seen_digit = true;
                if seen_dot {
                    frac += 1;
                }
                if digits > 0 || c != b'0' {
                    digits += 1;
                    n.mul_add(10, u32::from(c - b'0'));
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => break,
        }
        i += 1;
    }
    if !seen_digit {
        return None;
    }
    let e10 = exponent(s.get(i..)?, b'e')?;
    if n.is_zero() {
        return Some(LongDouble::ZERO);
    }
    let e10 = e10 - frac;
    // The value lies in [10^(digits-1+e10), 10^(digits+e10)); settle clear
    // overflow and underflow before building huge powers of ten.
    if digits - 1 + e10 > 4933 || digits + e10 < -4952 {
        return None;
    }
    let v = if e10 >= 0 {
        for _ in 0..e10 {
            n.mul_add(10, 0);
        }
        round_big(&n, 0, false)
    } else {
        let mut d = Big::from_u64(1);
        for _ in 0..-e10 {
            d.mul_add(10, 0);
        }
        // Scale so the quotient has 66 or 67 bits, then round it to 64.
        let s = 66 - (n.bits() as i64 - d.bits() as i64);
        let (num, den) = if s >= 0 {
            (n.shl(s as u64), d)
        } else {
            (n, d.shl((-s) as u64))
        };
        let (q, rem_nonzero) = divide(num, &den);
        round_big(&Big::from_u128(q), -s, rem_nonzero)
    };
    v.in_range()
}

fn parse_hex(s: &[u8]) -> Option<LongDouble> {
    let mut n = Big::default();
    let mut e2: i64 = 0;
    let mut seen_digit = false;
    let mut seen_dot = false;
    let mut i = 0;
    while let Some(&c) = s.get(i) {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            b'.' if !seen_dot => {
                seen_dot = true;
                i += 1;
                continue;
            }
            _ => break,
        };
        seen_digit = true;
        if seen_dot {
            e2 -= 4;
        }
        if !n.is_zero() || d != 0 {
            n.mul_add(16, u32::from(d));
        }
        // Digits beyond any possible precision only shift the exponent.
        if n.bits() > 20_000 {
            return None;
        }
        i += 1;
    }
    if !seen_digit {
        return None;
    }
    e2 += exponent(s.get(i..)?, b'p')?;
    if n.is_zero() {
        return Some(LongDouble::ZERO);
    }
    round_big(&n, e2, false).in_range()
}

/// The exponent that ends a number: nothing (0), or `marker` (either case), an
/// optional sign and at least one digit, which must run to the end. Its size is
/// capped, which is enough to overflow or underflow any long double.
fn exponent(rest: &[u8], marker: u8) -> Option<i64> {
    let Some((&m, rest)) = rest.split_first() else {
        return Some(0);
    };
    if m | 0x20 != marker {
        return None;
    }
    let (neg, digits) = match rest.split_first() {
        Some((b'-', d)) => (true, d),
        Some((b'+', d)) => (false, d),
        _ => (false, rest),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0i64, |n, &c| (n * 10 + i64::from(c - b'0')).min(1_000_000));
    Some(if neg { -n } else { n })
}

/// Round `b * 2^exp2` (plus a non-zero tail below `b` when `sticky`) to a 64-bit
/// mantissa, ties to even.
fn round_big(b: &Big, exp2: i64, sticky: bool) -> LongDouble {
    let len = b.bits();
    if len == 0 {
        return LongDouble::ZERO;
    }
    if len <= 64 {
        let shift = 64 - len;
        return LongDouble {
            neg: false,
            mant: (b.low_u128() as u64) << shift,
            exp: exp2 - shift as i64,
        };
    }
    let shift = len - 64;
    let mant = b.bits_at(shift) as u64;
    let half = b.bit(shift - 1);
    let rest = sticky || b.any_below(shift - 1);
    round_mantissa(mant, half, rest, exp2 + shift as i64)
}

fn round_mantissa(mant: u64, half: bool, rest: bool, exp: i64) -> LongDouble {
    if half && (rest || mant & 1 == 1) {
        match mant.checked_add(1) {
            Some(m) => LongDouble {
                neg: false,
                mant: m,
                exp,
            },
            None => LongDouble {
                neg: false,
                mant: 1 << 63,
                exp: exp + 1,
            },
        }
    } else {
        LongDouble {
            neg: false,
            mant,
            exp,
        }
    }
}

/// `num / den` for a quotient below 2^68, and whether a remainder is left.
fn divide(mut num: Big, den: &Big) -> (u128, bool) {
    let mut q: u128 = 0;
    for i in (0..68u64).rev() {
        let d = den.shl(i);
        if num.cmp_big(&d) != Ordering::Less {
            num.sub_assign(&d);
            q |= 1 << i;
        }
    }
    (q, !num.is_zero())
}

impl LongDouble {
    pub const ZERO: LongDouble = LongDouble {
        neg: false,
        mant: 0,
        exp: 0,
    };

    fn in_range(self) -> Option<LongDouble> {
        (self.mant == 0 || (MIN_EXP..=MAX_EXP).contains(&self.exp)).then_some(self)
    }

    fn is_zero(self) -> bool {
        self.mant == 0
    }

    fn cmp_magnitude(self, o: LongDouble) -> Ordering {
        match (self.is_zero(), o.is_zero()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => self.exp.cmp(&o.exp).then(self.mant.cmp(&o.mant)),
        }
    }

    /// The correctly rounded sum, or `None` when it overflows to infinity.
    pub fn sum(self, o: LongDouble) -> Option<LongDouble> {
        if self.is_zero() && o.is_zero() {
            return Some(LongDouble {
                neg: self.neg && o.neg,
                ..LongDouble::ZERO
            });
        }
        let (big, small) = if self.cmp_magnitude(o) == Ordering::Less {
            (o, self)
        } else {
            (self, o)
        };
        if small.is_zero() {
            return Some(big);
        }
        // 62 guard bits below each mantissa; bits shifted out of the smaller
        // operand are folded into its lowest bit, which keeps rounding exact.
        let a = u128::from(big.mant) << 62;
        let d = (big.exp - small.exp) as u64;
        let b = if d >= 126 {
            1
        } else {
            let shifted = (u128::from(small.mant) << 62) >> d;
            let lost = d > 62 && small.mant & ((1u64 << (d - 62)) - 1) != 0;
            shifted | u128::from(lost)
        };
        let sum = if big.neg == small.neg { a + b } else { a - b };
        if sum == 0 {
            return Some(LongDouble::ZERO);
        }
        let base = big.exp - 62;
        let len = 128 - u64::from(sum.leading_zeros());
        let mut r = if len <= 64 {
            LongDouble {
                neg: false,
                mant: (sum << (64 - len)) as u64,
                exp: base - (64 - len) as i64,
            }
        } else {
            let shift = len - 64;
            let mant = (sum >> shift) as u64;
            let half = (sum >> (shift - 1)) & 1 == 1;
            let rest = sum & ((1u128 << (shift - 1)) - 1) != 0;
            round_mantissa(mant, half, rest, base + shift as i64)
        };
        r.neg = big.neg;
        (r.exp <= MAX_EXP).then_some(r)
    }

    /// `%.17Lf` with trailing zeros (and a bare point) removed, `-0` shown as `0`:
    /// Redis's human-friendly long double format.
    pub fn to_human_string(self) -> String {
        let mut out = String::new();
        if self.neg {
            out.push('-');
        }
        if self.exp >= 0 {
            let int = Big::from_u64(self.mant).shl(self.exp as u64);
            out.push_str(&int.to_decimal());
        } else {
            const SCALE: u128 = 100_000_000_000_000_000;
            let x = u128::from(self.mant) * SCALE;
            let s = (-self.exp) as u64;
            let q = if s >= 128 {
                // x < 2^121, below half of 2^s: rounds to zero.
                0
            } else {
                let q = x >> s;
                let rem = x & ((1u128 << s) - 1);
                let half = 1u128 << (s - 1);
                if rem > half || (rem == half && q & 1 == 1) {
                    q + 1
                } else {
                    q
                }
            };
            let frac = format!("{:017}", q % SCALE);
            out.push_str(&(q / SCALE).to_string());
            let frac = frac.trim_end_matches('0');
            if !frac.is_empty() {
                out.push('.');
                out.push_str(frac);
            }
        }
        if out == "-0" {
            out.remove(0);
        }
        out
    }
}

/// Just enough unsigned big integer for exact conversions: little-endian u32
/// limbs without high zero limbs.
#[derive(Clone, Debug, Default)]
struct Big(Vec<u32>);

impl Big {
    fn from_u64(v: u64) -> Big {
        Big::from_u128(u128::from(v))
    }

    fn from_u128(mut v: u128) -> Big {
        let mut limbs = Vec::new();
        while v != 0 {
            limbs.push(v as u32);
            v >>= 32;
        }
        Big(limbs)
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn mul_add(&mut self, m: u32, a: u32) {
        let mut carry = u64::from(a);
        for limb in &mut self.0 {
            let v = u64::from(*limb) * u64::from(m) + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    fn bits(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(top) => self.0.len() as u64 * 32 - u64::from(top.leading_zeros()),
        }
    }

    fn bit(&self, i: u64) -> bool {
        self.0
            .get((i / 32) as usize)
            .is_some_and(|l| l >> (i % 32) & 1 == 1)
    }

    fn any_below(&self, i: u64) -> bool {
        let whole = (i / 32) as usize;
        if self.0.iter().take(whole).any(|&l| l != 0) {
            return true;
        }
        let part = i % 32;
        part > 0
            && self
                .0
                .get(whole)
                .is_some_and(|l| l & ((1u32 << part) - 1) != 0)
    }

    fn low_u128(&self) -> u128 {
        self.0
            .iter()
            .take(4)
            .enumerate()
            .fold(0, |acc, (i, &l)| acc | (u128::from(l) << (32 * i)))
    }

    /// The 64 bits starting at bit `from`.
    fn bits_at(&self, from: u64) -> u128 {
        let mut v: u128 = 0;
        for k in 0..64 {
            if self.bit(from + k) {
                v |= 1 << k;
            }
        }
        v
    }

    fn shl(&self, n: u64) -> Big {
        if self.is_zero() {
            return Big::default();
        }
        let (limbs, bits) = ((n / 32) as usize, (n % 32) as u32);
        let mut out = vec![0u32; limbs];
        let mut carry = 0u32;
        for &l in &self.0 {
            if bits == 0 {
                out.push(l);
            } else {
                out.push((l << bits) | carry);
                carry = l >> (32 - bits);
            }
        }
        if carry != 0 {
            out.push(carry);
        }
        Big(out)
    }

    fn cmp_big(&self, o: &Big) -> Ordering {
        self.0
            .len()
            .cmp(&o.0.len())
            .then_with(|| self.0.iter().rev().cmp(o.0.iter().rev()))
    }

    /// `self -= o`, for `self >= o`.
    fn sub_assign(&mut self, o: &Big) {
        let mut borrow = 0i64;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let sub = i64::from(o.0.get(i).copied().unwrap_or(0)) + borrow;
            let mut v = i64::from(*limb) - sub;
            borrow = 0;
            if v < 0 {
                v += 1 << 32;
                borrow = 1;
            }
            *limb = v as u32;
        }
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn to_decimal(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut n = self.0.clone();
        let mut chunks = Vec::new();
        while !n.is_empty() {
            let mut rem = 0u64;
            for limb in n.iter_mut().rev() {
                let cur = (rem << 32) | u64::from(*limb);
                *limb = (cur / 1_000_000_000) as u32;
                rem = cur % 1_000_000_000;
            }
            while n.last() == Some(&0) {
                n.pop();
            }
            chunks.push(rem as u32);
        }
        let mut out = String::new();
        for (i, c) in chunks.iter().rev().enumerate() {
            if i == 0 {
                out.push_str(&c.to_string());
            } else {
                out.push_str(&format!("{c:09}"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn incr(a: &str, b: &str) -> Result<String, IncrFloatError> {
        incr_by_float(a.as_bytes(), b.as_bytes())
    }

    /// Expected values were taken from redis-server 7.0 on x86-64.
    #[test]
    fn sums_print_like_redis() {
        let cases = [
            ("10.5", "0.1", "10.6"),
            ("0.1", "0.2", "0.3"),
            ("0", "3.0e3", "3000"),
            ("0", "5.0e-5", "0.00005"),
            ("0", "1e-20", "0"),
            ("0", "-1e-20", "0"),
            ("0", "1e30", "1000000000000000000024696061952"),
            ("0", "0x10", "16"),
            ("0", "+5", "5"),
            ("0", "1.", "1"),
            ("0", ".5", "0.5"),
            ("0", "1e-4940", "0"),
            ("0", "1.23456789012345678901234", "1.23456789012345679"),
            ("5.0e3", "2.0e2", "5200"),
            ("17179869184", "1.5", "17179869185.5"),
            ("-1.5", "1.5", "0"),
            ("1", "-0.9", "0.1"),
            ("3", "-5", "-2"),
        ];
        for (a, b, want) in cases {
            assert_eq!(incr(a, b).as_deref(), Ok(want), "{a} + {b}");
        }
        let big = incr("0", "1e4000").unwrap_or_default();
        assert!(big.starts_with(
            "99999999999999999999654638730996237849324925835069576313015083330432619433063423554818216418655092"
        ));
        assert_eq!(big.len(), 4000);
    }

    #[test]
    fn refuses_like_redis() {
        for bad in [
            "", " 1", "1 ", "abc", "1e", "1e+", "nan", "0x", "1e-5000", "1e5000", "--1", "1..2",
            "1.5\0", "\0", "1\0x",
        ] {
            assert_eq!(incr("0", bad), Err(IncrFloatError::NotFloat), "{bad:?}");
        }
        assert_eq!(incr("0", "inf"), Err(IncrFloatError::NanOrInfinity));
        assert_eq!(incr("-Infinity", "1"), Err(IncrFloatError::NanOrInfinity));
        assert_eq!(incr("1e4932", "1e4932"), Err(IncrFloatError::NanOrInfinity));
        assert_eq!(incr("0", &"1".repeat(5120)), Err(IncrFloatError::NotFloat));
    }

    proptest! {
        /// On values an f64 holds exactly, parsing and adding agree with f64
        /// whenever the f64 sum is exact too (both are then the true sum).
        #[test]
        fn exact_sums_agree_with_f64(a in -1_000_000i64..1_000_000, b in -1_000_000i64..1_000_000, sa in 0u32..12, sb in 0u32..12) {
            let x = a as f64 / f64::from(1u32 << sa);
            let y = b as f64 / f64::from(1u32 << sb);
            let got = incr(&format!("{x:e}"), &format!("{y:e}")).unwrap_or_default();
            let back: f64 = got.parse().unwrap_or(f64::NAN);
            prop_assert_eq!(back, x + y);
        }
    }
}
