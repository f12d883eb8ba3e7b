//! Reads a run tree into the view model, through a [`TreeReader`] the caller implements (the
//! application layer over the file system, tests over a [`swtbench_grade::tree::MemoryTree`]).
//! Where each output of an instance lives (its six runs, the shared gold/base directory of the
//! run's variant, its report) is decided by [`RunTree`], the reader `swtbench grade` uses too;
//! this module reads what the page shows from there and hands the text to the pure builder
//! ([`crate::build`]). It never writes anything and never touches the file system itself: paths
//! arrive resolved (absolute) from the caller.
//!
//! Layout read (§4.8 of the behaviour reference, relative to the logs root
//! `run_instance_swt_logs/`):
//! - `<run_id>/<model>/<id>/report.json` (+ `swtbench_instance.json`, `run_instance.log`,
//!   `extracted_patch.diff`, …)
//! - `<run_id>/pred_{pre,post}__<model>/<id>/{model_patch.diff,test_output.txt,eval.sh,exec_spec.json,…}`
//! - `gold_{pre,post}/<id>/<sha256 of the gold test directives>/…`
//! - `base_{pre,post}/<id>/<sha256 of the model patch's directives>/…`
//! - `../evaluation_results/<model>.<run_id>.json` (the run report), when present.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use swtbench_core::layout::{
    evaluation_results_path, LogsRoot, EVALUATION_RESULTS_DIR, EVAL_SCRIPT_FILE, EXEC_SPEC_FILE,
    EXTRACTED_PATCH_FILE, MODEL_PATCH_FILE, RAW_MODEL_PATCH_FILE, REPORT_FILE,
    RUN_INSTANCE_LOG_FILE, TEST_OUTPUT_FILE,
};
use swtbench_core::{Instance, RunKind};
use swtbench_grade::logs::ExecMode;
use swtbench_grade::scan::RunScanner;
use swtbench_grade::tree::{ReadRules, RunTree, SharedHashes, TreeReader};

use crate::build::{self, InstanceInput, InstanceReport, RunInput, RunnerSummary};
use crate::grade_bridge;
use crate::model::{CompareRow, CompareView, Metrics, RunView};

/// What went wrong reading a run tree.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: not a run directory (expected <logs-root>/<run_id>/<model>): {reason}")]
    NotARun { path: PathBuf, reason: String },
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// How to read a run and where its page will live.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Directory the HTML file will be written to, absolute (resolved by the caller, symbolic
    /// links included, as the run's directory is); log links are made relative to it.
    pub out_dir: PathBuf,
    /// Dataset instances by id. Gives the repository, the gold code fix and the gold test
    /// directives (which name the gold runs' directories). Without it they are read from the runs'
    /// `exec_spec.json`, and an instance with several cached gold runs shows none of them.
    pub instances: BTreeMap<String, Instance>,
    /// The leaderboard numbers to show. Pass what `report --format json` computed so the page and
    /// the JSON agree by construction; `None` computes them from the reports found (no coverage
    /// rows, denominator `denominator` or the number of reports).
    pub metrics: Option<Metrics>,
    /// Denominator used when `metrics` is `None`.
    pub denominator: Option<usize>,
    /// Which log parser reads the runs' outputs of an instance whose pred_pre `eval.sh` is missing
    /// (default: the repository's unit-test parser); otherwise the script's mode decides.
    pub exec_mode: ExecMode,
    /// A spec table's rules: unit-test log parsers by repository that replace the original's map
    /// (as its `log_parser` does for `swtbench run`), and the non-test extensions that name the
    /// shared gold/base run directories.
    pub rules: ReadRules,
    /// Parameters to show first (dataset, filter, mode, …); run-report fields follow.
    pub params: Vec<(String, String)>,
    /// `swtbench <version>`.
    pub generator: String,
    /// The run report to read; default `<logs-root>/../evaluation_results/<model>.<run_id>.json`.
    pub run_report: Option<PathBuf>,
}

/// The run id, model and logs root of `<logs-root>/<run_id>/<model>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLocation {
    pub logs_root: PathBuf,
    pub run_id: String,
    pub model: String,
}

