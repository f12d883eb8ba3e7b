//! The spec table: per repository and version, how the evaluation environment is installed and how
//! the tests run (§9 of the behaviour reference), as typed data.
//!
//! The table ships inside the binary (`assets/spec-table/swtbench.toml`, converted from the
//! original harness's `constants.py`) and users add or replace entries with `--spec-table FILE` in
//! the same format. This module parses and merges tables and answers lookups; it never reads files
//! itself: a `base_dockerfile` path is resolved through a reader the caller passes in.
//!
//! # File format (version 1)
//!
//! TOML (or the same structure as JSON, for files ending in `.json`):
//!
//! ```toml
//! format = 1                                  # optional; must be 1 when present
//! non_test_extensions = [".json", "csv"]      # optional; replaces the default list
//! use_x86 = ["astropy__astropy-7973"]         # optional; added to the list
//!
//! [repos."owner/name"]
//! test_command = "pytest -rA"                 # test command prefix for every version
//! requirements_paths = ["requirements.txt"]   # tried in order for packages = "requirements.txt"
//! environment_yml_paths = ["environment.yml"] # tried in order for packages = "environment.yml"
//! repo_install = "…"                          # extra setup_repo.sh line (the original's MAP_REPO_TO_INSTALL)
//! non_test_extensions = [".json"]             # per-repository override of the list above
//! log_parser = "pytest"                       # log parser of a repository the original has none for
//!
//! [[repos."owner/name".specs]]
//! versions = ["1.0", "1.1"]                   # the entry applies to each of these versions
//! python = "3.9"
//! packages = "requirements.txt"               # or "environment.yml", or a conda package list
//! install = "python -m pip install -e ."
//! pip_packages = ["pytest==7.4.0"]
//! pre_install = ["apt-get install -y foo"]
//! eval_commands = ["export LANG=C.UTF-8"]
//! no_use_env = false
//! execute_test_as_nonroot = false
//! test_cmd = "…"                              # kept from the original table, never used
//! test_command = "pytest -rA -x"              # overrides the repository's test_command
//! provider = "conda"                          # or "venv" or "uv"
//! base_image = "my-base:tag"                  # an existing local image …
//! base_dockerfile = "base.Dockerfile"         # … or a Dockerfile (relative to the table file)
//! interpreter = "python3"                     # venv only: the interpreter that creates the venv
//! python_image = "python:{version}-slim"       # uv only: the Python image ({version} = python)
//! frozen_pins = true                          # uv only: the instance's frozen SWE-bench pins
//! no_deps = true                              # install packages without their dependencies
//! ```
//!
//! Unknown keys are errors, so typos do not silently change an environment. When a table is merged
//! over another, every repository-level key that is present replaces the old value, and every
//! `(repo, version)` entry replaces the old entry for that version as a whole.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde::Deserialize;

use crate::build_files::BuildFiles;
use crate::error::{ReadError, SpecError};
use crate::lockfile::{EnvLock, LockError};
pub use crate::provider::Provider;

/// The table compiled into the binary.
pub const EMBEDDED_TABLE: &str = include_str!("../../../assets/spec-table/swtbench.toml");

/// The Python image the `uv` provider builds on when an entry names none: `{version}` is the
/// entry's `python`.
pub const DEFAULT_PYTHON_IMAGE: &str = "python:{version}-slim-bookworm";

/// The oldest Python uv creates environments for.
pub const UV_MIN_PYTHON: (u32, u32) = (3, 8);

/// `template` with `{version}` replaced by `python`.
pub fn python_image(template: &str, python: &str) -> String {
    template.replace("{version}", python)
}

/// Which image the env image is built on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BaseImage {
    /// The original's Ubuntu 22.04 + Miniconda image, rendered from its template.
    #[default]
    Default,
    /// An image that already exists locally (never built, never pulled by swtbench).
    Image(String),
    /// A Dockerfile supplied by the user; `text` is its content, read when the table was loaded.
    Dockerfile { path: String, text: String },
}

