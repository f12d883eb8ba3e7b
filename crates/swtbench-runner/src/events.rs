//! What the runner reports while it works. The runner never prints: it sends [`Event`]s to an
//! [`EventSink`], and consumers (the terminal progress display, the `--events` JSON Lines file)
//! render them.
//!
//! Words: the *evaluation* is everything one `swtbench run` does (its plan, all its instances,
//! its reports); a *run* is one of the six runs of an instance (`pred_pre` … `base_post`), one
//! eval script in one container. Events about the whole evaluation are named `evaluation_*`,
//! events about one of the six runs `run_*`.
//!
//! # JSON Lines format (version 2)
//!
//! [`JsonlWriter`] writes one JSON object per line, flushed after each line:
//!
//! ```json
//! {"v":2,"ts":"2025-01-01T12:00:00.123Z","elapsed_ms":5012,"event":"run_finished","instance_id":"a__b-1","run":"gold_pre","result":{"kind":"executed","exit_code":128,"test_exit_code":0,"timed_out":false,"duration_ms":3120,"overhead_ms":400}}
//! ```
//!
//! Every line has `v` (the format version, [`EVENTS_FORMAT`]), `ts` (UTC, RFC 3339 with
//! milliseconds), `elapsed_ms` (since the event file was opened, the start of the evaluation) and
//! `event` (the variant name in snake_case); the other fields are those of the variant as
//! documented on [`Event`]. Enumerations are objects with a `kind` field; a `reason` is the text
//! of its cause (the same text the run report and `swtbench_instance.json` hold). Consumers must
//! ignore fields and event names they do not know: new ones may be added without a version bump;
//! renaming or removing one bumps `v`. `docs/events.md` documents the format for users.
//!
//! Version 2 renamed the events of the whole evaluation, whose `run_*` names read like events of
//! one of the six runs: `run_started` → `evaluation_started`, `run_aborted` →
//! `evaluation_aborted`, `run_finished_all` → `evaluation_finished`. `run_finished` (one of the six
//! runs ended) and every field are unchanged.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;
use swtbench_core::outcome::OutcomeKind;
use swtbench_core::RunKind;

use crate::lock::Locked;
use crate::outcome::ExecError;
use crate::outcome::{as_text, AbortReason, BuildFailure, InstanceError};
use swtbench_plan::plan::SkipCause;
use swtbench_plan::settings::ImageKind;

/// Version of the JSON Lines event format.
pub const EVENTS_FORMAT: u32 = 2;

/// What an instance is doing right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Phase {
    /// Waiting for a worker.
    Queued,
    /// Extracting the patch from the raw model output.
    Extracting,
    /// Waiting for (or building) its images.
    Images,
    /// Executing one of the six runs.
    Running { run: RunKind },
    /// Grading and writing report.json.
    Grading,
}

impl Phase {
    pub fn label(&self) -> String {
        match self {
            Phase::Queued => "queued".into(),
            Phase::Extracting => "extracting the patch".into(),
            Phase::Images => "images".into(),
            Phase::Running { run } => format!("running {run}"),
            Phase::Grading => "grading".into(),
        }
    }
}

/// How one run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunOutcome {
    /// Executed in a container.
    Executed {
        /// The eval script's exit code (its last step's, usually 128).
        exit_code: Option<i64>,
        /// The test command's own exit code, when the script recorded it.
        test_exit_code: Option<i64>,
        timed_out: bool,
        duration_ms: u64,
        /// Time spent by the harness around the script: create, copy, remove.
        overhead_ms: u64,
        /// The resource limit the run reached (a prediction run's; a gold or base run that
        /// reaches one is [`RunOutcome::Failed`]).
        #[serde(skip_serializing_if = "Option::is_none")]
        limit: Option<swtbench_plan::limits::LimitHit>,
    },
    /// An output with the same content key was already there.
    Reused,
    /// Copied from another run with the same content key.
    Copied { from: String },
    /// Could not be run (the reason says why); no output was written.
    Failed {
        #[serde(serialize_with = "as_text")]
        reason: ExecError,
    },
}

