//! One instance from start to end: skip or empty patch at once; otherwise its images, the patch
//! extraction when its patch type needs one, its six runs side by side (each executed when a
//! container slot is free for it, reused, or copied from the run with the same content key),
//! and its grade. Whatever happens, it ends in [`finish`]: `report.json` written (or a stale one
//! removed), the instance summary written, `instance_finished` sent.
//!
//! A failing run ends the instance (runs still waiting for a slot do not start; finished ones
//! stay on disk, keyed, for a rerun); a timeout is a result, not a failure. Scheduling and cancellation are the dispatcher's: an
//! instance is simply dropped when it is cancelled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use swtbench_backend::ContainerBackend;
use swtbench_core::layout::LogsRoot;
use swtbench_core::Instance;
use swtbench_grade::integrity::Integrity;
use swtbench_grade::report::GradeOptions;
use swtbench_grade::InstanceReport;
use swtbench_spec::ExecSpec;

use super::flights::{Done, NoOutput};
use super::image_state::{ensure_images, release_instance_image};
use super::shared::Shared;
use super::slots::Opener;
use crate::events::{Event, InstanceOutcome, Phase, RunOutcome};
use crate::execute::{copy_run, execute_run, Executed, RunJob};
use crate::outcome::ExecError;
use crate::outcome::{AbortReason, ImageError, InstanceError};
use crate::prepare::{extract_patch, ExtractFailure, ExtractJob};
use crate::report::{
    grade_from_outputs, limit_hits, remove_stale_report, write_report, write_summary, CheckInputs,
    InstanceSummary, RunLimit, RunSummary,
};
use crate::DiskOutputs;
use swtbench_plan::limits::LimitHit;
use swtbench_plan::plan::{plan_runs, InstanceAction, InstancePlan, RunAction, RunContext};
use swtbench_plan::plan::{RunPlan, SkipCause};

/// How one instance ended, with its grade when it has one.
#[derive(Debug, Clone)]
pub struct InstanceResult {
    pub instance_id: String,
    pub outcome: InstanceOutcome,
    pub report: Option<InstanceReport>,
    /// Nothing was executed for it in this invocation (every output was already there).
    pub all_reused: bool,
    /// Notes that qualify the outcome (the instance summary's `reasons`).
    pub reasons: Vec<String>,
    /// Its runs that reached a resource limit.
    pub limit_hits: Vec<RunLimit>,
    /// The integrity checks of its logs, when it was graded.
    pub integrity: Option<Integrity>,
}

/// How an instance ends: what [`finish`] records.
struct Ending {
    outcome: InstanceOutcome,
    report: Option<InstanceReport>,
    all_reused: bool,
    reasons: Vec<String>,
    runs: Vec<RunSummary>,
    integrity: Option<Integrity>,
}

impl Ending {
    /// Ends without a grade and without runs, the outcome's text as the one note.
    fn early(outcome: InstanceOutcome, reason: String) -> Ending {
        Ending::quiet(outcome, vec![reason])
    }

    fn quiet(outcome: InstanceOutcome, reasons: Vec<String>) -> Ending {
        Ending {
            outcome,
            report: None,
            all_reused: false,
            reasons,
            runs: Vec::new(),
            integrity: None,
        }
    }

    fn skipped(cause: SkipCause) -> Ending {
        let reason = cause.to_string();
        Ending::early(InstanceOutcome::Skipped { reason: cause }, reason)
    }

    fn error(error: InstanceError) -> Ending {
        let reason = error.to_string();
        Ending::early(InstanceOutcome::Error { reason: error }, reason)
    }
}

/// The result of an instance that was not (or not fully) evaluated because the evaluation was
/// cancelled or stopped early.
pub(super) fn interrupted<B: ContainerBackend>(shared: &Shared<B>, id: &str) -> InstanceResult {
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
        limit_hits: Vec::new(),
        integrity: None,
    }
}

