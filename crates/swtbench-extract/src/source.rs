//! The host-side file sources of an extraction: [`DirSource`] (a checked-out work tree) and
//! [`GitMirrorSource`] (a bare mirror plus a commit). They read files and run `git`; the
//! interface they implement, the error they report and the in-memory source are pure and live in
//! `swtbench_patch::source` (re-exported here, so `swtbench_extract::source::…` keeps naming them).

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use swtbench_data::git_mirror::{BatchReader, GitError, GitMirror};

pub use swtbench_patch::source::{
    decode_utf8, symlink_error, FileSource, MemorySource, SourceError, SourceErrorKind,
};

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
        decode_utf8(path, bytes).map(Some)
    }
}

/// Files at one commit of a bare git mirror (see `swtbench_data::git_mirror`): object reads
/// through one `git cat-file --batch` process, started on first use; nothing is checked out.
pub struct GitMirrorSource {
    git_dir: PathBuf,
    commit: String,
    reader: Mutex<Option<BatchReader>>,
    object_count: OnceLock<Option<u64>>,
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
            object_count: OnceLock::new(),
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
    /// The mirror's packed objects (`git count-objects -v`, `in-pack`), what git counts to size
    /// abbreviated ids; read once. A mirror made with `--mirror` also holds pull-request refs, so
    /// the count can exceed that of the clone the original diffed in.
    fn object_count(&self) -> Option<u64> {
        *self.object_count.get_or_init(|| {
            let out = Command::new("git")
                .arg("-c")
                .arg("safe.directory=*")
                .arg("--git-dir")
                .arg(&self.git_dir)
                .args(["count-objects", "-v"])
                .env_remove("GIT_DIR")
                .env_remove("GIT_OBJECT_DIRECTORY")
                .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
                .stdin(Stdio::null())
                .output()
                .ok()?;
            if !out.status.success() {
                return None;
            }
            packed_object_count(&String::from_utf8_lossy(&out.stdout))
        })
    }

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
            Ok(Some(bytes)) => decode_utf8(path, bytes).map(Some),
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

/// The `in-pack:` figure of `git count-objects -v` output.
pub fn packed_object_count(count_objects: &str) -> Option<u64> {
    count_objects
        .lines()
        .find_map(|l| l.strip_prefix("in-pack:"))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::packed_object_count;

    #[test]
    fn in_pack_is_read_from_count_objects() {
        let out = "count: 3\nsize: 12\nin-pack: 612345\npacks: 1\nsize-pack: 1\n";
        assert_eq!(packed_object_count(out), Some(612_345));
        assert_eq!(packed_object_count("count: 3\n"), None);
    }
}
