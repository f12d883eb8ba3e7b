//! `grade` and `parse-log` as library functions: re-grading a run from the logs it left in the
//! original's layout (§4.8) without containers, and reading one test log with a parser.
//!
//! [`regrade`] writes each instance's `report.json` (only the missing ones unless `rewrite`) and
//! the run report `evaluation_results/<model>.<run_id>.json`. With the spec table and predictions
//! `swtbench run` had, it reproduces run's `report.json` files byte for byte and its run report's
//! numbers (run counts an instance as completed only when nothing was executed for it; grade,
//! as the original, when its report.json existed before). Nothing here prints: warnings come
//! back as data for the caller to show.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde_json::{json, Map, Value};
use swtbench_core::layout::{evaluation_results_path, model_dir_name, LogsRoot};
use swtbench_core::Instance;
use swtbench_data::{LoadedDataset, LoadedPredictions};
use swtbench_grade::logs::{self, ExecMode, LogNote};
use swtbench_grade::run_report::{EntryState, ErrorReason, RunReport, RunReportInput};
use swtbench_grade::tree::{
    regrade as regrade_tree, NonTestExts, ReadRules, RegradeRequest, RunTree,
};
use swtbench_grade::{py, GradeOptions, Parser};
use swtbench_plan::plan::vanilla_patch;
use swtbench_spec::SpecTable;

use crate::lines::{Line, Notice};
use crate::tree::FsTree;
use crate::{Error, Result};

/// What to re-grade, resolved from `grade`'s arguments.
#[derive(Debug, Clone, Copy)]
pub struct GradeSettings<'a> {
    /// The dataset of the run (valid instances only).
    pub dataset: &'a LoadedDataset,
    /// The run's predictions: their instances are the ones graded, and their empty patches are
    /// graded as not applied, as `run` does. `None`: every dataset instance with a directory in
    /// the run is graded.
    pub predictions: Option<&'a LoadedPredictions>,
    /// The model (`model_name_or_path`); defaults to the predictions' model.
    pub model: Option<&'a str>,
    pub run_id: &'a str,
    /// The logs root (the original's `run_instance_swt_logs`).
    pub logs_root: &'a Path,
    /// Where the run report goes (the original's `evaluation_results`).
    pub output_dir: &'a Path,
    /// Grade again instances that already have a report.json, and overwrite it.
    pub rewrite: bool,
    pub options: GradeOptions,
    /// The spec table `swtbench run` had (its parsers and non-test extensions), and its file.
    pub table: &'a SpecTable,
    pub spec_table: Option<&'a Path>,
    /// `--flaky-list`: tests left out of the transitions, by instance.
    pub flaky: Option<&'a swtbench_grade::stability::FlakyList>,
}

/// What re-grading did.
#[derive(Debug, Clone)]
pub struct GradeOutcome {
    pub report: RunReport,
    /// Where the run report was written.
    pub run_report_path: PathBuf,
    /// Instances graded now (their `report.json` written).
    pub newly_graded: usize,
    /// One per instance worth a remark (shared runs of another variant, missing outputs, …).
    pub warnings: Vec<String>,
    /// Instances without any run (no pred_pre `model_patch.diff`) that are errors.
    pub not_run: usize,
}

