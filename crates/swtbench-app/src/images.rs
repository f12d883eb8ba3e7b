//! `images build|list|rm`: pre-building the base → env → instance images of a dataset selection
//! (kept after: no temporary run label), listing the images swtbench made and removing them, all
//! found by the `swtbench.kind` label. Results come back as data; the binary prints them. [`Engine`]
//! is the blocking form of the calls that reach the engine.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use swtbench_backend::labels::{LabelFilter, KIND, RUN_ID};
use swtbench_backend::{
    BackendError, BuildNetwork, BuildOutcome, ContainerBackend, EnsuredImage, ImageBuilder,
    ImageInfo, RebuildPolicy,
};
use swtbench_core::Instance;
use swtbench_plan::settings::RegistrySettings;
use swtbench_plan::settings::{CacheLevel, ImageKind, OutputRoots};
use swtbench_plan::RunSettings;
use swtbench_runner::events::{Event, EventSink, ImageOutcome};
use swtbench_runner::images::{note_events, own_tag, recipes, registry_cache};
use swtbench_runner::outcome::BuildFailure;
use swtbench_runner::outcome::RecipeError;
use swtbench_spec::{Arch, BaseImage, ExecSpec, FileSource, SpecError, SpecTable};

use crate::clean::remove_image;
pub use crate::error::Failures;
use crate::{Error, Result};

/// The image kind a `swtbench.kind` label names.
pub fn parse_kind(s: &str) -> Option<ImageKind> {
    match s {
        "base" => Some(ImageKind::Base),
        "env" => Some(ImageKind::Env),
        "instance" => Some(ImageKind::Instance),
        _ => None,
    }
}

/// The kind of an image swtbench labelled.
pub fn kind_of(info: &ImageInfo) -> Option<ImageKind> {
    info.labels.get(KIND).and_then(|k| parse_kind(k))
}

/// How an image is shown: swtbench's tag of it, else its first tag, else its id.
pub fn name_of(info: &ImageInfo) -> String {
    own_tag(info)
        .or_else(|| info.tags.first().cloned())
        .unwrap_or_else(|| info.id.clone())
}

/// The images swtbench made (of one kind, or all), by kind then name. Images that only inherited
/// swtbench's labels (built `FROM` one of its images) are not listed: they are not swtbench's.
pub async fn list_images<B: ContainerBackend>(
    backend: &B,
    kind: Option<ImageKind>,
) -> Result<Vec<ImageInfo>> {
    let filter = match kind {
        Some(k) => LabelFilter::new(KIND, k.as_str()),
        None => LabelFilter::default().and_present(KIND),
    };
    let mut images = backend
        .images_with_label(&filter)
        .await
        .map_err(Error::environment)?;
    images.retain(|i| own_tag(i).is_some());
    images.sort_by(|a, b| {
        kind_of(a)
            .cmp(&kind_of(b))
            .then(name_of(a).cmp(&name_of(b)))
    });
    Ok(images)
}

/// One image as `images list` shows it: a JSON object per line for machines (`kind`, `tags`, `id`,
/// `created_unix`, `run_id`: set for a run's temporary images), or a table row for people.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Listed {
    pub kind: String,
    pub tags: Vec<String>,
    pub id: String,
    pub created_unix: i64,
    pub run_id: Option<String>,
    /// `built`, or `pulled from <reference>` (from the local record of pulls).
    pub source: String,
}

impl Listed {
    pub fn of(info: &ImageInfo) -> Listed {
        Listed::with_record(info, &std::collections::BTreeMap::new())
    }

    /// With `pulls` (image id → reference, [`crate::registry::read_pulls`]).
    pub fn with_record(
        info: &ImageInfo,
        pulls: &std::collections::BTreeMap<String, String>,
    ) -> Listed {
        Listed {
            kind: info.labels.get(KIND).cloned().unwrap_or_default(),
            tags: info.tags.clone(),
            id: info.id.clone(),
            created_unix: info.created_unix,
            run_id: info.labels.get(RUN_ID).cloned(),
            source: match pulls.get(&info.id) {
                Some(r) => format!("pulled from {r}"),
                None => "built".to_string(),
            },
        }
    }

