//! `swtbench validate`: load and check a dataset and predictions, print a summary
//! ([`swtbench_app::validate`]; the checks and exit codes are in docs/usage.md).

use swtbench_app::tables::load_spec_table;
use swtbench_app::validate::{check_dataset, Validation};
use swtbench_cli::commands::validate::ValidateArgs;

use crate::error::{CliResult, ExitCode};
use crate::inputs::load;
use crate::printer::Printer;

pub fn run(args: ValidateArgs, printer: &Printer) -> CliResult {
    let table = load_spec_table(args.spec_table.as_deref())?;
    let mut dataset = load(&args.dataset, printer)?;
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
