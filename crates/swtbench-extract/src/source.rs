//! Where the files at the base commit come from.
//!
//! Extraction only ever *reads* the repository: each format computes new file contents in memory
//! and the result is rendered as a diff. A [`FileSource`] answers "what is in this file at the base
//! commit". Implementations here: [`MemorySource`] (tests, or contents fetched by other means),
//! [`DirSource`] (a checked-out work tree) and [`GitMirrorSource`] (a bare mirror plus a commit).
//! The runner adds one that reads from the instance container.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Why a file could not be read. `path` is repository-relative.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {detail}")]
pub struct SourceError {
    pub path: String,
    pub detail: String,
}

impl SourceError {
    pub fn new(path: &str, detail: impl fmt::Display) -> Self {
        SourceError {
            path: path.to_string(),
            detail: detail.to_string(),
        }
    }
}

/// Read access to the repository at the base commit.
pub trait FileSource {
    /// The content of `path` (repository-relative, `/`-separated, already checked to stay inside
    /// the repository), or `Ok(None)` when no such file exists. Files that are not UTF-8 are an
    /// error: the original reads them as text and fails the same way.
    fn read(&self, path: &str) -> Result<Option<String>, SourceError>;
}

impl<T: FileSource + ?Sized> FileSource for &T {
    fn read(&self, path: &str) -> Result<Option<String>, SourceError> {
        (**self).read(path)
    }
}

fn utf8(path: &str, bytes: Vec<u8>) -> Result<String, SourceError> {
    String::from_utf8(bytes).map_err(|e| {
        SourceError::new(
            path,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Files held in memory.
#[derive(Debug, Clone, Default)]
pub struct MemorySource {
    files: BTreeMap<String, String>,
}

impl MemorySource {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a file.
    pub fn with(mut self, path: &str, content: &str) -> Self {
        self.insert(path, content);
        self
    }

    pub fn insert(&mut self, path: &str, content: &str) {
        self.files.insert(path.to_string(), content.to_string());
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for MemorySource {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        MemorySource {
            files: iter
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }
}

impl FileSource for MemorySource {
    fn read(&self, path: &str) -> Result<Option<String>, SourceError> {
        Ok(self.files.get(path).cloned())
    }
}

/// Files of a checked-out work tree (for example a clone at the base commit). Symbolic links that
/// lead out of the tree are refused.
#[derive(Debug, Clone)]
pub struct DirSource {
    root: PathBuf,
}

impl DirSource {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DirSource { root: root.into() }
    }
}

impl FileSource for DirSource {
    fn read(&self, path: &str) -> Result<Option<String>, SourceError> {
        let full = self.root.join(path);
        let meta = match std::fs::metadata(&full) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(SourceError::new(path, e)),
        };
        if !meta.is_file() {
            return Ok(None);
        }
        let root = self
            .root
            .canonicalize()
            .map_err(|e| SourceError::new(path, format!("{}: {e}", self.root.display())))?;
        let real = full.canonicalize().map_err(|e| SourceError::new(path, e))?;
        if !real.starts_with(&root) {
            return Err(SourceError::new(
                path,
                "is a symbolic link leading out of the repository",
            ));
        }
        let bytes = std::fs::read(&real).map_err(|e| SourceError::new(path, e))?;
        utf8(path, bytes).map(Some)
    }
}

/// Files at one commit of a bare git mirror, read through the host's `git` (object reads only;
/// nothing is checked out).
pub struct GitMirrorSource {
    git_dir: PathBuf,
    commit: String,
    // One `git cat-file --batch` process per source, started on first use.
    batch: Mutex<Option<GitBatch>>,
}

impl fmt::Debug for GitMirrorSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitMirrorSource")
            .field("git_dir", &self.git_dir)
            .field("commit", &self.commit)
            .finish_non_exhaustive()
    }
}

impl GitMirrorSource {
    /// `git_dir` is a bare repository (or a `.git` directory) that contains `commit`.
    pub fn new(git_dir: impl Into<PathBuf>, commit: &str) -> Self {
        GitMirrorSource {
            git_dir: git_dir.into(),
            commit: commit.to_string(),
            batch: Mutex::new(None),
        }
    }

    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    pub fn commit(&self) -> &str {
        &self.commit
    }
}

impl FileSource for GitMirrorSource {
    fn read(&self, path: &str) -> Result<Option<String>, SourceError> {
        let mut guard = self
            .batch
            .lock()
            .map_err(|_| SourceError::new(path, "git reader poisoned by an earlier panic"))?;
        if guard.is_none() {
            let mut batch =
                GitBatch::start(&self.git_dir).map_err(|e| SourceError::new(path, e))?;
            // Without this check an unknown commit would look like a missing file.
            let probe = format!("{}^{{commit}}", self.commit);
            match batch.read_object(&probe) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    return Err(SourceError::new(
                        path,
                        format!(
                            "commit {} not found in git mirror {}; fetch it into the mirror",
                            self.commit,
                            self.git_dir.display()
                        ),
                    ))
                }
                Err(e) => return Err(SourceError::new(path, e)),
            }
            *guard = Some(batch);
        }
        let Some(batch) = guard.as_mut() else {
            return Err(SourceError::new(path, "git reader unavailable"));
        };
        match batch.read(&self.commit, path) {
            Ok(Some(bytes)) => utf8(path, bytes).map(Some),
            Ok(None) => Ok(None),
            Err(e) => {
                // A broken pipe leaves the process unusable; start a fresh one next time.
                *guard = None;
                Err(SourceError::new(
                    path,
                    format!(
                        "git mirror {} at {}: {e}",
                        self.git_dir.display(),
                        self.commit
                    ),
                ))
            }
        }
    }
}

