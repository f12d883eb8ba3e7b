//! The front end of [`swtbench_app::evaluate`], shared by `run` and `verify --reexecute`: the plan
//! shown (`--dry-run`) or followed with the progress display and the `--events` file, then what the
//! run says and its exit code; `--repeat`'s loop is `swtbench_app::repeat::repeat_rest`.

use std::path::Path;
use std::sync::Arc;

use swtbench_app::evaluate::{
    self, Engine, EngineUse, Finished, Locked, Pipeline, Request, Signal,
};
use swtbench_app::limits::HostFacts;
use swtbench_app::lines::Line;
use swtbench_app::repeat::{RepeatFront, Repeats, RepeatsEnd};
use swtbench_plan::RunSettings;
use swtbench_runner::events::{EventSink, FanOut};

use swtbench_cli::args::RunArgs;
use swtbench_cli::settings::settings_from;

use crate::error::{CliResult, ExitCode};
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
    let pipeline = pipeline.lock()?;
    let registry = args.registry.registry.is_some();
    let finished = execute(&pipeline, args.events.as_deref(), registry, printer);
    let code = match finished? {
        Finished::Killed => {
            printer.info(evaluate::KILLED);
            return Ok(ExitCode::Interrupted);
        }
        Finished::Done(done) => {
            printer.lines(&done.lines(&args.run_id));
            if let Some(e) = done.aborted(&args.run_id) {
                return Err(e.into());
            }
            match done.output.cancelled {
                Some(_) => ExitCode::Interrupted,
                None => ExitCode::partial_if(done.has_failures()),
            }
        }
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

/// Follows the plan with the progress display and, with `--events`, the events file (with a
/// registry, pulled images are recorded for `images list`).
fn execute(
    pipeline: &Locked,
    events: Option<&Path>,
    registry: bool,
    printer: &Printer,
) -> swtbench_app::Result<Finished> {
    let progress = Arc::new(printer.progress(pipeline.plan().counts.instances));
    let mut sinks: Vec<Box<dyn EventSink>> = vec![Box::new(progress.clone())];
    let pulls = registry.then(swtbench_app::registry::pulls_path_from_env);
    sinks.extend(swtbench_app::registry::file_sinks(events, pulls)?);
    let p = *printer;
    let on_signal = Arc::new(move |s: Signal| {
        p.info(s.message());
        if s == Signal::Exit {
            std::process::exit(ExitCode::Interrupted.as_i32());
        }
    });
    let finished = pipeline.execute(Arc::new(FanOut(sinks)), on_signal);
    // Warnings were shown as they happened (the progress display renders the events).
    progress.finish();
    finished
}

/// Repeats 2..N of `run --repeat N`, then the stability over all of them. The exit code is the
/// first repeat's unless a later one could not finish.
fn repeat_rest(
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
        engine: EngineUse::of(args.skip_eval, false),
        repeats: args.repeat,
        model_dir,
        instances,
        events: args.events.is_some(),
    };
    let front = RepeatDisplay(*printer, args.registry.registry.is_some());
    match swtbench_app::repeat::repeat_rest(&repeats, &make, &front)? {
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

    fn execute(&self, pipeline: &Locked, events: Option<&Path>) -> swtbench_app::Result<Finished> {
        execute(pipeline, events, self.1, &self.0)
    }
}
