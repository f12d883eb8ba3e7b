//! The [`Plan`]: what a run will build, execute, reuse and skip, and why, computed before any side
//! effect. `--dry-run` prints it; the executor follows it.
//!
//! Inputs are plain data (instances, predictions, rendered [`ExecSpec`]s, the images that exist)
//! plus a read-only [`OutputLookup`] over the outputs already on disk (content keys of run
//! directories, cached patch extractions; the runner's `DiskOutputs` reads the file system).
//! Planning itself does no I/O: tests hand in an in-memory lookup.
//!
//! Per instance the plan says whether it is evaluated, graded as an empty patch without running
//! anything (§12.9), or skipped (no prediction, no spec, no log parser, no mirror, missing base
//! image, …); how its patch is prepared (on the host for the vanilla type, through the extraction
//! cache otherwise); and for each of the six runs its directory in the original's layout (§4.8), its
//! content key ([`crate::keys`]) and its action: reuse the output on disk, execute it, or copy the
//! output of an earlier run with the same key (gold predictions repeat the gold runs; instances of
//! one repository state share their gold runs).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use swtbench_core::hash::sha256_hex;
use swtbench_core::layout::{
    model_dir_name, InstanceRunKeys, LogsRoot, SharedDirProbe, SharedVariant,
};
use swtbench_core::{Instance, InstanceId, Prediction, RunKind};
use swtbench_grade::Parser;
use swtbench_patch::key::ExtractionKey;
use swtbench_spec::{BaseImage, ExecSpec, ExecSpecJsonContext, RunInputs, SpecError, SpecTable};

use crate::keys::{KeyInputs, HARNESS_VERSION, KEY_FORMAT};
use crate::prebuilt::{PrebuiltImage, PrebuiltInventory, PrebuiltLookup};
use crate::schedule::{estimate_run, Estimate, InstanceCost, Recorded};
use crate::settings::{ImageKind, RunSettings};

/// What exists in a run directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExistingOutput {
    /// No `test_output.txt`.
    Missing,
    /// A complete output with this content key.
    Keyed(String),
    /// A `test_output.txt` without a key file (the original harness's, or an interrupted write).
    Unkeyed,
    /// A `test_output.txt` that is not the one its key file was written with (two processes
    /// wrote the directory at once, or it was edited).
    Inconsistent,
    /// A keyed output of a run that reached a resource limit: the model's outcome in a
    /// prediction run (reused like [`ExistingOutput::Keyed`]), retried in a gold or base run.
    LimitHit(String),
    /// A keyed output made with other container limits that it cannot stand for (tighter ones,
    /// or other ones after it reached a limit): run again.
    OtherLimits,
}

/// Read-only view of the outputs already on disk.
pub trait OutputLookup {
    fn existing(&self, run_dir: &Path) -> ExistingOutput;
    /// [`OutputLookup::existing`] for a run made with `limits`: a keyed output made with limits
    /// it cannot stand for ([`crate::keys::KeyLimits::reusable_under`]) is
    /// [`ExistingOutput::OtherLimits`].
    fn existing_for(&self, run_dir: &Path, _limits: &crate::keys::KeyLimits) -> ExistingOutput {
        self.existing(run_dir)
    }
    /// The cached extraction in an instance's report directory for this key: the patch text.
    fn cached_extraction(&self, report_dir: &Path, key: &ExtractionKey) -> Option<String>;
    /// Whether a repository mirror exists (asked so that a missing mirror is a clear skip
    /// instead of a build failure much later).
    fn mirror_exists(&self, git_dir: &Path) -> bool;
    /// The eval variant of the `eval.sh` in a run directory (`None`: none there).
    fn eval_variant(&self, _run_dir: &Path) -> Option<SharedVariant> {
        None
    }
    /// How long the run whose output is in `run_dir` took, as its key file recorded it (any key:
    /// an estimate for the scheduler, not a reuse).
    fn recorded(&self, _run_dir: &Path) -> Option<Recorded> {
        None
    }
}

/// [`OutputLookup`] over in-memory maps (tests, dry runs of synthetic trees).
#[derive(Debug, Clone, Default)]
pub struct MemoryOutputs {
    pub runs: BTreeMap<PathBuf, ExistingOutput>,
    pub extractions: BTreeMap<PathBuf, String>,
    pub mirrors: Vec<PathBuf>,
    pub durations: BTreeMap<PathBuf, Recorded>,
}

impl OutputLookup for MemoryOutputs {
    fn existing(&self, run_dir: &Path) -> ExistingOutput {
        self.runs
            .get(run_dir)
            .cloned()
            .unwrap_or(ExistingOutput::Missing)
    }
    fn cached_extraction(&self, report_dir: &Path, _key: &ExtractionKey) -> Option<String> {
        self.extractions.get(report_dir).cloned()
    }
    fn mirror_exists(&self, git_dir: &Path) -> bool {
        self.mirrors.iter().any(|m| m == git_dir)
    }
    fn recorded(&self, run_dir: &Path) -> Option<Recorded> {
        self.durations.get(run_dir).copied()
    }
}

/// An image as the engine has it, for planning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExistingImage {
    pub id: String,
    pub created_unix: i64,
    pub labels: BTreeMap<String, String>,
}

impl ExistingImage {
    /// The image as the engine would describe it under `tag`.
    pub fn to_info(&self, tag: &str) -> swtbench_core::engine::ImageInfo {
        swtbench_core::engine::ImageInfo {
            id: self.id.clone(),
            tags: vec![tag.to_string()],
            created_unix: self.created_unix,
            labels: self.labels.clone(),
            repo_digests: Vec::new(),
        }
    }
}

impl From<&swtbench_core::engine::ImageInfo> for ExistingImage {
    fn from(i: &swtbench_core::engine::ImageInfo) -> Self {
        ExistingImage {
            id: i.id.clone(),
            created_unix: i.created_unix,
            labels: i.labels.clone(),
        }
    }
}

/// The images that exist, by tag (`None`: checked, not there).
pub type ImageInventory = BTreeMap<String, Option<ExistingImage>>;

/// Label on env images built on a local base image: the base image's id at build time.
pub const BASE_IMAGE_ID_LABEL: &str = "swtbench.base_image_id";

/// Why an instance is not evaluated: a property of the instance, its prediction or the machine's
/// inputs (spec table, mirrors, local images), not a failure of the run.
///
/// In the plan's JSON each cause is `{"kind": …, "detail": …}` (the detail as text, absent for
/// `no_prediction`); in outcomes and reports it is its text ([`std::fmt::Display`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipCause {
    /// No prediction for it (not part of the run report, as in the original).
    NoPrediction,
    /// No spec was rendered for it (the caller rendered none).
    NoSpec,
    /// The spec table has no entry, or rendering the spec or the eval scripts failed.
    Spec(SpecError),
    /// No log parser for the repository.
    NoParser(ParserError),
    /// `--repo-mirror` has no mirror of the repository (the mirror's path).
    NoMirror(PathBuf),
    /// The spec's local base image does not exist (its tag).
    BaseImageMissing(String),
    /// Patch extraction found nothing to apply: the extraction's summary of why.
    ExtractionFailed(String),
    /// `--instance-image`: the instance has no usable prebuilt image (the dataset row names
    /// none, or the image is neither local nor in its registry): why.
    Prebuilt(String),
}

/// What a missing log parser is fixed with (part of [`SkipCause::NoParser`]'s text).
pub const NO_PARSER_HINT: &str = "set log_parser for it in the spec table";

