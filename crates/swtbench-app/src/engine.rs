//! The container engine and the async runtime of the commands that talk to it: one connection
//! (an unreachable engine is one environment error with the backend's hint, before any work) and
//! one multi-threaded tokio runtime. Nothing else in the application layer creates either.

use anyhow::anyhow;
use swtbench_backend::{DockerBackend, DockerOptions};

use crate::{Error, Result};

/// Connects to the container engine (`DOCKER_HOST`, else the Docker and Podman sockets).
pub async fn connect() -> Result<DockerBackend> {
    DockerBackend::connect(DockerOptions::default())
        .await
        .map_err(|e| {
            let hint = e.hint();
            let err = Error::environment(e);
            match hint {
                Some(h) => err.with_hint(h),
                None => err,
            }
        })
}

/// A tokio runtime for the engine work.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::environment(anyhow!("cannot start the async runtime: {e}")))
}

/// A runtime and a connected engine, for the commands that need both at once.
pub fn connect_blocking() -> Result<(tokio::runtime::Runtime, DockerBackend)> {
    let rt = runtime()?;
    let backend = rt.block_on(connect())?;
    Ok((rt, backend))
}
