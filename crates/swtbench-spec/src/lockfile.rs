//! Environment lock files: per environment the exact package set `swtbench envs lock` resolved
//! once, which later evaluations (`--env-lock FILE`) install exactly, with `--no-deps`.
//!
//! An entry belongs to one `(repo, version)` and to the environment its instances get *without*
//! the lock, named by that environment's image key (`unlocked_env`): the key covers the Python
//! image and every install input (the spec's packages, requirement files, `pip_packages`, frozen
//! pins), so an entry never applies to an environment made from other inputs. An instance whose
//! environment has an entry gets a `setup_env.sh` that installs the entry's pins and nothing else;
//! the pins are in the script, so they are in the env image key and, through it, in the content
//! key of every run on that environment. Instances without an entry are rendered exactly as
//! without the lock.
//!
//! This module parses, checks and renders lock files and plans what `envs lock` has to resolve.
//! It reads no files and runs nothing: the resolving happens in the application layer.
//!
//! # File format (version 1)
//!
//! TOML, written sorted by repository, version and `unlocked_env`, pins sorted as text (as the
//! frozen pins are, so a frozen environment written as it is keeps its image key):
//!
//! ```toml
//! format = 1
//!
//! [[env]]
//! repo = "swtfix/calc"
//! version = "0.1"
//! provider = "uv"
//! python = "3.11"
//! python_image = "python:3.11-slim-bookworm"
//! unlocked_env = "exec.env.x86_64.0123456789abcdef012345:latest"
//! source = "resolved"          # or "frozen": the frozen SWE-bench pins, written as they are
//! origin = "uv pip freeze after the spec's install in python:3.11-slim-bookworm (uv 0.9.5)"
//! instances = ["swtfix__calc-1", "swtfix__calc-2"]
//! pins = [
//!     "iniconfig==2.0.0",
//!     "pytest==8.3.3",
//! ]
//! ```
//!
//! `instances` says which instances the entry was made for; an instance listed there whose
//! environment no longer has the entry's `unlocked_env` (the spec entry, the provider or the
//! Python image changed since) is refused rather than silently evaluated unlocked.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::provider::Provider;

/// The lock file format this swtbench reads and writes.
pub const LOCK_FORMAT: u32 = 1;

/// The lock compiled into the binary ([`EnvLock::embedded`]).
pub const EMBEDDED_LOCK: &str = include_str!("../../../assets/environments/uv.lock");
/// How the embedded lock is named in messages.
pub const EMBEDDED_LOCK_ORIGIN: &str = "the embedded lock (assets/environments/uv.lock)";

/// Where an entry's pins came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockSource {
    /// Installed once from the spec's inputs in a throwaway container, then frozen.
    Resolved,
    /// The instance's frozen SWE-bench pins, written as they are (already exact).
    Frozen,
}

impl LockSource {
    pub fn as_str(self) -> &'static str {
        match self {
            LockSource::Resolved => "resolved",
            LockSource::Frozen => "frozen",
        }
    }

    fn parse(s: &str) -> Option<LockSource> {
        match s {
            "resolved" => Some(LockSource::Resolved),
            "frozen" => Some(LockSource::Frozen),
            _ => None,
        }
    }
}

/// One locked environment of one `(repo, version)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockEntry {
    pub repo: String,
    pub version: String,
    pub provider: Provider,
    /// The spec entry's `python`.
    pub python: Option<String>,
    /// The image the environment builds on.
    pub python_image: String,
    /// The env image key the entry's instances get without the lock.
    pub unlocked_env: String,
    pub source: LockSource,
    /// How the pins were obtained, for people.
    pub origin: String,
    /// The instances the entry was made for, sorted.
    pub instances: Vec<String>,
    /// `name==version` (or any one-line requirement), sorted as text.
    pub pins: Vec<String>,
    /// Line of the entry's `[[env]]` in the file it was read from (0 when made in memory).
    pub line: usize,
}