/// What a missing local base image is fixed with (part of [`SkipCause::BaseImageMissing`]'s
/// text).
pub const BASE_IMAGE_HINT: &str =
    "make it first: `swtbench images base IMAGE`, or `swtbench images python VERSION` for a Python image";

/// The text of a missing local base image (a skip at plan time, an error when it went missing
/// since).
pub fn base_image_missing_text(tag: &str) -> String {
    format!("base image {tag} does not exist ({BASE_IMAGE_HINT})")
}

impl SkipCause {
    /// The `kind` of the plan's JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            SkipCause::NoPrediction => "no_prediction",
            SkipCause::NoSpec | SkipCause::Spec(_) => "spec",
            SkipCause::NoParser(_) => "no_parser",
            SkipCause::NoMirror(_) => "no_mirror",
            SkipCause::BaseImageMissing(_) => "base_image_missing",
            SkipCause::ExtractionFailed(_) => "extraction_failed",
            SkipCause::Prebuilt(_) => "prebuilt_image",
        }
    }

    /// The `detail` of the plan's JSON: the variable part of the text.
    pub fn detail(&self) -> Option<String> {
        match self {
            SkipCause::NoPrediction => None,
            SkipCause::NoSpec => Some("no spec was rendered".into()),
            SkipCause::Spec(e) => Some(e.to_string()),
            SkipCause::NoParser(ParserError::NoneForRepo { repo }) => Some(repo.clone()),
            SkipCause::NoParser(ParserError::Unknown { message, .. }) => Some(message.clone()),
            SkipCause::NoMirror(p) => Some(p.display().to_string()),
            SkipCause::BaseImageMissing(tag) => Some(tag.clone()),
            SkipCause::ExtractionFailed(why) | SkipCause::Prebuilt(why) => Some(why.clone()),
        }
    }

    /// What to do about it, when the text says (it is part of the text).
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            SkipCause::NoParser(_) => Some(NO_PARSER_HINT),
            SkipCause::BaseImageMissing(_) => Some(BASE_IMAGE_HINT),
            _ => None,
        }
    }
}

impl std::fmt::Display for SkipCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipCause::NoPrediction => f.write_str("no prediction"),
            SkipCause::NoSpec => f.write_str("cannot render the environment: no spec was rendered"),
            SkipCause::Spec(e) => write!(f, "cannot render the environment: {e}"),
            // An unknown parser name is named where the repository is for a missing one.
            SkipCause::NoParser(ParserError::NoneForRepo { repo: what })
            | SkipCause::NoParser(ParserError::Unknown { message: what, .. }) => {
                write!(f, "no log parser for repository {what}; {NO_PARSER_HINT}")
            }
            SkipCause::NoMirror(p) => write!(f, "no repository mirror at {}", p.display()),
            SkipCause::BaseImageMissing(tag) => f.write_str(&base_image_missing_text(tag)),
            SkipCause::ExtractionFailed(why) => write!(f, "patch extraction failed: {why}"),
            SkipCause::Prebuilt(why) => f.write_str(why),
        }
    }
}

impl Serialize for SkipCause {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let detail = self.detail();
        let mut map = serializer.serialize_map(Some(1 + usize::from(detail.is_some())))?;
        map.serialize_entry("kind", self.kind())?;
        if let Some(d) = &detail {
            map.serialize_entry("detail", d)?;
        }
        map.end()
    }
}

/// Why a repository has no log parser.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParserError {
    /// The spec table names none and the original's map has none.
    #[error("no log parser for repository {repo}")]
    NoneForRepo { repo: String },
    /// The spec table's `log_parser` is not a known parser (`message` says which name).
    #[error("repository {repo}: {message}")]
    Unknown { repo: String, message: String },
}

/// How the model patch is prepared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PatchPrep {
    /// No usable patch (null, empty or only binary diffs).
    Empty,
    /// The prediction minus binary diffs, on the host (the original's vanilla default).
    Vanilla { sha256: String },
    /// Extracted earlier from the raw output with the same settings (cache hit).
    ExtractedCached { sha256: String },
    /// To be extracted before the runs can be planned.
    Extract,
}

/// What happens to one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum RunAction {
    /// The directory holds an output with the same key.
    Reuse,
    /// The directory holds an output without a key and `reuse_unkeyed` is set.
    ReuseUnkeyed,
    /// Run it.
    Execute,
    /// An earlier run of the plan has the same key; its output is copied.
    SameAs { instance_id: String, run: RunKind },
}

impl RunAction {
    pub fn executes(&self) -> bool {
        matches!(self, RunAction::Execute)
    }
    pub fn reuses(&self) -> bool {
        matches!(self, RunAction::Reuse | RunAction::ReuseUnkeyed)
    }
}

/// One of the six runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunPlan {
    pub kind: RunKind,
    pub dir: PathBuf,
    pub directives: Vec<String>,
    pub key: String,
    #[serde(flatten)]
    pub action: RunAction,
    /// What the key covers, `eval.sh`'s SHA-256 among it. The scripts themselves are not kept:
    /// they hold the model patch, which can be tens of megabytes, so a run's texts are rendered
    /// again when it executes (`swtbench_runner::execute::write_run_inputs`, which checks them
    /// against this hash).
    #[serde(skip)]
    pub key_inputs: KeyInputs,
    /// The container limits the run is made with (recorded in its key file).
    #[serde(skip)]
    pub limits: crate::keys::KeyLimits,
    /// How long it is expected to take, when it executes ([`crate::schedule`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Estimate>,
}

/// The three images of an instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageChainPlan {
    pub base: String,
    /// The base is an existing local image swtbench never builds or removes.
    pub base_external: bool,
    pub env: String,
    pub instance: String,
}

/// What happens to one instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum InstanceAction {
    Skip {
        cause: SkipCause,
    },
    /// Graded as an empty patch; nothing runs.
    EmptyPatch,
    /// The six runs below (all may be reuses).
    Evaluate,
    /// Extract the patch first, then plan and execute the runs.
    ExtractThenEvaluate,
}

/// One instance of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct InstancePlan {
    pub instance_id: String,
    pub repo: String,
    #[serde(flatten)]
    pub action: InstanceAction,
    pub patch: Option<PatchPrep>,
    pub images: Option<ImageChainPlan>,
    pub runs: Vec<RunPlan>,
    /// The unit-test log parser (`None` in reproduction mode or when skipped).
    #[serde(skip)]
    pub parser: Option<Parser>,
    /// The model patch as executed (vanilla or cached extraction). Shared: the plan of an
    /// instance is cloned (the dispatcher, the image prefetcher), a patch can be big.
    #[serde(skip)]
    pub model_patch: Option<Arc<str>>,
    /// The raw model output (kept for extraction).
    #[serde(skip)]
    pub raw_model_patch: Option<Arc<str>>,
    #[serde(skip)]
    pub spec: Option<Box<ExecSpec>>,
    /// `--instance-image`: the prebuilt image the runs start from (then `images` is `None`:
    /// nothing is built for the instance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prebuilt: Option<PrebuiltImage>,
    /// `<logs>/<run_id>/<model>/<instance>`: report.json and extraction files.
    pub report_dir: PathBuf,
    /// What it is expected to cost, when it needs containers (the schedule's order follows it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<InstanceCost>,
}

impl InstancePlan {
    /// Whether the instance belongs to the run report (it has a prediction).
    pub fn in_run(&self) -> bool {
        !matches!(
            self.action,
            InstanceAction::Skip {
                cause: SkipCause::NoPrediction
            }
        )
    }

