//! `swtbench dataset retrieve|build|swt`: SWT-Bench's model inputs from a SWE-bench dataset and bare
//! mirrors (docs/usage.md); the work is [`swtbench_app::dataset`] and `swtbench-textgen`.

use std::path::Path;

use swtbench_app::dataset::{self as app, RowEvent, RowsWritten};
use swtbench_cli::commands::dataset::{
    BuildArgs, DatasetCmdArgs, DatasetCommand, RetrieveArgs, SwtArgs,
};

use crate::error::{CliResult, ExitCode};
use crate::inputs::load_valid;
use crate::printer::Printer;

pub fn run(args: DatasetCmdArgs, printer: &Printer) -> CliResult {
    match args.command {
        DatasetCommand::Retrieve(a) => retrieve(a, printer),
        DatasetCommand::Build(a) => build(a, printer),
        DatasetCommand::Swt(a) => swt(a, printer),
    }
}

fn retrieve(args: RetrieveArgs, printer: &Printer) -> CliResult {
    let settings = args.settings();
    settings.check()?;
    let loaded = load_valid(&args.data, printer)?;
    let written = app::retrieve(&settings, &loaded.instances, &mut |e| {
        print_event(printer, &args.out, None, e)
    })?;
    finish(printer, &args.out, written)
}

fn build(args: BuildArgs, printer: &Printer) -> CliResult {
    debug_assert_eq!(args.style, 3);
    let settings = args.settings();
    let inputs = app::prepare_build(&settings)?;
    let loaded = load_valid(&args.data, printer)?;
    let written = app::build(&settings, &inputs, &loaded.instances, &mut |e| {
        print_event(printer, &args.out, Some(&args.hits), e)
    })?;
    finish(printer, &args.out, written)
}

fn swt(args: SwtArgs, printer: &Printer) -> CliResult {
    let settings = args.settings();
    let input = app::prepare_swt(&settings)?;
    // The ids the SWT filter removes (with `auto`, the list is inferred from the input).
    let hub = swtbench_app::inputs::hub_from_env;
    let (dropped, notes) = app::swt_filter_ids(&args.input, args.filter_swt, &hub)?;
    notes
        .iter()
        .for_each(|n| printer.info(&format!("note: {n}")));
    let written = app::swt(&settings, &input, &dropped, &mut |e| {
        print_event(printer, &args.out, None, e)
    })?;
    finish(printer, &args.out, written)
}

/// Progress lines on stderr. `hits` is the retrieval file of `build`.
fn print_event(printer: &Printer, out: &Path, hits: Option<&Path>, event: RowEvent<'_>) {
    printer.lines(&Vec::from_iter(event.line(out, hits)));
}

fn finish(printer: &Printer, out: &Path, written: RowsWritten) -> CliResult {
    printer.lines(&[written.summary(out)]);
    Ok(ExitCode::partial_if(written.failures > 0))
}
