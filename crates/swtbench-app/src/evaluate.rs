//! `run`: the evaluation pipeline, as one library call. [`evaluate`] is the entry point of every
//! evaluation: `run` and its shards, the repeats of `--repeat`, `verify --reexecute`'s fresh run and
//! the evaluation service all call it with a [`Request`] (settings, dataset, predictions, spec
//! table), how the caller stops it ([`Stopping`]) and what the caller sees ([`Observer`]: the
//! warnings before any work and the sink of the events). It plans first (`Pipeline::prepare`:
//! render every instance's spec → inventory the images → the plan, a pure function of those), and
//! returns the plan of a dry run there; else it locks the run directory, follows the plan on the
//! engine (images, the six runs per instance, grading, `report.json`, the run report), then
//! computes the leaderboard metrics over the benchmark's denominator and writes the HTML page. The
//! [`Engine`] (the async runtime and the engine connection) is the caller's and outlives the
//! evaluations made with it (a service keeps one); nothing here prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use swtbench_backend::{BuildNetwork, ContainerBackend, DockerBackend};
use swtbench_core::layout::model_dir_name;
use swtbench_core::{Instance, RunKind};
use swtbench_data::repo_files::RepoFiles;
use swtbench_data::{LoadedDataset, LoadedPredictions};
use swtbench_grade::leaderboard;
use swtbench_plan::plan::{ImageInventory, PlanInput};
use swtbench_plan::{Plan, RunSettings};
use swtbench_runner::events::{CancelReason, EventSink, InstanceOutcome};
use swtbench_runner::images::image_inventory;
use swtbench_runner::outcome::{ImageError, InstanceError};
use swtbench_runner::session::{RunLock, RunLockError};
use swtbench_runner::DiskOutputs;
use swtbench_runner::{Cancel, Evaluation, RunOutput};

/// The one way into an evaluation: plans `request` on `engine` and, unless it is a dry run
/// ([`Finished::Planned`]), follows the plan. `observer` is told the warnings before any work and
/// gives the sink of the events; `stopping` says how the caller stops it.
pub fn evaluate(
    engine: &Engine,
    request: Request,
    stopping: &Stopping,
    observer: &dyn Observer,
) -> Result<Finished> {
    let dry_run = request.dry_run;
    let pipeline = Pipeline::prepare(engine, request)?;
    observer.warnings(&pipeline.warnings(dry_run));
    if dry_run {
        return Ok(Finished::Planned(Box::new(pipeline.plan)));
    }
    let locked = pipeline.lock()?;
    let sink = observer.sink(locked.plan())?;
    let finished = locked.execute(sink, stopping);
    observer.ended();
    finished
}

/// What the caller of [`evaluate`] sees of it.
pub trait Observer {
    /// The warnings to show before any work (the Python images' notes, environments without
    /// frozen pins, instances the gold validation found broken), in order; called once, also for
    /// a dry run.
    fn warnings(&self, warnings: &[String]);
    /// The sink of the events of an evaluation that follows `plan` (not asked for a dry run).
    fn sink(&self, plan: &Plan) -> Result<Arc<dyn EventSink>>;
    /// The evaluation is over: its sink gets no more events.
    fn ended(&self) {}
}

/// How the caller stops an evaluation.
#[derive(Clone)]
pub enum Stopping {
    /// Ctrl-C (and SIGTERM, as a first Ctrl-C) escalate through [`Signal`]s, each reported to the
    /// callback: a command in a terminal.
    Signals(Arc<dyn Fn(Signal) + Send + Sync>),
    /// The caller holds the handle and requests the stop itself: a service, a test.
    Handle(Cancel),
}

impl std::fmt::Debug for Stopping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stopping::Signals(_) => f.write_str("Stopping::Signals"),
            Stopping::Handle(c) => f.debug_tuple("Stopping::Handle").field(c).finish(),
        }
    }
}
use swtbench_spec::{Arch, ExecSpec, SpecTable};

use crate::lines::Line;
use crate::{benchmark, html_page};
use crate::{Error, Result};

/// Longest run id: file names are at most 255 bytes, and the run report's is
/// `<model>.<run_id>.json`.
pub const MAX_RUN_ID_BYTES: usize = 128;

/// Refuses a run id that cannot name a directory or collides with the shared run directories.
pub fn check_run_id(run_id: &str) -> Result<()> {
    let reserved = RunKind::ALL
        .iter()
        .filter(|k| k.is_shared())
        .any(|k| k.as_str() == run_id);
    // The rules of instance ids (which name directories too), plus a length that leaves room for
    // `<model>.<run_id>.html` in evaluation_results/.
    let unusable = run_id.trim().is_empty()
        || run_id == "."
        || run_id == ".."
        || run_id.contains(['/', '\\'])
        || run_id.chars().any(char::is_control)
        || run_id.len() > MAX_RUN_ID_BYTES;
    if unusable {
        return Err(
            Error::input(anyhow!("--run-id {run_id:?} cannot name a directory")).with_hint(
                format!(
                    "use letters, digits, dots, dashes and underscores, at most {MAX_RUN_ID_BYTES} bytes"
                ),
            ),
        );
    }
    if reserved {
        return Err(Error::input(anyhow!(
            "--run-id {run_id} collides with the shared {run_id}/ directory of the logs"
        ))
        .with_hint("choose another run id"));
    }
    Ok(())
}

/// The soft limit of open files could not be raised.
#[derive(Debug, thiserror::Error)]
#[error("could not raise the open file limit to {target}: {source}")]
pub struct OpenFileLimitError {
    pub target: u64,
    pub source: rustix::io::Errno,
}