/// How one instance ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InstanceOutcome {
    Resolved,
    Unresolved {
        applied: bool,
    },
    /// Graded as an empty patch without running anything.
    EmptyPatch,
    /// Not evaluated (plan-time reason, extraction found nothing).
    Skipped {
        #[serde(serialize_with = "as_text")]
        reason: SkipCause,
    },
    /// Something failed (image build, container, …); a rerun retries it.
    Error {
        #[serde(serialize_with = "as_text")]
        reason: InstanceError,
    },
    /// The run was cancelled before the instance finished.
    Interrupted,
}

impl InstanceOutcome {
    /// The kind, as `outcome.kind` of the instance summary records it.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            InstanceOutcome::Resolved => OutcomeKind::Resolved,
            InstanceOutcome::Unresolved { .. } => OutcomeKind::Unresolved,
            InstanceOutcome::EmptyPatch => OutcomeKind::EmptyPatch,
            InstanceOutcome::Skipped { .. } => OutcomeKind::Skipped,
            InstanceOutcome::Error { .. } => OutcomeKind::Error,
            InstanceOutcome::Interrupted => OutcomeKind::Interrupted,
        }
    }

    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            InstanceOutcome::Skipped { .. }
                | InstanceOutcome::Error { .. }
                | InstanceOutcome::Interrupted
        )
    }

    pub fn label(&self) -> String {
        match self {
            InstanceOutcome::Resolved => "resolved".into(),
            InstanceOutcome::Unresolved { applied: true } => "unresolved".into(),
            InstanceOutcome::Unresolved { applied: false } => "not applied".into(),
            InstanceOutcome::EmptyPatch => "empty patch".into(),
            InstanceOutcome::Skipped { reason } => format!("skipped: {reason}"),
            InstanceOutcome::Error { reason } => format!("error: {reason}"),
            InstanceOutcome::Interrupted => "interrupted".into(),
        }
    }
}

/// How an image became available.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ImageOutcome {
    Built {
        duration_ms: u64,
    },
    Reused,
    /// Pulled from the registry cache (`reference`) instead of built.
    Pulled {
        reference: String,
        /// The local image id (`sha256:…`).
        id: String,
        duration_ms: u64,
        bytes: u64,
    },
    Failed {
        #[serde(serialize_with = "as_text")]
        reason: BuildFailure,
    },
}

/// Which way an image moves between the engine and the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransferDirection {
    Pull,
    Push,
}

/// Why a run is being cancelled, ordered by urgency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// First Ctrl-C (or SIGTERM): stop scheduling, stop containers, write partial reports.
    Interrupt,
    /// Second Ctrl-C: kill containers and exit without reports.
    Kill,
}

/// Totals of the whole evaluation, at its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct EvaluationStats {
    pub instances: usize,
    pub resolved: usize,
    /// The patch applied and the instance is not resolved (the outcomes use the run report's
    /// words: resolved, unresolved, not applied, empty patch, error).
    pub unresolved: usize,
    /// The model patch did not apply.
    pub not_applied: usize,
    pub empty_patch: usize,
    pub errors: usize,
    pub skipped: usize,
    pub interrupted: usize,
    pub runs_executed: usize,
    pub runs_reused: usize,
    pub runs_copied: usize,
    pub runs_failed: usize,
    pub runs_timed_out: usize,
    /// Prediction runs that reached a resource limit (graded; gold or base runs that reach one
    /// are failed runs).
    pub runs_limited: usize,
    pub images_built: usize,
    /// Images pulled from the registry cache instead of built.
    pub images_pulled: usize,
    pub images_removed: usize,
}