/// One `(repo, version)` entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VersionSpec {
    /// Python version (conda) or the expected interpreter version (venv, informational).
    pub python: Option<String>,
    /// `"requirements.txt"`, `"environment.yml"` or a space-separated package list.
    pub packages: Option<String>,
    /// Installs the repository: run in the instance image and, by default, again in every eval.
    pub install: Option<String>,
    /// Installed with pip in the env image.
    pub pip_packages: Option<Vec<String>>,
    /// Run in the instance image before `install`.
    pub pre_install: Option<Vec<String>>,
    /// Run at the start of every eval script.
    pub eval_commands: Option<Vec<String>>,
    /// environment.yml style: `conda create` + `conda env update` instead of `conda env create`.
    pub no_use_env: Option<bool>,
    /// Run the tests as the `nonroot` user.
    pub execute_test_as_nonroot: Option<bool>,
    /// The original table's `test_cmd` (astropy 0.1–1.3), which the original never uses.
    pub test_cmd: Option<String>,
    /// Test command prefix for this version; falls back to the repository's.
    pub test_command: Option<String>,
    pub provider: Provider,
    pub base: BaseImage,
    /// venv only: the interpreter that creates the venv (default `python3`).
    pub interpreter: Option<String>,
    /// uv only: the Python image template (`{version}` = `python`) used when `base` is the
    /// default; `None` means [`DEFAULT_PYTHON_IMAGE`].
    pub python_image: Option<String>,
    /// Install packages without their dependencies (`--no-deps`), so the set is exactly the one
    /// listed.
    pub no_deps: Option<bool>,
    /// uv only: install the instance's frozen SWE-bench environment (see [`crate::pins`]) instead
    /// of `packages` and `pip_packages`.
    pub frozen_pins: Option<bool>,
}

impl VersionSpec {
    /// True for entries rendered exactly like the original (conda on the default base image):
    /// only these keep the original's key rule of hashing the script text alone.
    pub fn is_reference(&self) -> bool {
        self.provider == Provider::Conda && self.base == BaseImage::Default
    }

    pub fn runs_as_nonroot(&self) -> bool {
        self.execute_test_as_nonroot == Some(true)
    }
}

/// Repository-level entries plus the versions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RepoSpec {
    pub test_command: Option<String>,
    pub requirements_paths: Option<Vec<String>>,
    pub environment_yml_paths: Option<Vec<String>>,
    pub repo_install: Option<String>,
    pub non_test_extensions: Option<Vec<String>>,
    /// Name of the log parser for repositories the original's parser map does not know
    /// (`pytest`, `django`, `sympy`, …: the names `swtbench parse-log` accepts). Kept as text here;
    /// the grading side resolves it.
    pub log_parser: Option<String>,
    pub versions: BTreeMap<String, VersionSpec>,
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpecTable {
    /// `None` means the default list ([`swtbench_core::directives::DEFAULT_NON_TEST_EXTS`]).
    pub non_test_extensions: Option<Vec<String>>,
    pub use_x86: BTreeSet<String>,
    pub repos: BTreeMap<String, RepoSpec>,
    /// `--env-lock`: the environments installed exactly as a lock file says (see [`crate::lock`]).
    pub env_lock: Option<EnvLock>,
    /// `--build-files`: per repository, the files copied onto its checkouts before the install
    /// (see [`crate::build_files`]).
    pub build_files: BTreeMap<String, BuildFiles>,
    /// `--compiler-cache`: env images get ccache and instance builds share a cache per env image
    /// (see [`crate::compiler_cache`]).
    pub compiler_cache: bool,
}

/// A successful lookup.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub repo: &'a str,
    pub version: &'a str,
    pub repo_spec: &'a RepoSpec,
    pub spec: &'a VersionSpec,
}

impl<'a> Entry<'a> {
    /// The test command prefix (§9 `MAP_REPO_TO_TEST_FRAMEWORK`), if the table has one.
    pub fn test_command(&self) -> Option<&'a str> {
        self.spec
            .test_command
            .as_deref()
            .or(self.repo_spec.test_command.as_deref())
    }
}

