//! `swtbench run`: evaluate predictions end to end. Loads the dataset and predictions, renders
//! every instance's environment, makes a plan (what to build, run, reuse, skip), and — unless
//! `--dry-run` — follows it on the container engine: images, the six runs per instance, grading,
//! `report.json` per instance, the run report, the HTML report and the table on stdout.
//!
//! Exit codes: 0 every instance was graded (whatever the scores; an empty patch is graded), 1 some
//! were not (the summary's errors and skips; with `--skip-eval`, an instance whose outputs are
//! missing is an error), 2 bad input, 3 the container engine is unreachable (checked before any
//! work) or the engine or disk failed during the run, 130 interrupted (Ctrl-C).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use swtbench_backend::{
    BuildNetwork, ContainerBackend, DockerBackend, DockerOptions, ResourceLimits,
};
use swtbench_core::layout::model_dir_name;
use swtbench_core::{Instance, RunKind};
use swtbench_data::predictions::{load_predictions, PredictionsSource};
use swtbench_extract::PatchType;
use swtbench_grade::leaderboard::{self, Format};
use swtbench_runner::events::{EventSink, FanOut, JsonlWriter};
use swtbench_runner::images::image_inventory;
use swtbench_runner::plan::{DiskOutputs, ImageInventory, PlanInput};
use swtbench_runner::session::{RunLock, RunLockError};
use swtbench_runner::settings::{ExecSettings, ImageSettings, OutputRoots, DEFAULT_MAX_OUTPUT};
use swtbench_runner::{CacheLevel, Cancel, Evaluation, RunSettings};
use swtbench_spec::{Arch, ExecSpec};

use super::common::{parse_bool, DatasetArgs, ExtractStyleArgs};
use super::spec::{load_spec_table, repo_files, EvalArgs};
use crate::env_vars;
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;
use crate::progress::Progress;

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

    /// Instances evaluated at the same time.
    #[arg(long, alias = "max_workers", value_name = "N", default_value_t = 4)]
    pub max_workers: usize,

    /// Image builds at the same time.
    #[arg(long, alias = "build_workers", value_name = "N", default_value_t = 2)]
    pub build_workers: usize,

    /// Seconds each eval script may run (six per instance); on timeout the output so far is
    /// kept and graded.
    #[arg(long, value_name = "SECONDS", default_value_t = 1800)]
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

    /// Raise the soft limit of open files to this (never the hard limit).
    #[arg(
        long,
        alias = "open_file_limit",
        value_name = "N",
        default_value_t = 4096
    )]
    pub open_file_limit: u64,

    /// Accepted for compatibility and ignored: images are always built through the engine's API.
    #[arg(long, alias = "build_mode", value_name = "cli|api")]
    pub build_mode: Option<String>,

    /// Base directory of run_instance_swt_logs/, image_build_logs/ and evaluation_results/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub output_dir: PathBuf,

    /// Memory limit of each test container (e.g. 4g, 512m).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory: Option<u64>,

    /// Process limit of each test container.
    #[arg(long, value_name = "N")]
    pub pids_limit: Option<u32>,

    /// CPUs of each test container (e.g. 1.5).
    #[arg(long, value_name = "CPUS")]
    pub cpus: Option<f64>,

    /// Keep at most this much of a run's output, head and tail (e.g. 64m; 0 keeps everything).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_output: Option<u64>,

    /// Give test containers network access (off by default; the original always had it).
    #[arg(long)]
    pub allow_network: bool,

    /// Directory of bare git mirrors <owner>__<name>.git: images clone from there and
    /// requirement files are read from there instead of GitHub.
    #[arg(long, alias = "repo_mirror", value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: Option<PathBuf>,

    /// Extra spec table entries (TOML, or JSON for *.json), applied over the embedded table.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,

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
    #[arg(long, value_name = "SECONDS")]
    pub build_timeout: Option<u64>,

    /// Skip the HTML report.
    #[arg(long)]
    pub no_html: bool,
}

/// `4g`, `512m`, `1024k`, `123` (bytes); binary units.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').unwrap_or(&t);
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        Some('t') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("expected a size such as 4g, 512m or 1048576, got {s:?}"))?;
    if v < 0.0 || !v.is_finite() {
        return Err(format!("a size must be positive, got {s:?}"));
    }
    Ok((v * mult as f64) as u64)
}

