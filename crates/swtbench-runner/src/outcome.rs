//! Why an instance, an image or the whole evaluation did not succeed: the typed causes carried by
//! the outcomes of [`crate::events`] (next to [`swtbench_plan::plan::SkipCause`], why an instance is
//! skipped, and [`crate::outcome::ExecError`], why a run failed).
//!
//! Each cause renders (its [`std::fmt::Display`]) the one text that every consumer shows: the
//! progress display, the `reason` fields of the event stream and of `swtbench_instance.json`, and
//! the `error_reasons`/`skip_reasons` of the run report. Those texts are part of the output
//! formats, so a variant's text must not change. Where the text tells what to do, `hint()`
//! returns that part on its own. Causes are plain data (`Clone`, `Eq`): errors of other crates
//! that are not are kept as their text.
//!
//! Nothing here decides anything or does I/O.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use swtbench_backend::BackendError;
use swtbench_core::RunKind;
use swtbench_grade::report::GradeError;
use swtbench_plan::limits::LimitHit;
use swtbench_plan::prebuilt::LayoutProblem;
use swtbench_spec::SpecError;

use swtbench_plan::settings::ImageKind;

/// Serializes a cause as its text (the `reason` fields of the JSON formats are text).
pub(crate) fn as_text<T: fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// Why an instance ended with an error (not the prediction's fault: a rerun retries it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstanceError {
    /// The task evaluating it panicked (a bug); the text is the panic's.
    #[error("internal error while evaluating: {0}")]
    Internal(String),
    /// The plan names an instance the evaluation was not given (a caller's bug).
    #[error("instance missing from the evaluation")]
    NotInEvaluation,
    /// The plan evaluates it without a rendered spec (a caller's bug).
    #[error("no rendered spec")]
    NoSpec,
    /// `--skip-eval` and some of its outputs are not on disk.
    #[error("outputs are missing and --skip-eval runs nothing")]
    OutputsMissing,
    /// Its images could not be made available.
    #[error("{0}")]
    Images(ImageError),
    /// The patch extraction could not run.
    #[error("patch extraction could not run: {0}")]
    Extraction(ExtractError),
    /// The eval scripts of the extracted patch could not be rendered.
    #[error("{0}")]
    Runs(SpecError),
    /// One of its six runs failed (the instance stops there).
    #[error("{run}: {error}")]
    Run { run: RunKind, error: ExecError },
    /// Its outputs are there but could not be graded.
    #[error("grading failed: {0}")]
    Grading(GradingError),
}

impl InstanceError {
    /// The cause as one stable name, for machines (`error_causes` of the run report,
    /// `error_cause` of `swtbench_instance.json`): what failed, not its text.
    pub fn cause(&self) -> &'static str {
        match self {
            InstanceError::Internal(_) | InstanceError::NotInEvaluation | InstanceError::NoSpec => {
                "internal"
            }
            InstanceError::OutputsMissing => "outputs_missing",
            InstanceError::Images(e) => e.cause(),
            InstanceError::Extraction(_) => "extraction",
            InstanceError::Runs(_) => "spec",
            InstanceError::Run { error, .. } => error.cause(),
            InstanceError::Grading(_) => "grading",
        }
    }

    /// Whether the machine is at fault rather than the instance or swtbench: an image that could
    /// not be built because the engine failed or the build could not reach the network (a
    /// registry, a package index), the engine's answer about an image, or an engine that went
    /// away during a run. A rerun on a working machine succeeds.
    pub fn is_environment(&self) -> bool {
        match self {
            InstanceError::Images(ImageError::Build(b)) => matches!(
                b.cause(),
                "image_build_network" | "image_build_engine" | "engine_lost"
            ),
            InstanceError::Images(ImageError::Engine(_)) => true,
            InstanceError::Run {
                error: ExecError::Engine(e),
                ..
            } => engine_cause(e) == "engine_lost",
            _ => false,
        }
    }

    /// What to do about it, when there is something.
    pub fn hint(&self) -> Option<String> {
        match self {
            InstanceError::Images(e) => e.hint(),
            InstanceError::Run { error, .. } => error.hint(),
            InstanceError::Grading(GradingError::Output(e)) => e.hint().map(str::to_string),
            _ => None,
        }
    }
}

