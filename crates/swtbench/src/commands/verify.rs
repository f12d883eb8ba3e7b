//! `swtbench verify RUN_DIR`: checks a finished run without containers or writing
//! ([`swtbench_app::grade::verify`]) and, with `--reexecute K`, evaluates a sample again.

use std::path::Path;

use swtbench_app::grade::{only_model, verify, GradeSettings};
use swtbench_app::reexecute;
use swtbench_app::tables::load_spec_table;
use swtbench_cli::args::{GlobalArgs, RunArgs};
use swtbench_cli::commands::verify::VerifyArgs;

use crate::error::{CliError, CliResult, ExitCode};
use crate::inputs::{load_predictions, load_valid};
use crate::printer::Printer;

pub fn run(args: VerifyArgs, printer: &Printer) -> CliResult {
    let (run_dir, run_id, logs_root) = reexecute::run_dir_parts(&args.run_dir)?;
    let table = load_spec_table(args.spec_table.as_deref())?;
    let dataset = load_valid(&args.dataset, printer)?;
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
        options: args.options(),
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
    let fresh = args.fresh_run_args(&re);
    printer.info(&re.starting());
    let clean_end = fresh_run(fresh)?;
    let (lines, same) = re.finish(clean_end);
    printer.lines(&lines);
    Ok(same)
}

/// The fresh run: `swtbench run` with `fresh`'s arguments, in this process (the same
/// evaluation as `run`'s), printing what `run` prints (with its own `-q` only); whether it ended
/// with exit code 0. An environment failure (the engine unreachable, a run stopped early by the
/// engine) ends `verify` with it.
fn fresh_run(fresh: Result<(GlobalArgs, RunArgs), clap::Error>) -> Result<bool, CliError> {
    let (global, run) = match fresh {
        Ok(parsed) => parsed,
        Err(e) => {
            let _ = e.print();
            return Ok(!e.use_stderr());
        }
    };
    let printer = Printer::new(global.quiet);
    match crate::evaluation::run(&run, &printer) {
        Ok(code) => Ok(code == ExitCode::Success),
        Err(err) if err.code == ExitCode::Environment => Err(err),
        Err(err) => {
            printer.error(&err);
            Ok(false)
        }
    }
}
