//! The front end of the evaluation pipeline ([`swtbench_app::evaluate`]), shared by `swtbench run`
//! and `swtbench verify --reexecute` (which evaluates a sample again in-process): the flags
//! resolved into the pipeline's settings, the plan shown (`--dry-run`) or followed with a progress
//! display and an optional JSON Lines event file, then the leaderboard table and the summary.
//! `--repeat`'s loop is `swtbench_app::repeat::repeat_rest`; this shows it.

use std::path::Path;
use std::sync::Arc;

use swtbench_app::evaluate::{
    self, Engine, EngineUse, Finished, Locked, Pipeline, Request, Signal,
};
use swtbench_app::limits::HostFacts;
use swtbench_app::repeat::{RepeatFront, Repeats, RepeatsEnd};
use swtbench_grade::leaderboard::{self, Format};
use swtbench_plan::RunSettings;
use swtbench_reporter::Progress;
use swtbench_runner::events::{EvaluationStats, EventSink, FanOut};

use crate::args::{load_predictions, RunArgs};
use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;
use crate::settings::settings_from;

/// `swtbench run` with `args`: the flags checked, the engine reached, the inputs loaded, the plan
/// shown (`--dry-run`) or followed with the progress display, the table and summary printed.
pub fn run(args: &RunArgs, printer: &Printer) -> CliResult {
    evaluate::check_run_id(&args.run_id)?;
    // Flag combinations first (an error before reaching the engine); the limits are sized from
    // the engine's host once it is reached.
    settings_from(args, &HostFacts::default())?;
    if let Some(mode) = &args.build_mode {
        printer.info(&format!(
            "note: --build-mode {mode} is accepted for compatibility and ignored (images are built through the engine's API)"
        ));
    }
    if let Err(w) = evaluate::raise_open_file_limit(args.open_file_limit) {
        printer.warn(&w.to_string());
    }
    // The engine first: an unreachable engine is one clear error before any work.
    let engine = Engine::connect(match (args.skip_eval || args.merge, args.dry_run) {
        (true, _) => EngineUse::Never,
        (false, true) => EngineUse::IfReachable,
        (false, false) => EngineUse::Required,
    })?;
    if let Some(w) = engine.warning() {
        printer.warn(w);
    }
    let settings = settings_from(args, &engine.host_facts())?;
    let table = args.table.load()?;
    let table = args.env_provider.apply(table, printer)?;
    let dataset = args.dataset.load_valid(printer)?;
    let predictions = load_predictions(&args.predictions, &dataset, printer)?;
    let inputs = Inputs {
        table,
        dataset,
        predictions,
    };
    let repeats = (args.repeat > 1).then(|| inputs.clone());
    let model_dir = swtbench_core::layout::model_dir_name(&inputs.predictions.model);
    let request = request(args, settings, inputs, !args.no_html)?;
    let pipeline = Pipeline::prepare(engine, request)?;
    for w in pipeline.warnings(args.dry_run) {
        printer.warn(&w);
    }
    if args.dry_run {
        if args.json {
            printer.data(&pipeline.plan().to_json());
        } else {
            printer.info(pipeline.plan().to_text().trim_end());
        }
        return Ok(ExitCode::Success);
    }
    let planned = pipeline.plan().counts.instances;
    let pipeline = pipeline.lock()?;
    let progress = Arc::new(printer.progress(planned));
    let sinks = sinks(
        progress.clone(),
        args.events.as_deref(),
        args.registry.registry.is_some(),
    )?;
    let on_signal = signal_handler(printer);
    let finished = pipeline.execute(Arc::new(FanOut(sinks)), on_signal);
    // Warnings were shown as they happened (the progress display renders the events).
    progress.finish();
    let code = match finished? {
        Finished::Killed => {
            printer.info("killed: containers removed, no reports written");
            return Ok(ExitCode::Interrupted);
        }
        Finished::Done(done) => summarize(&done, &args.run_id, printer)?,
    };
    match repeats {
        Some(inputs) if code != ExitCode::Interrupted => {
            let instances = pipeline.instance_ids();
            drop(pipeline);
            repeat_rest(args, inputs, &model_dir, &instances, code, printer)
        }
        _ => Ok(code),
    }
}

/// What every repeat of an evaluation reads.
#[derive(Clone)]
struct Inputs {
    table: swtbench_spec::SpecTable,
    dataset: swtbench_data::dataset::LoadedDataset,
    predictions: swtbench_data::predictions::LoadedPredictions,
}

fn request(
    args: &RunArgs,
    settings: RunSettings,
    inputs: Inputs,
    html: bool,
) -> swtbench_app::Result<Request> {
    let files =
        crate::settings::repo_files_of(args.repo_mirror.as_deref(), args.dataset.is_offline())?;
    Ok(Request {
        settings,
        dataset: inputs.dataset,
        predictions: inputs.predictions,
        table: inputs.table,
        files,
        ca_bundle: args.ca_bundle.clone(),
        ca_in_tests: args.ca_in_tests,
        selection: !args.dataset.instance_ids.is_empty(),
        filter_swt: args.dataset.filter_swt,
        html,
        gold_run_id: args.gold_run_id.clone(),
        dry_run: args.dry_run,
        merge: args.merge,
    })
}

