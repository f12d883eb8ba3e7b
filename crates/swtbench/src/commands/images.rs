//! `swtbench images build|list|rm|check|push|pull`; the work is [`swtbench_app::images`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use swtbench_app::images::{self as app, BuildOptions};
use swtbench_plan::settings::{CacheLevel, ImageKind};
use swtbench_runner::events::{EventSink, FanOut};

use crate::args::{DatasetArgs, RepoMirrorArgs};
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct ImagesArgs {
    #[command(subcommand)]
    pub command: ImagesCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum ImagesCommand {
    /// Build the base, env and instance images of the selected instances (kept: not removed
    /// after, whatever a run's cache level).
    Build(Box<BuildArgs>),
    /// List the images swtbench built (and labelled base images), by kind.
    List(ListArgs),
    /// Remove images swtbench built, by kind or run id.
    Rm(RmArgs),
    /// Which images of the selected instances are present locally, which are in the registry
    /// (manifest look-ups, no pull), and which would be built.
    Check(Box<TransferArgs>),
    /// Push the local images of the selected instances to --registry.
    Push(Box<TransferArgs>),
    /// Pull the images of the selected instances that are missing locally from --registry.
    Pull(Box<TransferArgs>),
}

#[derive(Debug, clap::Args)]
pub struct TransferArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Registry (HOST[:PORT][/NAMESPACE]) holding swtbench's images as REF/<image key>.
    #[arg(long, value_name = "REF")]
    pub registry: String,

    /// Images up to this layer: base, env or instance.
    #[arg(long, value_name = "LEVEL", default_value = "instance")]
    pub level: CacheLevel,

    /// Transfers (or look-ups) at the same time.
    #[arg(long, value_name = "N", default_value_t = 4, allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_positive::<usize>)]
    pub workers: usize,

    #[command(flatten)]
    pub mirror: RepoMirrorArgs,

    #[command(flatten)]
    pub table: crate::args::SpecTableArgs,

    /// One JSON object per line on stdout (check) instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Write the pull/push events (check: the retried look-ups) as JSON Lines to FILE.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Build up to this layer: base, env or instance.
    #[arg(long, value_name = "LEVEL", default_value = "instance")]
    pub level: CacheLevel,

    /// Image builds at the same time.
    #[arg(long, alias = "build_workers", value_name = "N", default_value_t = 2, allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_positive::<usize>)]
    pub build_workers: usize,

    /// Rebuild images that exist (once each, without the layer cache).
    #[arg(long, alias = "force_rebuild")]
    pub force_rebuild: bool,

    /// Build with the engine's Dockerfile builder, a layer per instruction (see `run
    /// --step-builds`).
    #[arg(long)]
    pub step_builds: bool,

    #[command(flatten)]
    pub mirror: RepoMirrorArgs,

    #[command(flatten)]
    pub table: crate::args::SpecTableArgs,

    #[command(flatten)]
    pub env_provider: crate::args::EnvProviderArgs,

    /// CA bundle passed into builds (default: $SSL_CERT_FILE when it names a file).
    #[arg(long, value_name = "FILE")]
    pub ca_bundle: Option<PathBuf>,

    /// Base directory of image_build_logs/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub output_dir: PathBuf,

    #[command(flatten)]
    pub registry: crate::args::RegistryArgs,

    /// Write the image events (builds, pulls, pushes) as JSON Lines to FILE.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,

    /// Build the images of the K-th of N parts of the selected instances (like 2/8): instances
    /// that share an env image are in one part, parts of about equal build work, the same on
    /// every machine.
    #[arg(long, value_name = "K/N", value_parser = swtbench_plan::settings::Shard::parse)]
    pub shard: Option<swtbench_plan::settings::Shard>,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Only images of this kind: base, env or instance.
    #[arg(long, value_name = "KIND", value_parser = swtbench_app::settings::parse_image_kind)]
    pub kind: Option<ImageKind>,

    /// One JSON object per line on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// Remove images of these kinds (base, env, instance).
    #[arg(long, value_name = "KIND", value_parser = swtbench_app::settings::parse_image_kind, num_args = 1..)]
    pub kind: Vec<ImageKind>,

    /// Remove the temporary images of this run id (images above its cache level).
    #[arg(long, alias = "run_id", value_name = "RUN_ID")]
    pub run_id: Option<String>,

    /// Remove every image with a swtbench kind label (including labelled base images).
    #[arg(long, conflicts_with_all = ["kind", "run_id"])]
    pub all: bool,

    /// Remove even when a container still uses the image.
    #[arg(long)]
    pub force: bool,

    /// Only list what would be removed.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(args: ImagesArgs, printer: &Printer) -> CliResult {
    match args.command {
        ImagesCommand::Build(a) => build(*a, printer),
        ImagesCommand::List(a) => list(a, printer),
        ImagesCommand::Rm(a) => rm(a, printer),
        ImagesCommand::Check(a) => check(*a, printer),
        ImagesCommand::Push(a) => transfer(*a, true, printer),
        ImagesCommand::Pull(a) => transfer(*a, false, printer),
    }
}

