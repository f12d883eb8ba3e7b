//! Running our custom-format script under a Python interpreter on the host.
//!
//! [`HostPython`] starts the interpreter as a child process; it is meant for tests and for
//! debugging with inputs one trusts (the runner runs the script inside the instance container).
//! The interface it implements is pure and lives in `swtbench_patch::python` (re-exported here).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use swtbench_patch::python::{PythonError, PythonOutput, PythonRunner, CUSTOM_PATCH_SCRIPT};

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

    /// The pyenv root: `$PYENV_ROOT`, else `~/.pyenv` (`var` looks a variable up; the caller
    /// reads the environment).
    pub fn pyenv_root(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
        var("PYENV_ROOT")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| Path::new(&h).join(".pyenv")))
    }

    /// The interpreter of a pyenv version (`<root>/versions/<version>/bin/python`), if it is
    /// installed under the pyenv root `root` ([`HostPython::pyenv_root`]).
    pub fn pyenv(root: &Path, version: &str) -> Option<Self> {
        let program = root
            .join("versions")
            .join(version)
            .join("bin")
            .join("python");
        program.is_file().then(|| HostPython::new(program))
    }

    /// Every version installed under the pyenv root `root` whose name starts with `prefix`
    /// (e.g. `"3.8"`), sorted.
    pub fn pyenv_versions(root: &Path, prefix: &str) -> Vec<(String, HostPython)> {
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
