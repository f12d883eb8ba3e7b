//! Consistency checks on the test logs themselves: does a run's output look like what the test
//! runner and the eval script print, or did the tests under evaluation write grading text of
//! their own?
//!
//! In SWT-Bench the code under evaluation is the tests, and the grade is read from the output
//! those same tests write to. A test can print result lines for itself or for tests that do not
//! exist (from `atexit`, after the runner's summary), print them only when the gold fix is
//! present, append a coverage dump of its own, or print the harness's failure markers. The
//! original harness grades all of that as if the runner had printed it. The checks here notice
//! it: each disagreement between the log and what an honest runner prints is a [`Reason`] naming
//! the run, the test or file, and the line. They never change a grade; [`apply_strict`] is the
//! opt-in grading that does (`--strict-results`).
//!
//! Every check is tuned to fire on no honest log (the test `integrity_real_logs` runs them over
//! the ~850 real logs of `../shared/data`); the limits of each are in `docs/integrity.md`.
//!
//! Pure: text in, reasons out.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use swtbench_core::{RunKind, StatusMap, TestStatus};

use crate::logs::{self, FAILURE_MARKERS, TRACE_MARKER};
use crate::parsers::Parser;
use crate::report::InstanceReport;
use crate::transitions::Transitions;
use crate::version::GradingVersion;

/// The line that starts the coverage dump (the eval script's `set -x` echo of `cat coverage.cover`).
pub const DUMP_START: &str = "+ cat coverage.cover";

/// One thing in a run's output that an honest run does not print.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "check", rename_all = "snake_case")]
pub enum Reason {
    /// A harness failure marker (`>>>>> Tests Errored`, …). swtbench's eval script never prints
    /// one, so the tests did; the original voids the run when it sees one.
    FailureMarker {
        run: RunKind,
        line: usize,
        marker: String,
    },
    /// A line the eval script prints once (the echoed trace command, `+ cat coverage.cover`,
    /// the reproduction script's `+ echo N`) appears again: where the original splits the log,
    /// the tests moved the split.
    RepeatedMarker {
        run: RunKind,
        line: usize,
        marker: String,
    },
    /// A result line after the runner's final summary line (pytest's `== … in 0.1s ==`,
    /// Django's `Ran N tests`, sympy's `tests finished:`): printed after the runner finished.
    AfterReport {
        run: RunKind,
        line: usize,
        test: String,
    },
    /// A pytest PASSED/FAILED result line that is not in any `short test summary info` section.
    OutsideReport {
        run: RunKind,
        line: usize,
        test: String,
    },
    /// One test reported both PASSED and FAILED.
    DoubleStatus {
        run: RunKind,
        line: usize,
        test: String,
    },
    /// A result for a test whose file (pytest) or test app (Django) the run did not select.
    UnselectedTest {
        run: RunKind,
        line: usize,
        test: String,
    },
    /// More results of one status are listed than the runner's final summary counts.
    CountMismatch {
        run: RunKind,
        line: usize,
        status: String,
        counted: u64,
        listed: u64,
    },
    /// A line shaped like a coverage dump entry (`{"/testbed/…": {…}}`) outside the dump
    /// section: the parser ignores it, but only the tests can have printed it.
    CoverageOutsideDump {
        run: RunKind,
        line: usize,
        file: String,
    },
    /// A coverage dump entry for a file the tracer does not trace (not touched by the gold fix).
    CoverageUntracedFile {
        run: RunKind,
        line: usize,
        file: String,
    },
    /// A coverage dump entry for a file that does not exist in that run's code (a file the gold
    /// fix creates, in a run without the fix; a file it deletes, in a run with it).
    CoverageMissingFile {
        run: RunKind,
        line: usize,
        file: String,
    },
    /// A coverage dump entry whose line numbers are not the file's executable lines, which the
    /// tracer lists in full for every entry (taken from the gold and base runs of the same code).
    CoverageLines {
        run: RunKind,
        line: usize,
        file: String,
        listed: u64,
        expected: u64,
    },
    /// The evidence hook took the run's secret, but its evidence file was gone (or too large)
    /// after the run ([`crate::evidence`]).
    EvidenceLost { run: RunKind, state: String },
    /// A line of the evidence file fails verification: written without the run's secret, or a
    /// line before it was removed or changed.
    EvidenceTampered {
        run: RunKind,
        evidence_line: usize,
        problem: String,
    },
    /// The log gives a test another outcome (pass against fail or error) than the test runner
    /// reported to the evidence hook.
    EvidenceDisagrees {
        run: RunKind,
        test: String,
        log: String,
        evidence: String,
    },
    /// The log has a passing result for a test of a selected file that the test runner, which
    /// reached its end, never reported.
    EvidenceUnknownTest { run: RunKind, test: String },
    /// The coverage dump in the log and the coverage the tracer handed to the evidence hook
    /// differ for a file (lines or hits the tracer never counted, or counted lines missing).
    CoverageFileDisagrees { run: RunKind, file: String },
}

impl Reason {
    /// The run whose output the reason is about.
    pub fn run(&self) -> RunKind {
        match self {
            Reason::FailureMarker { run, .. }
            | Reason::RepeatedMarker { run, .. }
            | Reason::AfterReport { run, .. }
            | Reason::OutsideReport { run, .. }
            | Reason::DoubleStatus { run, .. }
            | Reason::UnselectedTest { run, .. }
            | Reason::CountMismatch { run, .. }
            | Reason::CoverageOutsideDump { run, .. }
            | Reason::CoverageUntracedFile { run, .. }
            | Reason::CoverageMissingFile { run, .. }
            | Reason::CoverageLines { run, .. }
            | Reason::EvidenceLost { run, .. }
            | Reason::EvidenceTampered { run, .. }
            | Reason::EvidenceDisagrees { run, .. }
            | Reason::EvidenceUnknownTest { run, .. }
            | Reason::CoverageFileDisagrees { run, .. } => *run,
        }
    }

