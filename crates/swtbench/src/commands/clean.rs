//! `swtbench clean [--run-id R]`: removes what swtbench processes that have ended left behind
//! (containers, unfinished output files) and, with a run id, that run's containers and temporary
//! images; the work is [`swtbench_app::clean`], this prints it.

use swtbench_app::clean::{clean, Cleaned, Item};
use swtbench_cli::commands::clean::CleanArgs;

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

pub fn run(args: CleanArgs, printer: &Printer) -> CliResult {
    let options = args.options();
    let mut show = |item: Item, name: &str, what: &Cleaned| printer.lines(&[what.line(item, name)]);
    let summary = clean(&options, &mut show)?;
    for text in summary.texts(&options) {
        printer.info(&text);
    }
    ExitCode::of_failures(&summary.failures)
}
