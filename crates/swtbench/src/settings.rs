//! Settings read from the environment and files for several commands: the spec table
//! (`--spec-table` over the embedded one) and the requirement-file source (mirror, GitHub raw and
//! its download cache, from `SWTBENCH_CACHE_DIR`, `XDG_CACHE_HOME`, `HOME`,
//! `SWTBENCH_GITHUB_RAW`). The rules are `swtbench_app::tables`; this reads the environment.

use std::path::{Path, PathBuf};

use swtbench_app::tables::{CacheEnv, RepoFilesSettings};
use swtbench_data::repo_files::RepoFiles;
use swtbench_spec::SpecTable;

use crate::env_vars;
use crate::error::CliError;

/// The `--spec-table` loader every command uses (see `swtbench_app::tables::load_spec_table`).
pub fn load_spec_table(extra: Option<&Path>) -> Result<SpecTable, CliError> {
    swtbench_app::tables::load_spec_table(extra).map_err(CliError::from)
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

/// The local record of pulled images (see `swtbench_app::registry::pulls_path`).
pub fn pulls_path() -> PathBuf {
    swtbench_app::registry::pulls_path(&CacheEnv {
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
    .map_err(CliError::from)
}