    /// The 1-based line of the run's `test_output.txt` (0: the reason is about the run's
    /// evidence, not a line of its log).
    pub fn line(&self) -> usize {
        match self {
            Reason::FailureMarker { line, .. }
            | Reason::RepeatedMarker { line, .. }
            | Reason::AfterReport { line, .. }
            | Reason::OutsideReport { line, .. }
            | Reason::DoubleStatus { line, .. }
            | Reason::UnselectedTest { line, .. }
            | Reason::CountMismatch { line, .. }
            | Reason::CoverageOutsideDump { line, .. }
            | Reason::CoverageUntracedFile { line, .. }
            | Reason::CoverageMissingFile { line, .. }
            | Reason::CoverageLines { line, .. } => *line,
            Reason::EvidenceLost { .. }
            | Reason::EvidenceTampered { .. }
            | Reason::EvidenceDisagrees { .. }
            | Reason::EvidenceUnknownTest { .. }
            | Reason::CoverageFileDisagrees { .. } => 0,
        }
    }

    /// The test the reason names, if it names one (strict grading counts it as failed).
    pub fn test(&self) -> Option<&str> {
        match self {
            Reason::AfterReport { test, .. }
            | Reason::OutsideReport { test, .. }
            | Reason::DoubleStatus { test, .. }
            | Reason::UnselectedTest { test, .. }
            | Reason::EvidenceDisagrees { test, .. }
            | Reason::EvidenceUnknownTest { test, .. } => Some(test),
            _ => None,
        }
    }

    /// The check's stable name (`after_report`, …), as in the JSON.
    pub fn check(&self) -> &'static str {
        match self {
            Reason::FailureMarker { .. } => "failure_marker",
            Reason::RepeatedMarker { .. } => "repeated_marker",
            Reason::AfterReport { .. } => "after_report",
            Reason::OutsideReport { .. } => "outside_report",
            Reason::DoubleStatus { .. } => "double_status",
            Reason::UnselectedTest { .. } => "unselected_test",
            Reason::CountMismatch { .. } => "count_mismatch",
            Reason::CoverageOutsideDump { .. } => "coverage_outside_dump",
            Reason::CoverageUntracedFile { .. } => "coverage_untraced_file",
            Reason::CoverageMissingFile { .. } => "coverage_missing_file",
            Reason::CoverageLines { .. } => "coverage_lines",
            Reason::EvidenceLost { .. } => "evidence_lost",
            Reason::EvidenceTampered { .. } => "evidence_tampered",
            Reason::EvidenceDisagrees { .. } => "evidence_disagrees",
            Reason::EvidenceUnknownTest { .. } => "evidence_unknown_test",
            Reason::CoverageFileDisagrees { .. } => "coverage_file_disagrees",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line() {
            0 => write!(f, "{}: ", self.run())?,
            line => write!(f, "{} line {line}: ", self.run())?,
        }
        match self {
            Reason::FailureMarker { marker, .. } => write!(
                f,
                "the harness failure marker `{marker}`, which swtbench never prints (the tests did)"
            ),
            Reason::RepeatedMarker { marker, .. } => write!(
                f,
                "`{marker}` again; the eval script prints it once (the tests printed it)"
            ),
            Reason::AfterReport { test, .. } => write!(
                f,
                "a result for `{test}` after the test runner's final summary line"
            ),
            Reason::OutsideReport { test, .. } => write!(
                f,
                "a result for `{test}` outside pytest's short test summary"
            ),
            Reason::DoubleStatus { test, .. } => {
                write!(f, "`{test}` reported both PASSED and FAILED")
            }
            Reason::UnselectedTest { test, .. } => write!(
                f,
                "a result for `{test}`, which is not in the test files the run selected"
            ),
            Reason::CountMismatch {
                status,
                counted,
                listed,
                ..
            } => write!(
                f,
                "{listed} tests listed {status}, but the runner's summary counts {counted}"
            ),
            Reason::CoverageOutsideDump { file, .. } => write!(
                f,
                "a coverage dump line for `{file}` outside the coverage dump (the tests printed it)"
            ),
            Reason::CoverageUntracedFile { file, .. } => write!(
                f,
                "coverage of `{file}`, a file the tracer does not trace (not in the gold fix)"
            ),
            Reason::CoverageMissingFile { file, .. } => write!(
                f,
                "coverage of `{file}`, a file that does not exist in this run's code"
            ),
            Reason::CoverageLines {
                file,
                listed,
                expected,
                ..
            } => write!(
                f,
                "coverage of `{file}` lists {listed} lines where the tracer lists the file's \
                 {expected} executable lines"
            ),
            Reason::EvidenceLost { state, .. } => write!(
                f,
                "the test runner's evidence file is {} after the run (the hook had taken the \
                 run's secret)",
                if state == "oversized" {
                    "too large"
                } else {
                    "gone"
                }
            ),
            Reason::EvidenceTampered {
                evidence_line,
                problem,
                ..
            } => write!(f, "line {evidence_line} of the evidence file: {problem}"),
            Reason::EvidenceDisagrees {
                test,
                log,
                evidence,
                ..
            } => write!(
                f,
                "the log says `{test}` {log}, the test runner reported it {evidence}"
            ),
            Reason::EvidenceUnknownTest { test, .. } => write!(
                f,
                "the log says `{test}` PASSED, but the test runner never reported it"
            ),
            Reason::CoverageFileDisagrees { file, .. } => write!(
                f,
                "the coverage dump of `{file}` differs from what the tracer recorded"
            ),
        }
    }
}

/// Whether the checks found anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    #[default]
    Ok,
    Suspicious,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Suspicious => "suspicious",
        }
    }
}

/// The checks' result for one instance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Integrity {
    /// Sorted by run, then line.
    pub reasons: Vec<Reason>,
    /// The runs whose output has no verified evidence of the test runner beside it (collected
    /// by an older swtbench, with --no-evidence, for a runner or image the evidence hook does not
    /// serve, or lost); set by the callers that read the evidence.
    pub without_evidence: Vec<RunKind>,
    /// The runs whose test runner connected to the network (`run: host:port, …`); not a reason
    /// for suspicion, a fact about the verdict. Set by the callers that read the evidence.
    pub network: Vec<String>,
}

impl Integrity {
    pub fn verdict(&self) -> Verdict {
        if self.reasons.is_empty() {
            Verdict::Ok
        } else {
            Verdict::Suspicious
        }
    }

    pub fn is_suspicious(&self) -> bool {
        !self.reasons.is_empty()
    }

    /// The tests named by a reason about `run`.
    pub fn tests_of(&self, run: RunKind) -> BTreeSet<&str> {
        self.reasons
            .iter()
            .filter(|r| r.run() == run)
            .filter_map(Reason::test)
            .collect()
    }

