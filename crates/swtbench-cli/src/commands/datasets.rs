//! `swtbench datasets`'s flags.

#[derive(Debug, clap::Args)]
pub struct DatasetsArgs {
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}