    /// Whether anything has to run in a container (execution or extraction).
    pub fn needs_containers(&self) -> bool {
        match self.action {
            InstanceAction::ExtractThenEvaluate => true,
            InstanceAction::Evaluate => self.runs.iter().any(|r| !r.action.reuses()),
            _ => false,
        }
    }
}

/// What happens to one image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", content = "reason", rename_all = "snake_case")]
pub enum ImageAction {
    /// It exists and is up to date.
    Reuse,
    Build,
    /// It exists but is rebuilt (forced, or its local base image changed).
    Rebuild(String),
    /// A local base image that exists (never built by swtbench).
    External,
    /// Missing locally and in the registry cache: pulled from this reference (built if the
    /// pull fails).
    Pull(String),
    /// A prebuilt instance image (`--instance-image`) used as it is: `present` locally, or
    /// `pull` (never built).
    Prebuilt(String),
}

/// Which image keys the registry cache has (`--registry`): tag → whether its manifest is there.
pub type RegistryInventory = BTreeMap<String, bool>;

/// One image the run needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImagePlan {
    pub tag: String,
    pub kind: ImageKind,
    #[serde(flatten)]
    pub action: ImageAction,
    /// Instances that need it (sorted).
    pub used_by: Vec<String>,
}

/// Counts for the summary line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PlanCounts {
    pub instances: usize,
    pub evaluate: usize,
    pub empty_patch: usize,
    pub skipped: usize,
    pub extract: usize,
    pub runs_execute: usize,
    pub runs_reuse: usize,
    pub runs_same_as: usize,
    pub images_build: usize,
    pub images_reuse: usize,
    /// Images pulled from the registry cache.
    pub images_pull: usize,
    /// Prebuilt instance images (`--instance-image`) used, and how many of them are pulled.
    pub images_prebuilt: usize,
    pub images_prebuilt_pull: usize,
}

/// The whole plan.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Version of the JSON form (`--dry-run --json`).
    pub format: u32,
    pub run_id: String,
    pub model: String,
    pub model_dir: String,
    pub exec_mode: String,
    pub coverage: bool,
    /// Every test container's resource limits (`null`: none).
    pub limits: crate::keys::KeyLimits,
    /// The limits in words, and how they were chosen.
    pub limits_text: String,
    /// How many test containers run at once.
    pub concurrency: Concurrency,
    /// The instances that need containers, in the order they start (longest expected first).
    pub order: Vec<String>,
    /// The part of the evaluation this plan is (`--shard K/N`), when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardPlan>,
    pub instances: Vec<InstancePlan>,
    pub images: Vec<ImagePlan>,
    pub counts: PlanCounts,
}

/// How many instances of the schedule the plan's text shows.
pub const SCHEDULE_SHOWN: usize = 20;

/// Format version of [`Plan`]'s JSON.
pub const PLAN_FORMAT: u32 = 1;

/// Everything planning reads.
#[derive(Debug, Clone, Copy)]
pub struct PlanInput<'a> {
    pub settings: &'a RunSettings,
    /// `model_name_or_path` of the predictions.
    pub model: &'a str,
    /// The selected instances, in dataset order.
    pub instances: &'a [Instance],
    pub predictions: &'a BTreeMap<InstanceId, Prediction>,
    /// Rendered specs by instance id (`Err`: why it could not be rendered).
    pub specs: &'a BTreeMap<String, Result<ExecSpec, SpecError>>,
    pub table: &'a SpecTable,
    pub images: &'a ImageInventory,
    /// What the registry cache holds (`None`: no registry, or not looked up).
    pub registry: Option<&'a RegistryInventory>,
    /// What is known of the prebuilt images of `--instance-image` (`None`: not looked up).
    pub prebuilt: Option<&'a PrebuiltInventory>,
    /// SHA-256 of the tracer copied into containers (goes into keys when coverage is on).
    pub tracer_sha256: Option<&'a str>,
}

/// The log parser of a repository: the table's `log_parser`, else the original's map.
pub fn parser_for(table: &SpecTable, repo: &str) -> Result<Parser, ParserError> {
    if let Some(name) = table.repos.get(repo).and_then(|r| r.log_parser.as_deref()) {
        return name.parse::<Parser>().map_err(|e| ParserError::Unknown {
            repo: repo.to_string(),
            message: e.to_string(),
        });
    }
    Parser::for_repo(repo).ok_or_else(|| ParserError::NoneForRepo {
        repo: repo.to_string(),
    })
}

/// The model patch to execute for a prediction in vanilla mode; `None` when nothing usable.
/// (`swtbench_patch::vanilla::passthrough`, which `swtbench extract --patch-types vanilla`
/// writes too).
pub fn vanilla_patch(prediction: &Prediction) -> Option<String> {
    swtbench_patch::vanilla::passthrough(prediction.model_patch.as_deref()?)
}

/// Plans a run.
pub fn plan(input: &PlanInput<'_>, outputs: &dyn OutputLookup) -> Plan {
    let settings = input.settings;
    let model_dir = model_dir_name(input.model);
    let logs = LogsRoot::new(&settings.outputs.logs);
    let mut seen: HashMap<String, (String, RunKind)> = HashMap::new();
    let mut instances = Vec::with_capacity(input.instances.len());
    for instance in input.instances {
        let id = instance.instance_id.as_str();
        let report_dir = logs.instance_report_dir(&settings.run_id, &model_dir, id);
        let mut ip = InstancePlan {
            instance_id: id.to_string(),
            repo: instance.repo.clone(),
            action: InstanceAction::Evaluate,
            patch: None,
            images: None,
            runs: Vec::new(),
            parser: None,
            model_patch: None,
            raw_model_patch: None,
            spec: None,
            prebuilt: None,
            report_dir,
            cost: None,
        };
        plan_instance(input, outputs, &logs, &model_dir, instance, &mut ip);
        for run in &mut ip.runs {
            // Runs that will produce an output point at the first run of the plan with their key.
            if matches!(run.action, RunAction::Execute | RunAction::SameAs { .. }) {
                match seen.get(&run.key) {
                    Some((other, kind)) => {
                        run.action = RunAction::SameAs {
                            instance_id: other.clone(),
                            run: *kind,
                        }
                    }
                    None => {
                        seen.insert(run.key.clone(), (id.to_string(), run.kind));
                    }
                }
            } else if run.action.reuses() {
                seen.entry(run.key.clone())
                    .or_insert_with(|| (id.to_string(), run.kind));
            }
        }
        instances.push(ip);
    }
    let images = plan_images(input, &instances);
    let timeout_ms = settings.exec.timeout.as_millis() as u64;
    for ip in &mut instances {
        estimate_runs(&mut ip.runs, &ip.repo, timeout_ms, outputs);
    }
    let built: std::collections::BTreeSet<&str> = images
        .iter()
        .filter(|i| matches!(i.action, ImageAction::Build | ImageAction::Rebuild(_)))
        .map(|i| i.tag.as_str())
        .collect();
    let costs: Vec<Option<InstanceCost>> = instances
        .iter()
        .map(|ip| instance_cost(ip, &built, timeout_ms))
        .collect();
    for (ip, cost) in instances.iter_mut().zip(&costs) {
        ip.cost = *cost;
    }
    let order = schedule_order(&instances);
    let counts = count(&instances, &images);
    Plan {
        format: PLAN_FORMAT,
        run_id: settings.run_id.clone(),
        model: input.model.to_string(),
        model_dir,
        exec_mode: settings.eval.exec_mode.as_str().to_string(),
        coverage: settings.eval.coverage,
        limits: settings.exec.limits.into(),
        limits_text: match &settings.exec.limits_note {
            Some(note) => format!(
                "{} ({note})",
                crate::limits::describe(&settings.exec.limits)
            ),
            None => crate::limits::describe(&settings.exec.limits),
        },
        concurrency: Concurrency::of(settings),
        order,
        shard: None,
        instances,
        images,
        counts,
    }
}

