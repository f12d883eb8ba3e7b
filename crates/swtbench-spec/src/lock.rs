//! Environment locks against a spec table: checking a lock file's entries against the table a run
//! uses, the pins an entry gives the renderer, and the jobs of `swtbench envs lock` (one per
//! distinct environment) with the entries they write. The file format and its parsing are in
//! [`crate::lockfile`], re-exported here.

use std::collections::BTreeMap;

pub use crate::lockfile::*;
use crate::render::{EnvPins, ExecSpec};
use crate::table::{Provider, SpecTable};

impl EnvLock {
    /// This lock without the entries that do not match `table` (see [`EnvLock::check`]), and
    /// how many were dropped: what applying the embedded lock to a table of one's own does.
    pub fn keep_matching(mut self, table: &SpecTable) -> (EnvLock, usize) {
        let before = self.entries.len();
        let origin = self.origin.clone();
        self.entries.retain(|e| {
            let one = EnvLock {
                origin: origin.clone(),
                entries: vec![e.clone()],
                default: false,
            };
            one.check(table).is_ok()
        });
        let dropped = before - self.entries.len();
        (self, dropped)
    }

    /// Checks every entry against the table the run uses: its `(repo, version)` is there, with
    /// the entry's provider and Python. An entry that matches no table entry is an error naming
    /// it, so a lock made for another table or provider is never half-applied.
    pub fn check(&self, table: &SpecTable) -> Result<(), LockError> {
        for e in &self.entries {
            let invalid = |message: String| LockError::Invalid {
                origin: self.origin.clone(),
                line: e.line,
                message,
            };
            let what = format!("entry {} {}", e.repo, e.version);
            let entry = table
                .lookup(&e.repo, &e.version)
                .map_err(|err| invalid(format!("{what} matches no environment: {err}")))?;
            if entry.spec.provider != e.provider {
                return Err(invalid(format!(
                    "{what} is locked for provider {}, but the spec table's entry uses {} (pass the --env-provider the lock was made with)",
                    e.provider.as_str(),
                    entry.spec.provider.as_str()
                )));
            }
            if entry.spec.python != e.python {
                return Err(invalid(format!(
                    "{what} is locked for Python {}, but the spec table's entry has {} (write the lock again with `swtbench envs lock`)",
                    e.python.as_deref().unwrap_or("(none)"),
                    entry.spec.python.as_deref().unwrap_or("(none)")
                )));
            }
        }
        Ok(())
    }
}

impl LockEntry {
    /// The pins as the renderer installs them.
    pub(crate) fn env_pins(&self, origin: &str, frozen: Option<&EnvPins>) -> EnvPins {
        let line = if self.line > 0 {
            format!(":{}", self.line)
        } else {
            String::new()
        };
        EnvPins {
            pins: self.pins.clone(),
            frozen_python: frozen
                .map(|f| f.frozen_python.clone())
                .or_else(|| self.python.clone())
                .unwrap_or_default(),
            source: format!(
                "environment lock {origin}{line} ({}: {})",
                self.source.as_str(),
                self.origin
            ),
            dropped: frozen.map(|f| f.dropped.clone()).unwrap_or_default(),
        }
    }
}

/// One environment `envs lock` has to write: the `(repo, version)`s and instances that share it,
/// and how to get its pins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockJob {
    /// The env image key without a lock (what the entries' `unlocked_env` will be).
    pub unlocked_env: String,
    /// The image to resolve in (the environment's base).
    pub python_image: String,
    pub platform: &'static str,
    pub python: Option<String>,
    /// `(repo, version)` → its instances, sorted.
    pub entries: BTreeMap<(String, String), Vec<String>>,
    pub how: LockHow,
}

/// How a job's pins are obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockHow {
    /// The environment already installs frozen pins: written as they are.
    Frozen { pins: Vec<String>, source: String },
    /// Run `script` in a throwaway container of `python_image` (network on); it leaves the frozen
    /// package set, one requirement a line, in `output`.
    Resolve { script: String, output: String },
}

/// Where the resolve script leaves the installed set.
pub const LOCK_OUTPUT_PATH: &str = "/tmp/swtbench-env-lock.txt";

/// The environments of `specs` (one job per distinct env image key), or the instances whose
/// environment cannot be locked (not uv) with the reason.
pub fn lock_jobs(specs: &[ExecSpec]) -> Result<Vec<LockJob>, Vec<(String, String)>> {
    let mut jobs: BTreeMap<String, LockJob> = BTreeMap::new();
    let mut refused = Vec::new();
    for spec in specs {
        if spec.provider() != Provider::Uv {
            refused.push((
                spec.instance_id.clone(),
                format!(
                    "{} {} uses provider {}: only uv environments can be locked (add --env-provider uv)",
                    spec.repo,
                    spec.version,
                    spec.provider().as_str()
                ),
            ));
            continue;
        }
        let job = jobs
            .entry(spec.keys.env.clone())
            .or_insert_with(|| LockJob {
                unlocked_env: spec.keys.env.clone(),
                python_image: spec.keys.base.clone(),
                platform: spec.platform(),
                python: spec.spec.python.clone(),
                entries: BTreeMap::new(),
                how: match &spec.pins {
                    Some(p) => LockHow::Frozen {
                        pins: p.pins.clone(),
                        source: p.source.clone(),
                    },
                    None => LockHow::Resolve {
                        script: spec.lock_script(LOCK_OUTPUT_PATH),
                        output: LOCK_OUTPUT_PATH.to_string(),
                    },
                },
            });
        let ids = job
            .entries
            .entry((spec.repo.clone(), spec.version.clone()))
            .or_default();
        ids.push(spec.instance_id.clone());
        ids.sort();
    }
    if refused.is_empty() {
        Ok(jobs.into_values().collect())
    } else {
        Err(refused)
    }
}

/// The entries of one job once its pins are known.
pub fn job_entries(job: &LockJob, pins: Vec<String>, origin: String) -> Vec<LockEntry> {
    let source = match job.how {
        LockHow::Frozen { .. } => LockSource::Frozen,
        LockHow::Resolve { .. } => LockSource::Resolved,
    };
    let mut pins = pins;
    pins.sort();
    job.entries
        .iter()
        .map(|((repo, version), instances)| LockEntry {
            repo: repo.clone(),
            version: version.clone(),
            provider: Provider::Uv,
            python: job.python.clone(),
            python_image: job.python_image.clone(),
            unlocked_env: job.unlocked_env.clone(),
            source,
            origin: origin.clone(),
            instances: instances.clone(),
            pins: pins.clone(),
            line: 0,
        })
        .collect()
}
