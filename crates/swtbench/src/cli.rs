//! The dispatch of the command line `swtbench_cli::Cli` to each command's `run`.

use clap::CommandFactory;
pub use swtbench_cli::{Cli, Command};

use crate::commands::*;
use crate::error::CliResult;
use crate::printer::Printer;

/// Runs the subcommand `cli` names.
pub fn dispatch(cli: Cli, printer: &Printer) -> CliResult {
    match cli.command {
        Command::Validate(args) => validate::run(args, printer),
        Command::Datasets(args) => datasets::run(args, printer),
        Command::ParseLog(args) => parse_log::run(args, printer),
        Command::Grade(args) => grade::run(*args, printer),
        Command::Verify(args) => verify::run(*args, printer),
        Command::Report(args) => report::run(args, printer),
        Command::Spec(args) => spec::run(args, printer),
        Command::Dataset(args) => dataset::run(args, printer),
        Command::Run(args) => run::run(*args, printer),
        Command::Serve(args) => serve::run(*args, printer),
        Command::Worker(args) => worker::run(*args, printer),
        Command::Images(args) => images::run(args, printer),
        Command::Envs(args) => envs::run(args, printer),
        Command::Clean(args) => clean::run(args, printer),
        Command::Slurm(args) => slurm::run(args, printer),
        Command::Extract(args) => extract::run(*args, printer),
        Command::K8s(args) => k8s::run(args, printer),
        Command::HelpMarkdown(args) => help_markdown::run(args, Cli::command(), printer),
    }
}