/// The expected duration of each run that executes, from what the run directories recorded.
pub fn estimate_runs(
    runs: &mut [RunPlan],
    repo: &str,
    timeout_ms: u64,
    outputs: &dyn OutputLookup,
) {
    let recorded: Vec<(RunKind, Recorded)> = runs
        .iter()
        .filter_map(|r| Some((r.kind, outputs.recorded(&r.dir)?)))
        .collect();
    for run in runs.iter_mut() {
        run.expected = run.action.executes().then(|| {
            let own = recorded
                .iter()
                .find(|(k, _)| *k == run.kind)
                .map(|(_, r)| *r);
            let others: Vec<(RunKind, Recorded)> = recorded
                .iter()
                .filter(|(k, _)| *k != run.kind)
                .copied()
                .collect();
            estimate_run(run.kind, own, &others, repo, timeout_ms)
        });
    }
}

/// What an instance that needs containers is expected to cost: the images the plan builds for
/// it, and its runs that execute (a run copied from another one costs nothing; the runs of an
/// instance whose patch is extracted first are not planned yet and count at the repository's
/// figures).
fn instance_cost(
    ip: &InstancePlan,
    built: &std::collections::BTreeSet<&str>,
    timeout_ms: u64,
) -> Option<InstanceCost> {
    if !ip.needs_containers() {
        return None;
    }
    let runs: Vec<u64> = match ip.action {
        InstanceAction::ExtractThenEvaluate => RunKind::ALL
            .iter()
            .map(|k| estimate_run(*k, None, &[], &ip.repo, timeout_ms).ms)
            .collect(),
        _ => ip
            .runs
            .iter()
            .filter_map(|r| r.expected.map(|e| e.ms))
            .collect(),
    };
    let chain = ip.images.as_ref();
    let builds = |tag: Option<&String>| tag.is_some_and(|t| built.contains(t.as_str()));
    Some(InstanceCost::new(
        &runs,
        builds(chain.map(|c| &c.env)),
        builds(chain.map(|c| &c.instance)),
    ))
}

/// The instances that need containers, in the order they start: the longest expected first.
fn schedule_order(instances: &[InstancePlan]) -> Vec<String> {
    let with_cost: Vec<(&InstancePlan, InstanceCost)> = instances
        .iter()
        .filter_map(|ip| Some((ip, ip.cost?)))
        .collect();
    let costs: Vec<InstanceCost> = with_cost.iter().map(|(_, c)| *c).collect();
    crate::schedule::order_instances(&costs)
        .into_iter()
        .map(|i| with_cost[i].0.instance_id.clone())
        .collect()
}

/// This shard among the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShardPlan {
    pub index: usize,
    pub count: usize,
    /// Instances of the whole evaluation.
    pub of_instances: usize,
    /// Expected work (image builds and runs) of each shard, in ms, shard 1 first.
    pub work_ms: Vec<u64>,
}

/// How many test containers run at once, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Concurrency {
    pub containers: usize,
    /// The host memory the containers' memory limits share (`null`: not known, or no limit).
    pub memory_budget: Option<u64>,
    /// Why it is that many, for people.
    pub text: String,
}

impl Concurrency {
    pub fn of(settings: &RunSettings) -> Concurrency {
        let workers = settings.max_workers.max(1);
        let limit = settings.exec.limits.memory_bytes;
        let budget = settings.memory_budget;
        let containers = crate::schedule::containers_at_once(workers, limit, budget);
        let text = match (limit, budget) {
            (Some(l), Some(b)) if containers < workers => format!(
                "{containers} container(s) at once: {workers} workers, but {containers} × {} of \
                 memory limit is what the host's {} hold",
                crate::limits::human_bytes(l),
                crate::limits::human_bytes(b)
            ),
            _ => format!("{containers} container(s) at once (--max-workers)"),
        };
        Concurrency {
            containers,
            memory_budget: budget.filter(|_| limit.is_some()),
            text,
        }
    }
}

/// What is left to do after the patch step of an instance.
enum PatchStep {
    /// The instance is settled (empty patch, or skipped).
    Settled,
    /// Execute this patch.
    Execute(String),
    /// Extract the patch first.
    Extract,
}

/// How the model patch of an instance is prepared (`ip.patch`, and `ip.action` when that settles
/// the instance).
fn plan_patch(
    settings: &RunSettings,
    outputs: &dyn OutputLookup,
    prediction: &Prediction,
    ip: &mut InstancePlan,
) -> PatchStep {
    let empty = |ip: &mut InstancePlan| {
        ip.patch = Some(PatchPrep::Empty);
        ip.action = InstanceAction::EmptyPatch;
        PatchStep::Settled
    };
    if !swtbench_patch::needs_extraction(&settings.patch_types) {
        let Some(p) = vanilla_patch(prediction) else {
            return empty(ip);
        };
        ip.patch = Some(PatchPrep::Vanilla {
            sha256: sha256_hex(&p),
        });
        return PatchStep::Execute(p);
    }
    let raw = prediction.model_patch.as_deref().unwrap_or("");
    if raw.trim().is_empty() {
        return empty(ip);
    }
    ip.raw_model_patch = Some(Arc::from(raw));
    let key = ExtractionKey::new(raw, &settings.patch_types, &settings.extract);
    match outputs.cached_extraction(&ip.report_dir, &key) {
        Some(p) if p.trim().is_empty() => {
            ip.action = InstanceAction::Skip {
                cause: SkipCause::ExtractionFailed("no patch type produced a change".into()),
            };
            PatchStep::Settled
        }
        Some(p) => {
            ip.patch = Some(PatchPrep::ExtractedCached {
                sha256: sha256_hex(&p),
            });
            PatchStep::Execute(p)
        }
        None => {
            ip.patch = Some(PatchPrep::Extract);
            PatchStep::Extract
        }
    }
}

