//! The error of the application layer: what failed (the cause chain), whose fault it is (the
//! input or the environment, which the binary maps to its exit codes 2 and 3) and what to do
//! about it (a hint). Library functions return it instead of strings; the binary renders it.

use std::fmt;

/// Whose fault an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Bad usage or unusable input (arguments, dataset, predictions, spec table).
    Input,
    /// The environment is not usable (container engine unreachable, a directory not writable,
    /// network needed but offline).
    Environment,
}

/// An error that ends an application-level operation.
#[derive(Debug)]
pub struct Error {
    pub fault: Fault,
    pub error: anyhow::Error,
    pub hint: Option<String>,
}

impl Error {
    pub fn input(error: impl Into<anyhow::Error>) -> Self {
        Error {
            fault: Fault::Input,
            error: error.into(),
            hint: None,
        }
    }

    pub fn environment(error: impl Into<anyhow::Error>) -> Self {
        Error {
            fault: Fault::Environment,
            error: error.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `a: b: c`, so a warning that prints the error keeps its causes.
        write!(f, "{:#}", self.error)
    }
}

/// A container-engine error is the environment's fault: the engine unreachable, hung, or a call
/// of it that failed.
impl From<swtbench_backend::BackendError> for Error {
    fn from(error: swtbench_backend::BackendError) -> Self {
        Error::environment(error)
    }
}

/// Whether an engine error means the engine is gone (unreachable, or stopped answering), so that
/// what follows would fail the same way: the command ends as an environment failure.
pub fn engine_gone(error: &swtbench_backend::BackendError) -> bool {
    matches!(error, swtbench_backend::BackendError::Unreachable { .. }) || error.is_engine_lost()
}

/// Any `anyhow` error escaping an operation is an input error unless said otherwise.
impl From<anyhow::Error> for Error {
    fn from(error: anyhow::Error) -> Self {
        Error::input(error)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
