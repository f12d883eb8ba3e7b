//! `swtbench validate`: load and check a dataset and predictions, print a summary.

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {}

pub fn run(_args: ValidateArgs, _printer: &Printer) -> CliResult {
    Ok(ExitCode::Success)
}