impl RunLocation {
    /// The location of the run whose model directory is `model_dir` (absolute, resolved by the
    /// caller); an error when `tree` has no such directory or the path is too short.
    pub fn of(tree: &dyn TreeReader, model_dir: &Path) -> Result<RunLocation, LoadError> {
        let not_run = |reason: &str| LoadError::NotARun {
            path: model_dir.to_path_buf(),
            reason: reason.to_string(),
        };
        let is_dir = tree.is_dir(model_dir).map_err(|e| LoadError::Io {
            path: model_dir.to_path_buf(),
            source: e,
        })?;
        if !is_dir {
            return Err(not_run("not a directory"));
        }
        let model = file_name(model_dir).ok_or_else(|| not_run("no model directory name"))?;
        let run_dir = model_dir
            .parent()
            .ok_or_else(|| not_run("no run id directory"))?;
        let run_id = file_name(run_dir).ok_or_else(|| not_run("no run id directory name"))?;
        let logs_root = run_dir
            .parent()
            .ok_or_else(|| not_run("no logs root"))?
            .to_path_buf();
        Ok(RunLocation {
            logs_root,
            run_id,
            model,
        })
    }

    fn model_dir(&self) -> PathBuf {
        LogsRoot::new(&self.logs_root).model_reports_dir(&self.run_id, &self.model)
    }

    /// Default place of the run report: `evaluation_results/` beside the logs root.
    pub fn run_report_path(&self) -> PathBuf {
        let base = self.logs_root.parent().unwrap_or(&self.logs_root);
        evaluation_results_path(
            &base.join(EVALUATION_RESULTS_DIR),
            &self.model,
            &self.run_id,
        )
    }
}

/// `swtbench run`'s account of an instance, next to its `report.json`.
const INSTANCE_SUMMARY_FILE: &str = "swtbench_instance.json";
/// Why patch extraction produced what it did (`--patch-types` other than vanilla).
const EXTRACTION_FILE: &str = "extraction.json";

fn file_name(p: &Path) -> Option<String> {
    p.file_name().map(|s| s.to_string_lossy().into_owned())
}

/// Files of a run directory, the well-known ones first.
fn list_files(tree: &dyn TreeReader, dir: &Path) -> Vec<String> {
    const ORDER: [&str; 6] = [
        TEST_OUTPUT_FILE,
        EVAL_SCRIPT_FILE,
        MODEL_PATCH_FILE,
        RUN_INSTANCE_LOG_FILE,
        EXEC_SPEC_FILE,
        REPORT_FILE,
    ];
    let mut names = tree.files(dir).ok().flatten().unwrap_or_default();
    names.sort_by_key(|n| {
        (
            ORDER.iter().position(|o| o == n).unwrap_or(ORDER.len()),
            n.clone(),
        )
    });
    names
}

/// `to` relative to directory `from` (both absolute), `/`-separated; directories get a trailing
/// `/` when `dir` is set.
pub fn relative_path(from: &Path, to: &Path, dir: bool) -> String {
    let norm = |p: &Path| -> Vec<String> {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect()
    };
    let f = norm(from);
    let t = norm(to);
    let common = f.iter().zip(t.iter()).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_string(), f.len() - common).collect();
    parts.extend(t[common..].iter().cloned());
    let mut s = parts.join("/");
    if s.is_empty() {
        s.push('.');
    }
    if dir {
        s.push('/');
    }
    s
}

/// The repository `owner/name` encoded in a SWE-bench id (`owner__name-123`).
pub fn repo_from_id(id: &str) -> String {
    match id.split_once("__") {
        Some((owner, rest)) => {
            let name = rest.rsplit_once('-').map_or(rest, |(n, _)| n);
            format!("{owner}/{name}")
        }
        None => String::new(),
    }
}

