//! Small re-creations of Python standard-library behaviour that the original harness's rendering
//! relies on: `str.isspace`/`str.strip`, `str.strip(chars)`, `re.escape`, `os.path.join` on
//! relative paths and `json.dumps` with its default settings.
//!
//! They exist so rendered text matches the original byte for byte. They must stay tiny and pure;
//! anything that is not needed for parity does not belong here.

use serde_json::Value;

/// Python's `str.isspace()` for one character (Unicode whitespace plus the ASCII separators
/// `\x1c`–`\x1f`, which Rust's `char::is_whitespace` does not include).
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\x1c'..='\x1f')
}

/// Python's `str.strip()` without arguments.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Python's `str.strip(chars)`: removes every leading and trailing character that occurs in
/// `chars` (a character *set*, not a prefix).
pub fn strip_chars<'a>(s: &'a str, chars: &str) -> &'a str {
    s.trim_matches(|c| chars.contains(c))
}

/// Python's `re.escape` (3.7 and later): a backslash before each of `()[]{}?*+-|^$\.&~#`, space,
/// tab, newline, carriage return, vertical tab and form feed.
pub fn re_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        if matches!(
            c,
            '(' | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '?'
                | '*'
                | '+'
                | '-'
                | '|'
                | '^'
                | '$'
                | '\\'
                | '.'
                | '&'
                | '~'
                | '#'
                | ' '
                | '\t'
                | '\n'
                | '\r'
                | '\x0b'
                | '\x0c'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `os.path.join(dir, name)` for the two relative pieces the original joins into a URL: an absolute
/// `name` replaces `dir`, an empty `dir` adds nothing, otherwise one `/` separates them.
pub fn path_join(dir: &str, name: &str) -> String {
    if name.starts_with('/') || dir.is_empty() {
        name.to_string()
    } else if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// `json.dumps(value)` with Python's defaults: `", "` and `": "` separators, non-ASCII and DEL
/// escaped as `\uXXXX` (surrogate pairs above the BMP), object keys in insertion order.
pub fn json_dumps(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(out, k);
                out.push_str(": ");
                write_value(out, v);
            }
            out.push('}');
        }
    }
}

fn write_str(out: &mut String, s: &str) {
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
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strip_is_a_character_set() {
        let prefix = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning'";
        let cmd = format!("{prefix} bin/test -C --verbose sympy/core/tests/test_basic.py");
        assert_eq!(
            strip_chars(&cmd, prefix),
            " bin/test -C --verbose sympy/core/tests/test_basic.p"
        );
        let bare = format!("{prefix} bin/test -C --verbose");
        assert_eq!(strip_chars(&bare, prefix), " bin/test -C --verb");
    }

    #[test]
    fn python_whitespace_includes_file_separators() {
        assert_eq!(strip("\x1c -r x \t\r"), "-r x");
        assert_eq!(strip("\u{3000}a\u{85}"), "a");
    }

    #[test]
    fn re_escape_matches_python() {
        assert_eq!(
            re_escape("astropy/io/fits/card.py"),
            "astropy/io/fits/card\\.py"
        );
        assert_eq!(re_escape("a-b c#d~e&f"), "a\\-b\\ c\\#d\\~e\\&f");
        assert_eq!(re_escape("x_y/z:1,2'\"=@"), "x_y/z:1,2'\"=@");
    }

    #[test]
    fn join_like_os_path() {
        assert_eq!(path_join("", "base.txt"), "base.txt");
        assert_eq!(
            path_join("requirements", "base.txt"),
            "requirements/base.txt"
        );
        assert_eq!(path_join("requirements", "/abs.txt"), "/abs.txt");
        assert_eq!(path_join("a/", "b"), "a/b");
    }

    #[test]
    fn json_dumps_like_python() {
        let v = json!({"a": [1, null, true], "b": "é\u{1F600}\n\"\\\u{7f}", "c": {}});
        assert_eq!(
            json_dumps(&v),
            r#"{"a": [1, null, true], "b": "\u00e9\ud83d\ude00\n\"\\\u007f", "c": {}}"#
        );
    }
}
