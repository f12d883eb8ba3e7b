//! `swtbench grade`'s flags.

use std::path::PathBuf;

use swtbench_core::layout::{EVALUATION_RESULTS_DIR, LOGS_ROOT_DIR};
use swtbench_grade::logs::ExecMode;
use swtbench_grade::{CoverageFormula, GradeOptions, GradingVersion};

use crate::args::DatasetArgs;

#[derive(Debug, clap::Args)]
pub struct GradeArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// The run to grade.
    #[arg(long, alias = "run_id", value_name = "RUN_ID")]
    pub run_id: String,

    /// The model (`model_name_or_path`; `/` is turned into `__` as in the directory names).
    /// Defaults to the model of --predictions.
    #[arg(long, value_name = "MODEL", required_unless_present = "predictions")]
    pub model: Option<String>,

    /// The predictions of the run: its instances are the ones graded. An empty prediction (null,
    /// blank or only binary diffs) is graded as not applied, as `swtbench run` does without
    /// running it; any other instance without outputs is an error. Without it, every dataset
    /// instance with a directory in the run is graded, and an instance without runs keeps the
    /// not-applied report.json `run` wrote for its empty patch.
    #[arg(long, alias = "predictions_path", value_name = "FILE|gold")]
    pub predictions: Option<String>,

    /// The logs root (the original's `run_instance_swt_logs`).
    #[arg(long, value_name = "DIR", default_value = LOGS_ROOT_DIR)]
    pub logs_root: PathBuf,

    /// Where the run report goes (the original's `evaluation_results`).
    #[arg(long, value_name = "DIR", default_value = EVALUATION_RESULTS_DIR)]
    pub output_dir: PathBuf,

    /// Grade again instances that already have a report.json, and overwrite it.
    #[arg(long)]
    pub rewrite: bool,

    /// How the tests were run: unit_test or reproduction_script.
    #[arg(
        long,
        alias = "exec_mode",
        value_name = "MODE",
        default_value = "unit_test"
    )]
    pub exec_mode: ExecMode,

    /// `original` (default, the original's numbers) or `corrected` (removed lines compared with
    /// base_pre, where their line numbers belong; see docs/deviations.md).
    #[arg(long, value_name = "FORMULA", default_value = "original")]
    pub coverage_formula: CoverageFormula,

    /// Extra spec table entries (TOML, or JSON for *.json), applied over the embedded table, as
    /// given to `swtbench run`: their `log_parser` reads the logs of repositories the original
    /// has no parser for, and their `non_test_extensions` name the shared gold/base directories.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,

    /// Grade strictly where the logs look forged (docs/integrity.md): a test an integrity check
    /// names (a result printed after the runner's summary, for a test the run did not select, …)
    /// counts as failed, and a suspicious instance as unresolved. Every instance is graded again
    /// from its outputs. report.json and the run report then differ from the original's; without
    /// it the grade is the original's and the checks only report.
    #[arg(long)]
    pub strict_results: bool,

    /// Leave the tests of this flaky list (`{"<instance>": ["<test>", …]}`, as `run --repeat`
    /// writes it in `<model>.<run id>.flaky.json`) out of the transitions; every instance is
    /// graded again. report.json then differs from the original's.
    #[arg(long, value_name = "FILE")]
    pub flaky_list: Option<PathBuf>,

    /// Grade as this release of the original harness does: `1.3` (the default: its current
    /// grading) or `1.2` (release 1.2.0, which graded the results published before September
    /// 2025). 1.2 differs in two places: sympy's result lines need no whitespace after the status
    /// word, so on sympy 1.0/1.1 a failure header of 80 characters or more followed by the
    /// traceback's `  File` line is read as a failed test of its own; and a test that goes from
    /// failed to absent or neither passed nor failed (F→X, X→X) counts as FAIL_TO_FAIL instead of
    /// UNMATCHED, which can leave the instance unresolved. See docs/deviations.md.
    /// With 1.2 every instance is graded again from its outputs and its report.json overwritten
    /// (a later `grade` with 1.3 then needs --rewrite); the run report says so.
    #[arg(long, value_name = "VERSION", default_value = "1.3")]
    pub grading_version: GradingVersion,
}

impl GradeArgs {
    /// How the logs are graded.
    pub fn options(&self) -> GradeOptions {
        GradeOptions {
            exec_mode: self.exec_mode,
            coverage_formula: self.coverage_formula,
            strict_results: self.strict_results,
            grading_version: self.grading_version,
        }
    }
}
