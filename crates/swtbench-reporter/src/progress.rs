//! The progress display of an evaluation: an event consumer on stderr.
//!
//! On a terminal: a bar of instances done out of the total with the ETA once there is one
//! ([`crate::eta`]; what is being built or pulled beside it meanwhile), and one line per running
//! instance with its phase (indicatif). Elsewhere (CI logs, pipes): one plain line per finished
//! instance, image build and warning. `--quiet` keeps only warnings. `NO_COLOR` turns colours
//! off. Nothing here decides anything; it only renders events.
//!
//! Two halves: [`Renderer`] turns each event into [`Draw`]s (text and bar changes, no I/O), and the
//! screen of a [`Progress`] applies them, to indicatif's bars or as lines into a writer.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use swtbench_runner::events::{
    CancelReason, Event, ImageOutcome, InstanceOutcome, Phase, RunOutcome, TransferDirection,
};
use swtbench_runner::outcome::{ImageError, InstanceError};

use crate::eta::Eta;

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

/// One change of the display: what [`Renderer::render`] makes of an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Draw {
    /// A line of text: above the bars on a terminal, on its own elsewhere.
    Line(String),
    /// A warning, with its `warning:` prefix; shown in every mode.
    Warning(String),
    /// The message beside the bar of instances (bars only); empty clears it.
    Status(String),
    /// A worker took the instance: a bar for it appears (bars only).
    InstanceStarted { instance_id: String },
    /// The running instance's bar shows `phase` (bars only).
    InstancePhase { instance_id: String, phase: String },
    /// The instance's bar goes and the bar of instances stands at `done` (bars only); the
    /// instance took `took_ms` (for the ETA).
    InstanceFinished {
        instance_id: String,
        done: usize,
        took_ms: u64,
    },
}

/// Turns events into [`Draw`]s for one mode; counts the instances done. No I/O.
#[derive(Debug)]
pub struct Renderer {
    mode: Mode,
    color: bool,
    total: usize,
    done: usize,
}

impl Renderer {
    /// A renderer for `total` instances in `mode`, with ANSI colours when `color`.
    pub fn new(mode: Mode, color: bool, total: usize) -> Renderer {
        Renderer {
            mode,
            color,
            total,
            done: 0,
        }
    }

    /// What the display shows of `event`, in order (nothing for events it does not show).
    pub fn render(&mut self, event: &Event) -> Vec<Draw> {
        match event {
            Event::EvaluationStarted { .. } => self.line(evaluation_started(event)),
            Event::LeftoversRemoved {
                left,
                partial_files,
                ..
            } => self.line(swtbench_runner::leftovers::removed_line(
                left,
                *partial_files,
            )),
            Event::InstanceStarted { instance_id } => self.instance_started(instance_id),
            Event::InstancePhase { instance_id, phase } => self.instance_phase(instance_id, phase),
            Event::ImageBuildStarted { tag, kind, .. } => {
                self.status_or_line(format!("building {} image {tag}", kind.as_str()))
            }
            Event::ImageReady { .. } => self.image_ready(event),
            Event::ImagePullStarted { tag, reference } => {
                self.status_or_line(format!("pulling {tag} from {reference}"))
            }
            Event::ImageTransfer { .. } => self.image_transfer(event),
            Event::ImagePullRetry { .. } => self.warning(pull_retry(event)),
            Event::ImagePullFallback {
                tag,
                missing: false,
                reason,
                ..
            } => self.warning(format!("{reason}; building {tag} instead")),
            Event::ImagePushed { .. } => self.line(image_pushed(event)),
            Event::ImagePushFailed { reason, .. } => self.warning(reason.clone()),
            Event::RunFinished {
                instance_id,
                run,
                result: RunOutcome::Failed { reason },
            } => self.warning(format!("{instance_id} {run}: {reason}")),
            Event::RunWaiting { .. } => self.line(run_waiting(event)),
            Event::InstanceFinished { .. } => self.instance_finished(event),
            Event::CancelRequested { reason } => self.line(cancel_requested(*reason)),
            Event::EvaluationAborted { reason } => {
                self.warning(format!("stopping the run: {reason}"))
            }
            Event::ImageRemoved { tag, kind } => {
                self.line(format!("removed {} image {tag}", kind.as_str()))
            }
            Event::Warning { message } => self.warning(message.clone()),
            _ => Vec::new(),
        }
    }

    /// A line, unless quiet.
    fn line(&self, text: String) -> Vec<Draw> {
        match self.mode {
            Mode::Quiet => Vec::new(),
            Mode::Bars | Mode::Lines => vec![Draw::Line(text)],
        }
    }

