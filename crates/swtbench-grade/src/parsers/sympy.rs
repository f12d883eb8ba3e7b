//! `parse_log_sympy`: two passes over the whole text, neither anchored to line starts.
//!
//! 1. Failure headers, the original's `_\n(_*) (.*)\.py::?(.*) (_*)`: a line ending in `_`,
//!    then a line of underscores, a space, `<path>.py:` or `<path>.py::`, the name, a space and
//!    underscores. The name (FAILED) is what lies between the *last* `.py:` that still has a space
//!    after it and the *last* space of that line. Errors get the same header, so they are FAILED.
//! 2. Result lines, `test_(\S*)\s+(E|F|ok)\s`: `test_<name>` → ERROR / FAILED / PASSED, overriding
//!    pass 1. Sympy's `f` (xfail), `s` and `X` are not recorded.
//!
//! [`parse_sympy_1_2`] is the parser of the original's release 1.2.0, whose result-line regex had
//! no trailing `\s` (`test_(\S*)\s+(E|F|ok)`): a status word then needs nothing after it
//! (`test_x Eok` is an ERROR, `test_x ok` at the very end counts), and `\s+` runs over line ends.
//! Sympy 1.0 and 1.1 print a failure header that is 80 characters or longer without underscores
//! and with a trailing space, and the traceback directly after it starts with `  File "…"`
//! (sympy 1.2 and later print `Traceback (most recent call last):` there): the header's
//! `<file>.py:<test>` followed by that `F` is a FAILED test of its own, named
//! `test_<file rest>.py:<test>` when the file's name starts with `test_`.
//!
//! Both regexes are reproduced by hand (their backtracking is deterministic enough to state).

use memchr::memmem;
use swtbench_core::{StatusMap, TestStatus};

use super::NextMatch;
use crate::py::is_space;

pub fn parse_sympy(log: &str) -> StatusMap {
    parse(log, true)
}

/// The sympy parser of the original's release 1.2.0 (see the module documentation).
pub fn parse_sympy_1_2(log: &str) -> StatusMap {
    parse(log, false)
}

/// `trailing_space`: a status word must be followed by whitespace (the current regex).
fn parse(log: &str, trailing_space: bool) -> StatusMap {
    let mut map = StatusMap::new();
    failure_headers(log, &mut map);
    result_lines(log, &mut map, trailing_space);
    map
}

fn failure_headers(log: &str, map: &mut StatusMap) {
    let bytes = log.as_bytes();
    let finder = memmem::Finder::new("_\n");
    let mut pos = 0;
    while let Some(off) = finder.find(&bytes[pos..]) {
        let at = pos + off;
        let line_start = at + 2;
        let line_end =
            memchr::memchr(b'\n', &bytes[line_start..]).map_or(bytes.len(), |p| line_start + p);
        match header_name(&log[line_start..line_end]) {
            Some((name, consumed)) => {
                map.insert(name.to_string(), TestStatus::Failed);
                pos = line_start + consumed;
            }
            None => pos = at + 1,
        }
    }
}

/// Matches `(_*) (.*)\.py::?(.*) (_*)` at the start of `line`; returns group 3 and the match length.
fn header_name(line: &str) -> Option<(&str, usize)> {
    let k = line.bytes().take_while(|b| *b == b'_').count();
    let rest_start = k + 1;
    if line.as_bytes().get(k) != Some(&b' ') {
        return None;
    }
    let rest = &line[rest_start..];
    let last_space = rest.rfind(' ')?;
    // The rightmost `.py:` that ends at or before the last space.
    let j = rest[..last_space].rfind(".py:")?;
    let mut name_start = j + 4;
    if rest.as_bytes().get(name_start) == Some(&b':') {
        name_start += 1;
    }
    let name = &rest[name_start..last_space];
    let trailing = rest[last_space + 1..]
        .bytes()
        .take_while(|b| *b == b'_')
        .count();
    Some((name, rest_start + last_space + 1 + trailing))
}

fn result_lines(log: &str, map: &mut StatusMap, trailing_space: bool) {
    let bytes = log.as_bytes();
    let finder = memmem::Finder::new("test_");
    let mut space = NextMatch::new(log, |t: &str| t.find(is_space));
    let mut pos = 0;
    while let Some(off) = finder.find(&bytes[pos..]) {
        let s = pos + off;
        match result_at(log, s, &mut space, trailing_space) {
            Some((name_end, status, end)) => {
                let mut key = String::with_capacity(name_end - s);
                key.push_str(&log[s..name_end]);
                map.insert(key, status);
                pos = end;
            }
            None => pos = s + 1,
        }
    }
}