fn plan_instance(
    input: &PlanInput<'_>,
    outputs: &dyn OutputLookup,
    logs: &LogsRoot,
    model_dir: &str,
    instance: &Instance,
    ip: &mut InstancePlan,
) {
    let settings = input.settings;
    let skip = |ip: &mut InstancePlan, cause: SkipCause| ip.action = InstanceAction::Skip { cause };
    let Some(prediction) = input.predictions.get(&instance.instance_id) else {
        return skip(ip, SkipCause::NoPrediction);
    };
    let spec = match input.specs.get(instance.instance_id.as_str()) {
        Some(Ok(spec)) => spec,
        Some(Err(e)) => return skip(ip, SkipCause::Spec(e.clone())),
        None => return skip(ip, SkipCause::NoSpec),
    };
    if matches!(settings.grade_mode(), swtbench_grade::ExecMode::UnitTest) {
        match parser_for(input.table, &instance.repo) {
            Ok(p) => ip.parser = Some(p),
            Err(e) => return skip(ip, SkipCause::NoParser(e)),
        }
    }
    // The patch first: an empty patch is graded without images or mirrors.
    let model_patch = match plan_patch(settings, outputs, prediction, ip) {
        PatchStep::Settled => return,
        PatchStep::Execute(p) => Some(p),
        PatchStep::Extract => None,
    };
    if let Some(pre) = &settings.images.prebuilt {
        return plan_prebuilt(
            input,
            outputs,
            logs,
            model_dir,
            instance,
            spec,
            model_patch,
            pre,
            ip,
        );
    }
    if let Some(mirror) = &settings.images.repo_mirror {
        let dir = mirror.join(format!("{}.git", instance.repo_dir_name()));
        let instance_image_exists = input
            .images
            .get(&spec.keys.instance)
            .is_some_and(Option::is_some);
        // A mirror is needed only to build the instance image.
        let needs_build = !instance_image_exists || settings.images.force_rebuild;
        if needs_build && !settings.skip_eval && !outputs.mirror_exists(&dir) {
            return skip(ip, SkipCause::NoMirror(dir));
        }
    }
    let base_external = matches!(spec.spec.base, BaseImage::Image(_));
    let base_image_id = if base_external {
        match input.images.get(&spec.keys.base) {
            Some(Some(img)) => Some(img.id.clone()),
            // Not looked up (a dry run that could not reach the engine): not known to be missing.
            None => None,
            _ if settings.skip_eval => None,
            _ => return skip(ip, SkipCause::BaseImageMissing(spec.keys.base.clone())),
        }
    } else {
        None
    };
    ip.images = Some(ImageChainPlan {
        base: spec.keys.base.clone(),
        base_external,
        env: spec.keys.env.clone(),
        instance: spec.keys.instance.clone(),
    });
    ip.spec = Some(Box::new(spec.clone()));
    match model_patch {
        None => ip.action = InstanceAction::ExtractThenEvaluate,
        Some(patch) => {
            let ctx = RunContext {
                settings,
                logs,
                model_dir,
                tracer_sha256: input.tracer_sha256,
                base_image_id: base_image_id.as_deref(),
                prebuilt: None,
            };
            match plan_runs(&ctx, instance, spec, &patch, outputs) {
                Ok(runs) => {
                    ip.runs = runs;
                    ip.model_patch = Some(Arc::from(patch));
                    ip.action = InstanceAction::Evaluate;
                }
                Err(e) => skip(ip, SkipCause::Spec(e)),
            }
        }
    }
}

/// The spec of an instance run on a prebuilt image: its scripts activate conda as SWE-bench's
/// images want (`source /opt/miniconda3/bin/activate`, `conda activate testbed`), whatever the
/// table's provider.
pub fn prebuilt_spec(spec: &ExecSpec) -> ExecSpec {
    let mut spec = spec.clone();
    spec.spec.provider = swtbench_spec::Provider::Conda;
    spec
}

/// [`plan_instance`] for `--instance-image`: no images are built; the runs start from the
/// prebuilt image and their keys hold its digest.
#[expect(
    clippy::too_many_arguments,
    reason = "the inputs of plan_instance it stands in for, and the plan it fills"
)]
fn plan_prebuilt(
    input: &PlanInput<'_>,
    outputs: &dyn OutputLookup,
    logs: &LogsRoot,
    model_dir: &str,
    instance: &Instance,
    spec: &ExecSpec,
    model_patch: Option<String>,
    pre: &crate::prebuilt::PrebuiltSettings,
    ip: &mut InstancePlan,
) {
    let skip = |ip: &mut InstancePlan, why: String| {
        ip.action = InstanceAction::Skip {
            cause: SkipCause::Prebuilt(why),
        }
    };
    let Some(reference) = crate::prebuilt::reference_for(&pre.source, instance) else {
        return skip(
            ip,
            format!(
                "--instance-image dataset: the dataset row names no image (none of the columns {})",
                crate::prebuilt::DATASET_IMAGE_FIELDS.join(", ")
            ),
        );
    };
    let lookup = input
        .prebuilt
        .and_then(|p| p.get(&reference))
        .cloned()
        .unwrap_or(PrebuiltLookup::Unknown);
    if let Some(why) = crate::prebuilt::unavailable_text(&reference, &lookup) {
        if !input.settings.skip_eval {
            return skip(ip, why);
        }
    }
    let image = PrebuiltImage {
        digest: match &lookup {
            PrebuiltLookup::Local { digest } => Some(digest.clone()),
            PrebuiltLookup::Remote { digest } => digest.clone(),
            _ => None,
        },
        pull: !matches!(lookup, PrebuiltLookup::Local { .. }),
        reference,
    };
    let spec = prebuilt_spec(spec);
    ip.spec = Some(Box::new(spec.clone()));
    let Some(patch) = model_patch else {
        ip.prebuilt = Some(image);
        ip.action = InstanceAction::ExtractThenEvaluate;
        return;
    };
    let ctx = RunContext {
        settings: input.settings,
        logs,
        model_dir,
        tracer_sha256: input.tracer_sha256,
        base_image_id: None,
        prebuilt: Some(&image),
    };
    match plan_runs(&ctx, instance, &spec, &patch, outputs) {
        Ok(runs) => {
            ip.runs = runs;
            ip.model_patch = Some(Arc::from(patch));
            ip.action = InstanceAction::Evaluate;
            ip.prebuilt = Some(image);
        }
        Err(e) => skip_spec(ip, e),
    }
}

fn skip_spec(ip: &mut InstancePlan, e: SpecError) {
    ip.action = InstanceAction::Skip {
        cause: SkipCause::Spec(e),
    };
}

/// What planning the six runs of an instance needs besides the instance.
#[derive(Debug, Clone, Copy)]
pub struct RunContext<'a> {
    pub settings: &'a RunSettings,
    pub logs: &'a LogsRoot,
    pub model_dir: &'a str,
    pub tracer_sha256: Option<&'a str>,
    pub base_image_id: Option<&'a str>,
    /// The prebuilt image the runs start from: its digest stands in the keys for the instance
    /// image key.
    pub prebuilt: Option<&'a PrebuiltImage>,
}

/// A rendered run's directives and content key (which does not depend on the run's directory);
/// its texts are dropped once hashed.
struct KeyedRun {
    kind: RunKind,
    directives: Vec<String>,
    directives_hash: String,
    inputs: KeyInputs,
    key: String,
}

impl KeyedRun {
    fn new(ctx: &RunContext<'_>, spec: &ExecSpec, rendered: swtbench_spec::RenderedRun) -> Self {
        let settings = ctx.settings;
        let inputs = KeyInputs {
            format: KEY_FORMAT,
            harness: HARNESS_VERSION.to_string(),
            instance_image: match ctx.prebuilt {
                Some(p) => p.key_identity(),
                None => spec.keys.instance.clone(),
            },
            base_image_id: ctx.base_image_id.map(str::to_string),
            eval_script_sha256: sha256_hex(&rendered.eval_script),
            user: spec.user().to_string(),
            tracer_sha256: if settings.eval.coverage {
                ctx.tracer_sha256.map(str::to_string)
            } else {
                None
            },
            timeout_secs: settings.exec.timeout.as_secs(),
            network: settings.exec.allow_network,
            max_output: settings.exec.max_output,
            test_ca_sha256: settings.exec.test_ca.as_ref().map(|c| c.sha256.clone()),
        };
        KeyedRun {
            key: inputs.key(),
            inputs,
            kind: rendered.kind,
            directives: rendered.directives,
            directives_hash: rendered.directives_hash,
        }
    }
}

