//! `swtbench datasets`: the dataset aliases, their SWT filter lists and the embedded copies
//! (`swtbench_app::dataset::catalog`).

use swtbench_app::dataset::catalog::catalog;

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct DatasetsArgs {
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: DatasetsArgs, printer: &Printer) -> CliResult {
    printer.data(&catalog(args.json));
    Ok(ExitCode::Success)
}
