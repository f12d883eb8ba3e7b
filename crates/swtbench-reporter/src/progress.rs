//! The progress display of an evaluation: an event consumer on stderr.
//!
//! On a terminal: a bar of instances done out of the total with the ETA, and one line per running
//! instance with its phase (indicatif). Elsewhere (CI logs, pipes): one plain line per finished
//! instance, image build and warning. `--quiet` keeps only warnings. `NO_COLOR` turns colours
//! off. Nothing here decides anything; it only renders events.
#![allow(clippy::print_stderr)]

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use swtbench_runner::events::{Event, ImageOutcome, InstanceOutcome, RunOutcome};

/// How the display draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// indicatif bars on a terminal.
    Bars,
    /// One line per notable event.
    Lines,
    /// Warnings only.
    Quiet,
}

/// Whether colours are allowed (<https://no-color.org>), given the value of `NO_COLOR`.
pub fn colors_allowed(no_color: Option<&std::ffi::OsStr>) -> bool {
    no_color.is_none_or(|v| v.is_empty())
}

pub struct Progress {
    mode: Mode,
    color: bool,
    total: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    done: usize,
    multi: Option<MultiProgress>,
    main: Option<ProgressBar>,
    running: HashMap<String, ProgressBar>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("mode", &self.mode)
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

impl Progress {
    /// A display for `total` instances; `quiet` keeps only warnings, `is_terminal` (of stderr)
    /// picks bars over lines, `colors` allows colours on a terminal (see [`colors_allowed`]).
    pub fn new(quiet: bool, is_terminal: bool, colors: bool, total: usize) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if is_terminal {
            Mode::Bars
        } else {
            Mode::Lines
        };
        let color = colors && is_terminal;
        let mut state = State::default();
        if mode == Mode::Bars {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let main = multi.add(ProgressBar::new(total as u64));
            let template = if color {
                "{spinner:.green} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} instances  ETA {eta}  {msg}"
            } else {
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} instances  ETA {eta}  {msg}"
            };
            main.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            main.enable_steady_tick(Duration::from_millis(200));
            state.main = Some(main);
            state.multi = Some(multi);
        }
        Progress {
            mode,
            color,
            total,
            state: Mutex::new(state),
        }
    }

    fn line(&self, state: &State, text: &str) {
        match (&self.mode, &state.multi) {
            (Mode::Bars, Some(m)) => {
                let _ = m.println(text);
            }
            (Mode::Lines, _) => eprintln!("{text}"),
            _ => {}
        }
    }

    fn warn(&self, state: &State, text: &str) {
        let line = if self.color {
            format!("\x1b[33mwarning:\x1b[0m {text}")
        } else {
            format!("warning: {text}")
        };
        match &state.multi {
            Some(m) => {
                let _ = m.println(line);
            }
            None => eprintln!("{line}"),
        }
    }

    fn outcome_text(&self, o: &InstanceOutcome) -> String {
        let label = o.label();
        if !self.color {
            return label;
        }
        let code = match o {
            InstanceOutcome::Resolved => "32",
            InstanceOutcome::Unresolved { .. } | InstanceOutcome::EmptyPatch => "0",
            _ => "31",
        };
        format!("\x1b[{code}m{label}\x1b[0m")
    }

    pub fn event(&self, event: &Event) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match event {
            Event::EvaluationStarted {
                run_id,
                instances,
                to_evaluate,
                runs_to_execute,
                images_to_build,
                ..
            } => {
                self.line(
                    &st,
                    &format!(
                        "run {run_id}: {instances} instance(s), {to_evaluate} to evaluate, {runs_to_execute} run(s) to execute, {images_to_build} image(s) to build"
                    ),
                );
            }
            Event::LeftoversRemoved { containers } => self.line(
                &st,
                &format!("removed {containers} container(s) left by an earlier run of this id"),
            ),
            Event::InstanceStarted { instance_id } => {
                if let (Mode::Bars, Some(m)) = (self.mode, &st.multi) {
                    let bar = m.add(ProgressBar::new_spinner());
                    let style = ProgressStyle::with_template("  {spinner} {prefix}: {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner());
                    bar.set_style(style);
                    bar.set_prefix(instance_id.clone());
                    bar.set_message("starting");
                    bar.enable_steady_tick(Duration::from_millis(200));
                    st.running.insert(instance_id.clone(), bar);
                }
            }
            Event::InstancePhase { instance_id, phase } => {
                if let Some(bar) = st.running.get(instance_id) {
                    bar.set_message(phase.label());
                }
            }
            Event::ImageBuildStarted { tag, kind, .. } => {
                if let Some(main) = &st.main {
                    main.set_message(format!("building {} image {tag}", kind.as_str()));
                } else {
                    self.line(&st, &format!("building {} image {tag}", kind.as_str()));
                }
            }
            Event::ImageReady { tag, kind, outcome } => match outcome {
                ImageOutcome::Built { duration_ms } => {
                    if let Some(main) = &st.main {
                        main.set_message("");
                    }
                    self.line(
                        &st,
                        &format!(
                            "built {} image {tag} in {:.1} s",
                            kind.as_str(),
                            *duration_ms as f64 / 1000.0
                        ),
                    );
                }
                ImageOutcome::Pulled {
                    reference,
                    duration_ms,
                    bytes,
                    ..
                } => {
                    if let Some(main) = &st.main {
                        main.set_message("");
                    }
                    self.line(
                        &st,
                        &format!(
                            "pulled {} image {tag} from {reference} ({}) in {:.1} s",
                            kind.as_str(),
                            mib(*bytes),
                            *duration_ms as f64 / 1000.0
                        ),
                    );
                }
                ImageOutcome::Failed { reason } => self.warn(&st, &reason.to_string()),
                ImageOutcome::Reused => {}
            },
            Event::ImagePullStarted { tag, reference } => {
                let text = format!("pulling {tag} from {reference}");
                match &st.main {
                    Some(main) => main.set_message(text),
                    None => self.line(&st, &text),
                }
            }
            Event::ImageTransfer {
                tag,
                direction,
                layers,
                layers_done,
                bytes,
                total_bytes,
                ..
            } => {
                // Bars only: in line mode the start and the end are enough.
                if let Some(main) = &st.main {
                    let verb = match direction {
                        swtbench_runner::events::TransferDirection::Pull => "pulling",
                        swtbench_runner::events::TransferDirection::Push => "pushing",
                    };
                    main.set_message(format!(
                        "{verb} {tag}: {layers_done}/{layers} layers, {} of {}",
                        mib(*bytes),
                        mib(*total_bytes)
                    ));
                }
            }
            Event::ImagePullRetry {
                tag,
                attempt,
                pause_ms,
                reason,
                ..
            } => self.warn(
                &st,
                &format!(
                    "pulling {tag} (attempt {attempt}): {reason}; trying again in {:.1} s",
                    *pause_ms as f64 / 1000.0
                ),
            ),
            Event::ImagePullFallback {
                tag,
                missing: false,
                reason,
                ..
            } => self.warn(&st, &format!("{reason}; building {tag} instead")),
            Event::ImagePushed {
                tag,
                reference,
                duration_ms,
                bytes,
            } => self.line(
                &st,
                &format!(
                    "pushed {tag} to {reference} ({}) in {:.1} s",
                    mib(*bytes),
                    *duration_ms as f64 / 1000.0
                ),
            ),
            Event::ImagePushFailed { reason, .. } => self.warn(&st, reason),
            Event::RunFinished {
                instance_id,
                run,
                result: RunOutcome::Failed { reason },
            } => self.warn(&st, &format!("{instance_id} {run}: {reason}")),
            Event::RunWaiting {
                instance_id,
                run,
                holder,
            } => {
                let who = holder
                    .as_deref()
                    .and_then(|h| h.split('/').nth(1))
                    .map(|pid| format!(" (pid {pid})"))
                    .unwrap_or_default();
                self.line(
                    &st,
                    &format!(
                        "{instance_id} {run}: waiting for another swtbench process{who} that                          is executing it, to reuse its output"
                    ),
                )
            }
            Event::InstanceFinished {
                instance_id,
                outcome,
                duration_ms,
            } => {
                st.done += 1;
                if let Some(bar) = st.running.remove(instance_id) {
                    bar.finish_and_clear();
                    if let Some(m) = &st.multi {
                        m.remove(&bar);
                    }
                }
                if let Some(main) = &st.main {
                    main.set_position(st.done as u64);
                }
                let text = format!(
                    "[{}/{}] {instance_id}: {} ({:.1} s)",
                    st.done,
                    self.total,
                    self.outcome_text(outcome),
                    *duration_ms as f64 / 1000.0
                );
                self.line(&st, &text);
            }
            Event::CancelRequested { reason } => self.line(
                &st,
                &format!("cancelled ({reason:?}); cleaning up").to_lowercase(),
            ),
            Event::EvaluationAborted { reason } => {
                self.warn(&st, &format!("stopping the run: {reason}"));
            }
            Event::ImageRemoved { tag, kind } => {
                self.line(&st, &format!("removed {} image {tag}", kind.as_str()))
            }
            Event::Warning { message } => self.warn(&st, message),
            _ => {}
        }
    }

    /// Clears the bars (call before printing the final table).
    pub fn finish(&self) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        for (_, bar) in st.running.drain() {
            bar.finish_and_clear();
        }
        if let Some(main) = st.main.take() {
            main.finish_and_clear();
        }
        if let Some(m) = st.multi.take() {
            let _ = m.clear();
        }
    }
}

/// Bytes as MiB with one decimal.
fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
