//! `swtbench envs show ID` (the Python environment an instance gets: `swtbench_app::spec`) and
//! `swtbench envs lock` (`swtbench_app::envlock::lock_to_file`); docs/environments.md.

use std::path::PathBuf;
use std::time::Duration;

use swtbench_app::envlock::{LockRequest, LockedEnv};

use crate::args::{apply_env_choice, DatasetArgs, EnvProviderArgs};
use crate::env_vars;
use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

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

pub fn run(args: EnvsArgs, printer: &Printer) -> CliResult {
    match args.command {
        EnvsCommand::Show(a) => show(a, printer),
        EnvsCommand::Lock(a) => lock(*a, printer),
    }
}

fn lock(args: LockArgs, printer: &Printer) -> CliResult {
    let choice = args.env_provider.choice().for_lock()?;
    let dataset = args.dataset.load_valid(printer)?;
    let table = apply_env_choice(args.table.load()?, &choice, printer)?;
    let offline = args.dataset.is_offline();
    let files = swtbench_app::tables::repo_files_from_env(args.repo_mirror.as_deref(), offline)?;
    let request = LockRequest {
        instances: &dataset.instances,
        table: &table,
        files: &files,
        ca_bundle: args.ca_bundle.as_deref(),
        timeout: Duration::from_secs(args.timeout.max(1)),
        output: &args.output,
    };
    let mut on_env = |e: &LockedEnv| printer.info(&e.line());
    let written = swtbench_app::envlock::lock_to_file(&request, &mut on_env)?;
    printer.info(&written.summary(&args.output));
    Ok(ExitCode::Success)
}

fn show(args: ShowArgs, printer: &Printer) -> CliResult {
    let offline = args.offline || swtbench_app::inputs::offline_from_env();
    let (dataset, split, id) = (&args.dataset, &args.split, &args.instance_id);
    let instance = swtbench_app::inputs::load_instance(dataset, split, id, offline)?;
    let choice = args.env_provider.choice().uv_by_default();
    let table = apply_env_choice(args.table.load()?, &choice, printer)?;
    let files = swtbench_app::tables::repo_files_from_env(args.repo_mirror.as_deref(), offline)?;
    let spec = swtbench_app::spec::instance_spec(&instance, &table, &files)?;
    printer.data(&swtbench_app::spec::describe_env(&instance, &spec));
    for w in &spec.env_warnings {
        printer.warn(w);
    }
    Ok(ExitCode::Success)
}
