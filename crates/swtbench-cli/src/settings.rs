//! `swtbench run`'s flags as the options of `swtbench_app::settings` ([`run_options`],
//! [`settings_from`]), which `run`, the cluster commands and `verify --reexecute` share.

use swtbench_app::limits::{HostFacts, LimitOptions};
use swtbench_app::settings::RunOptions;
use swtbench_plan::RunSettings;

use crate::args::RunArgs;

/// The options of `swtbench run`'s flags, before the limits are sized from the engine's host.
pub fn run_options(args: &RunArgs) -> swtbench_app::Result<RunOptions> {
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
        repo_mirror: args.mirror.repo_mirror.clone(),
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
        grading_version: args.grading_version,
        flaky: match &args.flaky_list {
            Some(p) => swtbench_app::settings::read_flaky_list(p)?,
            None => Default::default(),
        },
    })
}

/// The settings of `swtbench run`'s flags: [`run_options`] resolved against `host` (also how the
/// cluster commands check the run flags they repeat).
pub fn settings_from(args: &RunArgs, host: &HostFacts) -> swtbench_app::Result<RunSettings> {
    run_options(args)?.resolve(host)
}
