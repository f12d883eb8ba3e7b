//! The dispatcher: schedules the plan's instances on `max_workers` workers, joins them (a
//! panicking instance is that instance's error), clears containers left by an earlier process
//! before and removes this process's after, and ends with the statistics and the run report.
//!
//! What an instance does is [`super::instance`]'s; images are [`super::image_state`]'s.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use swtbench_backend::labels::{LabelFilter, RUN, RUN_ID};
use swtbench_backend::{BuildNetwork, ContainerBackend};
use swtbench_core::Instance;
use swtbench_grade::run_report::{
    EntryState, ErrorReason, RunReport, RunReportEntry, RunReportInput, SkipReason,
};
use swtbench_grade::InstanceReport;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::image_state::{ensure_images, images_to_remove_at_end, remove_images_at_end};
use super::instance::{evaluate_instance, interrupted, InstanceResult};
use super::shared::Shared;
use super::slots::Opener;
use super::watch::{Stopped, Watch, CANCELLED_CLEANUP_LIMIT};
use crate::cancel::Cancel;
use crate::events::{CancelReason, EvaluationStats, Event, EventSink, InstanceOutcome};
use crate::leftovers::{self, Leftover, SweepScope};
use crate::outcome::{AbortReason, InstanceError};
use crate::report::{reported_ids, run_parameters, write_run_report};
use crate::session::{Liveness, SESSION};
use swtbench_plan::plan::{ImageInventory, InstancePlan, Plan};
use swtbench_plan::settings::RunSettings;

/// Everything an evaluation needs besides the engine.
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
    /// When merging shards (`run --merge`): what the shards' own run reports said.
    pub shard_outcomes: Option<ShardOutcomes>,
}

/// What the shards' run reports said of their instances, for the run report over the whole run
/// that a merge writes: reused and errors as the shard that evaluated the instance saw them, so
/// that the report is the one a single process evaluating everything would have written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardOutcomes {
    /// Instances whose reports their shard reused from an earlier invocation (`completed_ids`).
    pub reused: BTreeSet<String>,
    /// Instances their shard ended with an error: its reason and, when it gave one, its cause.
    pub errors: BTreeMap<String, (String, Option<String>)>,
}

/// What an evaluation produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The instances of the run report, in plan order.
    pub results: Vec<InstanceResult>,
    /// `None` when killed before the reports, or when the run ended without grading any instance
    /// ([`RunOutput::evaluated_nothing`]; a shard's is written all the same).
    pub run_report: Option<RunReport>,
    pub run_report_path: Option<PathBuf>,
    /// The graded reports, sorted by instance id (for the leaderboard table).
    pub reports: Vec<InstanceReport>,
    pub stats: EvaluationStats,
    pub cancelled: Option<CancelReason>,
    /// Why the evaluation stopped early on its own (the engine stopped answering, the disk is
    /// full), if it did; `cancelled` is then `Interrupt`.
    pub aborted: Option<AbortReason>,
    /// Non-fatal problems (report writing, image removal), one sentence each.
    pub warnings: Vec<String>,
}

