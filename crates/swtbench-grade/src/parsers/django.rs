//! `parse_log_django`: two passes, reproducing the original's regexes by hand (the first one uses
//! negative lookaheads, which the `regex` crate does not offer).
//!
//! **Pass 1** is the original's multi-line pattern
//!
//! ```text
//! (?P<testname>\b(test|app_unmigrated)([^\s]*)\s+\([^)]*\))
//! ((.|\n)(?!\.\.\.))*\s*\.\.\.
//! ((.|\n)(?!\b(test_|app_unmigrated|OK|ok|FAILED|ERROR|skipped)\b))*\s*
//! \b(?P<status>OK|ok|FAILED|ERROR|skipped)\b
//! ```
//!
//! Working out its backtracking gives this procedure, which [`first_pass`] implements:
//! - the name: at a word boundary, `test…` or `app_unmigrated…` up to the next whitespace, then
//!   whitespace (newlines too), `(`, and everything up to the first `)`. Let `p` be the end;
//! - the ellipsis candidates, in the order the backtracking tries them: the first `...` starting
//!   after `p` if the character before it is whitespace, then a `...` starting exactly at `p`;
//! - the status after a candidate: let `e` be the end of the ellipsis and `t` the first position
//!   after `e` where a *stop word* (`test_`, `app_unmigrated`, `OK`, `ok`, `FAILED`, `ERROR`,
//!   `skipped`, each with word boundaries on both sides) starts. If the stop word at `t` is a
//!   status and whitespace precedes it, that is the status; otherwise a status starting exactly at
//!   `e`; otherwise the next candidate is tried, and without one there is no match here.
//!
//! A failed attempt moves on to the next possible name start; a match continues after its status.
//! Consequences kept for parity (§15): Django's own `... FAIL` is not a status, so a failed test
//! takes the status of the *next* test line and that next test disappears; a docstring line between
//! the name and `...` is skipped; setup chatter between `...` and the status is skipped.
//!
//! **Pass 2**: every line starting with `ERROR:` or `FAIL:` whose text between the first and the
//! second occurrence of `ERROR`/`FAIL` contains exactly one `\b(test_|app_unmigrated)\S*\s+\([^)]*\)`
//! sets that test to ERROR or FAILED, overriding pass 1.

use memchr::memmem;
use swtbench_core::{StatusMap, TestStatus};

use super::NextMatch;
use crate::py::{is_space, is_word};

pub fn parse_django(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    first_pass(log, &mut map);
    second_pass(log, &mut map);
    map
}

/// The status words of pass 1 and what they mean.
const STATUSES: [(&str, TestStatus); 5] = [
    ("OK", TestStatus::Passed),
    ("ok", TestStatus::Passed),
    ("FAILED", TestStatus::Failed),
    ("ERROR", TestStatus::Error),
    ("skipped", TestStatus::Skipped),
];

/// Words that stop the scan between `...` and the status (the negative lookahead).
const STOP_WORDS: [&str; 7] = [
    "test_",
    "app_unmigrated",
    "OK",
    "ok",
    "FAILED",
    "ERROR",
    "skipped",
];

fn char_before(text: &str, pos: usize) -> Option<char> {
    text[..pos].chars().next_back()
}

fn char_at(text: &str, pos: usize) -> Option<char> {
    text[pos..].chars().next()
}

/// Sorted start positions of `...` (overlapping: `....` starts two).
fn ellipsis_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = memmem::find(&bytes[i..], b"...") {
        let start = i + off;
        let mut end = start + 3;
        while end < bytes.len() && bytes[end] == b'.' {
            end += 1;
        }
        out.extend(start..=end - 3);
        i = end;
    }
    out
}

/// Sorted start positions of stop words, each with the status it reads as (if it is one).
/// One SIMD substring search per word (none of the words overlaps itself, so non-overlapping
/// search finds every occurrence), then the boundary checks.
fn stop_word_starts(text: &str) -> Vec<(usize, Option<TestStatus>)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    for word in STOP_WORDS {
        let status = STATUSES
            .iter()
            .find(|(s, _)| *s == word)
            .map(|(_, st)| st.clone());
        for i in memmem::find_iter(bytes, word.as_bytes()) {
            // Every stop word starts and ends with a word character, so the boundaries mean: no
            // word character right before, none right after.
            if !prev_is_word(text, i) && !next_is_word(text, i + word.len()) {
                out.push((i, status.clone()));
            }
        }
    }
    out.sort_unstable_by_key(|(i, _)| *i);
    out
}

#[inline]
fn prev_is_word(text: &str, pos: usize) -> bool {
    match text.as_bytes()[..pos].last() {
        None => false,
        Some(b) if b.is_ascii() => b.is_ascii_alphanumeric() || *b == b'_',
        Some(_) => char_before(text, pos).is_some_and(is_word),
    }
}