/// A run's output parsed piece by piece with `parser`, when that parser allows it
/// ([`RunScanner`]); `None`: read it whole (or it is not there).
fn scan_output(
    tree: &dyn TreeReader,
    path: &Path,
    parser: Option<swtbench_grade::Parser>,
) -> Option<swtbench_grade::logs::ParsedRun> {
    let mut scanner = RunScanner::new(parser?)?;
    let found = tree
        .read_pieces(path, &mut |bytes| scanner.push(bytes))
        .ok()?;
    if !found {
        return None;
    }
    scanner.finish()
}

fn exec_spec(run: &RunTree<'_>, dir: &Path) -> Option<Value> {
    run.read_text(&dir.join(EXEC_SPEC_FILE))
        .and_then(|t| serde_json::from_str(&t).ok())
}

/// The gold code fix from a post run's `exec_spec.json` (`patch_list` = [code fix, tests]).
fn gold_fix_from_spec(spec: &Value) -> Option<String> {
    let list = spec.get("patch_list")?.as_array()?;
    if list.len() == 2 {
        list[0].as_str().map(str::to_string)
    } else {
        None
    }
}

struct RunReport {
    value: Option<Value>,
    path: PathBuf,
}

impl RunReport {
    fn ids(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let Some(Value::Object(m)) = &self.value else {
            return out;
        };
        for (k, v) in m {
            if k.ends_with("_ids") && k != "unstopped_containers" {
                if let Value::Array(a) = v {
                    out.extend(a.iter().filter_map(|x| x.as_str().map(str::to_string)));
                }
            }
        }
        out
    }

    /// Per-instance reasons, from any top-level object mapping ids to strings (or to objects with
    /// a `reason` string).
    fn reasons(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let Some(Value::Object(m)) = &self.value else {
            return out;
        };
        for key in ["error_reasons", "reasons", "errors", "skipped"] {
            if let Some(Value::Object(r)) = m.get(key) {
                for (id, v) in r {
                    let text = match v {
                        Value::String(s) => Some(s.clone()),
                        Value::Object(o) => {
                            o.get("reason").and_then(Value::as_str).map(str::to_string)
                        }
                        _ => None,
                    };
                    if let Some(t) = text {
                        out.entry(id.clone()).or_insert(t);
                    }
                }
            }
        }
        out
    }

    /// Scalar top-level fields, shown as run parameters.
    fn params(&self) -> Vec<(String, String)> {
        let Some(Value::Object(m)) = &self.value else {
            return Vec::new();
        };
        let scalar = |(k, v): (&String, &Value)| match v {
            Value::String(s) => Some((k.clone(), s.clone())),
            Value::Number(n) => Some((k.clone(), n.to_string())),
            Value::Bool(b) => Some((k.clone(), b.to_string())),
            _ => None,
        };
        // `run_parameters` (how `swtbench run` made the run) first, then the top-level scalars.
        let run_parameters = match m.get("run_parameters") {
            Some(Value::Object(p)) => p.iter().filter_map(scalar).collect(),
            _ => Vec::new(),
        };
        run_parameters
            .into_iter()
            .chain(m.iter().filter_map(scalar))
            .collect()
    }
}

