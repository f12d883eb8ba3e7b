//! Running our custom-format script under a Python interpreter.
//!
//! The custom format is applied with Python's own `ast` module so that the grammar matches the
//! instance's Python. The model's code is only *parsed*, never executed; still, the runner runs
//! the script inside the instance container. [`HostPython`] runs it on the host and is meant for
//! tests and for debugging with inputs one trusts.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The script that applies custom-format blocks (stdlib only, Python 3.6+).
///
/// Protocol: a JSON request on standard input (or in the file named by the first argument), a
/// JSON response on standard output (or in the file named by the second argument); see
/// `assets/extract/custom_patch.py` and `docs/extraction.md`.
pub const CUSTOM_PATCH_SCRIPT: &str = include_str!("../../../assets/extract/custom_patch.py");

/// What a finished interpreter run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonOutput {
    /// Exit code; `None` when killed by a signal.
    pub status: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Why the interpreter could not be run at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PythonError(pub String);

/// Runs a Python script with some input.
pub trait PythonRunner {
    /// Runs `script` (Python source text) with `input` as its standard input and returns what it
    /// printed. An implementation may instead copy `input` to a file and pass its path as the
    /// script's first argument, and read the response from the file named by the second argument
    /// (the script supports both).
    fn run(&self, script: &str, input: &[u8]) -> Result<PythonOutput, PythonError>;
}

impl<T: PythonRunner + ?Sized> PythonRunner for &T {
    fn run(&self, script: &str, input: &[u8]) -> Result<PythonOutput, PythonError> {
        (**self).run(script, input)
    }
}

/// A Python interpreter on the host.
#[derive(Debug, Clone)]
pub struct HostPython {
    program: PathBuf,
}

impl HostPython {
    pub fn new(program: impl Into<PathBuf>) -> Self {
        HostPython {
            program: program.into(),
        }
    }

    /// `python3` from `PATH`.
    pub fn python3() -> Self {
        HostPython::new("python3")
    }

    /// The interpreter of a pyenv version (`<pyenv root>/versions/<version>/bin/python`), if it
    /// is installed. The root is `$PYENV_ROOT` or `~/.pyenv`.
    pub fn pyenv(version: &str) -> Option<Self> {
        let root = std::env::var_os("PYENV_ROOT")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".pyenv")))?;
        let program = root
            .join("versions")
            .join(version)
            .join("bin")
            .join("python");
        program.is_file().then(|| HostPython::new(program))
    }

    /// Every installed pyenv version whose name starts with `prefix` (e.g. `"3.8"`), sorted.
    pub fn pyenv_versions(prefix: &str) -> Vec<(String, HostPython)> {
        let root = std::env::var_os("PYENV_ROOT")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".pyenv")));
        let Some(root) = root else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(root.join("versions")) else {
            return Vec::new();
        };
        let mut out: Vec<(String, HostPython)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let program = e.path().join("bin").join("python");
                (name.starts_with(prefix) && program.is_file())
                    .then(|| (name, HostPython::new(program)))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    pub fn program(&self) -> &Path {
        &self.program
    }
}

impl PythonRunner for HostPython {
    fn run(&self, script: &str, input: &[u8]) -> Result<PythonOutput, PythonError> {
        // -E: ignore PYTHON* variables; -s: no user site directory. Both exist since Python 2.
        let mut child = Command::new(&self.program)
            .args(["-E", "-s", "-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| PythonError(format!("cannot run {}: {e}", self.program.display())))?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| PythonError("no stdin pipe".to_string()))?;
        // Write from a thread: a large request could otherwise fill both pipes and deadlock.
        let input = input.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child
            .wait_with_output()
            .map_err(|e| PythonError(format!("{}: {e}", self.program.display())))?;
        // A script that exits before reading everything breaks the pipe; its output says why.
        let _ = writer.join();
        Ok(PythonOutput {
            status: out.status.code(),
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }
}