    /// The JSON record: `{"verdict": "ok"|"suspicious", "reasons": [{"check", "run", "line",
    /// ("test"|"file"|…), "text"}, …]}`.
    pub fn to_json(&self) -> serde_json::Value {
        let reasons: Vec<serde_json::Value> = self
            .reasons
            .iter()
            .map(|r| {
                let mut v = serde_json::to_value(r).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert("text".into(), r.to_string().into());
                }
                v
            })
            .collect();
        let mut v = serde_json::json!({ "verdict": self.verdict().as_str(), "reasons": reasons });
        if !self.network.is_empty() {
            v["network"] = self.network.clone().into();
        }
        if !self.without_evidence.is_empty() {
            v["without_evidence"] = self
                .without_evidence
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .into();
        }
        v
    }
}

impl Integrity {
    /// These reasons and `more`, sorted as [`check_instance_with`] sorts them.
    pub fn with(mut self, more: Vec<Reason>) -> Integrity {
        if more.is_empty() {
            return self;
        }
        self.reasons.extend(more);
        self.reasons
            .sort_by_key(|r| (RunKind::ALL.iter().position(|k| *k == r.run()), r.line()));
        self.reasons.dedup();
        self
    }
}

impl Serialize for Integrity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// What the checks of one instance need besides the six outputs.
#[derive(Debug, Clone, Copy)]
pub struct CheckContext<'a> {
    pub repo: &'a str,
    /// The parser the logs are graded with.
    pub parser: Parser,
    pub gold_code_patch: &'a str,
    pub gold_test_patch: &'a str,
    /// The model's test patch as executed (`None`: unknown, the checks that need it are off).
    pub model_patch: Option<&'a str>,
    /// The repository's non-test extensions (for the test directives).
    pub non_test_exts: &'a [&'a str],
}

/// Checks one instance's six outputs (decoded text, [`RunKind::ALL`] order, `None` = missing).
pub fn check_instance(ctx: &CheckContext<'_>, outputs: [Option<&str>; 6]) -> Integrity {
    check_instance_with(ctx, |kind| {
        outputs[crate::report::kind_index(kind)].map(std::borrow::Cow::Borrowed)
    })
}

/// [`check_instance`] with the outputs handed over one at a time (each dropped once checked:
/// an output can be hundreds of megabytes).
pub fn check_instance_with<'t>(
    ctx: &CheckContext<'_>,
    mut output: impl FnMut(RunKind) -> Option<std::borrow::Cow<'t, str>>,
) -> Integrity {
    let selections = Selections::of(ctx);
    let mut reasons = Vec::new();
    let mut dumps: Vec<(RunKind, Vec<DumpEntry>)> = Vec::new();
    for kind in RunKind::ALL {
        let Some(text) = output(kind) else { continue };
        let selected = selections.of_run(kind);
        let run = check_run(kind, &text, ctx.parser, selected);
        reasons.extend(run.reasons);
        dumps.push((kind, run.dump));
    }
    reasons.extend(check_coverage(ctx, &dumps));
    reasons.sort_by_key(|r| (RunKind::ALL.iter().position(|k| *k == r.run()), r.line()));
    reasons.dedup();
    Integrity {
        reasons,
        without_evidence: Vec::new(),
        network: Vec::new(),
    }
}

/// The test directives each run selected: the gold test patch's for the gold runs, the model
/// patch's for the others (`None` when the model patch is unknown).
pub(crate) struct Selections {
    gold: Vec<String>,
    model: Option<Vec<String>>,
}

impl Selections {
    pub(crate) fn of(ctx: &CheckContext<'_>) -> Selections {
        let directives =
            |p: &str| swtbench_core::directives::test_directives(p, ctx.repo, ctx.non_test_exts);
        Selections {
            gold: directives(ctx.gold_test_patch),
            model: ctx.model_patch.map(directives),
        }
    }

    pub(crate) fn of_run(&self, kind: RunKind) -> Option<&[String]> {
        match kind {
            RunKind::GoldPre | RunKind::GoldPost => Some(&self.gold),
            _ => self.model.as_deref(),
        }
    }
}

/// One entry (one JSON line) of a run's coverage dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpEntry {
    /// 1-based line in the output.
    pub line: usize,
    /// The path without `/testbed/`.
    pub file: String,
    pub lines: BTreeSet<i64>,
}

/// What [`check_run`] found in one output.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunCheck {
    pub reasons: Vec<Reason>,
    pub dump: Vec<DumpEntry>,
}

/// Checks one run's output (decoded text): markers, the runner's report, the coverage dump's
/// shape. `selected` are the run's test directives (`None` or empty: the whole suite ran, or
/// they are unknown, and the selection check is off).
pub fn check_run(
    kind: RunKind,
    text: &str,
    parser: Parser,
    selected: Option<&[String]>,
) -> RunCheck {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = RunCheck::default();
    // Failure markers: the first occurrence of each.
    for marker in FAILURE_MARKERS {
        if let Some(i) = lines.iter().position(|l| l.contains(marker)) {
            out.reasons.push(Reason::FailureMarker {
                run: kind,
                line: i + 1,
                marker: marker.to_string(),
            });
        }
    }
    // The test section the parser reads, as line indexes [start, end).
    let traced = memchr::memmem::find(text.as_bytes(), TRACE_MARKER.as_bytes()).is_some();
    let trace_lines: Vec<usize> = (1..lines.len())
        .filter(|&i| logs::is_trace_command_line(lines[i]) && i + 1 < lines.len())
        .collect();
    let (start, mut end) = if traced {
        match trace_lines.first() {
            Some(&t) => (t + 1, trace_lines.get(1).copied().unwrap_or(lines.len())),
            None => return out,
        }
    } else {
        (0, lines.len())
    };
    if let Some(&second) = trace_lines.get(1) {
        out.reasons.push(Reason::RepeatedMarker {
            run: kind,
            line: second + 1,
            marker: lines[second].chars().take(60).collect::<String>() + "…",
        });
    }
    if let Some(cut) = (start.max(1)..end).find(|&i| lines[i].starts_with(DUMP_START)) {
        end = cut;
    }
    let dump_starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_matches(crate::py::is_space) == DUMP_START)
        .collect();
    if let Some(&second) = dump_starts.get(1) {
        out.reasons.push(Reason::RepeatedMarker {
            run: kind,
            line: second + 1,
            marker: DUMP_START.to_string(),
        });
    }
    let dump_range = dump_starts.first().map(|&first| {
        let end = (first + 1..lines.len())
            .find(|&i| lines[i].starts_with("+ git checkout"))
            .unwrap_or(lines.len());
        (first, end)
    });
    if let Some((first, _)) = dump_range {
        out.dump = dump_entries(&lines, first + 1);
    }
    // Dump-shaped lines the tests printed themselves, from the test command on.
    for (i, line) in lines.iter().enumerate().skip(start) {
        if dump_range.is_some_and(|(a, b)| a < i && i < b) || !line.starts_with("{\"/testbed/") {
            continue;
        }
        if let Some(entry) = dump_entries(&lines[i..=i], 0).into_iter().next() {
            out.reasons.push(Reason::CoverageOutsideDump {
                run: kind,
                line: i + 1,
                file: entry.file,
            });
        }
    }
    let section = &lines[start..end];
    let found = match parser {
        Parser::Pytest
        | Parser::PytestOptions
        | Parser::PytestV2
        | Parser::Matplotlib
        | Parser::Seaborn => pytest_checks(kind, parser, section, start, selected),
        Parser::Django => django_checks(kind, section, start, selected),
        Parser::Sympy | Parser::Sympy12 => sympy_checks(kind, section, start),
        Parser::ReproductionScript => repro_checks(kind, section, start),
    };
    out.reasons.extend(found);
    out
}

