//! The backend's error type: what failed, on which image / container / path, and (for the errors a
//! user can act on) what to do about it.
//!
//! Every variant holds plain data so that one build failure can be handed to every worker waiting
//! for the same image (`Clone`). Engine client errors are turned into text here and nowhere else, so
//! no client type leaks through the crate's API.

use std::time::Duration;

/// Result alias used throughout the backend.
pub type Result<T, E = BackendError> = std::result::Result<T, E>;

/// Everything that can go wrong talking to a container engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The engine could not be reached at all (socket missing, daemon stopped, permission denied).
    #[error("cannot reach the container engine at {endpoint}: {reason}")]
    Unreachable { endpoint: String, reason: String },

    /// An image that must exist does not.
    #[error("image {0} not found")]
    ImageNotFound(String),

    /// A container that must exist does not (it may have been removed by a cleanup).
    #[error("container {0} not found")]
    ContainerNotFound(String),

    /// The container stopped (or was removed) while a command ran in it: killed from outside, out
    /// of memory, or the engine restarted. The command's output is incomplete and must not be
    /// used as its result.
    #[error(
        "container {id} stopped while a command ran in it ({reason}); its output is incomplete"
    )]
    ContainerStopped { id: String, reason: String },

    /// A path asked for with copy-out does not exist in the container.
    #[error("{path} not found in container {container}")]
    PathNotFound { container: String, path: String },

    /// The build ran and failed; `log_tail` holds the last lines of its log.
    #[error("building image {tag} failed: {message}")]
    BuildFailed {
        tag: String,
        message: String,
        log_tail: Vec<String>,
    },

    /// The build did not finish within its time limit and was abandoned.
    #[error("building image {tag} timed out after {}s", after.as_secs())]
    BuildTimeout { tag: String, after: Duration },

    /// Importing a root filesystem tarball failed.
    #[error("importing {tag} failed: {message}")]
    ImportFailed { tag: String, message: String },

    /// A request to the engine was refused or failed; `operation` says which.
    #[error("{operation} failed: {message}")]
    Engine { operation: String, message: String },

    /// A request to the engine got no answer within its deadline, but the engine still answers a
    /// liveness probe: this call is stuck, the engine is not.
    #[error("{operation} got no answer from the container engine within {}s", after.as_secs())]
    RequestTimeout { operation: String, after: Duration },

    /// The engine stopped answering: a call got no answer within its deadline (or an output
    /// stream stayed silent that long) and the engine did not answer a liveness probe either. It
    /// is lost for this process; every later call would wait the same way.
    #[error(
        "{operation}: the container engine stopped answering (no answer for {}s, and none to a \
         liveness probe)",
        after.as_secs()
    )]
    EngineHung { operation: String, after: Duration },

    /// Local I/O (reading a tarball, writing a build log) failed.
    #[error("{context}: {message}")]
    Io { context: String, message: String },

    /// Pulling an image from a registry failed; `missing`: the registry does not have it.
    #[error("pulling {reference} failed: {message}")]
    PullFailed {
        reference: String,
        message: String,
        missing: bool,
    },

    /// Pushing an image to a registry failed.
    #[error("pushing {reference} failed: {message}")]
    PushFailed { reference: String, message: String },

    /// The caller asked for something the backend cannot express (bad path, bad label, …).
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl BackendError {
    /// What the user can do about this error, when there is something.
    pub fn hint(&self) -> Option<String> {
        match self {
            BackendError::Unreachable { .. } => Some(
                "start the Docker daemon (`systemctl start docker`, or `dockerd &`) and check that \
                 this user may use its socket; to use another engine set DOCKER_HOST, e.g. for \
                 rootless Podman run `systemctl --user start podman.socket` and set \
                 DOCKER_HOST=unix://$XDG_RUNTIME_DIR/podman/podman.sock"
                    .to_string(),
            ),
            BackendError::ImageNotFound(_) => Some(
                "build or import the image first (the fixture base image: `swtbench images base`; a Python image: `swtbench images python VERSION`)"
                    .to_string(),
            ),
            BackendError::EngineHung { .. } => Some(
                "the engine accepts connections but does not answer: check it with `docker info` \
                 (or `podman info`), restart it if that hangs too (`systemctl restart docker`), \
                 then run the same command again (finished runs are reused; \
                 `swtbench clean --run-id <id>` removes containers left behind); \
                 SWTBENCH_ENGINE_DEADLINE_SECS raises the deadline of engine calls on a slow engine"
                    .to_string(),
            ),
            BackendError::RequestTimeout { .. } => Some(
                "the engine answers but this request took too long: it may be overloaded \
                 (lower --max-workers), or raise SWTBENCH_ENGINE_DEADLINE_SECS"
                    .to_string(),
            ),
            BackendError::BuildTimeout { .. } => {
                Some("raise the build timeout, or pre-build the image".to_string())
            }
            _ => None,
        }
    }

    /// A failure that the same request may not meet again in a moment: the engine answered 5xx
    /// (500, 502, 503, 504) or the connection broke. Not a refusal (4xx), a hang, or a stop.
    pub fn is_transient(&self) -> bool {
        let BackendError::Engine { message, .. } = self else {
            return false;
        };
        let m = message.to_ascii_lowercase();
        ["(http 500)", "(http 502)", "(http 503)", "(http 504)"]
            .iter()
            .any(|code| m.ends_with(code))
            || m.contains("connection reset")
            || m.contains("broken pipe")
            || m.contains("connection closed before message completed")
    }

    /// Whether the engine was found lost (it did not answer a liveness probe): the evaluation
    /// cannot go on, as with an unreachable engine.
    pub fn is_engine_lost(&self) -> bool {
        matches!(self, BackendError::EngineHung { .. })
    }

    pub(crate) fn io(context: impl Into<String>, err: &std::io::Error) -> Self {
        BackendError::Io {
            context: context.into(),
            message: err.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_failures_are_5xx_and_broken_connections() {
        let engine = |m: &str| BackendError::Engine {
            operation: "creating a container".into(),
            message: m.into(),
        };
        assert!(engine("server error (HTTP 500)").is_transient());
        assert!(engine("service unavailable (HTTP 503)").is_transient());
        assert!(engine("error trying to connect: connection reset by peer").is_transient());
        assert!(!engine("conflict (HTTP 409)").is_transient());
        assert!(!engine("no such image (HTTP 404)").is_transient());
        assert!(!BackendError::ImageNotFound("x".into()).is_transient());
    }
}
