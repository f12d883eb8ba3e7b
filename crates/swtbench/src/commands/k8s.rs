//! `swtbench k8s manifest`: an evaluation as Kubernetes objects ([`swtbench_app::k8s`]), printed
//! or written to `--out`; the run flags are checked as `run` checks them (docs/distributed.md).

use std::path::PathBuf;

use swtbench_app::k8s::{self, Engine, HelperImages, ManifestSpec, NewClaim, Sizing};

use crate::args::RunArgs;
use crate::cluster;
use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct K8sArgs {
    #[command(subcommand)]
    pub command: K8sCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum K8sCommand {
    /// Print the Kubernetes objects of an evaluation: an Indexed Job of N shards (pod K runs
    /// `swtbench run <run flags> --shard K/N`) and a merge Job that waits for it (`--merge`), on
    /// a ReadWriteMany volume mounted as the working directory. Apply with `kubectl apply -f`.
    Manifest(Box<ManifestArgs>),
}

/// How the objects are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A YAML stream, one document per object.
    Yaml,
    /// One `v1/List` in JSON.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ManifestArgs {
    #[command(flatten)]
    pub run: RunArgs,

    /// Number of shards (the Job's completions), N of --shard K/N.
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_positive::<usize>)]
    pub shards: usize,

    /// Shard pods running at once (default: all of them).
    #[arg(long, value_name = "P", allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_positive::<usize>)]
    pub parallelism: Option<usize>,

    /// The image the pods run: `swtbench` on its PATH and /bin/sh.
    #[arg(long, value_name = "IMAGE")]
    pub image: String,

    /// Namespace of every object (default: kubectl's current one).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,

    /// Base name of the objects (default: swtbench-<run id>); <name>-shards, <name>-merge and
    /// <name>-wait are made from it.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// The ReadWriteMany PersistentVolumeClaim mounted as every pod's working directory: the
    /// output directory, the dataset and predictions files, the mirrors must be on it.
    #[arg(long, value_name = "NAME", default_value = "swtbench-work")]
    pub volume_claim: String,

    /// Also create the claim with this size (e.g. 500Gi); without it the claim must exist.
    #[arg(long, value_name = "SIZE")]
    pub volume_size: Option<String>,

    /// Storage class of the claim created with --volume-size (one that offers ReadWriteMany).
    #[arg(long, value_name = "CLASS", requires = "volume_size")]
    pub storage_class: Option<String>,

    /// Where the claim is mounted in the pods, and their working directory: relative paths in
    /// the run flags are relative to it.
    #[arg(long, value_name = "DIR", default_value = "/work")]
    pub mount_path: String,

    /// The container engine of each shard pod: dind (a privileged Docker-in-Docker sidecar),
    /// podman (a rootless Podman sidecar; needs /dev/fuse and unconfined seccomp and AppArmor)
    /// or socket (the node's /var/run/docker.sock: the pods are root on their node).
    #[arg(long, value_name = "ENGINE", default_value = "dind")]
    pub engine: Engine,

    /// Write the objects to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// yaml (a stream of documents) or json (a v1 List).
    #[arg(long, value_enum, default_value = "yaml")]
    pub format: Format,

    /// Retries of each shard pod before its index counts as failed. The back-off doubles from
    /// 10 s: the default 4 outlasts an NFSv4 lease (90 s), so that a pod replacing one on a lost
    /// node gets the shard's lock once the server lets the old one go. Evictions and
    /// preemptions are not counted.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub backoff_limit_per_index: i32,

    /// How long the merge waits for the shards, as kubectl takes it (e.g. 72h).
    #[arg(long, value_name = "DURATION", default_value = "168h")]
    pub wait_timeout: String,

    /// Image of the engine sidecar (default: docker:28-dind for dind,
    /// quay.io/podman/stable:latest for podman).
    #[arg(long, value_name = "IMAGE")]
    pub engine_image: Option<String>,

    /// Image with kubectl for the merge's wait.
    #[arg(long, value_name = "IMAGE")]
    pub kubectl_image: Option<String>,
}

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
    let spec = ManifestSpec {
        name,
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        shards: args.shards,
        parallelism: args.parallelism.unwrap_or(args.shards).min(args.shards),
        run_command: k8s::run_command(&run_flags),
        claim: args.volume_claim.clone(),
        new_claim: args.volume_size.clone().map(|size| NewClaim {
            size,
            storage_class: args.storage_class.clone(),
        }),
        mount_path: args.mount_path.clone(),
        engine: args.engine,
        sizing: Sizing {
            workers: run.max_workers,
            build_workers: run.build_workers,
            memory,
            cpus: run.cpus,
        },
        backoff_limit_per_index: args.backoff_limit_per_index,
        wait_timeout: args.wait_timeout.clone(),
        helpers: HelperImages::with(args.engine_image.clone(), args.kubectl_image.clone()),
    };
    let m = k8s::manifest(&spec);
    let text = k8s::render(&m, args.format == Format::Json)?;
    printer.lines(&[k8s::output(text, &m, spec.shards, args.out.as_deref())?]);
    Ok(ExitCode::Success)
}
