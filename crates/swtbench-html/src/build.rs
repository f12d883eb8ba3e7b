//! Pure construction of the view model from the raw contents of a run tree.
//!
//! The loader reads the tree and hands the text here; this module parses patches, reports,
//! statuses and coverage and decides what each instance shows. It must not touch the file system:
//! everything arrives as strings and leaves as [`crate::model`] values.

use std::collections::{BTreeMap, BTreeSet};

use swtbench_core::diff::{self, ChangeKind, LineKind};
use swtbench_core::outcome::OutcomeKind;
use swtbench_core::RunKind;
use swtbench_grade::coverage::CoverageMap;
use swtbench_grade::logs::{ExecMode, ParsedLog};
use swtbench_grade::parsers::Parser;
use swtbench_grade::{ErrorReason, ReportReadError, SkipReason};
pub use swtbench_grade::{InstanceReport, Transitions};

use crate::grade_bridge;
use crate::model::{
    mark, DiffFile, DiffHunk, DiffView, InstanceDetail, InstanceView, Outcome, RunCell, TestGrid,
};

/// At most this many patch lines are embedded per patch; the rest is linked, not shown.
pub const MAX_PATCH_LINES: usize = 1500;
/// At most this many test rows per instance (the scoring-relevant ones come first).
pub const MAX_TEST_ROWS: usize = 250;
/// Tests that passed in every run are shown only while the grid has fewer rows than this.
pub const MAX_PASSING_ROWS: usize = 25;

/// Reads the `report.json` entry of `id` (or the only entry, if it is keyed differently); the
/// error says why the entry of `id` could not be read.
pub fn parse_instance_report(text: &str, id: &str) -> Result<InstanceReport, ReportReadError> {
    match InstanceReport::from_report_json(text, Some(id)) {
        Ok(r) => Ok(r),
        Err(first) => InstanceReport::from_report_json(text, None).map_err(|_| first),
    }
}

/// Everything read from disk about one run of an instance.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInput {
    pub kind: RunKind,
    /// Relative link to the run's directory (trailing `/`), if it exists.
    pub dir: Option<String>,
    /// Names of the files present in it.
    pub files: Vec<String>,
    /// `test_output.txt` as written (it may not be valid UTF-8).
    pub test_output: Option<Vec<u8>>,
    /// `test_output.txt` parsed while it was read, with the page's parser, instead of
    /// `test_output` (the loader does so where the parser allows it: a log can be hundreds of
    /// megabytes).
    pub parsed_output: Option<swtbench_grade::logs::ParsedRun>,
}

impl RunInput {
    fn has_output(&self) -> bool {
        self.test_output.is_some() || self.parsed_output.is_some()
    }
}

/// Everything read from disk about one instance.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InstanceInput {
    pub id: String,
    pub repo: String,
    /// Selects the log parser (unit tests: the repository's parser).
    pub exec_mode: ExecMode,
    /// The log parser to use instead of the original's repository map (a spec table's
    /// `log_parser`, for repositories the original has none for).
    pub parser: Option<Parser>,
    /// The parsed `report.json` entry, or why it could not be read.
    pub report: Option<Result<InstanceReport, ReportReadError>>,
    /// `pred_pre__<model>/<id>/model_patch.diff`.
    pub model_patch: Option<String>,
    /// The gold code fix (from the dataset or the runs' `exec_spec.json`).
    pub gold_code_patch: Option<String>,
    /// In [`RunKind::ALL`] order; missing runs may be absent.
    pub runs: Vec<RunInput>,
    /// A reason recorded by the run report (error or skip).
    pub reason: Option<String>,
    /// The runner's account of the instance (`swtbench_instance.json`), when it wrote one.
    pub runner: Option<RunnerSummary>,
    pub links: Vec<(String, String)>,
    pub notes: Vec<String>,
}

/// What `swtbench run` recorded about an instance in `swtbench_instance.json`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunnerSummary {
    /// `outcome.kind`; `None` for a kind this version does not know.
    pub outcome: Option<OutcomeKind>,
    /// `outcome.reason`, for skips and errors.
    pub reason: Option<String>,
    /// Notes that qualify the grade (timeouts, …).
    pub reasons: Vec<String>,
    /// The integrity checks' reasons when they found the logs suspicious (`integrity`).
    pub suspicious: Vec<String>,
}

