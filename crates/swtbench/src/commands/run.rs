//! `swtbench run`: evaluate predictions end to end (`crate::evaluation`; exit codes in
//! docs/usage.md).

use swtbench_cli::args::RunArgs;

use crate::error::CliResult;
use crate::printer::Printer;

pub fn run(args: RunArgs, printer: &Printer) -> CliResult {
    crate::evaluation::run(&args, printer)
}
