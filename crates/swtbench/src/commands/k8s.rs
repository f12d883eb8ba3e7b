//! `swtbench k8s manifest`: an evaluation as Kubernetes objects ([`swtbench_app::k8s`]), printed
//! or written to `--out`; the run flags are checked as `run` checks them (docs/distributed.md).
//! `swtbench k8s service`: the evaluation service's objects ([`swtbench_app::k8s::service`]), the
//! run flags after `--` checked as `serve` checks them (docs/service.md).

use swtbench_app::k8s;
use swtbench_cli::commands::k8s::{Format, K8sArgs, K8sCommand, ManifestArgs, ServiceArgs};

use crate::cluster;
use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

pub fn run(args: K8sArgs, printer: &Printer) -> CliResult {
    match args.command {
        K8sCommand::Manifest(a) => manifest(*a, printer),
        K8sCommand::Service(a) => service(*a, printer),
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

fn service(args: ServiceArgs, printer: &Printer) -> CliResult {
    use anyhow::anyhow;
    use swtbench_app::Error;
    let name = k8s::base_name(Some(&args.name), "").map_err(|e| {
        Error::input(anyhow!(e)).with_hint("e.g. --name swtbench (the default) or --name evals-1")
    })?;
    // As `serve` and `worker` check them when the pods start, so that a mistake shows here.
    let run = crate::service_jobs::parse_run(&args.run_args, "gold", "serve")?;
    crate::service_jobs::refuse_batch_flags(&run)?;
    swtbench_cli::settings::settings_from(&run, &swtbench_app::limits::HostFacts::default())?;
    let Some(memory) = run.memory else {
        return Err(Error::input(anyhow!(
            "`k8s service` needs --memory in the run flags: a worker pod's memory is its jobs' \
             test containers at --memory each"
        ))
        .with_hint("give each test container's limit after `--`, e.g. -- --memory 4g")
        .into());
    };
    let job = k8s::Sizing {
        workers: run.max_workers,
        build_workers: run.build_workers,
        memory,
        cpus: run.cpus,
    };
    let spec = args.spec(name, job);
    let m = k8s::service::service_manifest(&spec);
    let text = k8s::service::render(&m, args.format == Format::Json)?;
    printer.lines(&[swtbench_app::lines::Line::Data(text)]);
    Ok(ExitCode::Success)
}
