//! The orchestrator: follows a [`Plan`] on a [`ContainerBackend`], `max_workers` instances at a
//! time, and ends with the reports.
//!
//! - Instances are scheduled in plan (dataset) order. Instances that need no container (all runs
//!   reusable, empty patch, skipped) are graded right away; the others wait for a worker.
//! - Images are ensured lazily, only for instances with something to execute, each at most once
//!   ([`ImageBuilder`]'s single flight), at most `build_workers` builds at a time.
//! - The six runs of an instance run one after the other. Runs with the same content key, in the
//!   same instance or across instances, execute once: the first to get there runs it, the others
//!   copy its output (a failure is not shared: the next instance that needs the run tries again).
//!   A failing run ends the instance (its finished runs stay on disk, keyed, for a rerun); a
//!   timeout is a result, not a failure.
//! - Each instance is graded as soon as its runs are done: `report.json` and the instance summary
//!   are written then, so an interrupted run leaves the reports of finished instances.
//! - Cancellation: an interrupt stops scheduling and drops the running instances at once (an eval
//!   script in flight is not waited for: its container is killed and removed; an image build in
//!   flight is abandoned, and no waiter takes it over), then images above the cache level are
//!   removed and the reports written; a kill does the same cleanup and skips the reports.
//!
//! The runner never prints; it emits [`Event`]s.

use crate::lock::Locked;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use swtbench_backend::labels::{LabelFilter, KIND, RUN_ID};
use swtbench_backend::{
    BuildNetwork, BuildOutcome, ContainerBackend, EnsuredImage, ImageBuilder, ImageInfo,
    RebuildPolicy,
};
use swtbench_core::layout::{model_dir_name, LogsRoot};
use swtbench_core::Instance;
use swtbench_grade::report::GradeOptions;
use swtbench_grade::run_report::{
    EntryState, ErrorReason, RunReport, RunReportEntry, RunReportInput, SkipReason,
};
use swtbench_grade::InstanceReport;
use swtbench_spec::ExecSpec;
use tokio::sync::{OnceCell, Semaphore};
use tokio::task::JoinSet;

use crate::cancel::Cancel;
use crate::events::{
    CancelReason, Event, EventSink, ImageOutcome, InstanceOutcome, Phase, RunOutcome, RunStats,
};
use crate::execute::{copy_run, execute_run, ContainerRegistry, RunJob};
use crate::images::{recipes, ImageLifecycle};
use crate::keys::RunResult;
use crate::plan::{
    plan_runs, DiskOutputs, ImageAction, ImageInventory, InstanceAction, InstancePlan, Plan,
    RunAction, RunContext, SkipCause,
};
use crate::report::{
    grade_from_outputs, remove_stale_report, run_parameters, write_report, write_run_report,
    write_summary, InstanceSummary, RunSummary,
};
use crate::session::{Liveness, SESSION};
use crate::settings::{ImageKind, RunSettings};

/// Everything a run needs besides the engine.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub settings: RunSettings,
    pub plan: Plan,
    /// The plan's instances by id.
    pub instances: BTreeMap<String, Instance>,
    /// The images that existed when the plan was made.
    pub images: ImageInventory,
    /// The tracer's text (needed when coverage is on).
    pub tracer: Option<String>,
    /// Ids of every submitted prediction (the run report's `submitted_ids`).
    pub submitted_ids: Vec<String>,
    /// CA bundle and proxies for builds.
    pub network: BuildNetwork,
}

/// How one instance ended, with its grade when it has one.
#[derive(Debug, Clone)]
pub struct InstanceResult {
    pub instance_id: String,
    pub outcome: InstanceOutcome,
    pub report: Option<InstanceReport>,
    /// Nothing was executed for it in this invocation (every output was already there).
    pub all_reused: bool,
    pub reasons: Vec<String>,
}

