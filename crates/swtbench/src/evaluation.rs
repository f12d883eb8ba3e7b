//! The front end of [`swtbench_app::evaluate`], shared by `run` and `verify --reexecute`: the plan
//! shown (`--dry-run`) or followed with the progress display and the `--events` file, then what the
//! run says and its exit code; `--repeat`'s loop is `swtbench_app::repeat::repeat_rest`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use swtbench_app::evaluate::{
    self, Engine, EngineUse, Finished, Observer, Request, Signal, Stopping,
};
use swtbench_app::limits::HostFacts;
use swtbench_app::lines::Line;
use swtbench_app::repeat::{RepeatFront, Repeats, RepeatsEnd};
use swtbench_plan::{Plan, RunSettings};
use swtbench_runner::events::{EventSink, FanOut};

use swtbench_cli::args::RunArgs;
use swtbench_cli::settings::settings_from;

use crate::error::{CliError, CliResult, ExitCode};
use crate::inputs::{apply_env_provider, load_predictions, load_valid};
use crate::printer::Printer;

/// `swtbench run` with `args`.
pub fn run(args: &RunArgs, printer: &Printer) -> CliResult {
    evaluate::check_run_id(&args.run_id)?;
    // Flag combinations first (an error before reaching the engine); the limits are sized from
    // the engine's host once it is reached.
    settings_from(args, &HostFacts::default())?;
    if let Some(mode) = &args.build_mode {
        printer.info(&evaluate::build_mode_note(mode));
    }
    if let Err(w) = evaluate::raise_open_file_limit(args.open_file_limit) {
        printer.warn(&w.to_string());
    }
    // The engine first: an unreachable engine is one clear error before any work.
    let engine = Engine::connect(EngineUse::of(args.skip_eval || args.merge, args.dry_run))?;
    if let Some(w) = engine.warning() {
        printer.warn(w);
    }
    let settings = settings_from(args, &engine.host_facts())?;
    let table = args.table.load()?;
    let table = apply_env_provider(&args.env_provider, table, printer)?;
    let dataset = load_valid(&args.dataset, printer)?;
    let predictions = load_predictions(&args.predictions, &dataset, printer)?;
    let inputs = Inputs {
        table,
        dataset,
        predictions,
    };
    let repeats = (args.repeat > 1).then(|| inputs.clone());
    let model_dir = swtbench_core::layout::model_dir_name(&inputs.predictions.model);
    let request = request(args, settings, inputs, !args.no_html)?;
    let front = RunFront::new(
        *printer,
        args.events.clone(),
        args.registry.registry.is_some(),
    );
    let (code, instances) = match evaluate::evaluate(&engine, request, &signals(printer), &front)? {
        Finished::Planned(plan) => {
            if args.json {
                printer.data(&plan.to_json());
            } else {
                printer.info(plan.to_text().trim_end());
            }
            return Ok(ExitCode::Success);
        }
        Finished::Killed => {
            printer.info(evaluate::KILLED);
            return Ok(ExitCode::Interrupted);
        }
        Finished::Done(done) => {
            printer.lines(&done.lines(&args.run_id));
            if let Some(e) = done.aborted(&args.run_id) {
                return Err(e.into());
            }
            if let Some(nothing) = done.nothing_evaluated() {
                return Err(CliError::nothing_evaluated(nothing));
            }
            let code = match done.output.cancelled {
                Some(_) => ExitCode::Interrupted,
                None => ExitCode::partial_if(done.has_failures()),
            };
            (code, done.instances)
        }
    };
    match repeats {
        Some(inputs) if code != ExitCode::Interrupted => {
            repeat_rest(&engine, args, inputs, &model_dir, &instances, code, printer)
        }
        _ => Ok(code),
    }
}

/// What every repeat of an evaluation reads (and every job of the service).
#[derive(Clone)]
pub(crate) struct Inputs {
    pub table: swtbench_spec::SpecTable,
    pub dataset: swtbench_data::dataset::LoadedDataset,
    pub predictions: swtbench_data::predictions::LoadedPredictions,
}

