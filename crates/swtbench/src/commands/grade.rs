//! `swtbench grade`: re-grade a run from its logs without containers
//! ([`swtbench_app::grade::regrade`]).

use swtbench_app::grade::{regrade, GradeSettings};
use swtbench_app::tables::load_spec_table;
use swtbench_cli::commands::grade::GradeArgs;

use crate::error::{CliResult, ExitCode};
use crate::inputs::{load_predictions, load_valid};
use crate::printer::Printer;

pub fn run(args: GradeArgs, printer: &Printer) -> CliResult {
    let table = load_spec_table(args.spec_table.as_deref())?;
    let dataset = load_valid(&args.dataset, printer)?;
    let predictions = args.predictions.as_deref();
    let predictions = predictions
        .map(|p| load_predictions(p, &dataset, printer))
        .transpose()?;
    let flaky = args.flaky_list.as_deref();
    let flaky = flaky
        .map(swtbench_app::settings::read_flaky_list)
        .transpose()?;
    let settings = GradeSettings {
        dataset: &dataset,
        predictions: predictions.as_ref(),
        model: args.model.as_deref(),
        run_id: &args.run_id,
        logs_root: &args.logs_root,
        output_dir: &args.output_dir,
        rewrite: args.rewrite || flaky.is_some(),
        options: args.options(),
        table: &table,
        spec_table: args.spec_table.as_deref(),
        flaky: flaky.as_ref(),
    };
    let mut notices = Vec::new();
    let graded = regrade(&settings, &mut notices);
    printer.lines(&notices);
    let graded = graded?;
    printer.lines(&graded.lines(args.strict_results, args.predictions.is_some()));
    Ok(ExitCode::partial_if(!graded.report.error_ids.is_empty()))
}