impl RunOutput {
    /// Whether no instance was graded: each one ended in an error or was interrupted.
    pub fn evaluated_nothing(&self) -> bool {
        evaluated_nothing(&self.results)
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
    let mut eval = eval;
    let carried = eval.shard_outcomes.take();
    let (shared, plan, submitted_ids) = Shared::new(backend, sink, cancel.clone(), eval);
    let shared = Arc::new(shared);
    // Outputs already on disk can be copied by later runs with the same key.
    shared.flights.seed(&plan);
    let in_run: Vec<InstancePlan> = plan
        .instances
        .iter()
        .filter(|i| i.in_run())
        .cloned()
        .collect();
    if !shared.settings.skip_eval && shared.settings.sweep_leftovers {
        remove_leftovers(&shared, true).await;
    }
    announce_start(&shared, &plan, &in_run);
    let mut results = schedule_and_join(&shared, &in_run, &plan.order).await;
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
    // A container a killed earlier process had asked for can appear after the first sweep:
    // once more at the end of a run that ended normally (the engine answers).
    if !shared.settings.skip_eval && shared.settings.sweep_leftovers && cancel.level().is_none() {
        remove_leftovers(&shared, false).await;
    }
    let unstopped = if shared.settings.skip_eval {
        Vec::new()
    } else {
        clean_up(&shared).await
    };
    let ordered: Vec<InstanceResult> = in_run
        .iter()
        .filter_map(|ip| results.remove(&ip.instance_id))
        .collect();
    let stats = tally(shared.stats_now(), &ordered);
    let mut reports: Vec<InstanceReport> =
        ordered.iter().filter_map(|r| r.report.clone()).collect();
    reports.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
    // A run that ended on its own without grading any instance (each one an error) has no result
    // to report: no run report, whose all-zero numbers would read as one. A stopped run keeps its
    // partial report, and a shard its own (the merge reads it).
    let graded_nothing =
        evaluated_nothing(&ordered) && cancel.level().is_none() && shared.settings.shard.is_none();
    let no_report = cancel.level() == Some(CancelReason::Kill) || graded_nothing;
    let (run_report, run_report_path) = if no_report {
        (None, None)
    } else {
        let input = RunReportInput {
            entries: ordered
                .iter()
                .map(|r| report_entry(r, carried.as_ref()))
                .collect(),
            submitted_ids,
            unstopped_containers: unstopped,
            unremoved_images: Vec::new(),
            parameters: run_parameters(&shared.settings, started.elapsed()),
            error_causes: ordered
                .iter()
                .filter_map(|r| {
                    match (
                        &r.outcome,
                        carried.as_ref().and_then(|c| c.errors.get(&r.instance_id)),
                    ) {
                        (InstanceOutcome::Error { .. }, Some((_, cause))) => {
                            Some((r.instance_id.clone(), cause.clone()?))
                        }
                        (InstanceOutcome::Error { reason }, None) => {
                            Some((r.instance_id.clone(), reason.cause().to_string()))
                        }
                        _ => None,
                    }
                })
                .collect(),
            limit_hits: ordered
                .iter()
                .filter(|r| !r.limit_hits.is_empty())
                .map(|r| {
                    let hits = r.limit_hits.iter().map(ToString::to_string).collect();
                    (r.instance_id.clone(), hits)
                })
                .collect(),
            suspicious: ordered
                .iter()
                .filter_map(|r| {
                    let i = r.integrity.as_ref().filter(|i| i.is_suspicious())?;
                    let texts = i.reasons.iter().map(ToString::to_string).collect();
                    Some((r.instance_id.clone(), texts))
                })
                .collect(),
            network: ordered
                .iter()
                .filter_map(|r| {
                    let i = r.integrity.as_ref().filter(|i| !i.network.is_empty())?;
                    Some((r.instance_id.clone(), i.network.clone()))
                })
                .collect(),
        };
        write_report(&shared, RunReport::new(&input))
    };
    shared.emit(Event::EvaluationFinished {
        stats,
        duration_ms: started.elapsed().as_millis() as u64,
    });
    RunOutput {
        results: ordered,
        run_report,
        run_report_path,
        reports,
        stats,
        cancelled: cancel.level(),
        aborted: shared.aborted(),
        warnings: shared.warnings(),
    }
}

fn announce_start<B: ContainerBackend>(shared: &Shared<B>, plan: &Plan, in_run: &[InstancePlan]) {
    // --skip-eval runs and builds nothing: an instance whose outputs are missing is an error.
    let runs_anything = !shared.settings.skip_eval;
    let planned = |n: usize| if runs_anything { n } else { 0 };
    shared.emit(Event::EvaluationStarted {
        run_id: plan.run_id.clone(),
        model: plan.model.clone(),
        instances: in_run.len(),
        to_evaluate: in_run
            .iter()
            .filter(|i| runs_anything && i.needs_containers())
            .count(),
        runs_to_execute: planned(plan.counts.runs_execute),
        images_to_build: planned(plan.counts.images_build),
    });
}

/// The instances on their workers, by task id (to name the instance of a task that panicked).
#[derive(Default)]
struct Workers {
    set: JoinSet<InstanceResult>,
    tasks: HashMap<tokio::task::Id, String>,
}

/// Evaluates the instances: those that need no container at once (in plan order), then the
/// others in the plan's schedule order (the longest expected first), with the image prefetcher
/// running ahead. At most [`admitted_at_once`] instances are under way at a time; their runs
/// share the container slots. Stops scheduling on a cancel.
async fn schedule_and_join<B: ContainerBackend>(
    shared: &Arc<Shared<B>>,
    in_run: &[InstancePlan],
    order: &[String],
) -> BTreeMap<String, InstanceResult> {
    let cancel = &shared.cancel;
    let mut results: BTreeMap<String, InstanceResult> = BTreeMap::new();
    let mut workers = Workers::default();
    let containers = |ip: &&InstancePlan| ip.needs_containers() && !shared.settings.skip_eval;
    for ip in in_run.iter().filter(|ip| !containers(ip)) {
        if cancel.is_cancelled() {
            break;
        }
        let r = evaluate_instance(shared.clone(), ip.clone(), None).await;
        results.insert(r.instance_id.clone(), r);
    }
    let queue = in_schedule_order(in_run.iter().filter(containers).collect(), order);
    let window = admitted_at_once(shared);
    let admitted = Arc::new(Semaphore::new(window));
    // The slots open once the first instances queued their runs (or after a second at most):
    // the longest of them go first, not the first to ask.
    let mut opener = (!queue.is_empty()).then(|| {
        shared.slots.close();
        let slots = shared.slots.clone();
        tokio::spawn(async move {
            tokio::time::sleep(OPEN_AT_THE_LATEST).await;
            slots.open();
        });
        Arc::new(Opener(shared.slots.clone()))
    });
    let (scheduled_tx, scheduled_rx) = tokio::sync::watch::channel(0usize);
    let prefetch = (!shared.settings.skip_eval).then(|| {
        tokio::spawn(prefetch_images(
            shared.clone(),
            queue.iter().map(|ip| (*ip).clone()).collect(),
            scheduled_rx,
        ))
    });
    for (index, ip) in queue.iter().enumerate() {
        scheduled_tx.send_replace(index);
        // The first instances hold the slots closed until their runs are queued.
        let token = if index + 1 < window {
            opener.clone()
        } else {
            opener.take()
        };
        if cancel.is_cancelled() {
            break;
        }
        let permit = tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            p = admitted.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (shared2, ip2) = (shared.clone(), (*ip).clone());
        let handle = workers.set.spawn(async move {
            let _permit = permit;
            // Interrupted while it runs, it ends at once (evaluate_instance says so); once
            // graded, its result stands.
            evaluate_instance(shared2, ip2, token).await
        });
        workers.tasks.insert(handle.id(), ip.instance_id.clone());
    }
    drop(opener);
    join(shared, workers, &mut results).await;
    if let Some(p) = prefetch {
        // Every instance is done; a build still running is for nobody.
        p.abort();
        let _ = p.await;
    }
    results
}

/// How long the container slots stay closed at the start at most, waiting for the first
/// instances to queue their runs.
const OPEN_AT_THE_LATEST: std::time::Duration = std::time::Duration::from_secs(1);

/// How many instances are under way at once: enough that the container slots always have runs
/// to choose from (an instance has up to six), few enough that the instance images the cache
/// level removes after their instance do not pile up.
fn admitted_at_once<B: ContainerBackend>(shared: &Shared<B>) -> usize {
    shared.slots.capacity() + shared.settings.images.build_workers.max(1)
}

/// `instances` in the order of `order` (ids); any it does not name follow in their own order.
fn in_schedule_order<'a>(
    mut instances: Vec<&'a InstancePlan>,
    order: &[String],
) -> Vec<&'a InstancePlan> {
    let rank: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    instances.sort_by_key(|ip| {
        rank.get(ip.instance_id.as_str())
            .copied()
            .unwrap_or(usize::MAX)
    });
    instances
}

