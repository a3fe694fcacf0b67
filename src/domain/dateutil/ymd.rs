//! dateutil's `_ymd`: the year, month and day values in the order the text gave them, which of
//! them a month name or a four-digit year made certain, and `resolve_ymd`, which decides the
//! rest as dateutil does (month first, then day, then year; `dayfirst` and `yearfirst` off, as
//! Nova calls it).

use super::lex::is_digits;
use super::number::{Number, int};

/// What a value is known to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Label {
    Year,
    Month,
}

#[derive(Debug, Default)]
pub(super) struct Ymd {
    values: Vec<i64>,
    pub(super) century_specified: bool,
    year_at: Option<usize>,
    month_at: Option<usize>,
}

/// Days in `month` of `year` (the proleptic Gregorian calendar, as Python's `calendar`).
pub(super) fn days_in_month(year: i64, month: i64) -> Option<i64> {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    Some(match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    })
}

impl Ymd {
    pub(super) fn len(&self) -> usize {
        self.values.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `append(text, label)`: a text of more than two digits is a year with its century.
    pub(super) fn append_text(&mut self, text: &str, label: Option<Label>) -> Option<()> {
        let label = if is_digits(text) && text.chars().count() > 2 {
            self.century_specified = true;
            self.year_label(label)?
        } else {
            label
        };
        self.push(int(text)?, label)
    }

    /// `append(number, label)`: a number over 100 is a year with its century.
    pub(super) fn append_number(&mut self, value: &Number, label: Option<Label>) -> Option<()> {
        let label = if value.cmp_whole(100).is_gt() {
            self.century_specified = true;
            self.year_label(label)?
        } else {
            label
        };
        self.push(value.whole()?, label)
    }

    /// `append(month, 'M')`, a month's number from its name.
    pub(super) fn append_month(&mut self, month: i64) -> Option<()> {
        self.push(month, Some(Label::Month))
    }

    fn year_label(&self, label: Option<Label>) -> Option<Option<Label>> {
        matches!(label, None | Some(Label::Year)).then_some(Some(Label::Year))
    }

    /// Adds a value; a second month or year is an error, as dateutil's `ValueError`.
    fn push(&mut self, value: i64, label: Option<Label>) -> Option<()> {
        self.values.push(value);
        let at = self.values.len() - 1;
        let slot = match label {
            None => return Some(()),
            Some(Label::Month) => &mut self.month_at,
            Some(Label::Year) => &mut self.year_at,
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(at);
        Some(())
    }

    /// `could_be_day`: no day yet (a day is never labelled here) and within the month known.
    pub(super) fn could_be_day(&self, value: &Number) -> bool {
        let last = match (self.month_at, self.year_at) {
            (None, _) => Some(31),
            (Some(month), None) => days_in_month(2000, self.values[month]),
            (Some(month), Some(year)) => days_in_month(self.values[year], self.values[month]),
        };
        last.is_some_and(|last| value.within(1, last))
    }

    /// `resolve_ymd(yearfirst=False, dayfirst=False)`: the year, month and day; `None` for
    /// more than three values.
    pub(super) fn resolve(&self) -> Option<(Option<i64>, Option<i64>, Option<i64>)> {
        let v = &self.values;
        let known = [self.year_at, self.month_at].iter().flatten().count();
        if (known > 0 && v.len() == known) || (v.len() == 3 && known == 2) {
            return Some(self.by_labels());
        }
        let month_at = self.month_at;
        Some(match (v.len(), month_at) {
            (0, _) => (None, None, None),
            (4.., _) => return None,
            (1, None) => match v[0] {
                other if other > 31 => (Some(other), None, None),
                other => (None, None, Some(other)),
            },
            (1, Some(_)) => (None, Some(v[0]), None),
            (2, Some(at)) => {
                let other = v[1 - at];
                if other > 31 {
                    (Some(other), Some(v[at]), None)
                } else {
                    (None, Some(v[at]), Some(other))
                }
            }
            (2, None) if v[0] > 31 => (Some(v[0]), Some(v[1]), None),
            (2, None) if v[1] > 31 => (Some(v[1]), Some(v[0]), None),
            (2, None) => (None, Some(v[0]), Some(v[1])),
            (_, Some(0)) if v[1] > 31 => (Some(v[1]), Some(v[0]), Some(v[2])),
            (_, Some(0)) => (Some(v[2]), Some(v[0]), Some(v[1])),
            (_, Some(1)) if v[0] > 31 => (Some(v[0]), Some(v[1]), Some(v[2])),
            (_, Some(1)) => (Some(v[2]), Some(v[1]), Some(v[0])),
            (_, Some(_)) if v[1] > 31 => (Some(v[1]), Some(v[2]), Some(v[0])),
            (_, Some(_)) => (Some(v[0]), Some(v[2]), Some(v[1])),
            (_, None) if v[0] > 31 || self.year_at == Some(0) => {
                (Some(v[0]), Some(v[1]), Some(v[2]))
            }
            (_, None) if v[0] > 12 => (Some(v[2]), Some(v[1]), Some(v[0])),
            (_, None) => (Some(v[2]), Some(v[0]), Some(v[1])),
        })
    }

    /// `_resolve_from_stridxs`: the labelled values, and the one left when two of three are.
    fn by_labels(&self) -> (Option<i64>, Option<i64>, Option<i64>) {
        let mut year_at = self.year_at;
        let mut month_at = self.month_at;
        let mut day_at = None;
        if self.values.len() == 3 {
            let missing = (0..3).find(|at| year_at != Some(*at) && month_at != Some(*at));
            match (year_at, month_at) {
                (None, _) => year_at = missing,
                (_, None) => month_at = missing,
                _ => day_at = missing,
            }
        }
        let value = |at: Option<usize>| at.map(|at| self.values[at]);
        (value(year_at), value(month_at), value(day_at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ymd(values: &[i64]) -> Ymd {
        Ymd {
            values: values.to_vec(),
            ..Ymd::default()
        }
    }

    #[test]
    fn three_numbers_are_month_day_year_unless_they_cannot_be() {
        assert_eq!(
            ymd(&[10, 21, 15]).resolve(),
            Some((Some(15), Some(10), Some(21)))
        );
        assert_eq!(
            ymd(&[21, 10, 15]).resolve(),
            Some((Some(15), Some(10), Some(21)))
        );
        assert_eq!(
            ymd(&[2015, 10, 21]).resolve(),
            Some((Some(2015), Some(10), Some(21)))
        );
        assert_eq!(ymd(&[1, 2, 3, 4]).resolve(), None);
        let mut named = Ymd::default();
        named.append_month(10).unwrap();
        named.values.extend([21, 15]);
        assert_eq!(named.resolve(), Some((Some(15), Some(10), Some(21))));
    }
}
