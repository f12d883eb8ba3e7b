//! `swtbench verify RUN_DIR`: checks a finished run without containers and without writing
//! anything, through [`swtbench_app::grade::verify`]: every output against its key file, every
//! `report.json` against the grade of its outputs now, and the integrity of the logs
//! (docs/integrity.md). Exit code 0 when everything agrees and nothing is suspicious, else 1.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use swtbench_app::grade::{verify, GradeSettings};
use swtbench_grade::logs::ExecMode;
use swtbench_grade::{CoverageFormula, GradeOptions};

use crate::args::{load_predictions, DatasetArgs};
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;
use crate::settings::load_spec_table;

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The run's directory: `<logs root>/<run id>` (e.g. `run_instance_swt_logs/my-run`).
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,

    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// The model (`model_name_or_path`). Defaults to the model of --predictions, else to the only
    /// `pred_pre__<model>` directory in RUN_DIR.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,

    /// The predictions of the run (`gold` works): their instances are the ones checked.
    #[arg(long, alias = "predictions_path", value_name = "FILE|gold")]
    pub predictions: Option<String>,

    /// How the tests were run: unit_test or reproduction_script.
    #[arg(
        long,
        alias = "exec_mode",
        value_name = "MODE",
        default_value = "unit_test"
    )]
    pub exec_mode: ExecMode,

    /// The coverage formula the reports were made with (`original` or `corrected`).
    #[arg(long, value_name = "FORMULA", default_value = "original")]
    pub coverage_formula: CoverageFormula,

    /// The spec table the run had.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,

    /// The reports were made with --strict-results.
    #[arg(long)]
    pub strict_results: bool,

    /// Also run K of the graded instances again (`swtbench run` in fresh containers into a
    /// throwaway output directory) and compare their report.json with the submitted ones. Needs
    /// the container engine and what `run` needs (give its flags with --run-arg).
    #[arg(long, value_name = "K")]
    pub reexecute: Option<usize>,

    /// With --reexecute: one more argument for the `swtbench run` that re-executes (repeat it),
    /// e.g. `--run-arg=--repo-mirror=/data/mirrors --run-arg=--timeout=600`.
    #[arg(long = "run-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub run_args: Vec<String>,
}

/// The only `pred_pre__<model>` directory of a run.
fn only_model(run_dir: &Path) -> Result<String, CliError> {
    let mut models: Vec<String> = std::fs::read_dir(run_dir)
        .map_err(|e| CliError::input(anyhow!("cannot read {}: {e}", run_dir.display())))?
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
        [] => Err(CliError::input(anyhow!(
            "{} has no pred_pre__<model> directory: not a run directory",
            run_dir.display()
        ))
        .with_hint("RUN_DIR is <logs root>/<run id>, e.g. run_instance_swt_logs/my-run")),
        many => Err(CliError::input(anyhow!(
            "{} holds runs of several models ({})",
            run_dir.display(),
            many.join(", ")
        ))
        .with_hint("choose one with --model or --predictions")),
    }
}