fn dump_entries(lines: &[&str], from: usize) -> Vec<DumpEntry> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(from) {
        if line.starts_with("+ git checkout") {
            break;
        }
        if !line.starts_with("{\"/testbed/") {
            continue;
        }
        let Ok(serde_json::Value::Object(map)) = serde_json::from_str(line) else {
            continue;
        };
        for (path, hits) in map {
            let Some(hits) = hits.as_object() else {
                continue;
            };
            let file = path.strip_prefix("/testbed/").unwrap_or(&path).to_string();
            let lines = hits.keys().filter_map(|k| k.parse().ok()).collect();
            out.push(DumpEntry {
                line: i + 1,
                file,
                lines,
            });
        }
    }
    out
}

/// The entry one line gives under `parser` (the pytest-family parsers are folds over lines).
fn line_entry(parser: Parser, line: &str) -> Option<(String, TestStatus)> {
    if line.len() < 6 {
        return None;
    }
    parser.parse(line).into_iter().next()
}

fn clean(line: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    let re = RE.get_or_init(|| Regex::new(r"\x1b?\[[0-9;]*m").unwrap());
    re.replace_all(line, "").trim_end().to_string()
}

fn pytest_header_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    RE.get_or_init(|| Regex::new(r"^=+ short test summary info =+$").unwrap())
}

fn pytest_final_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    RE.get_or_init(|| {
        Regex::new(r"^=+ (.*\d+ \w+.*|no tests ran) in [0-9.]+ ?s(econds)?( \([0-9:.]+\))? =+$")
            .unwrap()
    })
}

fn count_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    RE.get_or_init(|| Regex::new(r"(\d+) (passed|failed)\b").unwrap())
}

/// Whether a directive selects the file `file` (the directive itself, or a directory above it).
pub(crate) fn selects(selected: &[String], file: &str) -> bool {
    selected.iter().any(|d| {
        let d = d.trim_end_matches('/');
        file == d || file.strip_prefix(d).is_some_and(|r| r.starts_with('/'))
    })
}

fn pytest_checks(
    kind: RunKind,
    parser: Parser,
    section: &[&str],
    offset: usize,
    selected: Option<&[String]>,
) -> Vec<Reason> {
    let mut reasons = Vec::new();
    // Report sections: a header and the final line after it.
    let cleaned: Vec<String> = section.iter().map(|l| clean(l)).collect();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut open: Option<usize> = None;
    for (i, l) in cleaned.iter().enumerate() {
        if pytest_header_re().is_match(l) {
            open = Some(i);
        } else if pytest_final_re().is_match(l) {
            if let Some(h) = open.take() {
                ranges.push((h, i));
            } else {
                ranges.push((i, i));
            }
        }
    }
    let last_final = ranges.last().map(|&(_, f)| f);
    let in_range = |i: usize| ranges.iter().any(|&(h, f)| h < i && i < f);
    let last = ranges.last().copied();
    let mut statuses: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    let mut listed = (0u64, 0u64);
    for (i, line) in section.iter().enumerate() {
        let Some((test, status)) = line_entry(parser, line) else {
            continue;
        };
        let at = offset + i + 1;
        let decisive = matches!(status, TestStatus::Passed | TestStatus::Failed);
        // Only PASSED and FAILED decide a grade (the conda wrapper of some setups prints an
        // `ERROR conda.cli.main_run:…` line after pytest's summary).
        let after = decisive && last_final.is_some_and(|f| i > f);
        let in_last = last.is_some_and(|(h, f)| h < i && i < f);
        if after {
            reasons.push(Reason::AfterReport {
                run: kind,
                line: at,
                test: test.clone(),
            });
        } else if decisive
            && !after
            && !in_range(i)
            && starts_status_word(line)
            && test
                .split_once("::")
                .is_some_and(|(file, _)| selected.is_none_or(|s| s.is_empty() || selects(s, file)))
        {
            reasons.push(Reason::OutsideReport {
                run: kind,
                line: at,
                test: test.clone(),
            });
        }
        if in_last || after {
            let e = statuses.entry(test.clone()).or_default();
            match status {
                TestStatus::Passed => e.0 = true,
                TestStatus::Failed => e.1 = true,
                _ => {}
            }
            if e.0 && e.1 && decisive {
                reasons.push(Reason::DoubleStatus {
                    run: kind,
                    line: at,
                    test: test.clone(),
                });
            }
            if in_last {
                match status {
                    TestStatus::Passed => listed.0 += 1,
                    TestStatus::Failed => listed.1 += 1,
                    _ => {}
                }
            }
            if let Some(sel) = selected.filter(|s| !s.is_empty()) {
                if let Some((file, _)) = test.split_once("::") {
                    if !selects(sel, file) {
                        reasons.push(Reason::UnselectedTest {
                            run: kind,
                            line: at,
                            test: test.clone(),
                        });
                    }
                }
            }
        }
    }
    if let Some((_, f)) = last {
        let mut counted = (0u64, 0u64);
        for c in count_re().captures_iter(&cleaned[f]) {
            let n: u64 = c[1].parse().unwrap_or(0);
            match &c[2] {
                "passed" => counted.0 += n,
                _ => counted.1 += n,
            }
        }
        for (status, l, c) in [
            ("PASSED", listed.0, counted.0),
            ("FAILED", listed.1, counted.1),
        ] {
            if l > c {
                reasons.push(Reason::CountMismatch {
                    run: kind,
                    line: offset + f + 1,
                    status: status.to_string(),
                    counted: c,
                    listed: l,
                });
            }
        }
    }
    reasons
}