/// The six runs of an instance with `model_patch` (already prepared): directories, keys and
/// actions. Runs of this instance with the same key as an earlier one become `SameAs`.
pub fn plan_runs(
    ctx: &RunContext<'_>,
    instance: &Instance,
    spec: &ExecSpec,
    model_patch: &str,
    outputs: &dyn OutputLookup,
) -> Result<Vec<RunPlan>, SpecError> {
    let settings = ctx.settings;
    let inputs = RunInputs {
        model_patch,
        gold_test_patch: &instance.golden_test_patch,
        gold_code_patch: &instance.golden_code_patch,
    };
    // One run at a time, so that only one rendering of a big patch is in memory.
    let keyed: Vec<KeyedRun> = RunKind::ALL
        .into_iter()
        .map(|kind| {
            spec.render_run(kind, &inputs, &settings.eval)
                .map(|r| KeyedRun::new(ctx, spec, r))
        })
        .collect::<Result<_, _>>()?;
    let hash_of = |kind: RunKind| {
        keyed
            .iter()
            .find(|r| r.kind == kind)
            .map(|r| r.directives_hash.clone())
            .unwrap_or_default()
    };
    let id = instance.instance_id.as_str();
    let pair = SharedPair {
        ctx,
        instance_id: id,
        outputs,
        keyed: &keyed,
    };
    let gold_key = pair.dir_key(
        [RunKind::GoldPre, RunKind::GoldPost],
        &hash_of(RunKind::GoldPre),
    );
    let base_key = pair.dir_key(
        [RunKind::BasePre, RunKind::BasePost],
        &hash_of(RunKind::BasePre),
    );
    let keys = InstanceRunKeys {
        run_id: &settings.run_id,
        model_dir: ctx.model_dir,
        instance_id: id,
        gold_hash: &gold_key,
        base_hash: &base_key,
    };
    let mut runs: Vec<RunPlan> = Vec::with_capacity(6);
    for KeyedRun {
        kind,
        directives,
        inputs: key_inputs,
        key,
        ..
    } in keyed
    {
        let dir = ctx.logs.run_dir(&keys, kind);
        let action = run_action(
            settings,
            outputs.existing_for(&dir, &settings.exec.limits.into()),
            &key,
            &runs,
            id,
            kind.is_shared(),
        );
        runs.push(RunPlan {
            kind,
            dir,
            directives,
            key,
            action,
            key_inputs,
            limits: settings.exec.limits.into(),
            expected: None,
        });
    }
    Ok(runs)
}

/// The `exec_spec.json` context of a run of `settings` for the model directory `model_dir`.
pub fn exec_spec_context(settings: &RunSettings, model_dir: &str) -> ExecSpecJsonContext {
    ExecSpecJsonContext {
        run_id: Some(settings.run_id.clone()),
        model_dir: model_dir.to_string(),
        timeout: Some(settings.exec.timeout.as_secs()),
        rm_image: !settings.images.cache_level.keeps(ImageKind::Instance),
        force_rebuild: settings.images.force_rebuild,
    }
}

/// What happens to a run whose directory holds `existing`, after the runs planned before it.
fn run_action(
    settings: &RunSettings,
    existing: ExistingOutput,
    key: &str,
    earlier: &[RunPlan],
    instance_id: &str,
    shared: bool,
) -> RunAction {
    if settings.skip_eval {
        // Only grading: whatever output is there is read, as the original does.
        return match existing {
            ExistingOutput::Keyed(k) | ExistingOutput::LimitHit(k) if k == key => RunAction::Reuse,
            ExistingOutput::Keyed(_)
            | ExistingOutput::LimitHit(_)
            | ExistingOutput::OtherLimits
            | ExistingOutput::Unkeyed
            | ExistingOutput::Inconsistent => RunAction::ReuseUnkeyed,
            ExistingOutput::Missing => RunAction::Execute,
        };
    }
    match existing {
        ExistingOutput::Keyed(k) if k == key => RunAction::Reuse,
        // A limit hit is the prediction's outcome; the benchmark's own runs are tried again.
        ExistingOutput::LimitHit(k) if k == key && !shared => RunAction::Reuse,
        ExistingOutput::Unkeyed if settings.reuse_unkeyed => RunAction::ReuseUnkeyed,
        _ => match earlier.iter().find(|p| p.key == key) {
            Some(p) => RunAction::SameAs {
                instance_id: instance_id.to_string(),
                run: p.kind,
            },
            None => RunAction::Execute,
        },
    }
}

/// Where a pair of shared runs (gold or base, before and after) of an instance goes.
struct SharedPair<'a> {
    ctx: &'a RunContext<'a>,
    instance_id: &'a str,
    outputs: &'a dyn OutputLookup,
    keyed: &'a [KeyedRun],
}

impl SharedPair<'_> {
    fn key_of(&self, kind: RunKind) -> &str {
        self.keyed
            .iter()
            .find(|r| r.kind == kind)
            .map(|r| r.key.as_str())
            .unwrap_or_default()
    }

    /// Whether a run with `existing` in its directory would be reused by this evaluation.
    fn reusable(&self, kind: RunKind, existing: ExistingOutput) -> bool {
        let settings = self.ctx.settings;
        match existing {
            ExistingOutput::Keyed(k) => k == self.key_of(kind) || settings.skip_eval,
            // Shared runs that reached a limit are run again.
            ExistingOutput::LimitHit(_) => settings.skip_eval,
            ExistingOutput::Unkeyed => settings.reuse_unkeyed || settings.skip_eval,
            ExistingOutput::Inconsistent | ExistingOutput::OtherLimits => settings.skip_eval,
            ExistingOutput::Missing => false,
        }
    }

    /// The pair's directory key: its variant's, or the plain one of an older tree when both its
    /// outputs there are ones this evaluation would reuse and its script is of this variant.
    /// Non-default eval variants (reproduction mode, no coverage, fixed tracer) keep their
    /// shared runs apart from the default ones instead of replacing them.
    fn dir_key(&self, pair: [RunKind; 2], hash: &str) -> String {
        let settings = self.ctx.settings;
        let variant = settings.eval.shared_variant();
        let own = variant.dir_key(hash);
        let dir =
            |kind: RunKind, key: &str| self.ctx.logs.shared_run_dir(kind, self.instance_id, key);
        variant.resolve_pair_key(hash, true, |key| {
            let dirs = pair.map(|kind| dir(kind, key));
            let has_output = if key == own {
                dirs.iter()
                    .any(|d| self.outputs.existing(d) != ExistingOutput::Missing)
            } else {
                // The plain directory counts only when both runs there would be reused.
                pair.iter().zip(&dirs).all(|(kind, d)| {
                    let limits = self.ctx.settings.exec.limits.into();
                    self.reusable(*kind, self.outputs.existing_for(d, &limits))
                })
            };
            // Without a script only --skip-eval takes what is there, as `grade` does.
            let unknown = (!settings.skip_eval).then_some(SharedVariant::DEFAULT);
            SharedDirProbe {
                has_output,
                variant: dirs
                    .iter()
                    .find_map(|d| self.outputs.eval_variant(d))
                    .or(unknown),
            }
        })
    }
}

