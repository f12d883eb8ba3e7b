//! An evaluation as Kubernetes objects (`swtbench k8s manifest`): an Indexed Job whose pod K runs
//! `swtbench run <run flags> --shard K+1/N`, and a merge Job that waits for it and runs
//! `swtbench run <run flags> --merge`. Everything lives on one ReadWriteMany volume mounted as
//! the pods' working directory, which is what lets the shards share gold/base runs and the merge
//! read every shard's outputs (the locks and `.done` pointers of a run work across nodes there).
//!
//! Pure: [`manifest`] takes the resolved choices and returns typed API objects (`k8s-openapi`),
//! [`to_yaml`] and [`to_json_list`] render them. Nothing here talks to a cluster or reads a file.
//!
//! **Ordering of the merge.** A Job cannot depend on another Job, so the merge pod has an init
//! container that runs `kubectl wait --for=condition=complete job/<shards job>`; it needs to read
//! Jobs, hence a ServiceAccount, a Role that may `get`/`list`/`watch` Jobs in the namespace and a
//! RoleBinding. The merge's main container starts only once every index has succeeded. When the
//! shards Job fails (an index used up its retries), the wait runs into its timeout and the merge
//! pod fails: fix the cause, delete both Jobs and apply again; finished runs are reused.
//!
//! **A container engine per pod** ([`Engine`]): a `docker:dind` sidecar (privileged), a rootless
//! Podman service sidecar (needs `/dev/fuse` and unconfined seccomp/AppArmor), or the node's
//! Docker socket (whoever can create the pod is root on the node). The sidecars are native
//! sidecars (init containers with `restartPolicy: Always`), so they start before swtbench, are
//! ready (a startup probe) when it connects, and stop when it exits, letting the pod complete.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::{
    Job, JobSpec, PodFailurePolicy, PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    AppArmorProfile, Container, EmptyDirVolumeSource, EnvVar, ExecAction, HostPathVolumeSource,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, PodSpec,
    PodTemplateSpec, Probe, ResourceRequirements, SELinuxOptions, SeccompProfile, SecurityContext,
    Service, ServiceAccount, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

pub mod service;

/// The label every object carries, with the base name as its value.
pub const NAME_LABEL: &str = "swtbench.io/evaluation";

/// The env var the Job controller sets in each pod of an Indexed Job (0-based index).
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// Memory of swtbench itself in a pod (it is ~50 MB; grading a large log takes more).
pub const SWTBENCH_MEMORY: u64 = 512 << 20;

/// Memory counted for each image build (`--build-workers`): builds have no container limit.
pub const BUILD_MEMORY: u64 = 2 << 30;

/// Memory of the engine daemon itself (dockerd, podman service).
pub const ENGINE_MEMORY: u64 = 512 << 20;

/// Where the engine's socket is shared between the sidecar and swtbench.
const SOCKET_DIR: &str = "/run/swtbench-engine";

/// The container engine each pod uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// A privileged `docker:dind` native sidecar with its own `/var/lib/docker` (emptyDir).
    Dind,
    /// A rootless Podman service native sidecar (Docker API on a socket).
    Podman,
    /// The node's Docker daemon through a hostPath socket.
    Socket,
}

/// What is wrong with a manifest's inputs, or why it could not be written out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("unknown engine `{0}`: one of dind, podman, socket")]
    UnknownEngine(String),
    #[error(
        "--name {0}: not a name Kubernetes takes (lowercase letters, digits and -, at most {MAX_BASE_NAME} characters)"
    )]
    BadName(String),
    /// A flag's value that Kubernetes would not take (the flag is named by the caller).
    #[error("`{value}`: {why}")]
    BadValue { value: String, why: String },
    /// The serializer's account (YAML or JSON).
    #[error("{0}")]
    Render(String),
}

impl std::str::FromStr for Engine {
    type Err = ManifestError;
    fn from_str(s: &str) -> Result<Engine, ManifestError> {
        match s {
            "dind" => Ok(Engine::Dind),
            "podman" => Ok(Engine::Podman),
            "socket" => Ok(Engine::Socket),
            other => Err(ManifestError::UnknownEngine(other.to_string())),
        }
    }
}

/// Images of the helper containers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperImages {
    pub dind: String,
    pub podman: String,
    pub kubectl: String,
}

impl Default for HelperImages {
    fn default() -> HelperImages {
        HelperImages {
            dind: "docker:28-dind".to_string(),
            podman: "quay.io/podman/stable:latest".to_string(),
            kubectl: "registry.k8s.io/kubectl:v1.33.0".to_string(),
        }
    }
}

impl HelperImages {
    /// The defaults, with `--engine-image` (both sidecars) and `--kubectl-image` when given.
    pub fn with(engine: Option<String>, kubectl: Option<String>) -> HelperImages {
        let d = HelperImages::default();
        HelperImages {
            dind: engine.clone().unwrap_or(d.dind),
            podman: engine.unwrap_or(d.podman),
            kubectl: kubectl.unwrap_or(d.kubectl),
        }
    }
}

/// A claim to create (otherwise the claim named in [`ManifestSpec::claim`] must exist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewClaim {
    /// A Kubernetes quantity, e.g. `500Gi`.
    pub size: String,
    pub storage_class: Option<String>,
}

/// What the test containers of one pod may use, from the run flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sizing {
    /// `--max-workers`.
    pub workers: usize,
    /// `--build-workers`.
    pub build_workers: usize,
    /// `--memory` of each test container, in bytes.
    pub memory: u64,
    /// `--cpus` of each test container.
    pub cpus: Option<f64>,
}