/// Connects to the container engine; an unreachable engine is exit code 3 with a hint.
pub async fn connect_engine() -> Result<DockerBackend, CliError> {
    DockerBackend::connect(DockerOptions::default())
        .await
        .map_err(|e| {
            let hint = e.hint();
            let err = CliError::environment(e);
            match hint {
                Some(h) => err.with_hint(h),
                None => err,
            }
        })
}

/// A tokio runtime for the engine work.
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::environment(anyhow!("cannot start the async runtime: {e}")))
}

/// Longest run id: file names are at most 255 bytes, and the run report's is
/// `<model>.<run_id>.json`.
const MAX_RUN_ID_BYTES: usize = 128;

fn check_run_id(run_id: &str) -> Result<(), CliError> {
    let reserved = RunKind::ALL
        .iter()
        .filter(|k| k.is_shared())
        .any(|k| k.as_str() == run_id);
    // The rules of instance ids (which name directories too), plus a length that leaves room for
    // `<model>.<run_id>.html` in evaluation_results/.
    let unusable = run_id.trim().is_empty()
        || run_id == "."
        || run_id == ".."
        || run_id.contains(['/', '\\'])
        || run_id.chars().any(char::is_control)
        || run_id.len() > MAX_RUN_ID_BYTES;
    if unusable {
        return Err(
            CliError::input(anyhow!("--run-id {run_id:?} cannot name a directory"))
                .with_hint(format!(
                    "use letters, digits, dots, dashes and underscores, at most {MAX_RUN_ID_BYTES} bytes"
                )),
        );
    }
    if reserved {
        return Err(CliError::input(anyhow!(
            "--run-id {run_id} collides with the shared {run_id}/ directory of the logs"
        ))
        .with_hint("choose another run id"));
    }
    Ok(())
}

/// Raises the soft limit of open files (never above the hard limit, never lowering it).
fn raise_open_file_limit(want: u64, printer: &Printer) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let cur = getrlimit(Resource::Nofile);
    let hard = cur.maximum;
    let target = hard.map_or(want, |h| want.min(h));
    if cur.current.is_some_and(|c| c >= target) || cur.current.is_none() {
        return;
    }
    let new = Rlimit {
        current: Some(target),
        maximum: hard,
    };
    if let Err(e) = setrlimit(Resource::Nofile, new) {
        printer.warn(&format!(
            "could not raise the open file limit to {target}: {e}"
        ));
    }
}

fn settings_from(args: &RunArgs) -> Result<RunSettings, CliError> {
    let eval = args.eval.options(!args.eval_install)?;
    if args.max_workers == 0 || args.build_workers == 0 {
        return Err(CliError::input(anyhow!(
            "--max-workers and --build-workers must be at least 1"
        )));
    }
    if args.timeout == 0 {
        return Err(CliError::input(anyhow!(
            "--timeout must be at least 1 second"
        )));
    }
    let mut s = RunSettings::new(&args.run_id, &args.output_dir);
    s.outputs = OutputRoots::under(&args.output_dir);
    s.eval = eval;
    let max_output = match args.max_output {
        Some(0) => None,
        Some(n) => Some(n as usize),
        None => Some(DEFAULT_MAX_OUTPUT),
    };
    s.exec = ExecSettings {
        timeout: Duration::from_secs(args.timeout),
        max_output,
        limits: ResourceLimits {
            memory_bytes: args.memory,
            pids: args.pids_limit,
            nano_cpus: args.cpus.map(|c| (c * 1e9) as u64),
        },
        allow_network: args.allow_network,
    };
    s.images = ImageSettings {
        cache_level: args.cache_level,
        clean: args.clean,
        force_rebuild: args.force_rebuild,
        build_workers: args.build_workers,
        repo_mirror: args.repo_mirror.clone(),
        build_timeout: args.build_timeout.map(Duration::from_secs),
    };
    s.max_workers = args.max_workers;
    s.patch_types = args.patch_types.clone();
    s.extract = args.styles.options();
    s.reuse_unkeyed = args.reuse_unkeyed_outputs;
    s.skip_eval = args.skip_eval;
    Ok(s)
}