    /// A warning, in every mode.
    fn warning(&self, text: String) -> Vec<Draw> {
        let text = if self.color {
            format!("\x1b[33mwarning:\x1b[0m {text}")
        } else {
            format!("warning: {text}")
        };
        vec![Draw::Warning(text)]
    }

    /// The message beside the bars, or a line without them.
    fn status_or_line(&self, text: String) -> Vec<Draw> {
        match self.mode {
            Mode::Bars => vec![Draw::Status(text)],
            Mode::Lines | Mode::Quiet => self.line(text),
        }
    }

    /// Something for the bars only.
    fn bars_only(&self, draw: Draw) -> Vec<Draw> {
        match self.mode {
            Mode::Bars => vec![draw],
            Mode::Lines | Mode::Quiet => Vec::new(),
        }
    }

    fn instance_started(&self, instance_id: &str) -> Vec<Draw> {
        self.bars_only(Draw::InstanceStarted {
            instance_id: instance_id.to_string(),
        })
    }

    fn instance_phase(&self, instance_id: &str, phase: &Phase) -> Vec<Draw> {
        self.bars_only(Draw::InstancePhase {
            instance_id: instance_id.to_string(),
            phase: phase.label(),
        })
    }

    /// A built or pulled image clears the message beside the bars and has its line; a failed
    /// build is a warning.
    fn image_ready(&self, event: &Event) -> Vec<Draw> {
        let Event::ImageReady { tag, kind, outcome } = event else {
            return Vec::new();
        };
        let text = match outcome {
            ImageOutcome::Built { duration_ms } => format!(
                "built {} image {tag} in {}",
                kind.as_str(),
                seconds(*duration_ms)
            ),
            ImageOutcome::Pulled {
                reference,
                duration_ms,
                bytes,
                ..
            } => format!(
                "pulled {} image {tag} from {reference} ({}) in {}",
                kind.as_str(),
                mib(*bytes),
                seconds(*duration_ms)
            ),
            ImageOutcome::Failed { reason } => return self.warning(reason.to_string()),
            ImageOutcome::Reused => return Vec::new(),
        };
        let mut draws = self.bars_only(Draw::Status(String::new()));
        draws.extend(self.line(text));
        draws
    }

    /// Layers and bytes of a pull or push beside the bars; in line mode the start and the end
    /// are enough.
    fn image_transfer(&self, event: &Event) -> Vec<Draw> {
        let Event::ImageTransfer {
            tag,
            direction,
            layers,
            layers_done,
            bytes,
            total_bytes,
            ..
        } = event
        else {
            return Vec::new();
        };
        let verb = match direction {
            TransferDirection::Pull => "pulling",
            TransferDirection::Push => "pushing",
        };
        self.bars_only(Draw::Status(format!(
            "{verb} {tag}: {layers_done}/{layers} layers, {} of {}",
            mib(*bytes),
            mib(*total_bytes)
        )))
    }

    /// Counts the instance done: its bar goes and it has its line.
    fn instance_finished(&mut self, event: &Event) -> Vec<Draw> {
        let Event::InstanceFinished {
            instance_id,
            outcome,
            duration_ms,
        } = event
        else {
            return Vec::new();
        };
        self.done += 1;
        let mut draws = self.bars_only(Draw::InstanceFinished {
            instance_id: instance_id.clone(),
            done: self.done,
            took_ms: *duration_ms,
        });
        draws.extend(self.line(format!(
            "[{}/{}] {instance_id}: {} ({})",
            self.done,
            self.total,
            self.outcome_text(outcome),
            seconds(*duration_ms)
        )));
        draws
    }