/// A whole lock file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnvLock {
    /// The file it was read from (names it in errors and in `envs show`).
    pub origin: String,
    /// Sorted by repository, version and `unlocked_env`.
    pub entries: Vec<LockEntry>,
    /// The lock compiled into the binary ([`EnvLock::embedded`]), applied by default: an
    /// environment it has an entry for but that no longer renders the entry's `unlocked_env` (a
    /// `--python-image`, a `--spec-table` of one's own) is built unlocked with a warning instead
    /// of being refused.
    pub default: bool,
}

/// Why a lock file cannot be used. Messages name the file and, where there is one, the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    #[error("{origin}: not a valid environment lock file: {message}")]
    Syntax { origin: String, message: String },
    #[error("{origin}:{line}: {message}")]
    Invalid {
        origin: String,
        line: usize,
        message: String,
    },
}

#[derive(Deserialize)]
struct FileHead {
    format: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLock {
    #[expect(
        dead_code,
        reason = "read so that deny_unknown_fields accepts the key; FileHead checks its value"
    )]
    format: u32,
    #[serde(default)]
    env: Vec<toml::Spanned<FileEntry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntry {
    repo: String,
    version: String,
    provider: String,
    python: Option<String>,
    python_image: String,
    unlocked_env: String,
    source: String,
    origin: String,
    #[serde(default)]
    instances: Vec<String>,
    pins: Vec<String>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Why a pin cannot go into a requirements file as one requirement (`None`: it can).
fn bad_pin(pin: &str) -> Option<&'static str> {
    if pin.trim().is_empty() {
        Some("is empty")
    } else if pin.contains(['\n', '\r']) {
        Some("spans lines")
    } else if !pin.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        Some("does not start with a package name (options such as -e or --index-url are not pins)")
    } else if pin.contains(crate::reqs::ENV_HEREDOC) {
        Some("contains the setup script's heredoc delimiter")
    } else {
        None
    }
}