/// Reads the run whose model directory is `model_dir` (`<logs-root>/<run_id>/<model>`, absolute)
/// from `tree` into a view model.
pub fn load_run(
    tree: &dyn TreeReader,
    model_dir: &Path,
    opts: &LoadOptions,
) -> Result<RunView, LoadError> {
    let loc = RunLocation::of(tree, model_dir)?;
    let root = LogsRoot::new(&loc.logs_root);
    let run = RunTree::new(tree, &root, &loc.run_id, &loc.model);
    let rr_path = opts
        .run_report
        .clone()
        .unwrap_or_else(|| loc.run_report_path());
    let run_report = RunReport {
        value: run
            .read_text(&rr_path)
            .and_then(|t| serde_json::from_str(&t).ok()),
        path: rr_path,
    };

    let mut ids: BTreeSet<String> = run.instance_ids().unwrap_or_default();
    ids.extend(run_report.ids());
    ids.remove("");
    let reasons = run_report.reasons();

    let ids: Vec<String> = ids.into_iter().collect();
    // Reading and parsing the six logs of each instance dominates; instances are independent, so
    // split them over the available cores and keep the id order.
    let one = |id: &String| {
        let mut input = read_instance(&run, id, opts);
        if input.reason.is_none() {
            input.reason = reasons.get(id).cloned();
        }
        let report = match &input.report {
            Some(Ok(r)) => Some(r.clone()),
            _ => None,
        };
        (build::build_instance(input), report)
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let chunk = ids.len().div_ceil(workers).max(1);
    let built: Vec<Vec<(crate::model::InstanceView, Option<InstanceReport>)>> =
        std::thread::scope(|scope| {
            let handles: Vec<_> = ids
                .chunks(chunk)
                .map(|part| scope.spawn(move || part.iter().map(one).collect::<Vec<_>>()))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
    let mut instances = Vec::with_capacity(ids.len());
    let mut reports: Vec<InstanceReport> = Vec::new();
    for (view, report) in built.into_iter().flatten() {
        instances.push(view);
        reports.extend(report);
    }

    let metrics = match &opts.metrics {
        Some(m) => m.clone(),
        None => {
            grade_bridge::compute_metrics(&reports, None, opts.denominator.unwrap_or(reports.len()))
        }
    };
    Ok(run_view(
        &loc,
        &run_report,
        ids.is_empty(),
        instances,
        metrics,
        opts,
    ))
}

/// The run report's counts follow the original harness, which counts differently from the page's
/// outcome table; each field whose meaning differs is annotated, so that the page's numbers agree
/// or say why they differ (pure).
pub fn explain_report_fields(fields: &mut [(String, String)], outcomes: &[crate::model::Outcome]) {
    use crate::model::Outcome;
    let count = |o: Outcome| outcomes.iter().filter(|x| **x == o).count();
    let (unresolved, not_applied, empty) = (
        count(Outcome::Unresolved),
        count(Outcome::NotApplied),
        count(Outcome::EmptyPatch),
    );
    for (key, value) in fields.iter_mut() {
        let note = match key.as_str() {
            "completed_instances" => Some(
                "reports reused from an earlier invocation of this run id, as the original counts; \
                 instances evaluated now are not in it"
                    .to_string(),
            ),
            "unresolved_instances" if value.trim() != unresolved.to_string() => Some(format!(
                "the original's count, which includes not applied and empty patches: {unresolved} \
                 unresolved, {not_applied} not applied, {empty} empty patch{}",
                if empty == 1 { "" } else { "es" }
            )),
            "Mean coverage" => Some(
                "a fraction, not a percentage: the mean coverage of the changed lines over the \
                 instances with coverage"
                    .to_string(),
            ),
            "Mean coverage delta" => Some(
                "a fraction: this run's mean coverage gain over the instances with coverage; not \
                 the leaderboard's Δ coverage rows, which are relative to the gold run"
                    .to_string(),
            ),
            _ => None,
        };
        if let Some(note) = note {
            *value = format!("{value} ({note})");
        }
    }
}

/// The page's run-level parts around the instances: parameters, counts, links and warnings.
fn run_view(
    loc: &RunLocation,
    run_report: &RunReport,
    no_instances: bool,
    instances: Vec<crate::model::InstanceView>,
    metrics: Metrics,
    opts: &LoadOptions,
) -> RunView {
    let out_dir = &opts.out_dir;
    let mut params = opts.params.clone();
    params.push(("run id".to_string(), loc.run_id.clone()));
    params.push(("model".to_string(), loc.model.clone()));
    // Counts go to their own table; any other scalar the run report carries (dataset, mode,
    // timings, versions written by newer harnesses) is a parameter.
    let mut report_fields = Vec::new();
    for (k, v) in run_report.params() {
        let is_count = k.ends_with("_instances") || k.starts_with("Mean ");
        if is_count {
            report_fields.push((k, v));
        } else if !params.iter().any(|(pk, _)| *pk == k) {
            params.push((k, v));
        }
    }
    let outcomes: Vec<crate::model::Outcome> = instances.iter().map(|i| i.outcome).collect();
    explain_report_fields(&mut report_fields, &outcomes);
    let mut links = Vec::new();
    let mut warnings = Vec::new();
    if run_report.value.is_some() {
        links.push((
            "run report".to_string(),
            relative_path(out_dir, &run_report.path, false),
        ));
    } else if opts.run_report.is_some() {
        warnings.push(format!(
            "run report {} not found or not JSON",
            run_report.path.display()
        ));
    }
    links.push((
        "per-instance reports".to_string(),
        relative_path(out_dir, &loc.model_dir(), true),
    ));
    if no_instances {
        warnings.push(format!(
            "no instances found under {}",
            loc.model_dir().display()
        ));
    }
    RunView {
        title: format!("{} / {}", loc.run_id, loc.model),
        run_id: loc.run_id.clone(),
        model: loc.model.clone(),
        params,
        report_fields,
        metrics,
        instances,
        links,
        warnings,
        generator: opts.generator.clone(),
    }
}

/// The instance's repository: the dataset's, else its pred_pre run's exec spec's, else the one
/// its id names.
fn instance_repo(
    run: &RunTree<'_>,
    dataset: Option<&Instance>,
    pred_pre: &Path,
    id: &str,
) -> String {
    dataset
        .map(|i| i.repo.clone())
        .or_else(|| {
            exec_spec(run, pred_pre)
                .as_ref()
                .and_then(|s| s.get("repo"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| repo_from_id(id))
}

/// The links of the instance's files beside its runs: its report and those of its model
/// directory `model_dir` that exist, relative to `out_dir`.
fn instance_links(
    tree: &dyn TreeReader,
    out_dir: &Path,
    report_path: &Path,
    model_dir: &Path,
) -> Vec<(String, String)> {
    let mut links = Vec::new();
    if tree.exists(report_path).unwrap_or(false) {
        links.push((
            REPORT_FILE.to_string(),
            relative_path(out_dir, report_path, false),
        ));
    }
    for name in [
        INSTANCE_SUMMARY_FILE,
        RUN_INSTANCE_LOG_FILE,
        EXTRACTED_PATCH_FILE,
        RAW_MODEL_PATCH_FILE,
        EXTRACTION_FILE,
    ] {
        let p = model_dir.join(name);
        if tree.exists(&p).unwrap_or(false) {
            links.push((name.to_string(), relative_path(out_dir, &p, false)));
        }
    }
    links
}

/// Everything the page shows of one instance, read from where [`RunTree`] says it is.
fn read_instance(run: &RunTree<'_>, id: &str, opts: &LoadOptions) -> InstanceInput {
    let dataset = opts.instances.get(id);
    let model_dir = run.instance_dir(id);
    let report_path = run.report_path(id);
    let report = run
        .read_text(&report_path)
        .map(|t| build::parse_instance_report(&t, id));
    let runner = run
        .read_text(&model_dir.join(INSTANCE_SUMMARY_FILE))
        .as_deref()
        .and_then(RunnerSummary::parse);

    let pred_pre = run.pred_dir(RunKind::PredPre, id);
    let pred_post = run.pred_dir(RunKind::PredPost, id);
    // model_patch.diff is the patch that ran (already extracted and stripped of binary diffs).
    let model_patch = match run.model_patch(id) {
        Ok(Some(p)) => Some(p),
        _ => run
            .read_text(&model_dir.join(EXTRACTED_PATCH_FILE))
            .map(|p| swtbench_grade::py::universal_newlines(&p)),
    };
    let repo = instance_repo(run, dataset, &pred_pre, id);

    // The directories `swtbench grade` reads: the shared runs of the run's eval variant (the
    // pred_pre eval script's), each pair from one directory.
    let gold_hash = dataset.map(|i| opts.rules.directives_hash(&i.repo, &i.golden_test_patch));
    let base_hash = model_patch
        .as_deref()
        .map(|p| opts.rules.directives_hash(&repo, p));
    let located = run.locate(
        id,
        &SharedHashes {
            gold: gold_hash.as_deref(),
            base: base_hash.as_deref(),
            default_mode: opts.exec_mode,
        },
    );

    let gold_code_patch = dataset.map(|i| i.golden_code_patch.clone()).or_else(|| {
        exec_spec(run, &pred_post)
            .as_ref()
            .and_then(gold_fix_from_spec)
    });
    let tree = run.tree();
    let out_dir = &opts.out_dir;
    // The parser the page reads the logs with (as `grade_bridge::parsed_log` chooses it).
    let page_parser = match (located.exec_mode, opts.rules.parser(&repo)) {
        (ExecMode::UnitTest, Some(p)) => Some(p),
        (mode, _) => swtbench_grade::logs::parser_for(&repo, mode),
    };
    let mut runs = Vec::with_capacity(6);
    let mut gold_from_runs = None;
    for kind in RunKind::ALL {
        let dir = located
            .dir(kind)
            .filter(|d| tree.is_dir(d).unwrap_or(false));
        if kind == RunKind::GoldPost && gold_code_patch.is_none() {
            gold_from_runs = dir
                .and_then(|d| exec_spec(run, d))
                .as_ref()
                .and_then(gold_fix_from_spec);
        }
        let output = dir.map(|d| d.join(TEST_OUTPUT_FILE));
        let parsed_output = output
            .as_deref()
            .and_then(|p| scan_output(tree, p, page_parser));
        let test_output = match (&parsed_output, &output) {
            (None, Some(p)) => tree.read(p).ok().flatten(),
            _ => None,
        };
        runs.push(RunInput {
            kind,
            dir: dir.map(|d| relative_path(out_dir, d, true)),
            files: dir.map(|d| list_files(tree, d)).unwrap_or_default(),
            test_output,
            parsed_output,
        });
    }

    let links = instance_links(tree, out_dir, &report_path, &model_dir);

    let parser = opts.rules.parser(&repo);
    InstanceInput {
        id: id.to_string(),
        repo,
        exec_mode: located.exec_mode,
        parser,
        report,
        model_patch,
        gold_code_patch: gold_code_patch.or(gold_from_runs),
        runs,
        reason: None,
        runner,
        links,
        notes: located.notes,
    }
}

/// Builds the comparison of two loaded runs (pure).
pub fn compare(a: &RunView, b: &RunView, generator: &str) -> CompareView {
    let mut rows: BTreeMap<&str, CompareRow> = BTreeMap::new();
    for i in &a.instances {
        rows.insert(
            &i.id,
            CompareRow {
                id: i.id.clone(),
                repo: i.repo.clone(),
                outcome_a: Some(i.outcome),
                outcome_b: None,
                added_f2p_a: i.added_f2p,
                added_f2p_b: None,
                coverage_delta_a: i.coverage_delta_pred,
                coverage_delta_b: None,
            },
        );
    }
    for i in &b.instances {
        let row = rows.entry(&i.id).or_insert_with(|| CompareRow {
            id: i.id.clone(),
            repo: i.repo.clone(),
            outcome_a: None,
            outcome_b: None,
            added_f2p_a: None,
            added_f2p_b: None,
            coverage_delta_a: None,
            coverage_delta_b: None,
        });
        row.outcome_b = Some(i.outcome);
        row.added_f2p_b = i.added_f2p;
        row.coverage_delta_b = i.coverage_delta_pred;
    }
    CompareView {
        title: format!("{} vs {}", a.title, b.title),
        name_a: a.title.clone(),
        name_b: b.title.clone(),
        metrics_a: a.metrics.clone(),
        metrics_b: b.metrics.clone(),
        params_a: a.params.clone(),
        params_b: b.params.clone(),
        rows: rows.into_values().collect(),
        generator: generator.to_string(),
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    /// The run report box agrees with the outcome table or says why not (the fixture run's
    /// numbers: 3 resolved, 5 unresolved, 1 not applied, 1 empty patch, all evaluated now).
    #[test]
    fn the_run_report_fields_say_how_the_original_counts() {
        use crate::model::Outcome::*;
        let outcomes = [
            Resolved, Resolved, Resolved, Unresolved, Unresolved, Unresolved, Unresolved,
            Unresolved, NotApplied, EmptyPatch,
        ];
        let field = |k: &str, v: &str| (k.to_string(), v.to_string());
        let mut fields = vec![
            field("total_instances", "10"),
            field("completed_instances", "0"),
            field("resolved_instances", "3"),
            field("unresolved_instances", "7"),
            field("Mean coverage delta", "0.625"),
        ];
        explain_report_fields(&mut fields, &outcomes);
        assert_eq!(fields[0].1, "10");
        assert_eq!(fields[2].1, "3");
        assert!(
            fields[1]
                .1
                .starts_with("0 (reports reused from an earlier invocation"),
            "{}",
            fields[1].1
        );
        assert_eq!(
            fields[3].1,
            "7 (the original's count, which includes not applied and empty patches: 5 \
             unresolved, 1 not applied, 1 empty patch)"
        );
        assert!(
            fields[4]
                .1
                .contains("not the leaderboard's Δ coverage rows"),
            "{}",
            fields[4].1
        );
        // A count that already agrees is left as it is.
        let mut same = vec![field("unresolved_instances", "5")];
        explain_report_fields(&mut same, &[Unresolved; 5]);
        assert_eq!(same[0].1, "5");
    }

    #[test]
    fn relative_paths() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            relative_path(&p("/a/b"), &p("/a/b/c/d.txt"), false),
            "c/d.txt"
        );
        assert_eq!(
            relative_path(&p("/a/b/out"), &p("/a/x/y"), true),
            "../../x/y/"
        );
        assert_eq!(relative_path(&p("/a"), &p("/a"), true), "./");
    }

    /// The loader needs nothing but a tree reader: an in-memory tree gives the page of a run.
    #[test]
    fn a_run_is_read_from_any_tree() {
        use swtbench_grade::tree::MemoryTree;
        let mut t = MemoryTree::new();
        let pred_pre = "/t/logs/r1/pred_pre__m/psf__requests-1";
        t.insert(
            "/t/logs/r1/m/psf__requests-1/report.json",
            "{\"psf__requests-1\": {\"patch_exists\": true, \"patch_successfully_applied\": true, \"resolved\": true}}",
        );
        t.insert(
            format!("{pred_pre}/model_patch.diff"),
            "diff --git a/t.py b/t.py\n",
        );
        t.insert(
            format!("{pred_pre}/test_output.txt"),
            "Applied patch t.py cleanly.\nPASSED t.py::a\n",
        );
        t.insert(
            "/t/evaluation_results/m.r1.json",
            "{\"total_instances\": 1}",
        );
        let opts = LoadOptions {
            out_dir: PathBuf::from("/t/pages"),
            ..LoadOptions::default()
        };
        let view = load_run(&t, Path::new("/t/logs/r1/m"), &opts).unwrap();
        assert_eq!((view.run_id.as_str(), view.model.as_str()), ("r1", "m"));
        assert_eq!(view.instances.len(), 1);
        let i = &view.instances[0];
        assert_eq!(i.outcome, crate::model::Outcome::Resolved);
        assert_eq!(
            i.detail.runs[0].dir.as_deref(),
            Some("../logs/r1/pred_pre__m/psf__requests-1/")
        );
        assert_eq!(
            i.detail.runs[0].files,
            vec![
                "test_output.txt".to_string(),
                "model_patch.diff".to_string()
            ]
        );
        assert!(view.links.contains(&(
            "run report".to_string(),
            "../evaluation_results/m.r1.json".to_string()
        )));
        let missing = load_run(&t, Path::new("/t/logs/r1/nope"), &opts).unwrap_err();
        assert!(missing.to_string().contains("not a directory"), "{missing}");
    }

    #[test]
    fn repo_from_swebench_ids() {
        assert_eq!(repo_from_id("django__django-11099"), "django/django");
        assert_eq!(
            repo_from_id("scikit-learn__scikit-learn-10297"),
            "scikit-learn/scikit-learn"
        );
        assert_eq!(repo_from_id("odd"), "");
    }
}
