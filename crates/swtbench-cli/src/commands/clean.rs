//! `swtbench clean`'s flags, and the options of [`swtbench_app::clean::clean`] they give.

use swtbench_app::clean::CleanOptions;

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

impl CleanArgs {
    /// The options of [`swtbench_app::clean::clean`].
    pub fn options(self) -> CleanOptions {
        CleanOptions {
            run_id: self.run_id,
            keep_images: self.keep_images,
            dry_run: self.dry_run,
            force: self.force,
        }
    }
}