/// Why an instance's images (base → env → instance) could not be made available.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// The plan has no image chain for an instance it evaluates (a bug).
    #[error("no images planned")]
    NotPlanned,
    /// Asking the engine for the local base image failed.
    #[error("{0}")]
    Engine(BackendError),
    /// The spec's local base image went missing since the plan was made.
    #[error("{}", swtbench_plan::plan::base_image_missing_text(tag))]
    BaseImageMissing { tag: String },
    /// The build contexts could not be made (the repository mirror could not be read).
    #[error("{0}")]
    Recipe(RecipeError),
    /// One of the three images failed to build.
    #[error("{0}")]
    Build(BuildFailure),
    /// The spec builds no base image and names no local one (a bug).
    #[error("the base image has neither a recipe nor an image")]
    NoBaseSource,
    /// The prebuilt image (`--instance-image`) could not be pulled, changed, or is not in
    /// SWE-bench's layout.
    #[error("{0}")]
    Prebuilt(PrebuiltError),
}

impl ImageError {
    /// See [`InstanceError::cause`].
    pub fn cause(&self) -> &'static str {
        match self {
            ImageError::Build(b) => b.cause(),
            ImageError::Engine(e) => engine_cause(e),
            ImageError::BaseImageMissing { .. } => "base_image_missing",
            ImageError::Recipe(_) => "image_recipe",
            ImageError::NotPlanned | ImageError::NoBaseSource => "internal",
            ImageError::Prebuilt(p) => p.cause(),
        }
    }

    /// What to do about it, when there is something.
    pub fn hint(&self) -> Option<String> {
        match self {
            ImageError::BaseImageMissing { .. } => {
                Some(swtbench_plan::plan::BASE_IMAGE_HINT.to_string())
            }
            ImageError::Build(b) => Some(b.hint()),
            ImageError::Engine(e) => e.hint(),
            ImageError::Prebuilt(p) => p.hint(),
            _ => None,
        }
    }
}

/// An image that could not be built: the cause of [`crate::events::ImageOutcome::Failed`] and of
/// the error of every instance that needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildFailure {
    pub tag: String,
    pub kind: ImageKind,
    pub error: BackendError,
    /// The last informative line of the build's log, when the build ran and printed one.
    pub log_line: Option<String>,
    /// The network source the build could not reach, when the log or the engine says so.
    pub unreachable: Option<Unreachable>,
    /// The build log to read.
    pub log: PathBuf,
}

/// What a build needed from the network and could not reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A conda channel (repo.anaconda.com, conda-forge).
    Conda,
    /// A Python package index (PyPI).
    Pip,
    /// Debian/Ubuntu package mirrors.
    Apt,
    /// A container registry the build pulls its `FROM` image from (Docker Hub).
    Registry,
    /// A download of some other kind (curl/wget of an installer, git).
    Download,
}

impl SourceKind {
    fn what(self) -> &'static str {
        match self {
            SourceKind::Conda => "a conda channel",
            SourceKind::Pip => "the Python package index",
            SourceKind::Apt => "the Debian/Ubuntu package mirror",
            SourceKind::Registry => "the container registry",
            SourceKind::Download => "a download",
        }
    }
}

/// A network source a build could not reach: which kind, the host when the log names one, and the
/// line that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable {
    pub kind: SourceKind,
    pub host: Option<String>,
    pub line: String,
}

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", self.kind.what())?;
        if let Some(h) = &self.host {
            write!(f, "({h}) ")?;
        }
        write!(f, "could not be reached from the build")
    }
}