/// Whether the line (colours removed) starts with PASSED or FAILED: pytest_v2's `path STATUS`
/// verbose lines are session lines, not summary lines.
fn starts_status_word(line: &str) -> bool {
    let c = clean(line);
    c.starts_with("PASSED") || c.starts_with("FAILED")
}

fn django_ran_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    RE.get_or_init(|| Regex::new(r"^Ran (\d+) tests? in [0-9.]+s\s*$").unwrap())
}

fn django_result_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    RE.get_or_init(|| Regex::new(r"^(\w+ \([\w.]+\)) \.\.\. (ok|FAIL|ERROR)\s*$").unwrap())
}

/// The line of `section` (from `from`) where `test` first appears, 0 when none does.
fn line_of(section: &[&str], from: usize, test: &str) -> usize {
    section
        .iter()
        .enumerate()
        .skip(from)
        .find(|(_, l)| l.contains(test))
        .map_or(from, |(i, _)| i)
}

fn django_checks(
    kind: RunKind,
    section: &[&str],
    offset: usize,
    selected: Option<&[String]>,
) -> Vec<Reason> {
    let mut reasons = Vec::new();
    let ran = section.iter().rposition(|l| django_ran_re().is_match(l));
    let body_end = ran.unwrap_or(section.len());
    if let Some(r) = ran {
        let tail = section[r + 1..].join("\n");
        for test in crate::parsers::parse_django(&tail).into_keys() {
            let at = line_of(section, r + 1, &test);
            reasons.push(Reason::AfterReport {
                run: kind,
                line: offset + at + 1,
                test,
            });
        }
        let counted: u64 = django_ran_re()
            .captures(section[r])
            .and_then(|c| c[1].parse().ok())
            .unwrap_or(0);
        let body = section[..r].join("\n");
        let parsed: StatusMap = crate::parsers::parse_django(&body);
        let listed = parsed.len() as u64;
        if listed > counted {
            reasons.push(Reason::CountMismatch {
                run: kind,
                line: offset + r + 1,
                status: "run".into(),
                counted,
                listed,
            });
        }
    }
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (i, line) in section[..body_end].iter().enumerate() {
        let Some(c) = django_result_re().captures(line) else {
            continue;
        };
        let (name, status) = (
            c.get(1).map_or("", |m| m.as_str()),
            c.get(2).map_or("", |m| m.as_str()),
        );
        if let Some(prev) = seen.insert(name, status) {
            if (prev == "ok") != (status == "ok") {
                reasons.push(Reason::DoubleStatus {
                    run: kind,
                    line: offset + i + 1,
                    test: name.to_string(),
                });
            }
        }
        if let Some(sel) = selected.filter(|s| !s.is_empty()) {
            let module = name
                .split_once(" (")
                .map_or("", |(_, m)| m.trim_end_matches(')'));
            // Same test app: a test module may import a test case class of another module of
            // its app, which then runs under that module's name (model_fields.test_autofield
            // runs model_fields.test_integerfield's tests).
            let app = |dotted: &str| dotted.split('.').next().unwrap_or_default().to_string();
            let chosen = sel.iter().any(|label| app(label) == app(module));
            // unittest's stand-in for a label it could not import (a test module the test patch
            // adds, before it is applied): `<a part of the label> (unittest.loader._FailedTest)`,
            // on Python 3.11+ `<part> (unittest.loader._FailedTest.<part>)`.
            let method = name.split_once(" (").map_or(name, |(m, _)| m);
            let stand_in = "unittest.loader._FailedTest";
            let failed_import = (module == stand_in
                || module
                    .strip_prefix(stand_in)
                    .and_then(|rest| rest.strip_prefix('.'))
                    == Some(method))
                && sel
                    .iter()
                    .any(|label| label.split('.').any(|part| part == method));
            if !chosen && !failed_import {
                reasons.push(Reason::UnselectedTest {
                    run: kind,
                    line: offset + i + 1,
                    test: name.to_string(),
                });
            }
        }
    }
    reasons
}

fn sympy_checks(kind: RunKind, section: &[&str], offset: usize) -> Vec<Reason> {
    let mut reasons = Vec::new();
    let Some(f) = section.iter().rposition(|l| l.contains("tests finished:")) else {
        return reasons;
    };
    let tail = section[f + 1..].join("\n");
    for test in crate::parsers::parse_sympy(&format!("\n{tail}\n")).into_keys() {
        let at = line_of(section, f + 1, &test);
        reasons.push(Reason::AfterReport {
            run: kind,
            line: offset + at + 1,
            test,
        });
    }
    let counted: u64 = count_re()
        .captures_iter(section[f])
        .filter(|c| &c[2] == "passed")
        .filter_map(|c| c[1].parse::<u64>().ok())
        .sum();
    // The result lines sympy prints (`test_x ok`), before its summary.
    let listed = section[..f]
        .iter()
        .filter(|l| {
            let mut it = crate::py::split_ws(l);
            matches!((it.next(), it.next(), it.next()), (Some(t), Some("ok"), None | Some("[OK]")) if t.starts_with("test_"))
        })
        .count() as u64;
    if listed > counted {
        reasons.push(Reason::CountMismatch {
            run: kind,
            line: offset + f + 1,
            status: "PASSED".into(),
            counted,
            listed,
        });
    }
    reasons
}

fn repro_checks(kind: RunKind, section: &[&str], offset: usize) -> Vec<Reason> {
    static RE: OnceLock<Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    let re = RE.get_or_init(|| Regex::new(r"^\+ echo \d+$").unwrap());
    let echoes: Vec<usize> = (0..section.len())
        .filter(|&i| re.is_match(section[i]))
        .collect();
    match echoes.get(1) {
        Some(&second) => vec![Reason::RepeatedMarker {
            run: kind,
            line: offset + second + 1,
            marker: "+ echo N".into(),
        }],
        None => Vec::new(),
    }
}