impl InstanceResult {
    fn entry(&self) -> RunReportEntry {
        let state = match (&self.outcome, &self.report) {
            (InstanceOutcome::EmptyPatch, report) => EntryState::Graded {
                report: Box::new(
                    report
                        .clone()
                        .unwrap_or_else(|| InstanceReport::empty_patch(&self.instance_id)),
                ),
                reused: false,
                empty_patch: true,
            },
            (InstanceOutcome::Resolved | InstanceOutcome::Unresolved { .. }, Some(report)) => {
                EntryState::Graded {
                    report: Box::new(report.clone()),
                    reused: self.all_reused,
                    empty_patch: false,
                }
            }
            (InstanceOutcome::Skipped { reason }, _) => {
                EntryState::Skipped(SkipReason::Other(reason.clone()))
            }
            (InstanceOutcome::Interrupted, _) => EntryState::Skipped(SkipReason::Interrupted),
            (InstanceOutcome::Error { reason }, _) => {
                EntryState::Error(ErrorReason::Run(reason.clone()))
            }
            (_, None) => EntryState::Error(ErrorReason::Run("no grade".into())),
        };
        RunReportEntry {
            instance_id: self.instance_id.clone(),
            state,
        }
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The instances of the run report, in plan order.
    pub results: Vec<InstanceResult>,
    /// `None` when killed before the reports.
    pub run_report: Option<RunReport>,
    pub run_report_path: Option<PathBuf>,
    /// The graded reports, sorted by instance id (for the leaderboard table).
    pub reports: Vec<InstanceReport>,
    pub stats: RunStats,
    pub cancelled: Option<CancelReason>,
    /// Why the run stopped early on its own (the engine stopped answering, the disk is full), if
    /// it did; `cancelled` is then `Interrupt`.
    pub aborted: Option<String>,
    /// Non-fatal problems (report writing, image removal), one sentence each.
    pub warnings: Vec<String>,
}

/// A run whose output is complete somewhere: its directory and result.
#[derive(Debug, Clone)]
struct Done {
    dir: PathBuf,
    result: RunResult,
}

type Flight = Arc<OnceCell<Result<Done, String>>>;

struct Shared<B: ContainerBackend> {
    backend: Arc<B>,
    settings: RunSettings,
    sink: Arc<dyn EventSink>,
    builder: ImageBuilder<B>,
    registry: ContainerRegistry,
    flights: Mutex<HashMap<String, Flight>>,
    lifecycle: ImageLifecycle,
    instances: BTreeMap<String, Instance>,
    images: ImageInventory,
    image_actions: BTreeMap<String, ImageAction>,
    announced_builds: Mutex<BTreeSet<String>>,
    /// Recipes by instance image tag, dropped once the image is ready for everybody.
    recipes: Mutex<HashMap<String, Arc<crate::images::InstanceRecipes>>>,
    /// Instance images ensured in this run.
    ready_images: Mutex<BTreeSet<String>>,
    removed_images: Mutex<BTreeSet<String>>,
    tracer: Option<String>,
    tracer_sha256: Option<String>,
    model_dir: String,
    stats: Mutex<RunStats>,
    warnings: Mutex<Vec<String>>,
    cancel: Cancel,
    aborted: Mutex<Option<String>>,
}

impl<B: ContainerBackend> Shared<B> {
    /// Stops the run because of a failure of the machine (the first reason wins): running
    /// instances are stopped as on an interrupt and the partial reports written.
    fn abort(&self, reason: String) {
        {
            let mut a = self.aborted.locked();
            if a.is_some() {
                return;
            }
            *a = Some(reason.clone());
        }
        self.emit(Event::RunAborted { reason });
        self.cancel.request(CancelReason::Interrupt);
    }

    fn aborted(&self) -> Option<String> {
        self.aborted.locked().clone()
    }

    /// After an engine error: whether the engine still answers. A restarting daemon gets a few
    /// seconds; an engine that stays silent stops the run instead of failing every remaining
    /// instance in turn.
    async fn check_engine(&self) {
        let mut last = None;
        for attempt in 0..3 {
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            }
            match self.backend.engine_info().await {
                Ok(_) => return,
                Err(e) => last = Some(e),
            }
        }
        if let Some(e) = last {
            self.abort(format!("the container engine stopped answering: {e}"));
        }
    }

    fn emit(&self, e: Event) {
        self.sink.event(&e);
    }

    fn phase(&self, id: &str, phase: Phase) {
        self.emit(Event::InstancePhase {
            instance_id: id.to_string(),
            phase,
        });
    }

    fn stats(&self, f: impl FnOnce(&mut RunStats)) {
        f(&mut self.stats.locked());
    }

    fn warn(&self, message: String) {
        self.emit(Event::Warning {
            message: message.clone(),
        });
        self.warnings.locked().push(message);
    }

    fn flight(&self, key: &str) -> Flight {
        self.flights
            .locked()
            .entry(key.to_string())
            .or_default()
            .clone()
    }
}

