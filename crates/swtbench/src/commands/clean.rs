//! `swtbench clean --run-id R`: removes what a run left behind (containers, temporary images);
//! the work is [`swtbench_app::clean`], this prints it.

use swtbench_app::clean::{clean, CleanOptions, Cleaned, Item};

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct CleanArgs {
    /// The run whose containers and temporary images are removed.
    #[arg(long, alias = "run_id", value_name = "RUN_ID")]
    pub run_id: String,

    /// Keep the run's temporary images; remove only containers.
    #[arg(long)]
    pub keep_images: bool,

    /// Only list what would be removed.
    #[arg(long)]
    pub dry_run: bool,

    /// Also remove containers of a swtbench process that is still running (or whose host
    /// cannot be checked).
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: CleanArgs, printer: &Printer) -> CliResult {
    let options = CleanOptions {
        run_id: args.run_id,
        keep_images: args.keep_images,
        dry_run: args.dry_run,
        force: args.force,
    };
    let mut show = |item: Item, name: &str, what: &Cleaned| printer.lines(&[what.line(item, name)]);
    let summary = clean(&options, &mut show)?;
    printer.info(&summary.text(&options));
    ExitCode::of_failures(&summary.failures)
}
