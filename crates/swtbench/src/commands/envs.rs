//! `swtbench envs show ID`: what Python environment an instance gets under a provider (by default
//! uv) and where its packages come from: its own frozen SWE-bench Verified environment, one
//! borrowed from a Verified instance of the same repository and version, the spec's packages
//! unpinned, or an `--env-lock` entry. The rules are `swtbench_spec::pins` and
//! `swtbench_spec::lock`, the spec is `swtbench_app::spec::instance_spec` and its description
//! `swtbench_app::spec::describe_env`; this prints them.
//!
//! `swtbench envs lock --output FILE`: the environments of a selection resolved once into a lock
//! file (`swtbench_app::envlock::lock_to_file` renders, resolves and writes it).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use swtbench_app::envlock::{LockRequest, LockedEnv};
use swtbench_spec::Provider;

use crate::args::{DatasetArgs, EnvProviderArgs};
use crate::env_vars;
use crate::error::{CliError, CliResult, ExitCode};
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
    if args.env_provider.env_lock.is_some() {
        return Err(CliError::input(anyhow!(
            "envs lock writes a lock file; --env-lock reads one"
        ))
        .with_hint("give the file to write with --output"));
    }
    let dataset = args.dataset.load_valid(printer)?;
    let table = args.table.load()?;
    let mut provider_args = args.env_provider.clone();
    if provider_args.env_provider.is_none() {
        provider_args.env_provider = Some(Provider::Uv);
    }
    // A lock is written from the environments as they are without one.
    provider_args.no_env_lock = true;
    let table = provider_args.apply(table, printer)?;
    let offline = args.dataset.is_offline();
    let files = swtbench_app::env_vars::repo_files(args.repo_mirror.as_deref(), offline)?;
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
    let instance = swtbench_app::inputs::load_instance(
        &args.dataset,
        &args.split,
        &args.instance_id,
        offline,
    )?;
    let table = args.table.load()?;
    let mut provider_args = args.env_provider.clone();
    if provider_args.env_provider.is_none() {
        provider_args.env_provider = Some(Provider::Uv);
    }
    let table = provider_args.apply(table, printer)?;
    let files = swtbench_app::env_vars::repo_files(args.repo_mirror.as_deref(), offline)?;
    let spec = swtbench_app::spec::instance_spec(&instance, &table, &files)?;
    printer.data(&swtbench_app::spec::describe_env(&instance, &spec));
    for w in &spec.env_warnings {
        printer.warn(w);
    }
    Ok(ExitCode::Success)
}