/// Runs an evaluation to the end (or until cancelled) and writes its reports.
pub async fn run<B: ContainerBackend>(
    backend: Arc<B>,
    eval: Evaluation,
    sink: Arc<dyn EventSink>,
    cancel: Cancel,
) -> RunOutput {
    let started = Instant::now();
    let Evaluation {
        settings,
        plan,
        instances,
        images,
        tracer,
        submitted_ids,
        network,
    } = eval;
    let tracer_sha256 = tracer
        .as_deref()
        .map(swtbench_core::hash::sha256_hex)
        .filter(|_| settings.eval.coverage);
    let lifecycle = ImageLifecycle::new(&settings, &plan, &images);
    let image_actions = plan
        .images
        .iter()
        .map(|i| (i.tag.clone(), i.action.clone()))
        .collect();
    let shared = Arc::new(Shared {
        builder: ImageBuilder::new(
            backend.clone(),
            settings.images.build_workers.max(1),
            network,
        ),
        backend,
        sink,
        registry: ContainerRegistry::default(),
        flights: Mutex::new(HashMap::new()),
        lifecycle,
        instances,
        images,
        image_actions,
        announced_builds: Mutex::new(BTreeSet::new()),
        recipes: Mutex::new(HashMap::new()),
        ready_images: Mutex::new(BTreeSet::new()),
        removed_images: Mutex::new(BTreeSet::new()),
        tracer: tracer.filter(|_| settings.eval.coverage),
        tracer_sha256,
        model_dir: model_dir_name(&plan.model),
        stats: Mutex::new(RunStats::default()),
        warnings: Mutex::new(Vec::new()),
        cancel: cancel.clone(),
        aborted: Mutex::new(None),
        settings,
    });

    // Outputs already on disk can be copied by later runs with the same key.
    for ip in &plan.instances {
        for r in ip.runs.iter().filter(|r| r.action == RunAction::Reuse) {
            if let Some(record) = crate::keys::read_key_file(&r.dir) {
                let _ = shared.flight(&r.key).set(Ok(Done {
                    dir: r.dir.clone(),
                    result: record.result,
                }));
            }
        }
    }

    let in_run: Vec<InstancePlan> = plan
        .instances
        .iter()
        .filter(|i| i.in_run())
        .cloned()
        .collect();
    if !shared.settings.skip_eval {
        remove_leftovers(&shared).await;
    }
    // --skip-eval runs and builds nothing: an instance whose outputs are missing is an error.
    let runs_anything = !shared.settings.skip_eval;
    shared.emit(Event::RunStarted {
        run_id: plan.run_id.clone(),
        model: plan.model.clone(),
        instances: in_run.len(),
        to_evaluate: in_run
            .iter()
            .filter(|i| runs_anything && i.needs_containers())
            .count(),
        runs_to_execute: if runs_anything {
            plan.counts.runs_execute
        } else {
            0
        },
        images_to_build: if runs_anything {
            plan.counts.images_build
        } else {
            0
        },
    });

    let mut results: BTreeMap<String, InstanceResult> = BTreeMap::new();
    let mut set: JoinSet<InstanceResult> = JoinSet::new();
    let mut tasks: HashMap<tokio::task::Id, String> = HashMap::new();
    let workers = Arc::new(Semaphore::new(shared.settings.max_workers.max(1)));
    let (scheduled_tx, scheduled_rx) = tokio::sync::watch::channel(0usize);
    let prefetch = (!shared.settings.skip_eval).then(|| {
        tokio::spawn(prefetch_images(
            shared.clone(),
            in_run.clone(),
            scheduled_rx,
        ))
    });
    for (index, ip) in in_run.iter().enumerate() {
        scheduled_tx.send_replace(index);
        if cancel.is_cancelled() {
            break;
        }
        if !ip.needs_containers() || shared.settings.skip_eval {
            let r = evaluate_instance(shared.clone(), ip.clone()).await;
            results.insert(r.instance_id.clone(), r);
            continue;
        }
        let permit = tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            p = workers.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let shared2 = shared.clone();
        let cancel2 = cancel.clone();
        let ip2 = ip.clone();
        let task_id = ip.instance_id.clone();
        let handle = set.spawn(async move {
            let _permit = permit;
            let id = ip2.instance_id.clone();
            tokio::select! {
                biased;
                _ = cancel2.cancelled() => interrupted(&shared2, &id),
                r = evaluate_instance(shared2.clone(), ip2) => r,
            }
        });
        tasks.insert(handle.id(), task_id);
    }
    loop {
        let next = tokio::select! {
            biased;
            _ = cancel.reached(CancelReason::Kill) => {
                set.abort_all();
                while set.join_next().await.is_some() {}
                break;
            }
            n = set.join_next_with_id() => n,
        };
        match next {
            None => break,
            Some(Ok((_, r))) => {
                results.insert(r.instance_id.clone(), r);
            }
            Some(Err(e)) if e.is_panic() => {
                // A bug, not the prediction's fault: say so for this instance and go on.
                if let Some(id) = tasks.get(&e.id()) {
                    let reason = format!("internal error while evaluating: {e}");
                    shared.emit(Event::InstanceFinished {
                        instance_id: id.clone(),
                        outcome: InstanceOutcome::Error {
                            reason: reason.clone(),
                        },
                        duration_ms: 0,
                    });
                    results.insert(
                        id.clone(),
                        InstanceResult {
                            instance_id: id.clone(),
                            outcome: InstanceOutcome::Error {
                                reason: reason.clone(),
                            },
                            report: None,
                            all_reused: false,
                            reasons: vec![reason],
                        },
                    );
                }
            }
            Some(Err(_)) => {}
        }
    }
    if let Some(p) = prefetch {
        // Every instance is done; a build still running is for nobody.
        p.abort();
        let _ = p.await;
    }
    if let Some(reason) = cancel.level() {
        shared.emit(Event::CancelRequested { reason });
    }
    // Instances that never ran, or were dropped by a kill.
    for ip in &in_run {
        if !results.contains_key(&ip.instance_id) {
            let r = interrupted(&shared, &ip.instance_id);
            results.insert(r.instance_id.clone(), r);
        }
    }

    let mut unstopped: Vec<String> = Vec::new();
    if !shared.settings.skip_eval {
        remove_containers(&shared).await;
        remove_images_at_end(&shared).await;
        if let Ok(left) = shared
            .backend
            .containers_with_label(&own_containers(&shared))
            .await
        {
            unstopped = left
                .into_iter()
                .map(|c| c.names.first().cloned().unwrap_or(c.id))
                .collect();
        }
    }

    let ordered: Vec<InstanceResult> = in_run
        .iter()
        .filter_map(|ip| results.remove(&ip.instance_id))
        .collect();
    let stats_now = || {
        let mut s = *shared.stats.locked();
        s.instances = ordered.len();
        for r in &ordered {
            match &r.outcome {
                InstanceOutcome::Resolved => s.resolved += 1,
                InstanceOutcome::Unresolved { .. } => s.unresolved += 1,
                InstanceOutcome::EmptyPatch => s.empty_patch += 1,
                InstanceOutcome::Skipped { .. } => s.skipped += 1,
                InstanceOutcome::Error { .. } => s.errors += 1,
                InstanceOutcome::Interrupted => s.interrupted += 1,
            }
        }
        s
    };
    let stats = stats_now();
    let mut reports: Vec<InstanceReport> =
        ordered.iter().filter_map(|r| r.report.clone()).collect();
    reports.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));

    let (run_report, run_report_path) = if cancel.level() == Some(CancelReason::Kill) {
        (None, None)
    } else {
        let report = RunReport::new(&RunReportInput {
            entries: ordered.iter().map(InstanceResult::entry).collect(),
            submitted_ids,
            unstopped_containers: unstopped,
            unremoved_images: Vec::new(),
            parameters: run_parameters(&shared.settings, started.elapsed()),
        });
        match write_run_report(
            &shared.settings.outputs.results,
            &shared.model_dir,
            &shared.settings.run_id,
            &report,
        ) {
            Ok(path) => {
                shared.emit(Event::ReportWritten {
                    path: path.display().to_string(),
                });
                (Some(report), Some(path))
            }
            Err(e) => {
                shared.warn(format!("writing the run report failed: {e}"));
                (Some(report), None)
            }
        }
    };
    shared.emit(Event::RunFinishedAll {
        stats,
        duration_ms: started.elapsed().as_millis() as u64,
    });
    let warnings = shared.warnings.locked().clone();
    RunOutput {
        results: ordered,
        run_report,
        run_report_path,
        reports,
        stats,
        cancelled: cancel.level(),
        aborted: shared.aborted(),
        warnings,
    }
}

