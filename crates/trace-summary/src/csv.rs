//! Writing tables as pandas writes them: Python float repr, minimal quoting.

use crate::compute::{Cell, Table};

/// Python's `repr` of a float: shortest round-trip digits, exponent form
/// below 1e-4 or from 1e16, `.0` on integral values.
pub fn py_float(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // Rust's {:e} gives the shortest round-trip digits: d.ddddde<exp>.
    let sci = format!("{:e}", v);
    let (mantissa, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("integer exponent");
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let digits = tie_to_even(v.abs(), digits, exp);
    let sign = if negative { "-" } else { "" };
    if !(-4..16).contains(&exp) {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{esign}{:02}", exp.abs());
    }
    let point = exp + 1; // digits before the decimal point
    let body = if point <= 0 {
        format!("0.{}{}", "0".repeat((-point) as usize), digits)
    } else if point as usize >= digits.len() {
        format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
    } else {
        format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
    };
    format!("{sign}{body}")
}

/// Of two shortest digit strings that both read back as `v` and lie
/// equally far from it (`v` exactly halfway between them), the one whose
/// last digit is even, as Python's `repr` picks (Rust's `{:e}` may give the
/// other: 1003528/1048576 is `0.9570388793945312` in Python).
fn tie_to_even(v: f64, digits: String, exp: i32) -> String {
    let k = digits.len() as i32;
    let Ok(n) = digits.parse::<u64>() else { return digits };
    if k < 2 || n % 2 == 0 {
        return digits;
    }
    for (mid, alt) in [(n * 10 - 5, n - 1), (n * 10 + 5, n + 1)] {
        let text = alt.to_string();
        if text.len() != digits.len() || !exactly(v, mid, exp - k) {
            continue;
        }
        let back: Option<f64> = format!("{text}e{}", exp - k + 1).parse().ok();
        if back == Some(v) {
            return text;
        }
    }
    digits
}

/// Whether `v` (positive, finite) is exactly `n` × 10^`q`; `false` where
/// the check would overflow 128 bits (values far from 1).
fn exactly(v: f64, n: u64, q: i32) -> bool {
    let bits = v.to_bits();
    let (raw_exp, frac) = ((bits >> 52) & 0x7ff, bits & ((1 << 52) - 1));
    let (m, e) = match raw_exp {
        0 => (frac, -1074),
        _ => (frac | (1 << 52), raw_exp as i32 - 1075),
    };
    let pow10 = |p: i32| 10u128.checked_pow(p as u32);
    let shift = |x: u128, p: i32| if p >= 128 { None } else { x.checked_mul(1u128 << p) };
    let lhs = match (e >= 0, q < 0) {
        (true, true) => shift(u128::from(m), e).and_then(|x| x.checked_mul(pow10(-q)?)),
        (true, false) => shift(u128::from(m), e),
        (false, true) => pow10(-q).and_then(|p| u128::from(m).checked_mul(p)),
        (false, false) => Some(u128::from(m)),
    };
    let rhs = match (e >= 0, q < 0) {
        (true, true) => Some(u128::from(n)),
        (true, false) => pow10(q).and_then(|p| u128::from(n).checked_mul(p)),
        (false, true) => shift(u128::from(n), -e),
        (false, false) => pow10(q).and_then(|p| shift(u128::from(n), -e)?.checked_mul(p)),
    };
    matches!((lhs, rhs), (Some(a), Some(b)) if a == b)
}

fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn cell(c: &Cell) -> String {
    match c {
        Cell::Str(s) => field(s),
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) if f.is_nan() => String::new(),
        Cell::Float(f) => py_float(*f),
        Cell::Empty => String::new(),
    }
}

impl Table {
    /// The CSV text, exactly as pandas' `to_csv(index=False)`.
    pub fn to_csv(&self) -> String {
        let mut out = self.header.iter().map(|h| field(h)).collect::<Vec<_>>().join(",");
        out.push('\n');
        for row in &self.rows {
            out.push_str(&row.iter().map(cell).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::py_float;

    #[test]
    fn python_repr() {
        let check = |v: f64, s: &str| assert_eq!(py_float(v), s, "{v:e}");
        check(10.678, "10.678");
        check(0.06663099451969742, "0.06663099451969742");
        check(100.0, "100.0");
        check(15975.817, "15975.817");
        check(4.992020567124737e-05, "4.992020567124737e-05");
        check(1e16, "1e+16");
        check(1234567890123456.0, "1234567890123456.0");
        check(0.0001, "0.0001");
        check(-2.5, "-2.5");
        // Halfway between two shortest strings: the even last digit, as
        // Python (Rust's own shortest digits end in 3 here).
        check(1003528.0 / 1048576.0, "0.9570388793945312");
        check(-1003528.0 / 1048576.0, "-0.9570388793945312");
        check(116.046560546875, "116.046560546875");
    }
}
