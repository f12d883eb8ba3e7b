//! `swtbench k8s manifest`: an evaluation as Kubernetes objects ([`swtbench_app::k8s`]), printed
//! or written to `--out`; the run flags are checked as `run` checks them (docs/distributed.md).

use swtbench_app::k8s;
use swtbench_cli::commands::k8s::{Format, K8sArgs, K8sCommand, ManifestArgs};

use crate::cluster;
use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

pub fn run(args: K8sArgs, printer: &Printer) -> CliResult {
    match args.command {
        K8sCommand::Manifest(a) => manifest(*a, printer),
    }
}

fn manifest(args: ManifestArgs, printer: &Printer) -> CliResult {
    let run = &args.run;
    let run_flags = cluster::checked_run_flags::<ManifestArgs>(&["k8s", "manifest"], "pod", run)?;
    let (memory, name) = k8s::checked_flags(
        run.memory,
        &args.mount_path,
        args.name.as_deref(),
        &run.run_id,
    )?;
    let mirror = run.mirror.repo_mirror.as_deref();
    let paths = k8s::run_paths(
        &run.output_dir,
        &run.predictions,
        &run.dataset.dataset,
        mirror,
    );
    for w in k8s::off_volume_warnings(paths, &args.mount_path) {
        printer.warn(&w);
    }
    let spec = args.spec(name, memory, &run_flags);
    let m = k8s::manifest(&spec);
    let text = k8s::render(&m, args.format == Format::Json)?;
    printer.lines(&[k8s::output(text, &m, spec.shards, args.out.as_deref())?]);
    Ok(ExitCode::Success)
}