/// Builds the images of upcoming instances ahead of their workers, in plan order, at most
/// `build_workers` chains at a time and no further ahead than the workers could use soon, so
/// that a build overlaps the runs of earlier instances instead of waiting for a free worker.
/// The builder's single flight makes the worker that needs the image wait for the same build.
async fn prefetch_images<B: ContainerBackend>(
    shared: Arc<Shared<B>>,
    instances: Vec<InstancePlan>,
    mut scheduled: tokio::sync::watch::Receiver<usize>,
) {
    let lookahead = shared.settings.max_workers + shared.settings.images.build_workers;
    // The rank of an instance: how many distinct instance images the plan needs up to it. The
    // lookahead counts images, not instances: many instances often share one image.
    let mut ranks: Vec<usize> = Vec::with_capacity(instances.len());
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for ip in &instances {
        if let (true, Some(chain)) = (ip.needs_containers(), &ip.images) {
            seen.insert(chain.instance.clone());
        }
        ranks.push(seen.len());
    }
    let mut started: BTreeSet<String> = BTreeSet::new();
    let mut inflight: JoinSet<()> = JoinSet::new();
    for (index, ip) in instances.into_iter().enumerate() {
        if !ip.needs_containers() {
            continue;
        }
        let Some(chain) = &ip.images else { continue };
        if !started.insert(chain.instance.clone()) {
            continue;
        }
        let planned = matches!(
            shared.image_actions.get(&chain.instance),
            Some(ImageAction::Build | ImageAction::Rebuild(_))
        );
        if !planned {
            continue;
        }
        // Do not run too far ahead of the scheduler (disk space, and images that a cache level
        // removes again).
        let rank = ranks[index];
        let _ = scheduled
            .wait_for(|s| rank <= ranks.get(*s).copied().unwrap_or(0) + lookahead)
            .await;
        while inflight.len() >= shared.settings.images.build_workers.max(1) {
            inflight.join_next().await;
        }
        if shared.cancel.is_cancelled() {
            break;
        }
        let shared = shared.clone();
        inflight.spawn(async move {
            if let Some(spec) = ip.spec.as_deref() {
                // A cancelled run builds nothing more: when the worker that was building an image
                // is dropped, this waiter would otherwise take the build over for nobody.
                tokio::select! {
                    biased;
                    _ = shared.cancel.cancelled() => {}
                    // Failures are reported by the worker that needs the image.
                    _ = ensure_images(&shared, &ip, spec) => {}
                }
            }
        });
    }
    while inflight.join_next().await.is_some() {}
}

fn interrupted<B: ContainerBackend>(shared: &Shared<B>, id: &str) -> InstanceResult {
    shared.emit(Event::InstanceFinished {
        instance_id: id.to_string(),
        outcome: InstanceOutcome::Interrupted,
        duration_ms: 0,
    });
    let reason = match shared.aborted() {
        Some(why) => format!("the run stopped early before this instance finished: {why}"),
        None => "the run was interrupted before this instance finished".into(),
    };
    InstanceResult {
        instance_id: id.to_string(),
        outcome: InstanceOutcome::Interrupted,
        report: None,
        all_reused: false,
        reasons: vec![reason],
    }
}

/// Containers of this run id left by an earlier process of the same run (killed with -9). Those
/// of a process that is still running (the same run id in another output directory) are left
/// alone.
async fn remove_leftovers<B: ContainerBackend>(shared: &Shared<B>) {
    let filter = LabelFilter::new(RUN_ID, shared.settings.run_id.as_str());
    match shared.backend.containers_with_label(&filter).await {
        Ok(found) if !found.is_empty() => {
            let me = shared.registry.session();
            let mut n = 0;
            let mut foreign = 0;
            for c in &found {
                let live = c.labels.get(SESSION).map(|l| me.liveness(l));
                if matches!(live, Some(Liveness::Alive | Liveness::Unknown)) {
                    foreign += 1;
                    continue;
                }
                if shared.backend.container_remove(&c.id).await.is_ok() {
                    n += 1;
                }
            }
            if n > 0 {
                shared.emit(Event::LeftoversRemoved { containers: n });
            }
            if foreign > 0 {
                shared.warn(format!(
                    "{foreign} container(s) of run id {} belong to another swtbench process that \
                     may still be running (another output directory or host); left alone \
                     (`swtbench clean --run-id {} --force` removes them)",
                    shared.settings.run_id, shared.settings.run_id
                ));
            }
        }
        Ok(_) => {}
        Err(e) => shared.warn(format!("listing leftover containers failed: {e}")),
    }
}

