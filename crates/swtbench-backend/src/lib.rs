//! Container engine backend for swtbench.
//!
//! The runner talks to containers only through [`ContainerBackend`]: images (inspect, build from an
//! in-memory context, import a rootfs, remove, list by label), containers (create with labels,
//! limits, no network and a real init; start; copy in/out; exec with a timeout that keeps the
//! output so far and an output cap; kill; remove; list by label). [`DockerBackend`] is the real
//! engine (Docker, or Podman through its Docker API); `FakeBackend` (feature `fake`) is an
//! in-memory, scripted, recording engine for runner tests. [`ImageBuilder`] builds each image at
//! most once however many workers ask for it, and [`BuildNetwork`] carries the host's CA bundle and
//! proxy settings into builds.
//!
//! This crate does I/O against the engine; it knows nothing about instances, specs or grading.

pub mod backend;
pub mod builder;
pub mod cleanup;
pub mod commit_build;
pub mod context;
pub mod docker;
mod docker_commit;
pub mod error;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod labels;
pub mod liveness;
pub mod model;
pub mod network;
pub mod output;
pub mod steps;

pub use backend::{ContainerBackend, LogSink};
pub use builder::{
    pull_as, push_as, BuildOutcome, EnsuredImage, ImageBuilder, ImageRecipe, RebuildPolicy,
    RegistryCache, RegistryNote,
};
pub use cleanup::{remove_containers, remove_images, CleanupReport, ContainerGuard};
pub use context::{BuildContext, ContextFile};
pub use docker::{DockerBackend, DockerOptions};
pub use error::{BackendError, Result};
#[cfg(any(test, feature = "fake"))]
pub use fake::{FakeBackend, FakeCall, FakeExec, FakeExecContext};
pub use labels::LabelFilter;
pub use model::{
    BuildRequest, CacheVolume, ContainerFile, ContainerInfo, ContainerSpec, EngineHost, EngineInfo,
    EngineKind, ExecOutput, ExecRequest, ImageInfo, ImportRequest, NetworkAccess, ProgressSink,
    RegistryAuth, ResourceLimits, RootfsSource, TransferProgress, Written,
};
pub use network::BuildNetwork;
pub use output::OutputSink;