impl RunnerSummary {
    /// Reads `swtbench_instance.json`; `None` when it is not such a file.
    pub fn parse(text: &str) -> Option<RunnerSummary> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let outcome = v.get("outcome")?;
        let text_of =
            |x: Option<&serde_json::Value>| x.and_then(|r| r.as_str()).map(str::to_string);
        Some(RunnerSummary {
            outcome: OutcomeKind::parse(&text_of(outcome.get("kind"))?),
            reason: text_of(outcome.get("reason")),
            reasons: v
                .get("reasons")
                .and_then(|r| r.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            suspicious: v
                .get("integrity")
                .filter(|i| i.get("verdict").and_then(|x| x.as_str()) == Some("suspicious"))
                .and_then(|i| i.get("reasons"))
                .and_then(|r| r.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.get("text").and_then(|t| t.as_str()))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// The run report's reason for an instance skipped because its patch is empty.
static EMPTY_PATCH_SKIP: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| SkipReason::EmptyPatch.to_string());

/// Builds one instance row and its detail.
pub fn build_instance(input: InstanceInput) -> InstanceView {
    let InstanceInput {
        id,
        repo,
        exec_mode,
        parser,
        report,
        model_patch,
        gold_code_patch,
        runs,
        reason,
        runner,
        links,
        mut notes,
    } = input;
    // The runner's own notes (timeouts, …) and its reason for a skip or an error, when the run
    // report has none.
    let runner_empty = runner
        .as_ref()
        .is_some_and(|r| r.outcome == Some(OutcomeKind::EmptyPatch));
    let mut runner_note = None;
    let suspicious = runner
        .as_ref()
        .map(|r| r.suspicious.clone())
        .unwrap_or_default();
    notes.extend(suspicious.iter().map(|s| format!("integrity: {s}")));
    let reason = match runner {
        Some(r) => {
            if !r.reasons.is_empty() {
                runner_note = Some(r.reasons.join("; "));
                notes.extend(r.reasons);
            }
            reason.or(r.reason)
        }
        None => reason,
    };

    let (report, report_error) = match report {
        Some(Ok(r)) => (Some(r), None),
        Some(Err(e)) => (None, Some(e)),
        None => (None, None),
    };
    let pred_pre_output = runs
        .iter()
        .any(|r| r.kind == RunKind::PredPre && r.has_output());

    let empty_patch = runner_empty || model_patch.as_deref().is_some_and(|p| p.trim().is_empty());
    let (outcome, reason) = outcome_of(
        report.as_ref(),
        Reasons {
            report_error,
            reason,
            runner_note,
        },
        empty_patch,
        model_patch.is_some(),
        pred_pre_output,
    );

    // Statuses and coverage of each run, in RunKind::ALL order.
    let RunCells {
        statuses,
        coverage,
        cells,
    } = run_cells(&runs, &repo, exec_mode, parser);
    let tests = test_grid(&runs, &statuses, report.as_ref());

    let model_patch_view = model_patch
        .as_deref()
        .map(|p| diff_view(p, MAX_PATCH_LINES));
    let gold_fix = gold_fix_view(gold_code_patch.as_deref(), &coverage, &mut notes);
    if gold_code_patch.is_none() {
        notes.push(
            "gold code fix unknown: pass the dataset, or keep the runs' exec_spec.json".to_string(),
        );
    }

    InstanceView {
        id,
        repo,
        outcome,
        reason,
        suspicious,
        added_f2p: report.as_ref().and_then(|r| r.added_f2p),
        coverage_pred: report.as_ref().and_then(|r| r.coverage.coverage_pred),
        coverage_delta_pred: report.as_ref().and_then(|r| r.coverage.coverage_delta_pred),
        coverage_gold: report.as_ref().and_then(|r| r.coverage.coverage_gold),
        coverage_base: report.as_ref().and_then(|r| r.coverage.coverage_base),
        coverage_delta_gold: report.as_ref().and_then(|r| r.coverage.coverage_delta_gold),
        detail: InstanceDetail {
            model_patch: model_patch_view,
            gold_fix,
            runs: cells,
            tests,
            links,
            notes,
        },
    }
}

/// The statuses, coverage and table cells of an instance's runs, in `RunKind::ALL` order.
struct RunCells {
    statuses: Vec<Option<ParsedLog>>,
    coverage: Vec<Option<CoverageMap>>,
    cells: Vec<RunCell>,
}

/// Reads the statuses and coverage of each of `runs` (parsed already, or parsed here from its
/// test output) and makes its cell of the runs table.
fn run_cells(
    runs: &[RunInput],
    repo: &str,
    exec_mode: ExecMode,
    parser: Option<Parser>,
) -> RunCells {
    let mut statuses: Vec<Option<ParsedLog>> = Vec::with_capacity(6);
    let mut coverage: Vec<Option<CoverageMap>> = Vec::with_capacity(6);
    let mut cells = Vec::with_capacity(6);
    for kind in RunKind::ALL {
        let run = runs.iter().find(|r| r.kind == kind);
        let out = run.and_then(|r| r.test_output.as_deref());
        let (st, cov) = match run.and_then(|r| r.parsed_output.as_ref()) {
            Some(p) => (Some(p.log.clone()), Some(p.coverage.clone())),
            None => (
                out.and_then(|o| grade_bridge::parsed_log(repo, exec_mode, parser, o)),
                out.map(grade_bridge::coverage),
            ),
        };
        let has_output = run.is_some_and(RunInput::has_output);
        cells.push(RunCell {
            kind: kind.as_str().to_string(),
            dir: run.and_then(|r| r.dir.clone()),
            files: run.map(|r| r.files.clone()).unwrap_or_default(),
            has_output,
            applied: st.as_ref().map(|s| s.applied),
            counts: st.as_ref().map(|s| status_counts(&s.tests)),
        });
        statuses.push(st);
        coverage.push(cov);
    }

    RunCells {
        statuses,
        coverage,
        cells,
    }
}

/// The gold fix's diff, its lines marked with the runs' `coverage`; a note when the runs have
/// outputs but no coverage data.
fn gold_fix_view(
    gold_code_patch: Option<&str>,
    coverage: &[Option<CoverageMap>],
    notes: &mut Vec<String>,
) -> Option<DiffView> {
    gold_code_patch.map(|p| {
        let mut v = diff_view(p, MAX_PATCH_LINES);
        if coverage
            .iter()
            .any(|c| c.as_ref().is_some_and(|m| !m.is_empty()))
        {
            mark_coverage(&mut v, coverage);
        } else if coverage.iter().any(Option::is_some) {
            notes.push(
                "no coverage data in the test outputs (was the run made without coverage?)"
                    .to_string(),
            );
        }
        v
    })
}

/// What can explain an instance's outcome.
struct Reasons {
    /// Why its `report.json` could not be read.
    report_error: Option<ReportReadError>,
    /// The run report's (or the runner's) reason.
    reason: Option<String>,
    /// The runner's notes (a timeout, …).
    runner_note: Option<String>,
}

/// The outcome shown and why, by the same rule as the run report
/// (`swtbench_grade::EntryState::outcome`).
fn outcome_of(
    report: Option<&InstanceReport>,
    why: Reasons,
    empty_patch: bool,
    has_model_patch: bool,
    pred_pre_output: bool,
) -> (Outcome, Option<String>) {
    let Reasons {
        report_error,
        reason,
        runner_note,
    } = why;
    match report {
        // A graded instance shows the runner's notes (a timeout, …) next to its outcome.
        Some(r) if r.resolved => (Outcome::Resolved, reason.or(runner_note)),
        Some(r) if !r.patch_successfully_applied && empty_patch => (Outcome::EmptyPatch, reason),
        Some(r) if !r.patch_successfully_applied => (Outcome::NotApplied, reason.or(runner_note)),
        Some(_) => (Outcome::Unresolved, reason.or(runner_note)),
        // Not graded because the patch is empty: seen on disk, or recorded by the runner as a skip.
        None if empty_patch || reason.as_deref() == Some(EMPTY_PATCH_SKIP.as_str()) => {
            (Outcome::EmptyPatch, None)
        }
        None => {
            let why = reason.or(report_error.map(|e| format!("report.json unreadable: {e}")));
            let why = why.unwrap_or_else(|| {
                // Worded as the run report words them.
                if !has_model_patch {
                    ErrorReason::MissingModelPatch.to_string()
                } else if !pred_pre_output {
                    ErrorReason::MissingPredPreOutput.to_string()
                } else {
                    "not graded: no report.json".to_string()
                }
            });
            (Outcome::Error, Some(why))
        }
    }
}

fn status_counts(tests: &swtbench_core::StatusMap) -> [u32; 3] {
    let mut c = [0u32; 3];
    for s in tests.values() {
        match s {
            swtbench_core::TestStatus::Passed => c[0] += 1,
            swtbench_core::TestStatus::Failed => c[1] += 1,
            _ => c[2] += 1,
        }
    }
    c
}

fn status_code(s: Option<&swtbench_core::TestStatus>) -> char {
    use swtbench_core::TestStatus as T;
    match s {
        None => '-',
        Some(T::Passed) => 'P',
        Some(T::Failed) => 'F',
        Some(T::Error) => 'E',
        Some(T::Skipped) => 'S',
        Some(T::Other(_)) => 'O',
    }
}

/// Builds the test grid: exact codes from parsed logs when every run with output could be parsed,
/// otherwise codes derived from the `report.json` buckets.
fn test_grid(
    runs: &[RunInput],
    statuses: &[Option<ParsedLog>],
    report: Option<&InstanceReport>,
) -> TestGrid {
    let parsed_all = RunKind::ALL.iter().enumerate().all(|(i, k)| {
        let has_out = runs.iter().any(|r| r.kind == *k && r.has_output());
        !has_out || statuses[i].is_some()
    });
    let any_parsed = statuses.iter().any(Option::is_some);
    let mut rows: BTreeMap<String, [char; 6]> = BTreeMap::new();
    let exact = parsed_all && any_parsed;
    if exact {
        let mut names = BTreeSet::new();
        for s in statuses.iter().flatten() {
            names.extend(s.tests.keys().cloned());
        }
        for n in names {
            let mut code = ['-'; 6];
            for (i, s) in statuses.iter().enumerate() {
                code[i] = status_code(s.as_ref().and_then(|s| s.tests.get(&n)));
            }
            rows.insert(n, code);
        }
    } else if let Some(r) = report {
        for (pair, t) in [&r.tests_pred, &r.tests_gold, &r.tests_base]
            .into_iter()
            .enumerate()
        {
            let Some(t) = t else { continue };
            let buckets: [(&Vec<String>, [char; 2]); 5] = [
                (&t.fail_to_pass, ['x', 'P']),
                (&t.pass_to_pass, ['P', 'P']),
                (&t.fail_to_fail, ['x', 'F']),
                (&t.pass_to_fail, ['P', 'x']),
                (&t.unmatched, ['x', 'x']),
            ];
            for (list, pp) in buckets {
                for n in list {
                    let code = rows.entry(n.clone()).or_insert(['-'; 6]);
                    code[pair * 2] = pp[0];
                    code[pair * 2 + 1] = pp[1];
                }
            }
        }
    }
    select_rows(rows, exact)
}

/// Orders the rows by how much they matter to the score and bounds their number.
fn select_rows(rows: BTreeMap<String, [char; 6]>, exact: bool) -> TestGrid {
    let passed = |c: char| c == 'P';
    let mut ranked: Vec<(u8, String, [char; 6])> = Vec::new();
    let mut passing: Vec<(String, [char; 6])> = Vec::new();
    for (name, c) in rows {
        if c.iter().all(|&x| x == 'P' || x == '-') {
            passing.push((name, c));
            continue;
        }
        // §7.1: anything that is not PASSED before (absent included) and PASSED after is F→P.
        let pred_f2p = passed(c[1]) && !passed(c[0]);
        let base_f2p = passed(c[5]) && !passed(c[4]);
        let rank = if pred_f2p && !base_f2p {
            0
        } else if passed(c[0]) && !passed(c[1]) {
            1
        } else if c[0] != '-' || c[1] != '-' {
            2
        } else {
            3
        };
        ranked.push((rank, name, c));
    }
    ranked.sort();
    let mut grid = TestGrid {
        exact,
        ..TestGrid::default()
    };
    let total_interesting = ranked.len();
    for (_, name, c) in ranked.into_iter().take(MAX_TEST_ROWS) {
        grid.names.push(name);
        grid.codes.push(c.iter().collect());
    }
    grid.omitted_other = total_interesting - grid.names.len();
    let room = MAX_PASSING_ROWS.saturating_sub(grid.names.len());
    let shown_passing = if passing.len() <= room {
        passing.len()
    } else {
        0
    };
    for (name, c) in passing.iter().take(shown_passing) {
        grid.names.push(name.clone());
        grid.codes.push(c.iter().collect());
    }
    grid.omitted_passing = passing.len() - shown_passing;
    grid
}

fn change_name(c: ChangeKind) -> &'static str {
    match c {
        ChangeKind::Modified => "modified",
        ChangeKind::Added => "added",
        ChangeKind::Deleted => "deleted",
        ChangeKind::Renamed => "renamed",
        ChangeKind::Copied => "copied",
    }
}

/// Parses a patch for display, keeping at most `max_lines` hunk lines.
pub fn diff_view(text: &str, max_lines: usize) -> DiffView {
    if text.trim().is_empty() {
        return DiffView::default();
    }
    let patch = match diff::parse(text) {
        Ok(p) => p,
        Err(e) => {
            let (raw, dropped) = truncate_lines(text, max_lines);
            return DiffView {
                raw: Some(raw),
                error: Some(e.to_string()),
                truncated_lines: dropped,
                ..DiffView::default()
            };
        }
    };
    let mut budget = max_lines;
    let mut dropped = 0usize;
    let mut files = Vec::with_capacity(patch.files.len());
    for f in &patch.files {
        let mut hunks = Vec::with_capacity(f.hunks.len());
        for h in &f.hunks {
            if budget == 0 {
                dropped += h.lines.len();
                continue;
            }
            let take = h.lines.len().min(budget);
            budget -= take;
            dropped += h.lines.len() - take;
            let mut kinds = String::with_capacity(take);
            let mut lines = Vec::with_capacity(take);
            for l in &h.lines[..take] {
                kinds.push(match l.kind {
                    LineKind::Context => ' ',
                    LineKind::Added => '+',
                    LineKind::Removed => '-',
                });
                lines.push(l.text.clone());
            }
            let mut header = format!(
                "@@ -{},{} +{},{} @@",
                h.old_start, h.old_len, h.new_start, h.new_len
            );
            if !h.section.is_empty() {
                header.push(' ');
                header.push_str(h.section.trim_start());
            }
            hunks.push(DiffHunk {
                header,
                old_start: h.old_start,
                new_start: h.new_start,
                kinds,
                lines,
                marks: None,
                truncated: h.truncated,
            });
        }
        files.push(DiffFile {
            old_path: f.old_path.clone(),
            new_path: f.new_path.clone(),
            change: change_name(f.change),
            binary: f.binary,
            hunks,
        });
    }
    DiffView {
        files,
        truncated_lines: dropped,
        ..DiffView::default()
    }
}

fn truncate_lines(text: &str, max_lines: usize) -> (String, usize) {
    let total = text.lines().count();
    if total <= max_lines {
        return (text.to_string(), 0);
    }
    let kept: Vec<&str> = text.lines().take(max_lines).collect();
    (kept.join("\n"), total - max_lines)
}

/// Marks each changed line of the gold fix with who executed it. Removed lines are looked up in
/// the pre-fix runs under their old line number, added lines in the post-fix runs under their new
/// one; a line is executable when the gold or base coverage data lists it (§5.3).
fn mark_coverage(view: &mut DiffView, coverage: &[Option<CoverageMap>]) {
    let cov =
        |k: RunKind| coverage[RunKind::ALL.iter().position(|x| *x == k).unwrap_or(0)].as_ref();
    let hits = |m: Option<&CoverageMap>, path: &str, line: u32| -> Option<i64> {
        m.and_then(|m| m.get(path))
            .and_then(|f| f.get(&i64::from(line)))
            .copied()
    };
    for f in &mut view.files {
        for h in &mut f.hunks {
            let mut old_no = h.old_start;
            let mut new_no = h.new_start;
            let mut marks = String::with_capacity(h.kinds.len());
            for k in h.kinds.chars() {
                let (runs, path, line) = match k {
                    '-' => (
                        [RunKind::PredPre, RunKind::GoldPre, RunKind::BasePre],
                        f.old_path.as_deref(),
                        old_no,
                    ),
                    '+' => (
                        [RunKind::PredPost, RunKind::GoldPost, RunKind::BasePost],
                        f.new_path.as_deref(),
                        new_no,
                    ),
                    _ => {
                        marks.push(' ');
                        old_no += 1;
                        new_no += 1;
                        continue;
                    }
                };
                if k == '-' {
                    old_no += 1;
                } else {
                    new_no += 1;
                }
                let mut flags = 0u8;
                if let Some(path) = path {
                    let [p, g, b] = runs.map(|r| hits(cov(r), path, line));
                    if p.unwrap_or(0) > 0 {
                        flags |= mark::PRED;
                    }
                    if g.unwrap_or(0) > 0 {
                        flags |= mark::GOLD;
                    }
                    if b.unwrap_or(0) > 0 {
                        flags |= mark::BASE;
                    }
                    if g.is_some() || b.is_some() {
                        flags |= mark::EXECUTABLE;
                    }
                }
                marks.push(char::from_digit(u32::from(flags), 16).unwrap_or('0'));
            }
            h.marks = Some(marks);
        }
    }
    view.has_marks = true;
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    const GOLD: &str = "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,3 +1,3 @@ def f():\n a = 1\n-b = 2\n+b = 3\n c = 4\n";

    fn cov_output(lines: &[(u32, u64)]) -> Vec<u8> {
        let body: Vec<String> = lines.iter().map(|(l, h)| format!("\"{l}\": {h}")).collect();
        format!(
            "+ cat coverage.cover\n{{\"/testbed/pkg/m.py\": {{{}}}}}\n+ git checkout abc\n",
            body.join(", ")
        )
        .into_bytes()
    }

    fn run(kind: RunKind, out: Option<Vec<u8>>) -> RunInput {
        RunInput {
            kind,
            dir: Some(format!("{kind}/")),
            files: vec!["test_output.txt".into()],
            test_output: out,
            parsed_output: None,
        }
    }

    #[test]
    fn diff_view_keeps_kinds_and_truncates() {
        let v = diff_view(GOLD, 100);
        assert_eq!(v.files.len(), 1);
        assert_eq!(v.files[0].hunks[0].kinds, " -+ ");
        assert_eq!(v.files[0].hunks[0].header, "@@ -1,3 +1,3 @@ def f():");
        let t = diff_view(GOLD, 2);
        assert_eq!(t.files[0].hunks[0].lines.len(), 2);
        assert_eq!(t.truncated_lines, 2);
        let junk = diff_view("no diff here <script>", 100);
        assert!(junk.files.is_empty() && junk.error.is_some());
        assert_eq!(junk.raw.as_deref(), Some("no diff here <script>"));
    }

    #[test]
    fn coverage_marks_follow_old_and_new_line_numbers() {
        // pred_pre hits removed line 2; gold_post and base_post list added line 2 (gold hits it).
        let runs = vec![
            run(RunKind::PredPre, Some(cov_output(&[(2, 1)]))),
            run(RunKind::PredPost, Some(cov_output(&[(1, 1)]))),
            run(RunKind::GoldPre, Some(cov_output(&[(2, 0)]))),
            run(RunKind::GoldPost, Some(cov_output(&[(2, 3)]))),
            run(RunKind::BasePre, Some(cov_output(&[]))),
            run(RunKind::BasePost, Some(cov_output(&[(2, 0)]))),
        ];
        let v = build_instance(InstanceInput {
            id: "o__r-1".into(),
            repo: "o/r".into(),
            gold_code_patch: Some(GOLD.into()),
            model_patch: Some(GOLD.into()),
            runs,
            report: Some(Ok(InstanceReport {
                patch_successfully_applied: true,
                ..Default::default()
            })),
            ..Default::default()
        });
        let gf = v.detail.gold_fix.unwrap();
        assert!(gf.has_marks);
        // removed line: pred(1) + executable(8) = 9; added: gold(2) + executable(8) = a
        assert_eq!(gf.files[0].hunks[0].marks.as_deref(), Some(" 9a "));
        assert_eq!(v.outcome, Outcome::Unresolved);
    }

    #[test]
    fn outcomes_and_reasons() {
        let base = InstanceInput {
            id: "a__b-1".into(),
            repo: "a/b".into(),
            ..Default::default()
        };
        let v = build_instance(base.clone());
        assert_eq!(v.outcome, Outcome::Error);
        assert_eq!(v.reason, Some(ErrorReason::MissingModelPatch.to_string()));
        let v = build_instance(InstanceInput {
            model_patch: Some("\n".into()),
            ..base.clone()
        });
        assert_eq!(v.outcome, Outcome::EmptyPatch);
        let v = build_instance(InstanceInput {
            model_patch: Some(GOLD.into()),
            report: Some(Ok(InstanceReport::default())),
            ..base.clone()
        });
        assert_eq!(v.outcome, Outcome::NotApplied);
        let v = build_instance(InstanceInput {
            model_patch: Some("\n".into()),
            report: Some(Ok(InstanceReport::default())),
            ..base.clone()
        });
        assert_eq!(v.outcome, Outcome::EmptyPatch);
        // Skipped by the runner for an empty patch: nothing on disk but the run report's reason.
        let v = build_instance(InstanceInput {
            reason: Some(SkipReason::EmptyPatch.to_string()),
            ..base.clone()
        });
        assert_eq!(v.outcome, Outcome::EmptyPatch);
        let v = build_instance(InstanceInput {
            model_patch: Some(GOLD.into()),
            report: Some(Ok(InstanceReport {
                patch_successfully_applied: true,
                resolved: true,
                ..Default::default()
            })),
            reason: None,
            ..base
        });
        assert_eq!(v.outcome, Outcome::Resolved);
    }

    #[test]
    fn the_runners_summary_decides_empty_patches_and_adds_its_notes() {
        let summary = |text: &str| RunnerSummary::parse(text).unwrap();
        let base = InstanceInput {
            id: "a__b-1".into(),
            repo: "a/b".into(),
            // What `swtbench run` leaves for an empty prediction: a not-applied report and no
            // model_patch.diff (nothing ran).
            report: Some(Ok(InstanceReport {
                patch_exists: true,
                ..Default::default()
            })),
            ..Default::default()
        };
        assert_eq!(build_instance(base.clone()).outcome, Outcome::NotApplied);
        let empty = summary(
            r#"{"instance_id": "a__b-1", "outcome": {"kind": "empty_patch"},
                "reasons": ["the prediction has no usable patch; nothing was run"], "runs": []}"#,
        );
        let v = build_instance(InstanceInput {
            runner: Some(empty),
            ..base.clone()
        });
        assert_eq!(v.outcome, Outcome::EmptyPatch);
        assert_eq!(v.reason, None);
        assert_eq!(
            v.detail.notes[0],
            "the prediction has no usable patch; nothing was run"
        );
        // A timeout note follows a graded outcome into the table.
        let timed_out = summary(
            r#"{"outcome": {"kind": "unresolved", "applied": true},
                "reasons": ["pred_pre timed out after 60 s; its output up to then was graded"]}"#,
        );
        let v = build_instance(InstanceInput {
            model_patch: Some(GOLD.into()),
            report: Some(Ok(InstanceReport {
                patch_successfully_applied: true,
                ..Default::default()
            })),
            runner: Some(timed_out),
            ..base.clone()
        });
        assert_eq!(v.outcome, Outcome::Unresolved);
        assert_eq!(
            v.reason.as_deref(),
            Some("pred_pre timed out after 60 s; its output up to then was graded")
        );
        // A skip the run report does not explain is explained by the summary.
        let skipped = summary(
            r#"{"outcome": {"kind": "skipped", "reason": "patch extraction failed: fuzzy: no file section"}, "reasons": []}"#,
        );
        let v = build_instance(InstanceInput {
            report: None,
            runner: Some(skipped),
            ..base
        });
        assert_eq!(v.outcome, Outcome::Error);
        assert_eq!(
            v.reason.as_deref(),
            Some("patch extraction failed: fuzzy: no file section")
        );
        assert!(RunnerSummary::parse("{}").is_none());
        assert!(RunnerSummary::parse("not json").is_none());
    }