/// Syntax of a table file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableSyntax {
    Toml,
    Json,
}

impl TableSyntax {
    /// JSON for names ending in `.json`, TOML otherwise.
    pub fn from_file_name(name: &str) -> TableSyntax {
        if name.to_ascii_lowercase().ends_with(".json") {
            TableSyntax::Json
        } else {
            TableSyntax::Toml
        }
    }
}

/// The entry `fs` of a table's repository (`at` names it in errors, made by `invalid`), with the
/// versions it is for; its `base_dockerfile` is read with `read_dockerfile`. An error when its
/// fields do not fit together.
fn version_spec(
    fs: FileSpec,
    at: &str,
    read_dockerfile: &dyn Fn(&str) -> Result<String, ReadError>,
    invalid: &dyn Fn(String) -> SpecError,
) -> Result<(Vec<String>, VersionSpec), SpecError> {
    if fs.versions.is_empty() {
        return Err(invalid(format!("{at}: `versions` is empty")));
    }
    let provider = match fs.provider.as_deref() {
        None => Provider::Conda,
        Some(p) => Provider::parse(p).ok_or_else(|| {
            invalid(format!(
                "{at}: provider = {p:?} is unknown (use \"conda\", \"venv\" or \"uv\")"
            ))
        })?,
    };
    let base = match (fs.base_image, fs.base_dockerfile) {
        (Some(_), Some(_)) => {
            return Err(invalid(format!(
                "{at}: give either `base_image` or `base_dockerfile`, not both"
            )))
        }
        (Some(image), None) => BaseImage::Image(image),
        (None, Some(path)) => {
            let text = read_dockerfile(&path)
                .map_err(|e| invalid(format!("{at}: cannot read base_dockerfile {path:?}: {e}")))?;
            BaseImage::Dockerfile { path, text }
        }
        (None, None) => BaseImage::Default,
    };
    if provider == Provider::Conda && fs.python.is_none() {
        return Err(invalid(format!(
            "{at}: `python` is required for conda environments"
        )));
    }
    if provider != Provider::Venv && fs.interpreter.is_some() {
        return Err(invalid(format!(
            "{at}: `interpreter` applies to provider = \"venv\" only"
        )));
    }
    if provider != Provider::Uv && (fs.python_image.is_some() || fs.frozen_pins.is_some()) {
        return Err(invalid(format!(
            "{at}: `python_image` and `frozen_pins` apply to provider = \"uv\" only"
        )));
    }
    if provider == Provider::Uv && base == BaseImage::Default && fs.python.is_none() {
        return Err(invalid(format!(
            "{at}: `python` is required for uv environments (it picks the Python image), unless `base_image` or `base_dockerfile` is given"
        )));
    }
    let spec = VersionSpec {
        python: fs.python,
        packages: fs.packages,
        install: fs.install,
        pip_packages: fs.pip_packages,
        pre_install: fs.pre_install,
        eval_commands: fs.eval_commands,
        no_use_env: fs.no_use_env,
        execute_test_as_nonroot: fs.execute_test_as_nonroot,
        test_cmd: fs.test_cmd,
        test_command: fs.test_command,
        provider,
        base,
        interpreter: fs.interpreter,
        python_image: fs.python_image,
        no_deps: fs.no_deps,
        frozen_pins: fs.frozen_pins,
    };
    Ok((fs.versions, spec))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTable {
    format: Option<u32>,
    non_test_extensions: Option<Vec<String>>,
    use_x86: Option<Vec<String>>,
    #[serde(default)]
    repos: BTreeMap<String, FileRepo>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepo {
    test_command: Option<String>,
    requirements_paths: Option<Vec<String>>,
    environment_yml_paths: Option<Vec<String>>,
    repo_install: Option<String>,
    non_test_extensions: Option<Vec<String>>,
    log_parser: Option<String>,
    #[serde(default)]
    specs: Vec<FileSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    versions: Vec<String>,
    python: Option<String>,
    packages: Option<String>,
    install: Option<String>,
    pip_packages: Option<Vec<String>>,
    pre_install: Option<Vec<String>>,
    eval_commands: Option<Vec<String>>,
    no_use_env: Option<bool>,
    execute_test_as_nonroot: Option<bool>,
    test_cmd: Option<String>,
    test_command: Option<String>,
    provider: Option<String>,
    base_image: Option<String>,
    base_dockerfile: Option<String>,
    interpreter: Option<String>,
    python_image: Option<String>,
    no_deps: Option<bool>,
    frozen_pins: Option<bool>,
}

impl SpecTable {
    /// The embedded table, parsed once.
    pub fn embedded() -> &'static SpecTable {
        static TABLE: OnceLock<SpecTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            // The embedded table is checked by this crate's tests; failing here is a build defect.
            SpecTable::parse(
                EMBEDDED_TABLE,
                "embedded spec table",
                TableSyntax::Toml,
                &|p| Err(format!("the embedded table cannot name a Dockerfile ({p})").into()),
            )
            .expect("the embedded spec table parses")
        })
    }

    /// Parses a table. `origin` names it in errors (a file path). `read_dockerfile` returns the
    /// content of a `base_dockerfile` path as written in the table (the caller resolves it
    /// relative to the table file).
    pub fn parse(
        text: &str,
        origin: &str,
        syntax: TableSyntax,
        read_dockerfile: &dyn Fn(&str) -> Result<String, ReadError>,
    ) -> Result<SpecTable, SpecError> {
        let file: FileTable = match syntax {
            TableSyntax::Toml => toml::from_str(text).map_err(|e| SpecError::TableSyntax {
                origin: origin.to_string(),
                message: e.to_string().trim_end().to_string(),
            })?,
            TableSyntax::Json => {
                serde_json::from_str(text).map_err(|e| SpecError::TableSyntax {
                    origin: origin.to_string(),
                    message: e.to_string(),
                })?
            }
        };
        let invalid = |message: String| SpecError::TableInvalid {
            origin: origin.to_string(),
            message,
        };
        if let Some(f) = file.format {
            if f != 1 {
                return Err(invalid(format!(
                    "format = {f} is not supported (this swtbench reads format 1)"
                )));
            }
        }
        let mut table = SpecTable {
            non_test_extensions: file.non_test_extensions,
            use_x86: file.use_x86.unwrap_or_default().into_iter().collect(),
            repos: BTreeMap::new(),
            env_lock: None,
            build_files: BTreeMap::new(),
            compiler_cache: false,
        };
        for (repo, frepo) in file.repos {
            let mut rs = RepoSpec {
                test_command: frepo.test_command,
                requirements_paths: frepo.requirements_paths,
                environment_yml_paths: frepo.environment_yml_paths,
                repo_install: frepo.repo_install,
                non_test_extensions: frepo.non_test_extensions,
                log_parser: frepo.log_parser,
                versions: BTreeMap::new(),
            };
            for (i, fs) in frepo.specs.into_iter().enumerate() {
                let at = format!("repos.\"{repo}\".specs[{i}]");
                let (versions, spec) = version_spec(fs, &at, read_dockerfile, &invalid)?;
                for v in versions {
                    if rs.versions.insert(v.clone(), spec.clone()).is_some() {
                        return Err(invalid(format!(
                            "{at}: version {v:?} of {repo} is defined twice in this file"
                        )));
                    }
                }
            }
            table.repos.insert(repo, rs);
        }
        Ok(table)
    }

    /// Every entry moved to `provider` for a whole run (`--env-provider`). For `uv`: the entry
    /// builds on the Python image of its `python` (`python_image`, a template with `{version}`, or
    /// [`DEFAULT_PYTHON_IMAGE`]) instead of its base image, installs the instance's frozen pins
    /// (`frozen_pins = true`), and keeps `packages` (a conda package list is installed from PyPI
    /// under the same names, for instances without frozen pins), `pip_packages`, `pre_install`,
    /// `install` and everything the eval scripts use. Python older than 3.8, which uv makes no
    /// environments for, is served by `python -m venv` and pip in the same image (see the
    /// render); the returned notes name those entries. `conda` and `venv` only set the provider (a venv entry needs a base image with an
    /// interpreter, see `docs/spec-table.md`).
    pub fn with_env_provider(
        &self,
        provider: Provider,
        python_image_template: Option<&str>,
    ) -> (SpecTable, Vec<String>) {
        let mut out = self.clone();
        let mut notes = Vec::new();
        for (repo, r) in &mut out.repos {
            for (version, spec) in &mut r.versions {
                if provider != Provider::Uv {
                    spec.provider = provider;
                    if provider == Provider::Conda {
                        spec.interpreter = None;
                    }
                    spec.python_image = None;
                    spec.frozen_pins = None;
                    continue;
                }
                let python = spec.python.clone().unwrap_or_default();
                if !python_at_least(&python, UV_MIN_PYTHON) {
                    notes.push(format!("{repo} {version} (Python {python})"));
                }
                spec.provider = Provider::Uv;
                spec.base = BaseImage::Default;
                spec.interpreter = None;
                if let Some(t) = python_image_template {
                    spec.python_image = Some(t.to_string());
                }
                spec.frozen_pins = Some(true);
            }
        }
        (out, notes)
    }

    /// This table with `lock` applied to the environments it has entries for. Every entry must
    /// match an entry of this table (repository, version, provider and Python), so apply it
    /// after `--spec-table` files and `--env-provider`.
    pub fn with_env_lock(&self, lock: EnvLock) -> Result<SpecTable, LockError> {
        lock.check(self)?;
        let mut out = self.clone();
        out.env_lock = Some(lock);
        Ok(out)
    }

    /// This table with build files for the repositories of `files` (see [`crate::build_files`]).
    /// The table with `--compiler-cache` on or off (see [`crate::compiler_cache`]).
    pub fn with_compiler_cache(mut self, on: bool) -> SpecTable {
        self.compiler_cache = on;
        self
    }

    pub fn with_build_files(mut self, files: BTreeMap<String, BuildFiles>) -> SpecTable {
        self.build_files.extend(files);
        self
    }

    /// Applies `overlay` on top of this table (see the module doc for the rules).
    pub fn merge(&mut self, overlay: SpecTable) {
        if overlay.non_test_extensions.is_some() {
            self.non_test_extensions = overlay.non_test_extensions;
        }
        self.use_x86.extend(overlay.use_x86);
        for (repo, o) in overlay.repos {
            let r = self.repos.entry(repo).or_default();
            if o.test_command.is_some() {
                r.test_command = o.test_command;
            }
            if o.requirements_paths.is_some() {
                r.requirements_paths = o.requirements_paths;
            }
            if o.environment_yml_paths.is_some() {
                r.environment_yml_paths = o.environment_yml_paths;
            }
            if o.repo_install.is_some() {
                r.repo_install = o.repo_install;
            }
            if o.non_test_extensions.is_some() {
                r.non_test_extensions = o.non_test_extensions;
            }
            if o.log_parser.is_some() {
                r.log_parser = o.log_parser;
            }
            r.versions.extend(o.versions);
        }
    }

    /// The entry for `(repo, version)`; the error lists what the table knows.
    pub fn lookup<'a>(&'a self, repo: &'a str, version: &'a str) -> Result<Entry<'a>, SpecError> {
        let Some(repo_spec) = self.repos.get(repo) else {
            return Err(SpecError::UnknownRepo {
                repo: repo.to_string(),
                known: self.repos.keys().cloned().collect(),
            });
        };
        match repo_spec.versions.get(version) {
            Some(spec) => Ok(Entry {
                repo,
                version,
                repo_spec,
                spec,
            }),
            None => Err(SpecError::UnknownVersion {
                repo: repo.to_string(),
                version: version.to_string(),
                known: sorted_versions(repo_spec.versions.keys().map(String::as_str)),
            }),
        }
    }

    /// The non-test extensions that apply to `repo`.
    pub fn non_test_extensions(&self, repo: &str) -> Vec<&str> {
        let list = self
            .repos
            .get(repo)
            .and_then(|r| r.non_test_extensions.as_ref())
            .or(self.non_test_extensions.as_ref());
        match list {
            Some(l) => l.iter().map(String::as_str).collect(),
            None => swtbench_core::directives::DEFAULT_NON_TEST_EXTS.to_vec(),
        }
    }

    /// Whether `instance_id` must use x86_64 images even on arm64 hosts.
    pub fn uses_x86(&self, instance_id: &str) -> bool {
        self.use_x86.contains(instance_id)
    }

    /// Number of `(repo, version)` entries.
    pub fn len(&self) -> usize {
        self.repos.values().map(|r| r.versions.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether `python` (`3.9`, `3.9.20`) is at least `min`; unparsable versions are not.
pub fn python_at_least(python: &str, min: (u32, u32)) -> bool {
    let mut parts = python.split('.').map(|p| p.parse::<u32>());
    match (parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => (major, minor) >= min,
        _ => false,
    }
}

/// Versions in human order: numeric dot-separated parts compare as numbers (`1.9` < `1.10`).
pub fn sorted_versions<'a>(versions: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut v: Vec<String> = versions.map(str::to_string).collect();
    v.sort_by(|a, b| version_key(a).cmp(&version_key(b)).then_with(|| a.cmp(b)));
    v
}

fn version_key(v: &str) -> Vec<(u64, String)> {
    v.split('.')
        .map(|part| match part.parse::<u64>() {
            Ok(n) => (n, String::new()),
            Err(_) => (u64::MAX, part.to_string()),
        })
        .collect()
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    fn no_files(p: &str) -> Result<String, ReadError> {
        Err(format!("no file {p}").into())
    }

    #[test]
    fn embedded_table_has_every_entry() {
        let t = SpecTable::embedded();
        assert_eq!(t.repos.len(), 21);
        assert_eq!(t.len(), 275);
        assert_eq!(t.use_x86.len(), 496);
        let e = t.lookup("django/django", "1.9").unwrap();
        assert_eq!(e.test_command(), Some("./tests/runtests.py --verbosity 2"));
        let e = t.lookup("django/django", "3.0").unwrap();
        assert_eq!(
            e.test_command(),
            Some("./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1")
        );
        assert_eq!(e.spec.python.as_deref(), Some("3.6"));
        assert_eq!(e.spec.packages.as_deref(), Some("requirements.txt"));
        assert!(t
            .lookup("dbt-labs/dbt-core", "1.7")
            .unwrap()
            .test_command()
            .is_none());
        assert!(t.uses_x86("astropy__astropy-7973"));
        assert_eq!(t.non_test_extensions("psf/requests")[2], "csv");
    }

    #[test]
    fn lookup_errors_name_repo_version_and_known_versions() {
        let t = SpecTable::embedded();
        let e = t.lookup("psf/requests", "9.9").unwrap_err().to_string();
        assert!(e.contains("psf/requests") && e.contains("9.9"), "{e}");
        assert!(e.contains("0.7, 0.8, 0.9, 0.11"), "{e}");
        let e = t.lookup("acme/nothing", "1.0").unwrap_err().to_string();
        assert!(
            e.contains("acme/nothing") && e.contains("django/django"),
            "{e}"
        );
    }

    #[test]
    fn overlay_replaces_entries_and_adds_repos() {
        let mut t = SpecTable::embedded().clone();
        let overlay = r#"
            use_x86 = ["x__y-1"]
            [repos."psf/requests"]
            test_command = "pytest -rA -x"
            [[repos."psf/requests".specs]]
            versions = ["2.0", "9.9"]
            python = "3.11"
            packages = "pytest"
            [repos."acme/widget"]
            test_command = "pytest"
            [[repos."acme/widget".specs]]
            versions = ["1.0"]
            provider = "venv"
            base_image = "swtbench-fixture-base:bookworm"
            install = "python -m pip install -e ."
        "#;
        let o = SpecTable::parse(overlay, "o.toml", TableSyntax::Toml, &no_files).unwrap();
        t.merge(o);
        assert_eq!(t.len(), 275 + 2);
        let e = t.lookup("psf/requests", "2.0").unwrap();
        assert_eq!(e.spec.python.as_deref(), Some("3.11"));
        assert_eq!(e.spec.install, None);
        assert_eq!(e.test_command(), Some("pytest -rA -x"));
        // Untouched versions keep their entry.
        let e = t.lookup("psf/requests", "2.3").unwrap();
        assert_eq!(e.spec.install.as_deref(), Some("python -m pip install ."));
        let w = t.lookup("acme/widget", "1.0").unwrap();
        assert_eq!(w.spec.provider, Provider::Venv);
        assert_eq!(
            w.spec.base,
            BaseImage::Image("swtbench-fixture-base:bookworm".into())
        );
        assert!(t.uses_x86("x__y-1") && t.uses_x86("astropy__astropy-7973"));
    }

    #[test]
    fn log_parser_is_read_and_merged_per_repository() {
        let mut t = SpecTable::embedded().clone();
        assert_eq!(t.repos["psf/requests"].log_parser, None);
        let overlay = "[repos.\"acme/widget\"]\nlog_parser = \"pytest\"\n";
        let o = SpecTable::parse(overlay, "o.toml", TableSyntax::Toml, &no_files).unwrap();
        t.merge(o);
        assert_eq!(t.repos["acme/widget"].log_parser.as_deref(), Some("pytest"));
        // A later overlay without the key keeps it.
        let o = SpecTable::parse(
            "[repos.\"acme/widget\"]\ntest_command = \"pytest\"\n",
            "p.toml",
            TableSyntax::Toml,
            &no_files,
        )
        .unwrap();
        t.merge(o);
        assert_eq!(t.repos["acme/widget"].log_parser.as_deref(), Some("pytest"));
    }

    #[test]
    fn json_syntax_and_dockerfile_reader() {
        let text = r#"{"repos": {"a/b": {"specs": [{"versions": ["1"], "provider": "venv",
            "base_dockerfile": "base.Dockerfile"}]}}}"#;
        let read = |p: &str| -> Result<String, ReadError> {
            assert_eq!(p, "base.Dockerfile");
            Ok("FROM scratch\n".into())
        };
        let t = SpecTable::parse(text, "t.json", TableSyntax::Json, &read).unwrap();
        let e = t.lookup("a/b", "1").unwrap();
        assert_eq!(
            e.spec.base,
            BaseImage::Dockerfile {
                path: "base.Dockerfile".into(),
                text: "FROM scratch\n".into()
            }
        );
        assert!(!e.spec.is_reference());
    }

    #[test]
    fn invalid_tables_are_explained() {
        let cases = [
            ("[repos.\"a/b\"]\ntest_comand = \"x\"\n", "test_comand"),
            ("format = 2\n", "format = 2"),
            (
                "[[repos.\"a/b\".specs]]\nversions = [\"1\"]\nprovider = \"nix\"\n",
                "nix",
            ),
            (
                "[[repos.\"a/b\".specs]]\nversions = [\"1\"]\n",
                "`python` is required",
            ),
            (
                "[[repos.\"a/b\".specs]]\nversions = [\"1\"]\npython = \"3\"\n[[repos.\"a/b\".specs]]\nversions = [\"1\"]\npython = \"3\"\n",
                "defined twice",
            ),
            (
                "[[repos.\"a/b\".specs]]\nversions = [\"1\"]\nprovider = \"venv\"\nbase_dockerfile = \"nope\"\n",
                "cannot read base_dockerfile",
            ),
        ];
        for (text, needle) in cases {
            let e = SpecTable::parse(text, "bad.toml", TableSyntax::Toml, &no_files)
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle) && e.contains("bad.toml"), "{e}");
        }
    }

    #[test]
    fn versions_sort_numerically() {
        assert_eq!(
            sorted_versions(["1.10", "1.9", "0.11", "2.0", "dev"].into_iter()),
            vec!["0.11", "1.9", "1.10", "2.0", "dev"]
        );
    }
}