    /// `kind  short-id  tags  (temporary, run R)`.
    pub fn row(&self) -> String {
        let id = self.id.trim_start_matches("sha256:");
        let names = if self.tags.is_empty() {
            self.id.clone()
        } else {
            self.tags.join(", ")
        };
        let run = self.run_id.as_ref();
        format!(
            "{:<9} {:<12} {}{}{}",
            self.kind,
            &id[..id.len().min(12)],
            names,
            run.map(|r| format!("  (temporary, run {r})"))
                .unwrap_or_default(),
            if self.source == "built" {
                String::new()
            } else {
                format!("  ({})", self.source)
            }
        )
    }
}

/// What `images list` prints: a row (or, with `json`, a JSON object) per image, where it came
/// from (`pulls`: [`crate::registry::read_pulls`]), and the count (not with `json`).
pub fn list_lines(
    images: &[ImageInfo],
    pulls: &std::collections::BTreeMap<String, String>,
    json: bool,
) -> Vec<Line> {
    let mut lines: Vec<Line> = images
        .iter()
        .map(|i| Listed::with_record(i, pulls))
        .map(|l| match json {
            true => Line::Data(serde_json::to_string(&l).unwrap_or_default()),
            false => Line::Data(l.row()),
        })
        .collect();
    if !json {
        lines.push(Line::Info(format!("{} image(s)", images.len())));
    }
    lines
}

/// Which images `images rm` removes.
#[derive(Debug, Clone)]
pub enum Removal {
    /// Every image swtbench made (see [`own_tag`]).
    All,
    /// The temporary images of a run, optionally only these kinds.
    Run {
        run_id: String,
        kinds: Vec<ImageKind>,
    },
    /// Images of these kinds.
    Kinds(Vec<ImageKind>),
}

