//! The progress display's text for every event it shows: lines (stderr not a terminal), quiet
//! (warnings only) and the bars of a terminal (the draws, with and without colours).

use std::path::PathBuf;

use swtbench_backend::BackendError;
use swtbench_core::RunKind;
use swtbench_plan::plan::SkipCause;
use swtbench_plan::settings::ImageKind;
use swtbench_reporter::progress::{Draw, Mode, Renderer};
use swtbench_reporter::Progress;
use swtbench_runner::events::{
    CancelReason, EvaluationStats, Event, ImageOutcome, InstanceOutcome, Phase, RunOutcome,
    TransferDirection,
};
use swtbench_runner::leftovers::{Leftover, LeftoverKind};
use swtbench_runner::outcome::{AbortReason, BuildFailure, ExecError, InstanceError};

use crate::Buffer;

const ASTROPY: &str = "astropy__astropy-12907";
const DJANGO: &str = "django__django-11099";
const SYMPY: &str = "sympy__sympy-18057";
const ENV_TAG: &str = "sweb.env.x86_64.abc123:latest";
const ASTROPY_TAG: &str = "sweb.eval.x86_64.astropy__astropy-12907:latest";
const REFERENCE: &str = "registry.example:5000/swtbench/k1";
const MIB: u64 = 1024 * 1024;