/// The label filter of this process's own containers.
fn own_containers<B: ContainerBackend>(shared: &Shared<B>) -> LabelFilter {
    LabelFilter::new(RUN_ID, shared.settings.run_id.as_str())
        .and(SESSION, shared.registry.session().as_str())
}

/// Removes every container of this process that is still there (dropped runs after a cancel).
async fn remove_containers<B: ContainerBackend>(shared: &Shared<B>) {
    // A creation under way when its run was dropped still makes a container: wait for it.
    shared.registry.settle().await;
    let mut failed: Vec<String> = Vec::new();
    for id in shared.registry.ids() {
        if let Err(e) = shared.backend.container_remove(&id).await {
            failed.push(format!("{id}: {e}"));
        }
        shared.registry.remove(&id);
    }
    // Belt and braces: containers of this process that are not in the registry.
    if let Ok(found) = shared
        .backend
        .containers_with_label(&own_containers(shared))
        .await
    {
        for c in found {
            if let Err(e) = shared.backend.container_remove(&c.id).await {
                failed.push(format!("{}: {e}", c.id));
            }
        }
    }
    if let Some(first) = failed.first() {
        shared.warn(format!(
            "{} container(s) could not be removed (first: {first}); `swtbench clean --run-id {}` \
             removes them once the engine answers",
            failed.len(),
            shared.settings.run_id
        ));
    }
}

async fn remove_image<B: ContainerBackend>(shared: &Shared<B>, tag: &str, kind: ImageKind) {
    if !shared.removed_images.locked().insert(tag.to_string()) {
        return;
    }
    match shared.backend.image_remove(tag, false).await {
        Ok(true) => {
            // The builder keeps its answer for the tag, so a late prefetch cannot build it
            // again for nobody.
            shared.stats(|s| s.images_removed += 1);
            shared.emit(Event::ImageRemoved {
                tag: tag.to_string(),
                kind,
            });
        }
        Ok(false) => {}
        Err(e) => shared.warn(format!("could not remove image {tag}: {e}")),
    }
}

/// Removes the images above the cache level that are still there, children first.
async fn remove_images_at_end<B: ContainerBackend>(shared: &Shared<B>) {
    let built: BTreeSet<String> = shared.builder.built_tags().into_iter().collect();
    for (tag, kind) in shared.lifecycle.all_children_first() {
        if shared.lifecycle.should_remove(&tag, built.contains(&tag)) {
            remove_image(shared, &tag, kind).await;
        }
    }
    // Temporary images of this run id that this process did not need (an earlier, killed process
    // of the run built them and every run that needed them is reused now).
    let filter = LabelFilter::new(RUN_ID, shared.settings.run_id.as_str());
    let Ok(mut found) = shared.backend.images_with_label(&filter).await else {
        return;
    };
    let kind_of = |i: &ImageInfo| match i.labels.get(KIND).map(String::as_str) {
        Some("base") => Some(ImageKind::Base),
        Some("env") => Some(ImageKind::Env),
        Some("instance") => Some(ImageKind::Instance),
        _ => None,
    };
    found.sort_by_key(|i| std::cmp::Reverse(kind_of(i)));
    for image in found {
        let Some(kind) = kind_of(&image) else {
            continue;
        };
        if shared.settings.images.cache_level.keeps(kind) {
            continue;
        }
        for tag in &image.tags {
            remove_image(shared, tag, kind).await;
        }
    }
}

/// How an instance ends: what [`finish`] records.
struct Ending {
    outcome: InstanceOutcome,
    report: Option<InstanceReport>,
    all_reused: bool,
    reasons: Vec<String>,
    runs: Vec<RunSummary>,
}

fn finish<B: ContainerBackend>(
    shared: &Shared<B>,
    ip: &InstancePlan,
    started: Instant,
    ending: Ending,
) -> InstanceResult {
    let Ending {
        outcome,
        report,
        all_reused,
        reasons,
        runs,
    } = ending;
    match &report {
        Some(r) => {
            if let Err(e) = write_report(&ip.report_dir, r) {
                shared.warn(format!(
                    "{}: writing report.json failed: {e}",
                    ip.instance_id
                ));
            }
        }
        None => {
            if let Err(e) = remove_stale_report(&ip.report_dir) {
                shared.warn(format!(
                    "{}: removing a stale report.json failed: {e}",
                    ip.instance_id
                ));
            }
        }
    }
    let summary = InstanceSummary {
        instance_id: ip.instance_id.clone(),
        outcome: outcome.clone(),
        reasons: reasons.clone(),
        runs,
    };
    if let Err(e) = write_summary(&ip.report_dir, &summary) {
        shared.warn(format!(
            "{}: writing the instance summary failed: {e}",
            ip.instance_id
        ));
    }
    shared.emit(Event::InstanceFinished {
        instance_id: ip.instance_id.clone(),
        outcome: outcome.clone(),
        duration_ms: started.elapsed().as_millis() as u64,
    });
    InstanceResult {
        instance_id: ip.instance_id.clone(),
        outcome,
        report,
        all_reused,
        reasons,
    }
}

async fn evaluate_instance<B: ContainerBackend>(
    shared: Arc<Shared<B>>,
    ip: InstancePlan,
) -> InstanceResult {
    let started = Instant::now();
    if ip.needs_containers() && !shared.settings.skip_eval {
        shared.emit(Event::InstanceStarted {
            instance_id: ip.instance_id.clone(),
        });
    }
    let result = evaluate_inner(&shared, &ip, started).await;
    if ip.needs_containers() {
        if let Some(chain) = &ip.images {
            if shared.lifecycle.release(&chain.instance) {
                let built = shared.builder.built_tags().contains(&chain.instance);
                if shared.lifecycle.should_remove(&chain.instance, built) {
                    remove_image(&shared, &chain.instance, ImageKind::Instance).await;
                }
            }
        }
    }
    result
}

