//! `swtbench validate`: load and check a dataset and predictions, print a summary
//! ([`swtbench_app::validate`]; the checks and exit codes are in docs/usage.md).

use std::path::PathBuf;

use swtbench_app::validate::{check_dataset, Validation};

use crate::args::DatasetArgs;
use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;
use swtbench_app::tables::load_spec_table;

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Predictions: `gold` (the gold tests as model `gold`), a .json or a .jsonl file. Without
    /// it only the dataset is checked.
    #[arg(long, alias = "predictions_path", value_name = "gold|FILE")]
    pub predictions: Option<String>,

    /// Extra spec table entries (TOML or JSON, same format as the embedded table); instance
    /// versions are checked against the embedded table plus these.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,

    /// The run id the predictions will be evaluated under: checked as `swtbench run` checks it,
    /// together with the model name (the run report `<model>.<run id>.html` must fit in a file
    /// name). Without it the model name is checked on its own.
    #[arg(long, alias = "run_id", value_name = "ID")]
    pub run_id: Option<String>,

    /// Treat warnings (unknown or duplicate prediction ids, empty patches, instances without a
    /// prediction) as problems: exit 1 when there are any.
    #[arg(long)]
    pub strict: bool,

    /// Print the summary as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ValidateArgs, printer: &Printer) -> CliResult {
    let table = load_spec_table(args.spec_table.as_deref())?;
    let mut dataset = args.dataset.load(printer)?;
    check_dataset(&mut dataset, &table);

    let predictions = match &args.predictions {
        None => None,
        Some(p) => Some(swtbench_app::inputs::load_predictions_for(p, &dataset)?),
    };
    if let Some(run_id) = &args.run_id {
        swtbench_app::validate::check_run(run_id, predictions.as_ref())?;
    }
    let validation = Validation {
        dataset,
        predictions,
    };

    printer.lines(&validation.warnings());
    printer.data(&validation.summary(args.json));

    Ok(ExitCode::partial_if(!validation.passed(args.strict)))
}