impl GradeOutcome {
    /// What `grade` says of it: the counts by outcome, the suspicious instances and the errors
    /// (the first ten of each), instances without runs when there were no predictions
    /// (`with_predictions` false), and where the run report is.
    pub fn lines(&self, strict_results: bool, with_predictions: bool) -> Vec<Line> {
        use swtbench_grade::Outcome;
        let report = &self.report;
        let mut out = Vec::new();

        let count = |o: fn(&Outcome) -> bool| report.outcomes.values().filter(|x| o(x)).count();
        out.push(Line::Info(format!(
            "graded {} instances ({} newly, {} from earlier reports): {} resolved, {} unresolved, \
             {} not applied, {} empty patch, {} error(s)",
            report.total_instances,
            self.newly_graded,
            report.completed_ids.len(),
            count(|o| *o == Outcome::Resolved),
            count(|o| *o == Outcome::Unresolved),
            count(|o| *o == Outcome::NotApplied),
            count(|o| *o == Outcome::EmptyPatch),
            report.error_ids.len(),
        )));
        if !report.suspicious.is_empty() {
            out.push(Line::Warn(format!(
                "{} suspicious instance(s): their logs hold results the test runner did not print{} \
                 (see suspicious_reasons in the run report, docs/integrity.md)",
                report.suspicious.len(),
                if strict_results {
                    "; graded strictly"
                } else {
                    "; graded as the original grades them (--strict-results to count them as failed)"
                }
            )));
            for (id, reasons) in report.suspicious.iter().take(10) {
                let first = reasons.first().map(String::as_str).unwrap_or_default();
                let more = match reasons.len() {
                    0 | 1 => String::new(),
                    n => format!(" (and {} more)", n - 1),
                };
                out.push(Line::Info(format!("  {id}: {first}{more}")));
            }
        }
        for (id, why) in report.error_reasons.iter().take(10) {
            out.push(Line::Info(format!("  {id}: {why}")));
        }
        if report.error_reasons.len() > 10 {
            out.push(Line::Info(format!(
                "  … and {} more (see the run report)",
                report.error_reasons.len() - 10
            )));
        }
        if self.not_run > 0 && !with_predictions {
            out.push(Line::Warn(format!(
                "{} instance(s) have no runs; pass --predictions so that empty patches among \
                 them are graded as not applied, as `swtbench run` does",
                self.not_run
            )));
        }
        out.push(Line::Info(format!(
            "run report written to {}",
            self.run_report_path.display()
        )));
        out
    }
}

/// The spec table's rules for reading logs of `repos` (in the order given, each once): the
/// table's `log_parser` over the original's map, and its non-test extensions. An unknown
/// `log_parser` of one of `repos` is an input error naming it.
pub fn read_rules<'r>(
    table: &SpecTable,
    repos: impl IntoIterator<Item = &'r str>,
    spec_table: Option<&Path>,
) -> Result<ReadRules> {
    let mut parsers = BTreeMap::new();
    for repo in repos {
        if parsers.contains_key(repo) {
            continue;
        }
        let Some(name) = table.repos.get(repo).and_then(|r| r.log_parser.as_deref()) else {
            continue;
        };
        let parser = name.parse::<Parser>().map_err(|e| {
            Error::input(anyhow!(
                "spec table{}: repository {repo}: {e}",
                spec_table
                    .map(|p| format!(" {}", p.display()))
                    .unwrap_or_default(),
            ))
            .with_hint(
                "log_parser is one of pytest, pytest_options, pytest_v2, django, seaborn, \
                 matplotlib, sympy",
            )
        })?;
        parsers.insert(repo.to_string(), parser);
    }
    Ok(ReadRules {
        parsers,
        non_test_exts: non_test_exts(table),
    })
}

/// The spec table's `non_test_extensions` (per repository and the table's own), which decide the
/// directive hashes of the shared gold/base run directories.
pub fn non_test_exts(table: &SpecTable) -> NonTestExts {
    NonTestExts {
        by_repo: table
            .repos
            .iter()
            .filter_map(|(repo, r)| Some((repo.clone(), r.non_test_extensions.clone()?)))
            .collect(),
        default: table.non_test_extensions.clone(),
    }
}

/// The instances to grade, the model directory, the submitted ids and the empty patches.
struct Selection {
    instances: Vec<Instance>,
    model_dir: String,
    submitted: Option<BTreeSet<String>>,
    empty_patches: Option<BTreeSet<String>>,
}