/// One thing that happened. Field names are those of the JSON Lines format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The plan is made and the evaluation starts. `instances` counts the instances of the run
    /// report; `to_evaluate` those that need containers, `runs_to_execute` and `images_to_build`
    /// what the plan executes and builds (all three 0 with `--skip-eval`, which runs nothing).
    EvaluationStarted {
        run_id: String,
        model: String,
        instances: usize,
        to_evaluate: usize,
        runs_to_execute: usize,
        images_to_build: usize,
    },
    /// What swtbench processes that have ended (killed, crashed) left was removed: containers of
    /// dead owners, whatever their run id, and containers of this run id without an owner (an
    /// earlier version's); `left` says what each container was and who left it. `partial_files`
    /// counts the unfinished output files of dead processes removed from the output tree. Never
    /// sent for this process's own containers.
    LeftoversRemoved {
        containers: usize,
        left: Vec<crate::leftovers::Leftover>,
        partial_files: usize,
    },
    /// A worker took the instance (only instances that need containers).
    InstanceStarted { instance_id: String },
    /// The instance moves on to `phase`.
    InstancePhase { instance_id: String, phase: Phase },
    /// The plan builds this image and the first instance that needs it (`instance_id`) asks for
    /// it; sent once per image.
    ImageBuildStarted {
        tag: String,
        kind: ImageKind,
        instance_id: String,
    },
    /// A build ended (built or failed); sent once per image and outcome.
    ImageReady {
        tag: String,
        kind: ImageKind,
        outcome: ImageOutcome,
    },
    /// A pull of a missing image from the registry cache started.
    ImagePullStarted { tag: String, reference: String },
    /// Progress of a pull or push (`direction`: `pull` or `push`), summed over its layers; sent
    /// when a layer finishes and at most every 8 MiB in between.
    ImageTransfer {
        tag: String,
        reference: String,
        direction: TransferDirection,
        layers: usize,
        layers_done: usize,
        bytes: u64,
        total_bytes: u64,
    },
    /// A registry look-up got an answer it retries (`status` 429 or 5xx; 0: no answer) and asks
    /// again after `pause_ms` (the answer's `Retry-After` when it gave one).
    RegistryRetry {
        what: String,
        status: u16,
        attempt: u32,
        pause_ms: u64,
    },
    /// A pull failed and is tried again after `pause_ms`.
    ImagePullRetry {
        tag: String,
        reference: String,
        attempt: u32,
        pause_ms: u64,
        reason: String,
    },
    /// The image is built after all: the registry does not have it (`missing`), or the pull
    /// failed after its retries.
    ImagePullFallback {
        tag: String,
        reference: String,
        missing: bool,
        reason: String,
    },
    /// The image was pushed to the registry cache (`--push`).
    ImagePushed {
        tag: String,
        reference: String,
        duration_ms: u64,
        bytes: u64,
    },
    /// A push failed; the evaluation goes on with the local image.
    ImagePushFailed {
        tag: String,
        reference: String,
        reason: String,
    },
    /// A shared run waits for another swtbench process (another model's evaluation on the same
    /// output directory, another shard) that is executing it; it reuses that output when the
    /// other is done. `holder`: the other's session (`host/pid/start`), when it says.
    RunWaiting {
        instance_id: String,
        run: RunKind,
        holder: Option<String>,
    },
    /// One of the six runs of an instance ended.
    RunFinished {
        instance_id: String,
        run: RunKind,
        result: RunOutcome,
    },
    /// The instance is graded (its `report.json` written) or given up; `duration_ms` since it
    /// started (0 for instances that never started).
    InstanceFinished {
        instance_id: String,
        outcome: InstanceOutcome,
        duration_ms: u64,
    },
    /// Cancellation was asked for; sent after the workers stopped.
    CancelRequested { reason: CancelReason },
    /// The evaluation stops early because of a failure of the machine, not of an instance: the
    /// container engine stopped answering, the disk is full or read-only. Running instances are
    /// stopped (as on an interrupt) and the partial reports written; a rerun resumes.
    EvaluationAborted {
        #[serde(serialize_with = "as_text")]
        reason: AbortReason,
    },
    /// An image above the cache level was removed.
    ImageRemoved { tag: String, kind: ImageKind },
    /// A non-fatal problem worth telling (an image that could not be removed, …).
    Warning { message: String },
    /// The run report was written to `path`.
    ReportWritten { path: String },
    /// The evaluation ended (also after a cancellation); `duration_ms` since it started.
    EvaluationFinished {
        stats: EvaluationStats,
        duration_ms: u64,
    },
}

