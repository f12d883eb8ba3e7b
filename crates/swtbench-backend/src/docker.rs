//! `DockerBackend`: the real engine, Docker or Podman, through the Docker Engine API (bollard).
//!
//! One client per backend, API version negotiated once at connect, explicit deadlines (a short one
//! for the first contact, [`DockerOptions::request_timeout`] for every later short call; streamed
//! bodies such as build logs and command output are bounded by their own limits instead, with a
//! liveness probe when they stay quiet, see [`crate::liveness`]). A call that gets no answer in
//! time is [`BackendError::RequestTimeout`] when the engine still answers a ping, and
//! [`BackendError::EngineHung`] when it does not; after that the engine counts as lost and every
//! call gets only the probe's deadline until one is answered again. Only endpoints that Podman's
//! compatibility API also serves are used: legacy `/build`, `/images/create?fromSrc=-`,
//! `/containers/*/archive`, `/exec`. Nothing of bollard appears in this module's public API.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::errors::Error as BollardError;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig, ResourcesUlimits, SystemInfo};
use bollard::query_parameters::{
    BuildImageOptions, BuildImageOptionsBuilder, CreateContainerOptionsBuilder,
    CreateImageOptionsBuilder, DownloadFromContainerOptionsBuilder, InspectContainerOptionsBuilder,
    KillContainerOptionsBuilder, ListContainersOptionsBuilder, ListImagesOptionsBuilder,
    PushImageOptionsBuilder, RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder,
    TagImageOptionsBuilder, UploadToContainerOptionsBuilder,
};
use bollard::Docker;
use futures_util::StreamExt;

use crate::backend::{ContainerBackend, LogSink};
use crate::context::{container_files_tar, single_file_from_tar, BuildContext};
use crate::error::{BackendError, Result};
use crate::labels::LabelFilter;
use crate::liveness::{next_or_probe, Wait};
use crate::model::{
    BuildRequest, ContainerFile, ContainerInfo, ContainerSpec, EngineHost, EngineInfo, EngineKind,
    ExecOutput, ExecRequest, ImageInfo, ImportRequest, NetworkAccess, ProgressSink, RegistryAuth,
    RootfsSource, TransferProgress, Written,
};
use crate::output::{strip_ansi, LineSplitter, OutputCollector, OutputSink};

/// How to reach the engine and how long to wait for it.
#[derive(Debug, Clone)]
pub struct DockerOptions {
    /// `unix:///path`, `tcp://host:port`, `http://…` (the caller's `DOCKER_HOST`); `None` or
    /// empty: the Docker socket, then the Podman sockets.
    pub host: Option<String>,
    /// Limit for the first contact (version negotiation, ping).
    pub connect_timeout: Duration,
    /// Deadline of every later short call (create, start, copy, inspect, kill, remove, list); not
    /// of streamed bodies (command output, build logs, imports).
    pub request_timeout: Duration,
    /// How long a liveness probe (a ping) may take before the engine counts as lost.
    pub probe_deadline: Duration,
    /// How long an output stream may stay silent before the engine is probed.
    pub quiet_probe: Duration,
    /// After a command timed out and its process group was killed, how long to wait for its output
    /// to end before killing the whole container.
    pub kill_grace: Duration,
    /// The name of the internal network of [`NetworkAccess::Isolated`] containers
    /// ([`ISOLATED_NETWORK`] unless a test needs its own).
    pub isolated_network: String,
    /// A directory for the file lock under which the processes of this machine look the isolated
    /// network up and make it (`swtbench-network-<name>.lock`), so that processes starting at once
    /// make one network, not one each; `None` (or a directory that cannot hold the lock): no lock,
    /// and duplicates are resolved as [`DockerBackend`] describes.
    pub network_lock_dir: Option<std::path::PathBuf>,
    /// The process this connection works for, as an owner label (`<host>/<pid>/<start>`, see
    /// `swtbench_core::owner`): every container it creates carries it as
    /// [`crate::labels::SESSION`] unless its spec names an owner itself (build containers of
    /// commit builds, `envs lock` containers and test containers alike), and so does the
    /// isolated network it makes. A later process removes what a dead owner left by it. `None`
    /// (tests of this crate): no owner label is added.
    pub owner: Option<String>,
}

impl Default for DockerOptions {
    fn default() -> Self {
        DockerOptions {
            host: None,
            connect_timeout: Duration::from_secs(15),
            request_timeout: crate::liveness::DEFAULT_CALL_DEADLINE,
            probe_deadline: crate::liveness::PROBE_DEADLINE,
            quiet_probe: crate::liveness::DEFAULT_QUIET_PROBE,
            kill_grace: Duration::from_secs(5),
            isolated_network: ISOLATED_NETWORK.to_string(),
            network_lock_dir: Some(std::path::PathBuf::from("/tmp")),
            owner: None,
        }
    }
}

