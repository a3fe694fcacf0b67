//! dateutil's `parserinfo` in English, as Nova uses it: the words it knows (weekdays, months,
//! `h`/`m`/`s`, am/pm, the UTC zones, the words it jumps over) and its two-digit-year rule.

/// Words between the parts of a date (`m` from `a.m`, `t` from ISO's `T`).
const JUMP: [&str; 18] = [
    " ", ".", ",", ";", "-", "/", "'", "at", "on", "and", "ad", "m", "t", "of", "st", "nd", "rd",
    "th",
];
const WEEKDAYS: [&[&str]; 7] = [
    &["mon", "monday"],
    &["tue", "tuesday"],
    &["wed", "wednesday"],
    &["thu", "thursday"],
    &["fri", "friday"],
    &["sat", "saturday"],
    &["sun", "sunday"],
];
const MONTHS: [&[&str]; 12] = [
    &["jan", "january"],
    &["feb", "february"],
    &["mar", "march"],
    &["apr", "april"],
    &["may"],
    &["jun", "june"],
    &["jul", "july"],
    &["aug", "august"],
    &["sep", "sept", "september"],
    &["oct", "october"],
    &["nov", "november"],
    &["dec", "december"],
];
const HMS: [&[&str]; 3] = [
    &["h", "hour", "hours"],
    &["m", "minute", "minutes"],
    &["s", "second", "seconds"],
];
const AMPM: [&[&str]; 2] = [&["am", "a"], &["pm", "p"]];
/// The names of UTC, as written (`UTCZONE`).
pub(super) const UTC_NAMES: [&str; 4] = ["UTC", "GMT", "Z", "z"];

fn index_in(table: &[&[&str]], word: &str) -> Option<usize> {
    let word = word.to_lowercase();
    table
        .iter()
        .position(|names| names.contains(&word.as_str()))
}

/// The weekday a word names, Monday 0.
pub(super) fn weekday(word: &str) -> Option<u32> {
    index_in(&WEEKDAYS, word).and_then(|index| u32::try_from(index).ok())
}

/// The month a word names, January 1.
pub(super) fn month(word: &str) -> Option<i64> {
    index_in(&MONTHS, word).and_then(|index| i64::try_from(index + 1).ok())
}

/// Hours (0), minutes (1) or seconds (2).
pub(super) fn hms(word: &str) -> Option<usize> {
    index_in(&HMS, word)
}

/// Before noon (0) or after (1).
pub(super) fn ampm(word: &str) -> Option<usize> {
    index_in(&AMPM, word)
}

pub(super) fn jump(word: &str) -> bool {
    JUMP.contains(&word.to_lowercase().as_str())
}

/// `of`, as in `Jan of 01`.
pub(super) fn pertain(word: &str) -> bool {
    word.eq_ignore_ascii_case("of")
}

/// Whether a zone name is UTC's, in any case.
pub(super) fn is_utc(name: &str) -> bool {
    UTC_NAMES.iter().any(|utc| utc.eq_ignore_ascii_case(name))
}

/// `parserinfo.tzoffset`: the offset a zone name gives by itself. Only a lowercase `z` (its
/// table of UTC's names is lowercased, the lookup is not); every other name gives none.
pub(super) fn zone_offset(name: &str) -> Option<i64> {
    (name == "z").then_some(0)
}

/// An hour on a 12-hour clock made a 24-hour one.
pub(super) fn adjust_ampm(hour: i64, half: usize) -> i64 {
    match (hour, half) {
        (hour, 1) if hour < 12 => hour + 12,
        (12, 0) => 0,
        (hour, _) => hour,
    }
}

/// `convertyear`: a year of one or two digits, its century not written, is the one within
/// 50 years of `this_year` (49 before, 50 after excluded).
pub(super) fn convert_year(year: i64, century_specified: bool, this_year: i64) -> i64 {
    if year >= 100 || century_specified {
        return year;
    }
    let year = year + this_year / 100 * 100;
    if year >= this_year + 50 {
        year - 100
    } else if year < this_year - 50 {
        year + 100
    } else {
        year
    }
}
