//! Python's notion of whitespace and word characters, so that text is cut exactly where the
//! original harness's `str.rstrip()`, `str.split()` and `re` classes `\s` / `\w` cut it.
//!
//! Pure string helpers; nothing here knows about patches.

/// Python's whitespace (`str.isspace()`, `\s`) and word characters (`\w`): the one shared copy.
pub(crate) use swtbench_core::py::{is_space, is_word};

/// `s.rstrip()`.
pub(crate) fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_space)
}

/// `s.split()` (no argument): runs of whitespace separate, leading and trailing ones are dropped.
pub(crate) fn split_whitespace(s: &str) -> Vec<&str> {
    s.split(is_space).filter(|t| !t.is_empty()).collect()
}

/// The byte length of the run of whitespace at the start of `s`.
pub(crate) fn space_run(s: &str) -> usize {
    s.len() - s.trim_start_matches(is_space).len()
}

/// `s[n:]` in code points.
pub(crate) fn skip_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[i..],
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_matches_python() {
        assert!(is_space('\u{1c}'));
        assert!(is_space('\u{85}'));
        assert!(is_space('\u{a0}'));
        assert!(!is_space('\u{200b}'));
        assert_eq!(rstrip("+ x \t\u{1f}"), "+ x");
        assert_eq!(
            split_whitespace("--- a/x\tb\n+++ b/y"),
            ["---", "a/x", "b", "+++", "b/y"]
        );
        assert_eq!(space_run(" \t\nx"), 3);
        assert_eq!(skip_chars("ä/b", 2), "b");
        assert_eq!(skip_chars("a", 2), "");
    }
}
