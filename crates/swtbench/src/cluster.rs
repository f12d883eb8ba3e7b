//! What the cluster commands (`slurm submit`, `k8s manifest`) share: `run`'s flags as given, checked
//! as `run` checks them, without the cluster command's own flags (`swtbench_cli::cluster`).

use clap::Args;
use swtbench_cli::args::RunArgs;
use swtbench_cli::cluster::own_flags;

/// The run flags the cluster command `path` (e.g. `["slurm", "submit"]`, arguments `A`) was
/// given, as given (its own flags left out), once they are checked as `swtbench run` checks
/// them: flags the cluster sets itself, or that do not combine with shards, are refused; `unit`
/// names what runs a shard in the message ("task", "pod").
pub fn checked_run_flags<A: Args>(
    path: &[&str],
    unit: &str,
    run: &RunArgs,
) -> Result<Vec<String>, crate::error::CliError> {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let own = own_flags::<A>();
    let flags = swtbench_app::shell::cluster_run_flags(&argv, path, &own, unit, run.repeat)?;
    swtbench_app::evaluate::check_run_id(&run.run_id)?;
    swtbench_cli::settings::settings_from(run, &swtbench_app::limits::HostFacts::default())?;
    Ok(flags)
}
