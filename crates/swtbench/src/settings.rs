//! Settings read from the environment and files for several commands: the spec table
//! (`--spec-table` over the embedded one) and the requirement-file source (mirror, GitHub raw and
//! its download cache, from `SWTBENCH_CACHE_DIR`, `XDG_CACHE_HOME`, `HOME`,
//! `SWTBENCH_GITHUB_RAW`). The rules are `swtbench_app::tables`; this reads the environment.
//! Also `swtbench run`'s flags as the options of `swtbench_app::settings` ([`run_options`],
//! [`settings_from`]), which `run`, the cluster commands and `verify --reexecute` share.

use std::path::{Path, PathBuf};

use swtbench_app::limits::{HostFacts, LimitOptions};
use swtbench_app::settings::RunOptions;
use swtbench_app::tables::RepoFilesSettings;
use swtbench_data::repo_files::RepoFiles;
use swtbench_plan::RunSettings;
use swtbench_spec::SpecTable;

use crate::args::RunArgs;
use crate::env_vars;
use crate::error::CliError;

/// The `--spec-table` loader every command uses (see `swtbench_app::tables::load_spec_table`).
pub fn load_spec_table(extra: Option<&Path>) -> Result<SpecTable, CliError> {
    swtbench_app::tables::load_spec_table(extra).map_err(CliError::from)
}

/// The directory GitHub raw downloads are cached in, from the environment (see
/// `swtbench_app::tables::github_raw_cache_dir`).
pub fn github_raw_cache_dir() -> PathBuf {
    swtbench_app::tables::github_raw_cache_dir(&env_vars::cache_env())
}

/// The local record of pulled images (see `swtbench_app::registry::pulls_path`).
pub fn pulls_path() -> PathBuf {
    swtbench_app::registry::pulls_path(&env_vars::cache_env())
}

/// The file source for requirement files, with the cache and the GitHub raw base from the
/// environment (see `swtbench_app::tables::repo_files`).
pub fn repo_files(mirror: Option<&Path>, offline: bool) -> Result<RepoFiles, CliError> {
    repo_files_of(mirror, offline).map_err(CliError::from)
}

/// [`repo_files`] with the library's error.
pub fn repo_files_of(mirror: Option<&Path>, offline: bool) -> swtbench_app::Result<RepoFiles> {
    swtbench_app::tables::repo_files(&RepoFilesSettings {
        mirror: mirror.map(Path::to_path_buf),
        offline,
        cache_dir: github_raw_cache_dir(),
        raw_base: env_vars::var(env_vars::SWTBENCH_GITHUB_RAW),
    })
}

/// The options of `swtbench run`'s flags, before the limits are sized from the engine's host.
pub fn run_options(args: &RunArgs) -> Result<RunOptions, CliError> {
    Ok(RunOptions {
        run_id: args.run_id.clone(),
        output_dir: args.output_dir.clone(),
        eval: args.eval.options(!args.eval_install)?,
        max_workers: args.max_workers,
        build_workers: args.build_workers,
        timeout: args.timeout,
        max_output: args.max_output,
        limits: LimitOptions {
            no_limits: args.no_limits,
            memory: args.memory,
            pids: args.pids_limit,
            cpus: args.cpus,
            disk: args.disk_limit,
            file: args.file_limit,
        },
        // An explicit --allow-network wins over --no-network and SWTBENCH_NO_NETWORK.
        allow_network: args.allow_network || !args.no_network,
        evidence: !args.no_evidence,
        cache_level: args.cache_level,
        clean: args.clean,
        force_rebuild: args.force_rebuild,
        repo_mirror: args.repo_mirror.clone(),
        build_timeout: args.build_timeout,
        step_builds: args.step_builds,
        registry: args.registry.settings()?,
        prebuilt: match &args.instance_image {
            Some(t) => Some(swtbench_app::registry::prebuilt_settings(t)?),
            None => None,
        },
        patch_types: args.patch_types.clone(),
        extract: args.styles.options(),
        reuse_unkeyed: args.reuse_unkeyed_outputs,
        skip_eval: args.skip_eval || args.merge,
        shard: args.shard,
        strict_results: args.strict_results,
        flaky: match &args.flaky_list {
            Some(p) => swtbench_app::settings::read_flaky_list(p)?,
            None => Default::default(),
        },
    })
}

/// The settings of `swtbench run`'s flags: [`run_options`] resolved against `host` (also how the
/// cluster commands check the run flags they repeat).
pub fn settings_from(args: &RunArgs, host: &HostFacts) -> Result<RunSettings, CliError> {
    Ok(run_options(args)?.resolve(host)?)
}