/// One of every event the display shows, in the order of an evaluation of three instances.
fn shown_events() -> Vec<Event> {
    vec![
        Event::EvaluationStarted {
            run_id: "r1".into(),
            model: "m".into(),
            instances: 3,
            to_evaluate: 2,
            runs_to_execute: 12,
            images_to_build: 2,
        },
        Event::LeftoversRemoved {
            containers: 2,
            left: vec![
                Leftover {
                    container: "0123456789ab".into(),
                    what: LeftoverKind::TestRun {
                        instance_id: ASTROPY.into(),
                        run: "gold_pre".into(),
                    },
                    owner: "other-machine/4242/7".into(),
                    run_id: Some("r0".into()),
                },
                Leftover {
                    container: "ba9876543210".into(),
                    what: LeftoverKind::ImageBuild {
                        image: ENV_TAG.into(),
                    },
                    owner: "other-machine/4242/7".into(),
                    run_id: None,
                },
            ],
            partial_files: 1,
        },
        Event::InstanceStarted {
            instance_id: ASTROPY.into(),
        },
        Event::InstancePhase {
            instance_id: ASTROPY.into(),
            phase: Phase::Images,
        },
        Event::ImageBuildStarted {
            tag: ENV_TAG.into(),
            kind: ImageKind::Env,
            instance_id: ASTROPY.into(),
        },
        Event::ImageReady {
            tag: ENV_TAG.into(),
            kind: ImageKind::Env,
            outcome: ImageOutcome::Built {
                duration_ms: 61_234,
            },
        },
        Event::ImagePullStarted {
            tag: ASTROPY_TAG.into(),
            reference: REFERENCE.into(),
        },
        Event::ImageTransfer {
            tag: ASTROPY_TAG.into(),
            reference: REFERENCE.into(),
            direction: TransferDirection::Pull,
            layers: 4,
            layers_done: 1,
            bytes: 3 * MIB,
            total_bytes: 10 * MIB + MIB / 2,
        },
        Event::ImagePullRetry {
            tag: ASTROPY_TAG.into(),
            reference: REFERENCE.into(),
            attempt: 1,
            pause_ms: 2_000,
            reason: "connection reset".into(),
        },
        Event::ImagePullFallback {
            tag: ASTROPY_TAG.into(),
            reference: REFERENCE.into(),
            missing: false,
            reason: "the pull failed after 3 attempts".into(),
        },
        Event::ImageReady {
            tag: "sweb.eval.x86_64.django__django-11099:latest".into(),
            kind: ImageKind::Instance,
            outcome: ImageOutcome::Failed {
                reason: BuildFailure {
                    tag: "sweb.eval.x86_64.django__django-11099:latest".into(),
                    kind: ImageKind::Instance,
                    error: BackendError::ImageNotFound("sweb.env.x86_64.def456:latest".into()),
                    log_line: None,
                    unreachable: None,
                    log: PathBuf::from("logs/build_images/django/build_image.log"),
                },
            },
        },
        Event::ImageReady {
            tag: ASTROPY_TAG.into(),
            kind: ImageKind::Instance,
            outcome: ImageOutcome::Pulled {
                reference: REFERENCE.into(),
                id: "sha256:0123".into(),
                duration_ms: 4_560,
                bytes: 700 * MIB,
            },
        },
        Event::ImageTransfer {
            tag: ASTROPY_TAG.into(),
            reference: REFERENCE.into(),
            direction: TransferDirection::Push,
            layers: 4,
            layers_done: 4,
            bytes: 700 * MIB,
            total_bytes: 700 * MIB,
        },
        Event::ImagePushed {
            tag: ASTROPY_TAG.into(),
            reference: REFERENCE.into(),
            duration_ms: 12_340,
            bytes: 5 * MIB + MIB / 4,
        },
        Event::ImagePushFailed {
            tag: ENV_TAG.into(),
            reference: REFERENCE.into(),
            reason: "denied: requested access to the resource is denied".into(),
        },
        Event::InstancePhase {
            instance_id: ASTROPY.into(),
            phase: Phase::Running {
                run: RunKind::GoldPre,
            },
        },
        Event::RunWaiting {
            instance_id: ASTROPY.into(),
            run: RunKind::GoldPost,
            holder: Some("node1/4242/1700000000".into()),
        },
        Event::RunWaiting {
            instance_id: ASTROPY.into(),
            run: RunKind::BasePre,
            holder: None,
        },
        Event::RunFinished {
            instance_id: ASTROPY.into(),
            run: RunKind::PredPost,
            result: RunOutcome::Failed {
                reason: ExecError::Render {
                    run: "pred_post".into(),
                    message: "no test command".into(),
                },
            },
        },
        Event::InstanceFinished {
            instance_id: ASTROPY.into(),
            outcome: InstanceOutcome::Resolved,
            duration_ms: 95_449,
        },
        Event::InstanceFinished {
            instance_id: DJANGO.into(),
            outcome: InstanceOutcome::Unresolved { applied: false },
            duration_ms: 0,
        },
        Event::ImageRemoved {
            tag: ASTROPY_TAG.into(),
            kind: ImageKind::Instance,
        },
        Event::Warning {
            message: "could not remove image sweb.env.x86_64.abc123:latest: in use".into(),
        },
        Event::EvaluationAborted {
            reason: AbortReason::Storage(ExecError::Io {
                path: "logs/run_evaluation/r1".into(),
                message: "No space left on device".into(),
                kind: std::io::ErrorKind::StorageFull,
            }),
        },
        Event::InstanceFinished {
            instance_id: SYMPY.into(),
            outcome: InstanceOutcome::Error {
                reason: InstanceError::OutputsMissing,
            },
            duration_ms: 1_250,
        },
        Event::CancelRequested {
            reason: CancelReason::Interrupt,
        },
    ]
}

/// Events the display does not show, in any mode.
fn hidden_events() -> Vec<Event> {
    vec![
        Event::RegistryRetry {
            what: REFERENCE.into(),
            status: 429,
            attempt: 1,
            pause_ms: 1_000,
        },
        Event::ImagePullFallback {
            tag: ASTROPY_TAG.into(),
            reference: REFERENCE.into(),
            missing: true,
            reason: "not in the registry".into(),
        },
        Event::ImageReady {
            tag: ENV_TAG.into(),
            kind: ImageKind::Env,
            outcome: ImageOutcome::Reused,
        },
        Event::RunFinished {
            instance_id: ASTROPY.into(),
            run: RunKind::GoldPre,
            result: RunOutcome::Reused,
        },
        Event::RunFinished {
            instance_id: ASTROPY.into(),
            run: RunKind::GoldPost,
            result: RunOutcome::Executed {
                exit_code: Some(128),
                test_exit_code: Some(1),
                timed_out: false,
                duration_ms: 3_000,
                overhead_ms: 400,
                limit: None,
            },
        },
        Event::ReportWritten {
            path: "m.r1.json".into(),
        },
        Event::EvaluationFinished {
            stats: EvaluationStats::default(),
            duration_ms: 100_000,
        },
    ]
}