/// Receives events. Implementations must be cheap and must not block for long: they are called
/// from the runner's tasks.
pub trait EventSink: Send + Sync {
    fn event(&self, event: &Event);
}

/// A shared sink is a sink (e.g. a progress display the caller keeps a handle on).
impl<T: EventSink + ?Sized> EventSink for std::sync::Arc<T> {
    fn event(&self, event: &Event) {
        (**self).event(event);
    }
}

/// Discards everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullSink;

impl EventSink for NullSink {
    fn event(&self, _event: &Event) {}
}

/// Keeps every event (tests).
#[derive(Debug, Default)]
pub struct RecordingSink {
    events: Mutex<Vec<Event>>,
}

impl RecordingSink {
    pub fn events(&self) -> Vec<Event> {
        self.events.locked().clone()
    }
}

impl EventSink for RecordingSink {
    fn event(&self, event: &Event) {
        self.events.locked().push(event.clone());
    }
}

/// Sends each event to several sinks.
pub struct FanOut(pub Vec<Box<dyn EventSink>>);

impl std::fmt::Debug for FanOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FanOut({} sinks)", self.0.len())
    }
}

impl EventSink for FanOut {
    fn event(&self, event: &Event) {
        for s in &self.0 {
            s.event(event);
        }
    }
}

/// Writes events as JSON Lines (format above) to a file.
#[derive(Debug)]
pub struct JsonlWriter {
    out: Mutex<std::io::BufWriter<std::fs::File>>,
    started: Instant,
}

impl JsonlWriter {
    /// Creates (truncates) `path`.
    pub fn create(path: &Path) -> std::io::Result<JsonlWriter> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        Ok(JsonlWriter {
            out: Mutex::new(std::io::BufWriter::new(std::fs::File::create(path)?)),
            started: Instant::now(),
        })
    }
}

/// One event as its JSON Lines record (without the newline).
pub fn jsonl_record(event: &Event, ts: &str, elapsed_ms: u64) -> String {
    let mut obj = serde_json::Map::new();
    obj.insert("v".into(), EVENTS_FORMAT.into());
    obj.insert("ts".into(), ts.into());
    obj.insert("elapsed_ms".into(), elapsed_ms.into());
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(event) {
        for (k, v) in fields {
            obj.insert(k, v);
        }
    }
    serde_json::Value::Object(obj).to_string()
}

