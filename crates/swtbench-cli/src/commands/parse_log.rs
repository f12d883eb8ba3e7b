//! `swtbench parse-log`'s flags.

use std::path::PathBuf;

use swtbench_grade::logs::ExecMode;
use swtbench_grade::Parser;

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
    /// seaborn, matplotlib, sympy, reproduction_script; sympy_1_2 is sympy's as the original's
    /// release 1.2.0 read it, see --grading-version of grade).
    #[arg(long, value_name = "PARSER")]
    pub parser: Option<Parser>,

    /// The log (a run's `test_output.txt`); `-` reads stdin.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}
