//! The container engine and the async runtime of the commands that talk to it: one connection
//! (an unreachable engine is one environment error with the backend's hint, before any work) and
//! one multi-threaded tokio runtime. Nothing else in the application layer creates either.
//! The engine's deadlines come from [`env_vars::SWTBENCH_ENGINE_DEADLINE_SECS`],
//! [`env_vars::SWTBENCH_ENGINE_QUIET_SECS`] and [`env_vars::SWTBENCH_ENGINE_PROBE_SECS`] when set.

use std::time::Duration;

use anyhow::anyhow;
use swtbench_backend::{DockerBackend, DockerOptions};

use crate::{env_vars, Error, Result};

/// Connects to the container engine (`DOCKER_HOST`, else the Docker and Podman sockets).
pub async fn connect() -> Result<DockerBackend> {
    let mut options = engine_options(env_vars::var)?;
    options.host = env_vars::var(env_vars::DOCKER_HOST);
    // Every container this process creates, and the network it may make, name it as their owner.
    options.owner = Some(swtbench_data::owner::current().label());
    DockerBackend::connect(options).await.map_err(|e| {
        let hint = e.hint();
        let err = Error::environment(e);
        match hint {
            Some(h) => err.with_hint(h),
            None => err,
        }
    })
}

/// The engine options: the defaults, with the deadlines of the environment variables that are
/// set (`var` reads one).
fn engine_options(var: impl Fn(&str) -> Option<String>) -> Result<DockerOptions> {
    let mut options = DockerOptions::default();
    let seconds = |name: &str| -> Result<Option<Duration>> {
        let Some(text) = var(name).filter(|t| !t.trim().is_empty()) else {
            return Ok(None);
        };
        match text.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(Some(Duration::from_secs(n))),
            _ => Err(Error::input(anyhow!(
                "{name}={text:?} is not a number of seconds above 0"
            ))
            .with_hint(format!(
                "set {name} to a whole number of seconds, or unset it"
            ))),
        }
    };
    if let Some(d) = seconds(env_vars::SWTBENCH_ENGINE_DEADLINE_SECS)? {
        options.request_timeout = d;
    }
    if let Some(d) = seconds(env_vars::SWTBENCH_ENGINE_QUIET_SECS)? {
        options.quiet_probe = d;
    }
    if let Some(d) = seconds(env_vars::SWTBENCH_ENGINE_PROBE_SECS)? {
        options.probe_deadline = d;
    }
    Ok(options)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_come_from_the_environment_when_set() {
        let none = engine_options(|_| None).expect("defaults");
        assert_eq!(none.request_timeout, Duration::from_secs(60));
        assert_eq!(none.quiet_probe, Duration::from_secs(30));
        assert_eq!(none.probe_deadline, Duration::from_secs(5));
        let set = engine_options(|name| match name {
            env_vars::SWTBENCH_ENGINE_DEADLINE_SECS => Some("7".into()),
            env_vars::SWTBENCH_ENGINE_QUIET_SECS => Some(" 3 ".into()),
            env_vars::SWTBENCH_ENGINE_PROBE_SECS => Some("30".into()),
            _ => None,
        })
        .expect("set");
        assert_eq!(set.request_timeout, Duration::from_secs(7));
        assert_eq!(set.quiet_probe, Duration::from_secs(3));
        assert_eq!(set.probe_deadline, Duration::from_secs(30));
        for bad in ["0", "-1", "1.5", "soon"] {
            let err = engine_options(|name| {
                (name == env_vars::SWTBENCH_ENGINE_QUIET_SECS).then(|| bad.to_string())
            })
            .expect_err(bad);
            assert!(
                err.to_string().contains("SWTBENCH_ENGINE_QUIET_SECS"),
                "{err}"
            );
        }
    }
}
