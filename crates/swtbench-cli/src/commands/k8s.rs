//! `swtbench k8s manifest`'s and `k8s service`'s flags, and the specs they give
//! ([`ManifestSpec`], [`ServiceSpec`]).

use std::path::PathBuf;

use swtbench_app::k8s::service::{SecretRef, ServiceSpec};
use swtbench_app::k8s::{self, Engine, HelperImages, ManifestSpec, NewClaim, Sizing};

use crate::args::RunArgs;

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
    /// Print the Kubernetes objects of the evaluation service on a PostgreSQL queue: a
    /// Deployment of `swtbench serve` (the API, no workers), a ClusterIP Service in front of it,
    /// and a DaemonSet of `swtbench worker` pods, one per node, each with its own engine. The
    /// database is yours. Apply with `kubectl apply -f`.
    Service(Box<ServiceArgs>),
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

impl ManifestArgs {
    /// The objects' description: `name` and `memory` as `swtbench_app::k8s::checked_flags` gave
    /// them, `run_flags` the checked run flags.
    pub fn spec(&self, name: String, memory: u64, run_flags: &[String]) -> ManifestSpec {
        let run = &self.run;
        ManifestSpec {
            name,
            namespace: self.namespace.clone(),
            image: self.image.clone(),
            shards: self.shards,
            parallelism: self.parallelism.unwrap_or(self.shards).min(self.shards),
            run_command: k8s::run_command(run_flags),
            claim: self.volume_claim.clone(),
            new_claim: self.volume_size.clone().map(|size| NewClaim {
                size,
                storage_class: self.storage_class.clone(),
            }),
            mount_path: self.mount_path.clone(),
            engine: self.engine,
            sizing: Sizing {
                workers: run.max_workers,
                build_workers: run.build_workers,
                memory,
                cpus: run.cpus,
            },
            backoff_limit_per_index: self.backoff_limit_per_index,
            wait_timeout: self.wait_timeout.clone(),
            helpers: HelperImages::with(self.engine_image.clone(), self.kubectl_image.clone()),
        }
    }
}

/// `swtbench k8s service [FLAGS] -- RUN FLAGS`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Everything after `--` is `swtbench run`'s flags for every evaluation, as \
`swtbench serve` takes them; they need --memory (the workers' pods are sized by it). E.g.\n  \
swtbench k8s service --image ghcr.io/acme/swtbench:0.1 --queue-secret swtbench-queue \
--token-secret swtbench-tokens -- --dataset lite --filter-swt --env-provider uv --memory 4g\n\
The queue's database, the Secrets and what to check: docs/service.md (On Kubernetes)."
)]
pub struct ServiceArgs {
    /// Base name of the objects: the Service <name>, the Deployment <name>-serve and the
    /// DaemonSet <name>-workers.
    #[arg(long, value_name = "NAME", default_value = "swtbench")]
    pub name: String,

    /// Namespace of every object (default: kubectl's current one).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,

    /// The image the pods run: `swtbench` on its PATH and /bin/sh.
    #[arg(long, value_name = "IMAGE")]
    pub image: String,

    /// The Secret key holding the queue's URL (postgres://USER:PASSWORD@HOST/DATABASE), given
    /// to every pod as SWTBENCH_QUEUE; KEY defaults to `url`.
    #[arg(long, value_name = "NAME[:KEY]")]
    pub queue_secret: SecretRef,

    /// The Secret key holding the service's token file (SHA-256 digests of the tokens, as
    /// `serve --token-file` reads it), mounted at /etc/swtbench/tokens; KEY defaults to
    /// `tokens`.
    #[arg(long, value_name = "NAME[:KEY]")]
    pub token_secret: SecretRef,

    /// Jobs at once in each worker pod (one pod per node).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub workers: u64,

    /// Seconds a worker holds a job without renewing its lease (`serve` and `worker --lease`);
    /// a worker pod has this and 30 s to stop.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(2..=3600))]
    pub lease: u64,

    /// The container engine of each worker pod: dind, podman or socket, as `k8s manifest` gives
    /// its shard pods.
    #[arg(long, value_name = "ENGINE", default_value = "dind")]
    pub engine: Engine,

    /// Run workers only on nodes with this label (repeatable: all of them).
    #[arg(long, value_name = "KEY=VALUE", value_parser = k8s::service::parse_node_selector)]
    pub node_selector: Vec<(String, String)>,

    /// A ReadWriteMany PersistentVolumeClaim mounted at /work (every pod's working directory),
    /// so that the workers share their runs; without it each pod has its own emptyDir there.
    #[arg(long, value_name = "NAME")]
    pub volume_claim: Option<String>,

    /// yaml (a stream of documents) or json (a v1 List).
    #[arg(long, value_enum, default_value = "yaml")]
    pub format: Format,

    /// Image of the engine sidecar (default: docker:28-dind for dind,
    /// quay.io/podman/stable:latest for podman).
    #[arg(long, value_name = "IMAGE")]
    pub engine_image: Option<String>,

    /// `swtbench run`'s flags for every evaluation (after `--`).
    #[arg(last = true, value_name = "RUN FLAGS", allow_hyphen_values = true)]
    pub run_args: Vec<String>,
}

impl ServiceArgs {
    /// The objects' description: `name` checked, `job` the run flags' sizing of one job.
    pub fn spec(&self, name: String, job: Sizing) -> ServiceSpec {
        ServiceSpec {
            name,
            namespace: self.namespace.clone(),
            image: self.image.clone(),
            run_flags: k8s::service::quoted_flags(&self.run_args),
            queue_secret: self.queue_secret.clone(),
            token_secret: self.token_secret.clone(),
            workers: usize::try_from(self.workers).unwrap_or(usize::MAX),
            lease: self.lease,
            engine: self.engine,
            job,
            node_selector: self.node_selector.iter().cloned().collect(),
            claim: self.volume_claim.clone(),
            helpers: HelperImages::with(self.engine_image.clone(), None),
        }
    }
}