/// The gold fix's files: all it touches, those it creates, those it deletes.
fn gold_files(patch: &str) -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let mut all = BTreeSet::new();
    let mut created = BTreeSet::new();
    let mut deleted = BTreeSet::new();
    let mut current: Option<(String, String)> = None;
    for line in patch.split('\n') {
        if line.starts_with("diff --git a/") {
            current = swtbench_core::diff::git_header_paths(line)
                .into_iter()
                .next();
            if let Some((a, b)) = &current {
                all.insert(a.clone());
                all.insert(b.clone());
            }
        } else if let Some((a, b)) = &current {
            if line == "--- /dev/null" {
                created.insert(b.clone());
            } else if line == "+++ /dev/null" {
                deleted.insert(a.clone());
            }
        }
    }
    (all, created, deleted)
}

fn check_coverage(ctx: &CheckContext<'_>, dumps: &[(RunKind, Vec<DumpEntry>)]) -> Vec<Reason> {
    let mut reasons = Vec::new();
    let (traced, created, deleted) = gold_files(ctx.gold_code_patch);
    if traced.is_empty() {
        return reasons;
    }
    let model_files: Option<BTreeSet<String>> = ctx.model_patch.map(|p| {
        swtbench_core::diff::git_header_paths(p)
            .into_iter()
            .flat_map(|(a, b)| [a, b])
            .collect()
    });
    // The executable lines of each file in each code version, from the runs that do not run the
    // model's tests (gold and base), when all their entries agree.
    let mut reference: BTreeMap<(bool, &str), Option<&BTreeSet<i64>>> = BTreeMap::new();
    for (kind, entries) in dumps {
        if matches!(kind, RunKind::PredPre | RunKind::PredPost) {
            continue;
        }
        for e in entries {
            let slot = reference.entry((kind.is_post(), e.file.as_str()));
            match slot {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(Some(&e.lines));
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    if o.get().is_some_and(|r| r != &e.lines) {
                        o.insert(None);
                    }
                }
            }
        }
    }
    for (kind, entries) in dumps {
        let kind = *kind;
        for e in entries {
            if !traced.contains(&e.file) {
                reasons.push(Reason::CoverageUntracedFile {
                    run: kind,
                    line: e.line,
                    file: e.file.clone(),
                });
                continue;
            }
            let missing = if kind.is_post() {
                deleted.contains(&e.file)
            } else {
                created.contains(&e.file)
            };
            let touched_by_model = match &model_files {
                Some(m) => m.contains(&e.file),
                None => true,
            };
            // A pred run's model patch may add the file itself.
            let model_may_add = touched_by_model && !kind.is_shared();
            if missing && !model_may_add {
                reasons.push(Reason::CoverageMissingFile {
                    run: kind,
                    line: e.line,
                    file: e.file.clone(),
                });
                continue;
            }
            if kind.is_shared() || touched_by_model {
                continue;
            }
            if let Some(Some(expected)) = reference.get(&(kind.is_post(), e.file.as_str())) {
                if *expected != &e.lines {
                    reasons.push(Reason::CoverageLines {
                        run: kind,
                        line: e.line,
                        file: e.file.clone(),
                        listed: e.lines.len() as u64,
                        expected: expected.len() as u64,
                    });
                }
            }
        }
    }
    reasons
}

