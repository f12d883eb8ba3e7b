//! `swtbench grade`: re-grade a run from the logs it left in the original's layout (§4.8), without
//! containers: write each instance's `report.json` (only the missing ones unless `--rewrite`) and
//! the run report `evaluation_results/<model>.<run_id>.json`. With the spec table and predictions
//! `swtbench run` had, it reproduces run's `report.json` files byte for byte and its run report's
//! numbers (run counts an instance as completed only when nothing was executed for it; grade,
//! as the original, when its report.json existed before).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use swtbench_core::layout::{
    evaluation_results_path, model_dir_name, LogsRoot, EVALUATION_RESULTS_DIR, LOGS_ROOT_DIR,
};
use swtbench_core::{Instance, RunKind};
use swtbench_data::predictions::{load_predictions, PredictionsSource};
use swtbench_grade::logs::ExecMode;
use swtbench_grade::run_report::{EntryState, ErrorReason, RunReport, RunReportInput};
use swtbench_grade::tree::{regrade, RegradeRequest, RepoRules, TreeReader};
use swtbench_grade::{CoverageFormula, GradeOptions, Outcome, Parser};
use swtbench_runner::plan::vanilla_patch;
use swtbench_spec::SpecTable;

use super::report::FsTree;
use crate::args::{predictions_error, DatasetArgs};
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;
use crate::settings::load_spec_table;

#[derive(Debug, clap::Args)]
pub struct GradeArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// The run to grade.
    #[arg(long, alias = "run_id", value_name = "RUN_ID")]
    pub run_id: String,

    /// The model (`model_name_or_path`; `/` is turned into `__` as in the directory names).
    /// Defaults to the model of --predictions.
    #[arg(long, value_name = "MODEL", required_unless_present = "predictions")]
    pub model: Option<String>,

    /// The predictions of the run: its instances are the ones graded. An empty prediction (null,
    /// blank or only binary diffs) is graded as not applied, as `swtbench run` does without
    /// running it; any other instance without outputs is an error. Without it, every dataset
    /// instance with a directory in the run is graded, and an instance without runs keeps the
    /// not-applied report.json `run` wrote for its empty patch.
    #[arg(long, alias = "predictions_path", value_name = "FILE|gold")]
    pub predictions: Option<String>,

    /// The logs root (the original's `run_instance_swt_logs`).
    #[arg(long, value_name = "DIR", default_value = LOGS_ROOT_DIR)]
    pub logs_root: PathBuf,

    /// Where the run report goes (the original's `evaluation_results`).
    #[arg(long, value_name = "DIR", default_value = EVALUATION_RESULTS_DIR)]
    pub output_dir: PathBuf,

    /// Grade again instances that already have a report.json, and overwrite it.
    #[arg(long)]
    pub rewrite: bool,

    /// How the tests were run: unit_test or reproduction_script.
    #[arg(
        long,
        alias = "exec_mode",
        value_name = "MODE",
        default_value = "unit_test"
    )]
    pub exec_mode: ExecMode,

    /// `original` (default, the original's numbers) or `corrected` (removed lines compared with
    /// base_pre, where their line numbers belong; see docs/deviations.md).
    #[arg(long, value_name = "FORMULA", default_value = "original")]
    pub coverage_formula: CoverageFormula,

    /// Extra spec table entries (TOML, or JSON for *.json), applied over the embedded table, as
    /// given to `swtbench run`: their `log_parser` reads the logs of repositories the original
    /// has no parser for, and their `non_test_extensions` name the shared gold/base directories.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,
}

