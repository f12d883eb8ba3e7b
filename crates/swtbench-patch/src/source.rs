//! Where the files at the base commit come from, as an interface.
//!
//! Extraction only ever *reads* the repository: each format computes new file contents in memory
//! and the result is rendered as a diff. A [`FileSource`] answers "what is in this file at the base
//! commit". Only [`MemorySource`] (tests, or contents fetched by other means) lives here; the
//! sources that read a checked-out tree or a git mirror are adapters in `swtbench-extract`, and
//! the runner adds one that reads from the instance container. Nothing here does I/O.

use std::collections::BTreeMap;
use std::fmt;

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

    /// About how many objects the repository holds, counted as git counts them to choose the
    /// length of abbreviated ids (its packed objects); `None` when unknown, and the diff's ids
    /// are then abbreviated to 7 hex digits (see `gitdiff::abbrev_len`).
    fn object_count(&self) -> Option<u64> {
        None
    }
}

impl<T: FileSource + ?Sized> FileSource for &T {
    fn read(&self, path: &str) -> Result<Option<String>, SourceError> {
        (**self).read(path)
    }

    fn object_count(&self) -> Option<u64> {
        (**self).object_count()
    }
}

/// The bytes of `path` as text, or the [`SourceErrorKind::NotText`] error every source reports
/// for a file that is not UTF-8.
pub fn decode_utf8(path: &str, bytes: Vec<u8>) -> Result<String, SourceError> {
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
