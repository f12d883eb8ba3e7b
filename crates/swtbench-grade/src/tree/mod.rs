//! Reading a log tree in the original's layout (§4.8): re-grading a run, collecting its reports
//! and finding every output of an instance, for `grade`, `report` and the HTML page alike.
//!
//! File access goes through [`TreeReader`], a read-only view the caller implements (the
//! application layer over `std::fs`, tests over a [`MemoryTree`]). [`RunTree`] is the one reader
//! of a run in that tree: where an instance's six runs, its report and its patches live, which
//! shared gold/base directory (variant, plain or cached) holds its shared runs. Nothing here
//! writes or touches the file system: [`regrade`] returns the `report.json` texts to write and the
//! run report's entries; the caller writes them.

mod collect;
mod regrade;
mod rules;
mod run;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

pub use collect::{collect_reports, CollectedReports};
pub use regrade::{regrade, RegradeRequest, Regraded};
pub use rules::{NonTestExts, ReadRules};
pub use run::{InstanceRuns, RunTree, RunTreeError, SharedHashes};

/// Read-only access to a log tree.
pub trait TreeReader: Sync {
    /// The file's bytes; `Ok(None)` when it does not exist.
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>>;
    /// Names of the directories directly under `path`, sorted; `Ok(None)` when `path` does not
    /// exist.
    fn subdirs(&self, path: &Path) -> io::Result<Option<Vec<String>>>;
    /// Names of the files directly under `path`, sorted; `Ok(None)` when `path` does not exist.
    fn files(&self, path: &Path) -> io::Result<Option<Vec<String>>>;
    /// Whether `path` is a directory.
    fn is_dir(&self, path: &Path) -> io::Result<bool>;
    /// Whether the file exists (without reading it, where the tree can).
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.read(path).map(|o| o.is_some())
    }
    /// The file's bytes handed to `feed` piece by piece, where the tree can read it so (a log
    /// can be hundreds of megabytes); `Ok(false)` when it does not exist.
    fn read_pieces(&self, path: &Path, feed: &mut dyn FnMut(&[u8])) -> io::Result<bool> {
        Ok(match self.read(path)? {
            Some(bytes) => {
                feed(&bytes);
                true
            }
            None => false,
        })
    }
}

/// An in-memory tree: path → bytes. Directories are implied by the paths.
#[derive(Debug, Clone, Default)]
pub struct MemoryTree {
    files: BTreeMap<PathBuf, Vec<u8>>,
}

impl MemoryTree {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, path: impl Into<PathBuf>, contents: impl Into<Vec<u8>>) {
        self.files.insert(path.into(), contents.into());
    }

    pub fn get(&self, path: &Path) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Every file, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&Path, &[u8])> {
        self.files.iter().map(|(p, b)| (p.as_path(), b.as_slice()))
    }

    /// The entries directly under `path`: `(name, is a directory)`, each once, in name order;
    /// `None` when nothing is under `path`.
    fn entries(&self, path: &Path) -> Option<Vec<(String, bool)>> {
        let mut found = false;
        let mut out: BTreeMap<String, bool> = BTreeMap::new();
        for p in self.files.keys() {
            let Ok(rest) = p.strip_prefix(path) else {
                continue;
            };
            let mut comps = rest.components();
            let Some(first) = comps.next() else {
                continue;
            };
            found = true;
            let name = first.as_os_str().to_string_lossy().into_owned();
            let dir = comps.next().is_some();
            *out.entry(name).or_insert(dir) |= dir;
        }
        found.then(|| out.into_iter().collect())
    }
}

impl TreeReader for MemoryTree {
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        Ok(self.files.get(path).cloned())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        Ok(self.files.contains_key(path))
    }

    fn subdirs(&self, path: &Path) -> io::Result<Option<Vec<String>>> {
        Ok(self.entries(path).map(|e| {
            e.into_iter()
                .filter(|(_, dir)| *dir)
                .map(|(n, _)| n)
                .collect()
        }))
    }

    fn files(&self, path: &Path) -> io::Result<Option<Vec<String>>> {
        Ok(self.entries(path).map(|e| {
            e.into_iter()
                .filter(|(_, dir)| !*dir)
                .map(|(n, _)| n)
                .collect()
        }))
    }

    fn is_dir(&self, path: &Path) -> io::Result<bool> {
        Ok(self.entries(path).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_tree_lists_subdirs() {
        let mut t = MemoryTree::new();
        t.insert("r/run/m/a/report.json", "{}");
        t.insert("r/run/m/b/report.json", "{}");
        t.insert("r/run/m/file.txt", "x");
        assert_eq!(
            t.subdirs(Path::new("r/run/m")).unwrap(),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(t.subdirs(Path::new("r/nope")).unwrap(), None);
        assert_eq!(
            t.read(Path::new("r/run/m/file.txt")).unwrap(),
            Some(b"x".to_vec())
        );
    }

    #[test]
    fn memory_tree_lists_files_and_knows_directories() {
        let mut t = MemoryTree::new();
        t.insert("r/m/a/report.json", "{}");
        t.insert("r/m/z.txt", "x");
        t.insert("r/m/b.txt", "x");
        assert_eq!(
            t.files(Path::new("r/m")).unwrap(),
            Some(vec!["b.txt".to_string(), "z.txt".to_string()])
        );
        assert_eq!(t.files(Path::new("r/nope")).unwrap(), None);
        assert!(t.is_dir(Path::new("r/m/a")).unwrap());
        assert!(!t.is_dir(Path::new("r/m/z.txt")).unwrap());
        assert!(!t.is_dir(Path::new("r/x")).unwrap());
    }
}
