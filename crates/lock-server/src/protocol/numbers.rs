//! Numbers as Redis reads and writes them: doubles (`string2d`, `%.17g`) and the
//! x87 long doubles INCRBYFLOAT and HINCRBYFLOAT compute in.

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::{One, ToPrimitive, Zero};

/// Redis's `string2d`: the whole text is one floating-point number, no leading space, not
/// NaN, and not out of range (a literal `inf` is fine).
pub(crate) fn parse_double(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    if lower.contains("nan") {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    let literal_infinity = lower.trim_start_matches(['+', '-']).starts_with("inf");
    if value.is_infinite() && !literal_infinity {
        return None; // strtod's ERANGE overflow
    }
    if value == 0.0
        && lower
            .bytes()
            .take_while(|b| *b != b'e')
            .any(|b| (b'1'..=b'9').contains(&b))
    {
        return None; // underflow to zero
    }
    Some(value)
}

/// C's `%.17g`, as Redis formats doubles (`inf`, `-inf` and glibc's `nan`/`-nan` spelled
/// out).
pub(crate) fn format_double(x: f64) -> String {
    format_g(x, 17)
}

/// C's `%.14g`, as Lua's `tostring` formats numbers.
pub(crate) fn format_lua_number(x: f64) -> String {
    format_g(x, 14)
}

/// C's `%.<precision>g` with glibc's spellings of the special values.
pub(crate) fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let precision = precision.max(1);
    let scientific = format!("{x:.*e}", precision - 1);
    let (mantissa, exponent) = scientific.split_once('e').expect("{:e} has an exponent");
    let exponent: i32 = exponent.parse().expect("a decimal exponent");
    if exponent < -4 || exponent >= precision as i32 {
        let mantissa = trim_fraction(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    let decimals = usize::try_from(precision as i32 - 1 - exponent).unwrap_or(0);
    trim_fraction(&format!("{x:.decimals$}")).to_string()
}

/// `%g`'s trimming: no trailing zeros after the point, and no point without digits.
fn trim_fraction(text: &str) -> &str {
    if !text.contains('.') {
        return text;
    }
    text.trim_end_matches('0').trim_end_matches('.')
}

/// An x87 80-bit long double: `±mantissa × 2^exponent` with a 64-bit mantissa, the
/// precision INCRBYFLOAT computes and prints with. Only finite values.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LongDouble {
    negative: bool,
    mantissa: u64,
    exponent: i64,
}

/// The x87 extended format's exponent range, roughly: beyond it strtold overflows.
const MAX_BINARY_EXPONENT: i64 = 16_383;

impl LongDouble {
    /// Redis's `string2ld`: the whole text is one number (`strtold`), no leading space;
    /// `None` for NaN, infinity or a value out of range.
    pub(crate) fn parse(bytes: &[u8]) -> Option<LongDouble> {
        let text = std::str::from_utf8(bytes).ok()?;
        if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
            return None;
        }
        let (negative, body) = match text.as_bytes()[0] {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let (digits_part, exponent_part) = match body.find(['e', 'E']) {
            Some(at) => (&body[..at], Some(&body[at + 1..])),
            None => (body, None),
        };
        let (whole, fraction) = digits_part.split_once('.').unwrap_or((digits_part, ""));
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        if !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let mut exponent10: i64 = match exponent_part {
            None => 0,
            Some("") => return None,
            Some(e) => e.parse().ok()?,
        };
        exponent10 -= fraction.len() as i64;
        let digits: BigUint = format!("{whole}{fraction}").parse().ok()?;
        if digits.is_zero() {
            return Some(LongDouble::zero(negative));
        }
        if exponent10.abs() > 6_000 {
            return None;
        }
        let ten = BigUint::from(10u32);
        let (numerator, denominator) = if exponent10 >= 0 {
            (digits * ten.pow(exponent10 as u32), BigUint::one())
        } else {
            (digits, ten.pow((-exponent10) as u32))
        };
        Self::from_ratio(negative, numerator, denominator)
    }

    fn zero(negative: bool) -> Self {
        LongDouble {
            negative,
            mantissa: 0,
            exponent: 0,
        }
    }

    /// `numerator / denominator`, rounded to 64 significant bits, half to even.
    fn from_ratio(negative: bool, numerator: BigUint, denominator: BigUint) -> Option<Self> {
        // Scale so that the quotient has at least 66 bits: 64 kept, and two to round.
        let shift = 66 + denominator.bits() as i64 - numerator.bits() as i64;
        let (scaled, exponent) = if shift > 0 {
            (numerator << shift as u64, -shift)
        } else {
            (numerator, 0)
        };
        let quotient = &scaled / &denominator;
        let exact = (&quotient * &denominator) == scaled;
        Self::rounded(negative, quotient, exponent, exact)
    }

    /// `value × 2^exponent` rounded to 64 bits, half to even; `exact` says whether
    /// `value` is exact (or was truncated, which breaks ties upward).
    fn rounded(negative: bool, value: BigUint, exponent: i64, exact: bool) -> Option<Self> {
        if value.is_zero() {
            return Some(LongDouble::zero(negative));
        }
        let extra = value.bits() as i64 - 64;
        let (mut mantissa, mut exponent) = if extra > 0 {
            let kept = &value >> extra as u64;
            let dropped = &value - (&kept << extra as u64);
            let half = BigUint::one() << (extra - 1) as u64;
            let round_up = match dropped.cmp(&half) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Equal => !exact || (&kept & BigUint::one()).is_one(),
            };
            let kept = if round_up { kept + 1u32 } else { kept };
            (kept, exponent + extra)
        } else {
            (value << (-extra) as u64, exponent + extra)
        };
        if mantissa.bits() > 64 {
            mantissa >>= 1u32;
            exponent += 1;
        }
        if exponent + 64 > MAX_BINARY_EXPONENT {
            return None;
        }
        Some(LongDouble {
            negative,
            mantissa: mantissa.to_u64()?,
            exponent,
        })
    }

    fn signed(&self) -> BigInt {
        let magnitude = BigInt::from(self.mantissa);
        if self.negative { -magnitude } else { magnitude }
    }

    /// `self + other`, rounded to a long double; `None` when it overflows.
    pub(crate) fn add(&self, other: &LongDouble) -> Option<LongDouble> {
        let low = self.exponent.min(other.exponent);
        let a = self.signed() << (self.exponent - low) as u64;
        let b = other.signed() << (other.exponent - low) as u64;
        let sum = a + b;
        let (sign, magnitude) = sum.into_parts();
        if magnitude.is_zero() {
            return Some(LongDouble::zero(false));
        }
        Self::rounded(sign == Sign::Minus, magnitude, low, true)
    }

    /// Redis's `ld2string` in human mode: `%.17Lf`, trailing zeros and point dropped,
    /// and `-0` as `0`.
    pub(crate) fn to_human(&self) -> String {
        let ten17 = BigUint::from(10u32).pow(17);
        let mantissa = BigUint::from(self.mantissa);
        let scaled = if self.exponent >= 0 {
            (mantissa << self.exponent as u64) * ten17
        } else {
            let shift = (-self.exponent) as u64;
            let numerator = mantissa * ten17;
            let quotient = &numerator >> shift;
            let remainder = &numerator - (&quotient << shift);
            let half = BigUint::one() << (shift - 1);
            match remainder.cmp(&half) {
                std::cmp::Ordering::Greater => quotient + 1u32,
                std::cmp::Ordering::Equal if (&quotient & BigUint::one()).is_one() => {
                    quotient + 1u32
                }
                _ => quotient,
            }
        };
        let digits = format!("{scaled:0>18}");
        let (whole, fraction) = digits.split_at(digits.len() - 17);
        let fraction = fraction.trim_end_matches('0');
        let sign = if self.negative && !(whole == "0" && fraction.is_empty()) {
            "-"
        } else {
            ""
        };
        if fraction.is_empty() {
            format!("{sign}{whole}")
        } else {
            format!("{sign}{whole}.{fraction}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_format_like_printf_g17() {
        for (x, text) in [
            (0.1, "0.10000000000000001"),
            (1e20, "1e+20"),
            (3.0, "3"),
            (-2.5, "-2.5"),
            (1e-5, "1.0000000000000001e-05"),
            (0.0001, "0.0001"),
            (9007199254740991.0, "9007199254740991"),
            (1e15, "1000000000000000"),
            (1e17, "1e+17"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (f64::INFINITY, "inf"),
            (-0.0, "-0"),
        ] {
            assert_eq!(format_double(x), text, "{x}");
        }
    }

    #[test]
    fn doubles_are_read_like_string2d() {
        assert_eq!(parse_double(b"1.5"), Some(1.5));
        assert_eq!(parse_double(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double(b"+inf"), Some(f64::INFINITY));
        for bad in ["", " 1", "1 ", "nan", "1e400", "1e-400", "abc", "1x"] {
            assert_eq!(parse_double(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn long_doubles_add_and_print_as_redis_does() {
        let add = |a: &str, b: &str| {
            let a = LongDouble::parse(a.as_bytes()).unwrap();
            let b = LongDouble::parse(b.as_bytes()).unwrap();
            a.add(&b).unwrap().to_human()
        };
        assert_eq!(add("10.5", "0.1"), "10.6");
        assert_eq!(add("10.6", "1e20"), "100000000000000000008");
        assert_eq!(add("0", "0.1"), "0.1");
        assert_eq!(add("5", "-5"), "0");
        assert_eq!(add("-0.5", "0.25"), "-0.25");
        assert_eq!(add("3.0e3", "1"), "3001");
        assert!(LongDouble::parse(b" 1").is_none());
        assert!(LongDouble::parse(b"1e99999").is_none());
    }
}