/// Recognises, in a failed build's log lines and the engine's message, that the build could not
/// reach a package channel, a package index, a mirror or a registry. Pure; the phrases are those of
/// conda, pip, apt, curl/wget and the engine's pull errors.
pub fn unreachable_source(log_tail: &[String], message: &str) -> Option<Unreachable> {
    const NETWORK: [&str; 16] = [
        "temporary failure in name resolution",
        "temporary failure resolving",
        "could not resolve host",
        "name or service not known",
        "failed to establish a new connection",
        "network is unreachable",
        "connection refused",
        "connection timed out",
        "connection failed",
        "could not connect to",
        "failed to connect to",
        "no route to host",
        "proxyerror",
        "sslerror",
        "certificate verify failed",
        "i/o timeout",
    ];
    let classify = |line: &str| -> Option<SourceKind> {
        let l = line.to_ascii_lowercase();
        // A pull that met the network; not "pull access denied" or "toomanyrequests" (a wrong
        // name and a rate limit are not a source the build could not reach).
        let pull = ((l.contains("failed to resolve source metadata")
            || l.contains("error pulling image")
            || l.contains("registry"))
            && (NETWORK.iter().any(|n| l.contains(n)) || l.contains("no such host")))
            || (l.contains("docker.io") && (l.contains("dial tcp") || l.contains("lookup")));
        if pull {
            return Some(SourceKind::Registry);
        }
        if l.contains("condahttperror") || l.contains("condasslerror") {
            return Some(SourceKind::Conda);
        }
        if !NETWORK.iter().any(|n| l.contains(n)) && !l.contains("failed to fetch http") {
            return None;
        }
        Some(if l.contains("anaconda") || l.contains("conda") {
            SourceKind::Conda
        } else if l.contains("pypi") || l.contains("pythonhosted") || l.contains("pip") {
            SourceKind::Pip
        } else if l.contains("failed to fetch")
            || l.contains("temporary failure resolving")
            || l.contains("debian")
            || l.contains("ubuntu")
        {
            SourceKind::Apt
        } else {
            SourceKind::Download
        })
    };
    std::iter::once(message)
        .chain(log_tail.iter().rev().map(String::as_str))
        .find_map(|line| {
            classify(line).map(|kind| Unreachable {
                kind,
                host: host_in(line),
                line: line.trim().to_string(),
            })
        })
}

/// The host a network error line names: `host='h'` (urllib3), `Could not resolve host: h`
/// (curl), `resolving 'h'` (apt), or the host of the first URL.
fn host_in(line: &str) -> Option<String> {
    let clean = |h: &str| {
        let h = h.trim_matches(|c: char| "'\"<>()[],;: ".contains(c));
        (!h.is_empty() && h.contains('.')).then(|| h.to_string())
    };
    for (marker, end) in [
        ("host='", '\''),
        ("Could not resolve host: ", ' '),
        ("Failed to connect to ", ' '),
        ("resolving '", '\''),
        ("lookup ", ' '),
    ] {
        if let Some(at) = line.find(marker) {
            let rest = &line[at + marker.len()..];
            if let Some(h) = clean(rest.split(end).next().unwrap_or(rest)) {
                return Some(h);
            }
        }
    }
    let at = line.find("://")?;
    let rest = &line[at + 3..];
    let host = rest.split(['/', ':', ' ', '>', '\'', '"']).next()?;
    clean(host)
}

/// What to do when a build cannot reach the network it needs.
pub const UNREACHABLE_HINT: &str = "image builds download packages (conda channels, PyPI, Debian) \
    and their base images: give the engine's builds access to them; behind a proxy set \
    HTTPS_PROXY/HTTP_PROXY and SSL_CERT_FILE (both are passed on to builds); without conda access, \
    spec entries with `provider = \"venv\"` on a local base image build without conda \
    (docs/spec-table.md)";

impl BuildFailure {
    /// The failure of building `tag`, whose build log is under `build_logs`.
    pub fn new(tag: &str, kind: ImageKind, error: BackendError, build_logs: &Path) -> BuildFailure {
        let (log_line, unreachable) = match &error {
            BackendError::BuildFailed {
                log_tail, message, ..
            } => (
                log_tail
                    .iter()
                    .rev()
                    .map(|l| l.trim())
                    .find(|l| informative_log_line(l))
                    .map(str::to_string),
                unreachable_source(log_tail, message),
            ),
            _ => (None, None),
        };
        let log = swtbench_plan::settings::build_log_dir(build_logs, kind, tag)
            .join(swtbench_backend::builder::BUILD_LOG);
        BuildFailure {
            tag: tag.to_string(),
            kind,
            error,
            log_line,
            unreachable,
            log,
        }
    }