/// Evaluates one instance to its end, then lets its instance image go. `opener`: one of the
/// first instances' hold on the closed container slots, let go once its runs are queued (or at
/// once when it waits for an image build or an extraction first).
pub(super) async fn evaluate_instance<B: ContainerBackend>(
    shared: Arc<Shared<B>>,
    ip: InstancePlan,
    opener: Option<Arc<Opener>>,
) -> InstanceResult {
    let started = Instant::now();
    if ip.needs_containers() && !shared.settings.skip_eval {
        shared.emit(Event::InstanceStarted {
            instance_id: ip.instance_id.clone(),
        });
    }
    let ending = tokio::select! {
        biased;
        _ = shared.cancel.cancelled() => return interrupted(&shared, &ip.instance_id),
        e = evaluate(&shared, &ip, opener) => e,
    };
    let result = finish(&shared, &ip, started, ending);
    // Housekeeping: the instance's result stands whatever happens to it (an engine that stops
    // answering now must not turn a graded instance into an interrupted one).
    let images = shared.images();
    tokio::select! {
        biased;
        _ = shared.cancel.cancelled() => {}
        _ = release_instance_image(&images, &ip) => {}
    }
    result
}

/// Records how the instance ended: its `report.json` (or the removal of a stale one), its
/// summary, and `instance_finished`.
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
        integrity,
    } = ending;
    let id = &ip.instance_id;
    match &report {
        Some(r) => {
            if let Err(e) = write_report(&ip.report_dir, r) {
                shared.warn(format!("{id}: writing report.json failed: {e}"));
            }
        }
        None => {
            if let Err(e) = remove_stale_report(&ip.report_dir) {
                shared.warn(format!("{id}: removing a stale report.json failed: {e}"));
            }
        }
    }
    let limit_hits = limit_hits(&runs);
    let summary = InstanceSummary {
        instance_id: id.clone(),
        outcome: outcome.clone(),
        reasons: reasons.clone(),
        runs,
        limit_hits: limit_hits.clone(),
        error_cause: match &outcome {
            InstanceOutcome::Error { reason } => Some(reason.cause()),
            _ => None,
        },
        integrity: integrity.clone(),
    };
    if let Err(e) = write_summary(&ip.report_dir, &summary) {
        shared.warn(format!("{id}: writing the instance summary failed: {e}"));
    }
    shared.emit(Event::InstanceFinished {
        instance_id: id.clone(),
        outcome: outcome.clone(),
        duration_ms: started.elapsed().as_millis() as u64,
    });
    InstanceResult {
        instance_id: id.clone(),
        outcome,
        report,
        all_reused,
        reasons,
        limit_hits,
        integrity,
    }
}

/// What the six runs of an instance need once its images and its patch are ready.
struct Prepared<'a> {
    instance: &'a Instance,
    spec: &'a ExecSpec,
    /// The instance image (`None` when nothing runs in a container).
    image: Option<String>,
    runs: Vec<RunPlan>,
    /// Borrowed from the plan when it was there (a model patch can be big).
    model_patch: std::borrow::Cow<'a, str>,
}

async fn evaluate<B: ContainerBackend>(
    shared: &Shared<B>,
    ip: &InstancePlan,
    mut opener: Option<Arc<Opener>>,
) -> Ending {
    match &ip.action {
        InstanceAction::Skip { cause } => return Ending::skipped(cause.clone()),
        InstanceAction::EmptyPatch => {
            return Ending {
                report: Some(InstanceReport::empty_patch(&ip.instance_id)),
                ..Ending::early(
                    InstanceOutcome::EmptyPatch,
                    "the prediction has no usable patch; nothing was run".into(),
                )
            }
        }
        InstanceAction::Evaluate | InstanceAction::ExtractThenEvaluate => {}
    }
    let waits = matches!(ip.action, InstanceAction::ExtractThenEvaluate)
        || shared.images.builds_any(ip.images.as_ref())
        || ip.prebuilt.as_ref().is_some_and(|p| p.pull);
    if waits {
        opener = None;
    }
    let prepared = match prepare(shared, ip).await {
        Ok(p) => p,
        Err(ending) => return ending,
    };
    let runs = match execute_runs(shared, ip, &prepared, opener).await {
        Ok(r) => r,
        Err(ending) => return ending,
    };
    grade(shared, ip, &prepared, runs)
}