/// Raises the soft limit of open files to `want` (never above the hard limit, never lowering
/// it); says why when it could not.
pub fn raise_open_file_limit(want: u64) -> std::result::Result<(), OpenFileLimitError> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let cur = getrlimit(Resource::Nofile);
    let hard = cur.maximum;
    let target = hard.map_or(want, |h| want.min(h));
    if cur.current.is_some_and(|c| c >= target) || cur.current.is_none() {
        return Ok(());
    }
    let new = Rlimit {
        current: Some(target),
        maximum: hard,
    };
    setrlimit(Resource::Nofile, new).map_err(|source| OpenFileLimitError { target, source })
}

/// Whether the pipeline needs the container engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineUse {
    /// Connect; an unreachable engine is an error before any work.
    Required,
    /// Connect if possible (a dry run): without an engine the plan assumes no image exists.
    IfReachable,
    /// Never (grading the outputs already on disk).
    Never,
}

impl EngineUse {
    /// What `run` needs: no engine when it only grades what is on disk (`--skip-eval`,
    /// `--merge`: `grade_only`), one if reachable for a dry run, else one.
    pub fn of(grade_only: bool, dry_run: bool) -> EngineUse {
        match (grade_only, dry_run) {
            (true, _) => EngineUse::Never,
            (false, true) => EngineUse::IfReachable,
            (false, false) => EngineUse::Required,
        }
    }
}

/// What `run --build-mode` says: the original's flag is accepted and ignored.
pub fn build_mode_note(mode: &str) -> String {
    format!(
        "note: --build-mode {mode} is accepted for compatibility and ignored (images are built through the engine's API)"
    )
}

/// What a run killed by a second Ctrl-C says.
pub const KILLED: &str = "killed: containers removed, no reports written";

/// Everything an evaluation is made of, resolved by the caller.
#[derive(Debug)]
pub struct Request {
    pub settings: RunSettings,
    pub dataset: LoadedDataset,
    pub predictions: LoadedPredictions,
    pub table: SpecTable,
    pub files: RepoFiles,
    /// CA bundle for image builds (default: `$SSL_CERT_FILE` when it names a file).
    pub ca_bundle: Option<PathBuf>,
    /// `--ca-in-tests`: test containers trust that bundle too.
    pub ca_in_tests: bool,
    /// `--instance-ids` selected a part of the dataset (the benchmark's fixed denominator and gold
    /// run then do not apply).
    pub selection: bool,
    /// `--filter-swt` was given.
    pub filter_swt: bool,
    /// Write the HTML page next to the run report.
    pub html: bool,
    /// `--gold-run-id`: the gold run (under the same logs root) of the coverage rows; `None`
    /// finds one ([`benchmark::choose_gold_run`]).
    pub gold_run_id: Option<String>,
    /// Only the plan is wanted: nothing is written (a shard split is computed, not recorded).
    pub dry_run: bool,
    /// `--merge`: the reports over a run whose shards all finished, from their outputs (with
    /// `settings.skip_eval`, nothing runs); refused, naming what is missing, when one did not.
    pub merge: bool,
}

/// The runtime and, unless not needed, the engine connection of an evaluation: made first, so
/// that an unreachable engine is one clear error before any work.
#[derive(Debug)]
pub struct Engine {
    rt: tokio::runtime::Runtime,
    backend: Option<Arc<DockerBackend>>,
    warning: Option<String>,
}

impl Engine {
    pub fn connect(engine: EngineUse) -> Result<Engine> {
        let rt = crate::engine::runtime()?;
        let mut warning = None;
        let backend = match engine {
            EngineUse::Never => None,
            EngineUse::Required => Some(Arc::new(rt.block_on(crate::engine::connect())?)),
            EngineUse::IfReachable => match rt.block_on(crate::engine::connect()) {
                Ok(b) => Some(Arc::new(b)),
                Err(e) => {
                    warning = Some(format!("{}; the plan assumes no image exists", e.error));
                    None
                }
            },
        };
        Ok(Engine {
            rt,
            backend,
            warning,
        })
    }

    /// What the default resource limits are sized from: the engine's host when connected, else
    /// this machine.
    pub fn host_facts(&self) -> crate::limits::HostFacts {
        match &self.backend {
            Some(b) => crate::limits::HostFacts::of_engine(b.info()),
            None => crate::limits::HostFacts::of_this_machine(),
        }
    }

    /// The engine's backend, when connected.
    pub(crate) fn backend(&self) -> Option<&Arc<DockerBackend>> {
        self.backend.as_ref()
    }

    /// Runs `work` on this engine's runtime.
    pub(crate) fn block_on<F: std::future::Future>(&self, work: F) -> F::Output {
        self.rt.block_on(work)
    }

    /// Why the engine could not be reached, when [`EngineUse::IfReachable`] went without it.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }
}

/// A planned evaluation, ready to run.
#[derive(Debug)]
pub(crate) struct Pipeline<'e> {
    engine: &'e Engine,
    /// A shard's plan over every prediction: the split is made from it.
    whole_plan: Option<Plan>,
    /// A shard's instances, as planned.
    shard_ids: Option<std::collections::BTreeSet<String>>,
    request: Request,
    plan: Plan,
    images: ImageInventory,
    tracer: String,
    /// When merging: what the shards' run reports said.
    shard_outcomes: Option<swtbench_runner::ShardOutcomes>,
    /// What the instances' environments cannot serve as asked (uv without frozen pins), sorted.
    env_warnings: Vec<String>,
    validation_warnings: Vec<String>,
    /// Python images that were missing: pulled, or why not.
    base_notes: Vec<String>,
}

/// How an evaluation ended.
#[derive(Debug)]
pub enum Finished {
    /// A dry run: the plan, nothing done.
    Planned(Box<Plan>),
    /// Killed (a second Ctrl-C): containers were removed, no reports written.
    Killed,
    Done(Box<Evaluated>),
}

