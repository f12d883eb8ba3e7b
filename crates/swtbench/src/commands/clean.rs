//! `swtbench clean --run-id R`: removes what a run left behind (containers, temporary images);
//! the work is [`swtbench_app::clean`], this prints it.

use swtbench_app::clean::{clean, Cleaned, Item};
use swtbench_cli::commands::clean::CleanArgs;

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

pub fn run(args: CleanArgs, printer: &Printer) -> CliResult {
    let options = args.options();
    let mut show = |item: Item, name: &str, what: &Cleaned| printer.lines(&[what.line(item, name)]);
    let summary = clean(&options, &mut show)?;
    printer.info(&summary.text(&options));
    ExitCode::of_failures(&summary.failures)
}