fn select(settings: &GradeSettings<'_>, notices: &mut Vec<Notice>) -> Result<Selection> {
    let dataset = settings.dataset;
    let (model_dir, submitted, empty_patches) = match settings.predictions {
        Some(preds) => {
            let model_dir = preds.model_dir();
            if let Some(m) = settings.model {
                if model_dir_name(m) != model_dir {
                    return Err(Error::input(anyhow!(
                        "--model {m} differs from the predictions' model {}",
                        preds.model
                    )));
                }
            }
            let ids: BTreeSet<String> = preds
                .predictions
                .keys()
                .map(|k| k.as_str().to_string())
                .collect();
            // What `swtbench run` grades as an empty patch without running it.
            let empty: BTreeSet<String> = preds
                .predictions
                .iter()
                .filter(|(_, p)| vanilla_patch(p).is_none())
                .map(|(k, _)| k.as_str().to_string())
                .collect();
            (model_dir, Some(ids), Some(empty))
        }
        None => (
            model_dir_name(settings.model.unwrap_or_default()),
            None,
            None,
        ),
    };
    let instances: Vec<Instance> = match &submitted {
        Some(ids) => dataset
            .instances
            .iter()
            .filter(|i| ids.contains(i.instance_id.as_str()))
            .cloned()
            .collect(),
        None => {
            let root = LogsRoot::new(settings.logs_root);
            let run = RunTree::new(&FsTree, &root, settings.run_id, &model_dir);
            let found = run.instance_ids().map_err(Error::input)?;
            let unknown: Vec<&String> = found
                .iter()
                .filter(|id| dataset.get(id).is_none())
                .collect();
            if !unknown.is_empty() {
                notices.push(Notice::Warn(format!(
                    "{} instance directories in the run are not in the selected dataset (e.g. {}); ignored",
                    unknown.len(),
                    unknown[0]
                )));
            }
            dataset
                .instances
                .iter()
                .filter(|i| found.contains(i.instance_id.as_str()))
                .cloned()
                .collect()
        }
    };
    if instances.is_empty() {
        return Err(Error::input(anyhow!(
            "nothing to grade: no instance of {} has outputs for model {model_dir} in {}",
            dataset.name,
            settings.logs_root.join(settings.run_id).display()
        ))
        .with_hint("check --logs-root, --run-id, --model and --dataset"));
    }
    Ok(Selection {
        instances,
        model_dir,
        submitted,
        empty_patches,
    })
}