impl Sizing {
    /// Memory of the engine's side of a pod: every test container at its limit, the builds, the
    /// daemon.
    pub fn engine_memory(&self) -> u64 {
        self.workers as u64 * self.memory + self.build_workers as u64 * BUILD_MEMORY + ENGINE_MEMORY
    }

    /// CPUs of the engine's side in millicores: `--cpus` per container, else one.
    pub fn engine_millicpus(&self) -> u64 {
        (self.workers as f64 * self.cpus.unwrap_or(1.0) * 1000.0).ceil() as u64
    }
}

/// Everything the objects are made from.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestSpec {
    /// Base name of the objects (a DNS label, [`object_name`]).
    pub name: String,
    pub namespace: Option<String>,
    /// An image with `swtbench` on its PATH and `/bin/sh`.
    pub image: String,
    pub shards: usize,
    pub parallelism: usize,
    /// `swtbench run <run flags>` as shell words, quoted (the flags as given, without
    /// `--shard`, `--merge`, `--dry-run`).
    pub run_command: String,
    /// The ReadWriteMany claim mounted at `mount_path`.
    pub claim: String,
    pub new_claim: Option<NewClaim>,
    pub mount_path: String,
    pub engine: Engine,
    pub sizing: Sizing,
    /// Retries of each index before it counts as failed (their back-off doubles from 10 s).
    pub backoff_limit_per_index: i32,
    /// How long the merge waits for the shards (a kubectl duration, e.g. `72h`).
    pub wait_timeout: String,
    pub helpers: HelperImages,
}

/// One object of the manifest.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Object {
    ServiceAccount(Box<ServiceAccount>),
    Role(Box<Role>),
    RoleBinding(Box<RoleBinding>),
    PersistentVolumeClaim(Box<PersistentVolumeClaim>),
    Job(Box<Job>),
    Deployment(Box<Deployment>),
    Service(Box<Service>),
    DaemonSet(Box<DaemonSet>),
}

/// The objects, in the order they are to be applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub objects: Vec<Object>,
    /// Name of the Indexed Job of the shards.
    pub shards_job: String,
    /// Name of the merge Job.
    pub merge_job: String,
}

/// A DNS label from `s` (e.g. a run id): lowercase letters, digits and `-`, at most `max`
/// characters, starting and ending with a letter or digit. `None` when nothing is left.
pub fn object_name(s: &str, max: usize) -> Option<String> {
    let mut out = String::new();
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed: String = out.trim_matches('-').chars().take(max).collect();
    let trimmed = trimmed.trim_end_matches('-').to_string();
    (!trimmed.is_empty()).then_some(trimmed)
}

/// The base name of the objects: `name` when Kubernetes takes it as it is, else an error saying
/// what it takes; without one, derived from the run id.
pub fn base_name(name: Option<&str>, run_id: &str) -> Result<String, ManifestError> {
    match name {
        Some(n) => match object_name(n, MAX_BASE_NAME) {
            Some(ok) if ok == n => Ok(ok),
            _ => Err(ManifestError::BadName(n.to_string())),
        },
        None => Ok(object_name(&format!("swtbench-{run_id}"), MAX_BASE_NAME)
            .unwrap_or_else(|| "swtbench".to_string())),
    }
}

/// `k8s manifest`'s checks of its own flags and the run's: the pods' memory is `--max-workers`
/// × `--memory`, so `memory` must be given; the mount path is absolute; the objects' base name
/// (from `name`, else the run id) is one Kubernetes takes.
pub fn checked_flags(
    memory: Option<u64>,
    mount_path: &str,
    name: Option<&str>,
    run_id: &str,
) -> crate::Result<(u64, String)> {
    use crate::Error;
    let Some(memory) = memory else {
        return Err(Error::input(anyhow::anyhow!(
            "`k8s manifest` needs --memory: the pods' memory is --max-workers × --memory"
        ))
        .with_hint("give each test container's limit, e.g. --memory 4g"));
    };
    if !mount_path.starts_with('/') {
        return Err(Error::input(anyhow::anyhow!(
            "--mount-path {mount_path}: not an absolute path"
        ))
        .with_hint("e.g. --mount-path /work"));
    }
    let name = base_name(name, run_id).map_err(|e| {
        Error::input(anyhow::anyhow!(e)).with_hint("leave --name out to derive one from the run id")
    })?;
    Ok((memory, name))
}

/// The warnings about the run's paths (flag, path) that the pods do not see: not on the volume
/// mounted at `mount_path` (see [`off_volume`]).
pub fn off_volume_warnings(
    paths: Vec<(&str, Option<std::path::PathBuf>)>,
    mount_path: &str,
) -> Vec<String> {
    off_volume(paths, std::path::Path::new(mount_path))
        .into_iter()
        .map(|(flag, p)| {
            format!(
                "{flag} {} is not under --mount-path {mount_path}: the pods see only the volume (and their image)",
                p.display()
            )
        })
        .collect()
}

/// The run's paths the pods read or write, by flag (for [`off_volume_warnings`]): the output
/// directory, the predictions file (not `gold`), the dataset when it is an absolute path (else it
/// may be a name), the mirrors.
pub fn run_paths(
    output_dir: &std::path::Path,
    predictions: &str,
    dataset: &str,
    repo_mirror: Option<&std::path::Path>,
) -> Vec<(&'static str, Option<std::path::PathBuf>)> {
    use std::path::PathBuf;
    vec![
        ("--output-dir", Some(output_dir.to_path_buf())),
        (
            "--predictions",
            (predictions != "gold").then(|| PathBuf::from(predictions)),
        ),
        (
            "--dataset",
            Some(PathBuf::from(dataset)).filter(|p| p.is_absolute()),
        ),
        (
            "--repo-mirror",
            repo_mirror.map(std::path::Path::to_path_buf),
        ),
    ]
}

