//! The evaluation service as Kubernetes objects (`swtbench k8s service`): a Deployment of one
//! `swtbench serve` that accepts and answers (no workers of its own), a ClusterIP Service in front
//! of it, and a DaemonSet of `swtbench worker` pods, one per node, each with its own container
//! engine as [`super::manifest`]'s shard pods have one. They share a PostgreSQL queue the user
//! brings: its URL is a key of a Secret, given to every pod as [`QUEUE_ENV`].
//!
//! Pure: [`service_manifest`] takes the resolved choices and returns typed API objects, rendered
//! as [`super::objects_yaml`] and [`super::objects_json_list`] render any objects.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, Deployment, DeploymentSpec, DeploymentStrategy,
};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction, KeyToPath, PodSpec,
    PodTemplateSpec, Probe, SecretKeySelector, SecretVolumeSource, Service, ServicePort,
    ServiceSpec as K8sServiceSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{
    empty_dir, engine_parts, env, mount, resources, swtbench_resources, Engine, HelperImages,
    ManifestError, Object, Sizing, NAME_LABEL, SWTBENCH_MEMORY,
};

/// The port the service listens on in its pod, and the Service's port.
pub const PORT: i32 = 8787;

/// The env var holding the queue's URL (from the queue Secret) in every pod.
pub const QUEUE_ENV: &str = "SWTBENCH_QUEUE";

/// Where the token Secret is mounted in the service's pod.
pub const TOKEN_DIR: &str = "/etc/swtbench";

/// The token file the service reads, in [`TOKEN_DIR`].
pub const TOKEN_FILE: &str = "/etc/swtbench/tokens";

/// The pods' working directory: relative paths of the run flags are relative to it.
pub const WORK_DIR: &str = "/work";

/// The label telling the service's pods from the workers'.
pub const COMPONENT_LABEL: &str = "swtbench.io/component";

/// Runs of one instance (gold, base and the prediction's, each before and after the fix): the
/// most test containers one job uses at once.
pub const RUNS_PER_INSTANCE: usize = 6;

/// Seconds a stopping worker has beyond its lease: to stop its containers and put its jobs back.
pub const STOP_MARGIN: u64 = 30;

/// A key of a Secret (`NAME[:KEY]`; the key defaults per flag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretRef {
    pub name: String,
    /// `None`: the flag's default key.
    pub key: Option<String>,
}

impl std::str::FromStr for SecretRef {
    type Err = ManifestError;
    fn from_str(s: &str) -> Result<SecretRef, ManifestError> {
        let bad = |why: &str| ManifestError::BadValue {
            value: s.to_string(),
            why: why.to_string(),
        };
        let (name, key) = match s.split_once(':') {
            Some((n, k)) => (n, Some(k)),
            None => (s, None),
        };
        if !is_subdomain(name) {
            return Err(bad(
                "not a Secret name (lowercase letters, digits, - and ., at most 253 characters, \
                 starting and ending with a letter or digit); give NAME or NAME:KEY",
            ));
        }
        if let Some(k) = key {
            let ok = !k.is_empty()
                && k.len() <= 253
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
            if !ok {
                return Err(bad(
                    "not a Secret key (letters, digits, -, _ and ., at most 253 characters)",
                ));
            }
        }
        Ok(SecretRef {
            name: name.to_string(),
            key: key.map(str::to_string),
        })
    }
}

impl SecretRef {
    /// The key, or `default`.
    pub fn key_or<'a>(&'a self, default: &'a str) -> &'a str {
        self.key.as_deref().unwrap_or(default)
    }
}

/// A DNS subdomain (RFC 1123) as Kubernetes names most objects.
fn is_subdomain(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !s.is_empty()
        && s.len() <= 253
        && s.bytes().all(|b| alnum(b) || b == b'-' || b == b'.')
        && s.bytes().next().is_some_and(alnum)
        && s.bytes().last().is_some_and(alnum)
}

