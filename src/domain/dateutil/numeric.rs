//! dateutil's `_parse_numeric_token`: what a number in the text is, from its length and the
//! tokens around it — a run of date digits (`20151021`, `151021`), a time (`12:00:05`,
//! `1230`, `12h`), a part of a date with separators (`21/10/2015`), an hour before am/pm, or a
//! year, month or day.

use super::Parsed;
use super::names::{adjust_ampm, ampm, hms, jump, month};
use super::number::{Number, decimal, int, seconds_and_micros};
use super::ymd::{Label, Ymd};

/// Reads the number `value` at `tokens[at]`; returns the index of the last token it used.
/// `None` is dateutil's `ValueError` (or `IndexError`): the text is not a date.
pub(super) fn read(
    tokens: &[String],
    at: usize,
    value: &Number,
    parsed: &mut Parsed,
    ymd: &mut Ymd,
) -> Option<usize> {
    let text = tokens[at].as_str();
    let count = tokens.len();
    let mut at = at;
    if digit_run(text, tokens.get(at + 1).map(String::as_str), parsed, ymd)? {
        return Some(at);
    }
    if let Some(label_at) = hms_index(tokens, at) {
        // HH[ ]h, MM[ ]m, SS[.ss][ ]s
        let unit = hms(&tokens[label_at])?;
        let unit = if label_at > at {
            at = label_at;
            unit
        } else {
            unit + 1
        };
        assign_hms(parsed, value, text, unit)?;
    } else if at + 2 < count && tokens[at + 1] == ":" {
        // HH:MM[:SS[.ss]]
        parsed.hour = Some(value.whole()?);
        let minutes = decimal(&tokens[at + 2])?;
        (parsed.minute, parsed.second) = minutes_and_seconds(&minutes)?;
        if at + 4 < count && tokens[at + 3] == ":" {
            let (second, micros) = seconds_and_micros(&tokens[at + 4])?;
            (parsed.second, parsed.microsecond) = (Some(second), Some(micros));
            at += 2;
        }
        at += 2;
    } else if at + 1 < count && matches!(tokens[at + 1].as_str(), "-" | "/" | ".") {
        at = separated(tokens, at, ymd)?;
    } else if at + 1 >= count || jump(&tokens[at + 1]) {
        match tokens.get(at + 2).and_then(|token| ampm(token)) {
            Some(half) => {
                // 12 am
                parsed.hour = Some(adjust_ampm(value.whole()?, half));
                at += 1;
            }
            None => ymd.append_number(value, None)?,
        }
        at += 1;
    } else if let Some(half) = ampm(&tokens[at + 1])
        && value.cmp_whole(0).is_ge()
        && value.cmp_whole(24).is_lt()
    {
        // 12am
        parsed.hour = Some(adjust_ampm(value.whole()?, half));
        at += 1;
    } else if ymd.could_be_day(value) {
        ymd.append_number(value, None)?;
    }
    Some(at)
}

/// A number read by its length alone: `19990101T23[59]` (the hour after a full date),
/// `YYMMDD` or `HHMMSS[.ss]`, `YYYYMMDD[hhmm[ss]]`. Whether it was one.
fn digit_run(text: &str, next: Option<&str>, parsed: &mut Parsed, ymd: &mut Ymd) -> Option<bool> {
    let chars: Vec<char> = text.chars().collect();
    let length = chars.len();
    let slice = |from: usize, to: usize| -> String { chars[from..to.min(length)].iter().collect() };
    if ymd.len() == 3
        && matches!(length, 2 | 4)
        && parsed.hour.is_none()
        && next.is_none_or(|after| after != ":" && hms(after).is_none())
    {
        parsed.hour = Some(int(&slice(0, 2))?);
        if length == 4 {
            parsed.minute = Some(int(&slice(2, 4))?);
        }
    } else if length == 6 || (length > 6 && chars.iter().position(|c| *c == '.') == Some(6)) {
        if ymd.is_empty() && !text.contains('.') {
            ymd.append_text(&slice(0, 2), None)?;
            ymd.append_text(&slice(2, 4), None)?;
            ymd.append_text(&slice(4, length), None)?;
        } else {
            parsed.hour = Some(int(&slice(0, 2))?);
            parsed.minute = Some(int(&slice(2, 4))?);
            let (second, micros) = seconds_and_micros(&slice(4, length))?;
            (parsed.second, parsed.microsecond) = (Some(second), Some(micros));
        }
    } else if matches!(length, 8 | 12 | 14) {
        ymd.append_text(&slice(0, 4), Some(Label::Year))?;
        ymd.append_text(&slice(4, 6), None)?;
        ymd.append_text(&slice(6, 8), None)?;
        if length > 8 {
            parsed.hour = Some(int(&slice(8, 10))?);
            parsed.minute = Some(int(&slice(10, 12))?);
            if length > 12 {
                parsed.second = Some(int(&slice(12, length))?);
            }
        }
    } else {
        return Some(false);
    }
    Some(true)
}

/// `01-01[-01]`, `01-Jan[-01]` (with `-`, `/` or `.`): the date's parts after a number.
fn separated(tokens: &[String], at: usize, ymd: &mut Ymd) -> Option<usize> {
    let count = tokens.len();
    let separator = tokens[at + 1].as_str();
    ymd.append_text(&tokens[at], None)?;
    let mut at = at;
    if at + 2 < count && !jump(&tokens[at + 2]) {
        let second = tokens[at + 2].as_str();
        if super::lex::is_digits(second) {
            ymd.append_text(second, None)?;
        } else {
            ymd.append_month(month(second)?)?;
        }
        if at + 3 < count && tokens[at + 3] == separator {
            let third = tokens.get(at + 4)?;
            match month(third) {
                Some(number) => ymd.append_month(number)?,
                None => ymd.append_text(third, None)?,
            }
            at += 2;
        }
        at += 1;
    }
    Some(at + 1)
}

/// `_find_hms_idx`: where the `h`, `m` or `s` that labels the number at `at` is.
fn hms_index(tokens: &[String], at: usize) -> Option<usize> {
    let is_unit = |index: usize| tokens.get(index).is_some_and(|token| hms(token).is_some());
    if is_unit(at + 1) {
        Some(at + 1)
    } else if at + 2 < tokens.len() && tokens[at + 1] == " " && is_unit(at + 2) {
        Some(at + 2)
    } else if at > 0 && is_unit(at - 1) {
        Some(at - 1)
    } else if 1 < at && at == tokens.len() - 1 && tokens[at - 1] == " " && is_unit(at - 2) {
        Some(at - 2)
    } else {
        None
    }
}

/// `_assign_hms`: the number as hours (0), minutes (1) or seconds (2); a unit after seconds
/// (3) sets nothing.
fn assign_hms(parsed: &mut Parsed, value: &Number, text: &str, unit: usize) -> Option<()> {
    match unit {
        0 => {
            parsed.hour = Some(value.whole()?);
            if value.has_fraction() {
                parsed.minute = Some(value.sixtieths());
            }
        }
        1 => (parsed.minute, parsed.second) = minutes_and_seconds(value)?,
        2 => {
            let (second, micros) = seconds_and_micros(text)?;
            (parsed.second, parsed.microsecond) = (Some(second), Some(micros));
        }
        _ => {}
    }
    Some(())
}

/// `_parse_min_sec`: whole minutes, and the seconds of a fraction (none without one).
fn minutes_and_seconds(value: &Number) -> Option<(Option<i64>, Option<i64>)> {
    let second = value.has_fraction().then(|| value.sixtieths());
    Some((Some(value.whole()?), second))
}
