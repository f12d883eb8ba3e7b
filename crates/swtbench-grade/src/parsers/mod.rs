//! The per-repository test-log parsers (§6.3) and the repository → parser map (§6.4).
//!
//! Each parser turns the (pre-processed, §6.1) text of one test run into a map from test name to
//! the status string the log shows. They reproduce the original's results exactly, quirks
//! included; every quirk is named in the parser's docs. Where the original raises on a line (an
//! `IndexError` on a bare status word), the parser returns what the original would have returned
//! had it skipped that line.
//!
//! Pure functions on `&str`; nothing here reads files.

mod django;
mod pytest;
mod repro;
mod seaborn;
mod sympy;

use std::fmt;
use std::str::FromStr;

use swtbench_core::StatusMap;

pub use django::parse_django;
pub use pytest::{parse_matplotlib, parse_pytest, parse_pytest_options, parse_pytest_v2};
pub use repro::{parse_reproduction_script, REPRODUCTION_TEST_NAME};
pub use seaborn::parse_seaborn;
pub use sympy::{parse_sympy, parse_sympy_1_2};

/// One of the original's log parsers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Parser {
    /// `-rA` short summary lines (`PASSED path::test`).
    Pytest,
    /// As [`Parser::Pytest`], with absolute paths in parameter ids shortened to their last component.
    PytestOptions,
    /// Pytest with ANSI colours removed, plus old verbose lines (`path::test PASSED`).
    PytestV2,
    /// Django's runner (`test_x (app.tests.C) ... ok`) plus `ERROR:`/`FAIL:` blocks.
    Django,
    /// Seaborn's pytest output (PASSED and FAILED only).
    Seaborn,
    /// Pytest with `MouseButton.LEFT/RIGHT` parameter ids rewritten to `1`/`3`.
    Matplotlib,
    /// Sympy's own runner (`test_x ok`, `test_y F`, failure headers).
    Sympy,
    /// [`Parser::Sympy`] as the original's release 1.2.0 had it: a status word needs no
    /// whitespace after it, which reads a phantom FAILED test out of sympy 1.0/1.1's long
    /// failure headers (`--grading-version 1.2`, [`crate::GradingVersion`]).
    Sympy12,
    /// The pseudo-test `reproduction_script`, from the echoed exit code.
    ReproductionScript,
}

impl Parser {
    pub const ALL: [Parser; 9] = [
        Parser::Pytest,
        Parser::PytestOptions,
        Parser::PytestV2,
        Parser::Django,
        Parser::Seaborn,
        Parser::Matplotlib,
        Parser::Sympy,
        Parser::Sympy12,
        Parser::ReproductionScript,
    ];

    /// The parser the original uses for `repo` (§6.4), `None` if it has none.
    pub fn for_repo(repo: &str) -> Option<Parser> {
        REPO_PARSERS
            .iter()
            .find(|(r, _)| *r == repo)
            .map(|(_, p)| *p)
    }

    /// Parses one run's (pre-processed) log text.
    pub fn parse(self, log: &str) -> StatusMap {
        match self {
            Parser::Pytest => parse_pytest(log),
            Parser::PytestOptions => parse_pytest_options(log),
            Parser::PytestV2 => parse_pytest_v2(log),
            Parser::Django => parse_django(log),
            Parser::Seaborn => parse_seaborn(log),
            Parser::Matplotlib => parse_matplotlib(log),
            Parser::Sympy => parse_sympy(log),
            Parser::Sympy12 => parse_sympy_1_2(log),
            Parser::ReproductionScript => parse_reproduction_script(log),
        }
    }

    /// The original's function name (`parse_log_pytest`, …); `sympy_1_2` for release 1.2.0's
    /// `parse_log_sympy`.
    pub fn name(self) -> &'static str {
        match self {
            Parser::Pytest => "pytest",
            Parser::PytestOptions => "pytest_options",
            Parser::PytestV2 => "pytest_v2",
            Parser::Django => "django",
            Parser::Seaborn => "seaborn",
            Parser::Matplotlib => "matplotlib",
            Parser::Sympy => "sympy",
            Parser::Sympy12 => "sympy_1_2",
            Parser::ReproductionScript => "reproduction_script",
        }
    }
}

impl fmt::Display for Parser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Parser {
    type Err = crate::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.strip_prefix("parse_log_").unwrap_or(s);
        Parser::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| crate::UnknownName::new("log parser", s, None))
    }
}