impl EnvLock {
    /// Parses a lock file. `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<EnvLock, LockError> {
        let syntax = |message: String| LockError::Syntax {
            origin: origin.to_string(),
            message: message.trim_end().to_string(),
        };
        let head: FileHead = toml::from_str(text).map_err(|e| syntax(e.to_string()))?;
        match head.format {
            Some(LOCK_FORMAT) => {}
            Some(f) => {
                return Err(syntax(format!(
                    "format = {f} (this swtbench reads format {LOCK_FORMAT}; write the file again with its `swtbench envs lock`)"
                )))
            }
            None => return Err(syntax("`format = 1` is missing".to_string())),
        }
        let file: FileLock = toml::from_str(text).map_err(|e| syntax(e.to_string()))?;
        let mut entries = Vec::with_capacity(file.env.len());
        let mut seen: BTreeMap<(String, String, String), usize> = BTreeMap::new();
        for spanned in file.env {
            let line = line_of(text, spanned.span().start);
            let e = spanned.into_inner();
            let invalid = |message: String| LockError::Invalid {
                origin: origin.to_string(),
                line,
                message,
            };
            let what = format!("entry {} {}", e.repo, e.version);
            let provider = Provider::parse(&e.provider).ok_or_else(|| {
                invalid(format!(
                    "{what}: provider = {:?} is unknown (use \"uv\")",
                    e.provider
                ))
            })?;
            if provider != Provider::Uv {
                return Err(invalid(format!(
                    "{what}: provider = {:?}: only uv environments can be locked",
                    e.provider
                )));
            }
            let source = LockSource::parse(&e.source).ok_or_else(|| {
                invalid(format!(
                    "{what}: source = {:?} is unknown (use \"resolved\" or \"frozen\")",
                    e.source
                ))
            })?;
            for (field, value) in [
                ("repo", &e.repo),
                ("version", &e.version),
                ("python_image", &e.python_image),
                ("unlocked_env", &e.unlocked_env),
            ] {
                if value.trim().is_empty() {
                    return Err(invalid(format!("{what}: `{field}` is empty")));
                }
            }
            if let Some((pin, why)) = e.pins.iter().find_map(|p| bad_pin(p).map(|w| (p, w))) {
                return Err(invalid(format!("{what}: pin {pin:?} {why}")));
            }
            let id = (e.repo.clone(), e.version.clone(), e.unlocked_env.clone());
            if let Some(first) = seen.insert(id, line) {
                return Err(invalid(format!(
                    "{what}: the environment {} is locked twice (first at line {first})",
                    e.unlocked_env
                )));
            }
            let mut instances = e.instances;
            instances.sort();
            let mut pins = e.pins;
            pins.sort();
            entries.push(LockEntry {
                repo: e.repo,
                version: e.version,
                provider,
                python: e.python,
                python_image: e.python_image,
                unlocked_env: e.unlocked_env,
                source,
                origin: e.origin,
                instances,
                pins,
                line,
            });
        }
        Ok(EnvLock::new(origin, entries))
    }

    /// A lock of `entries`, sorted (entries, their instances and their pins).
    pub fn new(origin: &str, mut entries: Vec<LockEntry>) -> EnvLock {
        for e in &mut entries {
            e.instances.sort();
            e.pins.sort();
        }
        entries.sort_by(|a, b| {
            (&a.repo, &a.version, &a.unlocked_env).cmp(&(&b.repo, &b.version, &b.unlocked_env))
        });
        EnvLock {
            origin: origin.to_string(),
            entries,
            default: false,
        }
    }

    /// The lock compiled into the binary: `assets/environments/uv.lock` (written by `swtbench
    /// envs lock` over SWT-Bench Lite ∪ Verified with `--env-provider uv`; only the environments
    /// it resolved are kept, the frozen ones being the embedded frozen pins already). `run`
    /// applies it by default to uv environments (`--env-lock FILE` replaces it, `--no-env-lock`
    /// leaves it out); entries for environments the table does not have with the same provider
    /// and Python are dropped (see [`EnvLock::keep_matching`]).
    pub fn embedded() -> EnvLock {
        // Checked by this crate's tests; failing here is a build defect.
        let mut lock = EnvLock::parse(EMBEDDED_LOCK, EMBEDDED_LOCK_ORIGIN)
            .expect("the embedded environment lock parses");
        lock.default = true;
        lock
    }

    /// The file text: deterministic (sorted, no dates), so equal locks are equal files.
    pub fn render(&self) -> String {
        let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let mut out = String::new();
        out.push_str("# swtbench environment lock, written by `swtbench envs lock`.\n");
        out.push_str(
            "# `--env-lock FILE` installs each environment below exactly (--no-deps); see docs/environments.md.\n",
        );
        out.push_str(&format!("format = {LOCK_FORMAT}\n"));
        for e in &self.entries {
            out.push_str("\n[[env]]\n");
            out.push_str(&format!("repo = {}\n", q(&e.repo)));
            out.push_str(&format!("version = {}\n", q(&e.version)));
            out.push_str(&format!("provider = {}\n", q(e.provider.as_str())));
            if let Some(p) = &e.python {
                out.push_str(&format!("python = {}\n", q(p)));
            }
            out.push_str(&format!("python_image = {}\n", q(&e.python_image)));
            out.push_str(&format!("unlocked_env = {}\n", q(&e.unlocked_env)));
            out.push_str(&format!("source = {}\n", q(e.source.as_str())));
            out.push_str(&format!("origin = {}\n", q(&e.origin)));
            let instances: Vec<String> = e.instances.iter().map(|i| q(i)).collect();
            out.push_str(&format!("instances = [{}]\n", instances.join(", ")));
            out.push_str("pins = [\n");
            for p in &e.pins {
                out.push_str(&format!("    {},\n", q(p)));
            }
            out.push_str("]\n");
        }
        out
    }

    /// The entry of the environment `unlocked_env` of `(repo, version)`.
    pub fn find(&self, repo: &str, version: &str, unlocked_env: &str) -> Option<&LockEntry> {
        self.entries
            .iter()
            .find(|e| e.repo == repo && e.version == version && e.unlocked_env == unlocked_env)
    }

    /// An entry of `(repo, version)` made for `instance_id` (for the stale-entry check).
    pub fn made_for(&self, instance_id: &str, repo: &str, version: &str) -> Option<&LockEntry> {
        self.entries.iter().find(|e| {
            e.repo == repo && e.version == version && e.instances.iter().any(|i| i == instance_id)
        })
    }
}