/// What an evaluation produced.
#[derive(Debug)]
pub struct Evaluated {
    pub output: RunOutput,
    /// The instances of the run report, in dataset order.
    pub instances: Vec<String>,
    /// The leaderboard numbers of this run over its benchmark's denominator.
    pub metrics: leaderboard::Metrics,
    /// The HTML page: `None` when not asked for or nothing to show, else where it was written or
    /// why it was not.
    pub html: Option<std::result::Result<PathBuf, Error>>,
    /// Which gold run the coverage rows are relative to, and why they are missing when they are.
    pub notices: Vec<crate::lines::Notice>,
}

impl Evaluated {
    /// Whether some instance was not graded (the summary's errors and skips).
    pub fn has_failures(&self) -> bool {
        self.output.results.iter().any(|r| r.outcome.is_failure())
    }

    /// The instances whose logs hold results the test runner did not print.
    pub fn suspicious(&self) -> Vec<&str> {
        self.output
            .results
            .iter()
            .filter(|r| r.integrity.as_ref().is_some_and(|i| i.is_suspicious()))
            .map(|r| r.instance_id.as_str())
            .collect()
    }

    /// The summary line of the run: instances by outcome, runs, images, the denominator.
    pub fn summary(&self) -> String {
        let s = &self.output.stats;
        format!(
            "{} instance(s): {} resolved, {} unresolved, {} not applied, {} empty patch, {} error(s), {} skipped, {} interrupted, {} suspicious; runs: {} executed ({} timed out, {} at a resource limit), {} reused, {} copied, {} failed; images: {} built, {} removed; denominator {}",
            s.instances, s.resolved, s.unresolved, s.not_applied, s.empty_patch, s.errors, s.skipped, s.interrupted,
            self.suspicious().len(),
            s.runs_executed, s.runs_timed_out, s.runs_limited, s.runs_reused, s.runs_copied, s.runs_failed,
            s.images_built, s.images_removed, self.metrics.denominator
        )
    }

    /// The warning about suspicious instances (the first five named), if there are any.
    pub fn suspicious_warning(&self) -> Option<String> {
        let suspicious = self.suspicious();
        (!suspicious.is_empty()).then(|| {
            format!(
                "{} suspicious: their logs hold results the test runner did not print ({}{}); see \
                 `integrity` in their swtbench_instance.json and docs/integrity.md",
                suspicious.len(),
                suspicious[..suspicious.len().min(5)].join(", "),
                if suspicious.len() > 5 { ", …" } else { "" }
            )
        })
    }

    /// What the end of a run says, in order: the gold run's notices, where the HTML page went (or
    /// why not), the leaderboard table (data), the summary line, the suspicious instances and
    /// where the run report is.
    pub fn lines(&self, run_id: &str) -> Vec<Line> {
        let mut lines: Vec<Line> = self.notices.iter().cloned().map(Line::from).collect();
        match &self.html {
            Some(Ok(html)) => lines.push(Line::Info(format!("HTML report: {}", html.display()))),
            Some(Err(e)) => lines.push(Line::Warn(format!("the HTML report was not written: {e}"))),
            None => {}
        }
        // A run that graded no instance has no numbers: an all-zero table would read as a result.
        if !self.output.evaluated_nothing() {
            // An interrupted run's numbers are partial: said before the table, and in the
            // table's own column name, so that stdout alone does not pass for a result.
            let name = match self.partial_warning() {
                Some(w) => {
                    lines.push(Line::Warn(w));
                    format!("{run_id} (interrupted)")
                }
                None => run_id.to_string(),
            };
            let table =
                leaderboard::render(&self.metrics, &name, leaderboard::Format::Github, None);
            lines.push(Line::Data(table));
        }
        lines.push(Line::Info(self.summary()));
        lines.extend(self.suspicious_warning().map(Line::Warn));
        if let Some(p) = &self.output.run_report_path {
            lines.push(Line::Info(format!("run report: {}", p.display())));
        }
        lines
    }

    /// What an interrupted run's table is: partial, with how many of its instances were not
    /// evaluated (they count as failures in it) and how to finish. `None` for a run that ended.
    pub fn partial_warning(&self) -> Option<String> {
        self.output.cancelled?;
        let s = &self.output.stats;
        Some(format!(
            "interrupted: the scores below are partial: {} of {} instance(s) were not evaluated \
             and count as failed; run the same command again to finish (finished runs are reused)",
            s.interrupted, s.instances
        ))
    }

    /// The error of a run that ended on its own without grading any instance (each one ended in
    /// an error): its causes, each named once and shortly (a failed image's whole text was its
    /// warning; another error's, its instance's line), and whether they are all the machine's
    /// ([`swtbench_runner::outcome::InstanceError::is_environment`]). `None` for a run that graded
    /// something, was stopped, or stopped early ([`Evaluated::aborted`] says that one).
    pub fn nothing_evaluated(&self) -> Option<NothingEvaluated> {
        let out = &self.output;
        if !out.evaluated_nothing() || out.cancelled.is_some() || out.aborted.is_some() {
            return None;
        }
        let errors: Vec<&InstanceError> = out
            .results
            .iter()
            .filter_map(|r| match &r.outcome {
                InstanceOutcome::Error { reason } => Some(reason),
                _ => None,
            })
            .collect();
        // Distinct causes in the order met, with how many instances each ended.
        let mut causes: Vec<(String, usize)> = Vec::new();
        let mut logs: Vec<String> = Vec::new();
        for e in &errors {
            let name = match e {
                InstanceError::Images(ImageError::Build(b)) => {
                    let log = b.log.display().to_string();
                    if !logs.contains(&log) {
                        logs.push(log);
                    }
                    b.summary()
                }
                other => format!("an error of cause {} (above)", other.cause()),
            };
            match causes.iter_mut().find(|(n, _)| *n == name) {
                Some((_, count)) => *count += 1,
                None => causes.push((name, 1)),
            }
        }
        let said: Vec<String> = causes
            .iter()
            .map(|(name, count)| match count {
                1 => name.clone(),
                n => format!("{name} ({n} instances)"),
            })
            .collect();
        let environment = !errors.is_empty() && errors.iter().all(|e| e.is_environment());
        let look = match logs.as_slice() {
            [] => "see the errors above and each instance's swtbench_instance.json".to_string(),
            logs => format!("see the warnings above and {}", logs.join(", ")),
        };
        let fix = match environment {
            true => {
                "make the registry and the package sources the image builds need reachable \
                     from the engine"
            }
            false => "fix the cause",
        };
        Some(NothingEvaluated {
            error: anyhow!(
                "nothing was evaluated, every instance ended in an error: {}",
                said.join("; ")
            ),
            hint: format!(
                "{look}; {fix}, then run the same command again (what finished is reused)"
            ),
            environment,
        })
    }

