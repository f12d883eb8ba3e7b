//! The data the backend trait speaks: requests (build, import, container spec, exec) and answers
//! (engine, image, container info, exec output). Plain values with no engine types inside, so the
//! runner, the fake and the Docker implementation share them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use swtbench_core::engine::{ImageInfo, RegistryAuth, ResourceLimits, Written};

use crate::context::BuildContext;
pub use crate::context::ContainerFile;

/// Which engine answers on the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    Docker,
    Podman,
    /// A fake or an engine that did not say what it is.
    Other,
}

/// What `engine_info` found out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineInfo {
    pub kind: EngineKind,
    /// Engine version, e.g. `20.10.24+dfsg1`.
    pub version: String,
    /// The API version the client speaks with it after negotiation, e.g. `1.41`.
    pub api_version: String,
    /// `linux/amd64` style.
    pub os_arch: String,
    /// Where the client connects (`unix:///var/run/docker.sock`, …).
    pub endpoint: String,
    /// What the engine's host has, as the engine reports it (`None`: not reported).
    pub host: EngineHost,
}

/// The engine host's resources and storage, from the engine's `/info`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EngineHost {
    pub memory_bytes: Option<u64>,
    pub cpus: Option<u32>,
    /// `overlay2`, `fuse-overlayfs`, `btrfs`, … (Podman: `overlay`, `vfs`).
    pub storage_driver: Option<String>,
    /// The file system under the storage driver (`xfs`, `extfs`, …) when the engine says.
    pub backing_filesystem: Option<String>,
    /// The engine's data directory (`/var/lib/docker`).
    pub root_dir: Option<String>,
}

impl EngineHost {
    /// Whether the storage driver has a per-container size quota (`--storage-opt size=`):
    /// overlay on xfs (which must also be mounted with `pquota`: the engine refuses the option
    /// otherwise), btrfs, zfs and devicemapper.
    pub fn has_disk_quota(&self) -> bool {
        let driver = self.storage_driver.as_deref().unwrap_or("");
        let backing = self.backing_filesystem.as_deref().unwrap_or("");
        match driver {
            "overlay2" | "overlay" => backing == "xfs",
            "btrfs" | "zfs" | "devicemapper" => true,
            _ => false,
        }
    }
}

/// A container as the engine lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerInfo {
    pub id: String,
    /// Names without the leading `/`.
    pub names: Vec<String>,
    pub image: String,
    pub labels: BTreeMap<String, String>,
    /// `created`, `running`, `exited`, … as the engine says.
    pub state: String,
}

/// A request to build one image from an in-memory context.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// `name:tag` to give the result.
    pub tag: String,
    /// Dockerfile and every file it copies.
    pub context: BuildContext,
    /// `--build-arg` values (also the predefined proxy args).
    pub build_args: BTreeMap<String, String>,
    /// Labels put on the resulting image.
    pub labels: BTreeMap<String, String>,
    /// `linux/x86_64`, `linux/arm64/v8`, or `None` for the engine's default.
    pub platform: Option<String>,
    /// Ignore the layer cache.
    pub no_cache: bool,
    /// Abandon the build after this long (`None`: no limit).
    pub timeout: Option<Duration>,
    /// Run the build's steps on the host network (a proxy on the host's loopback needs it).
    pub host_network: bool,
    /// Build by committing one container instead of a layer per instruction, when the engine can
    /// and the Dockerfile has a shape that allows it (`crate::commit_build`); the image's files and
    /// settings are the same. Engines without it (Podman, the fake) build step by step.
    pub by_commit: bool,
    /// A commit build's container is removed by a task of the connection once the image is
    /// committed, instead of before the build returns: the image is ready a second or more
    /// sooner (removing a container whose install wrote thousands of files takes the engine that
    /// long). The caller waits for those removals with
    /// [`crate::ContainerBackend::settle_background`] before it removes the build's parent image or
    /// ends.
    pub remove_container_later: bool,
    /// A cache volume a commit build mounts in its container (never committed: a commit leaves
    /// volumes out) and its steps use; a step-by-step build ignores it.
    pub cache_volume: Option<CacheVolume>,
}

/// A named volume of the engine that a commit build's steps share with other builds (a compiler
/// cache): created with its labels when missing, mounted at `target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheVolume {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub target: String,
    /// Variables of every `RUN` step.
    pub env: Vec<(String, String)>,
    /// Directories put first on every `RUN` step's `PATH`.
    pub path_prepend: Vec<String>,
}

impl BuildRequest {
    pub fn new(tag: impl Into<String>, context: BuildContext) -> Self {
        BuildRequest {
            tag: tag.into(),
            context,
            build_args: BTreeMap::new(),
            labels: BTreeMap::new(),
            platform: None,
            no_cache: false,
            timeout: None,
            host_network: false,
            by_commit: false,
            remove_container_later: false,
            cache_volume: None,
        }
    }
}

/// Where the root filesystem tarball of an import comes from.
#[derive(Debug, Clone)]
pub enum RootfsSource {
    /// An uncompressed (or gzip) tar file on the host, streamed to the engine.
    File(PathBuf),
    /// Tar bytes in memory.
    Bytes(Vec<u8>),
}

/// A request to turn a root filesystem tarball into an image (`docker import`).
#[derive(Debug, Clone)]
pub struct ImportRequest {
    pub tag: String,
    pub rootfs: RootfsSource,
    pub labels: BTreeMap<String, String>,
    /// Extra Dockerfile instructions (`ENV …`, `CMD …`, `WORKDIR …`) applied on import.
    pub changes: Vec<String>,
}