/// How the run was made (written by `swtbench run` into its run report), kept when the run
/// report is written again.
fn run_parameters(run_report: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(run_report)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| match v.get("run_parameters") {
            Some(Value::Object(m)) => Some(
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

/// `parameters` (the ones the run report had) with the grading version of this grade: the entry
/// of an earlier grade replaced, none for the default.
fn graded_parameters(
    mut parameters: Vec<(String, String)>,
    version: swtbench_grade::GradingVersion,
) -> Vec<(String, String)> {
    parameters.retain(|(k, _)| k != swtbench_grade::version::RUN_PARAMETER);
    parameters.extend(version.run_parameter());
    parameters
}

/// Instance warnings told one by one; the rest are counted (all are in [`GradeOutcome`]).
const MAX_WARNINGS_SHOWN: usize = 10;

/// Re-grades the run `settings` describe and writes its reports. Remarks go to `notices` as they
/// arise, also when an error ends the work (instance directories outside the dataset, the first
/// instance warnings, …).
pub fn regrade(settings: &GradeSettings<'_>, notices: &mut Vec<Notice>) -> Result<GradeOutcome> {
    let selection = select(settings, notices)?;
    let version = settings.options.grading_version;
    if !version.is_default() {
        notices.push(Notice::Info(format!(
            "grading as the original's release {version}.0 does (--grading-version {version}): \
             every instance is graded again from its outputs and its report.json overwritten"
        )));
    }
    let rules = read_rules(
        settings.table,
        selection.instances.iter().map(|i| i.repo.as_str()),
        settings.spec_table,
    )?;
    let root = LogsRoot::new(settings.logs_root);
    let request = RegradeRequest {
        logs_root: &root,
        run_id: settings.run_id,
        model_dir: &selection.model_dir,
        instances: &selection.instances,
        rewrite: settings.rewrite,
        threads: 0,
        options: settings.options,
        rules: &rules,
        empty_patches: selection.empty_patches.as_ref(),
        flaky: settings.flaky,
    };
    let graded = regrade_tree(&FsTree, &request);
    // Said before anything is written, so that they are not lost if writing fails.
    for w in graded.warnings.iter().take(MAX_WARNINGS_SHOWN) {
        notices.push(Notice::Warn(w.clone()));
    }
    if graded.warnings.len() > MAX_WARNINGS_SHOWN {
        notices.push(Notice::Warn(format!(
            "… and {} more instance(s) with warnings",
            graded.warnings.len() - MAX_WARNINGS_SHOWN
        )));
    }
    for (path, text) in &graded.writes {
        swtbench_data::fsutil::write_atomic(path, text.as_bytes()).map_err(Error::environment)?;
    }
    let not_run = graded
        .entries
        .iter()
        .filter(|e| e.state == EntryState::Error(ErrorReason::MissingModelPatch))
        .count();
    let out = evaluation_results_path(settings.output_dir, &selection.model_dir, settings.run_id);
    let report = RunReport::new(&RunReportInput {
        entries: graded.entries,
        submitted_ids: selection
            .submitted
            .map(|s| s.into_iter().collect())
            .unwrap_or_default(),
        parameters: graded_parameters(run_parameters(&out), settings.options.grading_version),
        suspicious: suspicious_reasons(&graded.integrity),
        network: network_use(&graded.integrity),
        ..Default::default()
    });
    swtbench_data::fsutil::write_atomic(&out, report.to_json().as_bytes())
        .map_err(Error::environment)?;
    Ok(GradeOutcome {
        report,
        run_report_path: out,
        newly_graded: graded.writes.len(),
        warnings: graded.warnings,
        not_run,
    })
}

/// What `verify` found: per instance, whether its `report.json` is what its outputs grade to.
#[derive(Debug, Clone, Default)]
pub struct VerifyOutcome {
    /// Instances checked (graded again from their outputs, or found ungradable).
    pub checked: usize,
    /// Instances whose report.json agrees with their outputs.
    pub agreeing: usize,
    /// Instance id → why it fails verification (a report.json that differs from its re-grade or
    /// is missing, an output that no longer matches its key file).
    pub failures: BTreeMap<String, String>,
    /// Instances without outputs to grade and without a report.json (consistent: nothing to check).
    pub ungraded: BTreeMap<String, String>,
    /// Instance id → the integrity checks' reasons, for the suspicious ones.
    pub suspicious: BTreeMap<String, Vec<String>>,
    /// Instance id → its runs without verified evidence of the test runner beside the log.
    pub without_evidence: BTreeMap<String, Vec<String>>,
    /// Runs checked, over the instances graded from their outputs.
    pub runs_checked: usize,
}

impl VerifyOutcome {
    pub fn is_clean(&self) -> bool {
        self.failures.is_empty() && self.suspicious.is_empty()
    }

    /// What `verify` says of it: a line per mismatch, suspicious reason and run without evidence
    /// (data), and the counts.
    pub fn lines(&self) -> Vec<Line> {
        let mut out = Vec::new();
        for (id, why) in &self.failures {
            out.push(Line::Data(format!("mismatch {id}: {why}")));
        }
        for (id, reasons) in &self.suspicious {
            for r in reasons {
                out.push(Line::Data(format!("suspicious {id}: {r}")));
            }
        }
        for (id, runs) in &self.without_evidence {
            out.push(Line::Data(format!("no evidence {id}: {}", runs.join(", "))));
        }
        let unevidenced: usize = self.without_evidence.values().map(Vec::len).sum();
        out.push(Line::Info(format!(
            "{} instance(s) checked: {} agree with their outputs, {} do not, {} have nothing to grade; \
             {} suspicious; {} of {} run(s) have the test runner's evidence beside the log",
            self.checked,
            self.agreeing,
            self.failures.len(),
            self.ungraded.len(),
            self.suspicious.len(),
            self.runs_checked - unevidenced,
            self.runs_checked
        )));
        out
    }
}

/// The model of the run at `run_dir` (`<logs root>/<run id>`): its only `pred_pre__<model>`
/// directory (`verify` without `--model` or `--predictions`).
pub fn only_model(run_dir: &Path) -> Result<String> {
    let mut models: Vec<String> = std::fs::read_dir(run_dir)
        .map_err(|e| Error::input(anyhow!("cannot read {}: {e}", run_dir.display())))?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("pred_pre__")
                .map(str::to_string)
        })
        .collect();
    models.sort();
    match models.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Error::input(anyhow!(
            "{} has no pred_pre__<model> directory: not a run directory",
            run_dir.display()
        ))
        .with_hint("RUN_DIR is <logs root>/<run id>, e.g. run_instance_swt_logs/my-run")),
        many => Err(Error::input(anyhow!(
            "{} holds runs of several models ({})",
            run_dir.display(),
            many.join(", ")
        ))
        .with_hint("choose one with --model or --predictions")),
    }
}

