//! [`NoEngine`]: a [`ContainerBackend`] for runs that must not touch an engine (`--skip-eval`
//! grades the outputs on disk). Every verb fails with the same explanation, so a code path that
//! reaches for the engine by mistake says so instead of hanging on a socket.

use std::future::Future;

use swtbench_backend::{
    BackendError, BuildRequest, ContainerBackend, ContainerFile, ContainerInfo, ContainerSpec,
    EngineInfo, ExecOutput, ExecRequest, ImageInfo, ImportRequest, LabelFilter, LogSink,
};

/// A backend without an engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEngine;

fn refuse<T: Send>() -> impl Future<Output = swtbench_backend::Result<T>> + Send {
    std::future::ready(Err(BackendError::Invalid(
        "this run uses no container engine (--skip-eval)".into(),
    )))
}

impl ContainerBackend for NoEngine {
    fn engine_info(&self) -> impl Future<Output = swtbench_backend::Result<EngineInfo>> + Send {
        refuse()
    }
    fn image_inspect(
        &self,
        _name: &str,
    ) -> impl Future<Output = swtbench_backend::Result<Option<ImageInfo>>> + Send {
        refuse()
    }
    fn image_remove(
        &self,
        _name: &str,
        _force: bool,
    ) -> impl Future<Output = swtbench_backend::Result<bool>> + Send {
        refuse()
    }
    fn images_with_label(
        &self,
        _filter: &LabelFilter,
    ) -> impl Future<Output = swtbench_backend::Result<Vec<ImageInfo>>> + Send {
        refuse()
    }
    fn image_build(
        &self,
        _request: BuildRequest,
        _log: LogSink<'_>,
    ) -> impl Future<Output = swtbench_backend::Result<ImageInfo>> + Send {
        refuse()
    }
    fn image_import(
        &self,
        _request: ImportRequest,
    ) -> impl Future<Output = swtbench_backend::Result<ImageInfo>> + Send {
        refuse()
    }
    fn container_create(
        &self,
        _spec: &ContainerSpec,
    ) -> impl Future<Output = swtbench_backend::Result<String>> + Send {
        refuse()
    }
    fn container_start(
        &self,
        _id: &str,
    ) -> impl Future<Output = swtbench_backend::Result<()>> + Send {
        refuse()
    }
    fn copy_in(
        &self,
        _id: &str,
        _files: &[ContainerFile],
    ) -> impl Future<Output = swtbench_backend::Result<()>> + Send {
        refuse()
    }
    fn copy_out(
        &self,
        _id: &str,
        _path: &str,
    ) -> impl Future<Output = swtbench_backend::Result<Vec<u8>>> + Send {
        refuse()
    }
    fn exec(
        &self,
        _id: &str,
        _request: &ExecRequest,
    ) -> impl Future<Output = swtbench_backend::Result<ExecOutput>> + Send {
        refuse()
    }
    fn container_kill(
        &self,
        _id: &str,
    ) -> impl Future<Output = swtbench_backend::Result<()>> + Send {
        refuse()
    }
    fn container_written_bytes(
        &self,
        _id: &str,
    ) -> impl Future<Output = swtbench_backend::Result<Option<swtbench_backend::Written>>> + Send
    {
        refuse()
    }
    fn container_remove(
        &self,
        _id: &str,
    ) -> impl Future<Output = swtbench_backend::Result<bool>> + Send {
        refuse()
    }
    fn containers_with_label(
        &self,
        _filter: &LabelFilter,
    ) -> impl Future<Output = swtbench_backend::Result<Vec<ContainerInfo>>> + Send {
        refuse()
    }
}
