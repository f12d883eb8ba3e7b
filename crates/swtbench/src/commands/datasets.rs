//! `swtbench datasets`: list dataset aliases and embedded copies.

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct DatasetsArgs {}

pub fn run(_args: DatasetsArgs, _printer: &Printer) -> CliResult {
    Ok(ExitCode::Success)
}