/// Checks a run without containers and without writing anything: every output against its key
/// file, every `report.json` against the grade of its outputs now (byte for byte), and the
/// integrity of every graded instance's logs.
pub fn verify(settings: &GradeSettings<'_>, notices: &mut Vec<Notice>) -> Result<VerifyOutcome> {
    let selection = select(settings, notices)?;
    let rules = read_rules(
        settings.table,
        selection.instances.iter().map(|i| i.repo.as_str()),
        settings.spec_table,
    )?;
    let root = LogsRoot::new(settings.logs_root);
    let request = RegradeRequest {
        logs_root: &root,
        run_id: settings.run_id,
        model_dir: &selection.model_dir,
        instances: &selection.instances,
        rewrite: true,
        threads: 0,
        options: settings.options,
        rules: &rules,
        empty_patches: selection.empty_patches.as_ref(),
        flaky: settings.flaky,
    };
    let graded = regrade_tree(&FsTree, &request);
    let run = RunTree::new(&FsTree, &root, settings.run_id, &selection.model_dir);
    let mut out = VerifyOutcome {
        checked: graded.entries.len(),
        suspicious: suspicious_reasons(&graded.integrity),
        without_evidence: graded
            .integrity
            .iter()
            .filter(|(_, i)| !i.without_evidence.is_empty())
            .map(|(id, i)| {
                let runs = i.without_evidence.iter().map(|k| k.to_string()).collect();
                (id.clone(), runs)
            })
            .collect(),
        runs_checked: graded.integrity.len() * 6,
        ..Default::default()
    };
    let writes: BTreeMap<&Path, &str> = graded
        .writes
        .iter()
        .map(|(p, t)| (p.as_path(), t.as_str()))
        .collect();
    for entry in &graded.entries {
        let id = entry.instance_id.clone();
        let report_path = run.report_path(&id);
        let on_disk = std::fs::read_to_string(&report_path).ok();
        match (&entry.state, writes.get(report_path.as_path()), on_disk) {
            (EntryState::Graded { .. }, Some(regraded), Some(disk)) => {
                if disk == *regraded {
                    out.agreeing += 1;
                } else {
                    out.failures.insert(
                        id,
                        format!(
                            "{} differs from the grade of its outputs now",
                            report_path.display()
                        ),
                    );
                }
            }
            (EntryState::Graded { .. }, _, None) => {
                out.failures.insert(
                    id,
                    format!("no {}, although its outputs grade", report_path.display()),
                );
            }
            (EntryState::Graded { .. }, None, Some(_)) => out.agreeing += 1,
            (state, _, Some(_)) => {
                out.failures.insert(
                    id,
                    format!(
                        "{} exists, but its outputs cannot be graded: {}",
                        report_path.display(),
                        state.outcome_reason()
                    ),
                );
            }
            (state, _, None) => {
                out.ungraded.insert(id, state.outcome_reason());
            }
        }
    }
    Ok(out)
}