/// The lines a display writing into a buffer shows of `events`.
fn written(quiet: bool, events: &[Event]) -> String {
    let out = Buffer::default();
    let progress = Progress::writing_to(quiet, 3, Box::new(out.clone()));
    for e in events {
        progress.event(e);
    }
    progress.finish();
    out.text()
}

/// The draws of `events` in `mode`, one line each: `line`, `warn`, `status` (beside the bar of
/// instances), `bar+` / `bar` / `bar-` (a running instance's bar appears, changes, goes).
fn drawn(mode: Mode, color: bool, events: &[Event]) -> String {
    let mut renderer = Renderer::new(mode, color, 3);
    let mut text = String::new();
    for e in events {
        for d in renderer.render(e) {
            let line = match d {
                Draw::Line(t) => format!("line   {t}"),
                Draw::Warning(t) => format!("warn   {t}"),
                Draw::Status(t) => format!("status {t}"),
                Draw::InstanceStarted { instance_id } => format!("bar+   {instance_id}"),
                Draw::InstancePhase { instance_id, phase } => {
                    format!("bar    {instance_id}: {phase}")
                }
                Draw::InstanceFinished {
                    instance_id, done, ..
                } => {
                    format!("bar-   {instance_id} ({done} done)")
                }
            };
            text.push_str(&line);
            text.push('\n');
        }
    }
    text
}

const BUILD_FAILURE: &str = "image sweb.eval.x86_64.django__django-11099:latest could not be built: image sweb.env.x86_64.def456:latest not found; see logs/build_images/django/build_image.log";

#[test]
fn lines_show_each_notable_event_and_warning() {
    let expected = "\
run r1: 3 instance(s), 2 to evaluate, 12 run(s) to execute, 2 image(s) to build
removed 2 container(s) left by swtbench processes that have ended: pid 4242 on other-machine (run id r0): 1 test run, 1 image build (sweb.env.x86_64.abc123:latest); removed 1 unfinished output file(s) of swtbench processes that have ended
building env image sweb.env.x86_64.abc123:latest
built env image sweb.env.x86_64.abc123:latest in 61.2 s
pulling sweb.eval.x86_64.astropy__astropy-12907:latest from registry.example:5000/swtbench/k1
warning: pulling sweb.eval.x86_64.astropy__astropy-12907:latest (attempt 1): connection reset; trying again in 2.0 s
warning: the pull failed after 3 attempts; building sweb.eval.x86_64.astropy__astropy-12907:latest instead
warning: BUILD_FAILURE
pulled instance image sweb.eval.x86_64.astropy__astropy-12907:latest from registry.example:5000/swtbench/k1 (700.0 MiB) in 4.6 s
pushed sweb.eval.x86_64.astropy__astropy-12907:latest to registry.example:5000/swtbench/k1 (5.2 MiB) in 12.3 s
warning: denied: requested access to the resource is denied
astropy__astropy-12907 gold_post: waiting for another swtbench process (pid 4242) that is executing it, to reuse its output
astropy__astropy-12907 base_pre: waiting for another swtbench process that is executing it, to reuse its output
warning: astropy__astropy-12907 pred_post: rendering the eval script of pred_post: no test command
[1/3] astropy__astropy-12907: resolved (95.4 s)
[2/3] django__django-11099: not applied (0.0 s)
removed instance image sweb.eval.x86_64.astropy__astropy-12907:latest
warning: could not remove image sweb.env.x86_64.abc123:latest: in use
warning: stopping the run: writing logs/run_evaluation/r1: No space left on device
[3/3] sympy__sympy-18057: error: outputs are missing and --skip-eval runs nothing (1.2 s)
cancelled (interrupt); cleaning up
"
    .replace("BUILD_FAILURE", BUILD_FAILURE);
    assert_eq!(written(false, &shown_events()), expected);
}