/// Strict grading (`--strict-results`): in every run, a test a reason names counts as failed
/// (instead of whatever status it was printed with), and a suspicious instance is not resolved.
/// `runs` are the six parsed status maps the report was graded from; the report's buckets are
/// recomputed as `version` buckets them.
pub fn apply_strict(
    report: &mut InstanceReport,
    runs: &[StatusMap; 6],
    integrity: &Integrity,
    version: GradingVersion,
) {
    if !integrity.is_suspicious() {
        return;
    }
    if report.patch_successfully_applied {
        let strict: Vec<StatusMap> = RunKind::ALL
            .iter()
            .zip(runs)
            .map(|(kind, map)| {
                let mut m = map.clone();
                for t in integrity.tests_of(*kind) {
                    m.insert(t.to_string(), TestStatus::Failed);
                }
                m
            })
            .collect();
        let between =
            |a: usize, b: usize| Transitions::between_for(&strict[a], &strict[b], version);
        let pred = between(0, 1);
        let base = between(4, 5);
        let (_, added) = crate::transitions::resolution(&pred, &base);
        report.added_f2p = Some(added as u64);
        report.tests_pred = Some(pred);
        report.tests_gold = Some(between(2, 3));
        report.tests_base = Some(base);
    }
    report.resolved = false;
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "+ python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(src/calc\\.py)' -m pytest --no-header -rA -p no:cacheprovider tests/test_calc.py";

    fn pytest_log(summary: &str, final_line: &str, after: &str) -> String {
        format!(
            "+ git apply -v -\nApplied patch tests/test_calc.py cleanly.\n{TRACE}\n\
============================= test session starts ==============================\n\
collected 2 items\n\ntests/test_calc.py .F                                                    [100%]\n\n\
=========================== short test summary info ============================\n\
{summary}{final_line}\n{after}+ cat coverage.cover\n\
{{\"/testbed/src/calc.py\": {{\"1\": 1, \"2\": 1, \"4\": 0}}}}\n+ git checkout abc\n"
        )
    }

    const HONEST_SUMMARY: &str =
        "PASSED tests/test_calc.py::test_add\nFAILED tests/test_calc.py::test_sub - assert 1 == 2\n";
    const HONEST_FINAL: &str =
        "========================= 1 failed, 1 passed in 0.05s ==========================";

    fn sel() -> Vec<String> {
        vec!["tests/test_calc.py".to_string()]
    }

    fn run(text: &str) -> Vec<Reason> {
        check_run(RunKind::PredPost, text, Parser::Pytest, Some(&sel())).reasons
    }

    #[test]
    fn an_honest_pytest_log_has_no_reasons() {
        let log = pytest_log(HONEST_SUMMARY, HONEST_FINAL, "");
        assert_eq!(run(&log), vec![]);
        let r = check_run(RunKind::PredPost, &log, Parser::Pytest, Some(&sel()));
        assert_eq!(r.dump.len(), 1);
        assert_eq!(r.dump[0].file, "src/calc.py");
    }

    #[test]
    fn results_printed_after_pytest_finished_are_named() {
        // An atexit hook printing a PASSED line for itself and for a test that does not exist.
        let after = "PASSED tests/test_calc.py::test_sub\nPASSED tests/test_ghost.py::test_x\n";
        let log = pytest_log(HONEST_SUMMARY, HONEST_FINAL, after);
        let reasons = run(&log);
        let checks: Vec<(&str, Option<&str>)> =
            reasons.iter().map(|r| (r.check(), r.test())).collect();
        assert_eq!(
            checks,
            vec![
                ("after_report", Some("tests/test_calc.py::test_sub")),
                ("double_status", Some("tests/test_calc.py::test_sub")),
                ("after_report", Some("tests/test_ghost.py::test_x")),
                ("unselected_test", Some("tests/test_ghost.py::test_x")),
            ]
        );
        assert_eq!(reasons[0].line(), 13);
        assert!(reasons[0]
            .to_string()
            .starts_with("pred_post line 13: a result for `tests/test_calc.py::test_sub` after"));
    }

    #[test]
    fn summary_lines_beyond_the_counts_are_a_mismatch() {
        let summary = "PASSED tests/test_calc.py::test_add\nPASSED tests/test_calc.py::test_sub\n";
        let log = pytest_log(summary, HONEST_FINAL, "");
        let reasons = run(&log);
        assert_eq!(
            reasons,
            vec![Reason::CountMismatch {
                run: RunKind::PredPost,
                line: 12,
                status: "PASSED".into(),
                counted: 1,
                listed: 2
            }]
        );
    }

    #[test]
    fn status_lines_outside_the_summary_and_unselected_files() {
        let text = format!(
            "+ git apply -v -\n{TRACE}\nPASSED tests/test_calc.py::test_fake\n\
=========================== short test summary info ============================\n\
PASSED tests/other.py::test_y\n\
========================= 1 passed in 0.05s ==========================\n"
        );
        let checks: Vec<&str> = run(&text).iter().map(Reason::check).collect();
        assert_eq!(checks, vec!["outside_report", "unselected_test"]);
        // Without directives (the whole suite ran) the selection check is off.
        let r = check_run(RunKind::PredPost, &text, Parser::Pytest, None).reasons;
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn dump_lines_printed_by_the_tests_are_named() {
        let log = pytest_log(
            HONEST_SUMMARY,
            HONEST_FINAL,
            "{\"/testbed/src/calc.py\": {\"2\": 9}}\n",
        );
        let r = run(&log);
        assert_eq!(
            r,
            vec![Reason::CoverageOutsideDump {
                run: RunKind::PredPost,
                line: 13,
                file: "src/calc.py".into()
            }]
        );
        // After the dump's end too; the dump's own lines are not.
        let log = format!(
            "{}{{\"/testbed/a.py\": {{\"1\": 1}}}}\n",
            pytest_log(HONEST_SUMMARY, HONEST_FINAL, "")
        );
        let checks: Vec<&str> = run(&log).iter().map(Reason::check).collect();
        assert_eq!(checks, vec!["coverage_outside_dump"]);
    }

    #[test]
    fn printed_markers_are_named() {
        let log = pytest_log(
            HONEST_SUMMARY,
            HONEST_FINAL,
            ">>>>> Tests Errored\n+ cat coverage.cover\n{\"/testbed/src/calc.py\": {\"2\": 9}}\n+ git checkout x\n",
        );
        let checks: Vec<&str> = run(&log).iter().map(Reason::check).collect();
        // The forged dump comes first, so the parser reads it and the tracer's own entry is left
        // outside the dump section.
        assert_eq!(
            checks,
            vec!["failure_marker", "repeated_marker", "coverage_outside_dump"]
        );
        // A second echoed trace command (which ends the original's test section).
        let log = pytest_log(HONEST_SUMMARY, HONEST_FINAL, &format!("{TRACE}\n"));
        let checks: Vec<&str> = run(&log).iter().map(Reason::check).collect();
        assert_eq!(checks, vec!["repeated_marker"]);
    }

    const DJANGO: &str = "Testing against Django installed in '/testbed/django'\n\
test_a (model_fields.tests.T) ... ok\n\
test_b (model_fields.tests.T) ... FAIL\n\
\n======================================================================\n\
FAIL: test_b (model_fields.tests.T)\n----------------------------------------------------------------------\n\
Traceback (most recent call last):\nAssertionError\n\n\
----------------------------------------------------------------------\n\
Ran 2 tests in 0.003s\n\nFAILED (failures=1)\n";

    #[test]
    fn django_results_after_ran_and_too_many_results() {
        let labels = vec!["model_fields.tests".to_string()];
        let check = |t: &str| {
            check_run(RunKind::PredPre, t, Parser::Django, Some(&labels))
                .reasons
                .iter()
                .map(|r| (r.check(), r.test().unwrap_or("").to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(check(DJANGO), vec![]);
        let forged = format!("{DJANGO}test_b (model_fields.tests.T) ... ok\n");
        assert_eq!(
            check(&forged),
            vec![("after_report", "test_b (model_fields.tests.T)".to_string())]
        );
        let inside = DJANGO.replace(
            "test_b (model_fields.tests.T) ... FAIL\n",
            "test_b (model_fields.tests.T) ... FAIL\ntest_c (other.tests.T) ... ok\ntest_d (model_fields.tests.T) ... ok\n",
        );
        let found = check(&inside);
        assert!(
            found.iter().any(|(c, _)| *c == "count_mismatch"),
            "{found:?}"
        );
        assert!(found.contains(&("unselected_test", "test_c (other.tests.T)".to_string())));

        // A selected module that cannot be imported yet (the test patch adds it) is reported by
        // unittest under its own name: selected, not suspicious. Another name still is.
        let labels = vec![
            "user_commands.management.commands.mutually_exclusive_required".to_string(),
            "user_commands.tests".to_string(),
        ];
        let failed = "test_a (user_commands.tests.T) ... ok\n\
mutually_exclusive_required (unittest.loader._FailedTest) ... ERROR\n\n\
----------------------------------------------------------------------\n\
Ran 2 tests in 0.003s\n\nFAILED (errors=1)\n";
        let check = |t: &str| {
            check_run(RunKind::BasePre, t, Parser::Django, Some(&labels))
                .reasons
                .iter()
                .map(|r| (r.check(), r.test().unwrap_or("").to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(check(failed), vec![]);
        // Python 3.11+ names the stand-in's method after the label part too.
        let newer = failed.replace(
            "(unittest.loader._FailedTest)",
            "(unittest.loader._FailedTest.mutually_exclusive_required)",
        );
        assert_eq!(check(&newer), vec![]);
        let mismatched = failed.replace(
            "(unittest.loader._FailedTest)",
            "(unittest.loader._FailedTest.os_system)",
        );
        assert_eq!(
            check(&mismatched),
            vec![(
                "unselected_test",
                "mutually_exclusive_required (unittest.loader._FailedTest.os_system)".to_string()
            )]
        );
        let other = failed.replace("mutually_exclusive_required (", "os_system (");
        assert_eq!(
            check(&other),
            vec![(
                "unselected_test",
                "os_system (unittest.loader._FailedTest)".to_string()
            )]
        );
    }

    #[test]
    fn sympy_results_after_the_summary() {
        let log = "sympy/t/tests/test_x.py[2] \ntest_a ok\ntest_b F\n\n\
________________________________ summary _______________________________\n\
============ tests finished: 1 passed, 1 failed, in 0.17 seconds =============\n";
        assert_eq!(
            check_run(RunKind::PredPre, log, Parser::Sympy, None).reasons,
            vec![]
        );
        let forged = format!("{log}test_b ok\n");
        let r = check_run(RunKind::PredPre, &forged, Parser::Sympy, None).reasons;
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].test(), Some("test_b"));
        let extra = log.replace("test_b F\n", "test_b F\ntest_c ok\n");
        let r = check_run(RunKind::PredPre, &extra, Parser::Sympy, None).reasons;
        assert_eq!(r[0].check(), "count_mismatch");
    }

    #[test]
    fn a_second_echo_in_reproduction_mode() {
        let log = "+ python3 /testbed/repro.py\n+ echo 0\n0\n+ echo 1\n1\n";
        let r = check_run(RunKind::PredPre, log, Parser::ReproductionScript, None).reasons;
        assert_eq!(r[0].check(), "repeated_marker");
        let honest = "+ python3 /testbed/repro.py\n+ echo 1\n1\n";
        assert!(
            check_run(RunKind::PredPre, honest, Parser::ReproductionScript, None)
                .reasons
                .is_empty()
        );
    }

    const GOLD_FIX: &str = "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1 +1 @@\n-x\n+y\n\
diff --git a/src/new.py b/src/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1 @@\n+z\n";

    fn ctx(model_patch: Option<&str>) -> CheckContext<'_> {
        CheckContext {
            repo: "acme/calc",
            parser: Parser::Pytest,
            gold_code_patch: GOLD_FIX,
            gold_test_patch: "diff --git a/tests/test_calc.py b/tests/test_calc.py\n",
            model_patch,
            non_test_exts: &[],
        }
    }

    #[test]
    fn forged_coverage_entries_are_found() {
        let honest = pytest_log(HONEST_SUMMARY, HONEST_FINAL, "");
        let model = "diff --git a/tests/test_calc.py b/tests/test_calc.py\n";
        let outputs = |pred_pre: &str| {
            [
                Some(pred_pre.to_string()),
                Some(honest.clone()),
                Some(honest.clone()),
                Some(honest.clone()),
                Some(honest.clone()),
                Some(honest.clone()),
            ]
        };
        let check = |o: [Option<String>; 6]| {
            check_instance(&ctx(Some(model)), o.each_ref().map(|s| s.as_deref()))
        };
        assert_eq!(check(outputs(&honest)).verdict(), Verdict::Ok);
        // A helper that writes an entry of its own into the cover file: only the gold fix's
        // changed line, for a file that exists only after the fix, and an untraced file.
        let forged = honest.replace(
            "+ git checkout abc",
            "{\"/testbed/src/calc.py\": {\"2\": 5}}\n{\"/testbed/src/new.py\": {\"1\": 1}}\n\
{\"/testbed/setup.py\": {\"1\": 1}}\n+ git checkout abc",
        );
        let found = check(outputs(&forged));
        assert_eq!(found.verdict(), Verdict::Suspicious);
        let checks: Vec<&str> = found.reasons.iter().map(Reason::check).collect();
        assert_eq!(
            checks,
            vec![
                "coverage_lines",
                "coverage_missing_file",
                "coverage_untraced_file"
            ]
        );
        let json = found.to_json();
        assert_eq!(json["verdict"], "suspicious");
        assert_eq!(json["reasons"][0]["check"], "coverage_lines");
        assert_eq!(json["reasons"][0]["file"], "src/calc.py");
        assert!(json["reasons"][0]["text"]
            .as_str()
            .unwrap()
            .contains("lists 1 lines where the tracer lists the file's 3"));
        // When the model's patch edits the file, its entries may differ: not checked.
        let edits = "diff --git a/tests/test_calc.py b/tests/test_calc.py\n\
diff --git a/src/calc.py b/src/calc.py\n";
        let o = outputs(&forged);
        let r = check_instance(&ctx(Some(edits)), o.each_ref().map(|s| s.as_deref()));
        let checks: Vec<&str> = r.reasons.iter().map(Reason::check).collect();
        assert_eq!(
            checks,
            vec!["coverage_missing_file", "coverage_untraced_file"]
        );
    }

    #[test]
    fn strict_grading_fails_named_tests_and_unresolves() {
        let pre: StatusMap = [("t::a".to_string(), TestStatus::Failed)].into();
        let post: StatusMap = [("t::a".to_string(), TestStatus::Passed)].into();
        let runs = [
            pre.clone(),
            post.clone(),
            StatusMap::new(),
            StatusMap::new(),
            StatusMap::new(),
            StatusMap::new(),
        ];
        let mut report = InstanceReport {
            patch_successfully_applied: true,
            resolved: true,
            ..Default::default()
        };
        let integrity = Integrity {
            reasons: vec![Reason::AfterReport {
                run: RunKind::PredPost,
                line: 3,
                test: "t::a".into(),
            }],
            ..Default::default()
        };
        let mut ok = report.clone();
        apply_strict(&mut ok, &runs, &Integrity::default(), GradingVersion::V1_3);
        assert_eq!(ok, report);
        apply_strict(&mut report, &runs, &integrity, GradingVersion::V1_3);
        assert!(!report.resolved);
        let pred = report.tests_pred.unwrap();
        assert!(pred.fail_to_pass.is_empty());
        assert_eq!(pred.fail_to_fail, vec!["t::a".to_string()]);
        assert_eq!(report.added_f2p, Some(0));
    }
}