#[inline]
fn next_is_word(text: &str, pos: usize) -> bool {
    match text.as_bytes().get(pos) {
        None => false,
        Some(b) if b.is_ascii() => b.is_ascii_alphanumeric() || *b == b'_',
        Some(_) => char_at(text, pos).is_some_and(is_word),
    }
}

/// Candidate name starts (`test` or `app_unmigrated` at a word boundary), in order.
fn name_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut out: Vec<usize> = memmem::find_iter(bytes, b"test")
        .chain(memmem::find_iter(bytes, b"app_unmigrated"))
        .filter(|&i| !prev_is_word(text, i))
        .collect();
    out.sort_unstable();
    out
}

/// The name part of both passes, `\b(prefix)\S*\s+\([^)]*\)`, matched at increasing starts of
/// one text (the `\b` already checked). The two scans ahead (to the next whitespace, to the next
/// `)`) remember their answers, so a long stretch without either costs one scan, not one per
/// candidate.
struct Names<'a> {
    text: &'a str,
    space: NextMatch<'a, fn(&str) -> Option<usize>>,
    close: NextMatch<'a, fn(&str) -> Option<usize>>,
}

impl<'a> Names<'a> {
    fn new(text: &'a str) -> Self {
        fn space(t: &str) -> Option<usize> {
            t.find(is_space)
        }
        fn close(t: &str) -> Option<usize> {
            memchr::memchr(b')', t.as_bytes())
        }
        Names {
            text,
            space: NextMatch::new(text, space),
            close: NextMatch::new(text, close),
        }
    }

    /// The end of the name starting at `s` (after its `)`).
    fn at(&mut self, s: usize) -> Option<usize> {
        let run_end = self.space.at_or_after(s)?;
        let ws = self.text[run_end..].find(|c: char| !is_space(c))?;
        let open = run_end + ws;
        if self.text.as_bytes()[open] != b'(' {
            return None;
        }
        Some(self.close.at_or_after(open + 1)? + 1)
    }
}

fn first_pass(log: &str, map: &mut StatusMap) {
    let names = name_starts(log);
    if names.is_empty() {
        return;
    }
    let dots = ellipsis_starts(log);
    let stops = stop_word_starts(log);
    let mut names_at = Names::new(log);
    let mut pos = 0;
    for s in names {
        if s < pos {
            continue;
        }
        let Some(p) = names_at.at(s) else {
            continue;
        };
        // The ellipsis: the later candidate first (the greedy scan), then the one right at `p`
        // (what backtracking falls back to when no status follows the first).
        let next_dots = dots.partition_point(|&d| d <= p);
        let later = dots
            .get(next_dots)
            .copied()
            .filter(|&d| char_before(log, d).is_some_and(is_space));
        let at_p = dots.binary_search(&p).is_ok().then_some(p);
        let Some((t, status)) = [later, at_p]
            .into_iter()
            .flatten()
            .find_map(|d| status_after(log, &stops, d + 3))
        else {
            continue;
        };
        map.insert(log[s..p].to_string(), status);
        pos = t + status_word_len(&log[t..]);
    }
}

/// The status part after an ellipsis ending at `e`: the first stop word after `e` if it is a
/// status preceded by whitespace, else a status starting exactly at `e`.
fn status_after(
    log: &str,
    stops: &[(usize, Option<TestStatus>)],
    e: usize,
) -> Option<(usize, TestStatus)> {
    let next_stop = stops.partition_point(|&(t, _)| t <= e);
    if let Some((t, Some(st))) = stops.get(next_stop) {
        if char_before(log, *t).is_some_and(is_space) {
            return Some((*t, st.clone()));
        }
    }
    match next_stop.checked_sub(1).map(|i| &stops[i]) {
        Some((t, Some(st))) if *t == e => Some((e, st.clone())),
        _ => None,
    }
}

/// Length of the status word that starts `rest` (one of [`STATUSES`]).
fn status_word_len(rest: &str) -> usize {
    STATUSES
        .iter()
        .find(|(w, _)| rest.starts_with(w))
        .map_or(0, |(w, _)| w.len())
}

fn second_pass(log: &str, map: &mut StatusMap) {
    for line in log.split('\n') {
        let (key, status) = if line.starts_with("ERROR:") {
            ("ERROR", TestStatus::Error)
        } else if line.starts_with("FAIL:") {
            ("FAIL", TestStatus::Failed)
        } else {
            continue;
        };
        // `line.split(key)[1]`: between the first and the second occurrence of the key.
        let after = &line[key.len()..];
        let part = match after.find(key) {
            Some(i) => &after[..i],
            None => after,
        };
        if let Some(name) = single_failure_name(part) {
            map.insert(name.to_string(), status);
        }
    }
}

