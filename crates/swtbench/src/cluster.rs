//! What the cluster commands (`slurm submit`, `k8s manifest`) share: they take `swtbench run`'s
//! flags as they were given, check them as `run` would, and repeat them in each shard's command
//! with `--shard K/N` added. Their own flags are left out of that command.

use std::ffi::OsString;

pub use swtbench_app::shell::OwnFlag;

/// The run flags the cluster command `path` (e.g. `["slurm", "submit"]`) was given, as given
/// (its `own` flags left out), once they are checked as `swtbench run` checks them: flags the
/// cluster sets itself, or that do not combine with shards, are refused; `unit` names what runs
/// a shard in the message ("task", "pod").
pub fn checked_run_flags(
    path: &[&str],
    own: &[OwnFlag],
    unit: &str,
    run: &crate::args::RunArgs,
) -> Result<Vec<String>, crate::error::CliError> {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let flags = swtbench_app::shell::cluster_run_flags(&argv, path, own, unit, run.repeat)?;
    swtbench_app::evaluate::check_run_id(&run.run_id)?;
    crate::settings::settings_from(run, &swtbench_app::limits::HostFacts::default())?;
    Ok(flags)
}