    fn outcome_text(&self, o: &InstanceOutcome) -> String {
        let label = match o {
            // The failed build was a warning of its own, with its whole text: not once more per
            // instance (the text stays in the instance's files and events).
            InstanceOutcome::Error {
                reason: InstanceError::Images(ImageError::Build(b)),
            } => format!(
                "error: its {} image could not be built (above)",
                b.kind.as_str()
            ),
            _ => o.label(),
        };
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
}

fn evaluation_started(event: &Event) -> String {
    let Event::EvaluationStarted {
        run_id,
        instances,
        to_evaluate,
        runs_to_execute,
        images_to_build,
        ..
    } = event
    else {
        return String::new();
    };
    format!(
        "run {run_id}: {instances} instance(s), {to_evaluate} to evaluate, {runs_to_execute} run(s) to execute, {images_to_build} image(s) to build"
    )
}

fn pull_retry(event: &Event) -> String {
    let Event::ImagePullRetry {
        tag,
        attempt,
        pause_ms,
        reason,
        ..
    } = event
    else {
        return String::new();
    };
    format!(
        "pulling {tag} (attempt {attempt}): {reason}; trying again in {}",
        seconds(*pause_ms)
    )
}

fn image_pushed(event: &Event) -> String {
    let Event::ImagePushed {
        tag,
        reference,
        duration_ms,
        bytes,
    } = event
    else {
        return String::new();
    };
    format!(
        "pushed {tag} to {reference} ({}) in {}",
        mib(*bytes),
        seconds(*duration_ms)
    )
}

fn run_waiting(event: &Event) -> String {
    let Event::RunWaiting {
        instance_id,
        run,
        holder,
    } = event
    else {
        return String::new();
    };
    let who = holder
        .as_deref()
        .and_then(|h| h.split('/').nth(1))
        .map(|pid| format!(" (pid {pid})"))
        .unwrap_or_default();
    format!(
        "{instance_id} {run}: waiting for another swtbench process{who} that is executing it, to reuse its output"
    )
}

fn cancel_requested(reason: CancelReason) -> String {
    format!("cancelled ({reason:?}); cleaning up").to_lowercase()
}

/// Milliseconds as seconds with one decimal.
fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// Bytes as MiB with one decimal.
fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The progress display: renders each event and draws it, on indicatif's bars on a terminal, as
/// lines into a writer (stderr) elsewhere.
pub struct Progress {
    state: Mutex<State>,
}

struct State {
    renderer: Renderer,
    screen: Screen,
}

/// Where draws go: the bars while there are any, else lines into `out`.
struct Screen {
    bars: Option<Bars>,
    out: Box<dyn Write + Send>,
}

/// The bar of instances done and one spinner per running instance.
struct Bars {
    multi: MultiProgress,
    main: ProgressBar,
    running: HashMap<String, ProgressBar>,
    /// The ETA the bar of instances shows, fed by the instances that finish.
    eta: Arc<Mutex<Eta>>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f.debug_struct("Progress")
            .field("mode", &st.renderer.mode)
            .field("total", &st.renderer.total)
            .finish_non_exhaustive()
    }
}

/// The display renders the events it is sent.
impl swtbench_runner::events::EventSink for Progress {
    fn event(&self, event: &Event) {
        Progress::event(self, event);
    }
}

impl Progress {
    /// A display for `total` instances on stderr; `quiet` keeps only warnings, `is_terminal` (of
    /// stderr) picks bars over lines, `colors` allows colours on a terminal (see
    /// [`colors_allowed`]).
    pub fn new(quiet: bool, is_terminal: bool, colors: bool, total: usize) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if is_terminal {
            Mode::Bars
        } else {
            Mode::Lines
        };
        let color = colors && is_terminal;
        let bars = (mode == Mode::Bars).then(|| Bars::new(total, color));
        Progress::with_screen(
            Renderer::new(mode, color, total),
            bars,
            Box::new(std::io::stderr()),
        )
    }

    /// A display for `total` instances without bars or colours, as where stderr is not a
    /// terminal, writing its lines into `out`; `quiet` keeps only warnings.
    pub fn writing_to(quiet: bool, total: usize, out: Box<dyn Write + Send>) -> Progress {
        let mode = if quiet { Mode::Quiet } else { Mode::Lines };
        Progress::with_screen(Renderer::new(mode, false, total), None, out)
    }

    fn with_screen(renderer: Renderer, bars: Option<Bars>, out: Box<dyn Write + Send>) -> Progress {
        Progress {
            state: Mutex::new(State {
                renderer,
                screen: Screen { bars, out },
            }),
        }
    }

    /// Shows `event`.
    pub fn event(&self, event: &Event) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let State { renderer, screen } = &mut *st;
        for draw in renderer.render(event) {
            screen.draw(draw);
        }
    }

    /// Clears the bars (call before printing the final table). Later events show only their
    /// warnings.
    pub fn finish(&self) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(bars) = st.screen.bars.take() {
            bars.clear();
            st.renderer.mode = Mode::Quiet;
        }
    }
}

impl Screen {
    fn draw(&mut self, draw: Draw) {
        match (draw, &mut self.bars) {
            (Draw::Line(text) | Draw::Warning(text), Some(bars)) => {
                let _ = bars.multi.println(text);
            }
            (Draw::Line(text) | Draw::Warning(text), None) => {
                // One write per line, so that lines of other threads do not cut into it; a
                // display that cannot write does not stop the evaluation.
                let _ = self.out.write_all(format!("{text}\n").as_bytes());
            }
            (Draw::Status(text), Some(bars)) => bars.main.set_message(text),
            (Draw::InstanceStarted { instance_id }, Some(bars)) => bars.start(instance_id),
            (Draw::InstancePhase { instance_id, phase }, Some(bars)) => {
                if let Some(bar) = bars.running.get(&instance_id) {
                    bar.set_message(phase);
                }
            }
            (
                Draw::InstanceFinished {
                    instance_id,
                    done,
                    took_ms,
                },
                Some(bars),
            ) => bars.finish_instance(&instance_id, done, Duration::from_millis(took_ms)),
            (_, None) => {}
        }
    }
}

