//! The file system as a [`TreeReader`]: how the pure grading and report code reads a run tree.

use std::io;
use std::path::Path;

use swtbench_grade::tree::TreeReader;

/// The file system as a [`TreeReader`].
#[derive(Debug, Clone, Copy, Default)]
pub struct FsTree;

impl TreeReader for FsTree {
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn subdirs(&self, path: &Path) -> io::Result<Option<Vec<String>>> {
        let entries = match std::fs::read_dir(path) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry?;
            // `Path.is_dir()` of the original follows symlinks.
            if entry.path().is_dir() {
                out.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        out.sort();
        Ok(Some(out))
    }
}
