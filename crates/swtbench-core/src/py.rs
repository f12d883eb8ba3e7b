//! The one copy of the Python built-in behaviours the original harness's parsers, renderers,
//! patch extraction and reports rely on, reproduced exactly: what `str.isspace()`, `str.split()`
//! and `\s` call whitespace, what `\w` / `\b` call a word character, how text files are read
//! (universal newlines), how `repr(float)` prints and how `json.dumps` formats (indented or on one
//! line, `ensure_ascii`, the default separators).
//!
//! Every crate that needs one of these uses this module (grading, spec rendering, extraction), so
//! the rules cannot drift apart. Pure helpers: nothing here knows about logs, specs or patches, and
//! nothing here touches files.

use std::fmt::Write as _;

use serde_json::Value;

/// Python's `str.isspace()` (also what `\s` matches in a `str` pattern): Rust's Unicode
/// White_Space plus the four information separators U+001C–U+001F.
#[inline]
pub fn is_space(c: char) -> bool {
    if c.is_ascii() {
        matches!(
            c,
            ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r' | '\x1c'..='\x1f'
        )
    } else {
        c.is_whitespace()
    }
}

/// A `\w` character in a Python `str` pattern: letters, digits and numerics of any script, plus
/// `_`. (Outside ASCII this uses Rust's Alphabetic/Numeric properties, which differ from Python's
/// only for a few combining marks.)
#[inline]
pub fn is_word(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || c == '_'
    } else {
        c.is_alphanumeric()
    }
}

/// Python's `str.split()` with no argument: runs of whitespace separate tokens, no empty tokens.
pub fn split_ws(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_space).filter(|t| !t.is_empty())
}

/// The first two tokens of `str.split()` (the only ones the parsers ever look at), and whether a
/// second one exists.
pub fn first_two_tokens(s: &str) -> (Option<&str>, Option<&str>) {
    let mut it = split_ws(s);
    (it.next(), it.next())
}

/// Reads a text file the way Python's `open(path).read()` does, except that invalid UTF-8 is
/// replaced instead of raising: `\r\n` and lone `\r` become `\n` (universal newlines).
///
/// Returns the text and whether any byte sequence had to be replaced.
pub fn read_text(bytes: &[u8]) -> (std::borrow::Cow<'_, str>, bool) {
    let (text, lossy) = match std::str::from_utf8(bytes) {
        Ok(s) => (std::borrow::Cow::Borrowed(s), false),
        Err(_) => (String::from_utf8_lossy(bytes), true),
    };
    // No copy of text that needs no change (a log can be hundreds of megabytes).
    if !text.contains('\r') {
        return (text, lossy);
    }
    (std::borrow::Cow::Owned(universal_newlines(&text)), lossy)
}

/// `\r\n` → `\n`, then lone `\r` → `\n`.
pub fn universal_newlines(s: &str) -> String {
    if !s.contains('\r') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('\r') {
        out.push_str(&rest[..p]);
        out.push('\n');
        rest = &rest[p + 1..];
        if let Some(r) = rest.strip_prefix('\n') {
            rest = r;
        }
    }
    out.push_str(rest);
    out
}

/// `repr(x)` of a Python float: the shortest round-trip digits, positional for exponents in
/// −4‥15 and scientific (`1e-05`, `1.5e+16`) outside.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    // Rust's `{:e}` prints the shortest round-trip digits: `d[.ddd]e<exp>`.
    let sci = format!("{:e}", x.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let n = digits.len() as i32;
    let decpt = exp + 1;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..-decpt {
            out.push('0');
        }
        out.push_str(&digits);
    } else if decpt < n {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    } else {
        out.push_str(&digits);
        for _ in 0..decpt - n {
            out.push('0');
        }
        out.push_str(".0");
    }
    out
}

/// `json.dumps(value, indent=4)` (default `ensure_ascii=True`, separators `,`/`: `), no trailing
/// newline. Object keys keep their order.
pub fn dumps_indent4(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Some(4), 0);
    out
}

/// `json.dumps(value)`: one line with `, ` and `: ` separators, `ensure_ascii=True`.
pub fn dumps_compact(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, None, 0);
    out
}

