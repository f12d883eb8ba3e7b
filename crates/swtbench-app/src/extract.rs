//! `swtbench extract` as a library: turn raw model outputs into git diffs without running
//! anything, reading the base files from bare mirrors, with the extraction cache of a run's log
//! directory (`<output_dir>/<instance>/{raw_model_patch.txt,extracted_patch.diff,extraction.json}`:
//! an unchanged answer is not extracted again).
//!
//! The custom type is applied with a Python interpreter on this host (it *parses*, never runs, the
//! model's code), so this is for outputs one trusts; `swtbench run` does it inside the
//! containers. Each instance's outcome goes to a callback; nothing here prints.

use std::path::{Path, PathBuf};

use swtbench_core::Instance;
use swtbench_data::git_mirror::{mirror_dir_name, GitError};
use swtbench_data::predictions::LoadedPredictions;
use swtbench_extract::cache::{load_or_extract, CachedExtraction, PATCH_FILE};
use swtbench_extract::{
    extract, ExtractOptions, GitMirrorSource, HostPython, PatchType, PythonRunner,
};

use crate::{Error, Result};

const MIRROR_HINT: &str =
    "create mirrors with `git clone --mirror https://github.com/<owner>/<name> DIR/<owner>__<name>.git`";

/// What to extract, from where, to where.
#[derive(Debug, Clone)]
pub struct ExtractSettings {
    /// Directory of bare mirrors `<owner>__<name>.git` holding the base commits.
    pub repo_mirror: PathBuf,
    /// Where `<instance>/extracted_patch.diff` and its companions go.
    pub output_dir: PathBuf,
    /// Tried in order until one produces a change.
    pub patch_types: Vec<PatchType>,
    pub options: ExtractOptions,
    /// The interpreter for the custom type; without it that type fails for every instance.
    pub python: Option<PathBuf>,
}

impl ExtractSettings {
    /// The mirror directory exists (checked before anything is loaded).
    pub fn check_repo_mirror(&self) -> Result<()> {
        if self.repo_mirror.is_dir() {
            return Ok(());
        }
        Err(Error::input(anyhow::anyhow!(
            "--repo-mirror {}: not a directory",
            self.repo_mirror.display()
        ))
        .with_hint(MIRROR_HINT))
    }

    /// The custom type is asked for but there is no interpreter to apply it with.
    pub fn custom_without_python(&self) -> bool {
        self.patch_types.contains(&PatchType::Custom) && self.python.is_none()
    }
}

/// Why an instance has no source of base files.
#[derive(Debug)]
pub enum NoSource {
    /// No mirror of the repository where one was looked for.
    Missing { repo: String, looked_for: PathBuf },
    /// The mirror is there but cannot be read.
    Unusable {
        repo: String,
        looked_for: PathBuf,
        commit: String,
        error: GitError,
    },
}

impl NoSource {
    /// What is wrong.
    pub fn reason(&self) -> String {
        match self {
            NoSource::Missing { repo, looked_for } => format!(
                "no mirror of {repo}: {} does not exist",
                looked_for.display()
            ),
            NoSource::Unusable { repo, error, .. } => {
                format!("the mirror of {repo} is unusable: {error}")
            }
        }
    }

    /// What to do about it.
    pub fn fix(&self) -> String {
        match self {
            NoSource::Missing { repo, looked_for } => format!(
                "create it with `git clone --mirror https://github.com/{repo} {}`",
                looked_for.display()
            ),
            NoSource::Unusable {
                looked_for, commit, ..
            } => format!(
                "check {} (a bare clone made with `git clone --mirror`) and that it holds \
                 commit {commit}",
                looked_for.display()
            ),
        }
    }
}

/// What came of one instance.
#[derive(Debug)]
pub enum InstanceExtraction {
    /// Nothing was tried: there is no mirror to read the base files from.
    NoSource(NoSource),
    /// The extraction (possibly reused from the cache; it may have failed on every type).
    Extracted {
        result: CachedExtraction,
        /// The diff written (empty when every attempt failed).
        patch_path: PathBuf,
    },
}

impl InstanceExtraction {
    pub fn succeeded(&self) -> bool {
        matches!(self, InstanceExtraction::Extracted { result, .. } if result.extraction.succeeded())
    }
}

/// How many instances produced a patch and how many did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtractSummary {
    pub ok: usize,
    pub failed: usize,
}

/// Extracts the prediction of every instance that has one, in dataset order, reporting each to
/// `on_instance` (with its id). Fails only when the cache cannot be written.
pub fn extract_predictions(
    settings: &ExtractSettings,
    instances: &[Instance],
    predictions: &LoadedPredictions,
    on_instance: &mut dyn FnMut(&str, &InstanceExtraction),
) -> Result<ExtractSummary> {
    let python = settings.python.as_ref().map(HostPython::new);
    let mut summary = ExtractSummary::default();
    for instance in instances {
        let Some(prediction) = predictions.predictions.get(&instance.instance_id) else {
            continue;
        };
        let raw = prediction.model_patch.clone().unwrap_or_default();
        let outcome = match locate(&settings.repo_mirror, instance) {
            Err(no_source) => InstanceExtraction::NoSource(*no_source),
            Ok(source) => {
                let log_dir = settings.output_dir.join(instance.instance_id.as_str());
                let runner = python.as_ref().map(|p| p as &dyn PythonRunner);
                let types = &settings.patch_types;
                let options = &settings.options;
                let result = load_or_extract(&log_dir, &raw, types, options, || {
                    extract(&raw, types, &source, runner, options)
                })
                .map_err(Error::environment)?;
                InstanceExtraction::Extracted {
                    result,
                    patch_path: log_dir.join(PATCH_FILE),
                }
            }
        };
        if outcome.succeeded() {
            summary.ok += 1;
        } else {
            summary.failed += 1;
        }
        on_instance(instance.instance_id.as_str(), &outcome);
    }
    Ok(summary)
}

fn locate(mirror_dir: &Path, instance: &Instance) -> Result<GitMirrorSource, Box<NoSource>> {
    let looked_for = mirror_dir.join(mirror_dir_name(&instance.repo));
    match GitMirrorSource::locate(mirror_dir, &instance.repo, &instance.base_commit) {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err(Box::new(NoSource::Missing {
            repo: instance.repo.clone(),
            looked_for,
        })),
        Err(error) => Err(Box::new(NoSource::Unusable {
            repo: instance.repo.clone(),
            looked_for,
            commit: instance.base_commit.clone(),
            error,
        })),
    }
}
