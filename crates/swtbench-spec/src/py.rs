//! Small re-creations of Python standard-library behaviour that the original harness's rendering
//! relies on: `str.isspace`/`str.strip`, `str.strip(chars)`, `re.escape`, `os.path.join` on
//! relative paths and `json.dumps` with its default settings.
//!
//! They exist so rendered text matches the original byte for byte. They must stay tiny and pure;
//! anything that is not needed for parity does not belong here.

/// Python's whitespace and `json.dumps` come from the one shared copy; `json_dumps` is
/// `json.dumps(value)` with Python's defaults (`", "` / `": "` separators, `ensure_ascii`).
pub use swtbench_core::py::{dumps_compact as json_dumps, is_space};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