fn write_value(out: &mut String, v: &Value, indent: Option<usize>, level: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else {
                out.push_str(&float_repr(n.as_f64().unwrap_or(f64::NAN)));
            }
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                    if indent.is_none() {
                        out.push(' ');
                    }
                }
                newline(out, indent, level + 1);
                write_value(out, item, indent, level + 1);
            }
            newline(out, indent, level);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                    if indent.is_none() {
                        out.push(' ');
                    }
                }
                newline(out, indent, level + 1);
                write_str(out, k);
                out.push_str(": ");
                write_value(out, item, indent, level + 1);
            }
            newline(out, indent, level);
            out.push('}');
        }
    }
}

fn newline(out: &mut String, indent: Option<usize>, level: usize) {
    if let Some(n) = indent {
        out.push('\n');
        for _ in 0..n * level {
            out.push(' ');
        }
    }
}

/// A JSON string as Python's `json.dumps` writes it with `ensure_ascii=True`.
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whitespace_matches_python() {
        assert!(is_space('\x1c') && is_space('\x1f') && is_space('\u{a0}') && is_space('\u{3000}'));
        assert!(!is_space('\u{200b}') && !is_space('a') && !is_space('\x00'));
        let v: Vec<&str> = split_ws("  a\x1db\t\u{2003}c  ").collect();
        assert_eq!(v, vec!["a", "b", "c"]);
        assert_eq!(first_two_tokens("PASSED"), (Some("PASSED"), None));
        assert!(is_word('é') && is_word('_') && is_word('٣') && !is_word('-') && !is_word('.'));
    }

    #[test]
    fn universal_newlines_like_open() {
        assert_eq!(universal_newlines("a\r\nb\rc\n\r\n"), "a\nb\nc\n\n");
        let (t, lossy) = read_text(b"ok\xff\r\nx");
        assert_eq!(t, "ok\u{fffd}\nx");
        assert!(lossy);
        assert!(!read_text(b"plain").1);
    }

    #[test]
    fn float_repr_matches_python() {
        let cases = [
            (0.5, "0.5"),
            (1.0, "1.0"),
            (100.0, "100.0"),
            (1.0 / 3.0, "0.3333333333333333"),
            (100.0 * 49.0 / 276.0, "17.753623188405797"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e17, "1.2345e+17"),
            (-2.5, "-2.5"),
            (0.0, "0.0"),
            (123456.789, "123456.789"),
        ];
        for (x, want) in cases {
            assert_eq!(float_repr(x), want, "{x}");
        }
    }

    #[test]
    fn dumps_like_python() {
        let v = json!({"a": [1, 2.0, "é\n\"", null], "b": {}, "c": [], "d": {"x": true}});
        assert_eq!(
            dumps_indent4(&v),
            "{\n    \"a\": [\n        1,\n        2.0,\n        \"\\u00e9\\n\\\"\",\n        null\n    ],\n    \"b\": {},\n    \"c\": [],\n    \"d\": {\n        \"x\": true\n    }\n}"
        );
        assert_eq!(
            dumps_compact(&v),
            "{\"a\": [1, 2.0, \"\\u00e9\\n\\\"\", null], \"b\": {}, \"c\": [], \"d\": {\"x\": true}}"
        );
        let mut s = String::new();
        write_str(&mut s, "\u{1F600}\x7f\x01");
        assert_eq!(s, "\"\\ud83d\\ude00\\u007f\\u0001\"");
    }

    #[test]
    fn compact_dumps_like_python_defaults() {
        let v = json!({"a": [1, null, true], "b": "é\u{1F600}\n\"\\\u{7f}", "c": {}});
        assert_eq!(
            dumps_compact(&v),
            r#"{"a": [1, null, true], "b": "\u00e9\ud83d\ude00\n\"\\\u007f", "c": {}}"#
        );
    }

    #[test]
    fn whitespace_and_word_characters_of_extraction() {
        assert!(is_space('\u{1c}') && is_space('\u{85}') && is_space('\u{a0}'));
        assert!(!is_space('\u{200b}'));
        // The same as Rust's White_Space plus the information separators, outside ASCII too.
        for c in ['\u{2003}', '\u{3000}', '\u{2028}', '\u{feff}', 'x', '\x00'] {
            assert_eq!(
                is_space(c),
                c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
            );
        }
        for c in ['a', 'Z', '0', '_', 'é', '٣', '-', '.', ' '] {
            assert_eq!(is_word(c), c.is_alphanumeric() || c == '_');
        }
    }
}