/// The progress display and, with `--events`, the events file.
fn sinks(
    progress: Arc<Progress>,
    events: Option<&std::path::Path>,
    registry: bool,
) -> swtbench_app::Result<Vec<Box<dyn EventSink>>> {
    let mut sinks: Vec<Box<dyn EventSink>> = vec![Box::new(ProgressRef(progress))];
    // With a registry, pulled images are recorded for `images list`.
    let pulls = registry.then(crate::settings::pulls_path);
    sinks.extend(swtbench_app::registry::file_sinks(events, pulls)?);
    Ok(sinks)
}

/// Repeats 2..N of `run --repeat N` (the loop is `swtbench_app::repeat::repeat_rest`), then the
/// stability over all of them. The exit code is the first repeat's unless a later one could not
/// finish.
fn repeat_rest(
    args: &RunArgs,
    inputs: Inputs,
    model_dir: &str,
    instances: &[String],
    first: ExitCode,
    printer: &Printer,
) -> CliResult {
    let options = crate::settings::run_options(args)?;
    let make = |settings: RunSettings| request(args, settings, inputs.clone(), false);
    let repeats = Repeats {
        options: &options,
        engine: match args.skip_eval {
            true => EngineUse::Never,
            false => EngineUse::Required,
        },
        repeats: args.repeat,
        model_dir,
        instances,
        events: args.events.is_some(),
    };
    let front = RepeatDisplay {
        printer: *printer,
        registry: args.registry.registry.is_some(),
    };
    match swtbench_app::repeat::repeat_rest(&repeats, &make, &front)? {
        RepeatsEnd::Killed => {
            printer.info("killed: containers removed, no reports written");
            Ok(ExitCode::Interrupted)
        }
        RepeatsEnd::Interrupted => Ok(ExitCode::Interrupted),
        RepeatsEnd::Done(written) => {
            printer.info(&format!("stability: {}", written.stability.summary()));
            printer.info(&format!(
                "stability report: {}; flaky tests: {}",
                written.stability_path.display(),
                written.flaky_path.display()
            ));
            Ok(first)
        }
    }
}

/// The progress display and the summary line of each repeat after the first.
struct RepeatDisplay {
    printer: Printer,
    registry: bool,
}

impl RepeatFront for RepeatDisplay {
    fn starting(&self, k: usize, n: usize, dir: &Path) {
        self.printer
            .info(&format!("repeat {k} of {n}, in {}", dir.display()));
    }

    fn execute(&self, pipeline: &Locked, events: Option<&Path>) -> swtbench_app::Result<Finished> {
        let progress = Arc::new(self.printer.progress(pipeline.plan().counts.instances));
        let sinks = sinks(progress.clone(), events, self.registry)?;
        let finished = pipeline.execute(Arc::new(FanOut(sinks)), signal_handler(&self.printer));
        progress.finish();
        finished
    }

    fn finished(&self, k: usize, s: &EvaluationStats) {
        self.printer.info(&format!(
            "repeat {k}: {} resolved, {} unresolved, {} error(s); runs: {} executed, {} reused",
            s.resolved, s.unresolved, s.errors, s.runs_executed, s.runs_reused
        ));
    }
}

fn signal_handler(printer: &Printer) -> Arc<dyn Fn(Signal) + Send + Sync> {
    let p = *printer;
    Arc::new(move |s: Signal| {
        match s {
        Signal::Interrupt => p.info(
            "interrupted: stopping containers and writing partial reports (Ctrl-C again to skip the reports)",
        ),
        Signal::Kill => p.info("killing: removing containers now (Ctrl-C again to exit at once)"),
        Signal::Exit => {
            p.info("exiting; `swtbench clean --run-id <id>` removes what is left");
            std::process::exit(ExitCode::Interrupted.as_i32());
        }
    }
    })
}

/// The HTML page's path, the leaderboard table on stdout, the summary line, and the exit code.
fn summarize(done: &evaluate::Evaluated, run_id: &str, printer: &Printer) -> CliResult {
    printer.notices(&done.notices);
    match &done.html {
        Some(Ok(html)) => printer.info(&format!("HTML report: {}", html.display())),
        Some(Err(e)) => printer.warn(&format!("the HTML report was not written: {e}")),
        None => {}
    }
    printer.data(&leaderboard::render(
        &done.metrics,
        run_id,
        Format::Github,
        None,
    ));
    let output = &done.output;
    printer.info(&done.summary());
    if let Some(w) = done.suspicious_warning() {
        printer.warn(&w);
    }
    if let Some(p) = &output.run_report_path {
        printer.info(&format!("run report: {}", p.display()));
    }
    if let Some(e) = done.aborted(run_id) {
        return Err(e.into());
    }
    if output.cancelled.is_some() {
        return Ok(ExitCode::Interrupted);
    }
    // Exactly the summary's errors and skips (interrupted instances returned 130 above).
    Ok(if done.has_failures() {
        ExitCode::Partial
    } else {
        ExitCode::Success
    })
}

/// An `Arc<Progress>` as an event sink.
struct ProgressRef(Arc<Progress>);

impl EventSink for ProgressRef {
    fn event(&self, event: &swtbench_runner::Event) {
        self.0.event(event);
    }
}
