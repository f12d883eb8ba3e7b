//! The spec table and the requirement-file reader, as every command that renders or grades
//! instances loads them: the one `--spec-table` loader (the file read here, parsed by the pure
//! `swtbench_spec::SpecTable::parse`, applied over the embedded table) and the
//! [`RepoFiles`] reader of mirrors and GitHub raw.
//!
//! Settings come in resolved: this module reads the files it is pointed at, but no environment
//! variables (the binary looks them up and hands the values in).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use swtbench_data::http::{HttpClient, HttpConfig};
use swtbench_data::repo_files::{check_mirror_dir, RepoFiles};
use swtbench_spec::{ReadError, SpecTable, TableSyntax};

use crate::{Error, Result};

/// The embedded spec table with `extra` (a `--spec-table` file, TOML or, for `*.json`, JSON)
/// applied over it. A `base_dockerfile` named in the file is read relative to the file's
/// directory.
pub fn load_spec_table(extra: Option<&Path>) -> Result<SpecTable> {
    let mut table = SpecTable::embedded().clone();
    let Some(path) = extra else {
        return Ok(table);
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::input(anyhow::anyhow!(
            "cannot read spec table {}: {e}",
            path.display()
        ))
    })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).map_err(ReadError::from);
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
    .map_err(|e| Error::input(e).with_hint("the format is described in docs/spec-table.md"))?;
    // Values that only a run would trip over, checked now: every command refuses them alike.
    for (repo, r) in &overlay.repos {
        if let Some(name) = &r.log_parser {
            name.parse::<swtbench_grade::Parser>().map_err(|e| {
                Error::input(anyhow::anyhow!(
                    "spec table {}: repository {repo}: {e}",
                    path.display()
                ))
                .with_hint(
                    "log_parser is one of pytest, pytest_options, pytest_v2, django, seaborn, \
                     matplotlib, sympy",
                )
            })?;
        }
    }
    table.merge(overlay);
    Ok(table)
}

pub use crate::env_vars::CacheEnv;

/// The directory GitHub raw downloads are cached in: `$SWTBENCH_CACHE_DIR/github-raw`, by default
/// under `$XDG_CACHE_HOME/swtbench` or `~/.cache/swtbench`.
pub fn github_raw_cache_dir(env: &CacheEnv) -> PathBuf {
    let non_empty = |v: &Option<OsString>| v.clone().filter(|v| !v.is_empty());
    let base = non_empty(&env.swtbench_cache_dir)
        .map(PathBuf::from)
        .or_else(|| non_empty(&env.xdg_cache_home).map(|d| PathBuf::from(d).join("swtbench")))
        .or_else(|| non_empty(&env.home).map(|h| PathBuf::from(h).join(".cache/swtbench")))
        .unwrap_or_else(|| PathBuf::from(".cache/swtbench"));
    base.join("github-raw")
}

/// Where requirement files are read from.
#[derive(Debug, Clone)]
pub struct RepoFilesSettings {
    /// Directory of bare mirrors `<owner>__<name>.git`, tried first (checked to exist).
    pub mirror: Option<PathBuf>,
    /// Only the download cache may answer for GitHub raw.
    pub offline: bool,
    /// The download cache ([`github_raw_cache_dir`]).
    pub cache_dir: PathBuf,
    /// A base URL used instead of GitHub raw (`SWTBENCH_GITHUB_RAW`); blank means none.
    pub raw_base: Option<String>,
}

/// [`repo_files`] with the cache directory and `$SWTBENCH_GITHUB_RAW` the environment names.
pub fn repo_files_from_env(mirror: Option<&std::path::Path>, offline: bool) -> Result<RepoFiles> {
    use crate::env_vars;
    repo_files(&RepoFilesSettings {
        mirror: mirror.map(std::path::Path::to_path_buf),
        offline,
        cache_dir: github_raw_cache_dir(&env_vars::cache_env()),
        raw_base: env_vars::var(env_vars::SWTBENCH_GITHUB_RAW),
    })
}

/// The file source for requirement files: the mirror directory, then GitHub raw (or
/// `raw_base`) through the download cache; the cache only when offline.
pub fn repo_files(settings: &RepoFilesSettings) -> Result<RepoFiles> {
    if let Some(dir) = &settings.mirror {
        check_mirror_dir(dir).map_err(|e| {
            Error::input(e).with_hint(
                "create mirrors with `git clone --mirror https://github.com/<owner>/<name> DIR/<owner>__<name>.git`",
            )
        })?;
    }
    let config = HttpConfig {
        cache_dir: Some(settings.cache_dir.clone()),
        ..crate::env_vars::http_config()
    };
    let http = HttpClient::new(config).map_err(|e| {
        Error::environment(e).with_hint("check SSL_CERT_FILE and the proxy variables")
    })?;
    let mut files = RepoFiles::new(settings.mirror.clone(), Some(http), settings.offline);
    if let Some(base) = settings
        .raw_base
        .as_deref()
        .filter(|v| !v.trim().is_empty())
    {
        files = files.with_raw_base(base);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_dir_falls_back_from_swtbench_to_xdg_to_home() {
        let env = |s: Option<&str>, x: Option<&str>, h: Option<&str>| CacheEnv {
            swtbench_cache_dir: s.map(OsString::from),
            xdg_cache_home: x.map(OsString::from),
            home: h.map(OsString::from),
        };
        assert_eq!(
            github_raw_cache_dir(&env(Some("/c"), Some("/x"), Some("/h"))),
            PathBuf::from("/c/github-raw")
        );
        assert_eq!(
            github_raw_cache_dir(&env(Some(""), Some("/x"), Some("/h"))),
            PathBuf::from("/x/swtbench/github-raw")
        );
        assert_eq!(
            github_raw_cache_dir(&env(None, None, Some("/h"))),
            PathBuf::from("/h/.cache/swtbench/github-raw")
        );
        assert_eq!(
            github_raw_cache_dir(&env(None, None, None)),
            PathBuf::from(".cache/swtbench/github-raw")
        );
    }
}