async fn evaluate_inner<B: ContainerBackend>(
    shared: &Arc<Shared<B>>,
    ip: &InstancePlan,
    started: Instant,
) -> InstanceResult {
    let id = ip.instance_id.as_str();
    let fail = |outcome: InstanceOutcome, reasons: Vec<String>| {
        finish(
            shared,
            ip,
            started,
            Ending {
                outcome,
                report: None,
                all_reused: false,
                reasons,
                runs: Vec::new(),
            },
        )
    };
    match &ip.action {
        InstanceAction::Skip { cause } => {
            let reason = cause.to_string();
            return fail(
                InstanceOutcome::Skipped {
                    reason: reason.clone(),
                },
                vec![reason],
            );
        }
        InstanceAction::EmptyPatch => {
            return finish(
                shared,
                ip,
                started,
                Ending {
                    outcome: InstanceOutcome::EmptyPatch,
                    report: Some(InstanceReport::empty_patch(id)),
                    all_reused: false,
                    reasons: vec!["the prediction has no usable patch; nothing was run".into()],
                    runs: Vec::new(),
                },
            );
        }
        InstanceAction::Evaluate | InstanceAction::ExtractThenEvaluate => {}
    }
    let Some(instance) = shared.instances.get(id) else {
        return fail(
            InstanceOutcome::Error {
                reason: "instance missing from the evaluation".into(),
            },
            Vec::new(),
        );
    };
    let Some(spec) = ip.spec.as_deref() else {
        return fail(
            InstanceOutcome::Error {
                reason: "no rendered spec".into(),
            },
            Vec::new(),
        );
    };
    let needs = ip.needs_containers();
    if needs && shared.settings.skip_eval {
        let reason = "outputs are missing and --skip-eval runs nothing".to_string();
        return fail(
            InstanceOutcome::Error {
                reason: reason.clone(),
            },
            vec![reason],
        );
    }
    let mut image: Option<String> = None;
    if needs {
        shared.phase(id, Phase::Images);
        match ensure_images(shared, ip, spec).await {
            Ok(tag) => image = Some(tag),
            Err(reason) => {
                // A build that failed because the engine went away is not this image's fault.
                shared.check_engine().await;
                return fail(
                    InstanceOutcome::Error {
                        reason: reason.clone(),
                    },
                    vec![reason],
                );
            }
        }
    }
    let (runs, model_patch) = match &ip.action {
        InstanceAction::ExtractThenEvaluate => {
            shared.phase(id, Phase::Extracting);
            let image = image.clone().unwrap_or_default();
            let patch = match crate::prepare::extract_patch(
                shared.backend.clone(),
                &shared.settings,
                &shared.registry,
                crate::prepare::ExtractJob {
                    instance,
                    spec,
                    image: &image,
                    report_dir: &ip.report_dir,
                    raw: ip.raw_model_patch.as_deref().unwrap_or_default(),
                },
            )
            .await
            {
                Ok(p) => p,
                Err(crate::prepare::ExtractFailure::NothingExtracted(why)) => {
                    let reason = SkipCause::ExtractionFailed(why).to_string();
                    return fail(
                        InstanceOutcome::Skipped {
                            reason: reason.clone(),
                        },
                        vec![reason],
                    );
                }
                Err(crate::prepare::ExtractFailure::Infrastructure(why)) => {
                    let reason = format!("patch extraction could not run: {why}");
                    return fail(
                        InstanceOutcome::Error {
                            reason: reason.clone(),
                        },
                        vec![reason],
                    );
                }
            };
            let logs = LogsRoot::new(&shared.settings.outputs.logs);
            let base_id = shared
                .images
                .get(&spec.keys.base)
                .and_then(Option::as_ref)
                .filter(|_| ip.images.as_ref().is_some_and(|c| c.base_external))
                .map(|i| i.id.clone());
            let ctx = RunContext {
                settings: &shared.settings,
                logs: &logs,
                model_dir: &shared.model_dir,
                tracer_sha256: shared.tracer_sha256.as_deref(),
                base_image_id: base_id.as_deref(),
            };
            match plan_runs(&ctx, instance, spec, &patch, &DiskOutputs) {
                Ok(runs) => (runs, patch),
                Err(e) => return fail(InstanceOutcome::Error { reason: e.clone() }, vec![e]),
            }
        }
        _ => (ip.runs.clone(), ip.model_patch.clone().unwrap_or_default()),
    };

    let mut summaries: Vec<RunSummary> = Vec::with_capacity(6);
    let mut reasons: Vec<String> = Vec::new();
    let mut executed_any = false;
    for run in &runs {
        shared.phase(id, Phase::Running { run: run.kind });
        let outcome = match &run.action {
            RunAction::Reuse | RunAction::ReuseUnkeyed => {
                shared.stats(|s| s.runs_reused += 1);
                if let Some(r) = crate::keys::read_key_file(&run.dir) {
                    if r.result.timed_out {
                        reasons.push(format!("{} timed out (output reused)", run.kind));
                    }
                }
                RunOutcome::Reused
            }
            RunAction::Execute | RunAction::SameAs { .. } => {
                let job = RunJob {
                    instance_id: id,
                    run,
                    image: image.as_deref().unwrap_or_default(),
                    user: spec.user(),
                    platform: spec.platform(),
                    model_patch: &model_patch,
                    tracer: shared.tracer.as_deref(),
                };
                let o = execute_or_copy(shared, &job).await;
                if matches!(o, RunOutcome::Executed { .. }) {
                    executed_any = true;
                }
                o
            }
        };
        match &outcome {
            RunOutcome::Executed {
                timed_out: true, ..
            } => {
                shared.stats(|s| s.runs_timed_out += 1);
                reasons.push(format!(
                    "{} timed out after {} s; its output up to then was graded",
                    run.kind,
                    shared.settings.exec.timeout.as_secs()
                ));
            }
            RunOutcome::Copied { from }
                if crate::keys::read_key_file(&run.dir).is_some_and(|r| r.result.timed_out) =>
            {
                reasons.push(format!(
                    "{} timed out (output copied from {from})",
                    run.kind
                ));
            }
            _ => {}
        }
        shared.emit(Event::RunFinished {
            instance_id: id.to_string(),
            run: run.kind,
            result: outcome.clone(),
        });
        let failed = match &outcome {
            RunOutcome::Failed { reason } => Some(format!("{}: {reason}", run.kind)),
            _ => None,
        };
        summaries.push(RunSummary {
            run: run.kind,
            dir: run.dir.display().to_string(),
            key: run.key.clone(),
            result: outcome,
        });
        if let Some(reason) = failed {
            shared.stats(|s| s.runs_failed += 1);
            reasons.push(reason.clone());
            return finish(
                shared,
                ip,
                started,
                Ending {
                    outcome: InstanceOutcome::Error { reason },
                    report: None,
                    all_reused: false,
                    reasons,
                    runs: summaries,
                },
            );
        }
    }

    shared.phase(id, Phase::Grading);
    let options = GradeOptions {
        exec_mode: shared.settings.grade_mode(),
        ..Default::default()
    };
    match grade_from_outputs(
        id,
        &instance.repo,
        &instance.golden_code_patch,
        &runs,
        &options,
        ip.parser,
    ) {
        Ok(report) => {
            let outcome = if report.resolved {
                InstanceOutcome::Resolved
            } else {
                InstanceOutcome::Unresolved {
                    applied: report.patch_successfully_applied,
                }
            };
            finish(
                shared,
                ip,
                started,
                Ending {
                    outcome,
                    report: Some(report),
                    all_reused: !executed_any,
                    reasons,
                    runs: summaries,
                },
            )
        }
        Err(e) => {
            let reason = format!("grading failed: {e}");
            reasons.push(reason.clone());
            finish(
                shared,
                ip,
                started,
                Ending {
                    outcome: InstanceOutcome::Error { reason },
                    report: None,
                    all_reused: false,
                    reasons,
                    runs: summaries,
                },
            )
        }
    }
}

