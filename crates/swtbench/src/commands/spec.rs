//! `swtbench spec`: render, for each selected instance, everything its evaluation needs (the three
//! Dockerfiles, `setup_env.sh`, `setup_repo.sh`, the six eval scripts, the image keys and the gold
//! test directives) into `OUT/<instance_id>/`, without building or running anything.
//!
//! Requirement and environment files are read from `--repo-mirror` bare repositories, else from
//! GitHub raw through the download cache. An instance that cannot be rendered gets
//! `OUT/<instance_id>/error.txt` with the reason; the others are still rendered and the command
//! exits with 1. Also home of [`load_spec_table`], the `--spec-table` loader every command uses.

use std::fs;
use std::path::{Path, PathBuf};

use swtbench_core::diff::{remove_binary_diffs, LineSplit};
use swtbench_core::{Instance, RunKind};
use swtbench_data::http::{HttpClient, HttpConfig};
use swtbench_data::predictions::{load_predictions, PredictionsSource};
use swtbench_spec::fetch::RepoFiles;
use swtbench_spec::{
    Arch, EvalOptions, ExecSpec, FileSource, RunInputs, SpecError, SpecTable, TableSyntax,
};

use crate::args::{predictions_error, DatasetArgs};
use crate::env_vars;
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;

pub use crate::args::EvalArgs;

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

/// The embedded spec table with `extra` (a `--spec-table` file) applied over it. A
/// `base_dockerfile` named in the file is read relative to the file's directory.
pub fn load_spec_table(extra: Option<&Path>) -> Result<SpecTable, CliError> {
    let mut table = SpecTable::embedded().clone();
    let Some(path) = extra else {
        return Ok(table);
    };
    let text = fs::read_to_string(path).map_err(|e| {
        CliError::input(anyhow::anyhow!(
            "cannot read spec table {}: {e}",
            path.display()
        ))
    })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let read = |p: &str| fs::read_to_string(dir.join(p)).map_err(|e| e.to_string());
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let overlay = SpecTable::parse(
        &text,
        &path.display().to_string(),
        TableSyntax::from_file_name(name),
        &read,
    )
    .map_err(|e| CliError::input(e).with_hint("the format is described in docs/spec-table.md"))?;
    table.merge(overlay);
    Ok(table)
}

/// The directory GitHub raw downloads are cached in: `$SWTBENCH_CACHE_DIR/github-raw`, by default
/// under `$XDG_CACHE_HOME/swtbench` or `~/.cache/swtbench`.
pub fn github_raw_cache_dir() -> PathBuf {
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let base = non_empty(env_vars::SWTBENCH_CACHE_DIR)
        .map(PathBuf::from)
        .or_else(|| non_empty("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("swtbench")))
        .or_else(|| non_empty("HOME").map(|h| PathBuf::from(h).join(".cache/swtbench")))
        .unwrap_or_else(|| PathBuf::from(".cache/swtbench"));
    base.join("github-raw")
}

/// The file source for requirement files: the mirror directory (checked to exist), then GitHub
/// raw (or `SWTBENCH_GITHUB_RAW`) through the download cache; the cache only when offline.
pub fn repo_files(mirror: Option<&Path>, offline: bool) -> Result<RepoFiles, CliError> {
    if let Some(dir) = mirror {
        swtbench_spec::fetch::check_mirror_dir(dir).map_err(|e| {
            CliError::input(anyhow::anyhow!(e)).with_hint(
                "create mirrors with `git clone --mirror https://github.com/<owner>/<name> DIR/<owner>__<name>.git`",
            )
        })?;
    }
    let config = HttpConfig {
        cache_dir: Some(github_raw_cache_dir()),
        ..HttpConfig::default()
    };
    let http = HttpClient::new(config).map_err(|e| {
        CliError::environment(e).with_hint(format!(
            "check {} and the proxy variables",
            env_vars::SSL_CERT_FILE
        ))
    })?;
    let mut files = RepoFiles::new(mirror.map(Path::to_path_buf), Some(http), offline);
    if let Some(base) = std::env::var(env_vars::SWTBENCH_GITHUB_RAW)
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        files = files.with_raw_base(&base);
    }
    Ok(files)
}

pub fn run(args: SpecArgs, printer: &Printer) -> CliResult {
    let opts = args.eval.options(args.skip_eval_install)?;
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

    fs::create_dir_all(&args.out).map_err(|e| {
        CliError::input(anyhow::anyhow!(
            "cannot create the output directory {}: {e}",
            args.out.display()
        ))
    })?;

    let (mut rendered, mut failed) = (0usize, 0usize);
    for instance in &dataset.instances {
        let Some(prediction) = predictions.predictions.get(&instance.instance_id) else {
            continue;
        };
        let dir = args.out.join(instance.instance_id.as_str());
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(|e| write_error(&dir, e))?;
        }
        let raw_patch = prediction.model_patch.as_deref().unwrap_or("");
        // As the original's default (vanilla) patch handling: binary diffs are dropped.
        let model_patch = remove_binary_diffs(raw_patch, LineSplit::Python);
        if model_patch.trim().is_empty() {
            printer.warn(&format!(
                "{}: the prediction has no usable patch (null, blank or binary diffs only); its \
                 scripts are rendered, but `swtbench run` grades it as an empty patch without \
                 running them",
                instance.instance_id
            ));
        }
        match render_instance(instance, &table, host, &files, &model_patch, &opts) {
            Ok(out) => {
                out.write(&dir)?;
                printer.data(&format!("{}\t{}", instance.instance_id, out.instance_key));
                rendered += 1;
            }
            Err(e) => {
                let hint = error_hint(&e, instance, &files);
                let text = match &hint {
                    Some(h) => format!("{e}\nhint: {h}\n"),
                    None => format!("{e}\n"),
                };
                write_file(&dir.join("error.txt"), &text)?;
                printer.warn(&format!("{}: {e}", instance.instance_id));
                printer.data(&format!("{}\terror", instance.instance_id));
                failed += 1;
            }
        }
    }
    printer.info(&format!(
        "rendered {rendered} instance(s) into {}{}",
        args.out.display(),
        if failed > 0 {
            format!("; {failed} could not be rendered (see <instance>/error.txt)")
        } else {
            String::new()
        }
    ));
    Ok(if failed > 0 {
        ExitCode::Partial
    } else {
        ExitCode::Success
    })
}