/// Waits for every worker; a kill drops them all at once.
async fn join<B: ContainerBackend>(
    shared: &Shared<B>,
    mut workers: Workers,
    results: &mut BTreeMap<String, InstanceResult>,
) {
    loop {
        let next = tokio::select! {
            biased;
            _ = shared.cancel.reached(CancelReason::Kill) => {
                workers.set.abort_all();
                while workers.set.join_next().await.is_some() {}
                break;
            }
            n = workers.set.join_next_with_id() => n,
        };
        match next {
            None => break,
            Some(Ok((_, r))) => {
                results.insert(r.instance_id.clone(), r);
            }
            Some(Err(e)) if e.is_panic() => {
                // A bug, not the prediction's fault: say so for this instance and go on.
                if let Some(id) = workers.tasks.get(&e.id()) {
                    let r = panicked(shared, id, InstanceError::Internal(e.to_string()));
                    results.insert(id.clone(), r);
                }
            }
            Some(Err(_)) => {}
        }
    }
}

fn panicked<B: ContainerBackend>(
    shared: &Shared<B>,
    id: &str,
    error: InstanceError,
) -> InstanceResult {
    let reason = error.to_string();
    shared.emit(Event::InstanceFinished {
        instance_id: id.to_string(),
        outcome: InstanceOutcome::Error {
            reason: error.clone(),
        },
        duration_ms: 0,
    });
    InstanceResult {
        instance_id: id.to_string(),
        outcome: InstanceOutcome::Error { reason: error },
        report: None,
        all_reused: false,
        reasons: vec![reason],
        limit_hits: Vec::new(),
        integrity: None,
    }
}