/// The progress display, the record of pulls and, with `--events`, the JSON Lines file.
fn sinks(events: Option<&Path>, printer: &Printer) -> swtbench_app::Result<Arc<dyn EventSink>> {
    let mut sinks: Vec<Box<dyn EventSink>> = vec![Box::new(printer.progress(0))];
    let pulls = Some(swtbench_app::registry::pulls_path_from_env());
    sinks.extend(swtbench_app::registry::file_sinks(events, pulls)?);
    Ok(Arc::new(FanOut(sinks)))
}

/// Prints what a command did; exit code 1 when some item failed.
fn print(outcome: app::Outcome, printer: &Printer) -> CliResult {
    printer.lines(&outcome.lines);
    printer.info(&outcome.summary);
    ExitCode::of_failures(&outcome.failures)
}

/// The selected instances' images up to `--level`.
fn selection(args: &TransferArgs, printer: &Printer) -> Result<Vec<app::SelectedImage>, CliError> {
    app::check_level(args.level, "selects no image")?;
    let table = args.table.load()?;
    let files = args.mirror.files(args.dataset.is_offline())?;
    let dataset = args.dataset.load_valid(printer)?;
    let (images, warnings) = app::selection(&dataset.instances, &table, &files, args.level);
    printer.lines(&warnings);
    Ok(images)
}

fn check(args: TransferArgs, printer: &Printer) -> CliResult {
    let reg = swtbench_app::registry::registry_settings(&args.registry, false, args.workers)?;
    let images = selection(&args, printer)?;
    let mut sink = || sinks(args.events.as_deref(), printer);
    let warn = |l| printer.lines(&[l]);
    let engine = app::Engine::connect()?;
    print(
        engine.check(&reg, images, args.json, &mut sink, &warn)?,
        printer,
    )
}

fn transfer(args: TransferArgs, push: bool, printer: &Printer) -> CliResult {
    let reg = swtbench_app::registry::registry_settings(&args.registry, push, args.workers)?;
    let images = selection(&args, printer)?;
    let sink = sinks(args.events.as_deref(), printer)?;
    let results = app::Engine::connect()?.transfer(&reg, images, push, args.workers, sink);
    print(app::transfer_outcome(&results, push), printer)
}

fn list(args: ListArgs, printer: &Printer) -> CliResult {
    let images = app::Engine::connect()?.list(args.kind)?;
    let pulls = swtbench_app::registry::read_pulls(&swtbench_app::registry::pulls_path_from_env());
    printer.lines(&app::list_lines(&images, &pulls, args.json));
    Ok(ExitCode::Success)
}

fn rm(args: RmArgs, printer: &Printer) -> CliResult {
    let removal = app::removal(args.all, args.run_id.as_deref(), &args.kind)?;
    let engine = app::Engine::connect()?;
    let say = &mut |l| printer.lines(&[l]);
    print(engine.rm(&removal, args.force, args.dry_run, say)?, printer)
}

fn build(args: BuildArgs, printer: &Printer) -> CliResult {
    app::check_level(args.level, "builds nothing")?;
    let engine = app::Engine::connect()?;
    let table = args.table.load()?;
    let table = args.env_provider.apply(table, printer)?;
    let files = args.mirror.files(args.dataset.is_offline())?;
    let dataset = args.dataset.load_valid(printer)?;
    let network = swtbench_app::env_vars::checked_build_network(args.ca_bundle.as_deref())?;
    let options = BuildOptions {
        level: args.level,
        build_workers: args.build_workers,
        force_rebuild: args.force_rebuild,
        repo_mirror: args.mirror.repo_mirror.clone(),
        output_dir: args.output_dir.clone(),
        network,
        registry: args.registry.settings()?,
        step_builds: args.step_builds,
    };
    let mut specs = app::render_specs(&dataset.instances, &table, &files);
    if let Some(shard) = args.shard {
        let line;
        (specs, line) = app::shard_specs(specs, shard);
        printer.lines(&[line]);
    }
    let sink = sinks(args.events.as_deref(), printer)?;
    print(
        app::build_outcome(&engine.build(specs, options, sink)),
        printer,
    )
}
