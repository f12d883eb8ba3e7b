//! `swtbench parse-log`: parse one test log with the original's parser for a repository and print
//! `{"applied": …, "tests": {…}}` (keys sorted) on stdout.

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::{json, Map, Value};
use swtbench_grade::logs::{self, ExecMode, LogNote};
use swtbench_grade::{py, Parser};

use crate::error::{CliError, CliResult, ExitCode};
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
    let parser = match (args.parser, args.repo.as_deref()) {
        (Some(p), _) => p,
        (None, Some(repo)) => logs::parser_for(repo, args.exec_mode).ok_or_else(|| {
            let known: Vec<&str> = swtbench_grade::parsers::REPO_PARSERS
                .iter()
                .map(|(r, _)| *r)
                .collect();
            CliError::input(anyhow::anyhow!("no log parser for repository `{repo}`")).with_hint(
                format!(
                    "known repositories: {}; or choose one with --parser",
                    known.join(", ")
                ),
            )
        })?,
        (None, None) if args.exec_mode == ExecMode::ReproductionScript => {
            Parser::ReproductionScript
        }
        (None, None) => {
            return Err(CliError::input(anyhow::anyhow!(
                "give --repo (its parser reads the log) or --parser"
            )));
        }
    };
    let bytes = if args.file.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .context("reading the log from stdin")?;
        buf
    } else {
        std::fs::read(&args.file).map_err(|e| {
            CliError::input(anyhow::anyhow!("reading {}: {e}", args.file.display()))
                .with_hint("FILE is a run's test_output.txt (or - to read the log from stdin)")
        })?
    };
    let parsed = logs::parse_log(Some(&bytes), parser);
    for note in &parsed.notes {
        printer.warn(&format!("{}: {}", args.file.display(), describe(*note)));
    }
    let tests: Map<String, Value> = parsed
        .tests
        .iter()
        .map(|(k, v)| (k.clone(), json!(v.as_str())))
        .collect();
    let out = json!({"applied": parsed.applied, "tests": tests});
    printer.data(&py::dumps_compact(&out));
    Ok(ExitCode::Success)
}

fn describe(note: LogNote) -> &'static str {
    match note {
        LogNote::InvalidUtf8 => {
            "invalid UTF-8 replaced with U+FFFD (the original would fail the run)"
        }
        LogNote::TraceSplitFailed => {
            "the coverage trace marker appears without its echoed command line; no tests read \
             (the original raises IndexError here)"
        }
        LogNote::FailureMarker => {
            "a failure marker (>>>>> …) voids this run: no tests, not applied"
        }
    }
}