/// Renders every instance's spec (requirement files from the mirror or GitHub raw).
fn render_specs(
    instances: &[&Instance],
    table: &swtbench_spec::SpecTable,
    files: &dyn swtbench_spec::FileSource,
) -> BTreeMap<String, Result<ExecSpec, String>> {
    let host = Arch::host();
    instances
        .iter()
        .map(|i| {
            (
                i.instance_id.to_string(),
                ExecSpec::new(i, table, host, files).map_err(|e| e.to_string()),
            )
        })
        .collect()
}

pub fn run(args: RunArgs, printer: &Printer) -> CliResult {
    check_run_id(&args.run_id)?;
    let settings = settings_from(&args)?;
    if let Some(mode) = &args.build_mode {
        printer.info(&format!(
            "note: --build-mode {mode} is accepted for compatibility and ignored (images are built through the engine's API)"
        ));
    }
    raise_open_file_limit(args.open_file_limit, printer);
    let rt = runtime()?;
    // The engine first: an unreachable engine is one clear error before any work.
    let needs_engine = !args.skip_eval;
    let backend = if needs_engine {
        match rt.block_on(connect_engine()) {
            Ok(b) => Some(Arc::new(b)),
            Err(e) if args.dry_run => {
                printer.warn(&format!("{}; the plan assumes no image exists", e.error));
                None
            }
            Err(e) => return Err(e),
        }
    } else {
        None
    };

    let table = load_spec_table(args.spec_table.as_deref())?;
    let offline = args.dataset.is_offline();
    let files = repo_files(args.repo_mirror.as_deref(), offline)?;
    let dataset = args.dataset.load_valid(printer)?;
    let source = PredictionsSource::parse(&args.predictions);
    let predictions =
        load_predictions(&source, &dataset).map_err(super::common::predictions_error)?;
    for w in &predictions.warnings {
        printer.warn(w);
    }
    if predictions.predictions.is_empty() {
        return Err(CliError::input(anyhow!(
            "no prediction matches a selected instance of {}",
            dataset.name
        ))
        .with_hint("check --dataset, --instance-ids and the predictions' instance ids"));
    }
    let report_name = format!(
        "{}.{}.html",
        model_dir_name(&predictions.model),
        args.run_id
    );
    if report_name.len() > 255 {
        return Err(CliError::input(anyhow!(
            "the run report's file name {report_name} is longer than 255 bytes"
        ))
        .with_hint("use a shorter --run-id (or model_name_or_path)"));
    }
    let with_prediction: Vec<&Instance> = dataset
        .instances
        .iter()
        .filter(|i| predictions.predictions.contains_key(&i.instance_id))
        .collect();
    let specs = render_specs(&with_prediction, &table, &files);

    let tags: Vec<String> = specs
        .values()
        .filter_map(|s| s.as_ref().ok())
        .flat_map(|s| {
            [
                s.keys.base.clone(),
                s.keys.env.clone(),
                s.keys.instance.clone(),
            ]
        })
        .collect();
    let images: ImageInventory = match &backend {
        Some(b) => rt
            .block_on(image_inventory(b.as_ref(), tags))
            .map_err(CliError::environment)?,
        None => ImageInventory::new(),
    };
    let tracer = swtbench_tracer::TRACER_PY.to_string();
    let tracer_sha = swtbench_core::hash::sha256_hex(&tracer);
    let plan = swtbench_runner::plan(
        &PlanInput {
            settings: &settings,
            model: &predictions.model,
            instances: &dataset.instances,
            predictions: &predictions.predictions,
            specs: &specs,
            table: &table,
            images: &images,
            tracer_sha256: Some(&tracer_sha),
        },
        &DiskOutputs,
    );
    if args.dry_run {
        if args.json {
            printer.data(&plan.to_json());
        } else {
            printer.info(plan.to_text().trim_end());
        }
        return Ok(ExitCode::Success);
    }
    // One process per run id and output directory: a second one would overwrite the first's
    // prediction runs and reports.
    let _lock =
        RunLock::acquire(&settings.outputs.logs, &settings.run_id).map_err(|e| match e {
            RunLockError::Busy { .. } => CliError::input(e).with_hint(
                "wait for it to finish, stop it (Ctrl-C), or use another --run-id or --output-dir",
            ),
            RunLockError::Io { .. } => CliError::environment(e)
                .with_hint("--output-dir must name a directory this user can write to"),
        })?;
    for dir in [&settings.outputs.build_logs, &settings.outputs.results] {
        swtbench_runner::fsutil::check_writable_dir(dir).map_err(|e| {
            CliError::environment(anyhow!("cannot write to {}: {e}", dir.display()))
                .with_hint("--output-dir must name a directory this user can write to")
        })?;
    }
    let network = BuildNetwork::from_env(args.ca_bundle.as_deref()).map_err(|e| {
        CliError::input(e).with_hint("--ca-bundle (or SSL_CERT_FILE) must name a readable file")
    })?;
    let evaluation = Evaluation {
        settings: settings.clone(),
        instances: dataset
            .instances
            .iter()
            .map(|i| (i.instance_id.to_string(), i.clone()))
            .collect(),
        plan,
        images,
        tracer: Some(tracer),
        submitted_ids: predictions
            .predictions
            .keys()
            .map(|k| k.to_string())
            .collect(),
        network,
    };
    match backend {
        Some(b) => execute(&rt, b, evaluation, &dataset, &predictions, &args, printer),
        // --skip-eval: nothing touches an engine.
        None => execute(
            &rt,
            Arc::new(swtbench_runner::offline::NoEngine),
            evaluation,
            &dataset,
            &predictions,
            &args,
            printer,
        ),
    }
}