/// A `git cat-file --batch` process.
struct GitBatch {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl GitBatch {
    fn start(git_dir: &Path) -> Result<GitBatch, String> {
        use std::process::{Command, Stdio};
        let mut child = Command::new("git")
            .arg("--git-dir")
            .arg(git_dir)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run git: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("git cat-file has no pipes".to_string());
        };
        Ok(GitBatch {
            child,
            stdin,
            stdout: std::io::BufReader::new(stdout),
        })
    }

    /// The blob at `commit:path`; `None` when the path is absent or not a file.
    fn read(&mut self, commit: &str, path: &str) -> Result<Option<Vec<u8>>, String> {
        if commit.contains(char::is_whitespace) || path.contains('\n') {
            return Err(format!("invalid object name {commit}:{path}"));
        }
        Ok(self
            .read_object(&format!("{commit}:{path}"))?
            .and_then(|(kind, bytes)| (kind == "blob").then_some(bytes)))
    }

    /// Any object by name: its type and content, `None` when missing.
    fn read_object(&mut self, name: &str) -> Result<Option<(String, Vec<u8>)>, String> {
        use std::io::{BufRead, Read, Write};
        writeln!(self.stdin, "{name}").map_err(|e| e.to_string())?;
        self.stdin.flush().map_err(|e| e.to_string())?;
        let mut header = String::new();
        self.stdout
            .read_line(&mut header)
            .map_err(|e| e.to_string())?;
        let header = header.trim_end();
        if header.is_empty() {
            return Err("git cat-file ended unexpectedly".to_string());
        }
        if header.ends_with(" missing") || header.ends_with(" ambiguous") {
            return Ok(None);
        }
        let mut parts = header.split(' ');
        let (_, kind, size) = (parts.next(), parts.next(), parts.next());
        let size: usize = size
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("unexpected git cat-file answer {header:?}"))?;
        let kind = kind.unwrap_or_default().to_string();
        let mut buf = vec![0u8; size + 1];
        self.stdout
            .read_exact(&mut buf)
            .map_err(|e| e.to_string())?;
        buf.pop();
        Ok(Some((kind, buf)))
    }
}

impl Drop for GitBatch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
