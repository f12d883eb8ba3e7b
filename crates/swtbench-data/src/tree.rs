//! The file system as a [`TreeReader`]: the one `std::fs` view of a log tree, handed to the pure
//! readers of `swtbench-grade` (re-grading, collecting reports) and `swtbench-html` (the page).
//! Read-only; what is written goes through [`crate::fsutil::write_atomic`].

use std::io;
use std::path::Path;

use swtbench_grade::tree::TreeReader;

/// The file system as a [`TreeReader`].
#[derive(Debug, Clone, Copy, Default)]
pub struct FsTree;

impl FsTree {
    /// The entries directly under `path` that `keep` accepts, sorted; `None` when `path` does not
    /// exist.
    fn entries(path: &Path, keep: impl Fn(&Path) -> bool) -> io::Result<Option<Vec<String>>> {
        let entries = match std::fs::read_dir(path) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry?;
            if keep(&entry.path()) {
                out.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        out.sort();
        Ok(Some(out))
    }
}

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

    fn read_pieces(&self, path: &Path, feed: &mut dyn FnMut(&[u8])) -> io::Result<bool> {
        use std::io::Read;
        let mut file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match file.read(&mut buf) {
                Ok(0) => return Ok(true),
                Ok(n) => feed(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn subdirs(&self, path: &Path) -> io::Result<Option<Vec<String>>> {
        // `Path.is_dir()` of the original follows symlinks.
        Self::entries(path, Path::is_dir)
    }

    fn files(&self, path: &Path) -> io::Result<Option<Vec<String>>> {
        Self::entries(path, Path::is_file)
    }

    fn is_dir(&self, path: &Path) -> io::Result<bool> {
        Ok(path.is_dir())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_directories_and_files_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::create_dir_all(d.join("b/inner")).unwrap();
        std::fs::create_dir_all(d.join("a")).unwrap();
        std::fs::write(d.join("z.txt"), "z").unwrap();
        std::fs::write(d.join("b/report.json"), "{}").unwrap();
        let t = FsTree;
        assert_eq!(
            t.subdirs(d).unwrap(),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(t.files(d).unwrap(), Some(vec!["z.txt".to_string()]));
        assert_eq!(t.subdirs(&d.join("nope")).unwrap(), None);
        assert_eq!(
            t.read(&d.join("b/report.json")).unwrap(),
            Some(b"{}".to_vec())
        );
        assert_eq!(t.read(&d.join("b/none.json")).unwrap(), None);
        assert!(t.is_dir(&d.join("b")).unwrap() && !t.is_dir(&d.join("z.txt")).unwrap());
        assert!(t.exists(&d.join("z.txt")).unwrap());
    }
}