    /// Why the build failed: the network, the engine, the build timeout, or a step of the recipe
    /// (a package that does not install, a script that fails).
    pub fn cause(&self) -> &'static str {
        match &self.error {
            _ if self.unreachable.is_some() => "image_build_network",
            BackendError::BuildTimeout { .. } => "image_build_timeout",
            BackendError::BuildFailed { .. } | BackendError::ImportFailed { .. } => {
                "image_build_step"
            }
            e => match engine_cause(e) {
                "engine_lost" => "engine_lost",
                _ => "image_build_engine",
            },
        }
    }

    /// What failed in one short sentence, without the log line and the hint: the build's source
    /// that could not be reached, else the engine's error.
    pub fn summary(&self) -> String {
        format!(
            "image {} could not be built: {}",
            self.tag,
            self.short_cause()
        )
    }

    /// The cause of [`BuildFailure::summary`] alone: the source the build could not reach, else
    /// the engine's error.
    pub fn short_cause(&self) -> String {
        match &self.unreachable {
            Some(u) => u.to_string(),
            None => self.error.to_string(),
        }
    }

    /// Where to look (part of the text), and what to do when the network was the problem.
    pub fn hint(&self) -> String {
        match &self.unreachable {
            Some(_) => format!("see {}; {UNREACHABLE_HINT}", self.log.display()),
            None => format!("see {}", self.log.display()),
        }
    }
}

/// Whether a (trimmed) build log line says something about the failure, unlike the engine's
/// boilerplate around it.
fn informative_log_line(line: &str) -> bool {
    !line.is_empty()
        && !line.starts_with("Removing intermediate container")
        && !line.starts_with("ERROR: The command")
        && !line.starts_with("--->")
}

impl fmt::Display for BuildFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(u) = &self.unreachable {
            // What happened in one line, instead of the engine's exit status and a log line.
            return write!(
                f,
                "image {} could not be built: {u} ({}; {}); {}",
                self.tag,
                u.line,
                self.error,
                self.hint()
            );
        }
        write!(f, "image {} could not be built: {}", self.tag, self.error)?;
        if let Some(line) = &self.log_line {
            write!(f, " (build log: {line})")?;
        }
        write!(f, "; {}", self.hint())
    }
}

/// Why the whole evaluation stopped early on its own: a failure of the machine, not of an
/// instance (running instances are stopped as on an interrupt and the partial reports written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AbortReason {
    /// The disk is full or read-only: every later run would fail the same way.
    #[error("{0}")]
    Storage(ExecError),
    /// The container engine did not answer after an engine error, retried for a few seconds.
    #[error("the container engine stopped answering: {0}")]
    EngineGone(BackendError),
}

/// Why a run could not be executed (or its output not copied): the cause of a failed run
/// ([`crate::events::RunOutcome::Failed`]). Plain data, so that one failure can be handed to every
/// run waiting for the same output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// The engine refused or failed a request (create, start, copy, exec), or the container
    /// stopped under the script.
    #[error("{0}")]
    Engine(BackendError),
    #[error("writing {path}: {message}")]
    Io {
        path: String,
        message: String,
        kind: std::io::ErrorKind,
    },
    /// An output to copy is not the one expected.
    #[error("{0}")]
    Output(OutputError),
    /// A gold or base run (the benchmark's own tests) reached a resource limit: its output says
    /// more about the limit than about the tests, so it is not graded.
    #[error("reached {hit}: {amount}")]
    Limit { hit: LimitHit, amount: String },
    /// The run's eval script could not be rendered again as it was planned (a bug: the plan
    /// rendered it from the same inputs).
    #[error("rendering the eval script of {run}: {message}")]
    Render { run: String, message: String },
}

impl ExecError {
    /// A failure of the machine rather than of this run (the disk is full or read-only): every
    /// later run would fail the same way.
    pub fn is_storage_failure(&self) -> bool {
        matches!(
            self,
            ExecError::Io {
                kind: std::io::ErrorKind::StorageFull
                    | std::io::ErrorKind::ReadOnlyFilesystem
                    | std::io::ErrorKind::QuotaExceeded,
                ..
            }
        )
    }

    pub fn is_engine_failure(&self) -> bool {
        matches!(self, ExecError::Engine(_))
    }