/// Instance id → the runs whose test runner connected to the network, with the addresses.
pub fn network_use(
    checked: &BTreeMap<String, swtbench_grade::integrity::Integrity>,
) -> BTreeMap<String, Vec<String>> {
    checked
        .iter()
        .filter(|(_, i)| !i.network.is_empty())
        .map(|(id, i)| (id.clone(), i.network.clone()))
        .collect()
}

/// Instance id → the reasons' texts, for the instances the integrity checks found suspicious.
pub fn suspicious_reasons(
    checked: &BTreeMap<String, swtbench_grade::integrity::Integrity>,
) -> BTreeMap<String, Vec<String>> {
    checked
        .iter()
        .filter(|(_, i)| i.is_suspicious())
        .map(|(id, i)| {
            (
                id.clone(),
                i.reasons.iter().map(ToString::to_string).collect(),
            )
        })
        .collect()
}

/// The parser `parse-log` reads a log with: `parser` when given, else `repo`'s in `mode` (the
/// reproduction parser in reproduction mode without a repository).
pub fn log_parser(parser: Option<Parser>, repo: Option<&str>, mode: ExecMode) -> Result<Parser> {
    match (parser, repo) {
        (Some(p), _) => Ok(p),
        (None, Some(repo)) => logs::parser_for(repo, mode).ok_or_else(|| {
            let known: Vec<&str> = swtbench_grade::parsers::REPO_PARSERS
                .iter()
                .map(|(r, _)| *r)
                .collect();
            Error::input(anyhow!("no log parser for repository `{repo}`")).with_hint(format!(
                "known repositories: {}; or choose one with --parser",
                known.join(", ")
            ))
        }),
        (None, None) if mode == ExecMode::ReproductionScript => Ok(Parser::ReproductionScript),
        (None, None) => Err(Error::input(anyhow!(
            "give --repo (its parser reads the log) or --parser"
        ))),
    }
}

/// A test log's bytes (a run's `test_output.txt`; `-`: stdin).
pub fn read_log(path: &Path) -> Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .map_err(|e| Error::input(anyhow!(e).context("reading the log from stdin")))?;
        return Ok(buf);
    }
    std::fs::read(path).map_err(|e| {
        Error::input(anyhow!("reading {}: {e}", path.display()))
            .with_hint("FILE is a run's test_output.txt (or - to read the log from stdin)")
    })
}

/// One log as `parse-log` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedLogText {
    /// `{"applied": …, "tests": {…}}` (keys sorted) as Python's `json.dumps` writes it.
    pub json: String,
    /// What is worth telling about the log, one sentence each.
    pub notes: Vec<&'static str>,
}

/// Parses one log with `parser`.
pub fn parse_log(bytes: &[u8], parser: Parser) -> ParsedLogText {
    let parsed = logs::parse_log(Some(bytes), parser);
    let tests: Map<String, Value> = parsed
        .tests
        .iter()
        .map(|(k, v)| (k.clone(), json!(v.as_str())))
        .collect();
    let out = json!({"applied": parsed.applied, "tests": tests});
    ParsedLogText {
        json: py::dumps_compact(&out),
        notes: parsed.notes.iter().map(|n| describe(*n)).collect(),
    }
}

fn describe(note: LogNote) -> &'static str {
    match note {
        LogNote::InvalidUtf8 => {
            "invalid UTF-8 replaced with U+FFFD (the original would fail the run)"
        }
        LogNote::TraceSplitFailed => {
            "the coverage trace marker appears without its echoed command line; no tests read \
             (the original raises IndexError here)"
        }
        LogNote::FailureMarker => {
            "a failure marker (>>>>> …) voids this run: no tests, not applied"
        }
    }
}
