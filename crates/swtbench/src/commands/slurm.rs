//! `swtbench slurm submit|status`: an evaluation as a Slurm array job of `--shard`s and a merge job
//! ([`swtbench_app::slurm`]); the run flags, dataset and predictions are checked first.

use swtbench_app::slurm;
use swtbench_cli::commands::slurm::{SlurmArgs, SlurmCommand, StatusArgs, SubmitArgs};

use crate::cluster;
use crate::error::{CliResult, ExitCode};
use crate::inputs::{load_predictions, load_valid};
use crate::printer::Printer;

pub fn run(args: SlurmArgs, printer: &Printer) -> CliResult {
    match args.command {
        SlurmCommand::Submit(a) => submit(*a, printer),
        SlurmCommand::Status(a) => status(a, printer),
    }
}

fn submit(args: SubmitArgs, printer: &Printer) -> CliResult {
    let run = &args.run;
    let run_flags = cluster::checked_run_flags::<SubmitArgs>(&["slurm", "submit"], "task", run)?;
    // The inputs are checked here, before anything waits in a queue.
    let dataset = load_valid(&run.dataset, printer)?;
    let predictions = load_predictions(&run.predictions, &dataset, printer)?;
    let request = args.request(predictions.model.clone(), run_flags);
    slurm::submit_run(&request, &mut |line| printer.lines(&[line]))?;
    Ok(ExitCode::Success)
}

fn status(args: StatusArgs, printer: &Printer) -> CliResult {
    let status = slurm::run_status(&args.output_dir, &args.run_id)?;
    printer.lines(&status.lines(args.json));
    Ok(ExitCode::Success)
}