/// The instance's images, and its runs (planned now when the patch had to be extracted first).
async fn prepare<'a, B: ContainerBackend>(
    shared: &'a Shared<B>,
    ip: &'a InstancePlan,
) -> Result<Prepared<'a>, Ending> {
    let id = ip.instance_id.as_str();
    // Bugs of the caller; no note, the outcome says it.
    let Some(instance) = shared.instances.get(id) else {
        return Err(Ending::quiet(
            InstanceOutcome::Error {
                reason: InstanceError::NotInEvaluation,
            },
            Vec::new(),
        ));
    };
    let Some(spec) = ip.spec.as_deref() else {
        return Err(Ending::quiet(
            InstanceOutcome::Error {
                reason: InstanceError::NoSpec,
            },
            Vec::new(),
        ));
    };
    let needs = ip.needs_containers();
    if needs && shared.settings.skip_eval {
        return Err(Ending::error(InstanceError::OutputsMissing));
    }
    let mut image: Option<String> = None;
    if needs {
        shared.phase(id, Phase::Images);
        let ensured = match &ip.prebuilt {
            Some(pre) => shared
                .images
                .ensure_prebuilt(&shared.images(), pre, instance)
                .await
                .map_err(ImageError::Prebuilt),
            None => ensure_images(&shared.images(), ip, spec).await,
        };
        match ensured {
            Ok(tag) => image = Some(tag),
            Err(e) => {
                // A build that failed because the engine went away is not this image's fault.
                shared.check_engine().await;
                return Err(Ending::error(InstanceError::Images(e)));
            }
        }
    }
    let (runs, model_patch) = match &ip.action {
        InstanceAction::ExtractThenEvaluate => {
            let image = image.clone().unwrap_or_default();
            let (runs, patch) = extract_then_plan(shared, ip, instance, spec, &image).await?;
            (runs, std::borrow::Cow::Owned(patch))
        }
        _ => (
            ip.runs.clone(),
            std::borrow::Cow::Borrowed(ip.model_patch.as_deref().unwrap_or_default()),
        ),
    };
    Ok(Prepared {
        instance,
        spec,
        image,
        runs,
        model_patch,
    })
}

/// Extracts the patch in the instance image, then plans the six runs with it.
async fn extract_then_plan<B: ContainerBackend>(
    shared: &Shared<B>,
    ip: &InstancePlan,
    instance: &Instance,
    spec: &ExecSpec,
    image: &str,
) -> Result<(Vec<RunPlan>, String), Ending> {
    shared.phase(&ip.instance_id, Phase::Extracting);
    let job = ExtractJob {
        instance,
        spec,
        image,
        report_dir: &ip.report_dir,
        raw: ip.raw_model_patch.as_deref().unwrap_or_default(),
    };
    // The extraction's container takes a slot like a run's, before any run: the instance's runs
    // wait for it.
    let slot = shared.slots.acquire(u64::MAX, 0).await;
    let patch = extract_patch(
        shared.backend.clone(),
        &shared.settings,
        &shared.registry,
        job,
    )
    .await
    .map_err(|e| match e {
        ExtractFailure::NothingExtracted(why) => Ending::skipped(SkipCause::ExtractionFailed(why)),
        ExtractFailure::Infrastructure(e) => Ending::error(InstanceError::Extraction(e)),
    })?;
    drop(slot);
    let logs = LogsRoot::new(&shared.settings.outputs.logs);
    let base_id = shared.images.external_base_id(ip.images.as_ref());
    let ctx = RunContext {
        settings: &shared.settings,
        logs: &logs,
        model_dir: &shared.model_dir,
        tracer_sha256: shared.tracer.as_ref().map(|t| t.sha256.as_str()),
        base_image_id: base_id.as_deref(),
        prebuilt: ip.prebuilt.as_ref(),
    };
    match plan_runs(&ctx, instance, spec, &patch, &DiskOutputs) {
        Ok(runs) => Ok((runs, patch)),
        Err(e) => Err(Ending::error(InstanceError::Runs(e))),
    }
}

