//! `swtbench parse-log`: one test log through the original's parser for a repository
//! ([`swtbench_app::grade::parse_log`]), `{"applied": …, "tests": {…}}` on stdout.

use std::path::PathBuf;

use swtbench_app::grade::{log_parser, parse_log, read_log};
use swtbench_grade::logs::ExecMode;
use swtbench_grade::Parser;

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct ParseLogArgs {
    /// Repository of the instance (`owner/name`), which selects the parser (not needed with
    /// --parser or --exec-mode reproduction_script).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,

    /// How the tests were run: unit_test (the repository's parser) or reproduction_script (the
    /// echoed exit code of the script).
    #[arg(
        long,
        alias = "exec_mode",
        value_name = "MODE",
        default_value = "unit_test"
    )]
    pub exec_mode: ExecMode,

    /// Use this parser instead of the repository's (pytest, pytest_options, pytest_v2, django,
    /// seaborn, matplotlib, sympy, reproduction_script).
    #[arg(long, value_name = "PARSER")]
    pub parser: Option<Parser>,

    /// The log (a run's `test_output.txt`); `-` reads stdin.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

pub fn run(args: ParseLogArgs, printer: &Printer) -> CliResult {
    let parser = log_parser(args.parser, args.repo.as_deref(), args.exec_mode)?;
    let bytes = read_log(&args.file)?;
    let parsed = parse_log(&bytes, parser);
    for note in &parsed.notes {
        printer.warn(&format!("{}: {note}", args.file.display()));
    }
    printer.data(&parsed.json);
    Ok(ExitCode::Success)
}
