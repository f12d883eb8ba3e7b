//! `swtbench spec`: render, for each selected instance, everything its evaluation needs (the three
//! Dockerfiles, `setup_env.sh`, `setup_repo.sh`, the six eval scripts, the image keys and the gold
//! test directives) into `OUT/<instance_id>/`, without building or running anything.
//!
//! Requirement and environment files are read from `--repo-mirror` bare repositories, else from
//! GitHub raw through the download cache. An instance that cannot be rendered gets
//! `OUT/<instance_id>/error.txt` with the reason; the others are still rendered and the command
//! exits with 1. The rendering is `swtbench_app::spec`; this module parses the flags, resolves
//! them and prints. Also home of [`EvalArgs`] (shared with `run`) and of the thin wrappers over
//! `swtbench_app::tables` other commands call ([`load_spec_table`], [`repo_files`]).

use std::path::{Path, PathBuf};

use swtbench_app::spec::{render_specs, RenderEvent, RenderSettings};
use swtbench_app::tables::{CacheEnv, RepoFilesSettings};
use swtbench_app::Fault;
use swtbench_data::predictions::{load_predictions, PredictionsSource};
use swtbench_data::repo_files::RepoFiles;
use swtbench_spec::{Arch, EvalOptions, ExecMode, SpecError, SpecTable};

use crate::commands::common::{parse_bool, predictions_error, DatasetArgs};
use crate::env_vars;
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;

/// How the tests are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExecModeArg {
    /// The repository's test runner on the test files the patch touches.
    #[value(name = "unit_test", alias = "unit-test")]
    UnitTest,
    /// `python3 /testbed/<script>`; its exit code is the result.
    #[value(name = "reproduction_script", alias = "reproduction-script")]
    ReproductionScript,
}

/// How the coverage tracer treats the programs it traces (`--tracer-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TracerMode {
    /// As the original tracer: score parity.
    Original,
    /// Traced programs behave as they would untraced (`SWTBENCH_TRACE_COMPAT=0`).
    Fixed,
}

/// How the eval scripts run the tests (shared by `spec` and `run`).
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// Run the repository's tests on the patch's test files, or a reproduction script.
    #[arg(long, alias = "exec_mode", value_enum, default_value = "unit_test")]
    pub exec_mode: ExecModeArg,

    /// The reproduction script the model patch creates, relative to the repository root
    /// (reproduction_script mode).
    #[arg(long, alias = "reproduction_script_name", value_name = "PATH")]
    pub reproduction_script_name: Option<String>,

    /// Run the tests under the coverage tracer (the original's flag; default true).
    #[arg(long, alias = "compute_coverage", value_name = "BOOL", value_parser = parse_bool,
          num_args = 0..=1, default_missing_value = "true")]
    pub compute_coverage: Option<bool>,

    /// Run the tests without the coverage tracer (same as --compute-coverage false).
    #[arg(long, conflicts_with = "compute_coverage")]
    pub no_coverage: bool,

    /// How the coverage tracer treats the programs it traces: `original` (the original tracer's
    /// behaviour, the default: score parity) or `fixed` (traced programs behave as they would
    /// untraced; exports SWTBENCH_TRACE_COMPAT=0 before the test command; see docs/tracer.md).
    /// Fixed-mode runs keep their own shared gold/base runs.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = TracerMode::Original)]
    pub tracer_mode: TracerMode,

    /// Reproduce the original's sympy test command exactly, including its `str.strip` bug that
    /// cuts the last character of the last test file.
    #[arg(long)]
    pub sympy_strip_bug: bool,
}

impl EvalArgs {
    /// The eval options these flags ask for (`skip_install` comes from the command's own flag),
    /// or an input error for a combination that cannot run.
    pub fn options(&self, skip_install: bool) -> Result<EvalOptions, CliError> {
        let exec_mode = match (self.exec_mode, &self.reproduction_script_name) {
            (ExecModeArg::UnitTest, _) => ExecMode::UnitTest,
            (ExecModeArg::ReproductionScript, Some(name)) if !name.trim().is_empty() => {
                ExecMode::ReproductionScript(name.clone())
            }
            (ExecModeArg::ReproductionScript, _) => {
                return Err(CliError::input(SpecError::MissingScriptName).with_hint(
                    "name the script the model patch creates, relative to the repository root, \
                     e.g. --reproduction-script-name reproduce_bug.py",
                ))
            }
        };
        let coverage = !self.no_coverage && self.compute_coverage.unwrap_or(true);
        if self.tracer_mode == TracerMode::Fixed && !coverage {
            return Err(CliError::input(anyhow::anyhow!(
                "--tracer-mode fixed needs the coverage tracer, which --no-coverage (or \
                 --compute-coverage false) turns off"
            ))
            .with_hint("leave out one of the two"));
        }
        Ok(EvalOptions {
            exec_mode,
            coverage,
            sympy_strip_compat: self.sympy_strip_bug,
            skip_install,
            tracer_fixed: self.tracer_mode == TracerMode::Fixed,
        })
    }
}

