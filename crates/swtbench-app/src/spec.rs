//! `swtbench spec` as a library: render, for each instance with a prediction, everything its
//! evaluation needs (the three Dockerfiles, `setup_env.sh`, `setup_repo.sh`, the six eval scripts,
//! the image keys and the gold test directives) into `OUT/<instance_id>/`, without building or
//! running anything.
//!
//! An instance that cannot be rendered gets `OUT/<instance_id>/error.txt` with the reason (and a
//! hint); the others are still rendered. What happens to each instance is reported through a
//! callback, in dataset order; nothing here prints.

use std::path::{Path, PathBuf};

use swtbench_core::diff::{remove_binary_diffs, LineSplit};
use swtbench_core::{Instance, RunKind};
use swtbench_data::fsutil::write_atomic;
use swtbench_data::predictions::LoadedPredictions;
use swtbench_data::repo_files::RepoFiles;
use swtbench_spec::{Arch, EvalOptions, ExecSpec, FileSource, RunInputs, SpecError, SpecTable};

use crate::lines::Line;
use crate::{Error, Result};

/// What to render, for which host, where.
#[derive(Debug, Clone)]
pub struct RenderSettings {
    pub host: Arch,
    pub options: EvalOptions,
    /// Each instance is written to `OUT/<instance_id>/` (replacing what was there).
    pub out: PathBuf,
}

/// What happened to one instance, in dataset order.
#[derive(Debug)]
pub enum RenderEvent<'a> {
    /// The prediction has no usable patch (null, blank or binary diffs only); its scripts are
    /// rendered anyway (reported before [`RenderEvent::Rendered`] or [`RenderEvent::Failed`]).
    EmptyPatch { instance_id: &'a str },
    Rendered {
        instance_id: &'a str,
        /// The instance image key.
        instance_key: &'a str,
    },
    /// The instance could not be rendered; `error.txt` says why.
    Failed {
        instance_id: &'a str,
        error: &'a SpecError,
    },
}

/// How many instances were rendered and how many failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenderSummary {
    pub rendered: usize,
    pub failed: usize,
}

impl RenderEvent<'_> {
    /// What `spec` says of it: the instance's key or error on stdout, warnings on stderr.
    pub fn lines(&self) -> Vec<Line> {
        match self {
            RenderEvent::EmptyPatch { instance_id } => vec![Line::Warn(format!(
                "{instance_id}: the prediction has no usable patch (null, blank or binary diffs \
                 only); its scripts are rendered, but `swtbench run` grades it as an empty patch \
                 without running them"
            ))],
            RenderEvent::Rendered {
                instance_id,
                instance_key,
            } => vec![Line::Data(format!("{instance_id}\t{instance_key}"))],
            RenderEvent::Failed { instance_id, error } => vec![
                Line::Warn(format!("{instance_id}: {error}")),
                Line::Data(format!("{instance_id}\terror")),
            ],
        }
    }
}

/// The warning about selected instances without a prediction (`spec` renders none for them).
pub fn missing_warning(predictions: &swtbench_data::LoadedPredictions) -> Option<Line> {
    let n = predictions.missing.len();
    (n > 0).then(|| {
        Line::Warn(format!(
            "{n} selected instance(s) have no prediction and are not rendered"
        ))
    })
}

impl RenderSummary {
    /// The last line of `spec`, which wrote into `out`.
    pub fn text(&self, out: &Path) -> String {
        format!(
            "rendered {} instance(s) into {}{}",
            self.rendered,
            out.display(),
            if self.failed > 0 {
                format!(
                    "; {} could not be rendered (see <instance>/error.txt)",
                    self.failed
                )
            } else {
                String::new()
            }
        )
    }
}

/// The spec of one instance on this machine's architecture (`envs show`).
pub fn instance_spec(
    instance: &Instance,
    table: &SpecTable,
    files: &RepoFiles,
) -> Result<ExecSpec> {
    ExecSpec::new(instance, table, Arch::host(), files).map_err(|e| {
        Error::input(anyhow::anyhow!("{}: {e}", instance.instance_id))
            .with_hint("--repo-mirror DIR reads requirement files from local mirrors")
    })
}