/// The style of the bar of instances. Its ETA is [`Eta::text`] (nothing until it means
/// something), not indicatif's `{eta}`: that one extrapolates the bar's rate, which stands at 0/N
/// while the first images build, and grew from seconds to weeks in a two-minute run.
fn main_style(color: bool, eta: Arc<Mutex<Eta>>) -> ProgressStyle {
    let template = if color {
        "{spinner:.green} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} instances{eta_text}  {msg}"
    } else {
        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} instances{eta_text}  {msg}"
    };
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "eta_text",
            move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let text = eta
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .text(state.elapsed());
                let _ = w.write_str(&text);
            },
        )
}

impl Bars {
    fn new(total: usize, color: bool) -> Bars {
        let bars = Bars::on(
            MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            total,
            color,
        );
        bars.main.enable_steady_tick(Duration::from_millis(200));
        bars
    }

    /// The bars of `total` instances drawn by `multi`, without the steady tick.
    fn on(multi: MultiProgress, total: usize, color: bool) -> Bars {
        let eta = Arc::new(Mutex::new(Eta::new(total)));
        let main = multi.add(ProgressBar::new(total as u64));
        main.set_style(main_style(color, eta.clone()));
        Bars {
            multi,
            main,
            running: HashMap::new(),
            eta,
        }
    }

    fn start(&mut self, instance_id: String) {
        let bar = self.multi.add(ProgressBar::new_spinner());
        let style = ProgressStyle::with_template("  {spinner} {prefix}: {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_prefix(instance_id.clone());
        bar.set_message("starting");
        bar.enable_steady_tick(Duration::from_millis(200));
        self.running.insert(instance_id, bar);
    }

    fn finish_instance(&mut self, instance_id: &str, done: usize, took: Duration) {
        if let Some(bar) = self.running.remove(instance_id) {
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
        // The lock is let go before the bar draws (its ETA key takes it).
        self.eta
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .finished(self.main.elapsed(), took);
        self.main.set_position(done as u64);
    }

    fn clear(mut self) {
        for (_, bar) in self.running.drain() {
            bar.finish_and_clear();
        }
        self.main.finish_and_clear();
        let _ = self.multi.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A terminal that keeps what is drawn on it.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl Screen {
        fn text(&self) -> String {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
        }
    }

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            250
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(&format!("{s}\n"))
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The last line of the bar of instances drawn once `change` is made (redrawn until it shows
    /// `until`: the draw target limits how often it draws).
    fn bar_line(bars: &Bars, screen: &Screen, until: &str) -> String {
        for _ in 0..200 {
            bars.main.tick();
            let text = screen.text();
            if let Some(line) = text.lines().rev().find(|l| l.contains(" instances")) {
                if line.contains(until) {
                    return line.to_string();
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no bar line with {until:?} in {:?}", screen.text());
    }

    #[test]
    fn while_images_build_the_bar_shows_the_build_and_no_eta() {
        let screen = Screen::default();
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::term_like(Box::new(
            screen.clone(),
        )));
        let mut bars = Bars::on(multi, 10, false);
        bars.main
            .set_message("building env image sweb.env.x86_64.abc123:latest");
        let line = bar_line(&bars, &screen, "building env image");
        assert!(
            line.contains("0/10 instances  building env image sweb.env.x86_64.abc123:latest"),
            "{line}"
        );
        assert!(!line.contains("ETA"), "{line}");
        // Two instances done: still no ETA.
        bars.finish_instance("a", 1, Duration::from_secs(90));
        bars.finish_instance("b", 2, Duration::from_secs(90));
        let line = bar_line(&bars, &screen, "2/10");
        assert!(!line.contains("ETA"), "{line}");
        // Enough instances and time (as the ETA's own tests feed it): the ETA is shown.
        {
            let mut eta = bars.eta.lock().unwrap_or_else(|p| p.into_inner());
            *eta = Eta::new(10);
            for t in [100, 101, 103] {
                eta.finished(Duration::from_secs(t), Duration::from_secs(90));
            }
        }
        bars.main.set_position(3);
        let line = bar_line(&bars, &screen, "3/10");
        assert!(line.contains("3/10 instances  ETA "), "{line}");
    }
}
