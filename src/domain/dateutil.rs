//! A date as python-dateutil's `parser.parse(text, fuzzy=True)` reads it — how Nova reads
//! `nova-manage db archive_deleted_rows --before` and `db purge --before` — ported rule by rule
//! (dateutil 2.9.0), so that every text it reads is read to the same instant and every text it
//! refuses is refused. Checked against vectors dateutil itself wrote
//! (tests/data/dateutil_vectors.json, scripts/dateutil_vectors.py).
//!
//! What the text leaves out comes from `today` at midnight (dateutil's default); a year of one
//! or two digits is the one within 50 years of today's; a weekday without a day of the month
//! moves the date forward to it. Zones as dateutil reads them on a machine whose local zone is
//! UTC: an offset (`+02:00`, `-0500`, `UTC+3`, which is three hours *behind*, as POSIX writes
//! it) is taken; a name alone (`UTC`, `EST`) counts for nothing, so the time is UTC's; an
//! offset of a day or more, or an instant outside the years 1–9999, is refused. Pure.

mod lex;
mod names;
mod number;
mod numeric;
mod ymd;

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};

use names::{UTC_NAMES, ampm, is_utc, jump, month, pertain, weekday, zone_offset};
use number::{Numeric, int, numeric as number_of};
use ymd::{Label, Ymd, days_in_month};

/// What the text gave (dateutil's `_result`).
#[derive(Debug, Default)]
struct Parsed {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    weekday: Option<u32>,
    hour: Option<i64>,
    minute: Option<i64>,
    second: Option<i64>,
    microsecond: Option<i64>,
    zone_name: Option<String>,
    /// Seconds east of UTC.
    zone_offset: Option<i64>,
    ampm: Option<usize>,
    century_specified: bool,
}

impl Parsed {
    /// Whether nothing of a date or a time was found (`len(res) == 0`).
    fn is_empty(&self) -> bool {
        [self.year, self.month, self.day, self.hour, self.minute]
            .iter()
            .chain([self.second, self.microsecond, self.zone_offset].iter())
            .all(Option::is_none)
            && self.weekday.is_none()
            && self.zone_name.is_none()
            && self.ampm.is_none()
    }
}

/// Reads `text` as dateutil does, `today` filling what it leaves out. The error is dateutil's
/// reason (`String does not contain a date: soon`).
pub fn parse(text: &str, today: NaiveDate) -> Result<DateTime<Utc>, String> {
    let this_year = i64::from(today.year());
    let mut parsed =
        scan(text, this_year).ok_or_else(|| format!("Unknown string format: {text}"))?;
    validate(&mut parsed, this_year);
    if parsed.is_empty() {
        return Err(format!("String does not contain a date: {text}"));
    }
    let naive = build(&parsed, today).map_err(|reason| format!("{reason}: {text}"))?;
    let offset = parsed.zone_offset.unwrap_or(0);
    if offset.abs() >= 86_400 {
        return Err(format!("the offset of {text} is not within a day of UTC"));
    }
    let utc = naive - Duration::seconds(offset);
    if !(1..=9999).contains(&utc.year()) {
        return Err(format!("date value out of range: {text}"));
    }
    Ok(Utc.from_utc_datetime(&utc))
}

/// dateutil's `_parse`, fuzzy: every token read or skipped; `None` is its `ValueError` or
/// `IndexError` ("Unknown string format").
fn scan(text: &str, this_year: i64) -> Option<Parsed> {
    let mut tokens = lex::tokens(text);
    let mut parsed = Parsed::default();
    let mut ymd = Ymd::default();
    let mut at = 0;
    while at < tokens.len() {
        at = step(&mut tokens, at, &mut parsed, &mut ymd, this_year)? + 1;
    }
    let (year, month, day) = ymd.resolve()?;
    parsed.century_specified = ymd.century_specified;
    (parsed.year, parsed.month, parsed.day) = (year, month, day);
    Some(parsed)
}

