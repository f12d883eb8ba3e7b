//! One run's `test_output.txt` → test statuses and the `applied` flag (§6.1, the original's
//! `get_logs_eval`).
//!
//! Steps, in the original's order:
//! 1. a missing file gives no tests and `applied = false`;
//! 2. the bytes are decoded as UTF-8 (invalid sequences replaced, where the original would have
//!    failed the whole run) with universal newlines, as Python's `open().read()` does;
//! 3. if the text contains `trace.py --count -C coverage.cover`, only what follows the echoed
//!    `+ python3 …trace.py --count -C coverage.cover …` line is parsed (up to a second such line,
//!    as `re.split(...)[1]`); otherwise the whole text is;
//! 4. everything from `\n+ cat coverage.cover` on is cut;
//! 5. any failure marker in the raw text gives no tests and `applied = false`;
//! 6. the repository's parser (or the reproduction-script parser) reads the rest; `applied` is
//!    whether the lower-cased raw text contains `applied patch` (from `git apply -v`).
//!
//! One step comes first that the original never needed: an output that hit `swtbench run`'s
//! output cap keeps its head and tail with a `[swtbench: N bytes of output omitted]` line between
//! them, cut at arbitrary bytes. The partial lines on either side of that line are dropped, so a
//! cut-off `PASSED tests/t.py::te` is not read as a test named `tests/t.py::te`.
//!
//! Pure: bytes in, data out.

use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use swtbench_core::StatusMap;

use crate::parsers::Parser;
use crate::py;

/// Markers whose presence anywhere in the raw output voids the run (never printed by the harness
/// itself, so they only trigger if the tests print them).
pub const FAILURE_MARKERS: [&str; 5] = [
    ">>>>> Patch Apply Failed",
    ">>>>> Reset Failed",
    ">>>>> Tests Errored",
    ">>>>> Tests Timed Out",
    "Failed to reset task environment",
];

/// The text that says the test command ran under the coverage tracer.
pub const TRACE_MARKER: &str = "trace.py --count -C coverage.cover";

/// How the test logs are read: the repository's unit-test parser or the reproduction script's
/// exit code (§8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecMode {
    #[default]
    UnitTest,
    ReproductionScript,
}

impl ExecMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecMode::UnitTest => "unit_test",
            ExecMode::ReproductionScript => "reproduction_script",
        }
    }
}

impl std::str::FromStr for ExecMode {
    type Err = crate::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "unit_test" | "unit-test" => Ok(ExecMode::UnitTest),
            "reproduction_script" | "reproduction-script" => Ok(ExecMode::ReproductionScript),
            other => Err(crate::UnknownName::new(
                "exec mode",
                other,
                Some("unit_test or reproduction_script"),
            )),
        }
    }
}

/// Something about a log worth telling the user; none of these change the parse result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogNote {
    /// The output had invalid UTF-8; it was decoded with replacement characters (the original
    /// would have recorded the whole run as an error with no output).
    InvalidUtf8,
    /// The trace marker appears but no echoed `+ python3 …trace.py…` line precedes it: the
    /// original crashes (`IndexError`); here the run yields no tests.
    TraceSplitFailed,
    /// A failure marker (`>>>>> Tests Errored`, …) voided the run.
    FailureMarker,
}

/// What one run's log says.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ParsedLog {
    /// Whether `test_output.txt` existed.
    pub present: bool,
    /// `git apply -v` reported an applied patch (the lower-cased raw text contains `applied patch`).
    pub applied: bool,
    pub tests: StatusMap,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<LogNote>,
}

/// Which parser reads logs of `repo` in `mode`; `None` when the original has no parser for `repo`.
pub fn parser_for(repo: &str, mode: ExecMode) -> Option<Parser> {
    match mode {
        ExecMode::ReproductionScript => Some(Parser::ReproductionScript),
        ExecMode::UnitTest => Parser::for_repo(repo),
    }
}

/// Parses one run's output; `None` means the file does not exist.
pub fn parse_log(output: Option<&[u8]>, parser: Parser) -> ParsedLog {
    let Some(bytes) = output else {
        return ParsedLog::default();
    };
    let (text, lossy) = py::read_text(bytes);
    let mut parsed = parse_text(&text, parser);
    if lossy {
        parsed.notes.insert(0, LogNote::InvalidUtf8);
    }
    parsed
}

/// One run's output parsed for grading: its log and its coverage dump, from one decoding of the
/// bytes (which can then be dropped before the next run's output is read).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedRun {
    pub log: ParsedLog,
    pub coverage: crate::coverage::CoverageMap,
}