fn execute<B: ContainerBackend>(
    rt: &tokio::runtime::Runtime,
    backend: Arc<B>,
    evaluation: Evaluation,
    dataset: &swtbench_data::LoadedDataset,
    predictions: &swtbench_data::LoadedPredictions,
    args: &RunArgs,
    printer: &Printer,
) -> CliResult {
    let settings = evaluation.settings.clone();
    let model_dir = model_dir_name(&predictions.model);
    let progress = Arc::new(Progress::new(
        printer,
        std::io::stderr().is_terminal(),
        evaluation.plan.counts.instances,
    ));
    let mut sinks: Vec<Box<dyn EventSink>> = vec![Box::new(ProgressRef(progress.clone()))];
    if let Some(path) = &args.events {
        let w = JsonlWriter::create(path).map_err(|e| {
            CliError::input(anyhow!(
                "cannot create the events file {}: {e}",
                path.display()
            ))
        })?;
        sinks.push(Box::new(w));
    }
    let sink: Arc<dyn EventSink> = Arc::new(FanOut(sinks));
    let cancel = Cancel::new();
    // The HTML report reads each repository's runs with the parser the plan chose for it, and
    // finds the shared runs under the directive hashes the plan used.
    let page_rules = swtbench_app::html_page::plan_rules(&evaluation.plan);
    let started = std::time::Instant::now();
    let output = rt.block_on(async {
        let signals = tokio::spawn(watch_signals(cancel.clone(), *printer));
        let out = swtbench_runner::run(backend, evaluation, sink, cancel.clone()).await;
        signals.abort();
        out
    });
    // Warnings were shown as they happened (the progress display renders the events).
    progress.finish();
    if output.cancelled == Some(swtbench_runner::events::CancelReason::Kill) {
        printer.info("killed: containers removed, no reports written");
        return Ok(ExitCode::Interrupted);
    }

    let report_path = output.run_report_path.clone();

    // The leaderboard table on stdout.
    let selection = !args.dataset.instance_ids.is_empty();
    let known = swtbench_app::benchmark::benchmark_of_run(
        dataset.known,
        selection,
        args.dataset.filter_swt,
    );
    let denominator = swtbench_app::benchmark::run_denominator(known, output.stats.instances);
    let gold_reports = if predictions.is_gold() {
        Some(output.reports.clone())
    } else {
        known.and_then(|d| {
            swtbench_app::benchmark::published_gold_reports(&settings.outputs.logs, d)
        })
    };
    let metrics = leaderboard::compute(&output.reports, gold_reports.as_deref(), denominator);

    // The HTML report next to the run report, with the table's numbers.
    if !args.no_html {
        if let Some(path) = &report_path {
            let page = swtbench_app::html_page::RunPage {
                settings: &settings,
                model_dir: &model_dir,
                dataset,
                run_report: path,
                metrics: &metrics,
                rules: page_rules,
                elapsed: started.elapsed(),
            };
            match swtbench_app::html_page::write_run_page(page) {
                Ok(Some(html)) => printer.info(&format!("HTML report: {}", html.display())),
                // Interrupted before any instance had a report: nothing to show.
                Ok(None) => {}
                Err(e) => printer.warn(&format!("the HTML report was not written: {e}")),
            }
        }
    }
    printer.data(&leaderboard::render(
        &metrics,
        &args.run_id,
        Format::Github,
        None,
    ));
    let s = &output.stats;
    printer.info(&format!(
        "{} instance(s): {} resolved, {} unresolved, {} empty patch, {} error(s), {} skipped, {} interrupted; runs: {} executed ({} timed out), {} reused, {} copied, {} failed; images: {} built, {} removed; denominator {denominator}",
        s.instances, s.resolved, s.unresolved, s.empty_patch, s.errors, s.skipped, s.interrupted,
        s.runs_executed, s.runs_timed_out, s.runs_reused, s.runs_copied, s.runs_failed,
        s.images_built, s.images_removed
    ));
    if let Some(p) = &report_path {
        printer.info(&format!("run report: {}", p.display()));
    }
    if let Some(reason) = &output.aborted {
        let not_run = output.stats.interrupted;
        return Err(CliError::environment(anyhow!(
            "the run stopped early: {reason}; {not_run} instance(s) were not evaluated"
        ))
        .with_hint(format!(
            "fix that and run the same command again: finished runs are reused \
             (`swtbench clean --run-id {}` removes containers left behind)",
            args.run_id
        )));
    }
    if output.cancelled.is_some() {
        return Ok(ExitCode::Interrupted);
    }
    // Exactly the summary's errors and skips (interrupted instances returned 130 above).
    let failed = output.results.iter().any(|r| r.outcome.is_failure());
    Ok(if failed {
        ExitCode::Partial
    } else {
        ExitCode::Success
    })
}

