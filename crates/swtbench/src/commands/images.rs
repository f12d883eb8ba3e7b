//! `swtbench images build|list|rm`: pre-building the images of a dataset selection, and
//! housekeeping of the images swtbench made (found by their `swtbench.kind` label).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::anyhow;
use swtbench_backend::labels::{LabelFilter, KIND, RUN_ID};
use swtbench_backend::{
    BuildNetwork, ContainerBackend, EnsuredImage, ImageBuilder, ImageInfo, RebuildPolicy,
};
use swtbench_core::Instance;
use swtbench_runner::images::recipes;
use swtbench_runner::settings::{CacheLevel, ImageKind, OutputRoots};
use swtbench_runner::RunSettings;
use swtbench_spec::{Arch, BaseImage, ExecSpec};

use super::common::DatasetArgs;
use super::run::{connect_engine, runtime};
use super::spec::{load_spec_table, repo_files};
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
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Build up to this layer: base, env or instance.
    #[arg(long, value_name = "LEVEL", default_value = "instance")]
    pub level: CacheLevel,

    /// Image builds at the same time.
    #[arg(long, alias = "build_workers", value_name = "N", default_value_t = 2)]
    pub build_workers: usize,

    /// Rebuild images that exist (once each, without the layer cache).
    #[arg(long, alias = "force_rebuild")]
    pub force_rebuild: bool,

    /// Directory of bare git mirrors <owner>__<name>.git to clone from instead of GitHub.
    #[arg(long, alias = "repo_mirror", value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: Option<PathBuf>,

    /// Extra spec table entries (TOML, or JSON for *.json).
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,

    /// CA bundle passed into builds (default: $SSL_CERT_FILE when it names a file).
    #[arg(long, value_name = "FILE")]
    pub ca_bundle: Option<PathBuf>,

    /// Base directory of image_build_logs/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub output_dir: PathBuf,
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
    match s {
        "base" => Ok(ImageKind::Base),
        "env" => Ok(ImageKind::Env),
        "instance" => Ok(ImageKind::Instance),
        other => Err(format!(
            "unknown image kind {other:?} (base, env or instance)"
        )),
    }
}

fn kind_of(info: &ImageInfo) -> Option<ImageKind> {
    info.labels.get(KIND).and_then(|k| parse_kind(k).ok())
}

pub fn run(args: ImagesArgs, printer: &Printer) -> CliResult {
    match args.command {
        ImagesCommand::Build(a) => build(*a, printer),
        ImagesCommand::List(a) => list(a, printer),
        ImagesCommand::Rm(a) => rm(a, printer),
    }
}

fn name_of(info: &ImageInfo) -> String {
    info.tags
        .first()
        .cloned()
        .unwrap_or_else(|| info.id.clone())
}

fn list(args: ListArgs, printer: &Printer) -> CliResult {
    let rt = runtime()?;
    let backend = rt.block_on(connect_engine())?;
    let mut filter = LabelFilter::default().and_present(KIND);
    if let Some(k) = args.kind {
        filter = LabelFilter::new(KIND, k.as_str());
    }
    let mut images = rt
        .block_on(backend.images_with_label(&filter))
        .map_err(CliError::environment)?;
    images.sort_by(|a, b| {
        kind_of(a)
            .cmp(&kind_of(b))
            .then(name_of(a).cmp(&name_of(b)))
    });
    for i in &images {
        let kind = i.labels.get(KIND).cloned().unwrap_or_default();
        let run = i.labels.get(RUN_ID).cloned();
        if args.json {
            printer.data(
                &serde_json::json!({
                    "kind": kind,
                    "tags": i.tags,
                    "id": i.id,
                    "created_unix": i.created_unix,
                    "run_id": run,
                })
                .to_string(),
            );
        } else {
            let id = i.id.trim_start_matches("sha256:");
            let names = if i.tags.is_empty() {
                name_of(i)
            } else {
                i.tags.join(", ")
            };
            printer.data(&format!(
                "{kind:<9} {:<12} {}{}",
                &id[..id.len().min(12)],
                names,
                run.map(|r| format!("  (temporary, run {r})"))
                    .unwrap_or_default()
            ));
        }
    }
    if !args.json {
        printer.info(&format!("{} image(s)", images.len()));
    }
    Ok(ExitCode::Success)
}

