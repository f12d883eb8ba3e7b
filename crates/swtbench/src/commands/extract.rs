//! `swtbench extract`: raw model outputs into git diffs (`--patch-types`) without running anything
//! ([`swtbench_app::extract`]; the output and exit codes are in docs/usage.md).

use std::path::PathBuf;

use swtbench_app::extract::{extract_predictions, ExtractSettings};
use swtbench_extract::PatchType;

use crate::args::{load_predictions, DatasetArgs, ExtractStyleArgs};
use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct ExtractArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Predictions: a .json or .jsonl file of {instance_id, model_name_or_path, model_patch}.
    #[arg(long, alias = "predictions_path", value_name = "FILE")]
    pub predictions: String,

    /// Patch types to try, in order, until one produces a change. `vanilla` alone extracts
    /// nothing: the prediction minus binary diffs, exactly what `swtbench run` applies.
    #[arg(long, alias = "patch_types", value_name = "TYPE", num_args = 1.., required = true)]
    pub patch_types: Vec<PatchType>,

    #[command(flatten)]
    pub mirror: crate::args::RepoMirrorArgs,

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
    let settings = ExtractSettings {
        repo_mirror: args.mirror.repo_mirror.clone(),
        output_dir: args.output_dir.clone(),
        patch_types: args.patch_types.clone(),
        options: args.styles.options(),
        python: args.python.clone(),
    };
    settings.check_repo_mirror()?;
    let dataset = args.dataset.load(printer)?;
    let predictions = load_predictions(&args.predictions, &dataset, printer)?;
    printer.lines(&Vec::from_iter(settings.python_warning()));

    let summary = extract_predictions(
        &settings,
        &dataset.instances,
        &predictions,
        &mut |id, outcome| printer.lines(&outcome.lines(id, args.json)),
    )?;
    printer.info(&summary.line(&args.output_dir));
    Ok(ExitCode::partial_if(summary.failed > 0))
}