/// Whether no instance was graded: every one ended in an error or was interrupted (none resolved,
/// unresolved, not applied, with an empty patch, or skipped).
fn evaluated_nothing(results: &[InstanceResult]) -> bool {
    !results.is_empty()
        && results.iter().all(|r| {
            matches!(
                r.outcome,
                InstanceOutcome::Error { .. } | InstanceOutcome::Interrupted
            )
        })
}

/// The counters of the evaluation with the instances' outcomes counted in.
fn tally(mut s: EvaluationStats, results: &[InstanceResult]) -> EvaluationStats {
    s.instances = results.len();
    for r in results {
        match &r.outcome {
            InstanceOutcome::Resolved => s.resolved += 1,
            InstanceOutcome::Unresolved { applied: true } => s.unresolved += 1,
            InstanceOutcome::Unresolved { applied: false } => s.not_applied += 1,
            InstanceOutcome::EmptyPatch => s.empty_patch += 1,
            InstanceOutcome::Skipped { .. } => s.skipped += 1,
            InstanceOutcome::Error { .. } => s.errors += 1,
            InstanceOutcome::Interrupted => s.interrupted += 1,
        }
    }
    s
}

/// The run report's entry of an instance (as its shard saw it, when merging).
fn report_entry(r: &InstanceResult, carried: Option<&ShardOutcomes>) -> RunReportEntry {
    let state = match (&r.outcome, &r.report) {
        (InstanceOutcome::EmptyPatch, report) => EntryState::Graded {
            report: Box::new(
                report
                    .clone()
                    .unwrap_or_else(|| InstanceReport::empty_patch(&r.instance_id)),
            ),
            reused: false,
            empty_patch: true,
        },
        (InstanceOutcome::Resolved | InstanceOutcome::Unresolved { .. }, Some(report)) => {
            EntryState::Graded {
                report: Box::new(report.clone()),
                reused: carried.map_or(r.all_reused, |c| c.reused.contains(&r.instance_id)),
                empty_patch: false,
            }
        }
        (InstanceOutcome::Skipped { reason }, _) => {
            EntryState::Skipped(SkipReason::Other(reason.to_string()))
        }
        (InstanceOutcome::Interrupted, _) => EntryState::Skipped(SkipReason::Interrupted),
        (InstanceOutcome::Error { reason }, _) => EntryState::Error(ErrorReason::Run(
            match carried.and_then(|c| c.errors.get(&r.instance_id)) {
                Some((said, _)) => said.clone(),
                None => reason.to_string(),
            },
        )),
        (_, None) => EntryState::Error(ErrorReason::Run("no grade".into())),
    };
    RunReportEntry {
        instance_id: r.instance_id.clone(),
        state,
    }
}