    /// The error of a run the engine stopped early (an environment failure), if it was.
    pub fn aborted(&self, run_id: &str) -> Option<Error> {
        let reason = self.output.aborted.as_ref()?;
        let not_run = self.output.stats.interrupted;
        Some(
            Error::environment(anyhow!(
                "the run stopped early: {reason}; {not_run} instance(s) were not evaluated"
            ))
            .with_hint(format!(
                "fix that and run the same command again: finished runs are reused \
                 (`swtbench clean --run-id {run_id}` removes containers left behind)"
            )),
        )
    }
}

/// A run that ended without grading any instance: no table, no run report, no page; the
/// command ends with this error. `environment`: every cause is the machine's (an image the
/// engine could not build for want of the network or a registry, an engine that failed), which
/// is an environment fault; otherwise some instance failed.
#[derive(Debug)]
pub struct NothingEvaluated {
    pub error: anyhow::Error,
    pub hint: String,
    pub environment: bool,
}

/// One press of Ctrl-C (or SIGTERM, which counts as the first), as the pipeline handles it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// First: stop scheduling, stop containers, write partial reports.
    Interrupt,
    /// Second: remove containers now, no reports.
    Kill,
    /// Third: the caller should exit at once.
    Exit,
}

impl Signal {
    /// What the caller says when it happens.
    pub fn message(self) -> &'static str {
        match self {
            Signal::Interrupt => {
                "interrupted: stopping containers and writing partial reports (Ctrl-C again to \
                 skip the reports)"
            }
            Signal::Kill => "killing: removing containers now (Ctrl-C again to exit at once)",
            Signal::Exit => "exiting; `swtbench clean --run-id <id>` removes what is left",
        }
    }
}

/// The bundle `--ca-in-tests` puts into test containers: `--ca-bundle`'s, else `$SSL_CERT_FILE`'s.
fn test_ca(request: &Request) -> Result<swtbench_plan::settings::TestCa> {
    if !request.settings.exec.allow_network {
        return Err(Error::input(anyhow!(
            "--ca-in-tests goes with the engine's network, and test containers are isolated (--no-network or SWTBENCH_NO_NETWORK)"
        ))
        .with_hint("leave out --no-network, or give --allow-network"));
    }
    let network = crate::env_vars::build_network(request.ca_bundle.as_deref()).map_err(|e| {
        Error::input(e).with_hint("--ca-bundle (or SSL_CERT_FILE) must name a readable file")
    })?;
    match network.ca_bundle() {
        Some(bytes) => Ok(swtbench_plan::settings::TestCa::new(bytes.to_vec())),
        None => Err(Error::input(anyhow!(
            "--ca-in-tests: there is no CA bundle to put into test containers"
        ))
        .with_hint("give --ca-bundle FILE, or set SSL_CERT_FILE to the bundle's path")),
    }
}

