//! `swtbench datasets`: the dataset aliases, their SWT filter lists and the embedded copies
//! (`swtbench_app::dataset::catalog`).

use swtbench_app::dataset::catalog::{catalog_json, catalog_text};

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct DatasetsArgs {
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: DatasetsArgs, printer: &Printer) -> CliResult {
    if args.json {
        printer.data(&serde_json::to_string_pretty(&catalog_json()).unwrap_or_default());
    } else {
        printer.data(&catalog_text());
    }
    Ok(ExitCode::Success)
}
