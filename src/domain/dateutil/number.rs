//! The numbers of dateutil's parser: a token Python's `float` takes is numeric, and then held
//! exactly, as its `Decimal` holds it; `int(...)` of a text or a number as Python takes it.

use std::cmp::Ordering;

use super::lex::decimal_value;

/// Digits kept of a fraction: more cannot change a second or a minute.
const FRACTION_DIGITS: usize = 30;

/// A finite number token: its whole part and its fraction, in decimal digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Number {
    whole: Vec<u32>,
    fraction: Vec<u32>,
}

/// What Python's `float(token)` makes of a token.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Numeric {
    Finite(Number),
    /// `inf`, `nan`, `infinity`: a float, which the parser's `Decimal` then refuses.
    NotFinite,
}

/// `float(token)` as the parser's tokens can be: decimal digits with at most one point, or a
/// word for infinity or not-a-number; `None` when it is not a number.
pub(super) fn numeric(token: &str) -> Option<Numeric> {
    if matches!(token.to_lowercase().as_str(), "inf" | "nan" | "infinity") {
        return Some(Numeric::NotFinite);
    }
    let (whole, fraction) = token.split_once('.').unwrap_or((token, ""));
    let whole: Option<Vec<u32>> = whole.chars().map(decimal_value).collect();
    let fraction: Option<Vec<u32>> = fraction.chars().map(decimal_value).collect();
    let (whole, fraction) = (whole?, fraction?);
    (!whole.is_empty() || !fraction.is_empty())
        .then_some(Numeric::Finite(Number { whole, fraction }))
}

/// `Decimal(token)`, which must be finite.
pub(super) fn decimal(token: &str) -> Option<Number> {
    match numeric(token)? {
        Numeric::Finite(number) => Some(number),
        Numeric::NotFinite => None,
    }
}

/// `int(text)`: decimal digits only; `None` for anything else. A value too large for an `i64`
/// is held as `i64::MAX`: no part of a date takes it, as none takes Python's larger ints.
pub(super) fn int(text: &str) -> Option<i64> {
    let digits: Option<Vec<u32>> = text.chars().map(decimal_value).collect();
    let digits = digits?;
    (!digits.is_empty()).then_some(())?;
    value_of(&digits)
}

fn value_of(digits: &[u32]) -> Option<i64> {
    Some(digits.iter().fold(0i64, |value, digit| {
        value.saturating_mul(10).saturating_add(i64::from(*digit))
    }))
}

impl Number {
    /// `int(value)`: the whole part (`i64::MAX` when larger).
    pub(super) fn whole(&self) -> Option<i64> {
        value_of(&self.whole)
    }

    /// Whether `value % 1` is not zero.
    pub(super) fn has_fraction(&self) -> bool {
        self.fraction.iter().any(|digit| *digit != 0)
    }

    /// `int(60 * (value % 1))`.
    pub(super) fn sixtieths(&self) -> i64 {
        let kept = &self.fraction[..self.fraction.len().min(FRACTION_DIGITS)];
        let numerator = kept
            .iter()
            .fold(0u128, |value, digit| value * 10 + u128::from(*digit));
        let denominator = 10u128.pow(u32::try_from(kept.len()).unwrap_or(0));
        i64::try_from(numerator * 60 / denominator).unwrap_or(0)
    }

    /// The number compared with a whole `other`, exactly.
    pub(super) fn cmp_whole(&self, other: i64) -> Ordering {
        match self.whole() {
            None => Ordering::Greater,
            Some(whole) => whole.cmp(&other).then(if self.has_fraction() {
                Ordering::Greater
            } else {
                Ordering::Equal
            }),
        }
    }

    /// `low <= value <= high`.
    pub(super) fn within(&self, low: i64, high: i64) -> bool {
        self.cmp_whole(low) != Ordering::Less && self.cmp_whole(high) != Ordering::Greater
    }
}

/// `_parsems`: `S[.F]` seconds as seconds and microseconds.
pub(super) fn seconds_and_micros(text: &str) -> Option<(i64, i64)> {
    match text.split_once('.') {
        None => Some((int(text)?, 0)),
        Some((_, fraction)) if fraction.contains('.') => None,
        Some((seconds, fraction)) => {
            let micros: String = fraction.chars().chain("000000".chars()).take(6).collect();
            Some((int(seconds)?, int(&micros)?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(token: &str) -> Number {
        decimal(token).unwrap()
    }

    #[test]
    fn numbers_are_held_exactly() {
        assert_eq!(numeric("inf"), Some(Numeric::NotFinite));
        assert_eq!(numeric("12a"), None);
        assert_eq!(numeric("²"), None);
        assert_eq!(number("١٢.5").whole(), Some(12));
        assert_eq!(number("10.7").sixtieths(), 42);
        assert_eq!(number("3.1").sixtieths(), 6);
        assert!(number("100.000001").cmp_whole(100).is_gt());
        assert!(number("31").within(1, 31) && !number("31.5").within(1, 31));
        assert_eq!(seconds_and_micros("05.25"), Some((5, 250_000)));
        assert_eq!(seconds_and_micros("05.1234567"), Some((5, 123_456)));
        assert_eq!(int("0x10"), None);
    }
}