/// The only match of `\b(test_|app_unmigrated)\S*\s+\([^)]*\)` in `part`, if there is exactly one.
fn single_failure_name(part: &str) -> Option<&str> {
    let bytes = part.as_bytes();
    let mut starts: Vec<usize> = memmem::find_iter(bytes, b"test_")
        .chain(memmem::find_iter(bytes, b"app_unmigrated"))
        .filter(|&i| !prev_is_word(part, i))
        .collect();
    starts.sort_unstable();
    let mut names = Names::new(part);
    let mut found: Option<&str> = None;
    let mut pos = 0;
    for s in starts {
        if s < pos {
            continue;
        }
        if let Some(end) = names.at(s) {
            if found.is_some() {
                return None;
            }
            found = Some(&part[s..end]);
            pos = end;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(m: &'a StatusMap, k: &str) -> Option<&'a str> {
        m.get(k).map(|s| s.as_str())
    }

    #[test]
    fn plain_ok_error_skipped() {
        let log = "test_a (app.tests.T) ... ok\n\
test_b (app.tests.T) ... ERROR\n\
test_c (app.tests.T) ... skipped 'no db'\n\
test_d (app.tests.T) ... FAILED\n";
        let m = parse_django(log);
        assert_eq!(get(&m, "test_a (app.tests.T)"), Some("PASSED"));
        assert_eq!(get(&m, "test_b (app.tests.T)"), Some("ERROR"));
        assert_eq!(get(&m, "test_c (app.tests.T)"), Some("SKIPPED"));
        assert_eq!(get(&m, "test_d (app.tests.T)"), Some("FAILED"));
    }

    #[test]
    fn fail_swallows_the_next_test_then_fail_block_overrides() {
        let log = "test_a (app.tests.T) ... FAIL\n\
test_b (app.tests.T) ... ok\n\
test_c (app.tests.T) ... ok\n\
\n\
======================================================================\n\
FAIL: test_a (app.tests.T)\n";
        let m = parse_django(log);
        assert_eq!(get(&m, "test_a (app.tests.T)"), Some("FAILED"));
        assert_eq!(get(&m, "test_b (app.tests.T)"), None);
        assert_eq!(get(&m, "test_c (app.tests.T)"), Some("PASSED"));
        // Without the FAIL: block the failed test reads as passed.
        let m = parse_django("test_a (app.tests.T) ... FAIL\ntest_b (app.tests.T) ... ok\n");
        assert_eq!(get(&m, "test_a (app.tests.T)"), Some("PASSED"));
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn docstrings_and_setup_chatter() {
        let log = "test_a (app.tests.T)\nA docstring line. ... Creating test database...\nSystem check ok\n";
        let m = parse_django(log);
        assert_eq!(get(&m, "test_a (app.tests.T)"), Some("PASSED"));
        let log =
            "test_a (app.tests.T) ... Testing against Django\nImporting application app\nok\n";
        assert_eq!(
            get(&parse_django(log), "test_a (app.tests.T)"),
            Some("PASSED")
        );
    }

    #[test]
    fn ellipsis_without_space_only_right_after_the_name() {
        // `...` glued to the name is accepted; glued to other text it is not.
        let m = parse_django("test_a (app.T)... ok\n");
        assert_eq!(get(&m, "test_a (app.T)"), Some("PASSED"));
        let m = parse_django("test_a (app.T) x... ok\n");
        assert!(m.is_empty());
        // A status glued to the ellipsis.
        let m = parse_django("test_a (app.T) ...ok\n");
        assert_eq!(get(&m, "test_a (app.T)"), Some("PASSED"));
    }

    #[test]
    fn second_pass_needs_exactly_one_name() {
        let log = "ERROR: test_x (app.tests.T) (qs=<QuerySet []>)\n\
FAIL: test_y (app.tests.T) test_z (app.tests.U)\n\
ERROR: test_w (app.ERRORS.T)\n\
FAIL: app_unmigrated (unittest.loader._FailedTest)\n";
        let m = parse_django(log);
        assert_eq!(get(&m, "test_x (app.tests.T)"), Some("ERROR"));
        assert_eq!(get(&m, "test_y (app.tests.T)"), None);
        // Cut at the second `ERROR`: `(app.` has no `)`.
        assert_eq!(get(&m, "test_w (app.ERRORS.T)"), None);
        assert_eq!(
            get(&m, "app_unmigrated (unittest.loader._FailedTest)"),
            Some("FAILED")
        );
    }
}