impl EventSink for JsonlWriter {
    fn event(&self, event: &Event) {
        let ts = chrono::Utc::now()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
        let line = jsonl_record(event, &ts, self.started.elapsed().as_millis() as u64);
        let mut out = self.out.locked();
        // A full disk must not stop the evaluation; the file is a side channel.
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_have_the_documented_envelope() {
        let e = Event::RunFinished {
            instance_id: "a__b-1".into(),
            run: RunKind::GoldPre,
            result: RunOutcome::Executed {
                exit_code: Some(128),
                test_exit_code: Some(0),
                timed_out: false,
                duration_ms: 3120,
                overhead_ms: 400,
                limit: None,
            },
        };
        let line = jsonl_record(&e, "2025-01-01T12:00:00.123Z", 5012);
        assert_eq!(
            line,
            r#"{"v":2,"ts":"2025-01-01T12:00:00.123Z","elapsed_ms":5012,"event":"run_finished","instance_id":"a__b-1","run":"gold_pre","result":{"kind":"executed","exit_code":128,"test_exit_code":0,"timed_out":false,"duration_ms":3120,"overhead_ms":400}}"#
        );
    }

    #[test]
    fn events_of_the_evaluation_and_of_one_run_are_named_apart() {
        let name = |e: &Event| serde_json::to_value(e).expect("json")["event"].clone();
        let started = Event::EvaluationStarted {
            run_id: "r".into(),
            model: "m".into(),
            instances: 1,
            to_evaluate: 1,
            runs_to_execute: 6,
            images_to_build: 0,
        };
        assert_eq!(name(&started), "evaluation_started");
        let aborted = Event::EvaluationAborted {
            reason: AbortReason::EngineGone(swtbench_backend::BackendError::Invalid("x".into())),
        };
        assert_eq!(
            jsonl_record(&aborted, "t", 1),
            r#"{"v":2,"ts":"t","elapsed_ms":1,"event":"evaluation_aborted","reason":"the container engine stopped answering: invalid request: x"}"#
        );
        let finished = Event::EvaluationFinished {
            stats: EvaluationStats::default(),
            duration_ms: 5,
        };
        assert_eq!(name(&finished), "evaluation_finished");
    }

    #[test]
    fn the_kind_of_an_outcome_is_the_kind_its_json_records() {
        let outcomes = [
            InstanceOutcome::Resolved,
            InstanceOutcome::Unresolved { applied: false },
            InstanceOutcome::EmptyPatch,
            InstanceOutcome::Skipped {
                reason: SkipCause::ExtractionFailed("x".into()),
            },
            InstanceOutcome::Error {
                reason: InstanceError::OutputsMissing,
            },
            InstanceOutcome::Interrupted,
        ];
        for o in &outcomes {
            let v = serde_json::to_value(o).expect("json");
            assert_eq!(v["kind"].as_str(), Some(o.kind().as_str()), "{o:?}");
        }
        let kinds: std::collections::BTreeSet<_> = outcomes.iter().map(|o| o.kind()).collect();
        assert_eq!(
            kinds.len(),
            OutcomeKind::ALL.len(),
            "every kind is produced"
        );
    }

    #[test]
    fn reasons_are_the_text_of_their_cause() {
        let e = Event::InstanceFinished {
            instance_id: "a__b-1".into(),
            outcome: InstanceOutcome::Error {
                reason: InstanceError::OutputsMissing,
            },
            duration_ms: 3,
        };
        assert_eq!(
            jsonl_record(&e, "t", 1),
            r#"{"v":2,"ts":"t","elapsed_ms":1,"event":"instance_finished","instance_id":"a__b-1","outcome":{"kind":"error","reason":"outputs are missing and --skip-eval runs nothing"},"duration_ms":3}"#
        );
        let skipped = InstanceOutcome::Skipped {
            reason: SkipCause::ExtractionFailed("no patch type produced a change".into()),
        };
        assert_eq!(
            skipped.label(),
            "skipped: patch extraction failed: no patch type produced a change"
        );
        assert!(skipped.is_failure());
        let failed = RunOutcome::Failed {
            reason: ExecError::Engine(swtbench_backend::BackendError::Invalid("y".into())),
        };
        assert_eq!(
            serde_json::to_string(&failed).expect("json"),
            r#"{"kind":"failed","reason":"invalid request: y"}"#
        );
    }

    #[test]
    fn the_writer_appends_one_line_per_event() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/events.jsonl");
        let w = JsonlWriter::create(&path).expect("create");
        w.event(&Event::InstanceStarted {
            instance_id: "x".into(),
        });
        w.event(&Event::CancelRequested {
            reason: CancelReason::Interrupt,
        });
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event"], "instance_started");
        assert_eq!(lines[1]["reason"], "interrupt");
        assert!(lines[1]["ts"].as_str().is_some_and(|t| t.ends_with('Z')));
    }
}