/// The request of an evaluation with `run`'s arguments `args`.
pub(crate) fn request(
    args: &RunArgs,
    settings: RunSettings,
    inputs: Inputs,
    html: bool,
) -> swtbench_app::Result<Request> {
    Ok(Request {
        settings,
        dataset: inputs.dataset,
        predictions: inputs.predictions,
        table: inputs.table,
        files: args.mirror.files(args.dataset.is_offline())?,
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

/// How a command stops an evaluation: Ctrl-C escalates, each step said (the third exits).
fn signals(printer: &Printer) -> Stopping {
    let p = *printer;
    Stopping::Signals(Arc::new(move |s: Signal| {
        p.info(s.message());
        if s == Signal::Exit {
            std::process::exit(ExitCode::Interrupted.as_i32());
        }
    }))
}

/// What a command shows of an evaluation: the warnings before it, then the progress display and,
/// with `--events`, the events file (with a registry, pulled images are recorded for `images
/// list`).
struct RunFront {
    printer: Printer,
    events: Option<PathBuf>,
    registry: bool,
    progress: std::sync::Mutex<Option<Arc<swtbench_reporter::Progress>>>,
}

impl RunFront {
    fn new(printer: Printer, events: Option<PathBuf>, registry: bool) -> RunFront {
        RunFront {
            printer,
            events,
            registry,
            progress: std::sync::Mutex::new(None),
        }
    }
}

impl Observer for RunFront {
    fn warnings(&self, warnings: &[String]) {
        for w in warnings {
            self.printer.warn(w);
        }
    }

    fn sink(&self, plan: &Plan) -> swtbench_app::Result<Arc<dyn EventSink>> {
        let progress = Arc::new(self.printer.progress(plan.counts.instances));
        let mut sinks: Vec<Box<dyn EventSink>> = vec![Box::new(progress.clone())];
        let pulls = self
            .registry
            .then(swtbench_app::registry::pulls_path_from_env);
        sinks.extend(swtbench_app::registry::file_sinks(
            self.events.as_deref(),
            pulls,
        )?);
        *self.progress.lock().unwrap_or_else(|e| e.into_inner()) = Some(progress);
        Ok(Arc::new(FanOut(sinks)))
    }

    fn ended(&self) {
        // Warnings were shown as they happened (the progress display renders the events).
        let progress = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(p) = progress {
            p.finish();
        }
    }
}

/// Repeats 2..N of `run --repeat N`, then the stability over all of them. The exit code is the
/// first repeat's unless a later one could not finish.
fn repeat_rest(
    engine: &Engine,
    args: &RunArgs,
    inputs: Inputs,
    model_dir: &str,
    instances: &[String],
    first: ExitCode,
    printer: &Printer,
) -> CliResult {
    let options = swtbench_cli::settings::run_options(args)?;
    let make = |settings: RunSettings| request(args, settings, inputs.clone(), false);
    let repeats = Repeats {
        options: &options,
        repeats: args.repeat,
        model_dir,
        instances,
        events: args.events.is_some(),
    };
    let front = RepeatDisplay(*printer, args.registry.registry.is_some());
    match swtbench_app::repeat::repeat_rest(engine, &repeats, &make, &front)? {
        RepeatsEnd::Killed => {
            printer.info(evaluate::KILLED);
            Ok(ExitCode::Interrupted)
        }
        RepeatsEnd::Interrupted => Ok(ExitCode::Interrupted),
        RepeatsEnd::Done(written) => {
            printer.lines(&written.lines());
            Ok(first)
        }
    }
}

/// The lines and the progress display of each repeat after the first (`.1`: with a registry).
struct RepeatDisplay(Printer, bool);

impl RepeatFront for RepeatDisplay {
    fn say(&self, line: Line) {
        self.0.lines(&[line]);
    }

    fn observer(&self, events: Option<&Path>) -> Box<dyn Observer + '_> {
        Box::new(RunFront::new(self.0, events.map(Path::to_path_buf), self.1))
    }

    fn stopping(&self) -> Stopping {
        signals(&self.0)
    }
}