/// What the six runs left for grading.
struct RunsDone {
    summaries: Vec<RunSummary>,
    reasons: Vec<String>,
    executed_any: bool,
}

/// The six runs, side by side: each executes as soon as a container slot is free for it (the
/// longest expected first, across instances), is reused, or waits for the run with its key. A
/// failure ends the instance: runs still waiting for a slot then do not start (those running
/// finish, and keep their keyed outputs for a rerun). The summaries keep the plan's order.
async fn execute_runs<B: ContainerBackend>(
    shared: &Shared<B>,
    ip: &InstancePlan,
    p: &Prepared<'_>,
    opener: Option<Arc<Opener>>,
) -> Result<RunsDone, Ending> {
    let failed = AtomicBool::new(false);
    let mut all = std::pin::pin!(futures_util::future::join_all(
        p.runs
            .iter()
            .map(|run| one_run(shared, ip, p, run, &failed)),
    ));
    // Polled once, every run that executes is in the slots' queue: the hold can go.
    let first = futures_util::poll!(all.as_mut());
    drop(opener);
    let outcomes = match first {
        std::task::Poll::Ready(o) => o,
        std::task::Poll::Pending => all.await,
    };
    let mut done = RunsDone {
        summaries: Vec::with_capacity(6),
        reasons: Vec::new(),
        executed_any: false,
    };
    let mut error: Option<InstanceError> = None;
    for (run, finished) in p.runs.iter().zip(outcomes) {
        let Some((outcome, notes)) = finished else {
            continue;
        };
        done.reasons.extend(notes);
        done.executed_any |= matches!(outcome, RunOutcome::Executed { .. });
        if let (RunOutcome::Failed { reason }, None) = (&outcome, &error) {
            error = Some(InstanceError::Run {
                run: run.kind,
                error: reason.clone(),
            });
        }
        done.summaries.push(RunSummary {
            run: run.kind,
            dir: run.dir.display().to_string(),
            key: run.key.clone(),
            result: outcome,
        });
    }
    match error {
        None => Ok(done),
        Some(error) => {
            done.reasons.push(error.to_string());
            Err(Ending {
                runs: done.summaries,
                ..Ending::quiet(InstanceOutcome::Error { reason: error }, done.reasons)
            })
        }
    }
}

/// One run of an instance, with the notes its outcome gives; `None` when it did not start
/// because another run of the instance failed first.
async fn one_run<B: ContainerBackend>(
    shared: &Shared<B>,
    ip: &InstancePlan,
    p: &Prepared<'_>,
    run: &RunPlan,
    failed: &AtomicBool,
) -> Option<(RunOutcome, Vec<String>)> {
    let id = ip.instance_id.as_str();
    let mut notes = Vec::new();
    let outcome = match &run.action {
        RunAction::Reuse | RunAction::ReuseUnkeyed => {
            shared.stats(|s| s.runs_reused += 1);
            if crate::keys::read_key_file(&run.dir).is_some_and(|r| r.result.timed_out) {
                notes.push(format!("{} timed out (output reused)", run.kind));
            }
            RunOutcome::Reused
        }
        RunAction::Execute | RunAction::SameAs { .. } => {
            if failed.load(Ordering::SeqCst) {
                return None;
            }
            let job = RunJob {
                instance_id: id,
                run,
                instance: p.instance,
                spec: p.spec,
                model_dir: &shared.model_dir,
                image: p.image.as_deref().unwrap_or_default(),
                user: p.spec.user(),
                platform: p.spec.platform(),
                model_patch: &p.model_patch,
                tracer: shared.tracer.as_ref().map(|t| t.text.as_str()),
            };
            execute_or_copy(shared, &job, run_priority(shared, ip, run), failed).await?
        }
    };
    if let Some(note) = timeout_note(shared, run, &outcome) {
        notes.push(note);
    }
    if let Some(note) = limit_note(shared, run, &outcome) {
        notes.push(note);
    }
    if matches!(outcome, RunOutcome::Failed { .. }) {
        failed.store(true, Ordering::SeqCst);
        shared.stats(|s| s.runs_failed += 1);
    }
    shared.emit(Event::RunFinished {
        instance_id: id.to_string(),
        run: run.kind,
        result: outcome.clone(),
    });
    Some((outcome, notes))
}

