//! `swtbench run`: evaluate predictions end to end. This resolves the arguments into the
//! settings of [`swtbench_app::evaluate`]'s pipeline, shows its plan (`--dry-run`) or follows it
//! with a progress display and an optional JSON Lines event file, then prints the leaderboard
//! table and the summary.
//!
//! Exit codes: 0 every instance was graded (whatever the scores; an empty patch is graded), 1 some
//! were not (the summary's errors and skips; with `--skip-eval`, an instance whose outputs are
//! missing is an error), 2 bad input, 3 the container engine is unreachable (checked before any
//! work) or the engine or disk failed during the run, 130 interrupted (Ctrl-C).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::anyhow;
use swtbench_app::evaluate::{self, Engine, EngineUse, Finished, Pipeline, Request, Signal};
use swtbench_app::limits::{HostFacts, LimitOptions};
use swtbench_app::settings::{
    parse_count, parse_cpus, parse_positive, parse_seconds, parse_size, RunOptions,
};
use swtbench_extract::PatchType;
use swtbench_grade::leaderboard::{self, Format};
use swtbench_plan::{CacheLevel, RunSettings};
use swtbench_reporter::Progress;
use swtbench_runner::events::{EventSink, FanOut, JsonlWriter};

use crate::args::{load_predictions, parse_bool, DatasetArgs, EvalArgs, ExtractStyleArgs};
use crate::env_vars;
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Predictions to evaluate: `gold` (the gold tests of every instance), a .json or a .jsonl file
    /// of {instance_id, model_name_or_path, model_patch} records.
    #[arg(long, alias = "predictions_path", value_name = "gold|FILE")]
    pub predictions: String,

    /// Names the run: outputs go to run_instance_swt_logs/<run_id>/… and
    /// evaluation_results/<model>.<run_id>.json. Rerunning the same id resumes.
    #[arg(long, alias = "run_id", value_name = "RUN_ID")]
    pub run_id: String,

    /// Test containers running at the same time. The runs of every instance share them, the
    /// longest expected first; no more run at once than the host's memory holds at the
    /// containers' memory limit.
    #[arg(long, alias = "max_workers", value_name = "N", default_value_t = 4, allow_negative_numbers = true,
          value_parser = parse_positive::<usize>)]
    pub max_workers: usize,

    /// Image builds at the same time.
    #[arg(long, alias = "build_workers", value_name = "N", default_value_t = 2, allow_negative_numbers = true,
          value_parser = parse_positive::<usize>)]
    pub build_workers: usize,

    /// Seconds each eval script may run (six per instance); on timeout the output so far is
    /// kept and graded.
    #[arg(long, value_name = "SECONDS", default_value_t = 1800, allow_negative_numbers = true,
          value_parser = parse_seconds)]
    pub timeout: u64,

    #[command(flatten)]
    pub eval: EvalArgs,

    /// How raw model output becomes a diff, tried in order: vanilla (the default: the prediction
    /// is a diff), fuzzy, custom.
    #[arg(long, alias = "patch_types", value_name = "TYPE", num_args = 1.., default_value = "vanilla")]
    pub patch_types: Vec<PatchType>,

    #[command(flatten)]
    pub styles: ExtractStyleArgs,

    /// Image layers kept after the run: none, base, env (default) or instance.
    #[arg(
        long,
        alias = "cache_level",
        value_name = "LEVEL",
        default_value = "env"
    )]
    pub cache_level: CacheLevel,

    /// Also remove images above the cache level that existed before the run.
    #[arg(long, value_name = "BOOL", value_parser = parse_bool, num_args = 0..=1,
          default_value = "false", default_missing_value = "true")]
    pub clean: bool,

    /// Rebuild every image the run needs (once per run, without the layer cache).
    #[arg(long, alias = "force_rebuild", value_name = "BOOL", value_parser = parse_bool,
          num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    pub force_rebuild: bool,

    /// Run nothing; grade the outputs already on disk and write the reports. An instance whose
    /// outputs are not all there is an error (exit code 1).
    #[arg(long, alias = "skip_eval", value_name = "BOOL", value_parser = parse_bool,
          num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    pub skip_eval: bool,

    /// Evaluate the K-th of N parts of the selected instances (like 2/8): parts of about equal
    /// expected work, the same on every machine (the first shard to start records the split in
    /// the output directory; the others follow it). Shards share the output directory and run
    /// side by side; each writes `<model>.<run id>.shard-K-of-N.json`. An env image's instances
    /// stay in one part when it has to be built. Once all are done, --merge writes the reports
    /// over the whole run.
    #[arg(long, value_name = "K/N", value_parser = swtbench_plan::settings::Shard::parse)]
    pub shard: Option<swtbench_plan::settings::Shard>,

    /// Once every shard of the run finished: write the run report, the HTML page and the table
    /// over all of them from their outputs, running nothing (the same flags as the shards,
    /// without --shard). The reports are the ones a single process evaluating everything writes;
    /// shards or instances that are missing are named and nothing is written.
    #[arg(long, conflicts_with_all = ["shard", "skip_eval"])]
    pub merge: bool,

    /// Evaluate everything N times, each in fresh containers (nothing reused between repeats):
    /// the scores are the first repeat's; tests whose transition changes between repeats are
    /// flaky, listed per instance with how often each instance was resolved, in
    /// `<model>.<run id>.stability.json`, and as a flaky list (`--flaky-list` input) in
    /// `<model>.<run id>.flaky.json`. Repeats 2..N go to `<output dir>/repeats/<run id>/<k>/`.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true,
          value_parser = parse_positive::<usize>, conflicts_with_all = ["shard", "merge"])]
    pub repeat: usize,

    /// Grade strictly where the logs look forged (docs/integrity.md): a test an integrity check
    /// names (a result printed after the runner's summary, for a test the run did not select, …)
    /// counts as failed, and a suspicious instance as unresolved. report.json and the run report
    /// then differ from the original's; without it the grade is the original's, and the checks
    /// only report (`integrity` in swtbench_instance.json, `suspicious_ids` in the run report).
    #[arg(long)]
    pub strict_results: bool,

    /// Leave the tests of this flaky list (`{"<instance>": ["<test>", …]}`: what a gold run with
    /// --repeat writes in `<model>.<run id>.flaky.json`) out of the transitions. report.json and
    /// the run report then differ from the original's (the run report says so).
    #[arg(long, value_name = "FILE")]
    pub flaky_list: Option<PathBuf>,

    /// Raise the soft limit of open files to this (never the hard limit).
    #[arg(long, alias = "open_file_limit", value_name = "N", default_value_t = 4096,
          allow_negative_numbers = true, value_parser = parse_count::<u64>)]
    pub open_file_limit: u64,

    /// Accepted for compatibility and ignored: images are always built through the engine's API.
    #[arg(long, alias = "build_mode", value_name = "cli|api")]
    pub build_mode: Option<String>,

    /// Base directory of run_instance_swt_logs/, image_build_logs/ and evaluation_results/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub output_dir: PathBuf,

    /// Memory limit of each test container, swap included (e.g. 4g, 512m). Default: 3/4 of the
    /// engine host's memory over --max-workers, 2g to 16g.
    #[arg(long, value_name = "SIZE", value_parser = swtbench_app::settings::parse_memory)]
    pub memory: Option<u64>,

    /// Process limit of each test container. Default: 256 per host CPU, 1024 to 16384.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = parse_count::<u32>)]
    pub pids_limit: Option<u32>,

    /// What each test container may write in all (e.g. 2g). Default: a quarter of the size of
    /// the engine's disk over --max-workers, 1g to 10g.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub disk_limit: Option<u64>,

    /// Largest file a test may write (e.g. 512m). Default: 1g.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub file_limit: Option<u64>,

    /// No resource limits but those given explicitly (the original's containers).
    #[arg(long)]
    pub no_limits: bool,

    /// CPUs of each test container (e.g. 1.5).
    #[arg(long, value_name = "CPUS", allow_negative_numbers = true, value_parser = parse_cpus)]
    pub cpus: Option<f64>,

    /// Keep at most this much of a run's output, head and tail (e.g. 64m; 0 keeps everything).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_output: Option<u64>,

    /// Test containers get the engine's default network, as the original's always had: this is
    /// the default; given, it wins over --no-network and SWTBENCH_NO_NETWORK.
    #[arg(long, alias = "allow_network")]
    pub allow_network: bool,

    /// Isolate test containers: an internal network that drops every packet, so a connection
    /// times out instead of failing at once (no traffic leaves the machine or reaches another
    /// container). The run report and the HTML page say so; tests that need the internet fail.
    /// Also SWTBENCH_NO_NETWORK=1 (the test suite sets it, so that no fixture test reaches the
    /// internet).
    #[arg(
        long,
        alias = "no_network",
        env = env_vars::SWTBENCH_NO_NETWORK,
        value_parser = clap::builder::FalseyValueParser::new()
    )]
    pub no_network: bool,

    /// Do not collect the test runner's own results and the tracer's coverage beside each log
    /// (the evidence the integrity checks compare the log with; docs/integrity.md).
    #[arg(long)]
    pub no_evidence: bool,

    /// Directory of bare git mirrors <owner>__<name>.git: images clone from there and
    /// requirement files are read from there instead of GitHub.
    #[arg(long, alias = "repo_mirror", value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: Option<PathBuf>,

    /// Extra spec table entries (TOML, or JSON for *.json), applied over the embedded table.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,

    #[command(flatten)]
    pub env_provider: crate::args::EnvProviderArgs,

    /// CA bundle passed into image builds (default: $SSL_CERT_FILE when it names a file).
    #[arg(long, value_name = "FILE")]
    pub ca_bundle: Option<PathBuf>,

    /// Write events as JSON Lines to this file (format: docs/events.md).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,

    /// Print the plan (what would be built, run, reused, skipped) and exit.
    #[arg(long)]
    pub dry_run: bool,

    /// With --dry-run: print the plan as JSON on stdout.
    #[arg(long, requires = "dry_run")]
    pub json: bool,

    /// Run the spec's install command again in every eval script, as the original does (by
    /// default the install done in the instance image is used; see docs/deviations.md).
    #[arg(long)]
    pub eval_install: bool,

    /// Reuse run outputs that have no content key (written by the original harness) instead of
    /// running them again.
    #[arg(long)]
    pub reuse_unkeyed_outputs: bool,

    /// Abandon an image build after this many seconds (default: no limit).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub build_timeout: Option<u64>,

    /// Build env and instance images with the engine's Dockerfile builder, a layer per
    /// instruction, as the original does. By default each is one container of its parent image,
    /// committed once: the same files and settings, in less time and less disk (a repository
    /// mirror copied in stays in no layer).
    #[arg(long)]
    pub step_builds: bool,

    /// Skip the HTML report.
    #[arg(long)]
    pub no_html: bool,

    /// The gold run (a run id of the gold predictions under the same output directory) whose
    /// coverage the Δ coverage rows of the table and HTML page are relative to. Default: the
    /// benchmark's published gold run when it is there, else the gold run with reports for the
    /// most of this run's instances (named on stderr).
    #[arg(long, alias = "gold_run_id", value_name = "RUN_ID")]
    pub gold_run_id: Option<String>,

    #[command(flatten)]
    pub registry: crate::args::RegistryArgs,

    /// Run on prebuilt instance images in SWE-bench's layout instead of building: a name with
    /// {id} (the instance id) or {id_1776} (with __ spelled _1776_, as SWE-bench's Docker Hub
    /// images are named), lower-cased; or `dataset` for the image each dataset row names
    /// (image_name, docker_image or instance_image). Missing images are pulled (credentials
    /// from ~/.docker/config.json); each image's layout is checked before its first run. See
    /// docs/registry.md.
    #[arg(long, value_name = "TEMPLATE|dataset")]
    pub instance_image: Option<String>,
}