    /// See [`crate::outcome::InstanceError::cause`].
    pub fn cause(&self) -> &'static str {
        match self {
            ExecError::Engine(e) => engine_cause(e),
            ExecError::Io { .. } if self.is_storage_failure() => "storage",
            ExecError::Io { .. } => "io",
            ExecError::Output(_) => "output_replaced",
            ExecError::Render { .. } => "internal",
            ExecError::Limit { hit, .. } => match hit {
                LimitHit::Memory => "limit_memory",
                LimitHit::Pids => "limit_pids",
                LimitHit::Disk => "limit_disk",
            },
        }
    }

    /// What to do about it, when there is something.
    pub fn hint(&self) -> Option<String> {
        match self {
            ExecError::Engine(e) => e.hint(),
            ExecError::Output(e) => e.hint().map(str::to_string),
            ExecError::Limit { hit, .. } => Some(format!(
                "the gold and base runs are the benchmark's own tests: give them more ({} …) or \
                 run with --no-limits; the run is retried next time",
                hit.flag()
            )),
            ExecError::Io { .. } | ExecError::Render { .. } => None,
        }
    }
}

/// The cause name of an engine error: lost (unreachable or hung), a container that stopped or
/// vanished under a run, or any other engine failure.
pub fn engine_cause(e: &BackendError) -> &'static str {
    match e {
        BackendError::Unreachable { .. } | BackendError::EngineHung { .. } => "engine_lost",
        BackendError::ContainerStopped { reason, .. } if reason.contains("out of memory") => {
            "limit_memory"
        }
        BackendError::ContainerStopped { .. } | BackendError::ContainerNotFound(_) => {
            "container_vanished"
        }
        _ => "engine",
    }
}

/// Why the extraction could not run (not the prediction's fault; a rerun retries). Errors of
/// other crates that are not plain data are kept as their text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    /// The repository mirror could not be opened at the base commit.
    #[error("{0}")]
    Mirror(String),
    /// Creating or starting the container for the files or the custom script failed.
    #[error("{0}")]
    Container(BackendError),
    /// Neither a mirror nor a container is there to read the repository's files from.
    #[error("no source of repository files")]
    NoSource,
    /// Reading or writing the extraction cache in the report directory failed.
    #[error("{0}")]
    Cache(String),
    #[error(
        "the patch extraction did not finish within {} s (--timeout); it is tried again on the \
         next run",
        after.as_secs()
    )]
    TimedOut { after: Duration },
    /// The blocking task that ran the extraction panicked or was cancelled.
    #[error("the extraction task failed: {0}")]
    Task(String),
    /// The extraction failed for reasons that are not the prediction's (files unreadable, the
    /// custom script could not start): its summary.
    #[error("{0}")]
    Incomplete(String),
}

/// Why recipes could not be made. Plain data (the I/O error as its text), so that it can be the
/// cause of every instance of the image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecipeError {
    #[error("reading the repository mirror {}: {message}", path.display())]
    Mirror { path: PathBuf, message: String },
    #[error("reading {}: {message}", path.display())]
    Files { path: PathBuf, message: String },
    #[error("building the context of {tag}: {message}")]
    Context { tag: String, message: String },
}

/// Why an instance could not be graded from its outputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GradingError {
    /// The plan has no such run (a bug: every evaluated instance has six).
    #[error("{0} was not planned")]
    NotPlanned(RunKind),
    /// An output is missing, unreadable, or no longer the one written with its key.
    #[error("{0}")]
    Output(#[from] OutputError),
    #[error("{0}")]
    Grade(#[from] GradeError),
}

/// Why an output on disk cannot be used as the result of a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    #[error("reading {path}: {message}")]
    Io { path: String, message: String },
    #[error(
        "the output in {dir} now belongs to other inputs (key {found}, expected {expected}): \
         another swtbench process with another mode, coverage setting or spec wrote the same \
         shared directory meanwhile; {}",
        REPLACED_HINT
    )]
    Replaced {
        dir: String,
        expected: String,
        found: String,
    },
    #[error(
        "the output in {dir} does not match its key file (two processes wrote it at once, or it \
         was edited); it is run again next time"
    )]
    Inconsistent { dir: String },
}

