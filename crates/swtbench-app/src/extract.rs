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
    extract, needs_extraction, passthrough_extraction, ExtractOptions, FileSource, GitMirrorSource,
    HostPython, MemorySource, PatchType, PythonRunner,
};

use crate::lines::Line;
use crate::{Error, Result};

const MIRROR_HINT: &str =
    "create mirrors with `git clone --mirror https://github.com/<owner>/<name> DIR/<owner>__<name>.git`";

/// What to extract, from where, to where.
#[derive(Debug, Clone)]
pub struct ExtractSettings {
    /// Directory of bare mirrors `<owner>__<name>.git` holding the base commits; not needed
    /// when `vanilla` is the only patch type (the prediction is passed through, nothing is read).
    pub repo_mirror: Option<PathBuf>,
    /// Where `<instance>/extracted_patch.diff` and its companions go.
    pub output_dir: PathBuf,
    /// Tried in order until one produces a change.
    pub patch_types: Vec<PatchType>,
    pub options: ExtractOptions,
    /// The interpreter for the custom type; without it that type fails for every instance.
    pub python: Option<PathBuf>,
}

impl ExtractSettings {
    /// The mirror directory exists, or is not needed (checked before anything is loaded).
    pub fn check_repo_mirror(&self) -> Result<()> {
        match &self.repo_mirror {
            Some(dir) if dir.is_dir() => Ok(()),
            Some(dir) => Err(Error::input(anyhow::anyhow!(
                "--repo-mirror {}: not a directory",
                dir.display()
            ))
            .with_hint(MIRROR_HINT)),
            None if !needs_extraction(&self.patch_types) => Ok(()),
            None => Err(Error::input(anyhow::anyhow!(
                "--repo-mirror is needed for --patch-types {}: the base files are read from \
                 the mirrors (only `vanilla` alone reads nothing)",
                self.patch_types
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            ))
            .with_hint(MIRROR_HINT)),
        }
    }

    /// The custom type is asked for but there is no interpreter to apply it with.
    pub fn custom_without_python(&self) -> bool {
        self.patch_types.contains(&PatchType::Custom) && self.python.is_none()
    }

    /// The warning when the custom type cannot work ([`Self::custom_without_python`]).
    pub fn python_warning(&self) -> Option<Line> {
        self.custom_without_python().then(|| {
            Line::Warn(
                "the custom type needs --python here; it will fail for every instance".into(),
            )
        })
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
    /// There is a patch that `swtbench run` would apply: a type succeeded, or every type failed
    /// but parity-style attempts kept edits ([`swtbench_extract::Extraction::is_partial`]).
    pub fn succeeded(&self) -> bool {
        matches!(self, InstanceExtraction::Extracted { result, .. } if result.extraction.has_patch())
    }
}

impl InstanceExtraction {
    /// What `extract` says of one instance: a line on stdout (tab-separated, or a JSON object),
    /// and a warning when the instance had no source.
    pub fn lines(&self, id: &str, json: bool) -> Vec<Line> {
        use serde_json::json;
        let mut out = Vec::new();
        match self {
            InstanceExtraction::NoSource(no_source) => {
                let reason = no_source.reason();
                out.push(Line::Warn(format!("{id}: {reason}; {}", no_source.fix())));
                if json {
                    out.push(Line::Data(
                        json!({
                            "instance_id": id,
                            "patch_type_used": null,
                            "reused": false,
                            "attempts": [],
                            "error": reason,
                        })
                        .to_string(),
                    ));
                } else {
                    out.push(Line::Data(format!("{id}\tfailed\t{reason}")));
                }
            }
            InstanceExtraction::Extracted { result, patch_path } => {
                let ex = &result.extraction;
                if json {
                    out.push(Line::Data(
                        json!({
                            "instance_id": id,
                            "patch_type_used": ex.patch_type_used,
                            "partial": ex.is_partial(),
                            "reused": result.reused,
                            "attempts": ex.attempts,
                            "patch": patch_path,
                        })
                        .to_string(),
                    ));
                } else {
                    let used = match ex.patch_type_used {
                        Some(t) => t.as_str(),
                        None if ex.is_partial() => "partial",
                        None => "failed",
                    };
                    let reasons = ex.failure_summary().replace('\n', "; ");
                    out.push(Line::Data(format!("{id}\t{used}\t{reasons}")));
                }
            }
        }
        out
    }
}

/// How many instances produced a patch and how many did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtractSummary {
    pub ok: usize,
    pub failed: usize,
}

impl ExtractSummary {
    /// The last line of `extract`, which wrote under `output_dir`.
    pub fn line(&self, output_dir: &std::path::Path) -> String {
        format!(
            "{} extracted, {} failed; written under {}",
            self.ok,
            self.failed,
            output_dir.display()
        )
    }
}

/// Extracts the prediction of every instance that has one, in dataset order, reporting each to
/// `on_instance` (with its id). Fails only when a needed mirror directory is missing or the
/// cache cannot be written.
pub fn extract_predictions(
    settings: &ExtractSettings,
    instances: &[Instance],
    predictions: &LoadedPredictions,
    on_instance: &mut dyn FnMut(&str, &InstanceExtraction),
) -> Result<ExtractSummary> {
    settings.check_repo_mirror()?;
    let needs = needs_extraction(&settings.patch_types);
    let python = settings.python.as_ref().map(HostPython::new);
    let mut summary = ExtractSummary::default();
    for instance in instances {
        let Some(prediction) = predictions.predictions.get(&instance.instance_id) else {
            continue;
        };
        let raw = prediction.model_patch.clone().unwrap_or_default();
        // `vanilla` alone passes the prediction through (as `swtbench run` does) and reads no
        // base file, so it needs no mirror.
        let source: Box<dyn FileSource> = match (needs, &settings.repo_mirror) {
            (true, Some(dir)) => match locate(dir, instance) {
                Ok(source) => Box::new(source),
                Err(no_source) => {
                    let outcome = InstanceExtraction::NoSource(*no_source);
                    summary.failed += 1;
                    on_instance(instance.instance_id.as_str(), &outcome);
                    continue;
                }
            },
            // `check_repo_mirror` refused a missing mirror where one is needed.
            _ => Box::new(MemorySource::default()),
        };
        let log_dir = settings.output_dir.join(instance.instance_id.as_str());
        let runner = python.as_ref().map(|p| p as &dyn PythonRunner);
        let types = &settings.patch_types;
        let options = &settings.options;
        let result = load_or_extract(&log_dir, &raw, types, options, || {
            if needs {
                extract(&raw, types, source.as_ref(), runner, options)
            } else {
                passthrough_extraction(&raw)
            }
        })
        .map_err(Error::environment)?;
        let outcome = InstanceExtraction::Extracted {
            result,
            patch_path: log_dir.join(PATCH_FILE),
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
