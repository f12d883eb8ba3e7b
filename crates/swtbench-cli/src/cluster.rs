//! What the cluster commands (`slurm submit`, `k8s manifest`) share: which of their flags are their
//! own, not run flags.

use clap::{Args, Command};
use swtbench_app::shell::OwnFlag;

use crate::args::RunArgs;

/// The flags of the cluster command whose arguments are `A` that are not run flags (`A` flattens
/// [`RunArgs`]).
pub fn own_flags<A: Args>() -> Vec<OwnFlag> {
    let run = RunArgs::augment_args(Command::new("run"));
    let cluster = A::augment_args(Command::new("cluster"));
    let own = cluster.get_arguments().filter_map(|a| {
        let long = a.get_long()?;
        let takes_value = a.get_action().takes_values();
        (run.get_arguments().all(|r| r.get_long() != Some(long))).then(|| match takes_value {
            true => OwnFlag::with_value(long),
            false => OwnFlag::switch(long),
        })
    });
    own.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(flags: &[OwnFlag]) -> Vec<(&str, bool)> {
        flags.iter().map(|f| (f.long.as_str(), f.value)).collect()
    }

    /// The own flags are the ones each cluster command declares besides the run flags (the
    /// lists these commands had written out).
    #[test]
    fn own_flags_are_the_cluster_commands_flags_that_are_not_run_flags() {
        let v = |n| (n, true);
        let k8s = [
            "shards",
            "parallelism",
            "image",
            "namespace",
            "name",
            "volume-claim",
            "volume-size",
            "storage-class",
            "mount-path",
            "engine",
            "out",
            "format",
            "backoff-limit-per-index",
            "wait-timeout",
            "engine-image",
            "kubectl-image",
        ]
        .map(v);
        let own = own_flags::<crate::commands::k8s::ManifestArgs>();
        assert_eq!(names(&own), k8s);
        let mut slurm = [
            "shards",
            "partition",
            "time",
            "cpus-per-task",
            "mem",
            "account",
            "qos",
            "sbatch-arg",
            "print",
            "swtbench",
        ]
        .map(v);
        slurm[8].1 = false;
        let own = own_flags::<crate::commands::slurm::SubmitArgs>();
        assert_eq!(names(&own), slurm);
    }
}