/// One `--node-selector KEY=VALUE`: a label of the nodes the workers run on.
pub fn parse_node_selector(s: &str) -> Result<(String, String), ManifestError> {
    let bad = |why: &str| ManifestError::BadValue {
        value: s.to_string(),
        why: why.to_string(),
    };
    let Some((key, value)) = s.split_once('=') else {
        return Err(bad(
            "not KEY=VALUE (a node label, e.g. swtbench.io/worker=true)",
        ));
    };
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if prefix.is_some_and(|p| !is_subdomain(p)) || !is_label_value(name) || name.is_empty() {
        return Err(bad(
            "the key is not a label key ([prefix/]name: a name of letters, digits, -, _ and ., \
             at most 63 characters)",
        ));
    }
    if !is_label_value(value) {
        return Err(bad(
            "the value is not a label value (letters, digits, -, _ and ., at most 63 characters, \
             starting and ending with a letter or digit)",
        ));
    }
    Ok((key.to_string(), value.to_string()))
}

fn is_label_value(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    s.is_empty()
        || (s.len() <= 63
            && s.bytes().all(|b| alnum(b) || b"-_.".contains(&b))
            && s.bytes().next().is_some_and(alnum)
            && s.bytes().last().is_some_and(alnum))
}

/// Everything the service's objects are made from.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceSpec {
    /// Base name of the objects (a DNS label, [`super::base_name`]).
    pub name: String,
    pub namespace: Option<String>,
    /// An image with `swtbench` on its PATH and `/bin/sh`.
    pub image: String,
    /// `run`'s flags (after `--`), each quoted for the shell and joined by spaces.
    pub run_flags: String,
    /// The Secret key holding the queue's URL (`postgres://…`).
    pub queue_secret: SecretRef,
    /// The Secret key holding the token file (SHA-256 digests of the tokens).
    pub token_secret: SecretRef,
    /// `swtbench worker --workers`: jobs at once in each worker pod.
    pub workers: usize,
    /// `--lease` of the service and the workers, in seconds.
    pub lease: u64,
    pub engine: Engine,
    /// The run flags' sizing of one job's test containers (`--max-workers`, `--memory`, …).
    pub job: Sizing,
    /// Labels a node must have to run a worker.
    pub node_selector: BTreeMap<String, String>,
    /// A ReadWriteMany claim mounted at [`WORK_DIR`] in every pod; without one, each pod's
    /// working directory is its own emptyDir.
    pub claim: Option<String>,
    pub helpers: HelperImages,
}

/// The service's objects, in the order they are to be applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceManifest {
    pub objects: Vec<Object>,
    /// The Service's (and the API's host) name.
    pub service: String,
    pub deployment: String,
    pub daemon_set: String,
}

/// Default key of the queue Secret.
pub const QUEUE_KEY: &str = "url";

/// Default key of the token Secret.
pub const TOKEN_KEY: &str = "tokens";

/// Name of the Deployment of `swtbench serve`.
pub fn serve_name(base: &str) -> String {
    format!("{base}-serve")
}

/// Name of the DaemonSet of `swtbench worker`.
pub fn workers_name(base: &str) -> String {
    format!("{base}-workers")
}

/// What one worker pod may run at once: `workers` jobs, each one instance, so at most
/// [`RUNS_PER_INSTANCE`] (and `--max-workers`) test containers and one image build (an instance's
/// images are built one after the other).
pub fn node_sizing(workers: usize, job: &Sizing) -> Sizing {
    Sizing {
        workers: workers * job.workers.min(RUNS_PER_INSTANCE),
        build_workers: workers * job.build_workers.min(1),
        memory: job.memory,
        cpus: job.cpus,
    }
}

/// The shell command of the service's pod.
pub fn serve_command(run_flags: &str, lease: u64) -> String {
    format!(
        "exec swtbench serve --listen 0.0.0.0:{PORT} --workers 0 --queue \"${QUEUE_ENV}\" \
         --lease {lease} --token-file {TOKEN_FILE} -- {run_flags}"
    )
}

/// The shell command of a worker pod.
pub fn worker_command(run_flags: &str, workers: usize, lease: u64) -> String {
    format!(
        "exec swtbench worker --queue \"${QUEUE_ENV}\" --workers {workers} --lease {lease} -- \
         {run_flags}"
    )
}

fn labels(spec: &ServiceSpec, component: Option<&str>) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([(NAME_LABEL.to_string(), spec.name.clone())]);
    if let Some(c) = component {
        l.insert(COMPONENT_LABEL.to_string(), c.to_string());
    }
    l
}

