//! The service's workers: threads that take jobs from the queue and evaluate each with
//! [`swtbench_app::evaluate::evaluate`] (the same call as `swtbench run`: the same pipeline,
//! resource limits, evidence and integrity checks), each on its own engine connection kept for
//! every job it takes. A job's runs are keyed by content, so the gold and base runs one job made
//! are reused by the next job of the same instance; only the runs that depend on the prediction
//! execute. The verdict is made from what the evaluation wrote (`report.json`) and stored with
//! the job, with the `report.json` itself and where the logs are (host and directory): the API
//! serves them whichever host ran the job. Then waiting requests are woken.
//!
//! A worker holds its job under a lease that it renews while the evaluation runs (a heartbeat
//! thread); when the job stops being its own (cancelled by any process, or its lease ran out and
//! it was put back), the evaluation is stopped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use swtbench_app::evaluate::{self, Engine, EngineUse, Finished, Observer, Request, Stopping};
use swtbench_runner::events::{CancelReason, EventSink, FanOut, JsonlWriter};
use swtbench_runner::{Cancel, Event};

use crate::image_cache;
pub use crate::queue::MAX_ATTEMPTS;
use crate::queue::{End, Holder, Job, JobSpec};
use crate::Shared;

/// What the service evaluates with: the run settings it was started with, made into a request
/// for one job. The binary implements it (it owns the command line's flags).
pub trait Template: Send + Sync {
    /// Whether the service's dataset has the instance.
    fn has_instance(&self, instance_id: &str) -> bool;
    /// The name of the service's dataset (as `--dataset` gave it).
    fn dataset_name(&self) -> &str;
    /// What the settings make of a job's content key (the dataset, the run flags): the same
    /// prediction under other settings is another job.
    fn context(&self) -> &str;
    /// The request that evaluates `spec` as run `run_id` into the service's output directory.
    fn request(
        &self,
        engine: &Engine,
        spec: &JobSpec,
        run_id: &str,
    ) -> swtbench_app::Result<Request>;
    /// The logs root of the service's output directory (`run_instance_swt_logs/`).
    fn logs_root(&self) -> PathBuf;
}

/// The run id of a job's evaluation.
pub fn run_id(job_id: &str) -> String {
    format!("svc-{job_id}")
}

/// The directory of a job's instance outputs: `<logs>/<run id>/<model dir>/<instance id>`.
pub fn instance_dir(logs: &Path, job_id: &str, spec: &JobSpec) -> PathBuf {
    swtbench_core::layout::LogsRoot::new(logs).instance_report_dir(
        &run_id(job_id),
        &swtbench_core::layout::model_dir_name(&spec.model),
        &spec.instance_id,
    )
}

/// Runs worker `index` of this process until the service (or the worker process) stops: takes a
/// job, leased to it ([`Holder`]), evaluates it while renewing the lease, stores how it ended.
pub fn work(shared: Arc<Shared>, index: usize) {
    let holder = Holder::of_this_process(index, shared.lease);
    // An idle worker looks for a job this often; on PostgreSQL the queue's notifications wake it
    // at once, so it looks less often, sparing the database the polls of a large pool.
    let idle = match shared.queue.postgres() {
        Some(_) => Duration::from_secs(5),
        None => Duration::from_millis(500),
    };
    let mut engine: Option<Engine> = None;
    while !shared.stopping.load(Ordering::SeqCst) {
        if engine.is_none() {
            match Engine::connect(EngineUse::Required) {
                Ok(e) => engine = Some(e),
                Err(e) => {
                    shared.note(format!("worker {index}: the engine is not reachable: {e}"));
                    shared.sleep(Duration::from_secs(5));
                    continue;
                }
            }
        }
        let job = match shared.queue.claim(&holder) {
            Ok(Some(job)) => job,
            Ok(None) => {
                shared.wait_for_work(idle);
                continue;
            }
            Err(e) => {
                shared.note(format!("worker {index}: {e}"));
                shared.sleep(Duration::from_secs(1));
                continue;
            }
        };
        let Some(eng) = engine.as_ref() else { continue };
        let started = Instant::now();
        let end = evaluate_job(&shared, eng, &job, &holder);
        if let End::Failed(reason) = &end {
            shared.metrics.failed(reason);
        }
        if let End::Done { .. } = &end {
            shared.metrics.verdict(started.elapsed());
        }
        finish(&shared, &job, &holder, &end);
        shared.job_changed();
        // What ended processes left (a killed worker's containers, unfinished files), after the
        // verdict: the jobs' evaluations leave it to the worker.
        match eng.sweep_ended_processes(&shared.template.logs_root()) {
            Ok(Some(removed)) => shared.note(removed),
            Ok(None) => {}
            Err(e) => shared.note(format!("sweeping what ended processes left: {e}")),
        }
        if let Some(budget) = shared.config.image_cache {
            keep_images_within(&shared, eng, budget);
        }
    }
}