pub fn run(args: VerifyArgs, printer: &Printer) -> CliResult {
    let run_dir = args.run_dir.components().collect::<PathBuf>();
    let run_id = run_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| CliError::input(anyhow!("{}: not a run directory", run_dir.display())))?
        .to_string();
    let logs_root = match run_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let table = load_spec_table(args.spec_table.as_deref())?;
    let dataset = args.dataset.load_valid(printer)?;
    let predictions = match &args.predictions {
        Some(p) => Some(load_predictions(p, &dataset, printer)?),
        None => None,
    };
    let model = match (&args.model, &predictions) {
        (Some(m), _) => Some(m.clone()),
        (None, Some(_)) => None,
        (None, None) => Some(only_model(&run_dir)?),
    };
    let settings = GradeSettings {
        dataset: &dataset,
        predictions: predictions.as_ref(),
        model: model.as_deref(),
        run_id: &run_id,
        logs_root: &logs_root,
        output_dir: &logs_root,
        rewrite: true,
        options: GradeOptions {
            exec_mode: args.exec_mode,
            coverage_formula: args.coverage_formula,
            strict_results: args.strict_results,
        },
        table: &table,
        spec_table: args.spec_table.as_deref(),
        flaky: None,
    };
    let mut notices = Vec::new();
    let verified = verify(&settings, &mut notices);
    printer.notices(&notices);
    let v = verified?;
    for (id, why) in &v.failures {
        printer.data(&format!("mismatch {id}: {why}"));
    }
    for (id, reasons) in &v.suspicious {
        for r in reasons {
            printer.data(&format!("suspicious {id}: {r}"));
        }
    }
    for (id, runs) in &v.without_evidence {
        printer.data(&format!("no evidence {id}: {}", runs.join(", ")));
    }
    let unevidenced: usize = v.without_evidence.values().map(Vec::len).sum();
    printer.info(&format!(
        "{} instance(s) checked: {} agree with their outputs, {} do not, {} have nothing to grade; \
         {} suspicious; {} of {} run(s) have the test runner's evidence beside the log",
        v.checked,
        v.agreeing,
        v.failures.len(),
        v.ungraded.len(),
        v.suspicious.len(),
        v.runs_checked - unevidenced,
        v.runs_checked
    ));
    let mut clean = v.is_clean();
    if let Some(k) = args.reexecute {
        let model = match (&model, &predictions) {
            (Some(m), _) => m.clone(),
            (None, Some(p)) => p.model.clone(),
            (None, None) => only_model(&run_dir)?,
        };
        let re = Reexecute {
            args: &args,
            run_dir: &run_dir,
            run_id: &run_id,
            model: &model,
            dataset_ids: dataset
                .instances
                .iter()
                .map(|i| i.instance_id.to_string())
                .collect(),
        };
        clean &= re.run(k, printer)?;
    }
    Ok(if clean {
        ExitCode::Success
    } else {
        ExitCode::Partial
    })
}

/// `--reexecute K`: a fresh `swtbench run` of a sample of the run's graded instances, compared
/// with what was submitted.
struct Reexecute<'a> {
    args: &'a VerifyArgs,
    run_dir: &'a Path,
    run_id: &'a str,
    model: &'a str,
    dataset_ids: Vec<String>,
}