fn meta(spec: &ServiceSpec, name: &str, component: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: spec.namespace.clone(),
        labels: Some(labels(spec, component)),
        ..ObjectMeta::default()
    }
}

fn template(spec: &ServiceSpec, component: &str, pod: PodSpec) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels(spec, Some(component))),
            ..ObjectMeta::default()
        }),
        spec: Some(pod),
    }
}

fn selector(spec: &ServiceSpec, component: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels(spec, Some(component))),
        ..LabelSelector::default()
    }
}

fn queue_env(spec: &ServiceSpec) -> EnvVar {
    EnvVar {
        name: QUEUE_ENV.to_string(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: spec.queue_secret.name.clone(),
                key: spec.queue_secret.key_or(QUEUE_KEY).to_string(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

/// The working directory's volume: the claim, else the pod's own emptyDir.
fn work_volume(spec: &ServiceSpec) -> Volume {
    match &spec.claim {
        Some(claim) => Volume {
            name: "work".to_string(),
            persistent_volume_claim: Some(
                k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource {
                    claim_name: claim.clone(),
                    read_only: None,
                },
            ),
            ..Volume::default()
        },
        None => empty_dir("work"),
    }
}

fn health_probe(period: i32, failures: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/healthz".to_string()),
            port: IntOrString::String("http".to_string()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period),
        timeout_seconds: Some(5),
        failure_threshold: Some(failures),
        ..Probe::default()
    }
}

fn shell(command: String) -> Option<Vec<String>> {
    Some(vec!["/bin/sh".to_string(), "-c".to_string(), command])
}

/// The pod of `swtbench serve`: the API only (`--workers 0`), the token file from its Secret.
fn serve_pod(spec: &ServiceSpec) -> PodSpec {
    let main = Container {
        name: "swtbench".to_string(),
        image: Some(spec.image.clone()),
        command: shell(serve_command(&spec.run_flags, spec.lease)),
        working_dir: Some(WORK_DIR.to_string()),
        env: Some(vec![queue_env(spec)]),
        ports: Some(vec![ContainerPort {
            name: Some("http".to_string()),
            container_port: PORT,
            protocol: Some("TCP".to_string()),
            ..ContainerPort::default()
        }]),
        // Loading the dataset (a download, the first time) comes before the listener: the
        // startup probe waits up to 10 minutes for it, then the other two take over.
        startup_probe: Some(health_probe(5, 120)),
        readiness_probe: Some(health_probe(10, 3)),
        liveness_probe: Some(health_probe(20, 3)),
        // Accepting, answering and the dataset in memory; no evaluation runs here.
        resources: Some(resources(SWTBENCH_MEMORY * 2, 500, false)),
        volume_mounts: Some(vec![
            mount("work", WORK_DIR),
            k8s_openapi::api::core::v1::VolumeMount {
                read_only: Some(true),
                ..mount("tokens", TOKEN_DIR)
            },
        ]),
        ..Container::default()
    };
    PodSpec {
        automount_service_account_token: Some(false),
        containers: vec![main],
        volumes: Some(vec![
            work_volume(spec),
            Volume {
                name: "tokens".to_string(),
                secret: Some(SecretVolumeSource {
                    secret_name: Some(spec.token_secret.name.clone()),
                    items: Some(vec![KeyToPath {
                        key: spec.token_secret.key_or(TOKEN_KEY).to_string(),
                        path: "tokens".to_string(),
                        mode: None,
                    }]),
                    optional: Some(false),
                    ..SecretVolumeSource::default()
                }),
                ..Volume::default()
            },
        ]),
        ..PodSpec::default()
    }
}

/// The pod of a worker: `swtbench worker` with its engine, sized for its jobs.
fn worker_pod(spec: &ServiceSpec) -> PodSpec {
    let sizing = node_sizing(spec.workers, &spec.job);
    let parts = engine_parts(spec.engine, &sizing, &spec.helpers);
    let mut mounts = vec![mount("work", WORK_DIR)];
    mounts.extend(parts.mounts);
    let mut volumes = vec![work_volume(spec)];
    volumes.extend(parts.volumes);
    let main = Container {
        name: "swtbench".to_string(),
        image: Some(spec.image.clone()),
        command: shell(worker_command(&spec.run_flags, spec.workers, spec.lease)),
        working_dir: Some(WORK_DIR.to_string()),
        env: Some(vec![
            env("DOCKER_HOST", &parts.docker_host),
            queue_env(spec),
        ]),
        resources: Some(swtbench_resources(parts.in_pod, &sizing)),
        volume_mounts: Some(mounts),
        ..Container::default()
    };
    PodSpec {
        automount_service_account_token: Some(false),
        init_containers: (!parts.sidecars.is_empty()).then_some(parts.sidecars),
        containers: vec![main],
        volumes: Some(volumes),
        node_selector: (!spec.node_selector.is_empty()).then(|| spec.node_selector.clone()),
        // SIGTERM puts the running jobs back at once; should that fail, their leases run out.
        termination_grace_period_seconds: Some(
            i64::try_from(spec.lease + STOP_MARGIN).unwrap_or(i64::MAX),
        ),
        ..PodSpec::default()
    }
}

/// The service's objects: Service, Deployment, DaemonSet.
pub fn service_manifest(spec: &ServiceSpec) -> ServiceManifest {
    let serve = serve_name(&spec.name);
    let workers = workers_name(&spec.name);
    let service = Service {
        metadata: meta(spec, &spec.name, None),
        spec: Some(K8sServiceSpec {
            type_: Some("ClusterIP".to_string()),
            selector: Some(labels(spec, Some("serve"))),
            ports: Some(vec![ServicePort {
                name: Some("http".to_string()),
                port: PORT,
                target_port: Some(IntOrString::String("http".to_string())),
                protocol: Some("TCP".to_string()),
                ..ServicePort::default()
            }]),
            ..K8sServiceSpec::default()
        }),
        ..Service::default()
    };
    let deployment = Deployment {
        metadata: meta(spec, &serve, Some("serve")),
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: selector(spec, "serve"),
            // The old pod stops before the new one starts: one service at a time.
            strategy: Some(DeploymentStrategy {
                type_: Some("Recreate".to_string()),
                ..DeploymentStrategy::default()
            }),
            template: template(spec, "serve", serve_pod(spec)),
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    };
    let daemon_set = DaemonSet {
        metadata: meta(spec, &workers, Some("worker")),
        spec: Some(DaemonSetSpec {
            selector: selector(spec, "worker"),
            template: template(spec, "worker", worker_pod(spec)),
            ..DaemonSetSpec::default()
        }),
        ..DaemonSet::default()
    };
    ServiceManifest {
        objects: vec![
            Object::Service(Box::new(service)),
            Object::Deployment(Box::new(deployment)),
            Object::DaemonSet(Box::new(daemon_set)),
        ],
        service: spec.name.clone(),
        deployment: serve,
        daemon_set: workers,
    }
}

/// The objects as text: YAML documents, or (`json`) a v1 List ending in a newline.
pub fn render(manifest: &ServiceManifest, json: bool) -> crate::Result<String> {
    match json {
        false => super::objects_yaml(&manifest.objects),
        true => super::objects_json_list(&manifest.objects).map(|s| s + "\n"),
    }
    .map_err(|e| crate::Error::environment(anyhow::anyhow!("writing the manifest: {e}")))
}

/// `run`'s flags, each quoted for the shell, joined by spaces.
pub fn quoted_flags(run_flags: &[String]) -> String {
    run_flags
        .iter()
        .map(|f| crate::shell::quote(f))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
    use super::*;
    use serde_json::Value;

    const GIB: u64 = 1 << 30;

    fn spec(engine: Engine) -> ServiceSpec {
        ServiceSpec {
            name: "evals".to_string(),
            namespace: Some("bench".to_string()),
            image: "ghcr.io/acme/swtbench:1".to_string(),
            run_flags: quoted_flags(&[
                "--dataset".to_string(),
                "data/it's.jsonl".to_string(),
                "--max-workers".to_string(),
                "8".to_string(),
            ]),
            queue_secret: "pg:dsn".parse().unwrap(),
            token_secret: "tokens".parse().unwrap(),
            workers: 2,
            lease: 90,
            engine,
            job: Sizing {
                workers: 8,
                build_workers: 2,
                memory: 4 * GIB,
                cpus: Some(1.0),
            },
            node_selector: BTreeMap::from([("pool".to_string(), "eval".to_string())]),
            claim: None,
            helpers: HelperImages::default(),
        }
    }

    fn objects(spec: &ServiceSpec) -> Vec<Value> {
        let m = service_manifest(spec);
        let list: Value =
            serde_json::from_str(&super::super::objects_json_list(&m.objects).unwrap()).unwrap();
        list["items"].as_array().unwrap().clone()
    }

    fn find<'a>(objs: &'a [Value], kind: &str) -> &'a Value {
        objs.iter()
            .find(|o| o["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind}"))
    }

    #[test]
    fn the_service_selects_the_serve_pods_only() {
        let objs = objects(&spec(Engine::Dind));
        let kinds: Vec<&str> = objs.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Service", "Deployment", "DaemonSet"]);
        let svc = find(&objs, "Service");
        assert_eq!(svc["metadata"]["name"], "evals");
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert_eq!(svc["spec"]["ports"][0]["port"], 8787);
        let dep = find(&objs, "Deployment");
        assert_eq!(
            svc["spec"]["selector"],
            dep["spec"]["selector"]["matchLabels"]
        );
        assert_eq!(
            dep["spec"]["selector"]["matchLabels"],
            dep["spec"]["template"]["metadata"]["labels"]
        );
        let ds = find(&objs, "DaemonSet");
        assert_ne!(
            svc["spec"]["selector"], ds["spec"]["template"]["metadata"]["labels"],
            "the workers answer no requests"
        );
        assert_eq!(
            ds["spec"]["selector"]["matchLabels"],
            ds["spec"]["template"]["metadata"]["labels"]
        );
    }

    #[test]
    fn a_worker_pod_is_sized_for_its_jobs_at_six_runs_and_one_build_each() {
        let s = node_sizing(2, &spec(Engine::Dind).job);
        assert_eq!((s.workers, s.build_workers), (12, 2));
        let s = node_sizing(
            3,
            &Sizing {
                workers: 2,
                build_workers: 4,
                memory: GIB,
                cpus: None,
            },
        );
        assert_eq!((s.workers, s.build_workers), (6, 3));
        let objs = objects(&spec(Engine::Dind));
        let pod = &find(&objs, "DaemonSet")["spec"]["template"]["spec"];
        // 12 × 4 GiB + 2 × 2 GiB + 512 MiB; 12 × 1 CPU.
        let engine = &pod["initContainers"][0];
        assert_eq!(engine["resources"]["limits"]["memory"], "53760Mi");
        assert_eq!(engine["resources"]["limits"]["cpu"], "12000m");
    }

    #[test]
    fn secret_refs_and_node_selectors_are_checked() {
        let r: SecretRef = "pg".parse().unwrap();
        assert_eq!((r.name.as_str(), r.key_or("url")), ("pg", "url"));
        let r: SecretRef = "pg.db:DSN_1".parse().unwrap();
        assert_eq!((r.name.as_str(), r.key_or("url")), ("pg.db", "DSN_1"));
        for bad in ["", "Pg", "pg:", "pg:a/b", "-pg", "pg_x"] {
            assert!(bad.parse::<SecretRef>().is_err(), "{bad}");
        }
        assert_eq!(
            parse_node_selector("swtbench.io/worker=true").unwrap(),
            ("swtbench.io/worker".to_string(), "true".to_string())
        );
        assert!(
            parse_node_selector("pool=").is_ok(),
            "an empty value is a value"
        );
        for bad in ["pool", "=x", "a b=c", "pool=-x", "Bad_/x=y"] {
            assert!(parse_node_selector(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_worker_command_expands_the_queue_in_a_shell() {
        let cmd = worker_command("--dataset 'a b'", 2, 60).replace("exec swtbench", "echo");
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(cmd)
            .env(QUEUE_ENV, "postgres://u:p w@db/q")
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "worker --queue postgres://u:p w@db/q --workers 2 --lease 60 -- --dataset a b"
        );
    }
}