impl<'e> Pipeline<'e> {
    /// Loads what the plan needs and makes the plan. Refuses predictions that match no selected
    /// instance and a run report name that would be too long. What it does beside reading: the
    /// Python images uv environments build on are pulled when missing (the plan is made from what
    /// the engine has then); a shard's split is recorded only by [`Pipeline::lock`].
    pub(crate) fn prepare(engine: &'e Engine, mut request: Request) -> Result<Pipeline<'e>> {
        let (rt, backend) = (&engine.rt, &engine.backend);
        check_selection(&request)?;
        if request.ca_in_tests {
            request.settings.exec.test_ca = Some(test_ca(&request)?);
        }
        let with_prediction: Vec<&Instance> = request
            .dataset
            .instances
            .iter()
            .filter(|i| request.predictions.predictions.contains_key(&i.instance_id))
            .collect();
        // A prebuilt image (`--instance-image`) brings its environment: the env scripts are never
        // built, so the requirement files they would hold are not read (GitHub need not be
        // reachable); they render as empty files.
        let unread =
            |_: &str, _: &str, _: &str| Ok::<_, swtbench_spec::ReadError>(Some(String::new()));
        let files: &dyn swtbench_spec::FileSource = match request.settings.images.prebuilt {
            Some(_) => &unread,
            None => &request.files,
        };
        let specs = render_specs(&with_prediction, &request.table, files);
        let (env_warnings, validation_warnings) = spec_warnings(&specs);
        let tags = spec_image_tags(&specs);
        let mut images: ImageInventory = match &backend {
            Some(b) => rt
                .block_on(image_inventory(b.as_ref(), tags))
                .map_err(Error::environment)?,
            None => ImageInventory::new(),
        };
        let base_notes = match backend {
            Some(b) => {
                let only_say = request.dry_run || request.settings.skip_eval;
                pull_python_images(engine, b, &specs, &mut images, only_say)
            }
            None => Vec::new(),
        };
        let registry = match (&request.settings.images.registry, backend) {
            (Some(reg), Some(_)) => Some(registry_inventory(reg, &images)?),
            _ => None,
        };
        // With --instance-image: which prebuilt images are local (their digests), which their
        // registries have.
        let prebuilt = prebuilt_inventory(
            engine,
            &mut request.settings.images.prebuilt,
            &with_prediction,
        )?;
        let tracer = swtbench_tracer::TRACER_PY.to_string();
        let tracer_sha = swtbench_core::hash::sha256_hex(&tracer);
        let plan_with =
            |predictions: &BTreeMap<swtbench_core::InstanceId, swtbench_core::Prediction>| {
                swtbench_plan::plan(
                    &PlanInput {
                        settings: &request.settings,
                        model: &request.predictions.model,
                        instances: &request.dataset.instances,
                        predictions,
                        specs: &specs,
                        table: &request.table,
                        images: &images,
                        registry: registry.as_ref(),
                        prebuilt: prebuilt.as_ref(),
                        tracer_sha256: Some(&tracer_sha),
                    },
                    &DiskOutputs,
                )
            };
        let plan = plan_with(&request.predictions.predictions);
        let whole_plan = request.settings.shard.map(|_| plan.clone());
        let (plan, shard_ids) = shard_plan(&request, plan, &plan_with)?;
        let shard_outcomes = match request.merge {
            true => Some(crate::shards::merge_outcomes(
                &request.settings.outputs.logs,
                &request.settings.outputs.results,
                &model_dir_name(&request.predictions.model),
                &request.settings.run_id,
                &plan,
            )?),
            false => None,
        };
        Ok(Pipeline {
            engine,
            whole_plan,
            shard_ids,
            request,
            plan,
            images,
            tracer,
            shard_outcomes,
            env_warnings,
            validation_warnings,
            base_notes,
        })
    }

    /// The warnings shown before a run starts, in order: the Python images' notes, the first
    /// five environment warnings, and the instances the gold validation found broken (all of
    /// them in a dry run, else the first ten), each list's rest counted in one line.
    pub(crate) fn warnings(&self, dry_run: bool) -> Vec<String> {
        let mut out = self.base_notes.clone();
        let env = &self.env_warnings;
        out.extend(env.iter().take(5).cloned());
        if env.len() > 5 {
            out.push(format!(
                "… and {} more instance(s) without frozen pins (swtbench envs show ID)",
                env.len() - 5
            ));
        }
        let broken = &self.validation_warnings;
        let shown = if dry_run { broken.len() } else { 10 };
        out.extend(broken.iter().take(shown).cloned());
        if broken.len() > shown {
            out.push(format!(
                "… and {} more instance(s) the gold validation found broken (a --dry-run lists them all; docs/gold-validation.md)",
                broken.len() - shown
            ));
        }
        out
    }

    /// Takes the run's lock (one process per run id and output directory), checks that the
    /// output directories are writable, reads the CA bundle and records a shard's split (the
    /// first shard to get here writes it; a split recorded meanwhile for other instances is
    /// refused): the last checks before any work.
    pub(crate) fn lock(self) -> Result<Locked<'e>> {
        let lock = acquire_lock(&self.request.settings)?;
        self.record_shard()?;
        let network =
            crate::env_vars::build_network(self.request.ca_bundle.as_deref()).map_err(|e| {
                Error::input(e)
                    .with_hint("--ca-bundle (or SSL_CERT_FILE) must name a readable file")
            })?;
        Ok(Locked {
            pipeline: self,
            network,
            _lock: lock,
        })
    }
}

/// A planned evaluation holding its run's lock.
#[derive(Debug)]
pub(crate) struct Locked<'e> {
    pipeline: Pipeline<'e>,
    network: BuildNetwork,
    _lock: RunLock,
}

impl Locked<'_> {
    /// The plan being followed.
    pub(crate) fn plan(&self) -> &Plan {
        &self.pipeline.plan
    }

    /// The instances of the run report, in dataset order.
    fn instance_ids(&self) -> Vec<String> {
        self.pipeline
            .plan
            .instances
            .iter()
            .filter(|ip| ip.in_run())
            .map(|ip| ip.instance_id.clone())
            .collect()
    }

    /// Follows the plan, stopped as `stopping` says; the lock is released when this returns.
    fn execute(self, sink: Arc<dyn EventSink>, stopping: &Stopping) -> Result<Finished> {
        let instances = self.instance_ids();
        let this = &self.pipeline;
        let settings = this.request.settings.clone();
        let evaluation = Evaluation {
            settings,
            instances: this
                .request
                .dataset
                .instances
                .iter()
                .map(|i| (i.instance_id.to_string(), i.clone()))
                .collect(),
            plan: this.plan.clone(),
            images: this.images.clone(),
            tracer: Some(this.tracer.clone()),
            submitted_ids: this
                .request
                .predictions
                .predictions
                .keys()
                .map(|k| k.to_string())
                .collect(),
            network: self.network.clone(),
            shard_outcomes: this.shard_outcomes.clone(),
        };
        let started = Instant::now();
        let output = match &this.engine.backend {
            Some(b) => this.follow(b.clone(), evaluation, sink, stopping),
            // Grading what is on disk: nothing touches an engine.
            None => this.follow(
                Arc::new(swtbench_runner::offline::NoEngine),
                evaluation,
                sink,
                stopping,
            ),
        };
        if output.cancelled == Some(CancelReason::Kill) {
            return Ok(Finished::Killed);
        }
        let (metrics, notices) = this.metrics(&output);
        // A shard's page would show a part: the page comes with the report over the whole run.
        // Nor for a run that graded nothing (its partial run report, when stopped, says so).
        let wants_html = this.request.html
            && this.request.settings.shard.is_none()
            && !output.evaluated_nothing();
        let html = match (&output.run_report_path, wants_html) {
            (Some(path), true) => this
                .write_html(path, &metrics, started.elapsed())
                .transpose(),
            _ => None,
        };
        Ok(Finished::Done(Box::new(Evaluated {
            output,
            instances,
            metrics,
            html,
            notices,
        })))
    }
}

