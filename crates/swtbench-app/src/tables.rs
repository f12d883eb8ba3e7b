//! Where the spec table and requirement files come from: the embedded table with a
//! `--spec-table` file applied over it, and the file source (mirror, GitHub raw, cache).

use std::path::{Path, PathBuf};

use swtbench_data::http::{HttpClient, HttpConfig};
use swtbench_spec::fetch::RepoFiles;
use swtbench_spec::{SpecTable, TableSyntax};

use crate::env_vars;
use crate::{Error, Result};

/// The embedded spec table with `extra` (a `--spec-table` file) applied over it. A
/// `base_dockerfile` named in the file is read relative to the file's directory.
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
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).map_err(|e| e.to_string());
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
pub fn repo_files(mirror: Option<&Path>, offline: bool) -> Result<RepoFiles> {
    if let Some(dir) = mirror {
        swtbench_spec::fetch::check_mirror_dir(dir).map_err(|e| {
            Error::input(anyhow::anyhow!(e)).with_hint(
                "create mirrors with `git clone --mirror https://github.com/<owner>/<name> DIR/<owner>__<name>.git`",
            )
        })?;
    }
    let config = HttpConfig {
        cache_dir: Some(github_raw_cache_dir()),
        ..HttpConfig::default()
    };
    let http = HttpClient::new(config).map_err(|e| {
        Error::environment(e).with_hint(format!(
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
