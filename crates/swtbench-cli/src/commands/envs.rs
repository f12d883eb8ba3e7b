//! `swtbench envs show|lock`'s flags.

use std::path::PathBuf;

use swtbench_app::env_vars;

use crate::args::{DatasetArgs, EnvProviderArgs};

#[derive(Debug, clap::Args)]
pub struct EnvsArgs {
    #[command(subcommand)]
    pub command: EnvsCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum EnvsCommand {
    /// Print the environment an instance gets: provider, Python image, the pinned packages and
    /// where they came from, what the frozen environment had that is left out.
    Show(ShowArgs),
    /// Resolve the environments of the selected instances once (uv, in a throwaway container of
    /// each environment's Python image) and write a lock file that `--env-lock FILE` installs
    /// exactly.
    Lock(Box<LockArgs>),
}

#[derive(Debug, clap::Args)]
pub struct LockArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    #[command(flatten)]
    pub table: crate::args::EnvsSpecTableArgs,

    /// Directory of bare git mirrors (requirement files).
    #[arg(long, value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: Option<PathBuf>,

    #[command(flatten)]
    pub env_provider: EnvProviderArgs,

    /// The lock file to write (TOML, format 1; see docs/environments.md).
    #[arg(long, short, value_name = "FILE")]
    pub output: PathBuf,

    /// CA bundle passed into the resolve containers (default: $SSL_CERT_FILE when it names a
    /// file).
    #[arg(long, value_name = "FILE")]
    pub ca_bundle: Option<PathBuf>,

    /// Time limit of one environment's resolve, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    pub timeout: u64,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The instance id.
    pub instance_id: String,

    /// The dataset the instance is in (an alias, a file, a hub name).
    #[arg(long, value_name = "DATASET", default_value = "verified")]
    pub dataset: String,

    /// Dataset split.
    #[arg(long, value_name = "SPLIT", default_value = "test")]
    pub split: String,

    #[command(flatten)]
    pub table: crate::args::EnvsSpecTableArgs,

    /// Directory of bare git mirrors (requirement files of instances without frozen pins).
    #[arg(long, value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: Option<PathBuf>,

    /// Never use the network.
    #[arg(long)]
    pub offline: bool,

    #[command(flatten)]
    pub env_provider: EnvProviderArgs,
}
