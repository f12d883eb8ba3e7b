//! The pytest-family parsers: `pytest`, `pytest_options`, `pytest_v2`, `matplotlib`.
//!
//! All read pytest's `-rA` short summary: a line starting with a status word maps its second
//! whitespace token to its first. Quirks kept for parity:
//! - `SKIPPED [1] file.py:12: reason` records the junk test name `[1]`;
//! - `ERROR: file or directory not found: x` records the test `file` with status `ERROR:`;
//! - on `FAILED` lines every ` - ` becomes a space before splitting (so `FAILED - x` names `x`).

use std::sync::OnceLock;

use regex::Regex;
use swtbench_core::{StatusMap, TestStatus};

use super::starts_with_status;
use crate::py::{first_two_tokens, split_ws};

/// `(name, status)` of a summary line, or `None` when the line has fewer than two tokens.
#[inline]
fn summary_pair(line: &str) -> Option<(String, TestStatus)> {
    let replaced;
    let line = if line.starts_with("FAILED") && line.contains(" - ") {
        replaced = line.replace(" - ", " ");
        replaced.as_str()
    } else {
        line
    };
    match first_two_tokens(line) {
        (Some(status), Some(name)) => Some((name.to_string(), TestStatus::from_word(status))),
        _ => None,
    }
}

/// `parse_log_pytest`.
pub fn parse_pytest(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        if starts_with_status(line) {
            if let Some((name, status)) = summary_pair(line) {
                map.insert(name, status);
            }
        }
    }
    map
}

/// `parse_log_matplotlib`: pytest after replacing `MouseButton.LEFT` → `1` and
/// `MouseButton.RIGHT` → `3` in every line.
pub fn parse_matplotlib(log: &str) -> StatusMap {
    if memchr::memmem::find(log.as_bytes(), b"MouseButton.").is_none() {
        return parse_pytest(log);
    }
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let replaced;
        let line = if line.contains("MouseButton.") {
            replaced = line
                .replace("MouseButton.LEFT", "1")
                .replace("MouseButton.RIGHT", "3");
            replaced.as_str()
        } else {
            line
        };
        if starts_with_status(line) {
            if let Some((name, status)) = summary_pair(line) {
                map.insert(name, status);
            }
        }
    }
    map
}

/// `parse_log_pytest_options`: pytest, but a parametrised id `main[/abs/path/x]` (one leading `/`,
/// no `*`) is recorded as `main[/x]`. As the original's `(.*?)\[(.*)\]` does, the id is cut at its
/// first `[` and its last `]`; anything after that `]` is dropped.
pub fn parse_pytest_options(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        if !starts_with_status(line) {
            continue;
        }
        let Some((name, status)) = summary_pair(line) else {
            continue;
        };
        map.insert(shorten_option(&name), status);
    }
    map
}

fn shorten_option(name: &str) -> String {
    let (Some(open), Some(close)) = (name.find('['), name.rfind(']')) else {
        return name.to_string();
    };
    if close <= open {
        return name.to_string();
    }
    let main = &name[..open];
    let mut option = &name[open + 1..close];
    if option.starts_with('/') && !option.starts_with("//") && !option.contains('*') {
        option = &option[option.rfind('/').unwrap_or(0)..];
    }
    format!("{main}[{option}]")
}

fn ansi_colour_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    RE.get_or_init(|| Regex::new(r"\[\d+m").unwrap())
}

/// `parse_log_pytest_v2`: first removes `[<digits>m` sequences, then every control character
/// U+0001–U+001F (tabs included) from the line; then pytest's rule, or, for a line *ending* in a
/// status word, old pytest's verbose form `path::test STATUS` (first token → second token).
///
/// The original raises `IndexError` on a line that is only a status word; such lines are skipped.
pub fn parse_pytest_v2(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for raw in log.split('\n') {
        let cleaned = clean_v2_line(raw);
        let line: &str = &cleaned;
        if starts_with_status(line) {
            if let Some((name, status)) = summary_pair(line) {
                map.insert(name, status);
            }
        } else if ends_with_status(line) {
            let mut it = split_ws(line);
            if let (Some(name), Some(status)) = (it.next(), it.next()) {
                map.insert(name.to_string(), TestStatus::from_word(status));
            }
        }
    }
    map
}

