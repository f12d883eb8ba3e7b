//! The interface to a Python interpreter that runs our custom-format script.
//!
//! The custom format is applied with Python's own `ast` module so that the grammar matches the
//! instance's Python. The model's code is only *parsed*, never executed; still, the runner runs
//! the script inside the instance container. This module only says what a [`PythonRunner`] is;
//! starting an interpreter is an adapter's job (`swtbench_extract::HostPython` on the host, the
//! runner's in-container one), never this crate's.

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
