//! `swtbench verify`'s flags, and the `run` arguments of `--reexecute`'s fresh run.

use std::path::PathBuf;

use swtbench_app::reexecute::Reexecution;
use swtbench_grade::logs::ExecMode;
use swtbench_grade::{CoverageFormula, GradeOptions, GradingVersion};

use crate::args::DatasetArgs;

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The run's directory: `<logs root>/<run id>` (e.g. `run_instance_swt_logs/my-run`).
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,

    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// The model (`model_name_or_path`). Defaults to the model of --predictions, else to the only
    /// `pred_pre__<model>` directory in RUN_DIR.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,

    /// The predictions of the run (`gold` works): their instances are the ones checked.
    #[arg(long, alias = "predictions_path", value_name = "FILE|gold")]
    pub predictions: Option<String>,

    /// How the tests were run: unit_test or reproduction_script.
    #[arg(
        long,
        alias = "exec_mode",
        value_name = "MODE",
        default_value = "unit_test"
    )]
    pub exec_mode: ExecMode,

    /// The coverage formula the reports were made with (`original` or `corrected`).
    #[arg(long, value_name = "FORMULA", default_value = "original")]
    pub coverage_formula: CoverageFormula,

    /// The spec table the run had.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,

    /// The reports were made with --strict-results.
    #[arg(long)]
    pub strict_results: bool,

    /// The release of the original harness whose grading the reports were made with (`1.3` or
    /// `1.2`, as `--grading-version` of `run` and `grade`).
    #[arg(long, value_name = "VERSION", default_value = "1.3")]
    pub grading_version: GradingVersion,

    /// Also run K of the graded instances again (`swtbench run` in fresh containers into a
    /// throwaway output directory) and compare their report.json with the submitted ones. Needs
    /// the container engine and what `run` needs (give its flags with --run-arg).
    #[arg(long, value_name = "K")]
    pub reexecute: Option<usize>,

    /// With --reexecute: one more argument for the `swtbench run` that re-executes (repeat it),
    /// e.g. `--run-arg=--repo-mirror=/data/mirrors --run-arg=--timeout=600`.
    #[arg(long = "run-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub run_args: Vec<String>,
}

impl VerifyArgs {
    /// How the reports were graded.
    pub fn options(&self) -> GradeOptions {
        GradeOptions {
            exec_mode: self.exec_mode,
            coverage_formula: self.coverage_formula,
            strict_results: self.strict_results,
            grading_version: self.grading_version,
        }
    }

    /// The arguments of `--reexecute`'s fresh run: `run`'s defaults with the `--run-arg`s (the
    /// user's own flags, parsed as `run` parses them), then what `verify` decides, set field by
    /// field: the sample's predictions, run id and output directory, the dataset selection, the
    /// spec table, how the tests ran. Returns the parsed global flags too (`-q`).
    pub fn fresh_run_args(
        &self,
        re: &Reexecution,
    ) -> Result<(crate::args::GlobalArgs, crate::args::RunArgs), clap::Error> {
        use clap::Parser;
        let predictions = re.predictions.to_string_lossy().into_owned();
        let required = [
            "swtbench",
            "run",
            "--predictions",
            &predictions,
            "--run-id",
            &re.run_id,
        ];
        let argv = required
            .into_iter()
            .map(str::to_string)
            .chain(self.run_args.iter().cloned());
        let FreshRun { global, command } = FreshRun::try_parse_from(argv)?;
        let FreshRunCommand::Run(mut run) = command;
        run.predictions = predictions;
        run.run_id = re.run_id.clone();
        run.output_dir = re.output_dir.clone();
        run.dataset = DatasetArgs {
            instance_ids: re.ids.clone(),
            ..self.dataset.clone()
        };
        run.eval.exec_mode = match self.exec_mode {
            ExecMode::UnitTest => crate::args::ExecModeArg::UnitTest,
            ExecMode::ReproductionScript => crate::args::ExecModeArg::ReproductionScript,
        };
        if !re.coverage {
            run.eval.compute_coverage = None;
            run.eval.no_coverage = true;
        }
        run.strict_results |= self.strict_results;
        if !self.grading_version.is_default() {
            run.grading_version = self.grading_version;
        }
        if self.spec_table.is_some() {
            run.table.spec_table = self.spec_table.clone();
        }
        Ok((global, *run))
    }
}

/// `swtbench run`'s command line, for the `--run-arg`s of `--reexecute`.
#[derive(Debug, clap::Parser)]
#[command(name = "swtbench")]
pub struct FreshRun {
    #[command(flatten)]
    pub global: crate::args::GlobalArgs,
    #[command(subcommand)]
    pub command: FreshRunCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum FreshRunCommand {
    Run(Box<crate::args::RunArgs>),
}