/// What to do when two processes share output directories (part of
/// [`OutputError::Replaced`]'s text).
pub const REPLACED_HINT: &str = "evaluate one at a time, or in separate --output-dir";

impl OutputError {
    /// What to do about it, when the text says (it is part of the text).
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            OutputError::Replaced { .. } => Some(REPLACED_HINT),
            _ => None,
        }
    }
}

/// Why a prebuilt image cannot serve an instance (an instance error, nothing is graded).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrebuiltError {
    #[error("prebuilt image {reference} could not be pulled: {message}")]
    Pull { reference: String, message: String },
    #[error(
        "prebuilt image {reference} changed since the plan: planned digest {planned}, now {found}"
    )]
    Changed {
        reference: String,
        planned: String,
        found: String,
    },
    #[error("prebuilt image {reference} is not in SWE-bench's layout: {problem}")]
    Layout {
        reference: String,
        problem: LayoutProblem,
    },
    #[error("prebuilt image {reference}: {message}")]
    Engine { reference: String, message: String },
}

impl PrebuiltError {
    pub fn cause(&self) -> &'static str {
        match self {
            PrebuiltError::Pull { .. } => "prebuilt_pull",
            PrebuiltError::Changed { .. } => "prebuilt_changed",
            PrebuiltError::Layout { .. } => "prebuilt_layout",
            PrebuiltError::Engine { .. } => "engine",
        }
    }

    pub fn hint(&self) -> Option<String> {
        Some(match self {
            PrebuiltError::Pull { .. } => {
                "check the name (--instance-image) and `docker login` for its registry".into()
            }
            PrebuiltError::Changed { .. } => "run again: the plan will use the new image".into(),
            PrebuiltError::Layout { .. } => {
                "the image must hold conda at /opt/miniconda3 with an env `testbed` and the \
                 repository at /testbed at base_commit; build the instance instead (leave out \
                 --instance-image)"
                    .into()
            }
            PrebuiltError::Engine { .. } => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build_failure(log_tail: &[&str]) -> BuildFailure {
        BuildFailure::new(
            "exec.env.x86_64.abc:latest",
            ImageKind::Env,
            BackendError::BuildFailed {
                tag: "exec.env.x86_64.abc:latest".into(),
                message: "exit 1".into(),
                log_tail: log_tail.iter().map(|l| l.to_string()).collect(),
            },
            Path::new("out/image_build_logs"),
        )
    }

    #[test]
    fn build_failures_name_the_last_informative_log_line_and_the_log() {
        let f = build_failure(&[
            "pip install x",
            "  No matching distribution  ",
            "---> abc",
            "",
        ]);
        assert_eq!(
            f.to_string(),
            "image exec.env.x86_64.abc:latest could not be built: building image \
             exec.env.x86_64.abc:latest failed: exit 1 (build log: No matching distribution); \
             see out/image_build_logs/base/exec.env.x86_64.abc__latest/build_image.log"
        );
        assert_eq!(
            f.hint(),
            "see out/image_build_logs/base/exec.env.x86_64.abc__latest/build_image.log"
        );
        let quiet = build_failure(&["Removing intermediate container 1", "ERROR: The command x"]);
        assert_eq!(
            quiet.to_string(),
            "image exec.env.x86_64.abc:latest could not be built: building image \
             exec.env.x86_64.abc:latest failed: exit 1; \
             see out/image_build_logs/base/exec.env.x86_64.abc__latest/build_image.log"
        );
    }

    #[test]
    fn instance_errors_render_the_texts_of_the_reports() {
        let stopped = BackendError::ContainerStopped {
            id: "c1".into(),
            reason: "killed".into(),
        };
        let cases: Vec<(InstanceError, &str)> = vec![
            (
                InstanceError::Internal("task 3 panicked with message \"boom\"".into()),
                "internal error while evaluating: task 3 panicked with message \"boom\"",
            ),
            (
                InstanceError::NotInEvaluation,
                "instance missing from the evaluation",
            ),
            (InstanceError::NoSpec, "no rendered spec"),
            (
                InstanceError::OutputsMissing,
                "outputs are missing and --skip-eval runs nothing",
            ),
            (
                InstanceError::Images(ImageError::NotPlanned),
                "no images planned",
            ),
            (
                InstanceError::Images(ImageError::Engine(BackendError::Invalid("x".into()))),
                "invalid request: x",
            ),
            (
                InstanceError::Images(ImageError::BaseImageMissing {
                    tag: "acme-base:1".into(),
                }),
                "base image acme-base:1 does not exist (make it first: `swtbench images base IMAGE`, or `swtbench images python VERSION` for a Python image)",
            ),
            (
                InstanceError::Images(ImageError::Recipe(RecipeError::Mirror {
                    path: "/m/a.git".into(),
                    message: "denied".into(),
                })),
                "reading the repository mirror /m/a.git: denied",
            ),
            (
                InstanceError::Images(ImageError::NoBaseSource),
                "the base image has neither a recipe nor an image",
            ),
            (
                InstanceError::Extraction(ExtractError::NoSource),
                "patch extraction could not run: no source of repository files",
            ),
            (
                InstanceError::Extraction(ExtractError::TimedOut {
                    after: std::time::Duration::from_secs(2),
                }),
                "patch extraction could not run: the patch extraction did not finish within 2 s \
                 (--timeout); it is tried again on the next run",
            ),
            (
                InstanceError::Extraction(ExtractError::Task("cancelled".into())),
                "patch extraction could not run: the extraction task failed: cancelled",
            ),
            (
                InstanceError::Extraction(ExtractError::Container(stopped.clone())),
                "patch extraction could not run: container c1 stopped while a command ran in it \
                 (killed); its output is incomplete",
            ),
            (
                InstanceError::Runs(SpecError::MissingScriptName),
                "reproduction-script mode needs the script name (--reproduction-script-name)",
            ),
            (
                InstanceError::Run {
                    run: RunKind::PredPost,
                    error: ExecError::Engine(stopped),
                },
                "pred_post: container c1 stopped while a command ran in it (killed); its output \
                 is incomplete",
            ),
            (
                InstanceError::Grading(GradingError::NotPlanned(RunKind::BasePre)),
                "grading failed: base_pre was not planned",
            ),
            (
                InstanceError::Grading(GradingError::Output(OutputError::Inconsistent {
                    dir: "d".into(),
                })),
                "grading failed: the output in d does not match its key file (two processes \
                 wrote it at once, or it was edited); it is run again next time",
            ),
            (
                InstanceError::Grading(GradingError::Grade(
                    swtbench_grade::report::GradeError::GoldPatch {
                        instance_id: "a__b-1".into(),
                        detail: "no hunk".into(),
                    },
                )),
                "grading failed: instance a__b-1: the gold code patch is not a valid diff: no hunk",
            ),
            // The text of other crates' errors, as it was.
            (
                InstanceError::Extraction(ExtractError::Mirror("git mirror /m: gone".into())),
                "patch extraction could not run: git mirror /m: gone",
            ),
            (
                InstanceError::Extraction(ExtractError::Cache("logs/x: denied".into())),
                "patch extraction could not run: logs/x: denied",
            ),
            (
                InstanceError::Extraction(ExtractError::Incomplete("fuzzy: unreadable".into())),
                "patch extraction could not run: fuzzy: unreadable",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text, "{error:?}");
        }
    }

    #[test]
    fn unreachable_sources_are_named_in_one_line() {
        let cases: [(&[&str], &str, SourceKind, Option<&str>); 6] = [
            (
                &[
                    "Collecting package metadata (current_repodata.json): failed",
                    "",
                    "CondaHTTPError: HTTP 000 CONNECTION FAILED for url <https://repo.anaconda.com/pkgs/main/linux-64/current_repodata.json>",
                    "Elapsed: -",
                    "An HTTP error occurred when trying to retrieve this URL.",
                ],
                "The command '/bin/sh -c /root/setup_env.sh' returned a non-zero code: 1",
                SourceKind::Conda,
                Some("repo.anaconda.com"),
            ),
            (
                &["WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/requests/",
                  "ERROR: Could not find a version that satisfies the requirement requests"],
                "exit 1",
                SourceKind::Pip,
                None,
            ),
            (
                &["Err:1 http://deb.debian.org/debian bookworm InRelease",
                  "  Temporary failure resolving 'deb.debian.org'",
                  "E: Unable to locate package git"],
                "exit 100",
                SourceKind::Apt,
                Some("deb.debian.org"),
            ),
            (
                &[],
                "failed to resolve source metadata for docker.io/library/ubuntu:22.04: failed to do request: Head \"https://registry-1.docker.io/v2/library/ubuntu/manifests/22.04\": dial tcp: lookup registry-1.docker.io on 10.0.0.1:53: no such host",
                SourceKind::Registry,
                Some("registry-1.docker.io"),
            ),
            (
                &["curl: (6) Could not resolve host: repo.anaconda.com"],
                "exit 6",
                SourceKind::Conda,
                Some("repo.anaconda.com"),
            ),
            (
                &["curl: (7) Failed to connect to example.org port 443: Connection refused"],
                "exit 7",
                SourceKind::Download,
                Some("example.org"),
            ),
        ];
        for (tail, message, kind, host) in cases {
            let tail: Vec<String> = tail.iter().map(|l| l.to_string()).collect();
            let u = unreachable_source(&tail, message).unwrap_or_else(|| panic!("{tail:?}"));
            assert_eq!(
                (u.kind, u.host.as_deref()),
                (kind, host),
                "{tail:?} {message}"
            );
        }
        // Failures that are not the network stay as they were.
        let tail = vec!["ERROR: No matching distribution found for nosuchpkg==9".to_string()];
        assert_eq!(unreachable_source(&tail, "exit 1"), None);
        for message in [
            "pull access denied for nosuch/image, repository does not exist",
            "toomanyrequests: You have reached your pull rate limit",
        ] {
            assert_eq!(unreachable_source(&[], message), None, "{message}");
        }
        let f = build_failure(&[
            "CondaHTTPError: HTTP 000 CONNECTION FAILED for url <https://repo.anaconda.com/pkgs/main/noarch/repodata.json>",
            "An HTTP error occurred when trying to retrieve this URL.",
        ]);
        let text = f.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert!(
            text.starts_with(
                "image exec.env.x86_64.abc:latest could not be built: a conda channel \
                 (repo.anaconda.com) could not be reached from the build (CondaHTTPError: HTTP 000"
            ),
            "{text}"
        );
        assert!(
            text.ends_with(&f.hint()) && f.hint().contains("provider = \"venv\""),
            "{text}"
        );
    }

    #[test]
    fn hints_are_the_part_of_the_text_that_says_what_to_do() {
        let missing = InstanceError::Images(ImageError::BaseImageMissing { tag: "b:1".into() });
        let hint = missing.hint().expect("hint");
        assert!(missing.to_string().contains(&hint));
        let build = InstanceError::Images(ImageError::Build(build_failure(&[])));
        let hint = build.hint().expect("hint");
        assert!(build.to_string().ends_with(&hint));
        let replaced = InstanceError::Run {
            run: RunKind::GoldPre,
            error: ExecError::Output(OutputError::Replaced {
                dir: "d".into(),
                expected: "k1".into(),
                found: "k2".into(),
            }),
        };
        let hint = replaced.hint().expect("hint");
        assert!(replaced.to_string().ends_with(&hint), "{replaced}");
        assert_eq!(InstanceError::NoSpec.hint(), None);
    }

    #[test]
    fn abort_reasons_render_as_before() {
        let full = AbortReason::Storage(ExecError::Io {
            path: "logs/x/test_output.txt".into(),
            message: "No space left on device (os error 28)".into(),
            kind: std::io::ErrorKind::StorageFull,
        });
        assert_eq!(
            full.to_string(),
            "writing logs/x/test_output.txt: No space left on device (os error 28)"
        );
        let gone = AbortReason::EngineGone(BackendError::Unreachable {
            endpoint: "unix:///var/run/docker.sock".into(),
            reason: "connection refused".into(),
        });
        assert_eq!(
            gone.to_string(),
            "the container engine stopped answering: cannot reach the container engine at \
             unix:///var/run/docker.sock: connection refused"
        );
    }
}