/// Executes a run, or copies the output of the run with the same key that got there first.
async fn execute_or_copy<B: ContainerBackend>(
    shared: &Arc<Shared<B>>,
    job: &RunJob<'_>,
) -> RunOutcome {
    let cell = shared.flight(&job.run.key);
    let mut here: Option<crate::execute::Executed> = None;
    let done = cell
        .get_or_init(|| async {
            match execute_run(&shared.backend, &shared.settings, &shared.registry, job).await {
                Ok(x) => {
                    let result = x.result.clone();
                    here = Some(x);
                    Ok(Done {
                        dir: job.run.dir.clone(),
                        result,
                    })
                }
                Err(e) => {
                    if e.is_storage_failure() {
                        shared.abort(e.to_string());
                    } else if e.is_engine_failure() {
                        shared.check_engine().await;
                    }
                    Err(e.to_string())
                }
            }
        })
        .await
        .clone();
    if done.is_err() {
        // A failure (a killed container, say) is this instance's; an instance that needs the
        // same run later tries it again instead of inheriting the failure.
        let mut flights = shared.flights.locked();
        if flights
            .get(&job.run.key)
            .is_some_and(|c| Arc::ptr_eq(c, &cell))
        {
            flights.remove(&job.run.key);
        }
    }
    match (done, here) {
        (Ok(_), Some(x)) => {
            shared.stats(|s| s.runs_executed += 1);
            RunOutcome::Executed {
                exit_code: x.result.exit_code,
                timed_out: x.result.timed_out,
                duration_ms: x.result.duration_ms,
                overhead_ms: x.overhead.as_millis() as u64,
            }
        }
        (Ok(d), None) if d.dir == job.run.dir => {
            shared.stats(|s| s.runs_reused += 1);
            RunOutcome::Reused
        }
        (Ok(d), None) => match copy_run(&d.dir, job, &d.result) {
            Ok(()) => {
                shared.stats(|s| s.runs_copied += 1);
                RunOutcome::Copied {
                    from: d.dir.display().to_string(),
                }
            }
            Err(e) => RunOutcome::Failed {
                reason: e.to_string(),
            },
        },
        (Err(reason), _) => RunOutcome::Failed { reason },
    }
}

fn policy<B: ContainerBackend>(shared: &Shared<B>, tag: &str) -> RebuildPolicy {
    if shared.settings.images.force_rebuild
        || matches!(shared.image_actions.get(tag), Some(ImageAction::Rebuild(_)))
    {
        RebuildPolicy::Force
    } else {
        RebuildPolicy::Reuse
    }
}

