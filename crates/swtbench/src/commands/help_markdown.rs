//! `swtbench help-markdown` (hidden): every command's long `--help` as Markdown, docs/commands.md
//! (`swtbench_cli::commands::help_markdown::reference`; checked by the `cli_docs` test).

use swtbench_cli::commands::help_markdown::{reference, HelpMarkdownArgs};

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

/// Prints the reference of `cli`, the whole command line's definition.
pub fn run(_args: HelpMarkdownArgs, cli: clap::Command, printer: &Printer) -> CliResult {
    printer.data(&reference(cli));
    Ok(ExitCode::Success)
}
