//! `swtbench extract`: turn raw model outputs into git diffs without running anything, for
//! debugging `--patch-types`. Base files come from `--repo-mirror`; results are written as
//! `<output-dir>/<instance>/{raw_model_patch.txt,extracted_patch.diff,extraction.json}` (the
//! layout of a run's log directory, with the same cache: an unchanged answer is not extracted
//! again). stdout gets one tab-separated line per instance: id, the patch type used (or
//! `failed`), and the reasons of the failed attempts.
//!
//! The custom type needs `--python`: that interpreter *parses* (never runs) the model's code on
//! the host, so this is for outputs one trusts; `swtbench run` does it inside the containers.
//!
//! Exit codes: 0 every instance produced a patch; 1 some did not; 2 unusable input.

use std::path::PathBuf;

use serde_json::json;
use swtbench_data::predictions::{load_predictions, PredictionsSource};
use swtbench_extract::cache::load_or_extract;
use swtbench_extract::{extract, GitMirrorSource, HostPython, PatchType, PythonRunner};

use crate::args::{predictions_error, DatasetArgs, ExtractStyleArgs};
use crate::env_vars;
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct ExtractArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Predictions: a .json or .jsonl file of {instance_id, model_name_or_path, model_patch}.
    #[arg(long, alias = "predictions_path", value_name = "FILE")]
    pub predictions: String,

    /// Patch types to try, in order, until one produces a change.
    #[arg(long, alias = "patch_types", value_name = "TYPE", num_args = 1.., required = true)]
    pub patch_types: Vec<PatchType>,

    /// Directory of bare git mirrors `<owner>__<name>.git` holding the base commits.
    #[arg(long, alias = "repo_mirror", value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: PathBuf,

    /// Where to write `<instance>/extracted_patch.diff` and its companions.
    #[arg(long, value_name = "DIR")]
    pub output_dir: PathBuf,

    #[command(flatten)]
    pub styles: ExtractStyleArgs,

    /// Python interpreter for the custom type (parses the model's code on this host).
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<PathBuf>,

    /// One JSON object per instance instead of tab-separated lines.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ExtractArgs, printer: &Printer) -> CliResult {
    if !args.repo_mirror.is_dir() {
        return Err(CliError::input(anyhow::anyhow!(
            "--repo-mirror {}: not a directory",
            args.repo_mirror.display()
        ))
        .with_hint("create mirrors with `git clone --mirror https://github.com/<owner>/<name> DIR/<owner>__<name>.git`"));
    }
    let dataset = args.dataset.load(printer)?;
    let predictions = load_predictions(&PredictionsSource::parse(&args.predictions), &dataset)
        .map_err(predictions_error)?;
    for w in &predictions.warnings {
        printer.warn(w);
    }
    let options = args.styles.options();
    let python = args.python.as_ref().map(HostPython::new);
    if args.patch_types.contains(&PatchType::Custom) && python.is_none() {
        printer.warn("the custom type needs --python here; it will fail for every instance");
    }

    let (mut ok, mut failed) = (0usize, 0usize);
    for instance in &dataset.instances {
        let Some(prediction) = predictions.predictions.get(&instance.instance_id) else {
            continue;
        };
        let id = instance.instance_id.to_string();
        let raw = prediction.model_patch.clone().unwrap_or_default();
        let log_dir = args.output_dir.join(&id);
        let looked_for = args
            .repo_mirror
            .join(swtbench_data::git_mirror::mirror_dir_name(&instance.repo));
        // Why this instance has no source of files, and what to do about it.
        let unusable =
            match GitMirrorSource::locate(&args.repo_mirror, &instance.repo, &instance.base_commit)
            {
                Ok(Some(s)) => Ok(s),
                Ok(None) => Err((
                    format!(
                        "no mirror of {}: {} does not exist",
                        instance.repo,
                        looked_for.display()
                    ),
                    format!(
                        "create it with `git clone --mirror https://github.com/{} {}`",
                        instance.repo,
                        looked_for.display()
                    ),
                )),
                Err(e) => Err((
                    format!("the mirror of {} is unusable: {e}", instance.repo),
                    format!(
                        "check {} (a bare clone made with `git clone --mirror`) and that it holds \
                     commit {}",
                        looked_for.display(),
                        instance.base_commit
                    ),
                )),
            };
        let source = match unusable {
            Ok(s) => s,
            Err((reason, fix)) => {
                failed += 1;
                printer.warn(&format!("{id}: {reason}; {fix}"));
                if args.json {
                    printer.data(
                        &json!({
                            "instance_id": id,
                            "patch_type_used": null,
                            "reused": false,
                            "attempts": [],
                            "error": reason,
                        })
                        .to_string(),
                    );
                } else {
                    printer.data(&format!("{id}\tfailed\t{reason}"));
                }
                continue;
            }
        };
        let runner = python.as_ref().map(|p| p as &dyn PythonRunner);
        let result = load_or_extract(&log_dir, &raw, &args.patch_types, &options, || {
            extract(&raw, &args.patch_types, &source, runner, &options)
        })
        .map_err(CliError::environment)?;
        let ex = &result.extraction;
        if ex.succeeded() {
            ok += 1;
        } else {
            failed += 1;
        }
        let used = ex.patch_type_used.map_or("failed", PatchType::as_str);
        if args.json {
            printer.data(
                &json!({
                    "instance_id": id,
                    "patch_type_used": ex.patch_type_used,
                    "reused": result.reused,
                    "attempts": ex.attempts,
                    "patch": log_dir.join(swtbench_extract::cache::PATCH_FILE),
                })
                .to_string(),
            );
        } else {
            let reasons = ex.failure_summary().replace('\n', "; ");
            printer.data(&format!("{id}\t{used}\t{reasons}"));
        }
    }
    printer.info(&format!(
        "{ok} extracted, {failed} failed; written under {}",
        args.output_dir.display()
    ));
    Ok(if failed == 0 {
        ExitCode::Success
    } else {
        ExitCode::Partial
    })
}