/// Writes the run report; a failure is a warning (the instances' reports are on disk).
fn write_report<B: ContainerBackend>(
    shared: &Shared<B>,
    mut report: RunReport,
) -> (Option<RunReport>, Option<PathBuf>) {
    let settings = &shared.settings;
    // A rerun of the run id on other instances replaces the run report: say so, in it and aloud.
    let model_reports = swtbench_core::layout::LogsRoot::new(&settings.outputs.logs)
        .model_reports_dir(&settings.run_id, &shared.model_dir);
    report.not_in_this_report_ids = reported_ids(&model_reports)
        .into_iter()
        .filter(|id| !report.outcomes.contains_key(id))
        .collect();
    if !report.not_in_this_report_ids.is_empty() && settings.shard.is_none() {
        shared.warn(format!(
            "the run report covers the {} instance(s) of this invocation; {} other instance(s) \
             have reports under run id {} (listed as not_in_this_report_ids): run again with all \
             of them selected for a report over the whole run (their finished runs are reused)",
            report.total_instances,
            report.not_in_this_report_ids.len(),
            settings.run_id
        ));
    }
    match write_run_report(
        &settings.outputs.results,
        &shared.model_dir,
        &settings.run_id,
        settings.shard,
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
}

/// What processes that have ended left: the containers of dead owners on the engine (any run
/// id: test runs, commit builds, …; [`crate::leftovers::sweep`]), this run id's containers without
/// an owner (an earlier version's), and the unfinished output files of dead processes in the
/// output tree. Said in one event, and only when there was something. This process's own
/// containers (at the end of a run, those whose removal is still under way) are never
/// leftovers: `clean_up` removes them. Containers of this run id of another process that may
/// still run (the same run id in another output directory, or on another host) are left alone,
/// with a warning when `warn_foreign`.
async fn remove_leftovers<B: ContainerBackend>(shared: &Shared<B>, warn_foreign: bool) {
    let run_id = shared.settings.run_id.as_str();
    let me = shared.registry.session();
    let mut left = Vec::new();
    match leftovers::sweep(shared.backend.as_ref(), me, SweepScope::default()).await {
        Ok(sweep) => {
            left.extend(sweep.removed);
            if let Some((first, e)) = sweep.failed.first() {
                shared.warn(format!(
                    "{} container(s) left by ended swtbench processes could not be removed \
                     (first: {}: {e}); `swtbench clean` tries again",
                    sweep.failed.len(),
                    first.container
                ));
            }
        }
        Err(e) => shared.warn(format!("listing leftover containers failed: {e}")),
    }
    let filter = LabelFilter::new(RUN_ID, run_id);
    let found = match shared.backend.containers_with_label(&filter).await {
        Ok(found) => found,
        Err(e) => {
            shared.warn(format!("listing leftover containers failed: {e}"));
            Vec::new()
        }
    };
    let mut foreign = 0;
    for c in &found {
        match c.labels.get(SESSION) {
            // An earlier version's container of this run id: only run containers (they name
            // their run) are taken for an earlier process's; a commit build's container of then
            // carries only its image's labels and ends by itself after its lifetime.
            None if c.labels.contains_key(RUN) => {
                if matches!(shared.backend.container_remove(&c.id).await, Ok(true)) {
                    left.push(Leftover::of(c));
                }
            }
            None => {}
            // Empty: a container made from a commit-built image (a user's), not swtbench's.
            Some(label) if label.is_empty() => {}
            Some(label) => {
                if matches!(
                    me.liveness(label),
                    Liveness::Alive | Liveness::OtherHost | Liveness::Unknown
                ) {
                    foreign += 1;
                }
            }
        }
    }
    let partial_files = swtbench_data::fsutil::sweep_journals(&shared.settings.outputs.logs)
        .removed
        .len();
    if !left.is_empty() || partial_files > 0 {
        shared.emit(Event::LeftoversRemoved {
            containers: left.len(),
            left,
            partial_files,
        });
    }
    if foreign > 0 && warn_foreign {
        shared.warn(format!(
            "{foreign} container(s) of run id {run_id} belong to another swtbench process that \
             may still be running (another output directory or host); left alone \
             (`swtbench clean --run-id {run_id} --force` removes them)"
        ));
    }
}

/// The label filter of this process's own containers.
fn own_containers<B: ContainerBackend>(shared: &Shared<B>) -> LabelFilter {
    LabelFilter::new(RUN_ID, shared.settings.run_id.as_str())
        .and(SESSION, shared.registry.session().as_str())
}

/// Removes this process's containers and the images above the cache level; returns the
/// containers that are still there (for the run report). Bounded on an engine that stopped
/// answering (see [`super::watch`]): then it names the containers it could not remove and ends.
async fn clean_up<B: ContainerBackend>(shared: &Shared<B>) -> Vec<String> {
    let limit = shared
        .cancel
        .is_cancelled()
        .then_some(CANCELLED_CLEANUP_LIMIT);
    let mut watch = Watch::new(shared.backend.as_ref(), limit);
    if matches!(shared.aborted(), Some(AbortReason::EngineGone(_))) {
        // The run stopped because the engine did not answer: ask once before every call waits.
        watch.probe().await;
    }
    let unremoved = remove_containers(shared, &mut watch).await;
    let images = images_to_remove_at_end(&shared.images());
    if watch
        .call(remove_images_at_end(&shared.images()))
        .await
        .is_none()
        && !images.is_empty()
    {
        if let Some(why) = watch.stopped() {
            shared.warn(format!(
                "{} image(s) above the cache level were not removed ({}): {}; `swtbench images \
                 rm --run-id {}` removes them once the engine answers",
                images.len(),
                images.join(", "),
                why.describe(),
                shared.settings.run_id
            ));
        }
    }
    let own = own_containers(shared);
    match watch.call(shared.backend.containers_with_label(&own)).await {
        Some(Ok(left)) => left
            .into_iter()
            .map(|c| c.names.first().cloned().unwrap_or(c.id))
            .collect(),
        Some(Err(_)) => Vec::new(),
        None => unremoved,
    }
}

/// Removes every container of this process that is still there (dropped runs after a cancel);
/// returns those it could not ask the engine to remove because it stopped answering.
async fn remove_containers<B: ContainerBackend>(
    shared: &Shared<B>,
    watch: &mut Watch<'_, B>,
) -> Vec<String> {
    // A creation under way when its run was dropped still makes a container: wait for it. The
    // removals of finished runs' and builds' containers, under way in the background, end first.
    let _ = watch.call(shared.registry.settle_removals()).await;
    let _ = watch.call(shared.backend.settle_background()).await;
    let settled =
        !shared.registry.creating_now() || watch.call(shared.registry.settle()).await.is_some();
    let mut failed: Vec<String> = Vec::new();
    let mut unremoved: Vec<String> = Vec::new();
    for id in shared.registry.ids() {
        match watch.call(shared.backend.container_remove(&id)).await {
            Some(Ok(_)) => shared.registry.remove(&id),
            Some(Err(e)) => {
                failed.push(format!("{id}: {e}"));
                shared.registry.remove(&id);
            }
            None => unremoved.push(id),
        }
    }
    // Belt and braces: containers of this process that are not in the registry.
    if let Some(Ok(found)) = watch
        .call(
            shared
                .backend
                .containers_with_label(&own_containers(shared)),
        )
        .await
    {
        for c in found {
            match watch.call(shared.backend.container_remove(&c.id)).await {
                Some(Ok(_)) => {}
                Some(Err(e)) => failed.push(format!("{}: {e}", c.id)),
                None => unremoved.push(c.id),
            }
        }
    }
    let run_id = &shared.settings.run_id;
    if let Some(first) = failed.first() {
        shared.warn(format!(
            "{} container(s) could not be removed (first: {first}); `swtbench clean --run-id \
             {run_id}` removes them once the engine answers",
            failed.len(),
        ));
    }
    if let Some(why) = watch.stopped() {
        shared.warn(unremoved_warning(
            &unremoved,
            !settled,
            why,
            run_id,
            shared.registry.session().as_str(),
        ));
    }
    unremoved
}

/// The warning about the containers a clean-up gave up on: which (by id), how to find them (by
/// label) and how to remove them later.
fn unremoved_warning(
    ids: &[String],
    creations_pending: bool,
    why: Stopped,
    run_id: &str,
    session: &str,
) -> String {
    const SHOWN: usize = 10;
    let mut text = match ids.len() {
        0 => "the clean-up stopped".to_string(),
        n => {
            let mut shown: Vec<&str> = ids.iter().take(SHOWN).map(|id| short_id(id)).collect();
            if n > SHOWN {
                shown.push("…");
            }
            format!(
                "{n} container(s) could not be removed ({})",
                shown.join(", ")
            )
        }
    };
    text.push_str(&format!(": {}", why.describe()));
    if creations_pending {
        text.push_str("; containers being created then may exist too");
    }
    text.push_str(&format!(
        "; they carry the labels {RUN_ID}={run_id} and {SESSION}={session}: `swtbench clean \
         --run-id {run_id}` removes them once the engine answers"
    ));
    text
}

/// The 12-character form of a container id the engine's own tools print.
fn short_id(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// Builds the images of upcoming instances ahead of their workers, in schedule order, at most
/// `build_workers` chains at a time and no further ahead than the workers could use soon, so
/// that a build overlaps the runs of earlier instances instead of waiting for a free worker.
/// The builder's single flight makes the worker that needs the image wait for the same build.
/// `scheduled` is the index (in `instances`) of the instance the dispatcher is at.
pub(super) async fn prefetch_images<B: ContainerBackend>(
    shared: Arc<Shared<B>>,
    instances: Vec<InstancePlan>,
    mut scheduled: tokio::sync::watch::Receiver<usize>,
) {
    let lookahead = shared.slots.capacity() + shared.settings.images.build_workers;
    let ranks = image_ranks(&instances);
    let mut started: BTreeSet<String> = BTreeSet::new();
    let mut inflight: JoinSet<()> = JoinSet::new();
    for (index, ip) in instances.into_iter().enumerate() {
        if !ip.needs_containers() {
            continue;
        }
        let Some(chain) = &ip.images else { continue };
        if !started.insert(chain.instance.clone()) || !shared.images.planned_build(&chain.instance)
        {
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
                let images = shared.images();
                // A cancelled evaluation builds nothing more: when the worker that was building
                // an image is dropped, this waiter would otherwise take the build over for nobody.
                tokio::select! {
                    biased;
                    _ = shared.cancel.cancelled() => {}
                    // Failures are reported by the worker that needs the image.
                    _ = ensure_images(&images, &ip, spec) => {}
                }
            }
        });
    }
    while inflight.join_next().await.is_some() {}
}

