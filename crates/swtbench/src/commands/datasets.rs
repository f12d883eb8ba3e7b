//! `swtbench datasets`: the dataset aliases, their SWT filter lists and the embedded copies
//! (`swtbench_app::dataset::catalog`).

use swtbench_app::dataset::catalog::catalog;
use swtbench_cli::commands::datasets::DatasetsArgs;

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

pub fn run(args: DatasetsArgs, printer: &Printer) -> CliResult {
    printer.data(&catalog(args.json));
    Ok(ExitCode::Success)
}