/// Takes the machine-wide lock of `name`'s look-up in `dir` (blocking: call off the async
/// threads); `None` when the lock file cannot be opened or locked.
fn lock_network_lookup(dir: &std::path::Path, name: &str) -> Option<std::fs::File> {
    let path = dir.join(format!("swtbench-network-{name}.lock"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    file.lock().ok()?;
    Some(file)
}

/// A container engine reached through the Docker API.
#[derive(Debug, Clone)]
pub struct DockerBackend {
    client: Docker,
    info: EngineInfo,
    options: DockerOptions,
    /// Whether containers get the engine's disk quota (`--storage-opt size=`); cleared when the
    /// engine refuses it once.
    disk_quota: Arc<AtomicBool>,
    /// Set when the engine did not answer a probe, cleared by any answer: while set, calls get
    /// only the probe's deadline.
    lost: Arc<AtomicBool>,
    /// Builds running on this connection (and its clones) and the step images of failed builds
    /// that wait for them to end ([`crate::steps`]).
    steps: crate::steps::SharedReaper,
    /// The id of [`ISOLATED_NETWORK`] once known.
    isolated_id: Arc<std::sync::Mutex<Option<String>>>,
    /// Held (read) by each container removal running in the background; written by
    /// [`ContainerBackend::settle_background`] to wait for all of them.
    pub(crate) background: Arc<tokio::sync::RwLock<()>>,
}

/// How long [`ContainerBackend::settle_background`] waits for the removals under way.
const SETTLE_BACKGROUND_LIMIT: Duration = Duration::from_secs(60);

/// How long a container removal that found another one under way waits for the container to go.
const REMOVAL_IN_PROGRESS_LIMIT: Duration = Duration::from_secs(60);

const DOCKER_SOCKET: &str = "/var/run/docker.sock";

/// The internal network of [`NetworkAccess::Isolated`] containers: no route off the machine, no
/// traffic between its containers (`enable_icc=false`). Made when first needed, labelled
/// `swtbench.kind=network`, shared by every swtbench process of the engine.
pub const ISOLATED_NETWORK: &str = "swtbench-isolated";

/// The client library's own limit on waiting for response headers, a backstop behind the
/// backend's deadlines (which must fire first).
const CLIENT_BACKSTOP: Duration = Duration::from_secs(300);

/// Runs the command as the leader of its own process group (the exec's process already leads a
/// new session under runc and crun; its PID is recorded so the whole group can be killed) with
/// stderr on stdout, so the combined output keeps the order it was written in.
const EXEC_WRAPPER: &str = r#"{ echo $$ > "$0"; } 2>/dev/null; exec "$@" 2>&1"#;
/// Kills the process group recorded by [`EXEC_WRAPPER`] (or the process alone if it is not a
/// group leader).
const KILL_GROUP: &str = r#"p=$(cat "$0" 2>/dev/null) || exit 3; kill -s KILL -- -"$p" 2>/dev/null || kill -s KILL "$p""#;

impl DockerBackend {
    /// [`ContainerBackend::copy_out`] that stops reading once the archive is more than `limit`
    /// bytes and a tar block or so (`Ok(None)`).
    async fn copy_out_capped(
        &self,
        id: &str,
        path: &str,
        limit: Option<u64>,
    ) -> Result<Option<Vec<u8>>> {
        let options = DownloadFromContainerOptionsBuilder::default()
            .path(path)
            .build();
        let operation = || format!("copying {path} out of container {id}");
        let cap = limit.map(|l| l.saturating_add(64 << 10));
        // A short call: the whole download is under the call's deadline.
        let download = async {
            let mut stream = self.client.download_from_container(id, Some(options));
            let mut archive = Vec::new();
            while let Some(chunk) = stream.next().await {
                archive.extend_from_slice(&chunk?);
                if cap.is_some_and(|c| archive.len() as u64 > c) {
                    return Ok(None);
                }
            }
            Ok(Some(archive))
        };
        let archive = match self.bounded(operation, download).await? {
            Ok(Some(archive)) => archive,
            Ok(None) => return Ok(None),
            Err(e) if status(&e) == Some(404) => {
                return Err(if no_such_container(&e) {
                    BackendError::ContainerNotFound(id.into())
                } else {
                    BackendError::PathNotFound {
                        container: id.into(),
                        path: path.into(),
                    }
                });
            }
            Err(e) => return Err(self.err(operation(), e)),
        };
        single_file_from_tar(&archive, path).map(Some)
    }

    /// Connects, negotiates the API version and checks that the engine answers. Any failure here is
    /// one [`BackendError::Unreachable`].
    pub async fn connect(options: DockerOptions) -> Result<Self> {
        let (client, endpoint) = open_client(options.host.as_deref())?;
        let unreachable = |reason: String| BackendError::Unreachable {
            endpoint: endpoint.clone(),
            reason,
        };
        let client = client
            .with_timeout(options.connect_timeout)
            .negotiate_version()
            .await
            .map_err(|e| unreachable(describe(&e)))?;
        client.ping().await.map_err(|e| unreachable(describe(&e)))?;
        let version = client
            .version()
            .await
            .map_err(|e| unreachable(describe(&e)))?;
        let kind = match version.components.as_ref() {
            Some(c)
                if c.iter()
                    .any(|c| c.name.to_ascii_lowercase().contains("podman")) =>
            {
                EngineKind::Podman
            }
            _ => EngineKind::Docker,
        };
        let api = client.client_version();
        // Resources and storage are facts for sizing defaults; an engine that does not say is
        // still usable.
        let host = match client.info().await {
            Ok(i) => engine_host(i),
            Err(_) => EngineHost::default(),
        };
        let info = EngineInfo {
            kind,
            version: version.version.unwrap_or_default(),
            api_version: format!("{}.{}", api.major_version, api.minor_version),
            os_arch: format!(
                "{}/{}",
                version.os.unwrap_or_default(),
                version.arch.unwrap_or_default()
            ),
            endpoint,
            host,
        };
        let backstop = CLIENT_BACKSTOP.max(options.request_timeout + 2 * options.probe_deadline);
        let client = client.with_timeout(backstop);
        let disk_quota = Arc::new(AtomicBool::new(info.host.has_disk_quota()));
        Ok(DockerBackend {
            client,
            info,
            options,
            disk_quota,
            lost: Arc::new(AtomicBool::new(false)),
            steps: crate::steps::SharedReaper::default(),
            isolated_id: Arc::new(std::sync::Mutex::new(None)),
            background: Arc::new(tokio::sync::RwLock::new(())),
        })
    }

    /// The id of the isolated network ([`ISOLATED_NETWORK`]), made unless the engine has it
    /// (looked up once per connection). Engines before API 1.44 accept a second network of the
    /// same name, so two processes starting at once could make one each: on one machine they take
    /// a file lock for the look-up ([`DockerOptions::network_lock_dir`]), so one makes it and the
    /// others find it. Processes of other machines on the same engine pick the same one (the
    /// oldest, then the smallest id) and remove the others where nothing uses them.
    /// A container is joined to the network by id ([`Self::join_isolated_network`]), never by the
    /// name, which would be ambiguous while two exist.
    async fn ensure_isolated_network(&self) -> Result<String> {
        if let Some(id) = self
            .isolated_id
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
        {
            return Ok(id);
        }
        let name = self.options.isolated_network.as_str();
        // Held until the network is picked; released when dropped.
        let _lock = match self.options.network_lock_dir.clone() {
            Some(dir) => {
                let owned = name.to_string();
                tokio::task::spawn_blocking(move || lock_network_lookup(&dir, &owned))
                    .await
                    .ok()
                    .flatten()
            }
            None => None,
        };
        let found = self
            .bounded(
                || format!("inspecting network {name}"),
                self.client.inspect_network(
                    name,
                    None::<bollard::query_parameters::InspectNetworkOptions>,
                ),
            )
            .await?;
        match found {
            Ok(net) => {
                if net.internal != Some(true) {
                    return Err(BackendError::Invalid(format!(
                        "the engine's network {name} is not internal; remove it (docker network rm {name}) and swtbench makes it anew"
                    )));
                }
            }
            Err(e) if status(&e) == Some(404) => {
                let request = bollard::models::NetworkCreateRequest {
                    name: name.to_string(),
                    internal: Some(true),
                    options: Some(HashMap::from([(
                        "com.docker.network.bridge.enable_icc".to_string(),
                        "false".to_string(),
                    )])),
                    labels: Some(network_labels(name, self.options.owner.as_deref())),
                    ..Default::default()
                };
                let made = self
                    .bounded(
                        || format!("creating network {name}"),
                        self.client.create_network(request),
                    )
                    .await?;
                match made {
                    Ok(_) => {}
                    // Another process made it meanwhile.
                    Err(e) if status(&e) == Some(409) => {}
                    Err(e) => return Err(self.err(format!("creating network {name}"), e)),
                }
            }
            // Two networks of that name (an older engine): the listing below picks one.
            Err(_) => {}
        }
        let listed = self
            .bounded(
                || "listing networks".to_string(),
                self.client
                    .list_networks(None::<bollard::query_parameters::ListNetworksOptions>),
            )
            .await?
            .map_err(|e| self.err("listing networks", e))?;
        let same = isolated_candidates(name, &listed);
        let Some(id) = same.first().cloned() else {
            return Err(BackendError::Invalid(format!(
                "the engine lists no internal network {name} right after making it"
            )));
        };
        for other in same.iter().skip(1) {
            // In use by a container of a process that picked it before this one was listed:
            // that container keeps it, the next look-up removes it.
            let _ = self.client.remove_network(other).await;
        }
        *self
            .isolated_id
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(id.clone());
        Ok(id)
    }

    /// Forgets the isolated network's id, so the next container looks it up again (after the
    /// network picked went away: another process removed a duplicate, or a user the network).
    fn forget_isolated_network(&self) {
        *self
            .isolated_id
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    /// Puts a container on the isolated network, by id in its network mode and in an endpoint of
    /// its own: without the endpoint, the engine stores the network's name and looks it up by
    /// that name when the container starts, which fails while two networks share it.
    async fn join_isolated_network(&self, body: &mut ContainerCreateBody) -> Result<()> {
        let id = self.ensure_isolated_network().await?;
        if let Some(h) = body.host_config.as_mut() {
            h.network_mode = Some(id.clone());
        }
        body.networking_config = Some(bollard::models::NetworkingConfig {
            endpoints_config: Some(HashMap::from([(
                id.clone(),
                bollard::models::EndpointSettings {
                    network_id: Some(id),
                    ..Default::default()
                },
            )])),
        });
        Ok(())
    }

    /// Step images of failed builds that wait for the builds still running on this connection to
    /// end before they are removed ([`crate::steps`]).
    pub fn pending_step_images(&self) -> Vec<String> {
        self.steps.snapshot().1
    }

    /// Connects with the default options.
    pub async fn connect_default() -> Result<Self> {
        Self::connect(DockerOptions::default()).await
    }

    /// What the engine said at connect time.
    pub fn info(&self) -> &EngineInfo {
        &self.info
    }

    /// The deadline of the next short call: the full one, or the probe's while the engine is lost.
    fn call_deadline(&self) -> Duration {
        if self.lost.load(Ordering::Relaxed) {
            self.options
                .probe_deadline
                .min(self.options.request_timeout)
        } else {
            self.options.request_timeout
        }
    }

    /// Runs one short call under its deadline. The outer `Err` is the deadline
    /// ([`BackendError::RequestTimeout`] or [`BackendError::EngineHung`], see [`Self::silent`]);
    /// the inner result is the engine's answer, for the caller to read.
    async fn bounded<T>(
        &self,
        operation: impl FnOnce() -> String,
        call: impl Future<Output = std::result::Result<T, BollardError>>,
    ) -> Result<std::result::Result<T, BollardError>> {
        let limit = self.call_deadline();
        match tokio::time::timeout(limit, call).await {
            Ok(answer) => {
                if answer.is_ok() {
                    self.lost.store(false, Ordering::Relaxed);
                }
                Ok(answer)
            }
            Err(_) => Err(self.silent(operation(), limit).await),
        }
    }

    /// The error of a call or stream that got no answer for `after`: the engine is probed (unless
    /// it is known lost already); alive, the call was stuck ([`BackendError::RequestTimeout`]);
    /// silent, the engine is lost ([`BackendError::EngineHung`]).
    async fn silent(&self, operation: String, after: Duration) -> BackendError {
        if !self.lost.load(Ordering::Relaxed) && self.probe().await {
            BackendError::RequestTimeout { operation, after }
        } else {
            BackendError::EngineHung { operation, after }
        }
    }

    /// Pings the engine under the probe deadline and remembers whether it answered.
    async fn probe(&self) -> bool {
        let alive = matches!(
            tokio::time::timeout(self.options.probe_deadline, self.client.ping()).await,
            Ok(Ok(_))
        );
        self.lost.store(!alive, Ordering::Relaxed);
        alive
    }

    /// The next item of an output stream; a stream silent for [`DockerOptions::quiet_probe`] and
    /// an engine that does not answer the probe then are [`BackendError::EngineHung`].
    async fn next_alive<S: futures_util::Stream + Unpin>(
        &self,
        stream: &mut S,
        deadline: Option<tokio::time::Instant>,
        operation: impl FnOnce() -> String,
    ) -> Result<Wait<S::Item>> {
        match next_or_probe(stream, deadline, self.options.quiet_probe, || self.probe()).await {
            Wait::Lost(after) => Err(BackendError::EngineHung {
                operation: operation(),
                after,
            }),
            other => Ok(other),
        }
    }

    fn err(&self, operation: impl Into<String>, e: BollardError) -> BackendError {
        let operation = operation.into();
        match e {
            BollardError::RequestTimeoutError => BackendError::RequestTimeout {
                operation,
                after: self.client.timeout(),
            },
            other => BackendError::Engine {
                operation,
                message: describe(&other),
            },
        }
    }

    /// Follows a pull or push stream to its end, summing the layers' progress; the error is the
    /// message the image pull or push fails with. Items are
    /// `(layer id, status, (current, total))`; the push stream names layers in its status only.
    async fn follow_transfer<S>(
        &self,
        stream: &mut S,
        reference: &str,
        verb: &str,
        progress: ProgressSink<'_>,
    ) -> std::result::Result<(), TransferError>
    where
        S: futures_util::Stream<
                Item = std::result::Result<
                    (Option<String>, Option<String>, Option<(i64, i64)>),
                    BollardError,
                >,
            > + Unpin,
    {
        // Per layer: (bytes, total, done).
        let mut layers: BTreeMap<String, (u64, u64, bool)> = BTreeMap::new();
        let mut anonymous_done = 0usize;
        loop {
            let item = match self
                .next_alive(stream, None, || format!("{verb} {reference}"))
                .await
                .map_err(TransferError::Engine)?
            {
                Wait::Item(Some(item)) => item,
                _ => break,
            };
            let (id, status, detail) = match item {
                Ok(i) => i,
                Err(BollardError::DockerStreamError { error }) => {
                    return Err(TransferError::Stream(error))
                }
                Err(other) => return Err(TransferError::Stream(describe(&other))),
            };
            let status = status.unwrap_or_default();
            let done = matches!(
                status.as_str(),
                "Pull complete" | "Already exists" | "Pushed" | "Layer already exists"
            ) || status.starts_with("Mounted from");
            // Pull items name their layer; push items (as bollard models them) do not, so a
            // pushed layer is told apart by its size while it moves, and counted when done.
            let key = match (
                id.filter(|i| i.len() == 12 && i.bytes().all(|b| b.is_ascii_hexdigit())),
                detail,
            ) {
                (Some(id), _) => id,
                (None, Some((_, total))) if total > 0 => format!("size:{total}"),
                (None, _) if done => match layers
                    .iter()
                    .find(|(k, l)| k.starts_with("size:") && !l.2)
                    .map(|(k, _)| k.clone())
                {
                    Some(k) => k,
                    None => {
                        anonymous_done += 1;
                        format!("done:{anonymous_done}")
                    }
                },
                _ => continue,
            };
            let entry = layers.entry(key).or_default();
            if let Some((cur, total)) = detail {
                entry.0 = cur.max(0) as u64;
                entry.1 = entry.1.max(total.max(0) as u64);
            }
            if done {
                entry.2 = true;
                entry.0 = entry.1;
            }
            progress(TransferProgress {
                layers: layers.len(),
                layers_done: layers.values().filter(|l| l.2).count(),
                bytes: layers.values().map(|l| l.0).sum(),
                total_bytes: layers.values().map(|l| l.1).sum(),
            });
        }
        Ok(())
    }

    /// Runs a short helper command as root and waits for it (used to kill process groups).
    async fn exec_helper(&self, id: &str, cmd: Vec<String>) -> Result<()> {
        let operation = || format!("exec in container {id}");
        let exec = self
            .bounded(
                operation,
                self.client.create_exec(
                    id,
                    CreateExecOptions {
                        attach_stdout: Some(true),
                        attach_stderr: Some(true),
                        user: Some("root".to_string()),
                        cmd: Some(cmd),
                        ..Default::default()
                    },
                ),
            )
            .await?
            .map_err(|e| self.err(operation(), e))?;
        if let StartExecResults::Attached { mut output, .. } = self
            .bounded(operation, self.client.start_exec(&exec.id, None))
            .await?
            .map_err(|e| self.err(operation(), e))?
        {
            let drain = async { while output.next().await.is_some() {} };
            let _ = tokio::time::timeout(Duration::from_secs(10), drain).await;
        }
        Ok(())
    }

    /// Waits until the engine no longer knows container `id` (another removal of it is under
    /// way), for at most `limit`; says so when it is still there after that.
    async fn wait_container_gone(&self, id: &str, limit: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match self
                .bounded(
                    || format!("inspecting container {id}"),
                    self.client.inspect_container(id, None),
                )
                .await?
            {
                Err(e) if status(&e) == Some(404) => return Ok(()),
                Err(e) => return Err(self.err(format!("inspecting container {id}"), e)),
                Ok(_) if tokio::time::Instant::now() >= deadline => {
                    return Err(BackendError::Engine {
                        operation: format!("removing container {id}"),
                        message: format!(
                            "the engine said another removal of it was under way, and it is \
                             still there {} s later; remove it with `docker rm -f {id}` (or \
                             `swtbench clean`)",
                            limit.as_secs()
                        ),
                    })
                }
                Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// `Ok` when the container is still running; [`BackendError::ContainerStopped`] when it
    /// stopped or is gone.
    async fn check_still_running(&self, id: &str, exit_code: Option<i64>) -> Result<()> {
        // A command killed by a signal may have died with its container; the engine records the
        // container's exit a moment after the command's stream ends, so look again for a while.
        let mut looks_left = if exit_code.is_some_and(|c| c > 128) {
            25
        } else {
            0
        };
        let operation = || format!("inspecting container {id}");
        match self
            .bounded(operation, self.client.inspect_container(id, None))
            .await?
        {
            Ok(mut c) => {
                let mut state = c.state.take().unwrap_or_default();
                while state.running == Some(true) && looks_left > 0 {
                    looks_left -= 1;
                    tokio::time::sleep(Duration::from_millis(40)).await;
                    state = match self
                        .bounded(operation, self.client.inspect_container(id, None))
                        .await?
                    {
                        Ok(c) => c.state.unwrap_or_default(),
                        Err(e) if status(&e) == Some(404) => {
                            return Err(BackendError::ContainerStopped {
                                id: id.to_string(),
                                reason: "it was removed".into(),
                            })
                        }
                        Err(e) => return Err(self.err(format!("inspecting container {id}"), e)),
                    };
                }
                if state.running == Some(true) {
                    return Ok(());
                }
                let reason = if state.oom_killed == Some(true) {
                    "killed for running out of memory".to_string()
                } else {
                    match state.exit_code {
                        Some(code) => format!("it exited with code {code}"),
                        None => "it is not running".to_string(),
                    }
                };
                Err(BackendError::ContainerStopped {
                    id: id.to_string(),
                    reason,
                })
            }
            Err(e) if status(&e) == Some(404) => Err(BackendError::ContainerStopped {
                id: id.to_string(),
                reason: "it was removed".into(),
            }),
            Err(e) => Err(self.err(format!("inspecting container {id}"), e)),
        }
    }

    /// What the container wrote to its writable layer: the layer's directory walked when this
    /// machine can read it (a local engine, enough rights), else the engine's `SizeRw` — which
    /// drivers without a native diff (fuse-overlayfs, vfs) compute by comparing the whole file
    /// system with the image, seconds per call: then only when `slow_ok` (the disk watch, every
    /// 30 s), `None` otherwise.
    async fn written_bytes(&self, id: &str, slow_ok: bool) -> Result<Option<Written>> {
        if let Some(dir) = self.upper_dir(id).await? {
            return Ok(tokio::task::spawn_blocking(move || tree_bytes(&dir))
                .await
                .ok()
                .flatten());
        }
        let slow = matches!(
            self.info.host.storage_driver.as_deref(),
            Some("fuse-overlayfs" | "vfs")
        );
        if slow && !slow_ok {
            return Ok(None);
        }
        let options = InspectContainerOptionsBuilder::default().size(true).build();
        match self
            .bounded(
                || format!("measuring container {id}"),
                self.client.inspect_container(id, Some(options)),
            )
            .await?
        {
            Ok(c) => Ok(c
                .size_rw
                .and_then(|s| u64::try_from(s).ok())
                .map(|total| Written {
                    total,
                    largest: None,
                })),
            Err(e) if status(&e) == Some(404) => Err(BackendError::ContainerNotFound(id.into())),
            Err(e) => Err(self.err(format!("measuring container {id}"), e)),
        }
    }

    /// Removes step images of failed builds (newest first) that nothing else holds: untagged and
    /// without children (the engine refuses to remove an image with children without force). An
    /// image with a tag — the `FROM` image's id is printed as a step too — is never touched. Only
    /// called when no other build of this connection runs ([`crate::steps`]): a step image can be
    /// the cached parent of another build's next step.
    async fn remove_step_images(&self, steps: &[String]) {
        let mut kept = Vec::new();
        for id in steps {
            let untagged =
                matches!(self.image_inspect(id).await, Ok(Some(info)) if info.tags.is_empty());
            if untagged && self.image_remove(id, false).await.is_err() {
                kept.push(id);
            }
        }
        // A step of one failed build can be the parent of another's: once the children are gone,
        // the parents can go too.
        for id in kept {
            if let Ok(Some(info)) = self.image_inspect(id).await {
                if info.tags.is_empty() {
                    let _ = self.image_remove(id, false).await;
                }
            }
        }
    }

    /// The container's writable layer as a directory of this machine, when the engine names one
    /// (overlay drivers) and it is readable here.
    async fn upper_dir(&self, id: &str) -> Result<Option<std::path::PathBuf>> {
        let c = match self
            .bounded(
                || format!("inspecting container {id}"),
                self.client.inspect_container(id, None),
            )
            .await?
        {
            Ok(c) => c,
            Err(e) if status(&e) == Some(404) => {
                return Err(BackendError::ContainerNotFound(id.into()))
            }
            Err(e) => return Err(self.err(format!("inspecting container {id}"), e)),
        };
        if !self.info.endpoint.starts_with("unix://") {
            return Ok(None);
        }
        Ok(c.graph_driver
            .and_then(|g| g.data.get("UpperDir").cloned())
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_dir()))
    }

    async fn exec_exit_code(&self, exec_id: &str) -> Option<i64> {
        // The stream can end a moment before the engine records the exit.
        for _ in 0..100 {
            let answer = self
                .bounded(
                    || format!("inspecting exec {exec_id}"),
                    self.client.inspect_exec(exec_id),
                )
                .await;
            match answer {
                Ok(Ok(r)) if r.running != Some(true) => return r.exit_code,
                Ok(Ok(_)) => tokio::time::sleep(Duration::from_millis(20)).await,
                Ok(Err(_)) | Err(_) => return None,
            }
        }
        None
    }

    /// The host configuration of a container of `spec`: its network mode, resource limits (the
    /// disk limit as a storage quota while the engine takes quotas), removal and volumes.
    fn host_config(&self, spec: &ContainerSpec) -> HostConfig {
        HostConfig {
            init: Some(spec.init),
            network_mode: match spec.network {
                NetworkAccess::Disabled => Some("none".to_string()),
                NetworkAccess::Enabled => None,
                NetworkAccess::Host => Some("host".to_string()),
                // Set below, with the endpoint that names the network by id.
                NetworkAccess::Isolated => None,
            },
            memory: spec.limits.memory_bytes.map(|m| m as i64),
            // No swap beyond the memory limit: a test that outgrows it is killed rather than
            // slowed down to the timeout.
            memory_swap: spec.limits.memory_bytes.map(|m| m as i64),
            pids_limit: spec.limits.pids.map(i64::from),
            nano_cpus: spec.limits.nano_cpus.map(|n| n as i64),
            ulimits: spec.limits.file_bytes.map(|b| {
                vec![ResourcesUlimits {
                    name: Some("fsize".into()),
                    soft: Some(b as i64),
                    hard: Some(b as i64),
                }]
            }),
            storage_opt: spec
                .limits
                .disk_bytes
                .filter(|_| self.disk_quota.load(Ordering::Relaxed))
                .map(|b| HashMap::from([("size".to_string(), b.to_string())])),
            auto_remove: Some(spec.auto_remove),
            mounts: (!spec.volumes.is_empty()).then(|| {
                spec.volumes
                    .iter()
                    .map(|(name, target)| bollard::models::Mount {
                        typ: Some(bollard::models::MountType::VOLUME),
                        source: Some(name.clone()),
                        target: Some(target.clone()),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }
    }

    /// Streams the build of `tar` with `options` into `log` (the images of its finished steps
    /// into `steps`); a failed build's error keeps the last lines of its log.
    async fn stream_build(
        &self,
        tag: &str,
        options: BuildImageOptions,
        tar: Vec<u8>,
        log: LogSink<'_>,
        steps: &mut Vec<String>,
    ) -> Result<()> {
        let write_err =
            |e: std::io::Error| BackendError::io(format!("writing the build log of {tag}"), &e);
        let mut tail: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        let remember = |line: &str, tail: &mut std::collections::VecDeque<String>| {
            if tail.len() == 30 {
                tail.pop_front();
            }
            tail.push_back(line.to_string());
        };

        let mut stream =
            self.client
                .build_image(options, None, Some(bollard::body_full(tar.into())));
        let mut splitter = LineSplitter::default();
        loop {
            let item = match self
                .next_alive(&mut stream, None, || format!("building image {tag}"))
                .await
            {
                Ok(Wait::Item(Some(item))) => item,
                Ok(_) => break,
                Err(e) => {
                    // The log says why it ends here.
                    let _ = writeln!(log, "ERROR: {e}");
                    let _ = log.flush();
                    return Err(e);
                }
            };
            match item {
                Ok(info) => {
                    let mut text = String::new();
                    if let Some(s) = info.stream {
                        text.push_str(&s);
                    }
                    if let Some(s) = info.status {
                        text.push_str(&s);
                        text.push('\n');
                    }
                    for line in splitter.push(&strip_ansi(&text)) {
                        writeln!(log, "{line}").map_err(write_err)?;
                        if let Some(id) = step_image(&line) {
                            steps.push(id.to_string());
                        }
                        remember(&line, &mut tail);
                    }
                }
                Err(e) => {
                    if let Some(rest) = std::mem::take(&mut splitter).finish() {
                        writeln!(log, "{rest}").map_err(write_err)?;
                        remember(&rest, &mut tail);
                    }
                    let message = match e {
                        BollardError::DockerStreamError { error } => error,
                        other => describe(&other),
                    };
                    writeln!(log, "ERROR: {message}").map_err(write_err)?;
                    let _ = log.flush();
                    return Err(BackendError::BuildFailed {
                        tag: tag.to_string(),
                        message,
                        log_tail: tail.iter().cloned().collect(),
                    });
                }
            }
        }
        if let Some(rest) = splitter.finish() {
            writeln!(log, "{rest}").map_err(write_err)?;
        }
        log.flush().map_err(write_err)?;
        Ok(())
    }

    /// Creates the exec of `cmd` (the wrapped command of `request`) in container `id` and starts
    /// it attached; returns the exec's id and the engine's answer to the start.
    async fn start_exec(
        &self,
        id: &str,
        request: &ExecRequest,
        cmd: Vec<String>,
    ) -> Result<(String, StartExecResults)> {
        let operation = || format!("exec in container {id}");
        let exec = match self
            .bounded(
                operation,
                self.client.create_exec(
                    id,
                    CreateExecOptions {
                        attach_stdout: Some(true),
                        attach_stderr: Some(true),
                        cmd: Some(cmd),
                        user: request.user.clone(),
                        working_dir: request.working_dir.clone(),
                        env: Some(
                            request
                                .env
                                .iter()
                                .map(|(k, v)| format!("{k}={v}"))
                                .collect(),
                        ),
                        ..Default::default()
                    },
                ),
            )
            .await?
        {
            Ok(e) => e,
            Err(e) if status(&e) == Some(404) => {
                return Err(BackendError::ContainerNotFound(id.into()))
            }
            Err(e) => return Err(self.err(operation(), e)),
        };
        let started_exec = self
            .bounded(operation, self.client.start_exec(&exec.id, None))
            .await?
            .map_err(|e| self.err(operation(), e))?;
        Ok((exec.id, started_exec))
    }

    /// The interval at which an exec with a disk limit measures what its container wrote (none
    /// without a limit); slower when the container's upper directory is not on this host.
    async fn disk_watch(&self, id: &str, request: &ExecRequest) -> Option<tokio::time::Interval> {
        match request.disk_limit {
            Some(_) => {
                let every = match self.upper_dir(id).await {
                    Ok(Some(_)) => DISK_WATCH_EVERY,
                    _ => DISK_WATCH_REMOTE_EVERY,
                };
                let mut i = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                Some(i)
            }
            None => None,
        }
    }

    /// Reads the output of an exec into `sink` until it ends, its `deadline` passes or its
    /// container writes more than the request's disk limit (measured at each tick of `watch`);
    /// returns whether it timed out and whether it hit the disk limit.
    async fn read_exec_output<S>(
        &self,
        id: &str,
        request: &ExecRequest,
        output: &mut S,
        sink: &mut dyn OutputSink,
        deadline: Option<tokio::time::Instant>,
        mut watch: Option<tokio::time::Interval>,
    ) -> Result<(bool, bool)>
    where
        S: futures_util::Stream<
                Item = std::result::Result<bollard::container::LogOutput, BollardError>,
            > + Unpin,
    {
        let mut timed_out = false;
        let mut disk_limit_hit = false;
        let read = async {
            loop {
                // A command that prints without a pause must not outrun its deadline.
                if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                    return Ok(true);
                }
                // Tests may print nothing for minutes: silence makes the backend probe the
                // engine.
                let next = match self
                    .next_alive(output, deadline, || {
                        format!("waiting for the output of a command in container {id}")
                    })
                    .await?
                {
                    Wait::Item(next) => next,
                    Wait::Deadline => return Ok(true),
                    Wait::Lost(_) => unreachable!("next_alive turns a lost engine into an error"),
                };
                match next {
                    None => return Ok(false),
                    Some(Ok(chunk)) => sink.push(&chunk.into_bytes()),
                    Some(Err(e)) => {
                        return Err(self.err(format!("reading output in container {id}"), e))
                    }
                }
            }
        };
        // The disk watch runs beside the reading (which keeps its own measure of silence).
        let over_disk = async {
            let limit = request.disk_limit.unwrap_or(u64::MAX);
            loop {
                tick_opt(&mut watch).await;
                if let Ok(Some(written)) = self.written_bytes(id, true).await {
                    if written.total > limit {
                        return;
                    }
                }
            }
        };
        tokio::select! {
            biased;
            () = over_disk => disk_limit_hit = true,
            ended = read => timed_out = ended?,
        }
        Ok((timed_out, disk_limit_hit))
    }

    /// Kills the process group of an exec that ran too long (its pid in `pidfile`) and reads into
    /// `sink` what it printed before it died; kills the whole container when the group does not
    /// end within the grace. Returns whether the container was killed.
    async fn kill_exec<S>(
        &self,
        id: &str,
        pidfile: &str,
        output: &mut S,
        sink: &mut dyn OutputSink,
    ) -> Result<bool>
    where
        S: futures_util::Stream<
                Item = std::result::Result<bollard::container::LogOutput, BollardError>,
            > + Unpin,
    {
        let mut container_killed = false;
        let killed = self
            .exec_helper(
                id,
                vec![
                    "/bin/sh".into(),
                    "-c".into(),
                    KILL_GROUP.into(),
                    pidfile.to_string(),
                ],
            )
            .await;
        // What the tree printed before it died is still in the pipe: read it.
        let grace = tokio::time::Instant::now() + self.options.kill_grace;
        let mut ended = false;
        if killed.is_ok() {
            while let Ok(next) = tokio::time::timeout_at(grace, output.next()).await {
                match next {
                    Some(Ok(chunk)) => sink.push(&chunk.into_bytes()),
                    _ => {
                        ended = true;
                        break;
                    }
                }
            }
        }
        if !ended {
            // A process escaped the group (or the helper could not run): stop everything.
            self.container_kill(id).await?;
            container_killed = true;
            let grace = tokio::time::Instant::now() + self.options.kill_grace;
            while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(grace, output.next()).await {
                sink.push(&chunk.into_bytes());
            }
        }
        Ok(container_killed)
    }
}

/// Why a pull or push stream ended early: the engine's call (its message kept as before), or the
/// stream's own error.
#[derive(Debug, thiserror::Error)]
enum TransferError {
    #[error("{0}")]
    Engine(BackendError),
    #[error("{0}")]
    Stream(String),
}

fn open_client(host: Option<&str>) -> Result<(Docker, String)> {
    let chosen = host.filter(|h| !h.is_empty()).map(str::to_string);
    let result = match &chosen {
        Some(h) => Docker::connect_with_host(h).map(|c| (c, h.clone())),
        None if Path::new(DOCKER_SOCKET).exists() => {
            Docker::connect_with_unix_defaults().map(|c| (c, format!("unix://{DOCKER_SOCKET}")))
        }
        None => Docker::connect_with_podman_defaults().map(|c| (c, "the Podman socket".into())),
    };
    result.map_err(|e| BackendError::Unreachable {
        endpoint: chosen.unwrap_or_else(|| format!("unix://{DOCKER_SOCKET}")),
        reason: describe(&e),
    })
}

/// The context of the build of `request` as a tar archive: the request's, its labels added to
/// the Dockerfile as one LABEL instruction at the end.
fn build_context_tar(request: &BuildRequest) -> Result<Vec<u8>> {
    let tag = &request.tag;
    let mut context = request.context.clone();
    if !request.labels.is_empty() {
        // The classic builder turns each label of the `labels` parameter into its own committed
        // step (seconds each on slow storage); one LABEL instruction at the end is one step and
        // gives the same image configuration.
        let Some(dockerfile) = context.dockerfile() else {
            return Err(BackendError::Invalid(format!(
                "the build context of {tag} has no UTF-8 Dockerfile"
            )));
        };
        let dockerfile = append_label_instruction(dockerfile, &request.labels);
        context.set_dockerfile(dockerfile);
    }
    context.to_tar()
}

/// The engine's options for the build of `request` as `tag`.
fn build_image_options(request: &BuildRequest, tag: &str) -> BuildImageOptions {
    let mut options = BuildImageOptionsBuilder::default()
        .dockerfile(crate::context::DOCKERFILE)
        .t(tag)
        .rm(true)
        .forcerm(true)
        .nocache(request.no_cache)
        .buildargs(&hashmap(&request.build_args));
    if let Some(p) = &request.platform {
        options = options.platform(p);
    }
    if request.host_network {
        options = options.networkmode("host");
    }
    options.build()
}

/// The image id of a finished build step in a legacy builder's log line (` ---> 3f2c1a9b0d4e`);
/// not ` ---> Running in …` or ` ---> Using cache`.
fn step_image(line: &str) -> Option<&str> {
    let id = line.trim().strip_prefix("---> ")?.trim();
    (id.len() >= 12 && id.chars().all(|c| c.is_ascii_hexdigit())).then_some(id)
}

/// How often a command's writable layer is measured when it has a disk limit and its directory
/// is readable here.
const DISK_WATCH_EVERY: Duration = Duration::from_secs(2);
/// The same when only the engine can measure it (slowly).
const DISK_WATCH_REMOTE_EVERY: Duration = Duration::from_secs(30);

/// Bytes of the regular files under `dir` (symbolic links not followed) and the largest of them;
/// `None` when it cannot be read at all.
fn tree_bytes(dir: &Path) -> Option<Written> {
    let mut total = 0u64;
    let mut largest = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    let mut read_any = false;
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        read_any = true;
        for e in entries.flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total = total.saturating_add(m.len());
                largest = largest.max(m.len());
            }
        }
    }
    read_any.then_some(Written {
        total,
        largest: Some(largest),
    })
}

async fn tick_opt(interval: &mut Option<tokio::time::Interval>) {
    match interval {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// The host facts in the engine's `/info`.
fn engine_host(i: SystemInfo) -> EngineHost {
    let backing_filesystem = i.driver_status.as_ref().and_then(|rows| {
        rows.iter()
            .find(|r| r.first().is_some_and(|k| k == "Backing Filesystem"))
            .and_then(|r| r.get(1).cloned())
    });
    EngineHost {
        memory_bytes: i
            .mem_total
            .and_then(|m| u64::try_from(m).ok())
            .filter(|m| *m > 0),
        cpus: i
            .ncpu
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0),
        storage_driver: i.driver.filter(|d| !d.is_empty()),
        backing_filesystem,
        root_dir: i.docker_root_dir.filter(|d| !d.is_empty()),
    }
}

fn host_config_uses_quota(body: &ContainerCreateBody) -> bool {
    body.host_config
        .as_ref()
        .is_some_and(|h| h.storage_opt.is_some())
}

/// The engine's refusal of `--storage-opt size=` on a file system without quotas.
fn quota_refused(e: &BollardError) -> bool {
    let m = server_message(e).to_ascii_lowercase();
    m.contains("storage-opt") || m.contains("storage opt") || m.contains("quota")
}

fn describe(e: &BollardError) -> String {
    match e {
        BollardError::DockerResponseServerError {
            status_code,
            message,
        } => format!("{message} (HTTP {status_code})"),
        BollardError::SocketNotFoundError(path) => format!("socket {path} does not exist"),
        BollardError::RequestTimeoutError => "no answer in time".to_string(),
        other => {
            let mut text = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(s) = source {
                text.push_str(": ");
                text.push_str(&s.to_string());
                source = s.source();
            }
            text
        }
    }
}

/// The ids of the internal networks of that name, the one every process picks first: the oldest
/// (by the engine's creation time), then the smallest id.
fn isolated_candidates(name: &str, listed: &[bollard::models::Network]) -> Vec<String> {
    let mut same: Vec<(String, String)> = listed
        .iter()
        .filter(|n| n.name.as_deref() == Some(name) && n.internal == Some(true))
        // An engine that leaves the time out (it is optional in the API) still has its network.
        .filter_map(|n| {
            Some((
                sortable_time(n.created.as_deref().unwrap_or("")),
                n.id.clone()?,
            ))
        })
        .collect();
    same.sort();
    same.into_iter().map(|(_, id)| id).collect()
}

/// An RFC 3339 time of the engine (UTC, as it writes them) that sorts as text: the engine drops
/// the trailing zeros of the fraction (`…:05.1Z` is later than `…:05.123456789Z` as text), so the
/// fraction is padded to nine digits.
fn sortable_time(created: &str) -> String {
    let (whole, zone) = match created.find(['Z', '+']) {
        Some(i) => created.split_at(i),
        None => (created, ""),
    };
    let (seconds, fraction) = whole.split_once('.').unwrap_or((whole, ""));
    format!("{seconds}.{fraction:0<9}{zone}")
}

/// A container was refused because the network it names does not exist.
fn network_missing(e: &BollardError) -> bool {
    status(e) == Some(404) && server_message(e).to_ascii_lowercase().contains("network")
}

fn status(e: &BollardError) -> Option<u16> {
    match e {
        BollardError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

fn server_message(e: &BollardError) -> &str {
    match e {
        BollardError::DockerResponseServerError { message, .. } => message,
        _ => "",
    }
}

/// Whether a 404 is about the container rather than a path in it. Docker says "No such container:
/// <id>", Podman "no container with name or ID … found: no such container".
fn no_such_container(e: &BollardError) -> bool {
    server_message(e)
        .to_ascii_lowercase()
        .contains("no such container")
}

fn hashmap(map: &BTreeMap<String, String>) -> HashMap<String, String> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// An image of the engine's list.
fn image_info(s: bollard::models::ImageSummary) -> ImageInfo {
    ImageInfo {
        id: s.id,
        tags: s
            .repo_tags
            .into_iter()
            .filter(|t| t != "<none>:<none>")
            .collect(),
        created_unix: s.created,
        labels: s.labels.into_iter().collect(),
        repo_digests: s.repo_digests,
    }
}

fn label_filters(filter: &LabelFilter) -> Result<HashMap<String, Vec<String>>> {
    if filter.is_empty() {
        return Err(BackendError::Invalid(
            "refusing to list by an empty label filter (it would match everything)".into(),
        ));
    }
    Ok(HashMap::from([(
        "label".to_string(),
        filter.to_engine_filters(),
    )]))
}

/// `<pid>-<counter>-<nanoseconds>`: unique among this engine's objects of this process and others.
pub(crate) fn unique_token() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{}-{n}-{nanos}", std::process::id())
}

/// A double-quoted Dockerfile word: `"`, `\` and `$` escaped, line breaks turned into spaces.
fn dockerfile_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The Dockerfile with one `LABEL` instruction carrying every label appended.
pub(crate) fn append_label_instruction(
    dockerfile: &str,
    labels: &BTreeMap<String, String>,
) -> String {
    let quote = dockerfile_quote;
    let mut out = dockerfile.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("LABEL");
    for (k, v) in labels {
        out.push(' ');
        out.push_str(&quote(k));
        out.push('=');
        out.push_str(&quote(v));
    }
    out.push('\n');
    out
}

/// Seconds since the epoch from an RFC 3339 timestamp (`2025-05-20T10:11:12.123456789Z`,
/// `…+02:00`); `0` when it cannot be read.
pub(crate) fn rfc3339_to_unix(text: &str) -> i64 {
    fn parse(text: &str) -> Option<i64> {
        let (date, rest) = text.split_once(['T', 't', ' '])?;
        let mut d = date.splitn(3, '-');
        let (y, m, day): (i64, i64, i64) = (
            d.next()?.parse().ok()?,
            d.next()?.parse().ok()?,
            d.next()?.parse().ok()?,
        );
        let time_end = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
        let (time, zone) = rest.split_at(time_end);
        let time = time.split('.').next()?;
        let mut t = time.splitn(3, ':');
        let (hh, mm, ss): (i64, i64, i64) = (
            t.next()?.parse().ok()?,
            t.next()?.parse().ok()?,
            t.next()?.parse().ok()?,
        );
        let offset = match zone.chars().next() {
            Some(sign @ ('+' | '-')) => {
                let (oh, om) = zone[1..].split_once(':').unwrap_or((&zone[1..], "0"));
                let secs = oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60;
                if sign == '+' {
                    secs
                } else {
                    -secs
                }
            }
            _ => 0,
        };
        // Days from civil (Howard Hinnant's algorithm).
        let y = if m <= 2 { y - 1 } else { y };
        let era = if y >= 0 { y } else { y - 399 } / 400;
        let yoe = y - era * 400;
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + day - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        Some(days * 86_400 + hh * 3600 + mm * 60 + ss - offset)
    }
    parse(text.trim()).unwrap_or(0)
}

impl ContainerBackend for DockerBackend {
    async fn engine_info(&self) -> Result<EngineInfo> {
        // The liveness probe: the short deadline, whatever the state.
        let limit = self.options.probe_deadline;
        match tokio::time::timeout(limit, self.client.ping()).await {
            Ok(Ok(_)) => {
                self.lost.store(false, Ordering::Relaxed);
                Ok(self.info.clone())
            }
            Ok(Err(e)) => Err(BackendError::Unreachable {
                endpoint: self.info.endpoint.clone(),
                reason: describe(&e),
            }),
            Err(_) => {
                self.lost.store(true, Ordering::Relaxed);
                Err(BackendError::EngineHung {
                    operation: format!("pinging the container engine at {}", self.info.endpoint),
                    after: limit,
                })
            }
        }
    }

    async fn image_inspect(&self, name: &str) -> Result<Option<ImageInfo>> {
        match self
            .bounded(
                || format!("inspecting image {name}"),
                self.client.inspect_image(name),
            )
            .await?
        {
            Ok(img) => {
                let labels = img
                    .config
                    .and_then(|c| c.labels)
                    .map(|l| l.into_iter().collect())
                    .unwrap_or_default();
                Ok(Some(ImageInfo {
                    id: img.id.unwrap_or_default(),
                    tags: img.repo_tags.unwrap_or_default(),
                    created_unix: img.created.as_deref().map(rfc3339_to_unix).unwrap_or(0),
                    labels,
                    repo_digests: img.repo_digests.unwrap_or_default(),
                }))
            }
            Err(e) if status(&e) == Some(404) => Ok(None),
            Err(e) => Err(self.err(format!("inspecting image {name}"), e)),
        }
    }

    async fn image_remove(&self, name: &str, force: bool) -> Result<bool> {
        let options = RemoveImageOptionsBuilder::default().force(force).build();
        match self
            .bounded(
                || format!("removing image {name}"),
                self.client.remove_image(name, Some(options), None),
            )
            .await?
        {
            Ok(_) => Ok(true),
            Err(e) if status(&e) == Some(404) => Ok(false),
            Err(e) => Err(self.err(format!("removing image {name}"), e)),
        }
    }

    async fn images_with_label(&self, filter: &LabelFilter) -> Result<Vec<ImageInfo>> {
        let options = ListImagesOptionsBuilder::default()
            .filters(&label_filters(filter)?)
            .build();
        let list = self
            .bounded(
                || "listing images".to_string(),
                self.client.list_images(Some(options)),
            )
            .await?
            .map_err(|e| self.err("listing images", e))?;
        Ok(list.into_iter().map(image_info).collect())
    }

    async fn image_build(&self, request: BuildRequest, log: LogSink<'_>) -> Result<ImageInfo> {
        if request.by_commit && self.info.kind != EngineKind::Podman {
            match crate::commit_build::plan(&request.context, &request.build_args) {
                Ok(plan) => return self.build_by_commit(&request, &plan, log).await,
                Err(e) => {
                    // Not a shape a commit builds: the Dockerfile builder does, as always.
                    writeln!(log, "swtbench: built step by step ({e})").map_err(|e| {
                        BackendError::io(format!("writing the build log of {}", request.tag), &e)
                    })?;
                }
            }
        }
        let tag = request.tag.clone();
        let tar = build_context_tar(&request)?;
        let options = build_image_options(&request, &tag);
        // The images of the steps the build finished (` ---> <id>` lines of the legacy builder):
        // a failed build leaves the last of them untagged, and they are removed then.
        let mut steps: Vec<String> = Vec::new();
        let ticket = self.steps.start();
        let run = self.stream_build(&tag, options, tar, &mut *log, &mut steps);
        let ended = match request.timeout {
            Some(limit) => match tokio::time::timeout(limit, run).await {
                Ok(r) => r,
                Err(_) => {
                    // Dropping the stream closes the connection, which makes the engine cancel the
                    // build and remove its intermediate containers.
                    let _ = writeln!(log, "ERROR: build timed out after {}s", limit.as_secs());
                    let _ = log.flush();
                    Err(BackendError::BuildTimeout {
                        tag: tag.clone(),
                        after: limit,
                    })
                }
            },
            None => run.await,
        };
        let removable = ticket.finish(if ended.is_err() { steps } else { Vec::new() });
        if !removable.is_empty() {
            self.remove_step_images(&removable).await;
        }
        ended?;
        self.image_inspect(&tag)
            .await?
            .ok_or_else(|| BackendError::BuildFailed {
                tag: tag.clone(),
                message: "the build ended without producing the image".into(),
                log_tail: Vec::new(),
            })
    }

    async fn image_import(&self, request: ImportRequest) -> Result<ImageInfo> {
        let tag = request.tag.clone();
        let body = match &request.rootfs {
            RootfsSource::Bytes(b) => b.clone(),
            RootfsSource::File(path) => tokio::fs::read(path)
                .await
                .map_err(|e| BackendError::io(format!("reading {}", path.display()), &e))?,
        };
        let wants_metadata = !request.labels.is_empty() || !request.changes.is_empty();
        // Podman's compatibility import wants one change per repeated query parameter and parses
        // `LABEL` naively; the client joins changes into one parameter. So on Podman the tarball
        // is imported bare and the metadata applied by a build with no `RUN` step.
        let via_build = wants_metadata && self.info.kind == EngineKind::Podman;
        let import_tag = if via_build {
            format!("{tag}-swtbench-import")
        } else {
            tag.clone()
        };
        let mut changes: Vec<String> = Vec::new();
        if !via_build {
            changes.extend(
                request
                    .labels
                    .iter()
                    .map(|(k, v)| format!("LABEL {}={}", dockerfile_quote(k), dockerfile_quote(v))),
            );
            changes.extend(request.changes.iter().cloned());
        }
        // `repo` may carry the tag; Podman ignores a separate `tag` parameter on import.
        let options = CreateImageOptionsBuilder::default()
            .from_src("-")
            .repo(&import_tag)
            .changes(changes)
            .build();
        let mut stream =
            self.client
                .create_image(Some(options), Some(bollard::body_full(body.into())), None);
        loop {
            let item = match self
                .next_alive(&mut stream, None, || format!("importing {tag}"))
                .await?
            {
                Wait::Item(Some(item)) => item,
                _ => break,
            };
            if let Err(e) = item {
                let message = match e {
                    BollardError::DockerStreamError { error } => error,
                    other => describe(&other),
                };
                return Err(BackendError::ImportFailed { tag, message });
            }
        }
        if via_build {
            let mut dockerfile = format!("FROM {import_tag}\n");
            for change in &request.changes {
                dockerfile.push_str(change);
                dockerfile.push('\n');
            }
            let mut build = BuildRequest::new(tag.clone(), BuildContext::new(dockerfile));
            build.labels = request.labels.clone();
            let built = self.image_build(build, &mut std::io::sink()).await;
            let _ = self.image_remove(&import_tag, false).await;
            return built.map_err(|e| BackendError::ImportFailed {
                tag,
                message: format!("applying labels and changes: {e}"),
            });
        }
        self.image_inspect(&tag)
            .await?
            .ok_or_else(|| BackendError::ImportFailed {
                tag: tag.clone(),
                message: "the engine accepted the tarball but no image appeared".into(),
            })
    }

    async fn image_pull(
        &self,
        reference: &str,
        auth: Option<&RegistryAuth>,
        progress: ProgressSink<'_>,
    ) -> Result<()> {
        let (repo, tag) = split_reference(reference);
        let options = CreateImageOptionsBuilder::default()
            .from_image(repo)
            .tag(tag)
            .build();
        let stream = self
            .client
            .create_image(Some(options), None, auth.map(credentials));
        let fail = |message: String| BackendError::PullFailed {
            reference: reference.to_string(),
            missing: is_missing(&message),
            message,
        };
        let mut stream = Box::pin(stream.map(|i| {
            i.map(|i| {
                (
                    i.id,
                    i.status,
                    i.progress_detail.and_then(|p| p.current.zip(p.total)),
                )
            })
        }));
        self.follow_transfer(&mut stream, reference, "pulling", progress)
            .await
            .map_err(|e| fail(e.to_string()))
    }

    async fn image_push(
        &self,
        reference: &str,
        auth: Option<&RegistryAuth>,
        progress: ProgressSink<'_>,
    ) -> Result<()> {
        let (repo, tag) = split_reference(reference);
        let options = PushImageOptionsBuilder::default().tag(tag).build();
        let stream = self
            .client
            .push_image(repo, Some(options), auth.map(credentials));
        let mut stream = Box::pin(stream.map(|i| {
            i.map(|i| {
                (
                    None,
                    i.status,
                    i.progress_detail.and_then(|p| p.current.zip(p.total)),
                )
            })
        }));
        self.follow_transfer(&mut stream, reference, "pushing", progress)
            .await
            .map_err(|e| BackendError::PushFailed {
                reference: reference.to_string(),
                message: e.to_string(),
            })
    }

    async fn image_tag(&self, source: &str, target: &str) -> Result<()> {
        let (repo, tag) = split_reference(target);
        let options = TagImageOptionsBuilder::default()
            .repo(repo)
            .tag(tag)
            .build();
        self.client
            .tag_image(source, Some(options))
            .await
            .map_err(|e| self.err(format!("tagging {source} as {target}"), e))
    }

    async fn container_create(&self, spec: &ContainerSpec) -> Result<String> {
        let host_config = self.host_config(spec);
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            user: spec.user.clone(),
            labels: Some(hashmap(&owned_labels(
                &spec.labels,
                self.options.owner.as_deref(),
            ))),
            env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            working_dir: spec.working_dir.clone(),
            cmd: Some(spec.command.clone()),
            network_disabled: Some(spec.network == NetworkAccess::Disabled),
            host_config: Some(host_config),
            ..Default::default()
        };
        let isolated = spec.network == NetworkAccess::Isolated;
        let mut body = body;
        if isolated {
            self.join_isolated_network(&mut body).await?;
        }
        let mut options = CreateContainerOptionsBuilder::default();
        if let Some(name) = &spec.name {
            options = options.name(name);
        }
        if let Some(p) = &spec.platform {
            options = options.platform(p);
        }
        let options = options.build();
        let operation = || format!("creating a container from {}", spec.image);
        let mut result = self
            .bounded(
                operation,
                self.client
                    .create_container(Some(options.clone()), body.clone()),
            )
            .await?;
        if isolated && result.as_ref().is_err_and(network_missing) {
            // The isolated network picked went away meanwhile (a duplicate that another process
            // removed, or a user): look it up again, once.
            self.forget_isolated_network();
            self.join_isolated_network(&mut body).await?;
            result = self
                .bounded(
                    operation,
                    self.client
                        .create_container(Some(options.clone()), body.clone()),
                )
                .await?;
        }
        if host_config_uses_quota(&body) && result.as_ref().is_err_and(quota_refused) {
            // The driver has quotas, but not on this file system (xfs without `pquota`): the
            // harness watches the writable layer instead from now on.
            self.disk_quota.store(false, Ordering::Relaxed);
            let mut body = body;
            if let Some(h) = body.host_config.as_mut() {
                h.storage_opt = None;
            }
            result = self
                .bounded(operation, self.client.create_container(Some(options), body))
                .await?;
        }
        match result {
            Ok(r) => Ok(r.id),
            Err(e) if status(&e) == Some(404) => {
                Err(BackendError::ImageNotFound(spec.image.clone()))
            }
            Err(e) => Err(self.err(format!("creating a container from {}", spec.image), e)),
        }
    }

    async fn container_start(&self, id: &str) -> Result<()> {
        match self
            .bounded(
                || format!("starting container {id}"),
                self.client.start_container(id, None),
            )
            .await?
        {
            Ok(()) => Ok(()),
            Err(e) if status(&e) == Some(404) => Err(BackendError::ContainerNotFound(id.into())),
            Err(e) => Err(self.err(format!("starting container {id}"), e)),
        }
    }

    async fn copy_in(&self, id: &str, files: &[ContainerFile]) -> Result<()> {
        let tar = container_files_tar(files)?;
        let options = UploadToContainerOptionsBuilder::default().path("/").build();
        match self
            .bounded(
                || format!("copying files into container {id}"),
                self.client
                    .upload_to_container(id, Some(options), bollard::body_full(tar.into())),
            )
            .await?
        {
            Ok(()) => Ok(()),
            Err(e) if status(&e) == Some(404) => Err(BackendError::ContainerNotFound(id.into())),
            Err(e) => Err(self.err(format!("copying files into container {id}"), e)),
        }
    }

    async fn copy_out(&self, id: &str, path: &str) -> Result<Vec<u8>> {
        self.copy_out_capped(id, path, None)
            .await?
            .ok_or_else(|| BackendError::Invalid(format!("{path} is too large")))
    }

    async fn copy_out_bounded(&self, id: &str, path: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        self.copy_out_capped(id, path, Some(limit)).await
    }

    async fn exec(&self, id: &str, request: &ExecRequest) -> Result<ExecOutput> {
        let mut collector = OutputCollector::new(request.output_limit);
        let mut out = self.exec_to(id, request, &mut collector).await?;
        let collected = collector.finish();
        out.output = collected.bytes;
        out.omitted_bytes = collected.omitted;
        Ok(out)
    }

    async fn exec_to(
        &self,
        id: &str,
        request: &ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> Result<ExecOutput> {
        if request.cmd.is_empty() {
            return Err(BackendError::Invalid("exec needs a command".into()));
        }
        let started = Instant::now();
        let pidfile = format!("/tmp/.swtbench-exec-{}.pid", unique_token());
        let mut cmd = vec![
            "/bin/sh".to_string(),
            "-c".to_string(),
            EXEC_WRAPPER.to_string(),
            pidfile.clone(),
        ];
        cmd.extend(request.cmd.iter().cloned());
        let (exec_id, started_exec) = self.start_exec(id, request, cmd).await?;
        let StartExecResults::Attached { mut output, input } = started_exec else {
            return Err(BackendError::Engine {
                operation: format!("exec in container {id}"),
                message: "the engine detached the command".into(),
            });
        };
        // Keep the write half open for the whole run: some engines end the session on half-close.
        let _input = input;

        let deadline = request.timeout.map(|t| tokio::time::Instant::now() + t);
        let watch = self.disk_watch(id, request).await;
        let (timed_out, disk_limit_hit) = self
            .read_exec_output(id, request, &mut output, sink, deadline, watch)
            .await?;

        let mut container_killed = false;
        // Killing the command needs the engine: one that does not answer a ping is lost now,
        // rather than after the deadlines of the kill's calls.
        let ended_early = timed_out || disk_limit_hit;
        if ended_early && !self.probe().await {
            return Err(BackendError::EngineHung {
                operation: format!("killing the timed-out command in container {id}"),
                after: self.options.probe_deadline,
            });
        }
        if ended_early {
            container_killed = self.kill_exec(id, &pidfile, &mut output, sink).await?;
        }
        let exit_code = self.exec_exit_code(&exec_id).await;
        if !timed_out && !disk_limit_hit {
            // A command whose container died under it (`docker rm -f`, the OOM killer taking the
            // init, an engine restart) ends its stream like one that finished; its output is a
            // fragment, so say so instead of returning it as the command's result.
            self.check_still_running(id, exit_code).await?;
            if exit_code.is_none() {
                return Err(BackendError::Engine {
                    operation: format!("exec in container {id}"),
                    message: "the command ended but the engine reported no exit code".into(),
                });
            }
        }
        Ok(ExecOutput {
            output: Vec::new(),
            exit_code,
            timed_out,
            omitted_bytes: 0,
            container_killed,
            disk_limit_hit,
            duration: started.elapsed(),
        })
    }

    async fn container_kill(&self, id: &str) -> Result<()> {
        let options = KillContainerOptionsBuilder::default()
            .signal("KILL")
            .build();
        match self
            .bounded(
                || format!("killing container {id}"),
                self.client.kill_container(id, Some(options)),
            )
            .await?
        {
            Ok(()) => Ok(()),
            Err(e) if status(&e) == Some(404) => Err(BackendError::ContainerNotFound(id.into())),
            // Not running (already stopped or never started): nothing to kill. Docker answers 409;
            // Podman answers 500 "can only kill running containers …: container state improper".
            Err(e) if status(&e) == Some(409) => Ok(()),
            Err(e)
                if status(&e) == Some(500)
                    && server_message(&e).contains("container state improper") =>
            {
                Ok(())
            }
            Err(e) => Err(self.err(format!("killing container {id}"), e)),
        }
    }

    async fn container_written_bytes(&self, id: &str) -> Result<Option<Written>> {
        self.written_bytes(id, false).await
    }

    async fn container_remove(&self, id: &str) -> Result<bool> {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match self
            .bounded(
                || format!("removing container {id}"),
                self.client.remove_container(id, Some(options)),
            )
            .await?
        {
            Ok(()) => Ok(true),
            Err(e) if status(&e) == Some(404) => Ok(false),
            // Another removal is under way (the engine's auto-remove of a container that just
            // ended, another clean-up): wait for it, so that what the caller does next (removing
            // the container's image) does not find the container still there.
            Err(e) if status(&e) == Some(409) && server_message(&e).contains("in progress") => {
                self.wait_container_gone(id, REMOVAL_IN_PROGRESS_LIMIT)
                    .await?;
                Ok(true)
            }
            Err(e) => Err(self.err(format!("removing container {id}"), e)),
        }
    }

    async fn settle_background(&self) {
        let _ = tokio::time::timeout(SETTLE_BACKGROUND_LIMIT, self.background.write()).await;
    }

    async fn containers_with_label(&self, filter: &LabelFilter) -> Result<Vec<ContainerInfo>> {
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&label_filters(filter)?)
            .build();
        let list = self
            .bounded(
                || "listing containers".to_string(),
                self.client.list_containers(Some(options)),
            )
            .await?
            .map_err(|e| self.err("listing containers", e))?;
        Ok(list
            .into_iter()
            .map(|c| ContainerInfo {
                id: c.id.unwrap_or_default(),
                names: c
                    .names
                    .unwrap_or_default()
                    .into_iter()
                    .map(|n| n.trim_start_matches('/').to_string())
                    .collect(),
                image: c.image.unwrap_or_default(),
                labels: c.labels.unwrap_or_default().into_iter().collect(),
                state: c.state.map(|s| s.to_string()).unwrap_or_default(),
            })
            .collect())
    }

    async fn volumes_with_label(&self, filter: &LabelFilter) -> Result<Vec<String>> {
        let options = bollard::query_parameters::ListVolumesOptions {
            filters: Some(label_filters(filter)?),
        };
        let list = self
            .bounded(
                || "listing volumes".to_string(),
                self.client.list_volumes(Some(options)),
            )
            .await?
            .map_err(|e| self.err("listing volumes", e))?;
        Ok(list
            .volumes
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.name)
            .collect())
    }

    async fn volume_remove(&self, name: &str) -> Result<bool> {
        let operation = || format!("removing volume {name}");
        match self
            .bounded(
                operation,
                self.client
                    .remove_volume(name, None::<bollard::query_parameters::RemoveVolumeOptions>),
            )
            .await?
        {
            Ok(()) => Ok(true),
            Err(e) if status(&e) == Some(404) => Ok(false),
            Err(e) => Err(self.err(operation(), e)),
        }
    }
}

impl DockerBackend {
    /// Every image carrying the labels, with the bytes each holds of its own: its size less the
    /// layers it shares with other images (the engine's `SharedSize`). An engine that does not
    /// compute it (Docker before API 1.42 answers -1) gets the image's size less that of its
    /// closest ancestor: the largest other image whose layers begin its own.
    pub async fn images_with_own_size(
        &self,
        filter: &LabelFilter,
    ) -> Result<Vec<(ImageInfo, u64)>> {
        let list = self.list_images_sized(Some(filter), true).await?;
        if list.iter().all(|s| s.shared_size >= 0) {
            return Ok(list
                .into_iter()
                .map(|s| {
                    let size = u64::try_from(s.size).unwrap_or(0);
                    let shared = u64::try_from(s.shared_size).unwrap_or(0);
                    (image_info(s), size.saturating_sub(shared))
                })
                .collect());
        }
        let every = self.list_images_sized(None, false).await?;
        let mut layers: HashMap<String, Vec<String>> = HashMap::new();
        for image in &every {
            layers.insert(image.id.clone(), self.image_layers(&image.id).await?);
        }
        let sizes: Vec<(&Vec<String>, u64)> = every
            .iter()
            .filter_map(|i| Some((layers.get(&i.id)?, u64::try_from(i.size).unwrap_or(0))))
            .collect();
        Ok(list
            .into_iter()
            .map(|s| {
                let size = u64::try_from(s.size).unwrap_or(0);
                let mine = layers.get(&s.id).cloned().unwrap_or_default();
                let ancestor = sizes
                    .iter()
                    .filter(|(l, _)| l.len() < mine.len() && mine.starts_with(l))
                    .map(|(_, n)| *n)
                    .max()
                    .unwrap_or(0);
                (image_info(s), size.saturating_sub(ancestor))
            })
            .collect())
    }

    async fn list_images_sized(
        &self,
        filter: Option<&LabelFilter>,
        shared_size: bool,
    ) -> Result<Vec<bollard::models::ImageSummary>> {
        let mut options = ListImagesOptionsBuilder::default().shared_size(shared_size);
        if let Some(filter) = filter {
            options = options.filters(&label_filters(filter)?);
        }
        self.bounded(
            || "listing images and their sizes".to_string(),
            self.client.list_images(Some(options.build())),
        )
        .await?
        .map_err(|e| self.err("listing images and their sizes", e))
    }

    /// The layers (diff ids, bottom first) of image `id`, which never change: asked once per
    /// image and process.
    async fn image_layers(&self, id: &str) -> Result<Vec<String>> {
        static KNOWN: std::sync::OnceLock<std::sync::Mutex<HashMap<String, Vec<String>>>> =
            std::sync::OnceLock::new();
        let known = KNOWN.get_or_init(Default::default);
        if let Some(l) = known.lock().unwrap_or_else(|e| e.into_inner()).get(id) {
            return Ok(l.clone());
        }
        let inspected = self
            .bounded(
                || format!("inspecting image {id}"),
                self.client.inspect_image(id),
            )
            .await?;
        let layers = match inspected {
            Ok(img) => img.root_fs.and_then(|r| r.layers).unwrap_or_default(),
            // Removed meanwhile: no layers, no ancestor.
            Err(e) if status(&e) == Some(404) => return Ok(Vec::new()),
            Err(e) => return Err(self.err(format!("inspecting image {id}"), e)),
        };
        known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string(), layers.clone());
        Ok(layers)
    }

    /// Creates the named volume `name` with `labels` (an existing one is kept as it is).
    pub(crate) async fn volume_create(
        &self,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<()> {
        let request = bollard::models::VolumeCreateRequest {
            name: Some(name.to_string()),
            labels: Some(hashmap(labels)),
            ..Default::default()
        };
        self.bounded(
            || format!("creating volume {name}"),
            self.client.create_volume(request),
        )
        .await?
        .map(|_| ())
        .map_err(|e| self.err(format!("creating volume {name}"), e))
    }

    /// How this backend connected (for a second connection on another runtime).
    pub(crate) fn options(&self) -> &DockerOptions {
        &self.options
    }

    /// The command (`Cmd`) of an image's configuration; `None` when it has none.
    pub(crate) async fn image_command(&self, name: &str) -> Result<Option<Vec<String>>> {
        let operation = || format!("inspecting image {name}");
        match self
            .bounded(operation, self.client.inspect_image(name))
            .await?
        {
            Ok(img) => Ok(img.config.and_then(|c| c.cmd)),
            Err(e) if status(&e) == Some(404) => Err(BackendError::Invalid(format!(
                "image {name} does not exist"
            ))),
            Err(e) => Err(self.err(operation(), e)),
        }
    }

    /// Commits a container as `tag` with `changes` (Dockerfile instructions: `WORKDIR`, `ENV`,
    /// `LABEL`, `CMD`); the container is paused while its file system is read.
    pub(crate) async fn container_commit(
        &self,
        id: &str,
        tag: &str,
        changes: &[String],
        comment: &str,
    ) -> Result<()> {
        let (repo, tag_part) = split_reference(tag);
        let options = bollard::query_parameters::CommitContainerOptionsBuilder::default()
            .container(id)
            .repo(repo)
            .tag(tag_part)
            .comment(comment)
            .pause(true)
            .changes(&changes.join("\n"))
            .build();
        let operation = || format!("committing container {id} as {tag}");
        // Committing reads the whole layer: as long as a build step may take, not a short call.
        self.client
            .commit_container(options, bollard::models::ContainerConfig::default())
            .await
            .map_err(|e| self.err(operation(), e))?;
        Ok(())
    }
}

/// A container's labels: its spec's, and the connection's owner as [`crate::labels::SESSION`]
/// unless the spec names one.
fn owned_labels(
    labels: &BTreeMap<String, String>,
    owner: Option<&str>,
) -> BTreeMap<String, String> {
    let mut labels = labels.clone();
    if let Some(owner) = owner {
        labels
            .entry(crate::labels::SESSION.to_string())
            .or_insert_with(|| owner.to_string());
    }
    labels
}

/// The isolated network's labels: what it is, and who made it. The network is shared by every
/// process on the engine and kept (as cached images are); its owner label only says who made
/// it, no sweep removes it.
fn network_labels(name: &str, owner: Option<&str>) -> HashMap<String, String> {
    let mut labels = HashMap::from([
        (crate::labels::MANAGED.to_string(), "true".to_string()),
        (crate::labels::KIND.to_string(), "network".to_string()),
        (crate::labels::IMAGE.to_string(), name.to_string()),
    ]);
    if let Some(owner) = owner {
        labels.insert(crate::labels::SESSION.to_string(), owner.to_string());
    }
    labels
}

/// `host/ns/name:tag` → (`host/ns/name`, `tag`); no tag → `latest`.
fn split_reference(reference: &str) -> (&str, &str) {
    match reference.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo, tag),
        _ => (reference, "latest"),
    }
}

fn credentials(auth: &RegistryAuth) -> bollard::auth::DockerCredentials {
    bollard::auth::DockerCredentials {
        username: Some(auth.username.clone()),
        password: Some(auth.password.clone()),
        serveraddress: Some(auth.server.clone()),
        ..Default::default()
    }
}

/// Whether a pull error says the registry has no such image (rather than a failure).
fn is_missing(message: &str) -> bool {
    let m = message.to_lowercase();
    m.contains("manifest unknown")
        || m.contains("not found")
        || m.contains("does not exist")
        || m.contains("name unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(name: &str, id: &str, created: &str, internal: bool) -> bollard::models::Network {
        bollard::models::Network {
            name: Some(name.into()),
            id: Some(id.into()),
            created: Some(created.into()),
            internal: Some(internal),
            ..Default::default()
        }
    }

    #[test]
    fn every_process_picks_the_same_isolated_network_oldest_first() {
        // The engine writes `.1Z` for a tenth of a second: as text it sorts after `.123456789Z`.
        let listed = [
            network("n", "bbb", "2026-12-05T16:08:01.2Z", true),
            network("n", "ccc", "2026-12-05T16:08:01.123456789Z", true),
            network("n", "aaa", "2026-12-05T16:08:01.2Z", true),
            network("other", "000", "2026-12-05T16:00:00Z", true),
            network("n", "111", "2026-12-05T16:00:00Z", false),
        ];
        assert_eq!(isolated_candidates("n", &listed), ["ccc", "aaa", "bbb"]);
        let mut reversed = listed.clone();
        reversed.reverse();
        assert_eq!(
            isolated_candidates("n", &reversed),
            isolated_candidates("n", &listed)
        );
        assert!(sortable_time("2026-12-05T16:08:01Z") < sortable_time("2026-12-05T16:08:01.5Z"));
        let mut untimed = network("u", "x", "", true);
        untimed.created = None;
        assert_eq!(isolated_candidates("u", &[untimed]), ["x"]);
        assert_eq!(
            sortable_time("2026-12-05T16:08:01.5+00:00"),
            "2026-12-05T16:08:01.500000000+00:00"
        );
    }

    #[test]
    fn references_split_into_repository_and_tag() {
        assert_eq!(
            split_reference("127.0.0.1:5000/swt/exec.env.x86_64.abc:latest"),
            ("127.0.0.1:5000/swt/exec.env.x86_64.abc", "latest")
        );
        assert_eq!(
            split_reference("127.0.0.1:5000/swt/name"),
            ("127.0.0.1:5000/swt/name", "latest")
        );
        assert!(is_missing(
            "manifest for 127.0.0.1:5000/swt/x:latest not found: manifest unknown"
        ));
        assert!(!is_missing("unauthorized: authentication required"));
    }

    #[test]
    fn step_images_are_read_from_the_legacy_builders_log() {
        assert_eq!(step_image(" ---> 3f2c1a9b0d4e"), Some("3f2c1a9b0d4e"));
        assert_eq!(step_image("---> 52b50e10c3e2 "), Some("52b50e10c3e2"));
        assert_eq!(step_image(" ---> Running in 0123456789ab"), None);
        assert_eq!(step_image(" ---> Using cache"), None);
        assert_eq!(step_image(" ---> abc"), None);
        assert_eq!(step_image("Step 2/5 : RUN x"), None);
    }

    #[test]
    fn labels_become_one_quoted_instruction_at_the_end() {
        let labels = BTreeMap::from([
            ("swtbench.kind".to_string(), "env".to_string()),
            ("note".to_string(), "say \"hi\" for $5\\x".to_string()),
        ]);
        assert_eq!(
            append_label_instruction("FROM a\nRUN b", &labels),
            "FROM a\nRUN b\nLABEL \"note\"=\"say \\\"hi\\\" for \\$5\\\\x\" \"swtbench.kind\"=\"env\"\n"
        );
    }

    #[test]
    fn rfc3339_timestamps_convert_to_unix_seconds() {
        assert_eq!(rfc3339_to_unix("1970-01-01T00:00:00Z"), 0);
        assert_eq!(
            rfc3339_to_unix("2025-05-20T10:11:12.123456789Z"),
            1_747_735_872
        );
        assert_eq!(rfc3339_to_unix("2025-05-20T12:11:12+02:00"), 1_747_735_872);
        assert_eq!(rfc3339_to_unix("2024-02-29T00:00:00Z"), 1_709_164_800);
        assert_eq!(rfc3339_to_unix("garbage"), 0);
    }

    #[test]
    fn the_exec_wrapper_records_its_pid_and_merges_stderr() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pidfile = dir.path().join("exec.pid");
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(EXEC_WRAPPER)
            .arg(&pidfile)
            .args(["/bin/sh", "-c", "echo out; echo err >&2; echo $$"])
            .output()
            .expect("sh runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let recorded = std::fs::read_to_string(&pidfile).expect("pid file");
        // The command replaced the wrapper (exec), so the recorded PID is the command's own.
        assert_eq!(text, format!("out\nerr\n{}", recorded));
        assert!(out.stderr.is_empty());
    }
}