/// Where the rendered objects go: written to `out` (the line naming the Jobs and how to apply
/// them), or the text itself for stdout.
pub fn output(
    text: String,
    manifest: &Manifest,
    shards: usize,
    out: Option<&std::path::Path>,
) -> crate::Result<crate::lines::Line> {
    use crate::lines::Line;
    let Some(path) = out else {
        return Ok(Line::Data(text));
    };
    swtbench_data::fsutil::write_atomic(path, text.as_bytes()).map_err(|e| {
        crate::Error::environment(anyhow::anyhow!("writing {}: {e}", path.display()))
            .with_hint("check that the directory exists and is writable")
    })?;
    Ok(Line::Info(format!(
        "wrote {}: Jobs {} ({shards} shards) and {}; apply with `kubectl apply -f {}`",
        path.display(),
        manifest.shards_job,
        manifest.merge_job,
        path.display()
    )))
}

/// `swtbench run` with the run flags, each quoted for the shell.
pub fn run_command(run_flags: &[String]) -> String {
    std::iter::once("swtbench run".to_string())
        .chain(run_flags.iter().map(|f| crate::shell::quote(f)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The objects as text: YAML documents, or (`json`) a v1 List ending in a newline.
pub fn render(manifest: &Manifest, json: bool) -> crate::Result<String> {
    match json {
        false => to_yaml(manifest),
        true => to_json_list(manifest).map(|s| s + "\n"),
    }
    .map_err(|e| crate::Error::environment(anyhow::anyhow!("writing the manifest: {e}")))
}

/// The paths among `paths` (flag, path in the pods) that are not on the volume mounted at
/// `mount` (relative paths are: the pods work in the mount path).
pub fn off_volume<'a>(
    paths: Vec<(&'a str, Option<std::path::PathBuf>)>,
    mount: &std::path::Path,
) -> Vec<(&'a str, std::path::PathBuf)> {
    paths
        .into_iter()
        .filter_map(|(flag, p)| Some((flag, p?)))
        .filter(|(_, p)| !(p.is_relative() || p.starts_with(mount)))
        .collect()
}

/// The shell command of shard pods: the run command and `--shard` from the completion index.
pub fn shard_command(run_command: &str, shards: usize) -> String {
    format!("exec {run_command} --shard \"$(( {INDEX_ENV} + 1 ))/{shards}\"")
}

/// The shell command of the merge pod.
pub fn merge_command(run_command: &str) -> String {
    format!("exec {run_command} --merge")
}

/// Memory as a quantity in MiB (rounded up).
pub fn mebibytes(bytes: u64) -> Quantity {
    Quantity(format!("{}Mi", bytes.div_ceil(1 << 20)))
}

fn millicpus(m: u64) -> Quantity {
    Quantity(format!("{m}m"))
}

fn meta(spec: &ManifestSpec, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: spec.namespace.clone(),
        labels: Some(labels(spec)),
        ..ObjectMeta::default()
    }
}

fn labels(spec: &ManifestSpec) -> BTreeMap<String, String> {
    BTreeMap::from([(NAME_LABEL.to_string(), spec.name.clone())])
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.to_string(),
        mount_path: path.to_string(),
        ..VolumeMount::default()
    }
}

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: Some(value.to_string()),
        ..EnvVar::default()
    }
}

fn empty_dir(name: &str) -> Volume {
    Volume {
        name: name.to_string(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }
}

fn host_path(name: &str, path: &str, kind: &str) -> Volume {
    Volume {
        name: name.to_string(),
        host_path: Some(HostPathVolumeSource {
            path: path.to_string(),
            type_: Some(kind.to_string()),
        }),
        ..Volume::default()
    }
}

fn resources(memory: u64, millicpus_request: u64, cpu_limit: bool) -> ResourceRequirements {
    let requests = BTreeMap::from([
        ("memory".to_string(), mebibytes(memory)),
        ("cpu".to_string(), millicpus(millicpus_request)),
    ]);
    let mut limits = BTreeMap::from([("memory".to_string(), mebibytes(memory))]);
    if cpu_limit {
        limits.insert("cpu".to_string(), millicpus(millicpus_request));
    }
    ResourceRequirements {
        requests: Some(requests),
        limits: Some(limits),
        ..ResourceRequirements::default()
    }
}

fn exec_probe(command: &[&str]) -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(command.iter().map(|s| s.to_string()).collect()),
        }),
        period_seconds: Some(2),
        failure_threshold: Some(60),
        ..Probe::default()
    }
}

/// The engine side of a pod: sidecars, volumes, the DOCKER_HOST swtbench uses, and whether the
/// test containers' resources are the sidecar's (they run in its cgroup) or outside the pod.
struct EngineParts {
    sidecars: Vec<Container>,
    volumes: Vec<Volume>,
    mounts: Vec<VolumeMount>,
    docker_host: String,
    in_pod: bool,
}

