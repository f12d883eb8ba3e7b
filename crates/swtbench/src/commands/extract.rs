//! `swtbench extract`: raw model outputs into git diffs (`--patch-types`) without running anything
//! ([`swtbench_app::extract`]; the output and exit codes are in docs/usage.md).

use swtbench_app::extract::extract_predictions;
use swtbench_cli::commands::extract::ExtractArgs;

use crate::error::{CliResult, ExitCode};
use crate::inputs::{load, load_predictions};
use crate::printer::Printer;

pub fn run(args: ExtractArgs, printer: &Printer) -> CliResult {
    let settings = args.settings();
    settings.check_repo_mirror()?;
    let dataset = load(&args.dataset, printer)?;
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