/// The files of one rendered instance.
struct Rendered {
    files: Vec<(String, String)>,
    instance_key: String,
}

impl Rendered {
    fn write(&self, dir: &Path) -> Result<(), CliError> {
        for (name, text) in &self.files {
            write_file(&dir.join(name), text)?;
        }
        Ok(())
    }
}

fn render_instance(
    instance: &Instance,
    table: &SpecTable,
    host: Arch,
    files: &dyn FileSource,
    model_patch: &str,
    opts: &EvalOptions,
) -> Result<Rendered, SpecError> {
    let spec = ExecSpec::new(instance, table, host, files)?;
    let inputs = RunInputs {
        model_patch,
        gold_test_patch: &instance.golden_test_patch,
        gold_code_patch: &instance.golden_code_patch,
    };
    let runs = spec.render_runs(&inputs, opts)?;
    let mut out: Vec<(String, String)> = Vec::new();
    // A base image that already exists locally has no Dockerfile; note its tag instead.
    out.push((
        "base.Dockerfile".into(),
        spec.base_dockerfile
            .clone()
            .unwrap_or_else(|| format!("# the existing local image {}\n", spec.keys.base)),
    ));
    out.push(("env.Dockerfile".into(), spec.env_dockerfile.clone()));
    out.push(("setup_env.sh".into(), spec.setup_env_sh.clone()));
    out.push((
        "instance.Dockerfile".into(),
        spec.instance_dockerfile.clone(),
    ));
    out.push(("setup_repo.sh".into(), spec.setup_repo_sh.clone()));
    for run in &runs {
        out.push((format!("eval/{}.sh", run.kind), run.eval_script.clone()));
    }
    out.push(("keys.json".into(), spec.keys_json()));
    let gold = runs
        .iter()
        .find(|r| r.kind == RunKind::GoldPre)
        .map(|r| r.directives.clone())
        .unwrap_or_default();
    out.push((
        "directives.json".into(),
        format!(
            "{}\n",
            serde_json::to_string_pretty(&gold).unwrap_or_default()
        ),
    ));
    Ok(Rendered {
        files: out,
        instance_key: spec.keys.instance.clone(),
    })
}

fn error_hint(e: &SpecError, instance: &Instance, files: &RepoFiles) -> Option<String> {
    match e {
        SpecError::UnknownRepo { .. } | SpecError::UnknownVersion { .. } => Some(
            "add an entry with --spec-table FILE (format: docs/spec-table.md)".to_string(),
        ),
        SpecError::FileNotFound { .. } | SpecError::Fetch { .. } => Some(format!(
            "looked in {}; a mirror is made with `git clone --mirror https://github.com/{repo} DIR/{dir}.git` and passed with --repo-mirror DIR",
            files.describe_sources(&instance.repo),
            repo = instance.repo,
            dir = instance.repo_dir_name(),
        )),
        SpecError::NoTestCommand { .. } => Some(
            "give the repository a test_command with --spec-table FILE (docs/spec-table.md)"
                .to_string(),
        ),
        _ => None,
    }
}

fn write_error(path: &Path, e: std::io::Error) -> CliError {
    CliError::environment(anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| write_error(parent, e))?;
    }
    fs::write(path, text).map_err(|e| write_error(path, e))
}