/// The engine side of a pod running `sizing`'s test containers on `engine` (the shard pods of
/// [`manifest`] and the worker pods of [`service::service_manifest`]).
fn engine_parts(engine: Engine, sizing: &Sizing, helpers: &HelperImages) -> EngineParts {
    let s = sizing;
    let res = resources(s.engine_memory(), s.engine_millicpus(), s.cpus.is_some());
    let sock_mount = mount("engine-socket", SOCKET_DIR);
    match engine {
        Engine::Dind => {
            let sock = format!("{SOCKET_DIR}/docker.sock");
            EngineParts {
                sidecars: vec![Container {
                    name: "engine".to_string(),
                    image: Some(helpers.dind.clone()),
                    restart_policy: Some("Always".to_string()),
                    // The image's `dind` wrapper (cgroup and mount set-up) around dockerd on the
                    // shared socket only. The image's entrypoint is left out: without TLS
                    // certificates it would add an unauthenticated TCP listener on the pod's IP.
                    command: Some(vec![
                        "dind".to_string(),
                        "dockerd".to_string(),
                        format!("--host=unix://{sock}"),
                    ]),
                    security_context: Some(SecurityContext {
                        privileged: Some(true),
                        ..SecurityContext::default()
                    }),
                    startup_probe: Some(exec_probe(&[
                        "docker",
                        "-H",
                        &format!("unix://{sock}"),
                        "info",
                    ])),
                    resources: Some(res),
                    volume_mounts: Some(vec![
                        sock_mount.clone(),
                        mount("engine-data", "/var/lib/docker"),
                    ]),
                    ..Container::default()
                }],
                volumes: vec![empty_dir("engine-socket"), empty_dir("engine-data")],
                mounts: vec![sock_mount],
                docker_host: format!("unix://{sock}"),
                in_pod: true,
            }
        }
        Engine::Podman => {
            let sock = format!("{SOCKET_DIR}/podman.sock");
            EngineParts {
                sidecars: vec![Container {
                    name: "engine".to_string(),
                    image: Some(helpers.podman.clone()),
                    restart_policy: Some("Always".to_string()),
                    command: Some(vec![
                        "podman".to_string(),
                        "system".to_string(),
                        "service".to_string(),
                        "--time=0".to_string(),
                        format!("unix://{sock}"),
                    ]),
                    security_context: Some(SecurityContext {
                        // The image's `podman` user; rootless Podman maps its subordinate ids.
                        run_as_user: Some(1000),
                        run_as_group: Some(1000),
                        privileged: Some(false),
                        // Podman creates namespaces and mounts, which the runtime's default
                        // profiles forbid; `spc_t` is SELinux's "label=disable".
                        seccomp_profile: Some(SeccompProfile {
                            type_: "Unconfined".to_string(),
                            ..SeccompProfile::default()
                        }),
                        app_armor_profile: Some(AppArmorProfile {
                            type_: "Unconfined".to_string(),
                            ..AppArmorProfile::default()
                        }),
                        se_linux_options: Some(SELinuxOptions {
                            type_: Some("spc_t".to_string()),
                            ..SELinuxOptions::default()
                        }),
                        ..SecurityContext::default()
                    }),
                    startup_probe: Some(exec_probe(&["test", "-S", &sock])),
                    resources: Some(res),
                    volume_mounts: Some(vec![
                        sock_mount.clone(),
                        mount("engine-data", "/home/podman/.local/share/containers"),
                        mount("dev-fuse", "/dev/fuse"),
                    ]),
                    ..Container::default()
                }],
                volumes: vec![
                    empty_dir("engine-socket"),
                    empty_dir("engine-data"),
                    host_path("dev-fuse", "/dev/fuse", "CharDevice"),
                ],
                mounts: vec![sock_mount],
                docker_host: format!("unix://{sock}"),
                in_pod: true,
            }
        }
        Engine::Socket => EngineParts {
            sidecars: vec![],
            volumes: vec![host_path("engine-socket", "/var/run/docker.sock", "Socket")],
            mounts: vec![mount("engine-socket", "/var/run/docker.sock")],
            docker_host: "unix:///var/run/docker.sock".to_string(),
            in_pod: false,
        },
    }
}

/// The resources of the swtbench container beside an engine ([`EngineParts::in_pod`]).
fn swtbench_resources(engine_in_pod: bool, sizing: &Sizing) -> ResourceRequirements {
    if engine_in_pod {
        resources(SWTBENCH_MEMORY, 500, false)
    } else {
        // The test containers run beside the pod, not in its cgroup: the request reserves
        // their share of the node for the scheduler; the limit is swtbench's and theirs.
        resources(
            SWTBENCH_MEMORY + sizing.engine_memory(),
            sizing.engine_millicpus(),
            false,
        )
    }
}

/// The pod of a shard or of the merge: swtbench in the working directory on the claim, with its
/// engine; `command` is its shell command.
fn pod(spec: &ManifestSpec, command: String, merge: bool) -> PodSpec {
    let work = mount("work", &spec.mount_path);
    let mut volumes = vec![Volume {
        name: "work".to_string(),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: spec.claim.clone(),
            read_only: None,
        }),
        ..Volume::default()
    }];
    let mut init = vec![];
    let mut mounts = vec![work];
    let mut env_vars = vec![];
    let main_resources = if merge {
        // Grading and reports only: no engine.
        init.push(Container {
            name: "wait-for-shards".to_string(),
            image: Some(spec.helpers.kubectl.clone()),
            command: Some(vec![
                "kubectl".to_string(),
                "wait".to_string(),
                "--for=condition=complete".to_string(),
                format!("--timeout={}", spec.wait_timeout),
                format!("job/{}", shards_job_name(&spec.name)),
            ]),
            ..Container::default()
        });
        resources(SWTBENCH_MEMORY * 4, 1000, false)
    } else {
        let parts = engine_parts(spec.engine, &spec.sizing, &spec.helpers);
        init.extend(parts.sidecars);
        volumes.extend(parts.volumes);
        mounts.extend(parts.mounts);
        env_vars.push(env("DOCKER_HOST", &parts.docker_host));
        swtbench_resources(parts.in_pod, &spec.sizing)
    };
    let main = Container {
        name: "swtbench".to_string(),
        image: Some(spec.image.clone()),
        command: Some(vec!["/bin/sh".to_string(), "-c".to_string(), command]),
        working_dir: Some(spec.mount_path.clone()),
        env: (!env_vars.is_empty()).then_some(env_vars),
        resources: Some(main_resources),
        volume_mounts: Some(mounts),
        ..Container::default()
    };
    PodSpec {
        restart_policy: Some("Never".to_string()),
        service_account_name: merge.then(|| waiter_name(&spec.name)),
        // Only the merge's wait talks to the API server.
        automount_service_account_token: Some(merge),
        init_containers: (!init.is_empty()).then_some(init),
        containers: vec![main],
        volumes: Some(volumes),
        ..PodSpec::default()
    }
}