/// The original's `re.sub(r"\[(\d+)m", "", line)` followed by deleting U+0001–U+001F, in one
/// pass. Pattern matches are decided on the original line (control characters inside a
/// `[<digits>m` break it, as they do for the regex that runs first); lines with non-ASCII text
/// right after a `[` go through the regex itself, since `\d` also matches non-ASCII digits.
fn clean_v2_line(line: &str) -> std::borrow::Cow<'_, str> {
    let bytes = line.as_bytes();
    if !bytes.iter().any(|&b| b == b'[' || (1..32).contains(&b)) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'[' {
            let digits = bytes[i + 1..]
                .iter()
                .take_while(|d| d.is_ascii_digit())
                .count();
            match bytes.get(i + 1 + digits) {
                Some(b'm') if digits > 0 => {
                    i += digits + 2;
                    continue;
                }
                Some(n) if !n.is_ascii() => return clean_v2_line_regex(line),
                _ => {}
            }
            out.push(b);
        } else if !(1..32).contains(&b) {
            out.push(b);
        }
        i += 1;
    }
    // Only ASCII bytes were removed, so the rest is still UTF-8.
    std::borrow::Cow::Owned(String::from_utf8(out).unwrap_or_default())
}

fn clean_v2_line_regex(line: &str) -> std::borrow::Cow<'_, str> {
    let subbed = ansi_colour_re().replace_all(line, "");
    std::borrow::Cow::Owned(
        subbed
            .chars()
            .filter(|c| !('\u{1}'..='\u{1f}').contains(c))
            .collect(),
    )
}

fn ends_with_status(line: &str) -> bool {
    super::STATUS_WORDS.iter().any(|w| line.ends_with(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, &str)]) -> StatusMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), TestStatus::from_word(v)))
            .collect()
    }

    #[test]
    fn pytest_summary_and_its_junk_keys() {
        let log = "collected 3 items\n\
PASSED tests/test_a.py::test_one\n\
FAILED tests/test_a.py::test_two - AssertionError: x - y\n\
SKIPPED [1] tests/test_a.py:10: no network\n\
ERROR: file or directory not found: tests/test_b.py\n\
FAILED - tests/test_a.py::test_three\n\
PASSED\n\
\x20PASSED tests/indented.py::t\n\
ERROR tests/test_a.py::test_four - RuntimeError\n";
        assert_eq!(
            parse_pytest(log),
            m(&[
                ("tests/test_a.py::test_one", "PASSED"),
                ("tests/test_a.py::test_two", "FAILED"),
                ("[1]", "SKIPPED"),
                ("file", "ERROR:"),
                ("tests/test_a.py::test_three", "FAILED"),
                ("tests/test_a.py::test_four", "ERROR"),
            ])
        );
    }

    #[test]
    fn later_lines_win() {
        let log = "FAILED t::x\nPASSED t::x\n";
        assert_eq!(parse_pytest(log), m(&[("t::x", "PASSED")]));
    }

    #[test]
    fn options_shorten_absolute_paths() {
        let log = "PASSED tests/test_r.py::test_x[/home/user/data/file.txt]\n\
PASSED tests/test_r.py::test_y[//server/share]\n\
PASSED tests/test_r.py::test_z[/a/*/b]\n\
PASSED tests/test_r.py::test_w[a][/b/c]tail\n\
PASSED tests/test_r.py::plain\n\
PASSED tests/test_r.py::open[only\n";
        assert_eq!(
            parse_pytest_options(log),
            m(&[
                ("tests/test_r.py::test_x[/file.txt]", "PASSED"),
                ("tests/test_r.py::test_y[//server/share]", "PASSED"),
                ("tests/test_r.py::test_z[/a/*/b]", "PASSED"),
                ("tests/test_r.py::test_w[a][/b/c]", "PASSED"),
                ("tests/test_r.py::plain", "PASSED"),
                ("tests/test_r.py::open[only", "PASSED"),
            ])
        );
    }

    #[test]
    fn v2_strips_colours_controls_and_reads_old_verbose_lines() {
        let log = "\x1b[32mPASSED\x1b[0m a.py::t1\n\
\x1b[31mFAILED\x1b[0m a.py::t2 - assert 0\n\
a.py::t3 PASSED\n\
a.py::t4 extra words FAILED\n\
PASSED\n\
xPASSED\n\
PASSED\ta.py::tab\n\
a.py::t5 PASSED \n";
        assert_eq!(
            parse_pytest_v2(log),
            m(&[
                ("a.py::t1", "PASSED"),
                ("a.py::t2", "FAILED"),
                ("a.py::t3", "PASSED"),
                ("a.py::t4", "extra"),
            ])
        );
        // The tab is deleted, so the test name is glued to the status word: one token only.
        assert!(!parse_pytest_v2("PASSED\ta.py::tab\n").contains_key("a.py::tab"));
    }

    #[test]
    fn matplotlib_rewrites_mouse_buttons() {
        let log = "PASSED lib/t.py::test_click[MouseButton.LEFT]\nFAILED lib/t.py::test_click[MouseButton.RIGHT] - x\n";
        assert_eq!(
            parse_matplotlib(log),
            m(&[
                ("lib/t.py::test_click[1]", "PASSED"),
                ("lib/t.py::test_click[3]", "FAILED"),
            ])
        );
    }
}
