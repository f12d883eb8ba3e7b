//! `swtbench verify RUN_DIR`: checks a finished run without containers or writing
//! ([`swtbench_app::grade::verify`]) and, with `--reexecute K`, evaluates a sample again.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::Parser;
use swtbench_app::grade::{only_model, verify, GradeSettings};
use swtbench_app::reexecute;
use swtbench_grade::logs::ExecMode;
use swtbench_grade::{CoverageFormula, GradeOptions};

use crate::args::{load_predictions, DatasetArgs};
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;
use swtbench_app::tables::load_spec_table;

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

pub fn run(args: VerifyArgs, printer: &Printer) -> CliResult {
    let (run_dir, run_id, logs_root) = reexecute::run_dir_parts(&args.run_dir)?;
    let table = load_spec_table(args.spec_table.as_deref())?;
    let dataset = args.dataset.load_valid(printer)?;
    let predictions = args.predictions.as_deref();
    let predictions = predictions
        .map(|p| load_predictions(p, &dataset, printer))
        .transpose()?;
    let model = match (&args.model, &predictions) {
        (Some(m), _) => Some(m.clone()),
        (None, Some(_)) => None,
        (None, None) => Some(only_model(&run_dir)?),
    };
    let settings = GradeSettings {
        dataset: &dataset,
        predictions: predictions.as_ref(),
        model: model.as_deref(),
        run_id: &run_id,
        logs_root: &logs_root,
        output_dir: &logs_root,
        rewrite: true,
        options: GradeOptions {
            exec_mode: args.exec_mode,
            coverage_formula: args.coverage_formula,
            strict_results: args.strict_results,
        },
        table: &table,
        spec_table: args.spec_table.as_deref(),
        flaky: None,
    };
    let mut notices = Vec::new();
    let verified = verify(&settings, &mut notices);
    printer.lines(&notices);
    let v = verified?;
    printer.lines(&v.lines());
    let mut clean = v.is_clean();
    if let Some(k) = args.reexecute {
        // Without --model, the predictions name it.
        let model = model.or(predictions.map(|p| p.model)).unwrap_or_default();
        clean &= reexecute(
            &args,
            &run_dir,
            &run_id,
            &model,
            &dataset.instances,
            k,
            printer,
        )?;
    }
    Ok(ExitCode::partial_if(!clean))
}

/// `--reexecute K`: a fresh evaluation of a sample of the run's graded instances (in-process,
/// with `swtbench run`'s flags), compared with what was submitted.
fn reexecute(
    args: &VerifyArgs,
    run_dir: &Path,
    run_id: &str,
    model: &str,
    instances: &[swtbench_core::Instance],
    k: usize,
    printer: &Printer,
) -> Result<bool, CliError> {
    let Some(re) = reexecute::prepare(run_dir, run_id, model, instances, k)? else {
        printer.warn("--reexecute: no graded instance to run again");
        return Ok(true);
    };
    let d = &args.dataset;
    let argv = re.run_argv(&reexecute::FreshRunFlags {
        dataset: &d.dataset,
        split: &d.split,
        exec_mode: args.exec_mode.as_str(),
        filter_swt: d.filter_swt,
        swt_filter_list: d.swt_filter_list.map(|l| l.name()),
        is_swt: d.is_swt,
        offline: d.is_offline(),
        spec_table: args.spec_table.as_deref(),
        strict_results: args.strict_results,
        run_args: &args.run_args,
    });
    printer.info(&re.starting());
    let clean_end = fresh_run(argv)?;
    let (lines, same) = re.finish(clean_end);
    printer.lines(&lines);
    Ok(same)
}

/// `swtbench run`'s command line, as `--reexecute` writes it.
#[derive(Debug, clap::Parser)]
#[command(name = "swtbench")]
struct FreshRun {
    #[command(flatten)]
    global: crate::args::GlobalArgs,
    #[command(subcommand)]
    command: FreshRunCommand,
}

#[derive(Debug, clap::Subcommand)]
enum FreshRunCommand {
    Run(Box<crate::args::RunArgs>),
}

/// The fresh run: `swtbench run` with `argv`, in this process, printing what `run` prints (with
/// its own `-q` only); whether it ended with exit code 0. An environment failure (the engine
/// unreachable, a run stopped early by the engine) ends `verify` with it.
fn fresh_run(argv: Vec<OsString>) -> Result<bool, CliError> {
    let cli = match FreshRun::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return Ok(!e.use_stderr());
        }
    };
    let printer = Printer::new(cli.global.quiet);
    let FreshRunCommand::Run(run) = cli.command;
    match crate::evaluation::run(&run, &printer) {
        Ok(code) => Ok(code == ExitCode::Success),
        Err(err) if err.code == ExitCode::Environment => Err(err),
        Err(err) => {
            printer.error(&err);
            Ok(false)
        }
    }
}
