//! `swtbench clean`'s flags, and the options of [`swtbench_app::clean::clean`] they give.

use std::path::PathBuf;

use swtbench_app::clean::CleanOptions;

#[derive(Debug, clap::Args)]
pub struct CleanArgs {
    /// Also remove this run's containers and temporary images. Without it, clean removes only
    /// what swtbench processes that have ended left: their containers (test runs, image builds)
    /// on this machine, and their unfinished output files.
    #[arg(long, alias = "run_id", value_name = "RUN_ID")]
    pub run_id: Option<String>,

    /// Keep the run's temporary images; remove only containers.
    #[arg(long, requires = "run_id")]
    pub keep_images: bool,

    /// Only list what would be removed.
    #[arg(long)]
    pub dry_run: bool,

    /// Also remove the run's containers of a swtbench process that is still running (or whose
    /// host cannot be checked).
    #[arg(long, requires = "run_id")]
    pub force: bool,

    /// Also remove the containers of swtbench processes of other machines that share this
    /// engine, whose liveness cannot be checked from here: only when none of them is running.
    #[arg(long)]
    pub all_hosts: bool,

    /// The output directory of the runs (their --output-dir), whose unfinished files of ended
    /// processes are removed.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub output_dir: PathBuf,
}

impl CleanArgs {
    /// The options of [`swtbench_app::clean::clean`].
    pub fn options(self) -> CleanOptions {
        CleanOptions {
            run_id: self.run_id,
            keep_images: self.keep_images,
            dry_run: self.dry_run,
            force: self.force,
            all_hosts: self.all_hosts,
            output_dir: self.output_dir,
        }
    }
}
