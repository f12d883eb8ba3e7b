//! `swtbench images build|list|rm|check|push|pull`; the work is [`swtbench_app::images`].

use std::path::Path;
use std::sync::Arc;

use swtbench_app::images as app;
use swtbench_cli::commands::images::{
    BuildArgs, ImagesArgs, ImagesCommand, ListArgs, RmArgs, TransferArgs,
};
use swtbench_runner::events::{EventSink, FanOut};

use crate::error::{CliError, CliResult, ExitCode};
use crate::inputs::{apply_env_provider, load_valid};
use crate::printer::Printer;

pub fn run(args: ImagesArgs, printer: &Printer) -> CliResult {
    match args.command {
        ImagesCommand::Build(a) => build(*a, printer),
        ImagesCommand::List(a) => list(a, printer),
        ImagesCommand::Rm(a) => rm(a, printer),
        ImagesCommand::Check(a) => check(*a, printer),
        ImagesCommand::Push(a) => transfer(*a, true, printer),
        ImagesCommand::Pull(a) => transfer(*a, false, printer),
        ImagesCommand::Base(a) => make(swtbench_app::image_scripts::Recipe::Base, a.script_args()),
        ImagesCommand::Python(a) => {
            make(swtbench_app::image_scripts::Recipe::Python, a.script_args())
        }
    }
}

/// The progress display, the record of pulls and, with `--events`, the JSON Lines file.
fn sinks(events: Option<&Path>, printer: &Printer) -> swtbench_app::Result<Arc<dyn EventSink>> {
    let mut sinks: Vec<Box<dyn EventSink>> = vec![Box::new(printer.progress(0))];
    let pulls = Some(swtbench_app::registry::pulls_path_from_env());
    sinks.extend(swtbench_app::registry::file_sinks(events, pulls)?);
    Ok(Arc::new(FanOut(sinks)))
}

/// Prints what a command did; exit code 1 when some item failed.
fn print(outcome: app::Outcome, printer: &Printer) -> CliResult {
    printer.lines(&outcome.lines);
    printer.info(&outcome.summary);
    ExitCode::of_failures(&outcome.failures)
}

/// The selected instances' images up to `--level`.
fn selection(args: &TransferArgs, printer: &Printer) -> Result<Vec<app::SelectedImage>, CliError> {
    app::check_level(args.level, "selects no image")?;
    let table = apply_env_provider(&args.env_provider, args.table.load()?, printer)?;
    let files = args.mirror.files(args.dataset.is_offline())?;
    let dataset = load_valid(&args.dataset, printer)?;
    let (images, warnings) = app::selection(&dataset.instances, &table, &files, args.level);
    printer.lines(&warnings);
    Ok(images)
}

fn check(args: TransferArgs, printer: &Printer) -> CliResult {
    let reg = swtbench_app::registry::registry_settings(&args.registry, false, args.workers)?;
    let images = selection(&args, printer)?;
    let mut sink = || sinks(args.events.as_deref(), printer);
    let warn = |l| printer.lines(&[l]);
    let engine = app::Engine::connect()?;
    print(
        engine.check(&reg, images, args.json, &mut sink, &warn)?,
        printer,
    )
}

fn transfer(args: TransferArgs, push: bool, printer: &Printer) -> CliResult {
    let reg = swtbench_app::registry::registry_settings(&args.registry, push, args.workers)?;
    let images = selection(&args, printer)?;
    let sink = sinks(args.events.as_deref(), printer)?;
    let results = app::Engine::connect()?.transfer(&reg, images, push, args.workers, sink);
    print(app::transfer_outcome(&results, push), printer)
}

fn list(args: ListArgs, printer: &Printer) -> CliResult {
    let images = app::Engine::connect()?.list(args.kind)?;
    let pulls = swtbench_app::registry::read_pulls(&swtbench_app::registry::pulls_path_from_env());
    printer.lines(&app::list_lines(&images, &pulls, args.json));
    Ok(ExitCode::Success)
}

fn rm(args: RmArgs, printer: &Printer) -> CliResult {
    let removal = app::removal(args.all, args.run_id.as_deref(), &args.kind)?;
    let engine = app::Engine::connect()?;
    let say = &mut |l| printer.lines(&[l]);
    print(engine.rm(&removal, args.force, args.dry_run, say)?, printer)
}

fn build(args: BuildArgs, printer: &Printer) -> CliResult {
    app::check_level(args.level, "builds nothing")?;
    let engine = app::Engine::connect()?;
    let table = args.table.load()?;
    let table = apply_env_provider(&args.env_provider, table, printer)?;
    let files = args.mirror.files(args.dataset.is_offline())?;
    let dataset = load_valid(&args.dataset, printer)?;
    let options = args.options()?;
    let mut specs = app::render_specs(&dataset.instances, &table, &files);
    if let Some(shard) = args.shard {
        let line;
        (specs, line) = app::shard_specs(specs, shard);
        printer.lines(&[line]);
    }
    let sink = sinks(args.events.as_deref(), printer)?;
    print(
        app::build_outcome(&engine.build(specs, options, sink)),
        printer,
    )
}

/// `images base` and `images python`: the embedded recipe, its output straight to the terminal.
fn make(recipe: swtbench_app::image_scripts::Recipe, args: Vec<String>) -> CliResult {
    swtbench_app::image_scripts::make(recipe, &args)?;
    Ok(ExitCode::Success)
}