#[derive(Debug, clap::Args)]
pub struct SpecArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Predictions whose patches the pred runs apply: `gold` (the gold test patch, also the
    /// default), a .json or a .jsonl file. Instances without a prediction are not rendered.
    #[arg(long, alias = "predictions_path", value_name = "gold|FILE")]
    pub predictions: Option<String>,

    #[command(flatten)]
    pub eval: EvalArgs,

    /// Directory of bare git mirrors named <owner>__<name>.git: requirement files are read from
    /// them instead of GitHub.
    #[arg(long, alias = "repo_mirror", value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: Option<PathBuf>,

    /// Extra spec table entries (TOML, or JSON for *.json), applied over the embedded table.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,

    /// Render for this host architecture instead of this machine's (x86_64 or arm64).
    #[arg(long, value_name = "ARCH", value_parser = parse_arch)]
    pub arch: Option<Arch>,

    /// Leave out the per-run re-install of the repository from the eval scripts.
    #[arg(long)]
    pub skip_eval_install: bool,

    /// Output directory; each instance is written to OUT/<instance_id>/.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

fn parse_arch(s: &str) -> Result<Arch, String> {
    Arch::parse(s).ok_or_else(|| format!("unknown architecture {s:?} (x86_64 or arm64)"))
}

/// The `--spec-table` loader every command uses (see `swtbench_app::tables::load_spec_table`).
pub fn load_spec_table(extra: Option<&Path>) -> Result<SpecTable, CliError> {
    swtbench_app::tables::load_spec_table(extra).map_err(app_error)
}

/// The directory GitHub raw downloads are cached in, from the environment (see
/// `swtbench_app::tables::github_raw_cache_dir`).
pub fn github_raw_cache_dir() -> PathBuf {
    swtbench_app::tables::github_raw_cache_dir(&CacheEnv {
        swtbench_cache_dir: std::env::var_os(env_vars::SWTBENCH_CACHE_DIR),
        xdg_cache_home: std::env::var_os("XDG_CACHE_HOME"),
        home: std::env::var_os("HOME"),
    })
}

/// The file source for requirement files, with the cache and the GitHub raw base from the
/// environment (see `swtbench_app::tables::repo_files`).
pub fn repo_files(mirror: Option<&Path>, offline: bool) -> Result<RepoFiles, CliError> {
    swtbench_app::tables::repo_files(&RepoFilesSettings {
        mirror: mirror.map(Path::to_path_buf),
        offline,
        cache_dir: github_raw_cache_dir(),
        raw_base: std::env::var(env_vars::SWTBENCH_GITHUB_RAW).ok(),
    })
    .map_err(app_error)
}

/// An application-layer error as this binary reports it (same exit code, cause chain and hint).
pub(crate) fn app_error(e: swtbench_app::Error) -> CliError {
    CliError {
        code: match e.fault {
            Fault::Input => ExitCode::Input,
            Fault::Environment => ExitCode::Environment,
        },
        error: e.error,
        hint: e.hint,
    }
}

pub fn run(args: SpecArgs, printer: &Printer) -> CliResult {
    let options = args.eval.options(args.skip_eval_install)?;
    let table = load_spec_table(args.spec_table.as_deref())?;
    let offline = args.dataset.is_offline();
    let files = repo_files(args.repo_mirror.as_deref(), offline)?;
    let host = args.arch.unwrap_or_else(Arch::host);

    let dataset = args.dataset.load_valid(printer)?;
    let source = PredictionsSource::parse(args.predictions.as_deref().unwrap_or("gold"));
    let predictions = load_predictions(&source, &dataset).map_err(predictions_error)?;
    for w in &predictions.warnings {
        printer.warn(w);
    }
    if !predictions.missing.is_empty() {
        printer.warn(&format!(
            "{} selected instance(s) have no prediction and are not rendered",
            predictions.missing.len()
        ));
    }

    let settings = RenderSettings {
        host,
        options,
        out: args.out.clone(),
    };
    let summary = render_specs(
        &dataset.instances,
        &predictions,
        &table,
        &files,
        &settings,
        &mut |event| match event {
            RenderEvent::EmptyPatch { instance_id } => printer.warn(&format!(
                "{instance_id}: the prediction has no usable patch (null, blank or binary diffs \
                 only); its scripts are rendered, but `swtbench run` grades it as an empty patch \
                 without running them"
            )),
            RenderEvent::Rendered {
                instance_id,
                instance_key,
            } => printer.data(&format!("{instance_id}\t{instance_key}")),
            RenderEvent::Failed { instance_id, error } => {
                printer.warn(&format!("{instance_id}: {error}"));
                printer.data(&format!("{instance_id}\terror"));
            }
        },
    )
    .map_err(app_error)?;
    printer.info(&format!(
        "rendered {} instance(s) into {}{}",
        summary.rendered,
        args.out.display(),
        if summary.failed > 0 {
            format!(
                "; {} could not be rendered (see <instance>/error.txt)",
                summary.failed
            )
        } else {
            String::new()
        }
    ));
    Ok(if summary.failed > 0 {
        ExitCode::Partial
    } else {
        ExitCode::Success
    })
}