/// Network access of a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NetworkAccess {
    /// No network interface but loopback (the default for test runs).
    #[default]
    Disabled,
    /// The engine's default network (needed only by specs that fetch at test time).
    Enabled,
    /// An interface on an internal network of the engine ([`crate::docker::ISOLATED_NETWORK`]):
    /// nothing leaves the machine and containers cannot reach each other, but packets are dropped
    /// rather than refused, so a connection times out as on a network that loses it instead of
    /// failing at once with "network unreachable" (some repositories' own tests expect the
    /// timeout).
    Isolated,
    /// The host's network stack (build containers whose proxy is on the host's loopback).
    Host,
}

/// How to create a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    pub image: String,
    /// Container name; `None` lets the engine pick one.
    pub name: Option<String>,
    /// `root`, `nonroot`, `uid:gid`; `None` is the image's default.
    pub user: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub env: Vec<(String, String)>,
    pub working_dir: Option<String>,
    /// The main process; it only has to keep the container alive while commands are executed.
    pub command: Vec<String>,
    pub limits: ResourceLimits,
    pub network: NetworkAccess,
    /// Run a real init as PID 1 so that signals are forwarded and a stop is immediate.
    pub init: bool,
    pub platform: Option<String>,
    /// The engine removes the container as soon as it stops (`--rm`).
    pub auto_remove: bool,
    /// Named volumes mounted in the container: (volume, path in the container).
    pub volumes: Vec<(String, String)>,
}

impl ContainerSpec {
    /// A spec with the safe defaults: no network, an init, kept alive by `tail -f /dev/null`.
    pub fn new(image: impl Into<String>) -> Self {
        ContainerSpec {
            image: image.into(),
            name: None,
            user: None,
            labels: BTreeMap::new(),
            env: Vec::new(),
            working_dir: None,
            command: vec!["tail".into(), "-f".into(), "/dev/null".into()],
            limits: ResourceLimits::default(),
            network: NetworkAccess::Disabled,
            init: true,
            platform: None,
            auto_remove: false,
            volumes: Vec::new(),
        }
    }

    /// A container that stops (and is removed) by itself after `lifetime`, whatever happens to
    /// the process that created it: its main process is `sleep` for that long.
    pub fn with_lifetime(mut self, lifetime: Duration) -> Self {
        self.command = vec!["sleep".into(), lifetime.as_secs().max(1).to_string()];
        self.auto_remove = true;
        self
    }
}

/// A command to run in a started container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// Program and arguments (no shell is added; use `["/bin/bash", "/eval.sh"]` style).
    pub cmd: Vec<String>,
    pub user: Option<String>,
    pub working_dir: Option<String>,
    pub env: Vec<(String, String)>,
    /// Kill the whole process tree after this long and return what was printed so far.
    pub timeout: Option<Duration>,
    /// Keep at most this many bytes of output (head and tail); `None` keeps everything.
    pub output_limit: Option<usize>,
    /// Watch what the container wrote to its writable layer while the command runs, and end the
    /// command like a timeout once it is more than this ([`ExecOutput::disk_limit_hit`]).
    pub disk_limit: Option<u64>,
}

impl ExecRequest {
    pub fn new<I, S>(cmd: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ExecRequest {
            cmd: cmd.into_iter().map(Into::into).collect(),
            user: None,
            working_dir: None,
            env: Vec::new(),
            timeout: None,
            output_limit: None,
            disk_limit: None,
        }
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn output_limit(mut self, bytes: usize) -> Self {
        self.output_limit = Some(bytes);
        self
    }

    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    pub fn working_dir(mut self, dir: impl Into<String>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }
}

/// What a command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// stdout and stderr interleaved in the order they were written; when cut, head + marker +
    /// tail (see [`crate::output::truncation_marker`]).
    pub output: Vec<u8>,
    /// The exit code, when the process ended on its own (`None` when it had to be killed and the
    /// engine did not report one).
    pub exit_code: Option<i64>,
    /// The timeout fired; `output` is what was printed before.
    pub timed_out: bool,
    /// Bytes dropped from the middle of the output (0: complete).
    pub omitted_bytes: u64,
    /// The process tree did not die after the timeout and the whole container was killed.
    pub container_killed: bool,
    /// The container wrote more than [`ExecRequest::disk_limit`]; the command was ended there
    /// (`timed_out` is false).
    pub disk_limit_hit: bool,
    pub duration: Duration,
}

impl ExecOutput {
    /// The output as text, invalid UTF-8 replaced (the original crashed on it).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output).into_owned()
    }

    /// Ended on its own with exit code 0.
    pub fn success(&self) -> bool {
        !self.timed_out && self.exit_code == Some(0)
    }
}

/// Progress of a pull or push, summed over its layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TransferProgress {
    /// Layers the engine reported.
    pub layers: usize,
    /// Layers finished (downloaded and extracted, pushed, or already there).
    pub layers_done: usize,
    /// Bytes moved so far and the total the engine announced.
    pub bytes: u64,
    pub total_bytes: u64,
}

/// Receives [`TransferProgress`] as a transfer goes.
pub type ProgressSink<'a> = &'a (dyn Fn(TransferProgress) + Send + Sync);