/// Reads the token at `at`; returns the index of the last token it used.
fn step(
    tokens: &mut [String],
    at: usize,
    parsed: &mut Parsed,
    ymd: &mut Ymd,
    this_year: i64,
) -> Option<usize> {
    let token = tokens[at].clone();
    match number_of(&token) {
        Some(Numeric::Finite(value)) => return numeric::read(tokens, at, &value, parsed, ymd),
        Some(Numeric::NotFinite) => return None,
        None => {}
    }
    if let Some(day) = weekday(&token) {
        parsed.weekday = Some(day);
        return Some(at);
    }
    if let Some(number) = month(&token) {
        return month_name(tokens, at, number, ymd, this_year);
    }
    if let Some(half) = ampm(&token) {
        let valid =
            parsed.ampm.is_none() && parsed.hour.is_some_and(|hour| (0..=12).contains(&hour));
        if let (true, Some(hour)) = (valid, parsed.hour) {
            parsed.hour = Some(names::adjust_ampm(hour, half));
            parsed.ampm = Some(half);
        }
        return Some(at);
    }
    if could_be_zone_name(parsed, &token) {
        parsed.zone_offset = zone_offset(&token);
        parsed.zone_name = Some(token.clone());
        // `GMT+3` is "my time + 3 is GMT": the sign turned, so that the offset reads right.
        if let Some(sign) = tokens
            .get_mut(at + 1)
            .filter(|next| *next == "+" || *next == "-")
        {
            *sign = if sign == "+" { "-" } else { "+" }.to_owned();
            parsed.zone_offset = None;
            if is_utc(&token) {
                parsed.zone_name = None;
            }
        }
        return Some(at);
    }
    if parsed.hour.is_some() && (token == "+" || token == "-") {
        return numbered_zone(tokens, at, parsed);
    }
    // Anything else is jumped over (a word it knows) or, fuzzy, skipped.
    Some(at)
}

/// A month's name, and the rest of `Jan-01[-99]` or `Jan of 01` after it.
fn month_name(
    tokens: &[String],
    at: usize,
    number: i64,
    ymd: &mut Ymd,
    this_year: i64,
) -> Option<usize> {
    ymd.append_month(number)?;
    let count = tokens.len();
    let mut at = at;
    if at + 1 >= count {
        return Some(at);
    }
    if tokens[at + 1] == "-" || tokens[at + 1] == "/" {
        let separator = tokens[at + 1].as_str();
        ymd.append_text(tokens.get(at + 2)?, None)?;
        if at + 3 < count && tokens[at + 3] == separator {
            ymd.append_text(tokens.get(at + 4)?, None)?;
            at += 2;
        }
        at += 2;
    } else if at + 4 < count
        && tokens[at + 1] == " "
        && tokens[at + 3] == " "
        && pertain(&tokens[at + 2])
    {
        if lex::is_digits(&tokens[at + 4]) {
            // `Jan of 01`: clearly the year.
            let year = names::convert_year(int(&tokens[at + 4])?, false, this_year);
            ymd.append_text(&year.to_string(), Some(Label::Year))?;
        }
        at += 4;
    }
    Some(at)
}

/// `_could_be_tzname`: after an hour, before any zone, a word of up to five capitals or a name
/// of UTC.
fn could_be_zone_name(parsed: &Parsed, token: &str) -> bool {
    parsed.hour.is_some()
        && parsed.zone_name.is_none()
        && parsed.zone_offset.is_none()
        && zone_word(token)
}

/// A word that may name a zone: up to five capitals, or a name of UTC.
fn zone_word(token: &str) -> bool {
    token.chars().count() <= 5
        && (token.chars().all(|c| c.is_ascii_uppercase()) || UTC_NAMES.contains(&token))
}

