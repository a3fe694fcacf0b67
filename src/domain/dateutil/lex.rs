//! dateutil's `_timelex`: a text split into words, numbers, single spaces and single other
//! characters, with dotted runs (`Sep.20.2009`, `4:30:21.447`, `a.m.`) broken as it breaks
//! them; and the classes of characters Python's `str` methods give (`isdigit`, `isalpha`,
//! `isspace`), which decide where a token ends.

/// The zeros of Unicode's decimal digits (category Nd): each begins a run of ten.
const DECIMAL_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66,
    0xDE6, 0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
    0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50,
    0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

/// What Python's `isdigit` takes beyond the decimal digits (superscripts, circled digits, …):
/// they end a number's token as digits do, but no number is made of them.
const OTHER_DIGITS: [(u32, u32); 20] = [
    (0xB2, 0xB3),
    (0xB9, 0xB9),
    (0x1369, 0x1371),
    (0x19DA, 0x19DA),
    (0x2070, 0x2070),
    (0x2074, 0x2079),
    (0x2080, 0x2089),
    (0x2460, 0x2468),
    (0x2474, 0x247C),
    (0x2488, 0x2490),
    (0x24EA, 0x24EA),
    (0x24F5, 0x24FD),
    (0x24FF, 0x24FF),
    (0x2776, 0x277E),
    (0x2780, 0x2788),
    (0x278A, 0x2792),
    (0x10A40, 0x10A43),
    (0x10E60, 0x10E68),
    (0x11052, 0x1105A),
    (0x1F100, 0x1F10A),
];

/// A decimal digit's value, in any script (Python's `int` takes them all).
pub(super) fn decimal_value(c: char) -> Option<u32> {
    let code = u32::from(c);
    DECIMAL_ZEROS
        .iter()
        .find(|zero| (**zero..**zero + 10).contains(&code))
        .map(|zero| code - zero)
}

/// Python's `str.isdigit` for one character.
pub(super) fn is_digit(c: char) -> bool {
    let code = u32::from(c);
    decimal_value(c).is_some()
        || OTHER_DIGITS
            .iter()
            .any(|(first, last)| (*first..=*last).contains(&code))
}

/// Python's `str.isdigit` for a text: not empty, every character a digit.
pub(super) fn is_digits(text: &str) -> bool {
    !text.is_empty() && text.chars().all(is_digit)
}

/// Python's `str.isalpha` for one character (letters; not the letter-like numerals).
fn is_word(c: char) -> bool {
    c.is_alphabetic() && !c.is_numeric()
}

/// Python's `str.isspace` for one character.
fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Word,
    Number,
    WordDot,
    NumberDot,
}

/// `_timelex.split(text)`.
pub(super) fn tokens(text: &str) -> Vec<String> {
    // The stream skips NUL characters as it reads them.
    let chars: Vec<char> = text.chars().filter(|c| *c != '\0').collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        at = token_at(&chars, at, &mut out);
    }
    out
}

/// Reads the token that begins at `at` into `out` (in its parts, when its dots separate it);
/// returns where the next begins.
fn token_at(chars: &[char], at: usize, out: &mut Vec<String>) -> usize {
    let first = chars[at];
    let mut state = if is_word(first) {
        State::Word
    } else if is_digit(first) {
        State::Number
    } else {
        out.push(if is_space(first) {
            " ".to_owned()
        } else {
            first.to_string()
        });
        return at + 1;
    };
    let mut token = String::from(first);
    let mut seen_letters = false;
    let mut next = at + 1;
    while let Some(&c) = chars.get(next) {
        let after_dot = token.ends_with('.');
        let take = match state {
            State::Word => {
                seen_letters = true;
                if c == '.' {
                    state = State::WordDot;
                }
                is_word(c) || c == '.'
            }
            State::Number => {
                let decimal = c == '.' || (c == ',' && token.chars().count() >= 2);
                if decimal {
                    state = State::NumberDot;
                }
                is_digit(c) || decimal
            }
            State::WordDot => {
                seen_letters = true;
                if is_digit(c) && after_dot {
                    state = State::NumberDot;
                    true
                } else {
                    c == '.' || is_word(c)
                }
            }
            State::NumberDot => {
                if is_word(c) && after_dot {
                    state = State::WordDot;
                    true
                } else {
                    c == '.' || is_digit(c)
                }
            }
        };
        if !take {
            break;
        }
        token.push(c);
        next += 1;
    }
    let dotted = matches!(state, State::WordDot | State::NumberDot);
    let mut parts = Vec::new();
    if dotted && (seen_letters || token.matches('.').count() > 1 || token.ends_with(['.', ','])) {
        parts = split_at_separators(&token);
        token = parts.remove(0);
        parts.retain(|part| !part.is_empty());
    }
    if state == State::NumberDot && !token.contains('.') {
        token = token.replace(',', ".");
    }
    out.push(token);
    out.extend(parts);
    next
}

/// `re.split("([.,])", text)`: the pieces and the separators between them, in order.
fn split_at_separators(text: &str) -> Vec<String> {
    let mut pieces = vec![String::new()];
    for c in text.chars() {
        if c == '.' || c == ',' {
            pieces.push(c.to_string());
            pieces.push(String::new());
        } else if let Some(last) = pieces.last_mut() {
            last.push(c);
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_break_as_timelex_breaks_them() {
        assert_eq!(
            tokens("Sep.20.2009 4:30:21.447"),
            [
                "Sep", ".", "20", ".", "2009", " ", "4", ":", "30", ":", "21.447"
            ]
        );
        assert_eq!(tokens("2015.10.21"), ["2015", ".", "10", ".", "21"]);
        assert_eq!(tokens("10,5 a.m."), ["10.5", " ", "a", ".", "m", "."]);
        assert_eq!(tokens("21st\tOct"), ["21", "st", " ", "Oct"]);
        assert_eq!(tokens("+05:30"), ["+", "05", ":", "30"]);
    }

    #[test]
    fn digits_are_pythons() {
        assert_eq!(decimal_value('٣'), Some(3));
        assert_eq!(decimal_value('９'), Some(9));
        assert!(is_digit('²') && decimal_value('²').is_none());
        assert!(!is_digit('a') && !is_word('Ⅻ'));
    }
}