/// Removes the least recently used instance images beyond `budget` (after a job, its verdict
/// stored: the eviction delays no answer).
fn keep_images_within(shared: &Shared, engine: &Engine, budget: u64) {
    let evicted = shared
        .images
        .evicting(|last_used, in_use| engine.keep_images_within(budget, last_used, in_use));
    match evicted {
        Ok(evicted) => {
            if let Some(line) = evicted.summary(budget) {
                shared.note(line);
            }
            let removed: Vec<String> = evicted.removed.into_iter().map(|(t, _)| t).collect();
            shared.metrics.evicted(removed.len() as u64);
            if let Err(e) = shared.images.forget(&removed) {
                shared.note(format!("image cache: writing its record: {e}"));
            }
        }
        Err(e) => shared.note(format!("image cache: {e}")),
    }
}

/// Stores how `job` ended, retrying while the queue cannot be reached (within the job's lease: a
/// result that does not reach the queue by then is made again by the next worker).
fn finish(shared: &Shared, job: &Job, holder: &Holder, end: &End) {
    let deadline = Instant::now() + holder.lease;
    let mut wait = Duration::from_millis(250);
    loop {
        match shared.queue.finish(&job.id, holder, end) {
            Ok(true) => return,
            Ok(false) => {
                shared.note(format!(
                    "{}: no longer this worker's (cancelled, or its lease ran out); its result \
                     is not stored",
                    job.id
                ));
                return;
            }
            Err(e) if Instant::now() + wait < deadline => {
                shared.note(format!("{}: storing its result: {e}; trying again", job.id));
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            Err(e) => {
                shared.note(format!("{}: its result could not be stored: {e}", job.id));
                return;
            }
        }
    }
}

/// Renews `holder`'s lease of job `id` until `done` says the evaluation ended; when the job is
/// no longer `holder`'s (cancelled by any process, or its lease ran out), stops the evaluation.
fn heartbeat(
    shared: &Shared,
    id: &str,
    holder: &Holder,
    cancel: &Cancel,
    done: &std::sync::mpsc::Receiver<()>,
) {
    use std::sync::mpsc::RecvTimeoutError;
    loop {
        match done.recv_timeout(holder.heartbeat_every()) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        match shared.queue.heartbeat(id, holder) {
            Ok(true) => {}
            Ok(false) => {
                shared.note(format!(
                    "{id}: cancelled, or its lease ran out: its evaluation stops"
                ));
                cancel.request(CancelReason::Interrupt);
                return;
            }
            // The lease may run out meanwhile; then the job is taken again elsewhere.
            Err(e) => shared.note(format!("{id}: renewing its lease: {e}")),
        }
    }
}

/// Evaluates `job` and says how it ended.
fn evaluate_job(shared: &Arc<Shared>, engine: &Engine, job: &Job, holder: &Holder) -> End {
    let run = run_id(&job.id);
    let logs = absolute(&shared.template.logs_root());
    let dir = instance_dir(&logs, &job.id, &job.spec);
    let place = format!("{}:{}", holder.host(), dir.display());
    if let Err(e) = shared.queue.record_logs(&job.id, holder, &place) {
        shared.note(format!("{}: recording where its logs are: {e}", job.id));
    }
    let request = match shared.template.request(engine, &job.spec, &run) {
        Ok(r) => r,
        Err(e) if e.fault == swtbench_app::Fault::Environment => {
            return infrastructure(job, e.to_string())
        }
        Err(e) => return End::Failed(e.to_string()),
    };
    // Registered only once there is an evaluation to stop (and removed when it ends).
    let cancel = Cancel::new();
    shared
        .cancels
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(job.id.clone(), cancel.clone());
    let observer = JobObserver {
        events: shared.dir.join("events").join(format!("{}.jsonl", job.id)),
        shared: shared.clone(),
        images: Mutex::new(Vec::new()),
        planned: AtomicBool::new(false),
    };
    let (done, beats) = std::sync::mpsc::channel::<()>();
    let result = std::thread::scope(|scope| {
        let beating = cancel.clone();
        scope.spawn(move || heartbeat(shared, &job.id, holder, &beating, &beats));
        // No eviction while this evaluation plans (until its images are marked in use).
        shared.images.planning();
        let result = evaluate::evaluate(
            engine,
            request,
            &Stopping::Handle(cancel.clone()),
            &observer,
        );
        drop(done);
        result
    });
    shared
        .cancels
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&job.id);
    observer.planned();
    let used = std::mem::take(&mut *observer.images.lock().unwrap_or_else(|e| e.into_inner()));
    if let Err(e) = shared.images.release(&used, image_cache::now_unix()) {
        shared.note(format!("image cache: writing its record: {e}"));
    }
    match result {
        Ok(Finished::Done(done)) => {
            if let Some(reason) = &done.output.aborted {
                return infrastructure(job, format!("the evaluation stopped early: {reason}"));
            }
            if done.output.cancelled.is_some() {
                return match shared.stopping.load(Ordering::SeqCst) {
                    true => End::Interrupted,
                    // Cancelled, or no longer this worker's: the queue keeps what it has.
                    false => End::Failed("cancelled".into()),
                };
            }
            let report = std::fs::read_to_string(dir.join(swtbench_core::layout::REPORT_FILE)).ok();
            let mut verdict = verdict(&done, report.as_deref(), &job.id, &job.spec);
            verdict["worker"] = serde_json::json!(holder.id);
            verdict["logs"] = serde_json::json!(place);
            End::Done { verdict, report }
        }
        Ok(Finished::Killed) => End::Interrupted,
        Ok(Finished::Planned(_)) => End::Failed("the request was a dry run".into()),
        Err(e) if e.fault == swtbench_app::Fault::Environment => infrastructure(job, e.to_string()),
        Err(e) => End::Failed(e.to_string()),
    }
}