fn announce<B: ContainerBackend>(shared: &Shared<B>, tag: &str, kind: ImageKind, who: &str) {
    let planned_build = matches!(
        shared.image_actions.get(tag),
        Some(ImageAction::Build | ImageAction::Rebuild(_))
    );
    if planned_build && shared.announced_builds.locked().insert(tag.to_string()) {
        shared.emit(Event::ImageBuildStarted {
            tag: tag.to_string(),
            kind,
            instance_id: who.to_string(),
        });
    }
}

fn ready<B: ContainerBackend>(shared: &Shared<B>, e: &EnsuredImage, kind: ImageKind) {
    if let BuildOutcome::Built { duration } = e.outcome {
        // Reported once, by the worker whose call built it.
        if shared
            .announced_builds
            .locked()
            .insert(format!("ready:{}", e.tag))
        {
            shared.stats(|s| s.images_built += 1);
            shared.emit(Event::ImageReady {
                tag: e.tag.clone(),
                kind,
                outcome: ImageOutcome::Built {
                    duration_ms: duration.as_millis() as u64,
                },
            });
        }
    }
}

/// Makes the instance's three images available; returns the instance image tag.
async fn ensure_images<B: ContainerBackend>(
    shared: &Arc<Shared<B>>,
    ip: &InstancePlan,
    spec: &ExecSpec,
) -> Result<String, String> {
    let id = ip.instance_id.as_str();
    let chain = ip
        .images
        .as_ref()
        .ok_or_else(|| "no images planned".to_string())?;
    let base_info = if chain.base_external {
        let found = shared
            .backend
            .image_inspect(&chain.base)
            .await
            .map_err(|e| e.to_string())?;
        Some(found.ok_or_else(|| SkipCause::BaseImageMissing(chain.base.clone()).to_string())?)
    } else {
        None
    };
    let builds_instance = matches!(
        shared.image_actions.get(&chain.instance),
        Some(ImageAction::Build | ImageAction::Rebuild(_))
    ) || !matches!(shared.images.get(&chain.instance), Some(Some(_)));
    // Once the image is ready the builder answers from its cache: no mirror needed.
    let builds_instance =
        builds_instance && !shared.ready_images.locked().contains(&chain.instance);
    // One recipe set per instance image, shared by the prefetcher and the workers: with a
    // mirror, the context holds the whole repository.
    let cached = shared.recipes.locked().get(&chain.instance).cloned();
    let recipes = match cached {
        Some(r) => r,
        None => {
            let r = Arc::new(
                recipes(
                    &shared.settings,
                    spec,
                    base_info.as_ref().map(|b| b.id.as_str()),
                    builds_instance,
                )
                .map_err(|e| e.to_string())?,
            );
            shared
                .recipes
                .locked()
                .entry(chain.instance.clone())
                .or_insert(r)
                .clone()
        }
    };
    let failed = |tag: &str, kind: ImageKind, e: swtbench_backend::BackendError| {
        let mut reason = format!("image {tag} could not be built: {e}");
        if let swtbench_backend::BackendError::BuildFailed { log_tail, .. } = &e {
            let informative = |l: &&String| {
                let l = l.trim();
                !l.is_empty()
                    && !l.starts_with("Removing intermediate container")
                    && !l.starts_with("ERROR: The command")
                    && !l.starts_with("--->")
            };
            if let Some(last) = log_tail.iter().rev().find(informative) {
                reason.push_str(&format!(" (build log: {})", last.trim()));
            }
        }
        let log = crate::images::build_log_dir(&shared.settings.outputs.build_logs, kind, tag)
            .join(swtbench_backend::builder::BUILD_LOG);
        reason.push_str(&format!("; see {}", log.display()));
        // Every instance of the image fails with it; the event is sent once.
        if shared
            .announced_builds
            .locked()
            .insert(format!("failed:{tag}"))
        {
            shared.emit(Event::ImageReady {
                tag: tag.to_string(),
                kind,
                outcome: ImageOutcome::Failed {
                    reason: reason.clone(),
                },
            });
        }
        reason
    };
    let base = match (&recipes.base, base_info) {
        (Some(recipe), _) => {
            announce(shared, recipe.tag(), ImageKind::Base, id);
            let e = shared
                .builder
                .ensure(recipe, policy(shared, recipe.tag()), None)
                .await
                .map_err(|e| failed(recipe.tag(), ImageKind::Base, e))?;
            ready(shared, &e, ImageKind::Base);
            e
        }
        (None, Some(info)) => EnsuredImage {
            tag: chain.base.clone(),
            image: ImageInfo { ..info },
            outcome: BuildOutcome::Reused,
        },
        (None, None) => return Err("the base image has neither a recipe nor an image".into()),
    };
    announce(shared, recipes.env.tag(), ImageKind::Env, id);
    let env = shared
        .builder
        .ensure(&recipes.env, policy(shared, recipes.env.tag()), Some(&base))
        .await
        .map_err(|e| failed(recipes.env.tag(), ImageKind::Env, e))?;
    ready(shared, &env, ImageKind::Env);
    announce(shared, recipes.instance.tag(), ImageKind::Instance, id);
    let inst = shared
        .builder
        .ensure(
            &recipes.instance,
            policy(shared, recipes.instance.tag()),
            Some(&env),
        )
        .await
        .map_err(|e| failed(recipes.instance.tag(), ImageKind::Instance, e))?;
    ready(shared, &inst, ImageKind::Instance);
    // The image exists now; later callers get it from the builder's cache, not the recipe.
    shared.ready_images.locked().insert(chain.instance.clone());
    shared.recipes.locked().remove(&chain.instance);
    Ok(inst.tag)
}
