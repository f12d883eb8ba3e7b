//! `swtbench images build|list|rm`: pre-building the images of a dataset selection, and
//! housekeeping of the images swtbench made. The work is [`swtbench_app::images`]; this parses
//! the arguments and prints the results.

use std::path::PathBuf;
use std::sync::Arc;

use swtbench_app::images::{self as app, name_of, BuildOptions};
use swtbench_plan::settings::{CacheLevel, ImageKind};

use swtbench_reporter::Progress;
use swtbench_runner::events::{EventSink, FanOut};

use crate::args::DatasetArgs;
use crate::env_vars;
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

    /// Directory of bare git mirrors <owner>__<name>.git (for requirement files).
    #[arg(long, alias = "repo_mirror", value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: Option<PathBuf>,

    #[command(flatten)]
    pub table: crate::args::ImagesSpecTableArgs,

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

    /// Directory of bare git mirrors <owner>__<name>.git to clone from instead of GitHub.
    #[arg(long, alias = "repo_mirror", value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: Option<PathBuf>,

    #[command(flatten)]
    pub table: crate::args::ImagesSpecTableArgs,

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
    #[arg(long, value_name = "KIND", value_parser = parse_kind)]
    pub kind: Option<ImageKind>,

    /// One JSON object per line on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// Remove images of these kinds (base, env, instance).
    #[arg(long, value_name = "KIND", value_parser = parse_kind, num_args = 1..)]
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

fn parse_kind(s: &str) -> Result<ImageKind, String> {
    app::parse_kind(s).ok_or_else(|| format!("unknown image kind {s:?} (base, env or instance)"))
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
fn sinks(
    events: Option<&std::path::Path>,
    printer: &Printer,
) -> Result<Arc<dyn EventSink>, CliError> {
    let progress = printer.progress(0);
    let mut sinks: Vec<Box<dyn EventSink>> = vec![Box::new(ProgressSink(progress))];
    let pulls = Some(crate::settings::pulls_path());
    sinks.extend(swtbench_app::registry::file_sinks(events, pulls)?);
    Ok(Arc::new(FanOut(sinks)))
}

struct ProgressSink(Progress);

impl EventSink for ProgressSink {
    fn event(&self, event: &swtbench_runner::Event) {
        self.0.event(event);
    }
}

/// Prints what a command did; exit code 1 when some item failed.
fn print(outcome: app::Outcome, printer: &Printer) -> CliResult {
    printer.lines(&outcome.lines);
    printer.info(&outcome.summary);
    if let Some(e) = outcome.failures.engine_error() {
        return Err(e.into());
    }
    Ok(match outcome.failures.count {
        0 => ExitCode::Success,
        _ => ExitCode::Partial,
    })
}

/// The selected instances' images up to `--level`.
fn selection(args: &TransferArgs, printer: &Printer) -> Result<Vec<app::SelectedImage>, CliError> {
    app::check_level(args.level, "selects no image")?;
    let table = args.table.load()?;
    let files =
        crate::settings::repo_files(args.repo_mirror.as_deref(), args.dataset.is_offline())?;
    let dataset = args.dataset.load_valid(printer)?;
    let specs = app::render_specs(&dataset.instances, &table, &files);
    let (images, failed) = app::selected_images(&specs, args.level);
    for (id, why) in &failed {
        printer.warn(&format!("{id}: {why}"));
    }
    Ok(images)
}

fn check(args: TransferArgs, printer: &Printer) -> CliResult {
    let reg = swtbench_app::registry::registry_settings(&args.registry, false, args.workers)?;
    let images = selection(&args, printer)?;
    let engine = app::Engine::connect()?;
    let local = engine.local_presence(&images)?;
    let client = swtbench_app::registry::client(&reg)?;
    let tags: Vec<String> = images.iter().map(|i| i.tag.clone()).collect();
    let started = std::time::Instant::now();
    let sink = sinks(args.events.as_deref(), printer)?;
    let found = swtbench_app::registry::lookup(&client, &tags, &|tag, note| {
        sink.event(&swtbench_runner::Event::RegistryRetry {
            what: note.what.clone(),
            status: note.status,
            attempt: note.attempt,
            pause_ms: note.pause.as_millis() as u64,
        });
        printer.warn(&swtbench_app::registry::retry_message(tag, note))
    })?;
    let checked = app::check_images(images, &local, &found);
    let secs = started.elapsed().as_secs_f64();
    print(
        app::check_outcome(&checked, args.json, tags.len(), secs),
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
    let pulls = swtbench_app::registry::read_pulls(&crate::settings::pulls_path());
    for listed in images.iter().map(|i| app::Listed::with_record(i, &pulls)) {
        if args.json {
            printer.data(&serde_json::to_string(&listed).unwrap_or_default());
        } else {
            printer.data(&listed.row());
        }
    }
    if !args.json {
        printer.info(&format!("{} image(s)", images.len()));
    }
    Ok(ExitCode::Success)
}

fn rm(args: RmArgs, printer: &Printer) -> CliResult {
    let removal = app::removal(args.all, args.run_id.as_deref(), &args.kind)?;
    let engine = app::Engine::connect()?;
    let found = engine.select(&removal)?;
    let mut failures = app::Failures::default();
    if args.dry_run {
        for i in &found {
            printer.data(&name_of(i));
        }
    } else {
        let mut show = |name: &str, r: Result<(), swtbench_backend::BackendError>| match r {
            Ok(()) => printer.data(&format!("removed {name}")),
            Err(e) => printer.warn(&format!("could not remove {name}: {e}")),
        };
        failures = engine.remove(&found, args.force, &mut show);
    }
    let summary = app::removal_summary(found.len(), args.dry_run, failures.count);
    print(
        app::Outcome {
            lines: Vec::new(),
            summary,
            failures,
        },
        printer,
    )
}

fn build(args: BuildArgs, printer: &Printer) -> CliResult {
    app::check_level(args.level, "builds nothing")?;
    let engine = app::Engine::connect()?;
    let table = args.table.load()?;
    let table = args.env_provider.apply(table, printer)?;
    let files =
        crate::settings::repo_files(args.repo_mirror.as_deref(), args.dataset.is_offline())?;
    let dataset = args.dataset.load_valid(printer)?;
    let network = swtbench_app::env_vars::build_network(args.ca_bundle.as_deref())
        .map_err(|e| CliError::input(e).with_hint("--ca-bundle must name a readable file"))?;
    let options = BuildOptions {
        level: args.level,
        build_workers: args.build_workers,
        force_rebuild: args.force_rebuild,
        repo_mirror: args.repo_mirror.clone(),
        output_dir: args.output_dir.clone(),
        network,
        registry: args.registry.settings()?,
        step_builds: args.step_builds,
    };
    let mut specs = app::render_specs(&dataset.instances, &table, &files);
    if let Some(shard) = args.shard {
        let of;
        (specs, of) = app::shard_specs(specs, shard);
        printer.info(&format!(
            "shard {shard}: {} of {of} instance(s)",
            specs.len()
        ));
    }
    let sink = sinks(args.events.as_deref(), printer)?;
    print(
        app::build_outcome(&engine.build(specs, options, sink)),
        printer,
    )
}