/// `path` from the file system's root (as other hosts are told where it is).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// An infrastructure fault: taken again unless the job has had its attempts.
fn infrastructure(job: &Job, reason: String) -> End {
    match job.attempts < MAX_ATTEMPTS {
        true => End::Requeue,
        false => End::Failed(format!("{reason} (after {} attempts)", job.attempts)),
    }
}

/// The verdict of a job: the instance's outcome and its `report.json` as `run` wrote it.
fn verdict(
    done: &evaluate::Evaluated,
    report: Option<&str>,
    job_id: &str,
    spec: &JobSpec,
) -> serde_json::Value {
    let result = done
        .output
        .results
        .iter()
        .find(|r| r.instance_id == spec.instance_id);
    let report = report.and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok());
    let outcome = result.map(|r| serde_json::to_value(&r.outcome).unwrap_or_default());
    let kind = result.map(|r| r.outcome.kind().as_str().to_string());
    serde_json::json!({
        "instance_id": spec.instance_id,
        "model": spec.model,
        "run_id": run_id(job_id),
        "outcome": kind,
        "resolved": result.is_some_and(|r| matches!(r.outcome, swtbench_runner::events::InstanceOutcome::Resolved)),
        "detail": outcome,
        "reasons": result.map(|r| r.reasons.clone()).unwrap_or_default(),
        "runs": {
            "executed": done.output.stats.runs_executed,
            "reused": done.output.stats.runs_reused,
            "copied": done.output.stats.runs_copied,
        },
        "report": report,
    })
}

/// What a worker's evaluation is seen by: the job's events file and the service's metrics.
struct JobObserver {
    events: PathBuf,
    shared: Arc<Shared>,
    /// The instance images its plan uses (in use until the evaluation ends).
    images: Mutex<Vec<String>>,
    /// Whether the evaluation's planning has been declared over ([`image_cache::ImageUse::planned`]).
    planned: AtomicBool,
}

impl JobObserver {
    /// The evaluation has planned (or ended without a plan): evictions may run again.
    fn planned(&self) {
        if !self.planned.swap(true, Ordering::SeqCst) {
            self.shared.images.planned();
        }
    }
}

impl Observer for JobObserver {
    fn warnings(&self, _warnings: &[String]) {}

    fn sink(&self, plan: &swtbench_plan::Plan) -> swtbench_app::Result<Arc<dyn EventSink>> {
        let tags: Vec<String> = plan
            .images
            .iter()
            .filter(|i| i.kind == swtbench_plan::ImageKind::Instance)
            .map(|i| i.tag.clone())
            .collect();
        self.shared.images.acquire(&tags, image_cache::now_unix());
        self.images
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(tags);
        self.planned();
        let mut sinks: Vec<Box<dyn EventSink>> = vec![Box::new(MetricsSink(self.shared.clone()))];
        if let Some(parent) = self.events.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        match JsonlWriter::create(&self.events) {
            Ok(w) => sinks.push(Box::new(w)),
            Err(e) => self
                .shared
                .note(format!("events file {}: {e}", self.events.display())),
        }
        Ok(Arc::new(FanOut(sinks)))
    }
}

/// Counts what the service's metrics show: runs executed and reused, images built and reused.
struct MetricsSink(Arc<Shared>);

impl EventSink for MetricsSink {
    fn event(&self, event: &Event) {
        self.0.metrics.event(event);
    }
}