/// When a shard pod fails: a pod that was evicted, preempted or lost its node does not count
/// against the index's retries; any other failure is retried. Bad input (exit code 2) is retried
/// too, not failed at once: a replacement pod can find the shard's lock still held by the pod it
/// replaces (on NFS, until the lost client's lease expires), which `run` reports as exit code 2.
fn shard_failure_policy() -> PodFailurePolicy {
    PodFailurePolicy {
        rules: vec![PodFailurePolicyRule {
            action: "Ignore".to_string(),
            on_exit_codes: None,
            on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                type_: "DisruptionTarget".to_string(),
                status: "True".to_string(),
            }]),
        }],
    }
}

/// Name of the Indexed Job of the shards.
pub fn shards_job_name(base: &str) -> String {
    format!("{base}-shards")
}

/// Name of the merge Job.
pub fn merge_job_name(base: &str) -> String {
    format!("{base}-merge")
}

/// Name of the merge's ServiceAccount, Role and RoleBinding.
pub fn waiter_name(base: &str) -> String {
    format!("{base}-wait")
}

/// Longest base name: the Job controller labels pods with the Job's name (a label value of at
/// most 63 characters) and names an Indexed Job's pod hostnames `<job name>-<index>` (a DNS label
/// of at most 63); [`shards_job_name`] adds the longest suffix, and indexes have up to 5 digits.
pub const MAX_BASE_NAME: usize = 63 - "-shards".len() - "-99999".len();

fn template(spec: &ManifestSpec, pod: PodSpec) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels(spec)),
            ..ObjectMeta::default()
        }),
        spec: Some(pod),
    }
}

/// The objects of an evaluation in `spec.shards` shards.
pub fn manifest(spec: &ManifestSpec) -> Manifest {
    let shards_job = shards_job_name(&spec.name);
    let merge_job = merge_job_name(&spec.name);
    let waiter = waiter_name(&spec.name);
    let mut objects = vec![];
    if let Some(claim) = &spec.new_claim {
        objects.push(Object::PersistentVolumeClaim(Box::new(
            PersistentVolumeClaim {
                metadata: meta(spec, &spec.claim),
                spec: Some(PersistentVolumeClaimSpec {
                    access_modes: Some(vec!["ReadWriteMany".to_string()]),
                    storage_class_name: claim.storage_class.clone(),
                    resources: Some(VolumeResourceRequirements {
                        requests: Some(BTreeMap::from([(
                            "storage".to_string(),
                            Quantity(claim.size.clone()),
                        )])),
                        ..VolumeResourceRequirements::default()
                    }),
                    ..PersistentVolumeClaimSpec::default()
                }),
                ..PersistentVolumeClaim::default()
            },
        )));
    }
    objects.push(Object::ServiceAccount(Box::new(ServiceAccount {
        metadata: meta(spec, &waiter),
        ..ServiceAccount::default()
    })));
    objects.push(Object::Role(Box::new(Role {
        metadata: meta(spec, &waiter),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["batch".to_string()]),
            resources: Some(vec!["jobs".to_string()]),
            resource_names: Some(vec![shards_job.clone()]),
            verbs: ["get", "list", "watch"].map(String::from).to_vec(),
            ..PolicyRule::default()
        }]),
    })));
    objects.push(Object::RoleBinding(Box::new(RoleBinding {
        metadata: meta(spec, &waiter),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "Role".to_string(),
            name: waiter.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_string(),
            name: waiter.clone(),
            namespace: spec.namespace.clone(),
            ..Subject::default()
        }]),
    })));
    let shards = i32::try_from(spec.shards).unwrap_or(i32::MAX);
    let parallelism = i32::try_from(spec.parallelism).unwrap_or(i32::MAX);
    objects.push(Object::Job(Box::new(Job {
        metadata: meta(spec, &shards_job),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".to_string()),
            completions: Some(shards),
            parallelism: Some(parallelism),
            // Each index retries on its own; a failing shard does not use up the others' retries.
            backoff_limit_per_index: Some(spec.backoff_limit_per_index),
            pod_failure_policy: Some(shard_failure_policy()),
            template: template(
                spec,
                pod(spec, shard_command(&spec.run_command, spec.shards), false),
            ),
            ..JobSpec::default()
        }),
        ..Job::default()
    })));
    objects.push(Object::Job(Box::new(Job {
        metadata: meta(spec, &merge_job),
        spec: Some(JobSpec {
            completions: Some(1),
            parallelism: Some(1),
            backoff_limit: Some(2),
            template: template(spec, pod(spec, merge_command(&spec.run_command), true)),
            ..JobSpec::default()
        }),
        ..Job::default()
    })));
    Manifest {
        objects,
        shards_job,
        merge_job,
    }
}

/// The objects as a YAML stream (`---` between documents), the form people read and edit and
/// `kubectl apply -f` takes.
pub fn to_yaml(manifest: &Manifest) -> Result<String, ManifestError> {
    objects_yaml(&manifest.objects)
}

/// `objects` as a YAML stream (`---` before each document).
pub fn objects_yaml(objects: &[Object]) -> Result<String, ManifestError> {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        out.push_str(
            &serde_yaml_ng::to_string(object).map_err(|e| ManifestError::Render(e.to_string()))?,
        );
    }
    Ok(out)
}