/// A run's place in the queue for container slots: its expected duration in milliseconds (the
/// plan's estimate; runs planned after an extraction are estimated from the repository), and
/// among equals the plan's order (the instance's place in it, then the run's).
fn run_priority<B: ContainerBackend>(
    shared: &Shared<B>,
    ip: &InstancePlan,
    run: &RunPlan,
) -> (u64, u64) {
    let ms = match run.expected {
        Some(e) => e.ms,
        None => {
            let timeout_ms = shared.settings.exec.timeout.as_millis() as u64;
            swtbench_plan::schedule::estimate_run(run.kind, None, &[], &ip.repo, timeout_ms).ms
        }
    };
    // A run identical to another instance's waits on the same execution, whichever of them
    // starts it: the execution's place is the one of the run the plan has execute it.
    let (owner, kind) = match &run.action {
        RunAction::SameAs { instance_id, run } => (instance_id.as_str(), *run),
        _ => (ip.instance_id.as_str(), run.kind),
    };
    let rank = shared.ranks.get(owner).copied().unwrap_or(u64::MAX / 8);
    let run_index = swtbench_core::RunKind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(0) as u64;
    (ms, rank.saturating_mul(8).saturating_add(run_index))
}

/// The note of a run that hit the timeout (here, or where its output was copied from).
fn timeout_note<B: ContainerBackend>(
    shared: &Shared<B>,
    run: &RunPlan,
    outcome: &RunOutcome,
) -> Option<String> {
    match outcome {
        RunOutcome::Executed {
            timed_out: true, ..
        } => {
            shared.stats(|s| s.runs_timed_out += 1);
            Some(format!(
                "{} timed out after {} s; its output up to then was graded",
                run.kind,
                shared.settings.exec.timeout.as_secs()
            ))
        }
        RunOutcome::Copied { from }
            if crate::keys::read_key_file(&run.dir).is_some_and(|r| r.result.timed_out) =>
        {
            Some(format!(
                "{} timed out (output copied from {from})",
                run.kind
            ))
        }
        _ => None,
    }
}

/// The note of a prediction run that reached a resource limit (here, reused or copied).
fn limit_note<B: ContainerBackend>(
    shared: &Shared<B>,
    run: &RunPlan,
    outcome: &RunOutcome,
) -> Option<String> {
    let hit = match outcome {
        RunOutcome::Executed { limit, .. } => (*limit)?,
        RunOutcome::Reused | RunOutcome::Copied { .. } => {
            crate::keys::read_key_file(&run.dir)?.result.limit?
        }
        RunOutcome::Failed { .. } => return None,
    };
    shared.stats(|s| s.runs_limited += 1);
    Some(format!(
        "{} reached {hit}: {}; graded as the prediction's outcome",
        run.kind,
        hit.amount(&shared.settings.exec.limits)
    ))
}

