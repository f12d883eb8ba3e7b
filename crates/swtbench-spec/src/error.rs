//! Why a table cannot be loaded or an instance cannot be rendered.

/// Why a caller-supplied reader (a [`crate::FileSource`], a table's `base_dockerfile` reader)
/// could not answer. The reader's own error type is kept (an I/O error, a git or HTTP failure);
/// this crate only reports it, in [`SpecError::Fetch`] or [`SpecError::TableInvalid`].
pub type ReadError = Box<dyn std::error::Error + Send + Sync>;

/// Everything that can go wrong in this crate. Messages name the repository, version, commit or
/// table file involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("{origin}: not a valid spec table: {message}")]
    TableSyntax { origin: String, message: String },
    #[error("{origin}: {message}")]
    TableInvalid { origin: String, message: String },
    #[error("repository {repo} is not in the spec table (known: {})", .known.join(", "))]
    UnknownRepo { repo: String, known: Vec<String> },
    #[error(
        "version {version:?} of {repo} is not in the spec table (known versions: {})",
        .known.join(", ")
    )]
    UnknownVersion {
        repo: String,
        version: String,
        known: Vec<String>,
    },
    #[error("the spec table has no test command for {repo} {version}")]
    NoTestCommand { repo: String, version: String },
    #[error("the spec table lists no {what} paths for {repo}")]
    NoFilePaths { what: &'static str, repo: String },
    #[error("no {what} found for {repo} at commit {commit} (tried: {})", .tried.join(", "))]
    FileNotFound {
        what: &'static str,
        repo: String,
        commit: String,
        tried: Vec<String>,
    },
    #[error("cannot read {path} of {repo} at commit {commit}: {message}")]
    Fetch {
        repo: String,
        commit: String,
        path: String,
        message: String,
    },
    #[error("{repo} {version}: {message}")]
    Unsupported {
        repo: String,
        version: String,
        message: String,
    },
    #[error("{instance}: {message}")]
    EnvLock { instance: String, message: String },
    #[error("reproduction-script mode needs the script name (--reproduction-script-name)")]
    MissingScriptName,
}