/// The objects as one `v1/List` in JSON (for tools: jq, `kubectl apply -f`).
pub fn to_json_list(manifest: &Manifest) -> Result<String, ManifestError> {
    objects_json_list(&manifest.objects)
}

/// `objects` as one `v1/List` in JSON.
pub fn objects_json_list(objects: &[Object]) -> Result<String, ManifestError> {
    let list = serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": objects,
    });
    serde_json::to_string_pretty(&list).map_err(|e| ManifestError::Render(e.to_string()))
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
    use super::*;

    #[test]
    fn paths_on_the_volume() {
        let mount = std::path::Path::new("/work");
        let paths = [
            "data/d.jsonl",
            "/work/data/d.jsonl",
            "/home/me/d.jsonl",
            "/workspace/d.jsonl",
        ]
        .map(|p| ("--x", Some(std::path::PathBuf::from(p))));
        let off: Vec<_> = off_volume(paths.into_iter().chain([("--y", None)]).collect(), mount)
            .into_iter()
            .map(|(_, p)| p.display().to_string())
            .collect();
        assert_eq!(off, ["/home/me/d.jsonl", "/workspace/d.jsonl"]);
    }

    #[test]
    fn the_run_paths_the_pods_need_and_the_ones_off_the_volume() {
        use std::path::Path;
        let paths = run_paths(Path::new("/out"), "gold", "lite", Some(Path::new("m")));
        let warnings = off_volume_warnings(paths, "/work");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].starts_with("--output-dir /out is not under --mount-path /work"));
        let paths = run_paths(Path::new("."), "/p.jsonl", "/d.jsonl", None);
        let flags: Vec<_> = off_volume(paths, Path::new("/work"))
            .into_iter()
            .map(|(f, _)| f)
            .collect();
        assert_eq!(flags, ["--predictions", "--dataset"]);
    }

    #[test]
    fn helper_images_default_unless_given() {
        let d = HelperImages::default();
        assert_eq!(HelperImages::with(None, None), d);
        let h = HelperImages::with(Some("e".into()), Some("k".into()));
        assert_eq!(
            (h.dind.as_str(), h.podman.as_str(), h.kubectl.as_str()),
            ("e", "e", "k")
        );
    }

    #[test]
    fn the_objects_go_to_stdout_or_to_a_file_with_a_line_saying_so() {
        use crate::lines::Line;
        let m = Manifest {
            objects: Vec::new(),
            shards_job: "s".into(),
            merge_job: "m".into(),
        };
        assert_eq!(
            output("x".into(), &m, 2, None).unwrap(),
            Line::Data("x".into())
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.yaml");
        let line = output("y".into(), &m, 2, Some(&file)).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "y");
        assert!(matches!(line, Line::Info(l) if l.contains("Jobs s (2 shards) and m")));
        // Under a file: not a directory that can be made.
        let under_a_file = file.join("m.yaml");
        let e = output("y".into(), &m, 2, Some(&under_a_file)).unwrap_err();
        assert_eq!(e.fault, crate::Fault::Environment);
    }

    #[test]
    fn base_names_are_taken_as_given_or_derived_from_the_run_id() {
        assert_eq!(base_name(Some("my-run"), "x").as_deref(), Ok("my-run"));
        assert!(base_name(Some("My_Run"), "x").is_err());
        assert_eq!(base_name(None, "Run_1").as_deref(), Ok("swtbench-run-1"));
    }
    use serde_json::Value;

    const GIB: u64 = 1 << 30;

    fn spec(engine: Engine) -> ManifestSpec {
        ManifestSpec {
            name: "eval-r1".to_string(),
            namespace: Some("bench".to_string()),
            image: "ghcr.io/acme/swtbench:1".to_string(),
            shards: 8,
            parallelism: 3,
            run_command:
                "swtbench run --dataset data/full.jsonl --predictions 'it'\\''s.jsonl' --run-id r1"
                    .to_string(),
            claim: "swt-work".to_string(),
            new_claim: None,
            mount_path: "/work".to_string(),
            engine,
            sizing: Sizing {
                workers: 4,
                build_workers: 2,
                memory: 4 * GIB,
                cpus: Some(1.5),
            },
            backoff_limit_per_index: 2,
            wait_timeout: "72h".to_string(),
            helpers: HelperImages::default(),
        }
    }

    /// The manifest as JSON values, as a cluster would read it.
    fn objects(spec: &ManifestSpec) -> Vec<Value> {
        let list: Value = serde_json::from_str(&to_json_list(&manifest(spec)).unwrap()).unwrap();
        list["items"].as_array().unwrap().clone()
    }

    fn find<'a>(objs: &'a [Value], kind: &str, name: &str) -> &'a Value {
        objs.iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name} in {objs:#?}"))
    }

    fn container<'a>(pod: &'a Value, list: &str, name: &str) -> &'a Value {
        pod[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {list} {name} in {pod:#}"))
    }

    #[test]
    fn the_shards_are_an_indexed_job_of_n_completions_each_running_its_shard() {
        let objs = objects(&spec(Engine::Dind));
        let job = find(&objs, "Job", "eval-r1-shards");
        assert_eq!(job["apiVersion"], "batch/v1");
        assert_eq!(job["metadata"]["namespace"], "bench");
        let s = &job["spec"];
        assert_eq!(s["completionMode"], "Indexed");
        assert_eq!(s["completions"], 8);
        assert_eq!(s["parallelism"], 3);
        assert_eq!(s["backoffLimitPerIndex"], 2);
        let rules = &s["podFailurePolicy"]["rules"];
        assert_eq!(rules[0]["action"], "Ignore");
        assert_eq!(rules[0]["onPodConditions"][0]["type"], "DisruptionTarget");
        assert_eq!(
            rules.as_array().unwrap().len(),
            1,
            "every other failure is retried"
        );
        let pod = &s["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        let main = container(pod, "containers", "swtbench");
        assert_eq!(main["image"], "ghcr.io/acme/swtbench:1");
        assert_eq!(main["command"][0], "/bin/sh");
        assert_eq!(main["command"][1], "-c");
        assert_eq!(
            main["command"][2],
            "exec swtbench run --dataset data/full.jsonl --predictions 'it'\\''s.jsonl' --run-id r1 \
             --shard \"$(( JOB_COMPLETION_INDEX + 1 ))/8\""
        );
        assert_eq!(main["workingDir"], "/work");
    }

    #[test]
    fn the_shard_expression_gives_one_based_shards_in_a_shell() {
        // The pod's shell evaluates it: index 0 is shard 1/N, index N-1 is N/N.
        let cmd = shard_command("swtbench run --run-id r", 3);
        for (index, shard) in [(0, "1/3"), (2, "3/3")] {
            let out = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(cmd.replace("exec swtbench run", "echo"))
                .env(INDEX_ENV, index.to_string())
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                format!("--run-id r --shard {shard}")
            );
        }
    }

    #[test]
    fn every_pod_works_in_the_claim_mounted_at_the_mount_path() {
        let mut sp = spec(Engine::Socket);
        sp.new_claim = Some(NewClaim {
            size: "500Gi".to_string(),
            storage_class: Some("nfs".to_string()),
        });
        let objs = objects(&sp);
        let pvc = find(&objs, "PersistentVolumeClaim", "swt-work");
        assert_eq!(pvc["spec"]["accessModes"][0], "ReadWriteMany");
        assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "500Gi");
        assert_eq!(pvc["spec"]["storageClassName"], "nfs");
        for job in ["eval-r1-shards", "eval-r1-merge"] {
            let pod = &find(&objs, "Job", job)["spec"]["template"]["spec"];
            let vol = pod["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == "work")
                .unwrap();
            assert_eq!(vol["persistentVolumeClaim"]["claimName"], "swt-work");
            let main = container(pod, "containers", "swtbench");
            assert_eq!(main["volumeMounts"][0]["mountPath"], "/work");
            assert_eq!(main["volumeMounts"][0]["name"], "work");
        }
        // Without a size, the claim is not created (it must exist).
        let objs = objects(&spec(Engine::Socket));
        assert!(objs.iter().all(|o| o["kind"] != "PersistentVolumeClaim"));
    }

    #[test]
    fn the_engine_is_sized_for_every_test_container_at_its_limits() {
        let objs = objects(&spec(Engine::Dind));
        let pod = &find(&objs, "Job", "eval-r1-shards")["spec"]["template"]["spec"];
        let engine = container(pod, "initContainers", "engine");
        // 4 × 4 GiB + 2 builds × 2 GiB + 512 MiB of daemon.
        assert_eq!(engine["resources"]["limits"]["memory"], "20992Mi");
        assert_eq!(engine["resources"]["requests"]["memory"], "20992Mi");
        // 4 × 1.5 CPUs.
        assert_eq!(engine["resources"]["requests"]["cpu"], "6000m");
        assert_eq!(engine["resources"]["limits"]["cpu"], "6000m");
        let mut sp = spec(Engine::Dind);
        sp.sizing.cpus = None;
        let objs = objects(&sp);
        let pod = &find(&objs, "Job", "eval-r1-shards")["spec"]["template"]["spec"];
        let engine = container(pod, "initContainers", "engine");
        assert_eq!(
            engine["resources"]["requests"]["cpu"], "4000m",
            "one per container"
        );
        assert!(
            engine["resources"]["limits"].get("cpu").is_none(),
            "no --cpus, no CPU limit"
        );
        // With the node's daemon, the containers are outside the pod: swtbench's request holds
        // their share.
        let objs = objects(&spec(Engine::Socket));
        let pod = &find(&objs, "Job", "eval-r1-shards")["spec"]["template"]["spec"];
        let main = container(pod, "containers", "swtbench");
        assert_eq!(main["resources"]["requests"]["memory"], "21504Mi");
    }

    #[test]
    fn dind_is_a_privileged_native_sidecar_on_a_private_socket() {
        let objs = objects(&spec(Engine::Dind));
        let pod = &find(&objs, "Job", "eval-r1-shards")["spec"]["template"]["spec"];
        let engine = container(pod, "initContainers", "engine");
        assert_eq!(engine["image"], "docker:28-dind");
        assert_eq!(engine["restartPolicy"], "Always");
        assert_eq!(engine["securityContext"]["privileged"], true);
        assert_eq!(
            engine["command"],
            serde_json::json!([
                "dind",
                "dockerd",
                "--host=unix:///run/swtbench-engine/docker.sock"
            ]),
            "the socket only, no TCP listener"
        );
        assert!(engine.get("args").is_none());
        assert!(engine.get("env").is_none());
        assert!(engine["startupProbe"]["exec"]["command"].is_array());
        let mounts: Vec<&Value> = engine["volumeMounts"].as_array().unwrap().iter().collect();
        assert!(mounts.iter().any(|m| m["mountPath"] == "/var/lib/docker"));
        let main = container(pod, "containers", "swtbench");
        assert_eq!(main["env"][0]["name"], "DOCKER_HOST");
        assert_eq!(
            main["env"][0]["value"],
            "unix:///run/swtbench-engine/docker.sock"
        );
        assert_ne!(
            main["securityContext"]["privileged"], true,
            "swtbench is not privileged"
        );
        let vols = pod["volumes"].as_array().unwrap();
        assert!(vols
            .iter()
            .any(|v| v["name"] == "engine-data" && v["emptyDir"].is_object()));
        assert!(vols.iter().all(|v| v.get("hostPath").is_none()));
    }

    #[test]
    fn podman_is_rootless_with_fuse_and_unconfined_profiles() {
        let objs = objects(&spec(Engine::Podman));
        let pod = &find(&objs, "Job", "eval-r1-shards")["spec"]["template"]["spec"];
        let engine = container(pod, "initContainers", "engine");
        assert_eq!(engine["restartPolicy"], "Always");
        let sc = &engine["securityContext"];
        assert_eq!(sc["privileged"], false);
        assert_eq!(sc["runAsUser"], 1000);
        assert_eq!(sc["seccompProfile"]["type"], "Unconfined");
        assert_eq!(sc["appArmorProfile"]["type"], "Unconfined");
        assert_eq!(engine["command"][0], "podman");
        let fuse = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "dev-fuse")
            .unwrap();
        assert_eq!(fuse["hostPath"]["path"], "/dev/fuse");
        assert_eq!(fuse["hostPath"]["type"], "CharDevice");
        let main = container(pod, "containers", "swtbench");
        assert_eq!(
            main["env"][0]["value"],
            "unix:///run/swtbench-engine/podman.sock"
        );
    }

    #[test]
    fn socket_mounts_the_nodes_docker_socket_and_has_no_sidecar() {
        let objs = objects(&spec(Engine::Socket));
        let pod = &find(&objs, "Job", "eval-r1-shards")["spec"]["template"]["spec"];
        assert!(pod.get("initContainers").is_none());
        let vol = &pod["volumes"][1];
        assert_eq!(vol["hostPath"]["path"], "/var/run/docker.sock");
        assert_eq!(vol["hostPath"]["type"], "Socket");
        let main = container(pod, "containers", "swtbench");
        assert_eq!(main["env"][0]["value"], "unix:///var/run/docker.sock");
    }

    #[test]
    fn the_merge_waits_for_the_shards_job_with_just_enough_rights() {
        let objs = objects(&spec(Engine::Dind));
        let merge = find(&objs, "Job", "eval-r1-merge");
        let pod = &merge["spec"]["template"]["spec"];
        assert!(merge["spec"].get("completionMode").is_none());
        let wait = container(pod, "initContainers", "wait-for-shards");
        let cmd: Vec<&str> = wait["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(
            cmd,
            [
                "kubectl",
                "wait",
                "--for=condition=complete",
                "--timeout=72h",
                "job/eval-r1-shards"
            ]
        );
        assert!(
            wait.get("restartPolicy").is_none(),
            "a plain init container: it must end"
        );
        let main = container(pod, "containers", "swtbench");
        assert_eq!(
            main["command"][2],
            "exec swtbench run --dataset data/full.jsonl --predictions 'it'\\''s.jsonl' --run-id r1 --merge"
        );
        assert!(main.get("env").is_none(), "the merge needs no engine");
        assert_eq!(pod["serviceAccountName"], "eval-r1-wait");
        assert_eq!(pod["automountServiceAccountToken"], true);
        let shards_pod = &find(&objs, "Job", "eval-r1-shards")["spec"]["template"]["spec"];
        assert_eq!(shards_pod["automountServiceAccountToken"], false);

        find(&objs, "ServiceAccount", "eval-r1-wait");
        let role = find(&objs, "Role", "eval-r1-wait");
        assert_eq!(role["apiVersion"], "rbac.authorization.k8s.io/v1");
        let rule = &role["rules"][0];
        assert_eq!(rule["apiGroups"][0], "batch");
        assert_eq!(rule["resources"][0], "jobs");
        assert_eq!(rule["resourceNames"][0], "eval-r1-shards");
        assert_eq!(rule["verbs"], serde_json::json!(["get", "list", "watch"]));
        let binding = find(&objs, "RoleBinding", "eval-r1-wait");
        assert_eq!(binding["roleRef"]["name"], "eval-r1-wait");
        assert_eq!(binding["subjects"][0]["name"], "eval-r1-wait");
        assert_eq!(binding["subjects"][0]["namespace"], "bench");
        // The waiter's objects come before the Jobs that use them.
        let kinds: Vec<&str> = objs.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["ServiceAccount", "Role", "RoleBinding", "Job", "Job"]
        );
    }

    #[test]
    fn yaml_and_json_say_the_same() {
        let m = manifest(&spec(Engine::Podman));
        let yaml = to_yaml(&m).unwrap();
        let docs: Vec<Value> = yaml
            .split("---\n")
            .filter(|d| !d.trim().is_empty())
            .map(|d| serde_yaml_ng::from_str(d).unwrap())
            .collect();
        let list: Value = serde_json::from_str(&to_json_list(&m).unwrap()).unwrap();
        assert_eq!(Value::Array(docs), list["items"]);
        assert_eq!(list["kind"], "List");
    }

    #[test]
    fn object_names_are_dns_labels() {
        assert_eq!(
            object_name("My_Run.2024", 56).as_deref(),
            Some("my-run-2024")
        );
        assert_eq!(object_name("--a--b--", 56).as_deref(), Some("a-b"));
        assert_eq!(object_name("abc-def", 4).as_deref(), Some("abc"));
        assert_eq!(object_name("___", 56), None);
        assert_eq!(MAX_BASE_NAME + "-shards-99999".len(), 63);
    }

    #[test]
    fn engines_parse_by_name() {
        assert_eq!("dind".parse::<Engine>(), Ok(Engine::Dind));
        assert_eq!("socket".parse::<Engine>(), Ok(Engine::Socket));
        assert!("docker"
            .parse::<Engine>()
            .unwrap_err()
            .to_string()
            .contains("dind, podman, socket"));
    }
}
