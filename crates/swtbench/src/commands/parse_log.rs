//! `swtbench parse-log`: one test log through the original's parser for a repository
//! ([`swtbench_app::grade::parse_log`]), `{"applied": …, "tests": {…}}` on stdout.

use swtbench_app::grade::{log_parser, parse_log, read_log};
use swtbench_cli::commands::parse_log::ParseLogArgs;

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

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
