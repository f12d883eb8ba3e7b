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
    /// The user stopped the command (Ctrl-C, SIGTERM); what it made is cleaned up.
    Interrupted,
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

    pub fn interrupted(error: impl Into<anyhow::Error>) -> Self {
        Error {
            fault: Fault::Interrupted,
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

/// The failed items of a command that goes on after a failure (`images`, `clean`), and the first
/// failure that says the engine is gone ([`engine_gone`]): the command then ends as an
/// environment failure, after its summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failures {
    pub count: usize,
    /// Why the engine is gone, when a failure said so.
    pub engine_gone: Option<String>,
}

impl Failures {
    /// One more failed item; `engine` is the engine's error when it was one.
    pub fn record(&mut self, engine: Option<&swtbench_backend::BackendError>) {
        self.count += 1;
        if let Some(e) = engine.filter(|e| engine_gone(e)) {
            self.engine_gone.get_or_insert_with(|| e.to_string());
        }
    }

    /// The error the command ends with when the engine went away.
    pub fn engine_error(&self) -> Option<Error> {
        self.engine_gone.as_ref().map(|why| {
            Error::environment(anyhow::anyhow!("the container engine went away: {why}"))
                .with_hint("check the engine (docker info) and run the same command again")
        })
    }
}

/// Any `anyhow` error escaping an operation is an input error unless said otherwise.
impl From<anyhow::Error> for Error {
    fn from(error: anyhow::Error) -> Self {
        Error::input(error)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