/// [`parse_log`] and [`crate::coverage::parse_dump`] of one output, decoding it once.
pub fn parse_run(output: Option<&[u8]>, parser: Parser) -> ParsedRun {
    let Some(bytes) = output else {
        return ParsedRun::default();
    };
    let (text, lossy) = py::read_text(bytes);
    let mut log = parse_text(&text, parser);
    if lossy {
        log.notes.insert(0, LogNote::InvalidUtf8);
    }
    ParsedRun {
        log,
        coverage: crate::coverage::parse_dump_text(&text),
    }
}

/// Parses an already decoded log text (universal newlines already applied).
pub fn parse_text(raw: &str, parser: Parser) -> ParsedLog {
    let joined = drop_cut_lines(raw);
    let raw: &str = &joined;
    let mut notes = Vec::new();
    let applied = contains_applied_patch(raw);
    if FAILURE_MARKERS
        .iter()
        .any(|m| memchr::memmem::find(raw.as_bytes(), m.as_bytes()).is_some())
    {
        return ParsedLog {
            present: true,
            applied: false,
            tests: StatusMap::new(),
            notes: vec![LogNote::FailureMarker],
        };
    }
    let content = match test_section(raw) {
        Some(c) => c,
        None => {
            notes.push(LogNote::TraceSplitFailed);
            ""
        }
    };
    ParsedLog {
        present: true,
        applied,
        tests: parser.parse(content),
        notes,
    }
}

fn cut_marker_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    RE.get_or_init(|| Regex::new(r"\n\[swtbench: [0-9]+ bytes of output omitted\]\n").unwrap())
}

/// Whether `line` is the line `swtbench run` puts where it cut an output that exceeded its cap.
pub fn is_cut_marker_line(line: &str) -> bool {
    cut_marker_re().is_match(&format!("\n{line}\n"))
}

/// Removes every output-cap marker line together with the partial line before it (the head was
/// cut at an arbitrary byte; nothing when it ended at a line end) and the line after it (the tail
/// starts at an arbitrary byte).
pub fn drop_cut_lines(raw: &str) -> std::borrow::Cow<'_, str> {
    if memchr::memmem::find(raw.as_bytes(), b" bytes of output omitted]").is_none() {
        return std::borrow::Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut rest = 0;
    for m in cut_marker_re().find_iter(raw) {
        if m.start() < rest {
            continue;
        }
        let head = &raw[rest..m.start()];
        // Keep the head up to its last complete line (with its newline).
        let keep = head.rfind('\n').map_or(0, |p| p + 1);
        out.push_str(&head[..keep]);
        // Skip the marker and the tail's first (partial) line, newline included.
        rest = raw[m.end()..]
            .find('\n')
            .map_or(raw.len(), |p| m.end() + p + 1);
    }
    out.push_str(&raw[rest.min(raw.len())..]);
    std::borrow::Cow::Owned(out)
}

fn trace_line_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    RE.get_or_init(|| {
        Regex::new(r"\n\+ python3 [^\n]*trace.py --count -C coverage.cover [^\n]*\n").unwrap()
    })
}

/// Whether `line` (one line, without its line end) is the echoed trace command
/// [`test_section`] looks for, when it stands between two line ends.
pub fn is_trace_command_line(line: &str) -> bool {
    trace_line_re().is_match(&format!("\n{line}\n"))
}

/// Steps 3–4: the part of the raw text the parser reads; `None` where the original raises.
pub fn test_section(raw: &str) -> Option<&str> {
    let mut content = raw;
    if memchr::memmem::find(raw.as_bytes(), TRACE_MARKER.as_bytes()).is_some() {
        let mut it = trace_line_re().find_iter(raw);
        let first = it.next()?;
        let end = it.next().map_or(raw.len(), |m| m.start());
        content = &raw[first.end()..end];
    }
    if let Some(cut) = memchr::memmem::find(content.as_bytes(), b"\n+ cat coverage.cover") {
        content = &content[..cut];
    }
    Some(content)
}