/// Grades the instance from its six outputs.
fn grade<B: ContainerBackend>(
    shared: &Shared<B>,
    ip: &InstancePlan,
    p: &Prepared<'_>,
    done: RunsDone,
) -> Ending {
    let RunsDone {
        summaries,
        mut reasons,
        executed_any,
    } = done;
    shared.phase(&ip.instance_id, Phase::Grading);
    let options = GradeOptions {
        exec_mode: shared.settings.grade_mode(),
        strict_results: shared.settings.strict_results,
        grading_version: shared.settings.grading_version,
        ..Default::default()
    };
    let instance = p.instance;
    let checks = CheckInputs {
        instance,
        model_patch: &p.model_patch,
        non_test_exts: &p.spec.non_test_extensions,
        flaky: shared.settings.flaky.get(&ip.instance_id),
    };
    let graded = grade_from_outputs(&checks, &p.runs, &options, ip.parser);
    match graded {
        Ok((report, integrity)) => {
            let outcome = if report.resolved {
                InstanceOutcome::Resolved
            } else {
                InstanceOutcome::Unresolved {
                    applied: report.patch_successfully_applied,
                }
            };
            Ending {
                outcome,
                report: Some(report),
                all_reused: !executed_any,
                reasons,
                runs: summaries,
                integrity: Some(integrity),
            }
        }
        Err(e) => {
            let error = InstanceError::Grading(e);
            reasons.push(error.to_string());
            Ending {
                runs: summaries,
                ..Ending::quiet(InstanceOutcome::Error { reason: error }, reasons)
            }
        }
    }
}

/// Executes a run, or copies the output of the run with the same key that got there first. The
/// one that executes takes a container slot at `priority` first, and does not start when `stop`
/// is set by then (`None`).
async fn execute_or_copy<B: ContainerBackend>(
    shared: &Shared<B>,
    job: &RunJob<'_>,
    priority: (u64, u64),
    stop: &AtomicBool,
) -> Option<RunOutcome> {
    loop {
        let cell = shared.flights.get(&job.run.key);
        let mut here: Option<Executed> = None;
        let mut took = false;
        let done = cell
            .get_or_init(|| async {
                took = true;
                // A shared run: one process at a time; another may have made it meanwhile.
                let _claim = match claim_shared(shared, job).await {
                    Ok(Claimed::Made(done)) => return Ok(done),
                    Ok(Claimed::Ours(claim)) => claim,
                    Err(e) => return Err(NoOutput::Failed(e)),
                };
                let _slot = shared.slots.acquire(priority.0, priority.1).await;
                if stop.load(Ordering::SeqCst) {
                    return Err(NoOutput::NotStarted);
                }
                shared.phase(job.instance_id, Phase::Running { run: job.run.kind });
                let done = execute_here(shared, job, &mut here)
                    .await
                    .map_err(NoOutput::Failed)?;
                if _claim.is_some() {
                    // For the processes waiting on the key: where its output is.
                    let logs = &shared.settings.outputs.logs;
                    if let Err(e) = crate::shared_lock::record_done(logs, &job.run.key, &done.dir) {
                        shared.warn(format!(
                            "{} {}: recording where its output is for other processes failed: \
                             {e}; they will run it again",
                            job.instance_id, job.run.kind
                        ));
                    }
                }
                Ok(done)
            })
            .await
            .clone();
        if done.is_err() {
            // A failure (a killed container, say) is this instance's; an instance that needs the
            // same run later tries it again instead of inheriting the failure.
            shared.flights.forget(&job.run.key, &cell);
        }
        let done = match done {
            Ok(d) => Ok(d),
            Err(NoOutput::Failed(e)) if took => Err(e),
            Err(NoOutput::NotStarted) if took => return None,
            // The execution it waited for (another instance's) failed or did not start: that is
            // not this run's result; it takes the next flight (and executes, if nobody else
            // does).
            Err(_) => continue,
        };
        return Some(copy_or_report(shared, job, done, here));
    }
}

/// What claiming a run before executing it gave.
enum Claimed {
    /// Ours to execute (the lock of a shared run; nothing for a prediction run, whose directory
    /// is this evaluation's own).
    Ours(Option<crate::shared_lock::SharedRunLock>),
    /// Another process executed it while this one waited: its output, reused.
    Made(Done),
}