impl Pipeline<'_> {
    fn follow<B: ContainerBackend>(
        &self,
        backend: Arc<B>,
        evaluation: Evaluation,
        sink: Arc<dyn EventSink>,
        stopping: &Stopping,
    ) -> RunOutput {
        self.engine.rt.block_on(async {
            match stopping {
                Stopping::Signals(on_signal) => {
                    let cancel = Cancel::new();
                    let signals = tokio::spawn(watch_signals(cancel.clone(), on_signal.clone()));
                    let out = swtbench_runner::run(backend, evaluation, sink, cancel).await;
                    signals.abort();
                    out
                }
                Stopping::Handle(cancel) => {
                    swtbench_runner::run(backend, evaluation, sink, cancel.clone()).await
                }
            }
        })
    }

    /// A shard's split, recorded now (unless an earlier shard did) and checked to give this
    /// shard the instances it was planned with.
    fn record_shard(&self) -> Result<()> {
        let (Some(shard), Some(planned), Some(whole)) = (
            self.request.settings.shard,
            &self.shard_ids,
            &self.whole_plan,
        ) else {
            return Ok(());
        };
        let settings = &self.request.settings;
        let logs = &settings.outputs.logs;
        let (mine, _) = crate::shards::instances_of(logs, &settings.run_id, shard, whole, true)?;
        if mine
            .iter()
            .cloned()
            .collect::<std::collections::BTreeSet<String>>()
            != *planned
        {
            return Err(Error::input(anyhow!(
                "run id {} was split anew by another shard while --shard {shard} planned",
                settings.run_id
            ))
            .with_hint("run the same command again: it plans with the recorded split"));
        }
        Ok(())
    }

    /// The leaderboard numbers: the benchmark's fixed denominator when the whole filtered
    /// benchmark was evaluated, else the run's instance count; coverage relative to the run itself
    /// for gold predictions, else to the gold run [`benchmark::choose_gold_run`] picks (as
    /// `report` picks it).
    fn metrics(&self, output: &RunOutput) -> (leaderboard::Metrics, Vec<crate::lines::Notice>) {
        let r = &self.request;
        let known = benchmark::benchmark_of_run(r.dataset.known, r.selection, r.filter_swt);
        let denominator = benchmark::run_denominator(known, output.stats.instances);
        if r.predictions.is_gold() {
            let m = leaderboard::compute(&output.reports, Some(&output.reports), denominator);
            return (m, Vec::new());
        }
        let logs = &r.settings.outputs.logs;
        let published = r
            .dataset
            .known
            .and_then(|k| k.parse::<leaderboard::Dataset>().ok())
            .map(|d| d.gold_run_id());
        let ids: Vec<String> = output
            .reports
            .iter()
            .map(|rep| rep.instance_id.clone())
            .collect();
        let mut candidates = match &r.gold_run_id {
            Some(_) => Vec::new(),
            None => benchmark::gold_candidates(logs, &ids),
        };
        // Predictions that only call themselves `gold` are not a gold run of their own.
        if model_dir_name(&r.predictions.model) == benchmark::GOLD_MODEL_DIR {
            candidates.retain(|c| c.run_id != r.settings.run_id);
        }
        let mut choice =
            benchmark::choose_gold_run(r.gold_run_id.as_deref(), published, &candidates, ids.len());
        let gold_reports = choice.run_id.as_deref().and_then(|id| {
            match benchmark::gold_reports(logs, id, &|_| false) {
                Ok(Some(c)) => Some(c.reports),
                Ok(None) if r.gold_run_id.is_some() => {
                    choice.notices.push(crate::lines::Notice::Warn(format!(
                        "no gold run found at {}, skipping the coverage delta rows",
                        benchmark::gold_run_dir(logs, id).display()
                    )));
                    None
                }
                Ok(None) => None,
                Err(e) => {
                    choice.notices.push(crate::lines::Notice::Warn(format!(
                        "{e}; skipping the coverage delta rows"
                    )));
                    None
                }
            }
        });
        let m = leaderboard::compute(&output.reports, gold_reports.as_deref(), denominator);
        (m, choice.notices)
    }

    fn write_html(
        &self,
        run_report: &Path,
        metrics: &leaderboard::Metrics,
        elapsed: Duration,
    ) -> Result<Option<PathBuf>> {
        let model_dir = model_dir_name(&self.request.predictions.model);
        html_page::write_run_page(html_page::RunPage {
            settings: &self.request.settings,
            model_dir: &model_dir,
            dataset: &self.request.dataset,
            run_report,
            metrics,
            // Each repository's runs are read with the parser the plan chose for it, and the
            // shared runs found under the directive hashes the plan used.
            rules: html_page::plan_rules(&self.plan),
            elapsed,
        })
    }
}

/// Predictions must match a selected instance, and the run report's file name must fit.
fn check_selection(request: &Request) -> Result<()> {
    if request.predictions.predictions.is_empty() {
        return Err(Error::input(anyhow!(
            "no prediction matches a selected instance of {}",
            request.dataset.name
        ))
        .with_hint("check --dataset, --instance-ids and the predictions' instance ids"));
    }
    check_report_name(&request.predictions.model, &request.settings.run_id)
}

/// The run report `<model>.<run id>.html` must fit in a file name (255 bytes); `validate
/// --run-id` checks the same.
pub fn check_report_name(model: &str, run_id: &str) -> Result<()> {
    let report_name = format!("{}.{run_id}.html", model_dir_name(model));
    if report_name.len() > 255 {
        return Err(Error::input(anyhow!(
            "the run report's file name {report_name} is longer than 255 bytes"
        ))
        .with_hint("use a shorter --run-id (or model_name_or_path)"));
    }
    Ok(())
}