/// `"applied patch" in raw.lower()`. Only ASCII letters can lower-case into that phrase (the one
/// non-ASCII candidate, `İ`, lower-cases to two characters), so an ASCII case-insensitive search
/// is exact.
pub fn contains_applied_patch(raw: &str) -> bool {
    static RE: OnceLock<regex::bytes::Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    RE.get_or_init(|| regex::bytes::Regex::new("(?i-u)applied patch").unwrap())
        .is_match(raw.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use swtbench_core::TestStatus;

    const TRACED: &str = "+ git apply -v -\nChecking patch t.py...\nApplied patch t.py cleanly.\n\
PASSED install_log::not_a_test\n\
+ python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(a\\.py)' -m pytest -rA t.py\n\
PASSED t.py::test_a\n\
FAILED t.py::test_b - x\n\
+ cat coverage.cover\n\
PASSED t.py::after_cover\n\
{\"/testbed/a.py\": {\"1\": 1}}\n\
+ git checkout abc\n";

    #[test]
    fn traced_output_is_cut_to_the_test_section() {
        let p = parse_text(TRACED, Parser::Pytest);
        assert!(p.applied && p.present && p.notes.is_empty());
        let names: Vec<&str> = p.tests.keys().map(String::as_str).collect();
        assert_eq!(names, vec!["t.py::test_a", "t.py::test_b"]);
    }

    #[test]
    fn untraced_output_is_parsed_whole_but_cut_at_cover() {
        let text = TRACED.replace("trace.py --count -C coverage.cover", "trace.py");
        let p = parse_text(&text, Parser::Pytest);
        assert!(p.tests.contains_key("install_log::not_a_test"));
        assert!(!p.tests.contains_key("t.py::after_cover"));
    }

    #[test]
    fn second_trace_line_ends_the_section() {
        let text = "x\n+ python3 /root/trace.py --count -C coverage.cover --p a\nPASSED a::b\n\
+ python3 /root/trace.py --count -C coverage.cover --p b\nPASSED c::d\n";
        let p = parse_text(text, Parser::Pytest);
        assert_eq!(p.tests.len(), 1);
        assert_eq!(p.tests.get("a::b"), Some(&TestStatus::Passed));
    }

    #[test]
    fn trace_marker_without_echo_line_yields_nothing() {
        let text = "trace.py --count -C coverage.cover\nApplied patch x cleanly.\nPASSED a::b\n";
        let p = parse_text(text, Parser::Pytest);
        assert!(p.tests.is_empty());
        assert!(p.applied);
        assert_eq!(p.notes, vec![LogNote::TraceSplitFailed]);
    }

    #[test]
    fn markers_void_the_run() {
        let text = "Applied patch x cleanly.\nPASSED a::b\n>>>>> Tests Errored\n";
        let p = parse_text(text, Parser::Pytest);
        assert!(!p.applied && p.tests.is_empty());
        assert_eq!(p.notes, vec![LogNote::FailureMarker]);
    }

    #[test]
    fn missing_file_and_invalid_utf8() {
        let p = parse_log(None, Parser::Pytest);
        assert!(!p.present && !p.applied && p.tests.is_empty());
        let p = parse_log(Some(b"APPLIED PATCH\r\nPASSED a::\xff\r\n"), Parser::Pytest);
        assert!(p.present && p.applied);
        assert_eq!(p.notes, vec![LogNote::InvalidUtf8]);
        assert_eq!(p.tests.get("a::\u{fffd}"), Some(&TestStatus::Passed));
    }

    #[test]
    fn partial_lines_around_an_output_cut_are_dropped() {
        // Head cut in the middle of a summary line, tail starting in the middle of another.
        let text = "Applied patch t.py cleanly.\nPASSED t.py::test_a\nPASSED t.py::te\n\
[swtbench: 12345 bytes of output omitted]\n\
t_b\nFAILED t.py::test_c - x\n";
        let p = parse_text(text, Parser::Pytest);
        let names: Vec<&str> = p.tests.keys().map(String::as_str).collect();
        assert_eq!(names, vec!["t.py::test_a", "t.py::test_c"]);
        assert!(p.applied);
        // A head that ended at a line end loses nothing before the marker.
        let text = "PASSED t.py::test_a\n\n[swtbench: 1 bytes of output omitted]\nSED x\nPASSED t.py::test_d\n";
        assert_eq!(
            drop_cut_lines(text),
            "PASSED t.py::test_a\nPASSED t.py::test_d\n"
        );
        // Marker at the very end (the tail was empty) and text without a marker.
        assert_eq!(
            drop_cut_lines("a\nb\n[swtbench: 3 bytes of output omitted]\n"),
            "a\n"
        );
        assert_eq!(
            drop_cut_lines("a\n[swtbench: x bytes of output omitted]\nb"),
            "a\n[swtbench: x bytes of output omitted]\nb"
        );
        assert!(is_cut_marker_line("[swtbench: 42 bytes of output omitted]"));
        assert!(!is_cut_marker_line(
            "[swtbench: the eval script timed out after 1 s]"
        ));
    }

    #[test]
    fn runner_notes_are_not_tests_for_any_parser() {
        let note = "[swtbench: the eval script timed out after 1800 s and was killed; the output above is what it printed until then]\n";
        for p in Parser::ALL {
            assert!(p.parse(note).is_empty(), "{p}");
        }
        // Not even as the status a Django test line waits for.
        assert!(Parser::Django
            .parse(&format!("test_a (app.T) ... \n{note}"))
            .is_empty());
    }

    #[test]
    fn applied_flag_is_case_insensitive() {
        assert!(contains_applied_patch("xx aPPlied PATCH yy"));
        assert!(!contains_applied_patch("applied  patch"));
        assert!(!contains_applied_patch("appl"));
    }
}
