//! The `ContainerBackend` trait: exactly the engine verbs the runner needs, and no more.
//!
//! Implementations: [`crate::DockerBackend`] (Docker or Podman through the Docker API) and
//! `FakeBackend` (in memory, scripted, recording; behind the `fake` feature, for tests). The trait speaks only this crate's plain
//! data types; no client library type crosses it.

use std::future::Future;
use std::io::Write;

use crate::error::Result;
use crate::labels::LabelFilter;
use crate::model::{
    BuildRequest, ContainerFile, ContainerInfo, ContainerSpec, EngineInfo, ExecOutput, ExecRequest,
    ImageInfo, ImportRequest, ProgressSink, RegistryAuth, Written,
};
use crate::output::OutputSink;

/// Where build logs go, line by line (a file, a `Vec<u8>` in tests).
pub type LogSink<'a> = &'a mut (dyn Write + Send);

/// A container engine.
///
/// Every method is cancel-safe in the sense that dropping the future leaves nothing half-done that a
/// later cleanup by label cannot remove.
pub trait ContainerBackend: Send + Sync + 'static {
    /// Checks that the engine answers and says what it is. Unreachable → one
    /// [`crate::BackendError::Unreachable`] with a hint.
    fn engine_info(&self) -> impl Future<Output = Result<EngineInfo>> + Send;

    /// The image called `name` (`name:tag` or an id), or `None` if there is none.
    fn image_inspect(&self, name: &str) -> impl Future<Output = Result<Option<ImageInfo>>> + Send;

    /// Whether an image called `name` exists.
    fn image_exists(&self, name: &str) -> impl Future<Output = Result<bool>> + Send {
        async move { Ok(self.image_inspect(name).await?.is_some()) }
    }

    /// Removes an image (with `force`, even when containers use it). `Ok(false)`: there was none.
    fn image_remove(&self, name: &str, force: bool) -> impl Future<Output = Result<bool>> + Send;

    /// Every image carrying the labels.
    fn images_with_label(
        &self,
        filter: &LabelFilter,
    ) -> impl Future<Output = Result<Vec<ImageInfo>>> + Send;

    /// Builds an image, writing the build log to `log` line by line as it arrives. Returns the new
    /// image. A failing step gives [`crate::BackendError::BuildFailed`] with the log tail; the time
    /// limit gives [`crate::BackendError::BuildTimeout`].
    fn image_build(
        &self,
        request: BuildRequest,
        log: LogSink<'_>,
    ) -> impl Future<Output = Result<ImageInfo>> + Send;

    /// Turns a root filesystem tarball into an image.
    fn image_import(
        &self,
        request: ImportRequest,
    ) -> impl Future<Output = Result<ImageInfo>> + Send;

    /// Pulls `reference` (`host/ns/name:tag`) from its registry. A registry without the image
    /// gives [`crate::BackendError::PullFailed`] with `missing`.
    fn image_pull(
        &self,
        reference: &str,
        auth: Option<&RegistryAuth>,
        progress: ProgressSink<'_>,
    ) -> impl Future<Output = Result<()>> + Send {
        let _ = (auth, progress);
        std::future::ready(Err(crate::BackendError::PullFailed {
            reference: reference.to_string(),
            message: "this engine cannot pull images".into(),
            missing: false,
        }))
    }

    /// Pushes the local image `reference` to its registry.
    fn image_push(
        &self,
        reference: &str,
        auth: Option<&RegistryAuth>,
        progress: ProgressSink<'_>,
    ) -> impl Future<Output = Result<()>> + Send {
        let _ = (auth, progress);
        std::future::ready(Err(crate::BackendError::PushFailed {
            reference: reference.to_string(),
            message: "this engine cannot push images".into(),
        }))
    }

    /// Gives the image `source` the additional name `target` (`name:tag`).
    fn image_tag(&self, source: &str, target: &str) -> impl Future<Output = Result<()>> + Send {
        std::future::ready(Err(crate::BackendError::Invalid(format!(
            "this engine cannot tag {source} as {target}"
        ))))
    }

    /// Creates (does not start) a container; returns its id.
    fn container_create(&self, spec: &ContainerSpec)
        -> impl Future<Output = Result<String>> + Send;

    fn container_start(&self, id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Puts files into a container with their modes and owners; missing parent directories are
    /// created.
    fn copy_in(&self, id: &str, files: &[ContainerFile])
        -> impl Future<Output = Result<()>> + Send;

    /// Reads one regular file out of a container.
    /// [`crate::BackendError::PathNotFound`] when it is not there.
    fn copy_out(&self, id: &str, path: &str) -> impl Future<Output = Result<Vec<u8>>> + Send;

    /// As [`ContainerBackend::copy_out`], but `Ok(None)` for a file larger than `limit` bytes,
    /// without holding more than about that much (a file a test wrote can be of any size).
    fn copy_out_bounded(
        &self,
        id: &str,
        path: &str,
        limit: u64,
    ) -> impl Future<Output = Result<Option<Vec<u8>>>> + Send {
        async move {
            let bytes = self.copy_out(id, path).await?;
            Ok((bytes.len() as u64 <= limit).then_some(bytes))
        }
    }

    /// Runs a command in a started container and collects its combined output. A timeout is not an
    /// error: the output so far comes back with `timed_out` set and the process tree killed. A
    /// container that stops or disappears while the command runs is
    /// [`crate::BackendError::ContainerStopped`]: what was printed until then is not a result.
    fn exec(
        &self,
        id: &str,
        request: &ExecRequest,
    ) -> impl Future<Output = Result<ExecOutput>> + Send;

    /// As [`ContainerBackend::exec`], but the output goes to `sink` chunk by chunk as it arrives,
    /// whole (`request.output_limit` is left to the sink), so a command that prints gigabytes
    /// costs no memory here. The returned [`ExecOutput`] has an empty `output` and
    /// `omitted_bytes` 0. The default implementation collects the output with [`Self::exec`]
    /// first (for backends whose output is in memory anyway, such as the fake).
    fn exec_to(
        &self,
        id: &str,
        request: &ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> impl Future<Output = Result<ExecOutput>> + Send {
        async move {
            let mut whole = request.clone();
            whole.output_limit = None;
            let mut out = self.exec(id, &whole).await?;
            sink.push(&out.output);
            out.output = Vec::new();
            out.omitted_bytes = 0;
            Ok(out)
        }
    }

    /// Kills a container's processes at once. A container that is not running is fine.
    fn container_kill(&self, id: &str) -> impl Future<Output = Result<()>> + Send;

    /// What the container has written to its writable layer (`docker inspect --size`'s
    /// `SizeRw`, or its files); `None` when the engine does not say, or cannot say quickly.
    fn container_written_bytes(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<Written>>> + Send;

    /// Removes a container whatever its state. `Ok(false)`: there was none.
    fn container_remove(&self, id: &str) -> impl Future<Output = Result<bool>> + Send;

    /// Waits until the container removals this connection started in the background (the
    /// containers of commit builds with [`crate::BuildRequest::remove_container_later`]) have
    /// ended, at most a bounded time. Engines that start none return at once.
    fn settle_background(&self) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Every container (running or not) carrying the labels.
    fn containers_with_label(
        &self,
        filter: &LabelFilter,
    ) -> impl Future<Output = Result<Vec<ContainerInfo>>> + Send;

    /// The names of the named volumes carrying the labels (compiler caches). Engines without
    /// volumes have none.
    fn volumes_with_label(
        &self,
        filter: &LabelFilter,
    ) -> impl Future<Output = Result<Vec<String>>> + Send {
        let _ = filter;
        async { Ok(Vec::new()) }
    }

    /// Removes a named volume. `Ok(false)`: there was none.
    fn volume_remove(&self, name: &str) -> impl Future<Output = Result<bool>> + Send {
        let _ = name;
        async { Ok(false) }
    }
}