fn rm(args: RmArgs, printer: &Printer) -> CliResult {
    if !args.all && args.kind.is_empty() && args.run_id.is_none() {
        return Err(CliError::input(anyhow!(
            "say which images to remove: --kind K…, --run-id R or --all"
        )));
    }
    let rt = runtime()?;
    let backend = rt.block_on(connect_engine())?;
    let mut found: Vec<ImageInfo> = Vec::new();
    let mut seen = BTreeSet::new();
    let filters: Vec<LabelFilter> = if args.all {
        vec![LabelFilter::default().and_present(KIND)]
    } else if let Some(r) = &args.run_id {
        let base = LabelFilter::new(RUN_ID, r.as_str());
        if args.kind.is_empty() {
            vec![base]
        } else {
            args.kind
                .iter()
                .map(|k| base.clone().and(KIND, k.as_str()))
                .collect()
        }
    } else {
        args.kind
            .iter()
            .map(|k| LabelFilter::new(KIND, k.as_str()))
            .collect()
    };
    for f in &filters {
        for i in rt
            .block_on(backend.images_with_label(f))
            .map_err(CliError::environment)?
        {
            if seen.insert(i.id.clone()) {
                found.push(i);
            }
        }
    }
    // Children first: instance images are built on env images, env on base.
    found.sort_by(|a, b| {
        kind_of(b)
            .cmp(&kind_of(a))
            .then(name_of(a).cmp(&name_of(b)))
    });
    let mut failed = 0;
    for i in &found {
        let name = name_of(i);
        if args.dry_run {
            printer.data(&name);
            continue;
        }
        match rt.block_on(remove_image(&backend, i, args.force)) {
            Ok(()) => printer.data(&format!("removed {name}")),
            Err(e) => {
                failed += 1;
                printer.warn(&format!("could not remove {name}: {e}"));
            }
        }
    }
    printer.info(&format!(
        "{} image(s) {}{}",
        found.len(),
        if args.dry_run {
            "would be removed"
        } else {
            "matched"
        },
        if failed > 0 {
            format!(", {failed} could not be removed")
        } else {
            String::new()
        }
    ));
    Ok(if failed > 0 {
        ExitCode::Partial
    } else {
        ExitCode::Success
    })
}

/// Removes an image: by id when untagged, else tag by tag (removing one of several tags only
/// untags; the image goes with its last tag).
pub async fn remove_image<B: ContainerBackend>(
    backend: &B,
    image: &ImageInfo,
    force: bool,
) -> Result<(), swtbench_backend::BackendError> {
    if image.tags.is_empty() {
        return backend.image_remove(&image.id, force).await.map(|_| ());
    }
    for tag in &image.tags {
        backend.image_remove(tag, force).await?;
    }
    Ok(())
}