/// Ctrl-C once: interrupt (stop, clean up, partial reports); twice: kill (clean up, no
/// reports); three times: exit at once. SIGTERM counts as a first Ctrl-C.
async fn watch_signals(cancel: Cancel, printer: Printer) {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let mut presses = 0u32;
    loop {
        #[cfg(unix)]
        {
            let term_fut = async {
                match term.as_mut() {
                    Some(t) => {
                        t.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                r = tokio::signal::ctrl_c() => { if r.is_err() { return; } }
                _ = term_fut => {}
            }
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        presses += 1;
        match presses {
            1 => {
                cancel.request(swtbench_runner::events::CancelReason::Interrupt);
                printer.info(
                    "interrupted: stopping containers and writing partial reports (Ctrl-C again to skip the reports)",
                );
            }
            2 => {
                cancel.request(swtbench_runner::events::CancelReason::Kill);
                printer.info("killing: removing containers now (Ctrl-C again to exit at once)");
            }
            _ => {
                printer.info("exiting; `swtbench clean --run-id <id>` removes what is left");
                std::process::exit(ExitCode::Interrupted.as_i32());
            }
        }
    }
}

/// An `Arc<Progress>` as an event sink.
struct ProgressRef(Arc<Progress>);

impl EventSink for ProgressRef {
    fn event(&self, event: &swtbench_runner::Event) {
        self.0.event(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("4g"), Ok(4 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("64mb"), Ok(64 << 20));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1").is_err());
    }

    #[test]
    fn run_ids_that_are_not_directory_names_or_collide_are_refused() {
        assert!(check_run_id("my-run.1").is_ok());
        let long = "x".repeat(MAX_RUN_ID_BYTES + 1);
        for bad in [
            "",
            " ",
            "a/b",
            "a\\b",
            "a\nb",
            "a\tb",
            "..",
            "gold_pre",
            "base_post",
            &long,
        ] {
            assert!(check_run_id(bad).is_err(), "{bad}");
        }
    }
}