impl Reexecute<'_> {
    /// The model's `pred_pre__<model>` directory of the submitted run.
    fn pred_pre_dir(&self) -> PathBuf {
        self.run_dir.join(format!(
            "pred_pre__{}",
            swtbench_core::prediction::model_dir_name(self.model)
        ))
    }

    /// The graded instances (a report.json in the model's directory), in a fixed order that
    /// does not favour the dataset's first ones: by SHA-256 of run id and instance id.
    fn sample(&self, k: usize) -> Vec<String> {
        let dir = self
            .run_dir
            .join(swtbench_core::prediction::model_dir_name(self.model));
        let mut ids: Vec<(String, String)> = self
            .dataset_ids
            .iter()
            .filter(|id| dir.join(id.as_str()).join("report.json").is_file())
            .map(|id| {
                let h = swtbench_core::hash::sha256_hex(format!("{}\n{id}", self.run_id));
                (h, id.clone())
            })
            .collect();
        ids.sort();
        ids.into_iter().take(k).map(|(_, id)| id).collect()
    }

    /// The model patch each instance executed (`model_patch.diff` of its pred_pre run), as a
    /// predictions file.
    fn predictions(&self, ids: &[String], file: &Path) -> Result<(), CliError> {
        let pred_dir = self.pred_pre_dir();
        let mut text = String::new();
        for id in ids {
            let p = pred_dir
                .join(id)
                .join(swtbench_core::layout::MODEL_PATCH_FILE);
            let patch = std::fs::read_to_string(&p).map_err(|e| {
                CliError::input(anyhow!("{}: {e}", p.display())).with_hint(
                    "--reexecute runs the patch each instance executed; the run tree must hold it",
                )
            })?;
            let row = serde_json::json!({
                "instance_id": id,
                "model_name_or_path": self.model,
                "model_patch": patch,
            });
            text.push_str(&row.to_string());
            text.push('\n');
        }
        std::fs::write(file, text)
            .map_err(|e| CliError::input(anyhow!("writing {}: {e}", file.display())))
    }

    /// Whether the submitted runs were traced (their eval script runs the tracer).
    fn coverage(&self, id: &str) -> bool {
        let eval = self
            .pred_pre_dir()
            .join(id)
            .join(swtbench_core::layout::EVAL_SCRIPT_FILE);
        std::fs::read_to_string(eval).is_ok_and(|t| t.contains("/root/trace.py"))
    }

    fn run(&self, k: usize, printer: &Printer) -> Result<bool, CliError> {
        let ids = self.sample(k);
        if ids.is_empty() {
            printer.warn("--reexecute: no graded instance to run again");
            return Ok(true);
        }
        let tmp = tempfile::Builder::new()
            .prefix("swtbench-reexecute-")
            .tempdir()
            .map_err(|e| CliError::input(anyhow!("a temporary directory: {e}")))?;
        let preds = tmp.path().join("predictions.jsonl");
        self.predictions(&ids, &preds)?;
        let out = tmp.path().join("out");
        let fresh_id = format!("{}-reexecute", self.run_id);
        let d = &self.args.dataset;
        let mut cmd = std::process::Command::new(
            std::env::current_exe().map_err(|e| CliError::input(anyhow!("{e}")))?,
        );
        cmd.arg("run")
            .args(["--dataset", &d.dataset, "--split", &d.split])
            .arg("--predictions")
            .arg(&preds)
            .arg("--run-id")
            .arg(&fresh_id)
            .arg("--output-dir")
            .arg(&out)
            .args(["--exec-mode", self.args.exec_mode.as_str()])
            .arg("--instance-ids")
            .args(&ids);
        if d.filter_swt {
            cmd.arg("--filter-swt");
        }
        if let Some(list) = d.swt_filter_list {
            cmd.args(["--swt-filter-list", list.name()]);
        }
        if d.is_swt {
            cmd.arg("--is-swt");
        }
        if d.is_offline() {
            cmd.arg("--offline");
        }
        if let Some(t) = &self.args.spec_table {
            cmd.arg("--spec-table").arg(t);
        }
        if !self.coverage(&ids[0]) {
            cmd.arg("--no-coverage");
        }
        if self.args.strict_results {
            cmd.arg("--strict-results");
        }
        cmd.args(&self.args.run_args);
        printer.info(&format!(
            "re-executing {} instance(s) in {}: {}",
            ids.len(),
            out.display(),
            ids.join(", ")
        ));
        let status = cmd
            .status()
            .map_err(|e| CliError::input(anyhow!("starting swtbench run: {e}")))?;
        let fresh_dir = out
            .join("run_instance_swt_logs")
            .join(&fresh_id)
            .join(swtbench_core::prediction::model_dir_name(self.model));
        let submitted_dir = self
            .run_dir
            .join(swtbench_core::prediction::model_dir_name(self.model));
        let mut same = 0;
        let mut differ = Vec::new();
        for id in &ids {
            let read = |dir: &Path| -> Option<serde_json::Value> {
                let text = std::fs::read_to_string(dir.join(id).join("report.json")).ok()?;
                serde_json::from_str(&text).ok()
            };
            match (read(&submitted_dir), read(&fresh_dir)) {
                (Some(a), Some(b)) if a == b => {
                    same += 1;
                    printer.data(&format!("reexecuted {id}: the same report"));
                }
                (Some(a), Some(b)) => {
                    let what = report_differences(&a[id.as_str()], &b[id.as_str()]);
                    printer.data(&format!("reexecuted {id}: differs: {what}"));
                    differ.push(id.clone());
                }
                (_, None) => {
                    printer.data(&format!(
                        "reexecuted {id}: no report from the fresh run (see its output above)"
                    ));
                    differ.push(id.clone());
                }
                (None, Some(_)) => differ.push(id.clone()),
            }
        }
        printer.info(&format!(
            "{} instance(s) re-executed: {same} with the submitted report, {} without{}",
            ids.len(),
            differ.len(),
            if status.success() {
                ""
            } else {
                " (the fresh run did not end cleanly)"
            }
        ));
        if !differ.is_empty() {
            // The fresh tree stays for a look.
            let kept = tmp.keep();
            printer.info(&format!("the fresh run is kept in {}", kept.display()));
        }
        Ok(differ.is_empty())
    }
}

/// What differs between two instance reports (`report.json`'s inner object), key by key.
fn report_differences(submitted: &serde_json::Value, fresh: &serde_json::Value) -> String {
    let (Some(a), Some(b)) = (submitted.as_object(), fresh.as_object()) else {
        return "not an instance report".into();
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| match (a.get(k), b.get(k)) {
            (Some(x), Some(y)) if x.is_boolean() || x.is_number() => {
                format!("{k} submitted {x}, now {y}")
            }
            _ => k.to_string(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}