/// One process per run id and output directory (a second one would overwrite the first's
/// prediction runs and reports), and output directories this user can write to.
fn acquire_lock(settings: &RunSettings) -> Result<RunLock> {
    let lock = RunLock::acquire_part(&settings.outputs.logs, &settings.run_id, settings.shard)
        .map_err(|e| match e {
            RunLockError::Busy { .. } => Error::input(e).with_hint(
                "wait for it to finish, stop it (Ctrl-C), or use another --run-id or --output-dir",
            ),
            RunLockError::Io { .. } => Error::environment(e)
                .with_hint("--output-dir must name a directory this user can write to"),
        })?;
    for dir in [&settings.outputs.build_logs, &settings.outputs.results] {
        swtbench_data::fsutil::check_writable_dir(dir).map_err(|e| {
            Error::environment(anyhow!("cannot write to {}: {e}", dir.display()))
                .with_hint("--output-dir must name a directory this user can write to")
        })?;
    }
    Ok(lock)
}

/// Exec specs rendered by instance id, or why one could not be rendered.
type RenderedSpecs = BTreeMap<String, std::result::Result<ExecSpec, swtbench_spec::SpecError>>;

/// The environment warnings and the gold validation's warnings of the rendered specs, in order.
fn spec_warnings(specs: &RenderedSpecs) -> (Vec<String>, Vec<String>) {
    let env_warnings: Vec<String> = specs
        .values()
        .filter_map(|s| s.as_ref().ok())
        .flat_map(|s| s.env_warnings.iter().cloned())
        .collect();
    let validation_warnings: Vec<String> = specs
        .values()
        .filter_map(|s| s.as_ref().ok())
        .filter_map(|s| s.validation_warning.clone())
        .collect();
    (env_warnings, validation_warnings)
}

/// The base, env and instance image tags of the rendered specs, in order.
fn spec_image_tags(specs: &RenderedSpecs) -> Vec<String> {
    specs
        .values()
        .filter_map(|s| s.as_ref().ok())
        .flat_map(|s| {
            [
                s.keys.base.clone(),
                s.keys.env.clone(),
                s.keys.instance.clone(),
            ]
        })
        .collect()
}

/// With `--instance-image` and an engine: which prebuilt images of `instances` are local (their
/// digests), which their registries have.
fn prebuilt_inventory(
    engine: &Engine,
    prebuilt: &mut Option<swtbench_plan::prebuilt::PrebuiltSettings>,
    instances: &[&Instance],
) -> Result<Option<swtbench_plan::prebuilt::PrebuiltInventory>> {
    let (rt, backend) = (&engine.rt, &engine.backend);
    Ok(match (prebuilt, backend) {
        (Some(pre), Some(b)) => {
            let inspect = |reference: &str| {
                rt.block_on(b.image_inspect(reference))
                    .map_err(Error::environment)
            };
            Some(crate::registry::prebuilt_inventory(
                pre, instances, &inspect,
            )?)
        }
        _ => None,
    })
}

/// With `--shard`: the plan of the shard's instances only (made by `plan_with` from their
/// predictions, the split of the whole `plan` recorded in it), and their ids; else `plan` as it
/// is.
fn shard_plan(
    request: &Request,
    plan: Plan,
    plan_with: &dyn Fn(&BTreeMap<swtbench_core::InstanceId, swtbench_core::Prediction>) -> Plan,
) -> Result<(Plan, Option<std::collections::BTreeSet<String>>)> {
    let mut plan = plan;
    let mut shard_ids = None;
    if let Some(shard) = request.settings.shard {
        // The whole plan gives each instance's expected work; the shard's plan has only its
        // instances (the others have no prediction in it, so no part in its reports).
        let settings = &request.settings;
        let logs = &settings.outputs.logs;
        let (mine, info) =
            crate::shards::instances_of(logs, &settings.run_id, shard, &plan, false)?;
        let mine: std::collections::BTreeSet<String> = mine.into_iter().collect();
        shard_ids = Some(mine.clone());
        let predictions: BTreeMap<swtbench_core::InstanceId, swtbench_core::Prediction> = request
            .predictions
            .predictions
            .iter()
            .filter(|(id, _)| mine.contains(id.as_str()))
            .map(|(id, p)| (id.clone(), p.clone()))
            .collect();
        plan = plan_with(&predictions);
        plan.shard = Some(info);
    }
    Ok((plan, shard_ids))
}

/// Renders every instance's spec (requirement files from the mirror or GitHub raw).
fn render_specs(
    instances: &[&Instance],
    table: &SpecTable,
    files: &dyn swtbench_spec::FileSource,
) -> BTreeMap<String, std::result::Result<ExecSpec, swtbench_spec::SpecError>> {
    let host = Arch::host();
    instances
        .iter()
        .map(|i| {
            (
                i.instance_id.to_string(),
                ExecSpec::new(i, table, host, files),
            )
        })
        .collect()
}

/// Ctrl-C (SIGINT) and, on Unix, SIGTERM: the signals that stop a command.
#[derive(Debug)]
pub struct StopSignals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Default for StopSignals {
    /// Starts listening (within a Tokio runtime).
    fn default() -> StopSignals {
        StopSignals::new()
    }
}

impl StopSignals {
    /// Starts listening (within a Tokio runtime).
    pub fn new() -> StopSignals {
        StopSignals {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
        }
    }