/// The requirements `pip freeze`/`uv pip freeze` printed, sorted as text: blank lines and
/// comments dropped.
pub fn parse_freeze(text: &str) -> Vec<String> {
    let mut pins: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    pins.sort();
    pins.dedup();
    pins
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    fn entry(repo: &str, env: &str, pins: &[&str]) -> LockEntry {
        LockEntry {
            repo: repo.into(),
            version: "0.1".into(),
            provider: Provider::Uv,
            python: Some("3.11".into()),
            python_image: "python:3.11-slim-bookworm".into(),
            unlocked_env: env.into(),
            source: LockSource::Resolved,
            origin: "uv pip freeze \"quoted\"".into(),
            instances: vec!["b__c-2".into(), "a__b-1".into()],
            pins: pins.iter().map(|p| p.to_string()).collect(),
            line: 0,
        }
    }

    #[test]
    fn render_parse_round_trip_is_sorted_and_stable() {
        let lock = EnvLock::new(
            "x.lock",
            vec![
                entry("z/z", "exec.env.x86_64.b:latest", &["b==1"]),
                entry(
                    "a/a",
                    "exec.env.x86_64.a:latest",
                    &[
                        "Pytest==8.3.3",
                        "iniconfig==2.0.0",
                        "name @ https://x/y.whl",
                    ],
                ),
            ],
        );
        assert_eq!(lock.entries[0].repo, "a/a");
        let text = lock.render();
        let back = EnvLock::parse(&text, "x.lock").unwrap();
        assert_eq!(back.render(), text);
        assert_eq!(back.entries.len(), 2);
        assert_eq!(back.entries[0].line, 5, "{text}");
        assert_eq!(
            back.entries[0].pins,
            [
                "Pytest==8.3.3",
                "iniconfig==2.0.0",
                "name @ https://x/y.whl"
            ]
        );
        assert_eq!(back.entries[0].instances, ["a__b-1", "b__c-2"]);
        assert_eq!(back.entries[0].origin, "uv pip freeze \"quoted\"");
        let mut stripped: Vec<LockEntry> = back.entries.clone();
        for e in &mut stripped {
            e.line = 0;
        }
        let mut want = lock.entries.clone();
        for e in &mut want {
            e.pins.sort();
            e.instances.sort();
        }
        assert_eq!(stripped, want);
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let good = EnvLock::new("l", vec![entry("a/a", "k1", &["x==1"])]).render();
        let cases: Vec<(String, &str)> = vec![
            (good.replace("format = 1", "format = 7"), "format = 7"),
            (good.replace("format = 1\n", ""), "format = 1` is missing"),
            (good.replace("pins = [", "pinz = ["), "line"),
            (good.replace("\"uv\"", "\"conda\""), "only uv"),
            (good.replace("\"resolved\"", "\"guessed\""), "guessed"),
            (
                good.replace("\"x==1\"", "\"--index-url=http://x\""),
                "not pins",
            ),
            (
                format!("{good}{}", &good[good.find("\n[[env]]").unwrap()..]),
                "locked twice",
            ),
        ];
        for (text, needle) in cases {
            let e = EnvLock::parse(&text, "team.lock").unwrap_err().to_string();
            assert!(
                e.contains("team.lock") && e.contains(needle),
                "{needle}: {e}"
            );
        }
        // Semantic errors point at the entry's [[env]] line.
        let text = good.replace("\"resolved\"", "\"guessed\"");
        let e = EnvLock::parse(&text, "team.lock").unwrap_err().to_string();
        assert!(e.starts_with("team.lock:5: entry a/a 0.1"), "{e}");
        // Syntax errors carry the parser's line.
        let e = EnvLock::parse("format = 1\n[[env]\n", "t.lock")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.lock") && e.contains("line 2"), "{e}");
    }

    #[test]
    fn freeze_output_is_sorted_by_name() {
        assert_eq!(
            parse_freeze("# c\npytest==8.3.3\n\nIniconfig==2.0.0\npluggy==1.5.0\n"),
            ["Iniconfig==2.0.0", "pluggy==1.5.0", "pytest==8.3.3"]
        );
    }
}