#[test]
fn quiet_shows_only_the_warnings() {
    let expected = "\
warning: pulling sweb.eval.x86_64.astropy__astropy-12907:latest (attempt 1): connection reset; trying again in 2.0 s
warning: the pull failed after 3 attempts; building sweb.eval.x86_64.astropy__astropy-12907:latest instead
warning: BUILD_FAILURE
warning: denied: requested access to the resource is denied
warning: astropy__astropy-12907 pred_post: rendering the eval script of pred_post: no test command
warning: could not remove image sweb.env.x86_64.abc123:latest: in use
warning: stopping the run: writing logs/run_evaluation/r1: No space left on device
"
    .replace("BUILD_FAILURE", BUILD_FAILURE);
    assert_eq!(written(true, &shown_events()), expected);
    assert_eq!(
        drawn(Mode::Quiet, false, &shown_events()),
        expected.replace("warning: ", "warn   warning: ")
    );
}

#[test]
fn bars_show_builds_pulls_and_running_instances_beside_the_bar() {
    let expected = "\
line   run r1: 3 instance(s), 2 to evaluate, 12 run(s) to execute, 2 image(s) to build
line   removed 2 container(s) left by swtbench processes that have ended: pid 4242 on other-machine (run id r0): 1 test run, 1 image build (sweb.env.x86_64.abc123:latest); removed 1 unfinished output file(s) of swtbench processes that have ended
bar+   astropy__astropy-12907
bar    astropy__astropy-12907: images
status building env image sweb.env.x86_64.abc123:latest
status 
line   built env image sweb.env.x86_64.abc123:latest in 61.2 s
status pulling sweb.eval.x86_64.astropy__astropy-12907:latest from registry.example:5000/swtbench/k1
status pulling sweb.eval.x86_64.astropy__astropy-12907:latest: 1/4 layers, 3.0 MiB of 10.5 MiB
warn   warning: pulling sweb.eval.x86_64.astropy__astropy-12907:latest (attempt 1): connection reset; trying again in 2.0 s
warn   warning: the pull failed after 3 attempts; building sweb.eval.x86_64.astropy__astropy-12907:latest instead
warn   warning: BUILD_FAILURE
status 
line   pulled instance image sweb.eval.x86_64.astropy__astropy-12907:latest from registry.example:5000/swtbench/k1 (700.0 MiB) in 4.6 s
status pushing sweb.eval.x86_64.astropy__astropy-12907:latest: 4/4 layers, 700.0 MiB of 700.0 MiB
line   pushed sweb.eval.x86_64.astropy__astropy-12907:latest to registry.example:5000/swtbench/k1 (5.2 MiB) in 12.3 s
warn   warning: denied: requested access to the resource is denied
bar    astropy__astropy-12907: running gold_pre
line   astropy__astropy-12907 gold_post: waiting for another swtbench process (pid 4242) that is executing it, to reuse its output
line   astropy__astropy-12907 base_pre: waiting for another swtbench process that is executing it, to reuse its output
warn   warning: astropy__astropy-12907 pred_post: rendering the eval script of pred_post: no test command
bar-   astropy__astropy-12907 (1 done)
line   [1/3] astropy__astropy-12907: resolved (95.4 s)
bar-   django__django-11099 (2 done)
line   [2/3] django__django-11099: not applied (0.0 s)
line   removed instance image sweb.eval.x86_64.astropy__astropy-12907:latest
warn   warning: could not remove image sweb.env.x86_64.abc123:latest: in use
warn   warning: stopping the run: writing logs/run_evaluation/r1: No space left on device
bar-   sympy__sympy-18057 (3 done)
line   [3/3] sympy__sympy-18057: error: outputs are missing and --skip-eval runs nothing (1.2 s)
line   cancelled (interrupt); cleaning up
"
    .replace("BUILD_FAILURE", BUILD_FAILURE);
    assert_eq!(drawn(Mode::Bars, false, &shown_events()), expected);
}