pub fn run(args: GradeArgs, printer: &Printer) -> CliResult {
    let table = load_spec_table(args.spec_table.as_deref())?;
    let dataset = args.dataset.load_valid(printer)?;
    let (model_dir, submitted, empty_patches) = match &args.predictions {
        Some(p) => {
            let source = PredictionsSource::parse(p);
            let preds = load_predictions(&source, &dataset).map_err(predictions_error)?;
            for w in &preds.warnings {
                printer.warn(w);
            }
            let model_dir = preds.model_dir();
            if let Some(m) = &args.model {
                if model_dir_name(m) != model_dir {
                    return Err(CliError::input(anyhow!(
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
            model_dir_name(args.model.as_deref().unwrap_or_default()),
            None,
            None,
        ),
    };
    let root = LogsRoot::new(&args.logs_root);
    let tree = FsTree;
    let instances: Vec<Instance> = match &submitted {
        Some(ids) => dataset
            .instances
            .iter()
            .filter(|i| ids.contains(i.instance_id.as_str()))
            .cloned()
            .collect(),
        None => {
            let found = ids_in_run(&tree, &root, &args.run_id, &model_dir)?;
            let unknown: Vec<&String> = found
                .iter()
                .filter(|id| dataset.get(id).is_none())
                .collect();
            if !unknown.is_empty() {
                printer.warn(&format!(
                    "{} instance directories in the run are not in the selected dataset (e.g. {}); ignored",
                    unknown.len(),
                    unknown[0]
                ));
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
        return Err(CliError::input(anyhow!(
            "nothing to grade: no instance of {} has outputs for model {model_dir} in {}",
            dataset.name,
            args.logs_root.join(&args.run_id).display()
        ))
        .with_hint("check --logs-root, --run-id, --model and --dataset"));
    }
    let repo_rules = repo_rules(&table, &instances, args.spec_table.as_deref())?;
    let request = RegradeRequest {
        logs_root: &root,
        run_id: &args.run_id,
        model_dir: &model_dir,
        instances: &instances,
        rewrite: args.rewrite,
        threads: 0,
        options: GradeOptions {
            exec_mode: args.exec_mode,
            coverage_formula: args.coverage_formula,
        },
        repo_rules: &repo_rules,
        empty_patches: empty_patches.as_ref(),
    };
    let graded = regrade(&tree, &request);
    for w in graded.warnings.iter().take(10) {
        printer.warn(w);
    }
    if graded.warnings.len() > 10 {
        printer.warn(&format!(
            "… and {} more instance(s) with warnings",
            graded.warnings.len() - 10
        ));
    }
    for (path, text) in &graded.writes {
        swtbench_data::fsutil::write_atomic(path, text.as_bytes())
            .map_err(CliError::environment)?;
    }
    let not_run = graded
        .entries
        .iter()
        .filter(|e| e.state == EntryState::Error(ErrorReason::MissingModelPatch))
        .count();
    let out = evaluation_results_path(&args.output_dir, &model_dir, &args.run_id);
    // How the run was made (written by `swtbench run`) stays in the rewritten run report.
    let parameters: Vec<(String, String)> = std::fs::read_to_string(&out)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| match v.get("run_parameters") {
            Some(serde_json::Value::Object(m)) => Some(
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default();
    let report = RunReport::new(&RunReportInput {
        entries: graded.entries,
        submitted_ids: submitted
            .map(|s| s.into_iter().collect())
            .unwrap_or_default(),
        parameters,
        ..Default::default()
    });
    swtbench_data::fsutil::write_atomic(&out, report.to_json().as_bytes())
        .map_err(CliError::environment)?;

    let count = |o: fn(&Outcome) -> bool| report.outcomes.values().filter(|x| o(x)).count();
    printer.info(&format!(
        "graded {} instances ({} newly, {} from earlier reports): {} resolved, {} unresolved \
         ({} not applied, {} empty patch), {} errors",
        report.total_instances,
        graded.writes.len(),
        report.completed_ids.len(),
        report.resolved_ids.len(),
        report.unresolved_ids.len(),
        count(|o| *o == Outcome::NotApplied),
        count(|o| *o == Outcome::EmptyPatch),
        report.error_ids.len(),
    ));
    for (id, why) in report.error_reasons.iter().take(10) {
        printer.info(&format!("  {id}: {why}"));
    }
    if report.error_reasons.len() > 10 {
        printer.info(&format!(
            "  … and {} more (see the run report)",
            report.error_reasons.len() - 10
        ));
    }
    if not_run > 0 && args.predictions.is_none() {
        printer.warn(&format!(
            "{not_run} instance(s) have no runs; pass --predictions so that empty patches among \
             them are graded as not applied, as `swtbench run` does"
        ));
    }
    printer.info(&format!("run report written to {}", out.display()));
    Ok(if report.error_ids.is_empty() {
        ExitCode::Success
    } else {
        ExitCode::Partial
    })
}

/// The spec table's rules for the repositories of `instances`, as `swtbench run` applies them:
/// the table's `log_parser` over the original's map, and its non-test extensions.
fn repo_rules(
    table: &SpecTable,
    instances: &[Instance],
    spec_table: Option<&Path>,
) -> Result<BTreeMap<String, RepoRules>, CliError> {
    let mut rules = BTreeMap::new();
    for inst in instances {
        if rules.contains_key(&inst.repo) {
            continue;
        }
        let parser = match table
            .repos
            .get(&inst.repo)
            .and_then(|r| r.log_parser.as_deref())
        {
            Some(name) => Some(name.parse::<Parser>().map_err(|e| {
                CliError::input(anyhow!(
                    "spec table{}: repository {}: {e}",
                    spec_table
                        .map(|p| format!(" {}", p.display()))
                        .unwrap_or_default(),
                    inst.repo
                ))
                .with_hint(
                    "log_parser is one of pytest, pytest_options, pytest_v2, django, seaborn, \
                     matplotlib, sympy",
                )
            })?),
            None => None,
        };
        let non_test_exts = table
            .non_test_extensions(&inst.repo)
            .into_iter()
            .map(str::to_string)
            .collect();
        rules.insert(
            inst.repo.clone(),
            RepoRules {
                parser,
                non_test_exts,
            },
        );
    }
    Ok(rules)
}

/// Instance ids with a pred_pre directory or a report directory in the run.
fn ids_in_run(
    tree: &FsTree,
    root: &LogsRoot,
    run_id: &str,
    model_dir: &str,
) -> Result<BTreeSet<String>, CliError> {
    let mut ids = BTreeSet::new();
    let run = root.path().join(run_id);
    for dir in [
        run.join(RunKind::PredPre.patch_id(model_dir)),
        root.model_reports_dir(run_id, model_dir),
    ] {
        if let Some(names) = tree
            .subdirs(&dir)
            .map_err(|e| CliError::input(anyhow!("reading {}: {e}", dir.display())))?
        {
            ids.extend(names);
        }
    }
    Ok(ids)
}