/// `-0300`, `+03:00`, `-3` after a time, and a zone's name in parentheses after it
/// (`-0300 (BRST)`); returns the index of the last token it used.
fn numbered_zone(tokens: &[String], at: usize, parsed: &mut Parsed) -> Option<usize> {
    let count = tokens.len();
    let sign = if tokens[at] == "+" { 1 } else { -1 };
    let digits: Vec<char> = tokens.get(at + 1)?.chars().collect();
    let part =
        |from: usize, to: usize| -> String { digits[from..to.min(digits.len())].iter().collect() };
    let mut at = at;
    let (hours, minutes) = if digits.len() == 4 {
        (int(&part(0, 2))?, int(&part(2, 4))?)
    } else if at + 2 < count && tokens[at + 2] == ":" {
        let hours = int(&tokens[at + 1])?;
        let minutes = int(tokens.get(at + 3)?)?;
        at += 2;
        (hours, minutes)
    } else if digits.len() <= 2 {
        (int(&part(0, 2))?, 0)
    } else {
        return None;
    };
    // Saturated, a huge offset is refused as dateutil's is, unless a later one replaces it.
    let seconds = hours
        .saturating_mul(3600)
        .saturating_add(minutes.saturating_mul(60));
    parsed.zone_offset = Some(sign * seconds);
    if at + 5 < count
        && jump(&tokens[at + 2])
        && tokens[at + 3] == "("
        && tokens[at + 5] == ")"
        && tokens[at + 4].chars().count() >= 3
        && parsed.zone_name.is_none()
        && zone_word(&tokens[at + 4])
    {
        parsed.zone_name = Some(tokens[at + 4].clone());
        at += 4;
    }
    Some(at + 1)
}

/// `parserinfo.validate`: the year's century, and UTC named as such.
fn validate(parsed: &mut Parsed, this_year: i64) {
    if let Some(year) = parsed.year {
        parsed.year = Some(names::convert_year(
            year,
            parsed.century_specified,
            this_year,
        ));
    }
    let named = parsed.zone_name.as_deref().filter(|name| !name.is_empty());
    if (parsed.zone_offset == Some(0) && named.is_none()) || matches!(named, Some("Z" | "z")) {
        parsed.zone_name = Some("UTC".to_owned());
        parsed.zone_offset = Some(0);
    } else if parsed.zone_offset != Some(0) && named.is_some_and(is_utc) {
        parsed.zone_offset = Some(0);
    }
}

/// `_build_naive`: `today` at midnight with what the text gave put in, then moved forward to
/// its weekday when it gave one and no day.
fn build(parsed: &Parsed, today: NaiveDate) -> Result<NaiveDateTime, String> {
    let year = parsed.year.unwrap_or(i64::from(today.year()));
    let month = parsed.month.unwrap_or(i64::from(today.month()));
    let last = days_in_month(year, month)
        .ok_or_else(|| format!("bad month number {month}; must be 1-12"))?;
    let day = parsed.day.unwrap_or(i64::from(today.day()).min(last));
    if !(1..=9999).contains(&year) {
        return Err(format!("year {year} is out of range"));
    }
    if !(1..=last).contains(&day) {
        return Err("day is out of range for month".to_owned());
    }
    let hour = checked(parsed.hour, 23, "hour")?;
    let minute = checked(parsed.minute, 59, "minute")?;
    let second = checked(parsed.second, 59, "second")?;
    let micros = checked(parsed.microsecond, 999_999, "microsecond")?;
    let date = NaiveDate::from_ymd_opt(
        i32::try_from(year).map_err(|_| "year is out of range".to_owned())?,
        u32::try_from(month).map_err(|_| "month must be in 1..12".to_owned())?,
        u32::try_from(day).map_err(|_| "day is out of range for month".to_owned())?,
    )
    .ok_or_else(|| "day is out of range for month".to_owned())?;
    let naive = date
        .and_hms_micro_opt(hour, minute, second, micros)
        .ok_or_else(|| "time is out of range".to_owned())?;
    match parsed.weekday.filter(|_| parsed.day.is_none()) {
        None => Ok(naive),
        Some(wanted) => {
            let ahead = (7 + wanted - naive.weekday().num_days_from_monday()) % 7;
            naive
                .checked_add_signed(Duration::days(i64::from(ahead)))
                .filter(|moved| moved.year() <= 9999)
                .ok_or_else(|| "date value out of range".to_owned())
        }
    }
}

/// A time's part, 0 when the text gave none, refused past `most` with Python's words.
fn checked(value: Option<i64>, most: i64, name: &str) -> Result<u32, String> {
    let value = value.unwrap_or(0);
    if !(0..=most).contains(&value) {
        return Err(format!("{name} must be in 0..{most}"));
    }
    u32::try_from(value).map_err(|_| format!("{name} must be in 0..{most}"))
}

#[cfg(test)]
mod tests;