/// Matches `test_(\S*)\s+(E|F|ok)\s` (without `trailing_space`: `test_(\S*)\s+(E|F|ok)`) at `s`;
/// returns the end of `test_<name>`, the status and the end of the match.
fn result_at<F: Fn(&str) -> Option<usize>>(
    log: &str,
    s: usize,
    space: &mut NextMatch<'_, F>,
    trailing_space: bool,
) -> Option<(usize, TestStatus, usize)> {
    let after = &log[s..];
    let name_len = space.at_or_after(s)? - s;
    let ws = &after[name_len..];
    let ws_len = ws.find(|c: char| !is_space(c))?;
    let tail = &ws[ws_len..];
    let (status, word_len) = if tail.starts_with('E') {
        (TestStatus::Error, 1)
    } else if tail.starts_with('F') {
        (TestStatus::Failed, 1)
    } else if tail.starts_with("ok") {
        (TestStatus::Passed, 2)
    } else {
        return None;
    };
    let mut end = s + name_len + ws_len + word_len;
    if trailing_space {
        let next = tail[word_len..].chars().next()?;
        if !is_space(next) {
            return None;
        }
        end += next.len_utf8();
    }
    Some((s + name_len, status, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(m: &'a StatusMap, k: &str) -> Option<&'a str> {
        m.get(k).map(|s| s.as_str())
    }

    #[test]
    fn result_lines_and_overrides() {
        let log = "sympy/printing/tests/test_ccode.py[3] \n\
test_ccode_sqrt ok\n\
test_ccode_Pow F\n\
test_ccode_err E\n\
test_ccode_xfail f\n\
test_ccode_skip s\n\
test_bad_status Eok\n\
________________________________________________________________________________\n\
____________ sympy/printing/tests/test_ccode.py:test_ccode_Pow _____________\n\
____ sympy/printing/tests/test_x.py::test_two_colons ____\n\
____ sympy/a.py:b.py:test_last_py _ tail\n";
        let m = parse_sympy(log);
        assert_eq!(get(&m, "test_ccode_sqrt"), Some("PASSED"));
        assert_eq!(get(&m, "test_ccode_Pow"), Some("FAILED"));
        assert_eq!(get(&m, "test_ccode_err"), Some("ERROR"));
        assert_eq!(get(&m, "test_ccode_xfail"), None);
        assert_eq!(get(&m, "test_bad_status"), None);
        // The file header line is not a test.
        assert_eq!(get(&m, "sympy/printing/tests/test_ccode"), None);
        // A match consumes its header's trailing underscores, so a header directly after another
        // header has no `_\n` before it and is not read.
        assert_eq!(get(&m, "test_two_colons"), None);
        // The name ends at the line's last space.
        assert_eq!(get(&m, "test_last_py _"), Some("FAILED"));
    }

    #[test]
    fn release_1_2_needs_no_whitespace_after_the_status() {
        // A sympy 1.1 failure header of 80+ characters (no underscores, a trailing space), then
        // the traceback's `  File` line.
        let log = "test_long_name_of_a_test F                              [FAIL]\n\n\n\
________________________________________________________________________________\n \
sympy/polys/tests/test_generated_by_a_tool_x.py:test_long_name_of_a_test \n  \
File \"/testbed/sympy/polys/tests/test_generated_by_a_tool_x.py\", line 3, in test_long_name_of_a_test\n\
AssertionError\n";
        let phantom = "test_generated_by_a_tool_x.py:test_long_name_of_a_test";
        let now = parse_sympy(log);
        assert_eq!(get(&now, "test_long_name_of_a_test"), Some("FAILED"));
        assert_eq!(now.len(), 1, "{now:?}");
        let old = parse_sympy_1_2(log);
        assert_eq!(get(&old, "test_long_name_of_a_test"), Some("FAILED"));
        assert_eq!(get(&old, phantom), Some("FAILED"));
        assert_eq!(old.len(), 2, "{old:?}");
        // Sympy 1.2 and later: `Traceback` follows the header, no phantom test.
        let later = log.replace("  File", "Traceback (most recent call last):\n  File");
        assert_eq!(parse_sympy_1_2(&later), now);
        // The status word needs nothing after it.
        assert_eq!(get(&parse_sympy_1_2("test_a ok"), "test_a"), Some("PASSED"));
        assert_eq!(
            get(&parse_sympy_1_2("test_b Eok\n"), "test_b"),
            Some("ERROR")
        );
        assert_eq!(
            get(&parse_sympy_1_2("test_c okay\n"), "test_c"),
            Some("PASSED")
        );
        assert!(parse_sympy_1_2("test_d s\n").is_empty());
    }

    #[test]
    fn status_needs_trailing_whitespace() {
        assert!(parse_sympy("test_a ok").is_empty());
        assert_eq!(get(&parse_sympy("test_a ok\n"), "test_a"), Some("PASSED"));
        // `test_` anywhere, not only at a line start.
        assert_eq!(get(&parse_sympy("xtest_b F\n"), "test_b"), Some("FAILED"));
    }
}