fn plan_images(input: &PlanInput<'_>, instances: &[InstancePlan]) -> Vec<ImagePlan> {
    let settings = input.settings;
    let mut by_tag: BTreeMap<String, ImagePlan> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut add = |tag: &str, kind: ImageKind, action: ImageAction, who: &str| {
        let entry = by_tag.entry(tag.to_string()).or_insert_with(|| {
            order.push(tag.to_string());
            ImagePlan {
                tag: tag.to_string(),
                kind,
                action,
                used_by: Vec::new(),
            }
        });
        entry.used_by.push(who.to_string());
    };
    let exists = |tag: &str| input.images.get(tag).and_then(Option::as_ref);
    for ip in instances.iter().filter(|i| i.needs_containers()) {
        if let Some(p) = &ip.prebuilt {
            let how = if p.pull { "pull" } else { "present" };
            add(
                &p.reference,
                ImageKind::Instance,
                ImageAction::Prebuilt(how.into()),
                &ip.instance_id,
            );
        }
    }
    for ip in instances.iter().filter(|i| i.needs_containers()) {
        let Some(chain) = &ip.images else { continue };
        let id = ip.instance_id.as_str();
        let plain = |tag: &str| match exists(tag) {
            Some(_) if settings.images.force_rebuild => ImageAction::Rebuild("forced".into()),
            Some(_) => ImageAction::Reuse,
            None => match (&settings.images.registry, input.registry) {
                (Some(reg), Some(inv))
                    if !settings.images.force_rebuild && inv.get(tag) == Some(&true) =>
                {
                    ImageAction::Pull(reg.reference(tag))
                }
                _ => ImageAction::Build,
            },
        };
        let base_id = if chain.base_external {
            add(&chain.base, ImageKind::Base, ImageAction::External, id);
            exists(&chain.base).map(|i| i.id.clone())
        } else {
            add(&chain.base, ImageKind::Base, plain(&chain.base), id);
            None
        };
        let env_action = match (exists(&chain.env), &base_id) {
            (Some(env), Some(base_id))
                if env
                    .labels
                    .get(BASE_IMAGE_ID_LABEL)
                    .is_some_and(|l| l != base_id) =>
            {
                ImageAction::Rebuild(format!("its base image {} changed", chain.base))
            }
            _ => plain(&chain.env),
        };
        add(&chain.env, ImageKind::Env, env_action, id);
        add(
            &chain.instance,
            ImageKind::Instance,
            plain(&chain.instance),
            id,
        );
    }
    rebuild_children(input, instances, &mut by_tag);
    let mut out: Vec<ImagePlan> = order
        .into_iter()
        .filter_map(|t| by_tag.remove(&t))
        .collect();
    for i in &mut out {
        i.used_by.sort();
        i.used_by.dedup();
    }
    out.sort_by(|a, b| a.kind.cmp(&b.kind).then(a.tag.cmp(&b.tag)));
    out
}

/// Marks for a rebuild the images of `by_tag` that are reused although their parent is (re)built,
/// or older than their parent (the builder's staleness rule: the parent was rebuilt by someone
/// else since).
fn rebuild_children(
    input: &PlanInput<'_>,
    instances: &[InstancePlan],
    by_tag: &mut BTreeMap<String, ImagePlan>,
) {
    let exists = |tag: &str| input.images.get(tag).and_then(Option::as_ref);
    // A child of a (re)built image is rebuilt too, and so is a child older than its parent (the
    // builder's staleness rule: the parent was rebuilt by someone else since).
    let mut rebuilt: Vec<String> = Vec::new();
    for ip in instances.iter().filter(|i| i.needs_containers()) {
        let Some(chain) = &ip.images else { continue };
        let links = [(&chain.base, &chain.env), (&chain.env, &chain.instance)];
        for (parent, child) in links {
            if let (Some(p), Some(c)) = (exists(parent), exists(child)) {
                if p.created_unix > c.created_unix {
                    if let Some(c) = by_tag.get_mut(child.as_str()) {
                        if c.action == ImageAction::Reuse {
                            c.action = ImageAction::Rebuild(format!("older than {parent}"));
                        }
                    }
                }
            }
            let parent_built = rebuilt.contains(parent)
                || matches!(
                    by_tag.get(parent.as_str()).map(|p| &p.action),
                    Some(ImageAction::Build | ImageAction::Rebuild(_))
                );
            if parent_built {
                if let Some(c) = by_tag.get_mut(child.as_str()) {
                    if c.action == ImageAction::Reuse {
                        c.action = ImageAction::Rebuild(format!("{parent} is (re)built"));
                    }
                }
                rebuilt.push(child.clone());
            }
        }
    }
}

fn count(instances: &[InstancePlan], images: &[ImagePlan]) -> PlanCounts {
    let mut c = PlanCounts::default();
    for i in instances.iter().filter(|i| i.in_run()) {
        c.instances += 1;
        match &i.action {
            InstanceAction::Skip { .. } => c.skipped += 1,
            InstanceAction::EmptyPatch => c.empty_patch += 1,
            InstanceAction::Evaluate => c.evaluate += 1,
            InstanceAction::ExtractThenEvaluate => {
                c.evaluate += 1;
                c.extract += 1;
            }
        }
        for r in &i.runs {
            match r.action {
                RunAction::Execute => c.runs_execute += 1,
                RunAction::Reuse | RunAction::ReuseUnkeyed => c.runs_reuse += 1,
                RunAction::SameAs { .. } => c.runs_same_as += 1,
            }
        }
    }
    for img in images {
        match img.action {
            ImageAction::Build | ImageAction::Rebuild(_) => c.images_build += 1,
            ImageAction::Reuse => c.images_reuse += 1,
            ImageAction::Pull(_) => c.images_pull += 1,
            ImageAction::Prebuilt(ref how) => {
                c.images_prebuilt += 1;
                if how == "pull" {
                    c.images_prebuilt_pull += 1;
                }
            }
            ImageAction::External => {}
        }
    }
    c
}