    /// Waits for the next Ctrl-C or SIGTERM; `false` when Ctrl-C cannot be listened for.
    pub async fn next(&mut self) -> bool {
        #[cfg(unix)]
        {
            let term = async {
                match self.term.as_mut() {
                    Some(t) => {
                        t.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                r = tokio::signal::ctrl_c() => r.is_ok(),
                _ = term => true,
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.is_ok()
        }
    }
}

/// Ctrl-C once: interrupt (stop, clean up, partial reports); twice: kill (clean up, no
/// reports); three times: [`Signal::Exit`]. SIGTERM counts as a first Ctrl-C.
async fn watch_signals(cancel: Cancel, on_signal: Arc<dyn Fn(Signal) + Send + Sync>) {
    let mut signals = StopSignals::new();
    let mut presses = 0u32;
    loop {
        if !signals.next().await {
            return;
        }
        presses += 1;
        let signal = match presses {
            1 => Signal::Interrupt,
            2 => Signal::Kill,
            _ => Signal::Exit,
        };
        match signal {
            Signal::Interrupt => {
                cancel.request(CancelReason::Interrupt);
            }
            Signal::Kill => {
                cancel.request(CancelReason::Kill);
            }
            Signal::Exit => {}
        }
        on_signal(signal);
    }
}

/// The Python images uv environments build on that the engine lacks, pulled (unless `only_say`:
/// a dry run or a grading-only run only says so) and added to `images`; what became of each.
/// The plan skips an instance whose image could be neither found nor pulled.
fn pull_python_images(
    engine: &Engine,
    backend: &Arc<DockerBackend>,
    specs: &BTreeMap<String, std::result::Result<ExecSpec, swtbench_spec::SpecError>>,
    images: &mut ImageInventory,
    only_say: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    for tag in python_images_missing(specs, images) {
        if only_say {
            notes.push(format!(
                "the Python image {tag} is not local; a run pulls it (or make it with `swtbench images python`)"
            ));
            continue;
        }
        match engine
            .rt
            .block_on(crate::registry::pull_base_image(backend.as_ref(), &tag))
        {
            Ok(info) => {
                notes.push(crate::registry::python_image_pulled(&tag));
                images.insert(tag, Some(swtbench_plan::plan::ExistingImage::from(&info)));
            }
            Err(e) => notes.push(crate::registry::python_image_not_pulled(&tag, &e)),
        }
    }
    notes
}

/// Which of the images the engine lacks the registry cache holds (the plan pulls those).
fn registry_inventory(
    registry: &swtbench_plan::settings::RegistrySettings,
    images: &ImageInventory,
) -> Result<swtbench_plan::plan::RegistryInventory> {
    let missing: Vec<String> = images
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(k, _)| k.clone())
        .collect();
    let client = crate::registry::client(registry)?;
    let found = crate::registry::lookup(&client, &missing, &|_, _| {})?;
    Ok(found.into_iter().map(|(k, l)| (k, l.present)).collect())
}

/// The Python images (bases of uv environments) that the engine does not have, once each, sorted.
fn python_images_missing(
    specs: &BTreeMap<String, std::result::Result<ExecSpec, swtbench_spec::SpecError>>,
    images: &ImageInventory,
) -> Vec<String> {
    let mut out: Vec<String> = specs
        .values()
        .filter_map(|s| s.as_ref().ok().and_then(crate::images::python_image_of))
        .map(str::to_string)
        .filter(|t| matches!(images.get(t), Some(None)))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evaluated(cancelled: Option<CancelReason>) -> Evaluated {
        let result = |id: &str, outcome| swtbench_runner::InstanceResult {
            instance_id: id.into(),
            outcome,
            report: None,
            all_reused: false,
            reasons: Vec::new(),
            limit_hits: Vec::new(),
            integrity: None,
        };
        let stats = swtbench_runner::events::EvaluationStats {
            instances: 3,
            resolved: 1,
            interrupted: 2,
            ..Default::default()
        };
        Evaluated {
            output: RunOutput {
                results: vec![
                    result("a__a-1", InstanceOutcome::Resolved),
                    result("a__a-2", InstanceOutcome::Interrupted),
                    result("a__a-3", InstanceOutcome::Interrupted),
                ],
                run_report: None,
                run_report_path: None,
                reports: Vec::new(),
                stats,
                cancelled,
                aborted: None,
                warnings: Vec::new(),
            },
            instances: vec!["a__a-1".into(), "a__a-2".into(), "a__a-3".into()],
            metrics: leaderboard::compute(&[], None, 3),
            html: None,
            notices: Vec::new(),
        }
    }

    #[test]
    fn an_interrupted_runs_table_is_marked_partial_on_stdout_and_stderr() {
        let lines = evaluated(Some(CancelReason::Interrupt)).lines("r");
        let warn = lines.iter().find_map(|l| match l {
            Line::Warn(w) => Some(w.clone()),
            _ => None,
        });
        assert_eq!(
            warn.as_deref(),
            Some(
                "interrupted: the scores below are partial: 2 of 3 instance(s) were not \
                 evaluated and count as failed; run the same command again to finish (finished \
                 runs are reused)"
            )
        );
        let table = lines.iter().find_map(|l| match l {
            Line::Data(t) => Some(t.clone()),
            _ => None,
        });
        assert!(table.is_some_and(|t| t.contains("| r (interrupted) |")));
        // A run that ended says nothing of the kind.
        let lines = evaluated(None).lines("r");
        assert!(!lines.iter().any(|l| matches!(l, Line::Warn(_))));
        assert!(lines.iter().any(
            |l| matches!(l, Line::Data(t) if t.contains(" r |") && !t.contains("interrupted"))
        ));
    }

    #[test]
    fn run_needs_the_engine_unless_it_only_grades() {
        assert_eq!(EngineUse::of(true, true), EngineUse::Never);
        assert_eq!(EngineUse::of(true, false), EngineUse::Never);
        assert_eq!(EngineUse::of(false, true), EngineUse::IfReachable);
        assert_eq!(EngineUse::of(false, false), EngineUse::Required);
    }

    #[test]
    fn run_ids_that_are_not_directory_names_or_collide_are_refused() {
        assert!(check_run_id("my-run.1").is_ok());
        let long = "x".repeat(MAX_RUN_ID_BYTES + 1);
        for bad in [
            "",
            " ",
            "a/b",
            "a\\b",
            "a\nb",
            "a\tb",
            "..",
            "gold_pre",
            "base_post",
            &long,
        ] {
            assert!(check_run_id(bad).is_err(), "{bad}");
        }
    }
}
