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
use std::process::{Command, Stdio};
use std::sync::Mutex;

use swtbench_data::git_mirror::{BatchReader, GitError, GitMirror};

/// Why a file could not be read. `path` is repository-relative.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {detail}")]
pub struct SourceError {
    pub path: String,
    pub kind: SourceErrorKind,
    pub detail: String,
}

/// What kind of failure: the first two are facts about the repository (the model named a
/// directory, or a binary file), the last one is trouble with the machinery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceErrorKind {
    /// The path names a directory, a submodule or something else that is not a file.
    NotAFile,
    /// The file is not UTF-8 text.
    NotText,
    /// The repository could not be read (I/O error, missing commit, `git` not runnable…).
    Unavailable,
}

impl SourceError {
    pub fn new(path: &str, kind: SourceErrorKind, detail: impl fmt::Display) -> Self {
        SourceError {
            path: path.to_string(),
            kind,
            detail: detail.to_string(),
        }
    }
}

/// Read access to the repository at the base commit.
pub trait FileSource {
    /// The content of `path` (repository-relative, `/`-separated, already checked to stay inside
    /// the repository), or `Ok(None)` when no such file exists. Files that are not UTF-8 are an
    /// error: the original reads them as text and fails the same way. A symbolic link, or a path
    /// that leads through one, is [`SourceErrorKind::NotAFile`]: editing it as text would retarget
    /// the link, and `git apply` refuses to write beyond one.
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
            SourceErrorKind::NotText,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// The error for `path` when `link` (`path` itself or one of its parent directories) is a
/// symbolic link.
pub fn symlink_error(path: &str, link: &str) -> SourceError {
    let detail = if link == path {
        "a symbolic link".to_string()
    } else {
        format!("beyond a symbolic link ({link})")
    };
    SourceError::new(path, SourceErrorKind::NotAFile, detail)
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

/// Files of a checked-out work tree (for example a clone at the base commit). Symbolic links, and
/// paths through them, are refused.
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
        let unavailable =
            |e: &dyn fmt::Display| SourceError::new(path, SourceErrorKind::Unavailable, e);
        let mut prefix = self.root.clone();
        let segments: Vec<&str> = path.split('/').collect();
        for (k, seg) in segments.iter().enumerate() {
            prefix.push(seg);
            match std::fs::symlink_metadata(&prefix) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(symlink_error(path, &segments[..=k].join("/")));
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(unavailable(&e)),
            }
        }
        let meta = match std::fs::metadata(&full) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(unavailable(&e)),
        };
        if !meta.is_file() {
            return Err(SourceError::new(
                path,
                SourceErrorKind::NotAFile,
                "not a regular file",
            ));
        }
        let root = self
            .root
            .canonicalize()
            .map_err(|e| unavailable(&format!("{}: {e}", self.root.display())))?;
        let real = full.canonicalize().map_err(|e| unavailable(&e))?;
        if !real.starts_with(&root) {
            return Err(SourceError::new(
                path,
                SourceErrorKind::NotAFile,
                "a symbolic link leading out of the repository",
            ));
        }
        let bytes = std::fs::read(&real).map_err(|e| unavailable(&e))?;
        utf8(path, bytes).map(Some)
    }
}

/// Files at one commit of a bare git mirror (see `swtbench_data::git_mirror`): object reads
/// through one `git cat-file --batch` process, started on first use; nothing is checked out.
pub struct GitMirrorSource {
    git_dir: PathBuf,
    commit: String,
    reader: Mutex<Option<BatchReader>>,
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
    /// `git_dir` is a bare repository (or a `.git` directory) that should contain `commit`; an
    /// unknown commit is reported on the first read.
    pub fn new(git_dir: impl Into<PathBuf>, commit: &str) -> Self {
        GitMirrorSource {
            git_dir: git_dir.into(),
            commit: commit.to_string(),
            reader: Mutex::new(None),
        }
    }

    /// The mirror of `repo` (`owner/name`) under a mirror directory (`<owner>__<name>.git`), or
    /// `None` when there is none.
    pub fn locate(mirror_dir: &Path, repo: &str, commit: &str) -> Result<Option<Self>, GitError> {
        Ok(GitMirror::locate(mirror_dir, repo)?.map(|m| GitMirrorSource::new(m.path(), commit)))
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
        let unavailable = |e: &dyn fmt::Display| SourceError {
            path: path.to_string(),
            kind: SourceErrorKind::Unavailable,
            detail: e.to_string(),
        };
        let mut guard = self
            .reader
            .lock()
            .map_err(|_| unavailable(&"git reader poisoned by an earlier panic"))?;
        if guard.is_none() {
            let mirror = GitMirror::open(&self.git_dir).map_err(|e| unavailable(&e))?;
            *guard = Some(mirror.batch().map_err(|e| unavailable(&e))?);
        }
        let Some(reader) = guard.as_mut() else {
            return Err(unavailable(&"git reader unavailable"));
        };
        let found = reader.read(&self.commit, path);
        drop(guard);
        if matches!(found, Ok(_) | Err(GitError::NotAFile { .. })) {
            if let Some(link) = self.symlink_on(path)? {
                return Err(symlink_error(path, &link));
            }
        }
        match found {
            Ok(Some(bytes)) => utf8(path, bytes).map(Some),
            Ok(None) => Ok(None),
            Err(e @ GitError::NotAFile { .. }) => Err(SourceError {
                path: path.to_string(),
                kind: SourceErrorKind::NotAFile,
                detail: e.to_string(),
            }),
            Err(e) => {
                // The process may be unusable now; start a fresh one next time.
                if let Ok(mut guard) = self.reader.lock() {
                    *guard = None;
                }
                Err(unavailable(&e))
            }
        }
    }
}

impl GitMirrorSource {
    /// The first of `path` and its parent directories that is a symbolic link at the commit
    /// (`git ls-tree` gives the modes, which `cat-file` does not).
    fn symlink_on(&self, path: &str) -> Result<Option<String>, SourceError> {
        let segments: Vec<&str> = path.split('/').collect();
        let prefixes: Vec<String> = (1..=segments.len())
            .map(|k| segments[..k].join("/"))
            .collect();
        let out = Command::new("git")
            .arg("-c")
            .arg("safe.directory=*")
            .arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--literal-pathspecs")
            .args(["ls-tree", "-z", "--full-tree", &self.commit, "--"])
            .args(&prefixes)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_OBJECT_DIRECTORY")
            .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                SourceError::new(
                    path,
                    SourceErrorKind::Unavailable,
                    format!("git ls-tree: {e}"),
                )
            })?;
        if !out.status.success() {
            return Err(SourceError::new(
                path,
                SourceErrorKind::Unavailable,
                format!(
                    "git ls-tree {}: {}",
                    self.commit,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            ));
        }
        // `<mode> SP <type> SP <object> TAB <path>`, NUL-terminated. Pathspecs of a directory
        // and of something inside it make git list that directory's other entries too, so only
        // the prefixes themselves count; the shortest linked one is where git would stop.
        let mut links: Vec<&String> = out
            .stdout
            .split(|b| *b == 0)
            .filter_map(|entry| {
                let tab = entry.iter().position(|b| *b == b'\t')?;
                if !entry.starts_with(b"120000 ") {
                    return None;
                }
                let name = std::str::from_utf8(&entry[tab + 1..]).ok()?;
                prefixes.iter().find(|p| p.as_str() == name)
            })
            .collect();
        links.sort_by_key(|p| p.len());
        Ok(links.first().map(|p| p.to_string()))
    }
}