impl Plan {
    /// The plan as pretty JSON (the `--dry-run --json` output), with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// The plan for people: one line per instance and image, then the counts.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "plan for run {} of model {} ({} mode, coverage {}):",
            self.run_id,
            self.model,
            self.exec_mode,
            if self.coverage { "on" } else { "off" }
        );
        let _ = writeln!(s, "  container limits: {}", self.limits_text);
        if let Some(sh) = &self.shard {
            let work: Vec<String> = sh
                .work_ms
                .iter()
                .map(|ms| format!("~{}", crate::schedule::describe_ms(*ms)))
                .collect();
            let _ = writeln!(
                s,
                "  shard {}/{}: {} of the {} instance(s); expected work of the shards: {}",
                sh.index,
                sh.count,
                self.counts.instances,
                sh.of_instances,
                work.join(", ")
            );
        }
        for i in &self.instances {
            let what = instance_action_text(i);
            let _ = writeln!(s, "  {}: {what}", i.instance_id);
            if let Some(p) = &i.prebuilt {
                let _ = writeln!(
                    s,
                    "    on prebuilt image {} ({}; keys hold {})",
                    p.reference,
                    if p.pull { "to pull" } else { "present" },
                    p.key_identity()
                );
            }
        }
        if !self.images.is_empty() {
            let _ = writeln!(s, "images:");
            for img in &self.images {
                let a = image_action_text(&img.action);
                let _ = writeln!(
                    s,
                    "  {} {}: {a} (used by {} instance(s))",
                    img.kind.as_str(),
                    img.tag,
                    img.used_by.len()
                );
                if img.kind == ImageKind::Base
                    && matches!(img.action, ImageAction::Build | ImageAction::Rebuild(_))
                {
                    let _ = writeln!(
                        s,
                        "    its build starts FROM {}: Docker Hub (registry-1.docker.io) must be \
                         reachable from the engine unless it has that image; without Docker Hub, \
                         --env-provider uv builds on local Python images (`swtbench images python \
                         VERSION`)",
                        swtbench_spec::render::CONDA_BASE_FROM
                    );
                }
            }
        }
        s.push_str(&self.schedule_text());
        let c = &self.counts;
        let _ = writeln!(
            s,
            "{} instance(s): {} to evaluate ({} need extraction), {} empty patch, {} skipped; runs: {} to execute, {} reused, {} copied from identical runs; images: {} to build, {} to reuse",
            c.instances,
            c.evaluate,
            c.extract,
            c.empty_patch,
            c.skipped,
            c.runs_execute,
            c.runs_reuse,
            c.runs_same_as,
            c.images_build,
            c.images_reuse
        );
        if c.images_pull > 0 {
            // Only with a registry cache: the line stays as it was without one.
            s.truncate(s.trim_end_matches('\n').len());
            let _ = writeln!(s, ", {} to pull", c.images_pull);
        }
        if c.images_prebuilt > 0 {
            s.truncate(s.trim_end_matches('\n').len());
            let _ = writeln!(
                s,
                ", {} prebuilt ({} to pull)",
                c.images_prebuilt, c.images_prebuilt_pull
            );
        }
        s
    }

    /// The order instances start in, with their estimates (the first [`SCHEDULE_SHOWN`]; the
    /// JSON form has them all).
    fn schedule_text(&self) -> String {
        use crate::schedule::describe_ms;
        use std::fmt::Write;
        let mut s = String::new();
        if self.order.is_empty() {
            return s;
        }
        let _ = writeln!(
            s,
            "schedule: {}; longest expected first (image builds, then the longest run):",
            self.concurrency.text
        );
        for (n, id) in self.order.iter().take(SCHEDULE_SHOWN).enumerate() {
            let Some(ip) = self.instance(id) else {
                continue;
            };
            let Some(cost) = ip.cost else { continue };
            let mut what = Vec::new();
            if cost.build_ms > 0 {
                what.push(format!("builds ~{}", describe_ms(cost.build_ms)));
            }
            let longest = ip
                .runs
                .iter()
                .filter_map(|r| Some((r.kind, r.expected?)))
                .fold(None, |best: Option<(RunKind, Estimate)>, run| match best {
                    // The first of equals, in the plan's order.
                    Some(b) if b.1.ms >= run.1.ms => Some(b),
                    _ => Some(run),
                });
            match longest {
                Some((kind, e)) => what.push(format!(
                    "longest run {kind} ~{} ({})",
                    describe_ms(e.ms),
                    e.basis
                )),
                None if cost.longest_run_ms > 0 => what.push(format!(
                    "longest run ~{} (runs planned after extraction)",
                    describe_ms(cost.longest_run_ms)
                )),
                None => {}
            }
            if cost.runs_ms > cost.longest_run_ms {
                what.push(format!("~{} of runs in all", describe_ms(cost.runs_ms)));
            }
            let _ = writeln!(
                s,
                "  {}. {id}: ~{}: {}",
                n + 1,
                describe_ms(cost.chain_ms()),
                what.join(", ")
            );
        }
        if self.order.len() > SCHEDULE_SHOWN {
            let _ = writeln!(
                s,
                "  … {} more (--json lists every estimate)",
                self.order.len() - SCHEDULE_SHOWN
            );
        }
        s
    }

    pub fn instance(&self, id: &str) -> Option<&InstancePlan> {
        self.instances.iter().find(|i| i.instance_id == id)
    }
}

/// What the plan does with instance `i`, for [`Plan::to_text`]: why it is skipped, or what each
/// of its runs does.
fn instance_action_text(i: &InstancePlan) -> String {
    match &i.action {
        InstanceAction::Skip { cause } => format!("skip: {cause}"),
        InstanceAction::EmptyPatch => "empty patch: graded without running".to_string(),
        InstanceAction::ExtractThenEvaluate => {
            "extract the patch, then run the six runs".to_string()
        }
        InstanceAction::Evaluate => {
            let runs: Vec<String> = i
                .runs
                .iter()
                .map(|r| {
                    let a = match &r.action {
                        RunAction::Reuse => "reuse".to_string(),
                        RunAction::ReuseUnkeyed => "reuse (unkeyed)".to_string(),
                        RunAction::Execute => "execute".to_string(),
                        RunAction::SameAs { instance_id, run } => {
                            if *instance_id == i.instance_id {
                                format!("same as {run}")
                            } else {
                                format!("same as {instance_id} {run}")
                            }
                        }
                    };
                    format!("{}={a}", r.kind)
                })
                .collect();
            runs.join(", ")
        }
    }
}

/// What the plan does with an image, for [`Plan::to_text`].
fn image_action_text(action: &ImageAction) -> String {
    match action {
        ImageAction::Reuse => "reuse".to_string(),
        ImageAction::Build => "build".to_string(),
        ImageAction::Rebuild(why) => format!("rebuild ({why})"),
        ImageAction::External => "local base image (used as it is)".to_string(),
        ImageAction::Pull(reference) => format!("pull from {reference}"),
        ImageAction::Prebuilt(how) if how == "pull" => {
            "prebuilt, pulled before its first run".to_string()
        }
        ImageAction::Prebuilt(_) => "prebuilt, present".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan's JSON (`--dry-run --json`) and its text keep the skip causes as they were.
    #[test]
    fn skip_causes_keep_their_json_and_text() {
        let cases: Vec<(SkipCause, &str, &str)> = vec![
            (
                SkipCause::NoPrediction,
                r#"{"kind":"no_prediction"}"#,
                "no prediction",
            ),
            (
                SkipCause::NoSpec,
                r#"{"kind":"spec","detail":"no spec was rendered"}"#,
                "cannot render the environment: no spec was rendered",
            ),
            (
                SkipCause::NoParser(ParserError::NoneForRepo {
                    repo: "acme/x".into(),
                }),
                r#"{"kind":"no_parser","detail":"acme/x"}"#,
                "no log parser for repository acme/x; set log_parser for it in the spec table",
            ),
            (
                SkipCause::NoMirror(PathBuf::from("/m/acme__x.git")),
                r#"{"kind":"no_mirror","detail":"/m/acme__x.git"}"#,
                "no repository mirror at /m/acme__x.git",
            ),
            (
                SkipCause::BaseImageMissing("base:1".into()),
                r#"{"kind":"base_image_missing","detail":"base:1"}"#,
                "base image base:1 does not exist (make it first: `swtbench images base IMAGE`, or `swtbench images python VERSION` for a Python image)",
            ),
            (
                SkipCause::ExtractionFailed("no patch type produced a change".into()),
                r#"{"kind":"extraction_failed","detail":"no patch type produced a change"}"#,
                "patch extraction failed: no patch type produced a change",
            ),
            (
                SkipCause::Spec(SpecError::NoTestCommand {
                    repo: "acme/x".into(),
                    version: "1.0".into(),
                }),
                r#"{"kind":"spec","detail":"the spec table has no test command for acme/x 1.0"}"#,
                "cannot render the environment: the spec table has no test command for acme/x 1.0",
            ),
            (
                SkipCause::NoParser(ParserError::Unknown {
                    repo: "acme/x".into(),
                    message: "unknown log parser `pyt`".into(),
                }),
                r#"{"kind":"no_parser","detail":"unknown log parser `pyt`"}"#,
                "no log parser for repository unknown log parser `pyt`; set log_parser for it in \
                 the spec table",
            ),
        ];
        for (cause, json, text) in cases {
            assert_eq!(serde_json::to_string(&cause).expect("json"), json);
            assert_eq!(cause.to_string(), text);
        }
    }
}