/// The original's `MAP_REPO_TO_PARSER` (19 entries). `swe-bench/humaneval` and `dbt-labs/dbt-core`
/// have no parser there, and their output format is not known, so they have none here either.
pub const REPO_PARSERS: &[(&str, Parser)] = &[
    ("astropy/astropy", Parser::PytestV2),
    ("django/django", Parser::Django),
    ("marshmallow-code/marshmallow", Parser::Pytest),
    ("matplotlib/matplotlib", Parser::Matplotlib),
    ("mwaskom/seaborn", Parser::Seaborn),
    ("pallets/flask", Parser::Pytest),
    ("psf/requests", Parser::PytestOptions),
    ("pvlib/pvlib-python", Parser::Pytest),
    ("pydata/xarray", Parser::Pytest),
    ("pydicom/pydicom", Parser::PytestOptions),
    ("pylint-dev/astroid", Parser::Pytest),
    ("pylint-dev/pylint", Parser::PytestOptions),
    ("pytest-dev/pytest", Parser::Pytest),
    ("pyvista/pyvista", Parser::Pytest),
    ("scikit-learn/scikit-learn", Parser::PytestV2),
    ("sqlfluff/sqlfluff", Parser::Pytest),
    ("sphinx-doc/sphinx", Parser::PytestV2),
    ("nielstron/humaneval_fix", Parser::Pytest),
    ("sympy/sympy", Parser::Sympy),
];

/// The first position at or after a point where a search (`find` on the rest of the text)
/// succeeds, remembered between calls: the original's regexes scan ahead from every candidate start (`[^\s]*`, `[^)]*`), which
/// is quadratic on a long stretch without the character (a megabyte of `test_test_…` without a
/// space). Calls with non-decreasing starts reuse the last answer while they are still before it,
/// so a whole log costs one scan.
pub(crate) struct NextMatch<'a, F: Fn(&str) -> Option<usize>> {
    text: &'a str,
    find: F,
    /// The last query's start and answer (`None`: no such character up to the end).
    from: usize,
    found: Option<usize>,
    valid: bool,
}

impl<'a, F: Fn(&str) -> Option<usize>> NextMatch<'a, F> {
    pub(crate) fn new(text: &'a str, find: F) -> Self {
        NextMatch {
            text,
            find,
            from: 0,
            found: None,
            valid: false,
        }
    }

    /// The first position `>= from` where the search matches.
    pub(crate) fn at_or_after(&mut self, from: usize) -> Option<usize> {
        // Nothing matches in [self.from, found), so for a later `from` up to `found` the answer
        // is the same.
        if self.valid && from >= self.from && self.found.is_none_or(|f| from <= f) {
            return self.found;
        }
        let found = (self.find)(&self.text[from..]).map(|p| from + p);
        self.from = from;
        self.found = found;
        self.valid = true;
        found
    }
}

/// The four status words pytest-style parsers look for at the start of a line.
pub(crate) const STATUS_WORDS: [&str; 4] = ["FAILED", "PASSED", "SKIPPED", "ERROR"];

/// `any(line.startswith(s) for s in STATUS_WORDS)`.
#[inline]
pub(crate) fn starts_with_status(line: &str) -> bool {
    match line.as_bytes().first() {
        Some(b'F') => line.starts_with("FAILED"),
        Some(b'P') => line.starts_with("PASSED"),
        Some(b'S') => line.starts_with("SKIPPED"),
        Some(b'E') => line.starts_with("ERROR"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_match_reuses_its_answer_and_rescans_when_needed() {
        let text = "ab cd)ef g";
        let mut ws = NextMatch::new(text, |t: &str| t.find(' '));
        assert_eq!(ws.at_or_after(0), Some(2));
        assert_eq!(ws.at_or_after(1), Some(2));
        assert_eq!(ws.at_or_after(2), Some(2));
        assert_eq!(ws.at_or_after(3), Some(8));
        assert_eq!(ws.at_or_after(9), None);
        assert_eq!(ws.at_or_after(9), None);
        // A start before the remembered one is searched again.
        assert_eq!(ws.at_or_after(0), Some(2));
        let mut close = NextMatch::new(text, |t: &str| t.find(')'));
        assert_eq!(close.at_or_after(6), None);
        assert_eq!(close.at_or_after(0), Some(5));
    }

    #[test]
    fn repo_map_has_the_originals_entries() {
        assert_eq!(REPO_PARSERS.len(), 19);
        assert_eq!(Parser::for_repo("django/django"), Some(Parser::Django));
        assert_eq!(
            Parser::for_repo("psf/requests"),
            Some(Parser::PytestOptions)
        );
        assert_eq!(Parser::for_repo("swe-bench/humaneval"), None);
        assert_eq!(Parser::for_repo("dbt-labs/dbt-core"), None);
        for p in Parser::ALL {
            assert_eq!(p.name().parse::<Parser>(), Ok(p));
        }
        assert_eq!("parse_log_sympy".parse::<Parser>(), Ok(Parser::Sympy));
    }
}