#[test]
fn colours_mark_warnings_and_outcomes() {
    let finished = |outcome| Event::InstanceFinished {
        instance_id: ASTROPY.into(),
        outcome,
        duration_ms: 1_000,
    };
    let events = [
        finished(InstanceOutcome::Resolved),
        finished(InstanceOutcome::Unresolved { applied: true }),
        finished(InstanceOutcome::EmptyPatch),
        finished(InstanceOutcome::Skipped {
            reason: SkipCause::NoPrediction,
        }),
        finished(InstanceOutcome::Interrupted),
        Event::Warning {
            message: "disk almost full".into(),
        },
    ];
    let expected = "\
bar-   astropy__astropy-12907 (1 done)
line   [1/3] astropy__astropy-12907: \x1b[32mresolved\x1b[0m (1.0 s)
bar-   astropy__astropy-12907 (2 done)
line   [2/3] astropy__astropy-12907: \x1b[0munresolved\x1b[0m (1.0 s)
bar-   astropy__astropy-12907 (3 done)
line   [3/3] astropy__astropy-12907: \x1b[0mempty patch\x1b[0m (1.0 s)
bar-   astropy__astropy-12907 (4 done)
line   [4/3] astropy__astropy-12907: \x1b[31mskipped: no prediction\x1b[0m (1.0 s)
bar-   astropy__astropy-12907 (5 done)
line   [5/3] astropy__astropy-12907: \x1b[31minterrupted\x1b[0m (1.0 s)
warn   \x1b[33mwarning:\x1b[0m disk almost full
";
    assert_eq!(drawn(Mode::Bars, true, &events), expected);
    // Quiet on a terminal: the warning alone, in colour.
    assert_eq!(
        drawn(Mode::Quiet, true, &events),
        "warn   \x1b[33mwarning:\x1b[0m disk almost full\n"
    );
}

#[test]
fn events_not_shown_draw_nothing_in_any_mode() {
    for mode in [Mode::Bars, Mode::Lines, Mode::Quiet] {
        assert_eq!(drawn(mode, true, &hidden_events()), "", "{mode:?}");
    }
    assert_eq!(written(false, &hidden_events()), "");
}

#[test]
fn lines_are_what_the_renderer_draws_as_lines() {
    let lines: String = drawn(Mode::Lines, false, &shown_events())
        .lines()
        .map(|l| format!("{}\n", &l[7..]))
        .collect();
    assert_eq!(written(false, &shown_events()), lines);
}

#[test]
fn lines_go_on_after_finish() {
    let out = Buffer::default();
    let progress = Progress::writing_to(false, 1, Box::new(out.clone()));
    progress.finish();
    progress.event(&Event::InstanceFinished {
        instance_id: SYMPY.into(),
        outcome: InstanceOutcome::Resolved,
        duration_ms: 2_000,
    });
    assert_eq!(out.text(), "[1/1] sympy__sympy-18057: resolved (2.0 s)\n");
}

#[test]
fn a_failed_build_is_said_once_and_its_instances_refer_to_it() {
    let failure = BuildFailure {
        tag: "exec.base.x86_64:latest".into(),
        kind: ImageKind::Base,
        error: BackendError::BuildFailed {
            tag: "exec.base.x86_64:latest".into(),
            message: "dial tcp: lookup registry-1.docker.io: no such host".into(),
            log_tail: Vec::new(),
        },
        log_line: None,
        unreachable: None,
        log: PathBuf::from("image_build_logs/base/exec.base.x86_64__latest/build_image.log"),
    };
    let events = vec![
        Event::ImageReady {
            tag: failure.tag.clone(),
            kind: ImageKind::Base,
            outcome: ImageOutcome::Failed {
                reason: failure.clone(),
            },
        },
        Event::InstanceFinished {
            instance_id: SYMPY.into(),
            outcome: InstanceOutcome::Error {
                reason: InstanceError::Images(swtbench_runner::outcome::ImageError::Build(
                    failure.clone(),
                )),
            },
            duration_ms: 10_100,
        },
    ];
    let text = written(false, &events);
    assert_eq!(
        text,
        format!(
            "warning: {failure}\n[1/3] {SYMPY}: error: its base image could not be built (above) \
             (10.1 s)\n"
        )
    );
    assert_eq!(text.matches("no such host").count(), 1, "{text}");
}