pub(crate) fn settings_from(args: &RunArgs, host: &HostFacts) -> Result<RunSettings, CliError> {
    let options = RunOptions {
        run_id: args.run_id.clone(),
        output_dir: args.output_dir.clone(),
        eval: args.eval.options(!args.eval_install)?,
        max_workers: args.max_workers,
        build_workers: args.build_workers,
        timeout: args.timeout,
        max_output: args.max_output,
        limits: LimitOptions {
            no_limits: args.no_limits,
            memory: args.memory,
            pids: args.pids_limit,
            cpus: args.cpus,
            disk: args.disk_limit,
            file: args.file_limit,
        },
        // An explicit --allow-network wins over --no-network and SWTBENCH_NO_NETWORK.
        allow_network: args.allow_network || !args.no_network,
        evidence: !args.no_evidence,
        cache_level: args.cache_level,
        clean: args.clean,
        force_rebuild: args.force_rebuild,
        repo_mirror: args.repo_mirror.clone(),
        build_timeout: args.build_timeout,
        step_builds: args.step_builds,
        registry: args.registry.settings()?,
        prebuilt: match &args.instance_image {
            Some(t) => Some(swtbench_app::registry::prebuilt_settings(t)?),
            None => None,
        },
        patch_types: args.patch_types.clone(),
        extract: args.styles.options(),
        reuse_unkeyed: args.reuse_unkeyed_outputs,
        skip_eval: args.skip_eval || args.merge,
        shard: args.shard,
        strict_results: args.strict_results,
        flaky: match &args.flaky_list {
            Some(p) => swtbench_app::settings::read_flaky_list(p)?,
            None => Default::default(),
        },
    };
    Ok(options.resolve(host)?)
}