/// Takes the lock of a shared run's directory, waiting while another swtbench process (another
/// model's evaluation on the same output directory, another shard) executes it, then looks
/// whether that process left the output this run needs.
async fn claim_shared<B: ContainerBackend>(
    shared: &Shared<B>,
    job: &RunJob<'_>,
) -> Result<Claimed, ExecError> {
    let run = job.run;
    if !run.kind.is_shared() {
        return Ok(Claimed::Ours(None));
    }
    let logs = &shared.settings.outputs.logs;
    let lock = crate::shared_lock::claim(logs, &run.key, |holder| {
        shared.emit(Event::RunWaiting {
            instance_id: job.instance_id.to_string(),
            run: run.kind,
            holder: holder.map(str::to_string),
        });
    })
    .await
    .map_err(|e| ExecError::Io {
        path: crate::shared_lock::lock_path(logs, &run.key)
            .display()
            .to_string(),
        message: e.to_string(),
        kind: e.kind(),
    })?;
    // Looked at whether or not it waited: another process may have made it before, here or in
    // the directory of an identical run of another instance.
    let elsewhere = crate::shared_lock::done_dir(logs, &run.key);
    for dir in std::iter::once(run.dir.clone()).chain(elsewhere) {
        if holds_output(&dir, run) {
            if let Some(record) = crate::keys::read_key_file(&dir) {
                return Ok(Claimed::Made(Done {
                    dir,
                    result: record.result,
                }));
            }
        }
    }
    Ok(Claimed::Ours(Some(lock)))
}

/// Whether `dir` holds an output with `run`'s key, made with limits it can stand for.
fn holds_output(dir: &std::path::Path, run: &RunPlan) -> bool {
    use crate::DiskOutputs;
    use swtbench_plan::plan::{ExistingOutput, OutputLookup};
    DiskOutputs.existing_for(dir, &run.limits) == ExistingOutput::Keyed(run.key.clone())
}

/// The execution of a flight: its output, or why there is none.
async fn execute_here<B: ContainerBackend>(
    shared: &Shared<B>,
    job: &RunJob<'_>,
    here: &mut Option<Executed>,
) -> Result<Done, ExecError> {
    match execute_run(&shared.backend, &shared.settings, &shared.registry, job).await {
        Ok(x) if job.run.kind.is_shared() && x.result.limit.is_some() => {
            let hit = x.result.limit.unwrap_or(LimitHit::Memory);
            Err(ExecError::Limit {
                hit,
                amount: hit.amount(&shared.settings.exec.limits),
            })
        }
        Ok(x) => {
            let result = x.result.clone();
            *here = Some(x);
            Ok(Done {
                dir: job.run.dir.clone(),
                result,
            })
        }
        Err(e) => {
            if e.is_storage_failure() {
                shared.abort(AbortReason::Storage(e.clone()));
            } else if e.is_engine_failure() {
                shared.check_engine().await;
            }
            Err(e)
        }
    }
}

/// The outcome of a run from its flight: executed here, the same directory, or copied.
fn copy_or_report<B: ContainerBackend>(
    shared: &Shared<B>,
    job: &RunJob<'_>,
    done: Result<Done, ExecError>,
    here: Option<Executed>,
) -> RunOutcome {
    match (done, here) {
        (Ok(_), Some(x)) => {
            shared.stats(|s| s.runs_executed += 1);
            RunOutcome::Executed {
                exit_code: x.result.exit_code,
                test_exit_code: x.result.test_exit_code,
                timed_out: x.result.timed_out,
                duration_ms: x.result.duration_ms,
                overhead_ms: x.overhead.as_millis() as u64,
                limit: x.result.limit,
            }
        }
        (Ok(d), None) if d.dir == job.run.dir => {
            shared.stats(|s| s.runs_reused += 1);
            RunOutcome::Reused
        }
        // A shared run another process copied meanwhile (the same key): nothing to copy.
        (Ok(_), None) if job.run.kind.is_shared() && holds_output(&job.run.dir, job.run) => {
            shared.stats(|s| s.runs_reused += 1);
            RunOutcome::Reused
        }
        (Ok(d), None) => match copy_run(&shared.settings, &d.dir, job, &d.result) {
            Ok(()) => {
                shared.stats(|s| s.runs_copied += 1);
                RunOutcome::Copied {
                    from: d.dir.display().to_string(),
                }
            }
            Err(reason) => RunOutcome::Failed { reason },
        },
        (Err(reason), _) => RunOutcome::Failed { reason },
    }
}