/// The rank of each instance: how many distinct instance images the plan needs up to it. The
/// lookahead counts images, not instances: many instances often share one image.
fn image_ranks(instances: &[InstancePlan]) -> Vec<usize> {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    instances
        .iter()
        .map(|ip| {
            if let (true, Some(chain)) = (ip.needs_containers(), &ip.images) {
                seen.insert(&chain.instance);
            }
            seen.len()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unremoved_warning_names_the_containers_the_labels_and_the_command() {
        let ids = vec!["0123456789abcdef".to_string(), "fedcba".to_string()];
        assert_eq!(
            unremoved_warning(&ids, false, Stopped::Silent, "r1", "host:42:7"),
            "2 container(s) could not be removed (0123456789ab, fedcba): the container engine \
             does not answer (no answer to a ping within 3 s); they carry the labels \
             swtbench.run_id=r1 and swtbench.session=host:42:7: `swtbench clean --run-id r1` \
             removes them once the engine answers"
        );
        let many: Vec<String> = (0..12).map(|i| format!("c{i}")).collect();
        let text = unremoved_warning(&many, true, Stopped::OutOfTime, "r1", "s");
        assert!(
            text.starts_with(
                "12 container(s) could not be removed (c0, c1, c2, c3, c4, c5, c6, \
                 c7, c8, c9, …): the clean-up's time limit (20 s) ran out; containers being \
                 created then may exist too; they carry"
            ),
            "{text}"
        );
        assert!(unremoved_warning(&[], true, Stopped::Silent, "r1", "s")
            .starts_with("the clean-up stopped: the container engine does not answer"));
    }
}