    #[test]
    fn a_suspicious_verdict_becomes_notes_and_a_badge() {
        let text = r#"{"outcome": {"kind": "resolved"}, "reasons": [],
            "integrity": {"verdict": "suspicious", "reasons": [{"check": "after_report",
            "run": "pred_post", "line": 9, "test": "t.py::x",
            "text": "pred_post line 9: a result for `t.py::x` after the test runner's final summary line"}]}}"#;
        let summary = RunnerSummary::parse(text).unwrap();
        assert_eq!(summary.suspicious.len(), 1);
        let ok = RunnerSummary::parse(
            r#"{"outcome": {"kind": "resolved"}, "integrity": {"verdict": "ok", "reasons": []}}"#,
        )
        .unwrap();
        assert!(ok.suspicious.is_empty());
        let v = build_instance(InstanceInput {
            id: "a__b-1".into(),
            repo: "a/b".into(),
            runner: Some(summary),
            ..Default::default()
        });
        assert_eq!(v.suspicious.len(), 1);
        assert!(v.detail.notes[0].starts_with("integrity: pred_post line 9: a result for"));
        let page = crate::render::render_run(&crate::model::RunView {
            instances: vec![v],
            ..Default::default()
        });
        assert!(
            page.contains(
                "<span class=\"o o-error sus\" title=\"pred_post line 9: a result for `t.py::x`"
            ),
            "no badge"
        );
    }

    #[test]
    fn a_hunk_cut_short_is_flagged() {
        // What a U+2028 in a line does to a patch split like Python's splitlines: the hunk
        // stops early and the rest is not a diff any more.
        let cut = "diff --git a/t.py b/t.py\nnew file mode 100644\n--- /dev/null\n+++ b/t.py\n@@ -0,0 +1,4 @@\n+a\n+# x\n end\n+b\n+c\n";
        let v = diff_view(cut, MAX_PATCH_LINES);
        let h = &v.files[0].hunks[0];
        assert!(h.truncated);
        assert_eq!(h.lines, ["a", "# x"]);
        let json = serde_json::to_string(&v).unwrap();
        assert!(json.contains("\"t\":true"), "{json}");
        let whole = diff_view(GOLD, MAX_PATCH_LINES);
        assert!(!whole.files[0].hunks[0].truncated);
        assert!(!serde_json::to_string(&whole).unwrap().contains("\"t\":"));
    }

    #[test]
    fn a_spec_table_parser_reads_repositories_the_original_has_none_for() {
        let log = b"tests/test_a.py::test_one PASSED\nPASSED tests/test_a.py::test_one\n".to_vec();
        let runs = vec![RunInput {
            kind: RunKind::PredPre,
            dir: Some("x/".into()),
            files: vec![],
            test_output: Some(log),
            parsed_output: None,
        }];
        let input = InstanceInput {
            id: "acme__widget-1".into(),
            repo: "acme/widget".into(),
            runs,
            ..Default::default()
        };
        let v = build_instance(input.clone());
        assert_eq!(v.detail.runs[0].counts, None);
        let v = build_instance(InstanceInput {
            parser: Some(Parser::Pytest),
            ..input
        });
        assert_eq!(v.detail.runs[0].counts, Some([1, 0, 0]));
    }

    #[test]
    fn bucket_grid_ranks_new_fail_to_pass_first_and_hides_passing() {
        let t = |f2p: &[&str], p2p: &[&str], f2f: &[&str]| Transitions {
            fail_to_pass: f2p.iter().map(|s| s.to_string()).collect(),
            pass_to_pass: p2p.iter().map(|s| s.to_string()).collect(),
            fail_to_fail: f2f.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let report = InstanceReport {
            patch_successfully_applied: true,
            tests_pred: Some(t(&["z_new"], &["a_ok"], &["b_bad"])),
            tests_gold: Some(t(&["g1"], &[], &[])),
            tests_base: Some(t(&[], &["a_ok"], &["z_new"])),
            ..Default::default()
        };
        let g = test_grid(&[], &[None, None, None, None, None, None], Some(&report));
        assert!(!g.exact);
        assert_eq!(g.names, vec!["z_new", "b_bad", "g1", "a_ok"]);
        assert_eq!(g.codes[0], "xP--xF");
        assert_eq!(g.codes[3], "PP--PP");
        assert_eq!(g.omitted_passing, 0);
    }

    #[test]
    fn report_json_entry_is_found_by_id() {
        let text = r#"{"x__y-1": {"patch_successfully_applied": true, "resolved": true, "added_f2p": 2,
            "coverage_pred": null, "tests_pred": {"FAIL_TO_PASS": ["t"], "PASS_TO_PASS": [],
            "FAIL_TO_FAIL": [], "PASS_TO_FAIL": [], "UNMATCHED": []}}}"#;
        let r = parse_instance_report(text, "x__y-1").unwrap();
        assert!(r.resolved && r.added_f2p == Some(2));
        assert_eq!(r.tests_pred.unwrap().fail_to_pass, vec!["t"]);
        assert!(parse_instance_report("[]", "x").is_err());
    }
}