pub fn run(args: RunArgs, printer: &Printer) -> CliResult {
    evaluate::check_run_id(&args.run_id)?;
    // Flag combinations first (an error before reaching the engine); the limits are sized from
    // the engine's host once it is reached.
    settings_from(&args, &HostFacts::default())?;
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
    let settings = settings_from(&args, &engine.host_facts())?;
    let table = crate::settings::load_spec_table(args.spec_table.as_deref())?;
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
    let request = request(&args, settings, inputs, !args.no_html)?;
    let pipeline = Pipeline::prepare(engine, request)?;
    for note in pipeline.base_notes() {
        printer.warn(note);
    }
    let env_warnings = pipeline.env_warnings();
    for w in env_warnings.iter().take(5) {
        printer.warn(w);
    }
    if env_warnings.len() > 5 {
        printer.warn(&format!(
            "… and {} more instance(s) without frozen pins (swtbench envs show ID)",
            env_warnings.len() - 5
        ));
    }
    // Instances the gold validation found broken: all of them in a dry run, else the first ten.
    let broken = pipeline.validation_warnings();
    let shown = if args.dry_run { broken.len() } else { 10 };
    for w in broken.iter().take(shown) {
        printer.warn(w);
    }
    if broken.len() > shown {
        printer.warn(&format!(
            "… and {} more instance(s) the gold validation found broken (a --dry-run lists them all; docs/gold-validation.md)",
            broken.len() - shown
        ));
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
    let progress = Arc::new(Progress::new(
        printer.is_quiet(),
        std::io::stderr().is_terminal(),
        planned,
    ));
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
            repeat_rest(&args, inputs, &model_dir, &instances, code, printer)
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
) -> Result<Request, CliError> {
    let files =
        crate::settings::repo_files(args.repo_mirror.as_deref(), args.dataset.is_offline())?;
    Ok(Request {
        settings,
        dataset: inputs.dataset,
        predictions: inputs.predictions,
        table: inputs.table,
        files,
        ca_bundle: args.ca_bundle.clone(),
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
) -> Result<Vec<Box<dyn EventSink>>, CliError> {
    let mut sinks: Vec<Box<dyn EventSink>> = vec![Box::new(ProgressRef(progress))];
    if registry {
        // Pulled images are recorded for `images list`.
        sinks.push(Box::new(swtbench_app::registry::PullRecorder {
            path: crate::settings::pulls_path(),
        }));
    }
    if let Some(path) = events {
        let w = JsonlWriter::create(path).map_err(|e| {
            CliError::input(anyhow!(
                "cannot create the events file {}: {e}",
                path.display()
            ))
        })?;
        sinks.push(Box::new(w));
    }
    Ok(sinks)
}

/// Repeats 2..N of `run --repeat N` (the first is done), then the stability over all of them.
/// The exit code is the first repeat's unless a later one could not finish.
fn repeat_rest(
    args: &RunArgs,
    inputs: Inputs,
    model_dir: &str,
    instances: &[String],
    first: ExitCode,
    printer: &Printer,
) -> CliResult {
    let n = args.repeat;
    for k in 2..=n {
        let dir = swtbench_app::repeat::output_dir(&args.output_dir, &args.run_id, k);
        printer.info(&format!("repeat {k} of {n}, in {}", dir.display()));
        let engine = Engine::connect(match args.skip_eval {
            true => EngineUse::Never,
            false => EngineUse::Required,
        })?;
        let mut settings = settings_from(args, &engine.host_facts())?;
        settings.outputs = swtbench_plan::settings::OutputRoots::under(&dir);
        let pipeline = Pipeline::prepare(engine, request(args, settings, inputs.clone(), false)?)?;
        let pipeline = pipeline.lock()?;
        let progress = Arc::new(Progress::new(
            printer.is_quiet(),
            std::io::stderr().is_terminal(),
            pipeline.plan().counts.instances,
        ));
        let events = args.events.as_ref().map(|_| dir.join("events.jsonl"));
        let sinks = sinks(
            progress.clone(),
            events.as_deref(),
            args.registry.registry.is_some(),
        )?;
        let finished = pipeline.execute(Arc::new(FanOut(sinks)), signal_handler(printer));
        progress.finish();
        match finished? {
            Finished::Killed => {
                printer.info("killed: containers removed, no reports written");
                return Ok(ExitCode::Interrupted);
            }
            Finished::Done(done) => {
                if let Some(reason) = &done.output.aborted {
                    return Err(CliError::environment(anyhow!(
                        "repeat {k} stopped early: {reason}"
                    ))
                    .with_hint(
                        "fix that and run the same command again: finished runs are reused",
                    ));
                }
                if done.output.cancelled.is_some() {
                    return Ok(ExitCode::Interrupted);
                }
                let s = &done.output.stats;
                printer.info(&format!(
                    "repeat {k}: {} resolved, {} unresolved, {} error(s); runs: {} executed, {} reused",
                    s.resolved, s.unresolved, s.errors, s.runs_executed, s.runs_reused
                ));
            }
        }
    }
    let written =
        swtbench_app::repeat::analyse(&args.output_dir, &args.run_id, model_dir, n, instances)?;
    printer.info(&format!("stability: {}", written.stability.summary()));
    printer.info(&format!(
        "stability report: {}; flaky tests: {}",
        written.stability_path.display(),
        written.flaky_path.display()
    ));
    Ok(first)
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
    let s = &output.stats;
    let suspicious: Vec<&str> = output
        .results
        .iter()
        .filter(|r| r.integrity.as_ref().is_some_and(|i| i.is_suspicious()))
        .map(|r| r.instance_id.as_str())
        .collect();
    printer.info(&format!(
        "{} instance(s): {} resolved, {} unresolved, {} not applied, {} empty patch, {} error(s), {} skipped, {} interrupted, {} suspicious; runs: {} executed ({} timed out, {} at a resource limit), {} reused, {} copied, {} failed; images: {} built, {} removed; denominator {}",
        s.instances, s.resolved, s.unresolved, s.not_applied, s.empty_patch, s.errors, s.skipped, s.interrupted,
        suspicious.len(),
        s.runs_executed, s.runs_timed_out, s.runs_limited, s.runs_reused, s.runs_copied, s.runs_failed,
        s.images_built, s.images_removed, done.metrics.denominator
    ));
    if !suspicious.is_empty() {
        printer.warn(&format!(
            "{} suspicious: their logs hold results the test runner did not print ({}{}); see \
             `integrity` in their swtbench_instance.json and docs/integrity.md",
            suspicious.len(),
            suspicious
                .iter()
                .take(5)
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
            if suspicious.len() > 5 { ", …" } else { "" }
        ));
    }
    if let Some(p) = &output.run_report_path {
        printer.info(&format!("run report: {}", p.display()));
    }
    if let Some(reason) = &output.aborted {
        let not_run = output.stats.interrupted;
        return Err(CliError::environment(anyhow!(
            "the run stopped early: {reason}; {not_run} instance(s) were not evaluated"
        ))
        .with_hint(format!(
            "fix that and run the same command again: finished runs are reused \
             (`swtbench clean --run-id {run_id}` removes containers left behind)"
        )));
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
