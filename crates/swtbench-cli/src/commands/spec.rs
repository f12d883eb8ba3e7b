//! `swtbench spec`'s flags.

use std::path::PathBuf;

use swtbench_spec::Arch;

use crate::args::{DatasetArgs, EvalArgs};

#[derive(Debug, clap::Args)]
pub struct SpecArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Predictions whose patches the pred runs apply: `gold` (the gold test patch, also the
    /// default), a .json or a .jsonl file. Instances without a prediction are not rendered.
    #[arg(long, alias = "predictions_path", value_name = "gold|FILE")]
    pub predictions: Option<String>,

    #[command(flatten)]
    pub eval: EvalArgs,

    #[command(flatten)]
    pub mirror: crate::args::RepoMirrorArgs,

    #[command(flatten)]
    pub table: crate::args::SpecTableArgs,

    #[command(flatten)]
    pub env_provider: crate::args::EnvProviderArgs,

    /// Render for this host architecture instead of this machine's (x86_64 or arm64).
    #[arg(long, value_name = "ARCH", value_parser = swtbench_app::settings::parse_arch)]
    pub arch: Option<Arch>,

    /// Leave out the per-run re-install of the repository from the eval scripts.
    #[arg(long)]
    pub skip_eval_install: bool,

    /// Output directory; each instance is written to OUT/<instance_id>/.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}