/// What `envs show` prints of an instance's environment: provider, Python image, the pinned
/// packages and where they came from, what the frozen environment had that is left out.
pub fn describe_env(instance: &Instance, spec: &ExecSpec) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(format!("instance:  {}", instance.instance_id));
    line(format!("repo:      {} {}", instance.repo, instance.version));
    line(format!("provider:  {}", spec.provider().as_str()));
    line(format!(
        "python:    {} (base image {})",
        spec.spec.python.as_deref().unwrap_or("?"),
        spec.keys.base
    ));
    line(format!("env image: {}", spec.keys.env));
    match &spec.pins {
        Some(p) => {
            line(format!("pins:      {} ({})", p.pins.len(), p.source));
            let tool = if spec.setup_env_sh.contains("\nuv pip install --no-deps -r") {
                "uv pip install --no-deps"
            } else {
                "pip install --no-deps (Python older than uv serves)"
            };
            let python = if p.source.starts_with("environment lock") && p.dropped.is_empty() {
                "locked for Python"
            } else {
                "frozen Python"
            };
            line(format!(
                "           {python} {}; installed with {tool}",
                p.frozen_python
            ));
            for pin in &p.pins {
                line(format!("  {pin}"));
            }
            line(format!(
                "left out of the frozen environment: {}",
                p.dropped.len()
            ));
            for d in &p.dropped {
                line(format!("  {d}"));
            }
        }
        None => {
            line("pins:      none".to_string());
            line("setup_env.sh install lines:".to_string());
            for l in spec.setup_env_sh.lines().filter(|l| l.contains("install")) {
                line(format!("  {l}"));
            }
        }
    }
    out.trim_end_matches('\n').to_string()
}

/// Renders every instance of `instances` that has a prediction into `settings.out`.
pub fn render_specs(
    instances: &[Instance],
    predictions: &LoadedPredictions,
    table: &SpecTable,
    files: &RepoFiles,
    settings: &RenderSettings,
    on_event: &mut dyn FnMut(RenderEvent<'_>),
) -> Result<RenderSummary> {
    std::fs::create_dir_all(&settings.out).map_err(|e| {
        Error::input(anyhow::anyhow!(
            "cannot create the output directory {}: {e}",
            settings.out.display()
        ))
    })?;
    let mut summary = RenderSummary::default();
    for instance in instances {
        let Some(prediction) = predictions.predictions.get(&instance.instance_id) else {
            continue;
        };
        let id = instance.instance_id.as_str();
        let dir = settings.out.join(id);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| {
                Error::environment(anyhow::anyhow!("cannot write {}: {e}", dir.display()))
            })?;
        }
        let raw_patch = prediction.model_patch.as_deref().unwrap_or("");
        // As the original's default (vanilla) patch handling: binary diffs are dropped.
        let model_patch = remove_binary_diffs(raw_patch, LineSplit::Python);
        if model_patch.trim().is_empty() {
            on_event(RenderEvent::EmptyPatch { instance_id: id });
        }
        let rendered = render_instance(
            instance,
            table,
            settings.host,
            files,
            &model_patch,
            &settings.options,
        );
        match rendered {
            Ok(out) => {
                out.write(&dir)?;
                on_event(RenderEvent::Rendered {
                    instance_id: id,
                    instance_key: &out.instance_key,
                });
                summary.rendered += 1;
            }
            Err(e) => {
                let text = match error_hint(&e, instance, files) {
                    Some(h) => format!("{e}\nhint: {h}\n"),
                    None => format!("{e}\n"),
                };
                write_file(&dir.join("error.txt"), &text)?;
                on_event(RenderEvent::Failed {
                    instance_id: id,
                    error: &e,
                });
                summary.failed += 1;
            }
        }
    }
    Ok(summary)
}

/// The files of one rendered instance.
struct Rendered {
    files: Vec<(String, String)>,
    instance_key: String,
}

impl Rendered {
    fn write(&self, dir: &Path) -> Result<()> {
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
    // What env.Dockerfile copies in at its end (the coverage tracer's native line counter).
    for (path, text, _mode) in swtbench_spec::env_context_files() {
        out.push((path, text.to_string()));
    }
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

/// What to do about an instance that cannot be rendered, written under its reason.
pub fn error_hint(e: &SpecError, instance: &Instance, files: &RepoFiles) -> Option<String> {
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

fn write_file(path: &Path, text: &str) -> Result<()> {
    // The message names the file already; the system's reason is part of it, not a cause.
    write_atomic(path, text.as_bytes()).map_err(|e| Error::environment(anyhow::anyhow!("{e}")))
}