/// The images a [`Removal`] selects, children first (instance, env, base), each once.
pub async fn select_images<B: ContainerBackend>(
    backend: &B,
    removal: &Removal,
) -> Result<Vec<ImageInfo>> {
    let filters: Vec<LabelFilter> = match removal {
        Removal::All => vec![LabelFilter::default().and_present(KIND)],
        Removal::Run { run_id, kinds } => {
            let base = LabelFilter::new(RUN_ID, run_id.as_str());
            if kinds.is_empty() {
                vec![base]
            } else {
                kinds
                    .iter()
                    .map(|k| base.clone().and(KIND, k.as_str()))
                    .collect()
            }
        }
        Removal::Kinds(kinds) => kinds
            .iter()
            .map(|k| LabelFilter::new(KIND, k.as_str()))
            .collect(),
    };
    let mut found: Vec<ImageInfo> = Vec::new();
    let mut seen = BTreeSet::new();
    for f in &filters {
        for i in backend
            .images_with_label(f)
            .await
            .map_err(Error::environment)?
        {
            // Only what swtbench made, whatever labels an image inherited.
            if own_tag(&i).is_some() && seen.insert(i.id.clone()) {
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
    Ok(found)
}

/// Removes the selected images in order; `report(name, result)` is called for each.
pub async fn remove_images<B: ContainerBackend>(
    backend: &B,
    images: &[ImageInfo],
    force: bool,
    report: &mut dyn FnMut(&str, std::result::Result<(), BackendError>),
) -> Failures {
    let mut failures = Failures::default();
    for i in images {
        let r = remove_image(backend, i, force).await;
        if let Err(e) = &r {
            failures.record(Some(e));
        }
        report(&name_of(i), r);
    }
    failures
}

/// What `images build` builds.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Up to this layer (base, env or instance; never none).
    pub level: CacheLevel,
    pub build_workers: usize,
    pub force_rebuild: bool,
    pub repo_mirror: Option<PathBuf>,
    /// Base directory of `image_build_logs/`.
    pub output_dir: PathBuf,
    pub network: BuildNetwork,
    /// `--registry [--push]`: pull what is missing instead of building it, push after.
    pub registry: Option<RegistrySettings>,
    /// `--step-builds`: the engine's Dockerfile builder instead of one commit per image.
    pub step_builds: bool,
}

/// Why one instance's images could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ImageChainError {
    #[error("{0}")]
    Spec(#[from] SpecError),
    #[error("{0}")]
    Recipe(#[from] RecipeError),
    #[error("{0}")]
    Engine(#[from] BackendError),
    /// An image of the chain failed to build (the text names the log, and an unreachable
    /// package source when that was the cause).
    #[error("{0}")]
    Build(BuildFailure),
    #[error(
        "base image {tag} does not exist (make it first: `swtbench images base IMAGE`, or `swtbench images python VERSION` for a Python image)"
    )]
    MissingBase { tag: String },
    #[error("no base image")]
    NoBase,
}

/// Per instance (sorted by id) the tag of its top image or why it failed, and how many images
/// were built.
#[derive(Debug)]
pub struct Built {
    pub results: Vec<(String, std::result::Result<String, ImageChainError>)>,
    pub images_built: usize,
    /// Images pulled from the registry cache instead of built.
    pub images_pulled: usize,
    /// The Python images of uv environments that were not local: pulled, or why not.
    pub python_images: Vec<(String, Result<()>)>,
}

/// The Python image a uv environment of `spec` builds on (`python:3.9-slim-bookworm`, …), which
/// `run` and `images build` pull when it is not local.
pub fn python_image_of(spec: &ExecSpec) -> Option<&str> {
    (spec.spec.provider == swtbench_spec::Provider::Uv
        && matches!(spec.spec.base, BaseImage::Image(_)))
    .then_some(spec.keys.base.as_str())
}

/// Pulls the Python images of `specs` that are not local (each once, with the credentials of
/// Docker's config file, as `run` does), and says what became of each.
async fn pull_missing_python_images<B: ContainerBackend>(
    backend: &B,
    specs: &[(String, std::result::Result<ExecSpec, SpecError>)],
) -> Vec<(String, Result<()>)> {
    let tags: BTreeSet<&str> = specs
        .iter()
        .filter_map(|(_, s)| s.as_ref().ok().and_then(python_image_of))
        .collect();
    let mut out = Vec::new();
    for tag in tags {
        // An engine that does not answer fails every build of the tag with its own error.
        if !matches!(backend.image_inspect(tag).await, Ok(None)) {
            continue;
        }
        let pulled = crate::registry::pull_base_image(backend, tag)
            .await
            .map(|_| ());
        out.push((tag.to_string(), pulled));
    }
    out
}

/// Renders the spec of every instance (requirement files are read here, before any build
/// starts: the file source blocks).
pub fn render_specs(
    instances: &[Instance],
    table: &SpecTable,
    files: &dyn FileSource,
) -> Vec<(String, std::result::Result<ExecSpec, SpecError>)> {
    instances
        .iter()
        .map(|i| {
            let spec = ExecSpec::new(i, table, Arch::host(), files);
            (i.instance_id.to_string(), spec)
        })
        .collect()
}

/// Builds the images of every rendered spec up to `options.level`, `build_workers` at a time.
pub async fn build_images<B: ContainerBackend>(
    backend: Arc<B>,
    specs: Vec<(String, std::result::Result<ExecSpec, SpecError>)>,
    options: BuildOptions,
    sink: Arc<dyn EventSink>,
) -> Built {
    let workers = options.build_workers.max(1);
    let mut settings = RunSettings::new("images-build", &options.output_dir);
    settings.outputs = OutputRoots::under(&options.output_dir);
    // Pre-built images are meant to stay: no temporary run label.
    settings.images.cache_level = CacheLevel::Instance;
    settings.images.repo_mirror = options.repo_mirror.clone();
    settings.images.registry = options.registry.clone();
    settings.images.step_builds = options.step_builds;
    let builder = Arc::new(
        ImageBuilder::new(backend.clone(), workers, options.network)
            .with_registry(registry_cache(&settings, sink.clone())),
    );
    let policy = if options.force_rebuild {
        RebuildPolicy::Force
    } else {
        RebuildPolicy::Reuse
    };
    let level = options.level;
    let python_images = pull_missing_python_images(backend.as_ref(), &specs).await;
    let sem = Arc::new(tokio::sync::Semaphore::new(workers));
    let mut set = tokio::task::JoinSet::new();
    for (id, spec) in specs {
        let spec = match spec {
            Ok(s) => s,
            Err(e) => {
                set.spawn(async move { (id, Err(ImageChainError::from(e))) });
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
    let mut results = Vec::new();
    while let Some(r) = set.join_next().await {
        if let Ok(r) = r {
            results.push(r);
        }
    }
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let pulled = builder.pulled_tags().len();
    Built {
        results,
        images_built: builder.built_tags().len() - pulled,
        images_pulled: pulled,
        python_images,
    }
}

async fn build_chain<B: ContainerBackend>(
    backend: &B,
    builder: &ImageBuilder<B>,
    settings: &RunSettings,
    spec: &ExecSpec,
    level: CacheLevel,
    policy: RebuildPolicy,
) -> std::result::Result<String, ImageChainError> {
    let base_info = match &spec.spec.base {
        BaseImage::Image(tag) => Some(
            backend
                .image_inspect(tag)
                .await?
                .ok_or_else(|| ImageChainError::MissingBase { tag: tag.clone() })?,
        ),
        _ => None,
    };
    let base_id = base_info.as_ref().map(|b| b.id.clone());
    let r = recipes(settings, spec, base_id.as_deref(), false)?;
    let failed = |tag: &str, kind: ImageKind| {
        let logs = settings.outputs.build_logs.clone();
        let tag = tag.to_string();
        move |e: BackendError| match e {
            BackendError::BuildFailed { .. } => {
                ImageChainError::Build(BuildFailure::new(&tag, kind, e, &logs))
            }
            other => ImageChainError::Engine(other),
        }
    };
    let base = match (&r.base, base_info) {
        (Some(recipe), _) => builder
            .ensure(recipe, policy, None)
            .await
            .map_err(failed(recipe.tag(), ImageKind::Base))?,
        (None, Some(info)) => EnsuredImage {
            tag: spec.keys.base.clone(),
            image: info,
            outcome: BuildOutcome::Reused,
        },
        (None, None) => return Err(ImageChainError::NoBase),
    };
    if level == CacheLevel::Base {
        return Ok(base.tag);
    }
    let env = builder
        .ensure(&r.env, policy, Some(&base))
        .await
        .map_err(failed(r.env.tag(), ImageKind::Env))?;
    if level == CacheLevel::Env {
        return Ok(env.tag);
    }
    // With a mirror the instance context holds the whole repository: read it only when the
    // instance image is going to be built (missing, forced, or older than its env image).
    let existing = backend.image_inspect(&spec.keys.instance).await?;
    let builds = policy == RebuildPolicy::Force
        || env.was_built()
        || existing.is_none_or(|i| env.image.created_unix > i.created_unix);
    let with_mirror;
    let instance_recipe = if builds && settings.images.repo_mirror.is_some() {
        with_mirror = recipes(settings, spec, base_id.as_deref(), true)?;
        &with_mirror.instance
    } else {
        &r.instance
    };
    let inst = builder
        .ensure(instance_recipe, policy, Some(&env))
        .await
        .map_err(failed(instance_recipe.tag(), ImageKind::Instance))?;
    Ok(inst.tag)
}

/// One image of a selection, and the instances that need it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SelectedImage {
    pub tag: String,
    #[serde(serialize_with = "kind_str")]
    pub kind: ImageKind,
    pub instances: Vec<String>,
}

fn kind_str<S: serde::Serializer>(k: &ImageKind, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(k.as_str())
}

/// The images of the rendered specs up to `level` (base images only when swtbench builds them;
/// a local base image is not swtbench's), each once, by kind then tag; and the specs that
/// could not be rendered.
pub fn selected_images(
    specs: &[(String, std::result::Result<ExecSpec, SpecError>)],
    level: CacheLevel,
) -> (Vec<SelectedImage>, Vec<(String, String)>) {
    let mut by_tag: std::collections::BTreeMap<String, SelectedImage> = Default::default();
    let mut failed = Vec::new();
    for (id, spec) in specs {
        let spec = match spec {
            Ok(s) => s,
            Err(e) => {
                failed.push((id.clone(), e.to_string()));
                continue;
            }
        };
        let mut chain = Vec::new();
        if spec.base_dockerfile.is_some() {
            chain.push((spec.keys.base.clone(), ImageKind::Base));
        }
        if level >= CacheLevel::Env {
            chain.push((spec.keys.env.clone(), ImageKind::Env));
        }
        if level >= CacheLevel::Instance {
            chain.push((spec.keys.instance.clone(), ImageKind::Instance));
        }
        for (tag, kind) in chain {
            by_tag
                .entry(tag.clone())
                .or_insert_with(|| SelectedImage {
                    tag,
                    kind,
                    instances: Vec::new(),
                })
                .instances
                .push(id.clone());
        }
    }
    let mut out: Vec<SelectedImage> = by_tag.into_values().collect();
    out.sort_by(|a, b| a.kind.cmp(&b.kind).then(a.tag.cmp(&b.tag)));
    (out, failed)
}

/// The images of `instances` up to `level` ([`selected_images`] of their [`render_specs`]), and
/// a warning for each instance that could not be rendered.
pub fn selection(
    instances: &[Instance],
    table: &SpecTable,
    files: &dyn FileSource,
    level: CacheLevel,
) -> (Vec<SelectedImage>, Vec<Line>) {
    let (images, failed) = selected_images(&render_specs(instances, table, files), level);
    let warnings = failed
        .into_iter()
        .map(|(id, why)| Line::Warn(format!("{id}: {why}")))
        .collect();
    (images, warnings)
}

/// Where one image would come from (`images check`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Checked {
    #[serde(flatten)]
    pub image: SelectedImage,
    pub local: bool,
    pub registry: bool,
    /// The manifest digest the registry names.
    pub digest: Option<String>,
    /// Answers (429, 5xx) retried during the look-up.
    pub retries: u32,
    /// `present` (local), `pull` (in the registry) or `build`.
    pub action: &'static str,
}

impl Checked {
    /// `action  kind  tag  (N instance(s))`.
    pub fn row(&self) -> String {
        format!(
            "{:<8} {:<9} {}  ({} instance(s))",
            self.action,
            self.image.kind.as_str(),
            self.image.tag,
            self.image.instances.len()
        )
    }
}

/// Which images are local (one engine look-up each).
pub async fn local_presence<B: ContainerBackend>(
    backend: &B,
    images: &[SelectedImage],
) -> Result<std::collections::BTreeMap<String, bool>> {
    let mut out = std::collections::BTreeMap::new();
    for i in images {
        let found = backend
            .image_inspect(&i.tag)
            .await
            .map_err(Error::environment)?;
        out.insert(i.tag.clone(), found.is_some());
    }
    Ok(out)
}

/// Joins the local and registry answers into what would happen to each image.
pub fn check_images(
    images: Vec<SelectedImage>,
    local: &std::collections::BTreeMap<String, bool>,
    registry: &std::collections::BTreeMap<String, swtbench_data::registry::Lookup>,
) -> Vec<Checked> {
    images
        .into_iter()
        .map(|image| {
            let is_local = local.get(&image.tag).copied().unwrap_or(false);
            let found = registry.get(&image.tag);
            let in_registry = found.is_some_and(|l| l.present);
            Checked {
                local: is_local,
                registry: in_registry,
                digest: found.and_then(|l| l.digest.clone()),
                retries: found.map_or(0, |l| l.retries),
                action: if is_local {
                    "present"
                } else if in_registry {
                    "pull"
                } else {
                    "build"
                },
                image,
            }
        })
        .collect()
}

/// What `images push|pull` did to one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transferred {
    Pushed {
        bytes: u64,
    },
    Pulled {
        bytes: u64,
    },
    /// Pull: it is there locally already.
    Present,
}

/// Pushes (`push`) or pulls each image, `workers` at a time; events go to `sink`.
pub async fn transfer_images<B: ContainerBackend>(
    backend: Arc<B>,
    registry: &RegistrySettings,
    images: Vec<SelectedImage>,
    push: bool,
    workers: usize,
    sink: Arc<dyn EventSink>,
) -> Vec<(
    SelectedImage,
    std::result::Result<Transferred, BackendError>,
)> {
    let sem = Arc::new(tokio::sync::Semaphore::new(workers.max(1)));
    let notes = Arc::new(note_events(sink.clone()));
    let mut set = tokio::task::JoinSet::new();
    for image in images {
        let (backend, sem, notes, sink, reg) = (
            backend.clone(),
            sem.clone(),
            notes.clone(),
            sink.clone(),
            registry.clone(),
        );
        set.spawn(async move {
            let _permit = sem.acquire_owned().await;
            let tag = image.tag.clone();
            let reference = reg.reference(&tag);
            let started = std::time::Instant::now();
            let progress = |p| {
                notes(swtbench_backend::RegistryNote::Progress {
                    tag: tag.clone(),
                    reference: reference.clone(),
                    pushing: push,
                    progress: p,
                })
            };
            let r = if push {
                match backend.image_inspect(&tag).await {
                    Ok(Some(_)) => swtbench_backend::push_as(
                        &backend,
                        &tag,
                        &reference,
                        reg.auth.as_ref(),
                        &progress,
                    )
                    .await
                    .map(|bytes| {
                        sink.event(&Event::ImagePushed {
                            tag: tag.clone(),
                            reference: reference.clone(),
                            duration_ms: started.elapsed().as_millis() as u64,
                            bytes,
                        });
                        Transferred::Pushed { bytes }
                    }),
                    Ok(None) => Err(BackendError::ImageNotFound(format!(
                        "{tag} (build it first: swtbench images build)"
                    ))),
                    Err(e) => Err(e),
                }
            } else {
                match backend.image_inspect(&tag).await {
                    Ok(Some(_)) => Ok(Transferred::Present),
                    Ok(None) => {
                        sink.event(&Event::ImagePullStarted {
                            tag: tag.clone(),
                            reference: reference.clone(),
                        });
                        let pulled = swtbench_backend::pull_as(
                            &backend,
                            &reference,
                            &tag,
                            reg.auth.as_ref(),
                            &progress,
                        )
                        .await;
                        match pulled {
                            Ok(bytes) => {
                                let id = match backend.image_inspect(&tag).await {
                                    Ok(Some(i)) => i.id,
                                    _ => String::new(),
                                };
                                sink.event(&Event::ImageReady {
                                    tag: tag.clone(),
                                    kind: image.kind,
                                    outcome: ImageOutcome::Pulled {
                                        reference: reference.clone(),
                                        id,
                                        duration_ms: started.elapsed().as_millis() as u64,
                                        bytes,
                                    },
                                });
                                Ok(Transferred::Pulled { bytes })
                            }
                            Err(e) => Err(e),
                        }
                    }
                    Err(e) => Err(e),
                }
            };
            (image, r)
        });
    }
    let mut out = Vec::new();
    while let Some(r) = set.join_next().await {
        if let Ok(r) = r {
            out.push(r);
        }
    }
    out.sort_by(|a, b| a.0.kind.cmp(&b.0.kind).then(a.0.tag.cmp(&b.0.tag)));
    out
}
pub use crate::lines::Line;

/// What an `images` command prints: a line per item, the summary, and how many items failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub lines: Vec<Line>,
    pub summary: String,
    /// The items that failed; the engine went away during the work when one says so.
    pub failures: Failures,
}

/// `--level none` selects no image (`what` says what the command would do with them).
pub fn check_level(level: CacheLevel, what: &str) -> Result<()> {
    if level == CacheLevel::None {
        return Err(Error::input(anyhow::anyhow!(
            "--level none {what}; use base, env or instance"
        )));
    }
    Ok(())
}

/// The images `images rm` removes: `--all`, a run's (`--run-id`, of `kinds`), or `kinds`.
pub fn removal(all: bool, run_id: Option<&str>, kinds: &[ImageKind]) -> Result<Removal> {
    if all {
        Ok(Removal::All)
    } else if let Some(r) = run_id {
        Ok(Removal::Run {
            run_id: r.to_string(),
            kinds: kinds.to_vec(),
        })
    } else if !kinds.is_empty() {
        Ok(Removal::Kinds(kinds.to_vec()))
    } else {
        Err(Error::input(anyhow::anyhow!(
            "say which images to remove: --kind K…, --run-id R or --all"
        )))
    }
}

/// The summary of `images rm`.
pub fn removal_summary(found: usize, dry_run: bool, failed: usize) -> String {
    format!(
        "{found} image(s) {}{}",
        if dry_run {
            "would be removed"
        } else {
            "matched"
        },
        if failed > 0 {
            format!(", {failed} could not be removed")
        } else {
            String::new()
        }
    )
}

/// Each instance's rendered spec, or why it could not be rendered.
pub type Specs = Vec<(String, std::result::Result<ExecSpec, SpecError>)>;

/// The specs of `shard` (`images build --shard K/N`): instances that share an env image in one
/// part (see `crate::shards::image_shard`); and the line saying how many of how many.
pub fn shard_specs(specs: Specs, shard: swtbench_plan::settings::Shard) -> (Specs, Line) {
    let keys: Vec<(&str, Option<&str>)> = specs
        .iter()
        .map(|(id, s)| (id.as_str(), s.as_ref().ok().map(|s| s.keys.env.as_str())))
        .collect();
    let mine: Specs = crate::shards::image_shard(&keys, shard)
        .into_iter()
        .map(|i| specs[i].clone())
        .collect();
    let line = format!(
        "shard {shard}: {} of {} instance(s)",
        mine.len(),
        specs.len()
    );
    (mine, Line::Info(line))
}

/// What `images check` prints: a row (or a JSON object) per image, the counts by action.
pub fn check_outcome(checked: &[Checked], json: bool, lookups: usize, secs: f64) -> Outcome {
    let lines = checked
        .iter()
        .map(|c| match json {
            true => Line::Data(serde_json::to_string(c).unwrap_or_default()),
            false => Line::Data(c.row()),
        })
        .collect();
    let count = |a: &str| checked.iter().filter(|c| c.action == a).count();
    Outcome {
        lines,
        summary: format!(
            "{} image(s): {} present, {} to pull, {} to build ({lookups} look-up(s) in {secs:.2} s)",
            checked.len(),
            count("present"),
            count("pull"),
            count("build"),
        ),
        failures: Failures::default(),
    }
}

/// What `images push|pull` prints: what happened to each image, the bytes moved.
pub fn transfer_outcome(
    results: &[(
        SelectedImage,
        std::result::Result<Transferred, BackendError>,
    )],
    push: bool,
) -> Outcome {
    let verb = if push { "pushed" } else { "pulled" };
    let (mut bytes, mut moved) = (0u64, 0);
    let mut lines = Vec::new();
    let mut failures = Failures::default();
    for (image, r) in results {
        match r {
            Ok(t) => {
                let what = match t {
                    Transferred::Pushed { bytes: b } | Transferred::Pulled { bytes: b } => {
                        bytes += b;
                        moved += 1;
                        verb
                    }
                    Transferred::Present => "present",
                };
                lines.push(Line::Data(format!("{what}\t{}", image.tag)));
            }
            Err(e) => {
                failures.record(Some(e));
                lines.push(Line::Warn(format!("{}: {e}", image.tag)));
                lines.push(Line::Data(format!("error\t{}", image.tag)));
            }
        }
    }
    Outcome {
        lines,
        summary: format!(
            "{} image(s): {moved} {verb}, {:.1} MiB, {} failed",
            results.len(),
            bytes as f64 / (1024.0 * 1024.0),
            failures.count
        ),
        failures,
    }
}

/// What `images build` prints: each instance's image or error, the images built and pulled.
pub fn build_outcome(built: &Built) -> Outcome {
    let mut lines: Vec<Line> = built
        .python_images
        .iter()
        .map(|(tag, pulled)| match pulled {
            Ok(()) => Line::Info(crate::registry::python_image_pulled(tag)),
            Err(e) => Line::Warn(crate::registry::python_image_not_pulled(tag, e)),
        })
        .collect();
    let mut failures = Failures::default();
    for (id, r) in &built.results {
        match r {
            Ok(tag) => lines.push(Line::Data(format!("{id}\t{tag}"))),
            Err(e) => {
                failures.record(match e {
                    ImageChainError::Engine(e) => Some(e),
                    _ => None,
                });
                lines.push(Line::Warn(format!("{id}: {e}")));
                lines.push(Line::Data(format!("{id}\terror")));
            }
        }
    }
    Outcome {
        lines,
        summary: format!(
            "{} instance(s): {} image(s) built, {} pulled, {} failed",
            built.results.len(),
            built.images_built,
            built.images_pulled,
            failures.count,
        ),
        failures,
    }
}

/// The container engine of the `images` commands: one runtime and one connection (made first, so
/// that an unreachable engine is one error before any work), and the blocking form of each call.
#[derive(Debug)]
pub struct Engine {
    rt: tokio::runtime::Runtime,
    backend: Arc<swtbench_backend::DockerBackend>,
}

impl Engine {
    /// Connects to the container engine (see [`crate::engine::connect`]).
    pub fn connect() -> Result<Engine> {
        let (rt, backend) = crate::engine::connect_blocking()?;
        Ok(Engine {
            rt,
            backend: Arc::new(backend),
        })
    }

    /// [`list_images`].
    pub fn list(&self, kind: Option<ImageKind>) -> Result<Vec<ImageInfo>> {
        self.rt.block_on(list_images(self.backend.as_ref(), kind))
    }

    /// [`select_images`].
    pub fn select(&self, removal: &Removal) -> Result<Vec<ImageInfo>> {
        self.rt
            .block_on(select_images(self.backend.as_ref(), removal))
    }

    /// [`remove_images`].
    pub fn remove(
        &self,
        images: &[ImageInfo],
        force: bool,
        report: &mut dyn FnMut(&str, std::result::Result<(), BackendError>),
    ) -> Failures {
        self.rt
            .block_on(remove_images(self.backend.as_ref(), images, force, report))
    }

    /// [`build_images`].
    pub fn build(
        &self,
        specs: Vec<(String, std::result::Result<ExecSpec, SpecError>)>,
        options: BuildOptions,
        sink: Arc<dyn EventSink>,
    ) -> Built {
        self.rt
            .block_on(build_images(self.backend.clone(), specs, options, sink))
    }

    /// [`local_presence`].
    pub fn local_presence(
        &self,
        images: &[SelectedImage],
    ) -> Result<std::collections::BTreeMap<String, bool>> {
        self.rt
            .block_on(local_presence(self.backend.as_ref(), images))
    }

    /// `images check`: which of `images` are here and which the registry has (manifest look-ups;
    /// each retry an event on the sink `sink` makes once the engine answered, and a warning).
    pub fn check(
        &self,
        registry: &RegistrySettings,
        images: Vec<SelectedImage>,
        json: bool,
        sink: &mut dyn FnMut() -> Result<Arc<dyn EventSink>>,
        warn: &(dyn Fn(Line) + Sync),
    ) -> Result<Outcome> {
        let local = self.local_presence(&images)?;
        let client = crate::registry::client(registry)?;
        let tags: Vec<String> = images.iter().map(|i| i.tag.clone()).collect();
        let started = std::time::Instant::now();
        let sink = sink()?;
        let found = crate::registry::lookup(&client, &tags, &|tag, note| {
            sink.event(&Event::RegistryRetry {
                what: note.what.clone(),
                status: note.status,
                attempt: note.attempt,
                pause_ms: note.pause.as_millis() as u64,
            });
            warn(Line::Warn(crate::registry::retry_message(tag, note)))
        })?;
        let checked = check_images(images, &local, &found);
        let secs = started.elapsed().as_secs_f64();
        Ok(check_outcome(&checked, json, tags.len(), secs))
    }

    /// `images rm`: the images `removal` selects, named (`dry_run`) or removed, each said as it
    /// goes; the outcome has the summary and the failures.
    pub fn rm(
        &self,
        removal: &Removal,
        force: bool,
        dry_run: bool,
        say: &mut dyn FnMut(Line),
    ) -> Result<Outcome> {
        let found = self.select(removal)?;
        let mut failures = Failures::default();
        if dry_run {
            found.iter().for_each(|i| say(Line::Data(name_of(i))));
        } else {
            failures = self.remove(&found, force, &mut |name, r| {
                say(match r {
                    Ok(()) => Line::Data(format!("removed {name}")),
                    Err(e) => Line::Warn(format!("could not remove {name}: {e}")),
                })
            });
        }
        Ok(Outcome {
            lines: Vec::new(),
            summary: removal_summary(found.len(), dry_run, failures.count),
            failures,
        })
    }

    /// [`transfer_images`].
    pub fn transfer(
        &self,
        registry: &RegistrySettings,
        images: Vec<SelectedImage>,
        push: bool,
        workers: usize,
        sink: Arc<dyn EventSink>,
    ) -> Vec<(
        SelectedImage,
        std::result::Result<Transferred, BackendError>,
    )> {
        self.rt.block_on(transfer_images(
            self.backend.clone(),
            registry,
            images,
            push,
            workers,
            sink,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(id: &str, kind: &str, tag: &str) -> ImageInfo {
        ImageInfo {
            id: id.to_string(),
            tags: vec![tag.to_string()],
            created_unix: 0,
            labels: [(KIND.to_string(), kind.to_string())].into_iter().collect(),
            repo_digests: Vec::new(),
        }
    }

    #[test]
    fn list_lines_are_rows_and_a_count_or_json_objects() {
        let images = [
            image("sha256:0123456789abcdef", "env", "sweb.env.x:latest"),
            image("sha256:fedcba9876543210", "instance", "sweb.eval.y:latest"),
        ];
        let pulls = [("sha256:fedcba9876543210".to_string(), "reg/y".to_string())]
            .into_iter()
            .collect();
        let rows = list_lines(&images, &pulls, false);
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[0],
            Line::Data(format!(
                "{:<9} {:<12} {}",
                "env", "0123456789ab", "sweb.env.x:latest"
            ))
        );
        assert!(matches!(&rows[1], Line::Data(r) if r.ends_with("  (pulled from reg/y)")));
        assert_eq!(rows[2], Line::Info("2 image(s)".to_string()));
        let json = list_lines(&images, &pulls, true);
        assert_eq!(json.len(), 2);
        assert!(
            matches!(&json[1], Line::Data(j) if j.contains("\"source\":\"pulled from reg/y\""))
        );
    }
}