fn build(args: BuildArgs, printer: &Printer) -> CliResult {
    if args.level == CacheLevel::None {
        return Err(CliError::input(anyhow!(
            "--level none builds nothing; use base, env or instance"
        )));
    }
    let rt = runtime()?;
    let backend = Arc::new(rt.block_on(connect_engine())?);
    let table = load_spec_table(args.spec_table.as_deref())?;
    let files = repo_files(args.repo_mirror.as_deref(), args.dataset.is_offline())?;
    let dataset = args.dataset.load_valid(printer)?;
    let network = BuildNetwork::from_env(args.ca_bundle.as_deref())
        .map_err(|e| CliError::input(e).with_hint("--ca-bundle must name a readable file"))?;
    let mut settings = RunSettings::new("images-build", &args.output_dir);
    settings.outputs = OutputRoots::under(&args.output_dir);
    // Pre-built images are meant to stay: no temporary run label.
    settings.images.cache_level = CacheLevel::Instance;
    settings.images.repo_mirror = args.repo_mirror.clone();
    let builder = Arc::new(ImageBuilder::new(
        backend.clone(),
        args.build_workers.max(1),
        network,
    ));
    let policy = if args.force_rebuild {
        RebuildPolicy::Force
    } else {
        RebuildPolicy::Reuse
    };
    let specs: Vec<(&Instance, Result<ExecSpec, String>)> = dataset
        .instances
        .iter()
        .map(|i| {
            (
                i,
                ExecSpec::new(i, &table, Arch::host(), &files).map_err(|e| e.to_string()),
            )
        })
        .collect();
    let level = args.level;
    let results = rt.block_on(async {
        let sem = Arc::new(tokio::sync::Semaphore::new(args.build_workers.max(1)));
        let mut set = tokio::task::JoinSet::new();
        for (instance, spec) in specs {
            let id = instance.instance_id.to_string();
            let spec = match spec {
                Ok(s) => s,
                Err(e) => {
                    set.spawn(async move { (id, Err(e)) });
                    continue;
                }
            };
            let builder = builder.clone();
            let backend = backend.clone();
            let settings = settings.clone();
            let sem = sem.clone();
            set.spawn(async move {
                let _permit = sem.acquire_owned().await;
                let r = build_chain(&*backend, &builder, &settings, &spec, level, policy).await;
                (id, r)
            });
        }
        let mut out = Vec::new();
        while let Some(r) = set.join_next().await {
            if let Ok(r) = r {
                out.push(r);
            }
        }
        out.sort();
        out
    });
    let mut failed = 0;
    for (id, r) in &results {
        match r {
            Ok(tag) => printer.data(&format!("{id}\t{tag}")),
            Err(e) => {
                failed += 1;
                printer.warn(&format!("{id}: {e}"));
                printer.data(&format!("{id}\terror"));
            }
        }
    }
    printer.info(&format!(
        "{} instance(s): {} image(s) built, {} failed",
        results.len(),
        builder.built_tags().len(),
        failed
    ));
    Ok(if failed > 0 {
        ExitCode::Partial
    } else {
        ExitCode::Success
    })
}

async fn build_chain<B: ContainerBackend>(
    backend: &B,
    builder: &ImageBuilder<B>,
    settings: &RunSettings,
    spec: &ExecSpec,
    level: CacheLevel,
    policy: RebuildPolicy,
) -> Result<String, String> {
    let base_info = match &spec.spec.base {
        BaseImage::Image(tag) => Some(
            backend
                .image_inspect(tag)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| {
                    format!("base image {tag} does not exist (e.g. scripts/base-image)")
                })?,
        ),
        _ => None,
    };
    let base_id = base_info.as_ref().map(|b| b.id.clone());
    let r = recipes(settings, spec, base_id.as_deref(), false).map_err(|e| e.to_string())?;
    let base = match (&r.base, base_info) {
        (Some(recipe), _) => builder
            .ensure(recipe, policy, None)
            .await
            .map_err(|e| e.to_string())?,
        (None, Some(info)) => EnsuredImage {
            tag: spec.keys.base.clone(),
            image: info,
            outcome: swtbench_backend::BuildOutcome::Reused,
        },
        (None, None) => return Err("no base image".into()),
    };
    if level == CacheLevel::Base {
        return Ok(base.tag);
    }
    let env = builder
        .ensure(&r.env, policy, Some(&base))
        .await
        .map_err(|e| e.to_string())?;
    if level == CacheLevel::Env {
        return Ok(env.tag);
    }
    // With a mirror the instance context holds the whole repository: read it only when the
    // instance image is going to be built (missing, forced, or older than its env image).
    let existing = backend
        .image_inspect(&spec.keys.instance)
        .await
        .map_err(|e| e.to_string())?;
    let builds = policy == RebuildPolicy::Force
        || env.was_built()
        || existing.is_none_or(|i| env.image.created_unix > i.created_unix);
    let with_mirror;
    let instance_recipe = if builds && settings.images.repo_mirror.is_some() {
        with_mirror =
            recipes(settings, spec, base_id.as_deref(), true).map_err(|e| e.to_string())?;
        &with_mirror.instance
    } else {
        &r.instance
    };
    let inst = builder
        .ensure(instance_recipe, policy, Some(&env))
        .await
        .map_err(|e| e.to_string())?;
    Ok(inst.tag)
}
