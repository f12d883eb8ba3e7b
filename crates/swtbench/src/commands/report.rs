//! `swtbench report PATH`: the leaderboard table of one model's run, its HTML page, or the
//! comparison page of two runs. The work is [`swtbench_app::report::report`].

use swtbench_cli::commands::report::ReportArgs;

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

pub fn run(args: ReportArgs, printer: &Printer) -> CliResult {
    let request = args.request();
    let mut load = |o: &_| crate::inputs::load_dataset(o, printer);
    swtbench_app::report::report(&request, &mut load, &mut |l| printer.lines(&[l]))?;
    Ok(ExitCode::Success)
}
