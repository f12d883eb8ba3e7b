//! The reader of requirement and environment files behind `swtbench_spec::FileSource`: a
//! repository's files at a commit, from a local bare mirror (`DIR/<owner>__<name>.git`) or,
//! failing that, from GitHub raw through the shared HTTP client (timeouts, retries, on-disk
//! cache).
//!
//! It decides *where* bytes come from; what is done with them (the `-r` expansion, the `name:`
//! rewrite) stays in the pure `swtbench_spec::reqs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use swtbench_spec::reqs::normalize_repo_path;
use swtbench_spec::{FileSource, ReadError};

use crate::git_mirror::{GitError, GitMirror};
use crate::http::{CacheMode, Fetched, HttpClient, HttpError};

/// Base URL of raw file contents on GitHub (`<base><owner>/<name>/<commit>/<path>`).
pub const GITHUB_RAW: &str = "https://raw.githubusercontent.com/";

/// Why a file could not be read from any source.
#[derive(Debug, thiserror::Error)]
pub enum RepoFilesError {
    /// The mirror exists but git could not read it.
    #[error(transparent)]
    Mirror(#[from] GitError),
    /// The download failed (network, server, cache).
    #[error(transparent)]
    Http(#[from] HttpError),
    /// An earlier read panicked while holding the memo.
    #[error("poisoned lock: another task failed inside")]
    Poisoned,
    /// No source could tell whether the file exists.
    #[error(
        "not available from {sources} (give --repo-mirror with a mirror that has commit {commit}, or allow the network)"
    )]
    NotAvailable { sources: String, commit: String },
}

impl<T> From<std::sync::PoisonError<T>> for RepoFilesError {
    fn from(_: std::sync::PoisonError<T>) -> Self {
        RepoFilesError::Poisoned
    }
}

/// `--repo-mirror` names no directory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "mirror directory {} does not exist (expected bare repositories named <owner>__<name>.git)",
    .dir.display()
)]
pub struct MissingMirrorDir {
    pub dir: PathBuf,
}

/// Where repository files come from.
#[derive(Debug)]
pub struct RepoFiles {
    mirror_dir: Option<PathBuf>,
    http: Option<HttpClient>,
    offline: bool,
    raw_base: String,
    mirrors: Mutex<BTreeMap<String, Option<GitMirror>>>,
    memo: Mutex<BTreeMap<(String, String, String), Option<String>>>,
}

impl RepoFiles {
    /// `mirror_dir`: directory of bare mirrors, tried first. `http`: client for GitHub raw
    /// (`None`: never use the network). `offline`: only the HTTP cache may answer.
    pub fn new(mirror_dir: Option<PathBuf>, http: Option<HttpClient>, offline: bool) -> RepoFiles {
        RepoFiles {
            mirror_dir,
            http,
            offline,
            raw_base: GITHUB_RAW.to_string(),
            mirrors: Mutex::new(BTreeMap::new()),
            memo: Mutex::new(BTreeMap::new()),
        }
    }

    /// Uses another base URL instead of GitHub raw (a local server in tests, or a proxy mirror).
    pub fn with_raw_base(mut self, base: &str) -> RepoFiles {
        self.raw_base = if base.ends_with('/') {
            base.to_string()
        } else {
            format!("{base}/")
        };
        self
    }

    /// Where files of `repo` are looked for, for error hints.
    pub fn describe_sources(&self, repo: &str) -> String {
        let mut parts = Vec::new();
        if let Some(dir) = &self.mirror_dir {
            parts.push(format!(
                "mirror {}",
                dir.join(crate::git_mirror::mirror_dir_name(repo)).display()
            ));
        }
        match (&self.http, self.offline) {
            (Some(_), false) => parts.push(format!("{}{repo}", self.raw_base)),
            (Some(_), true) => parts.push("the download cache (offline)".to_string()),
            (None, _) => {}
        }
        if parts.is_empty() {
            "no source (no mirror, no network)".to_string()
        } else {
            parts.join(", then ")
        }
    }

    fn mirror(&self, repo: &str) -> Result<Option<GitMirror>, RepoFilesError> {
        let Some(dir) = &self.mirror_dir else {
            return Ok(None);
        };
        let mut mirrors = self.mirrors.lock()?;
        if let Some(m) = mirrors.get(repo) {
            return Ok(m.clone());
        }
        let m = GitMirror::locate(dir, repo)?;
        mirrors.insert(repo.to_string(), m.clone());
        Ok(m)
    }

    fn read_mirror(&self, repo: &str, commit: &str, path: &str) -> Result<Lookup, RepoFilesError> {
        let Some(mirror) = self.mirror(repo)? else {
            return Ok(Lookup::NotHere);
        };
        match mirror.show(commit, path) {
            Ok(Some(bytes)) => Ok(Lookup::Found(String::from_utf8_lossy(&bytes).into_owned())),
            // The mirror has the commit, so its answer is authoritative.
            Ok(None) | Err(GitError::NotAFile { .. }) => Ok(Lookup::Absent),
            // A mirror that predates the commit says nothing; the network may know.
            Err(GitError::CommitNotFound { .. }) => Ok(Lookup::NotHere),
            Err(e) => Err(e.into()),
        }
    }

    fn read_github(&self, repo: &str, commit: &str, path: &str) -> Result<Lookup, RepoFilesError> {
        let Some(http) = &self.http else {
            return Ok(Lookup::NotHere);
        };
        let url = format!("{}{repo}/{commit}/{}", self.raw_base, encode_path(path));
        // A file at a fixed commit never changes: a cached copy is always good.
        let mode = if self.offline {
            CacheMode::Offline
        } else {
            CacheMode::Fresh {
                max_age: Duration::MAX,
            }
        };
        match http.download_bytes(&url, mode) {
            Ok(Fetched::Found((bytes, _))) => {
                Ok(Lookup::Found(String::from_utf8_lossy(&bytes).into_owned()))
            }
            Ok(Fetched::NotFound) => Ok(Lookup::Absent),
            Err(HttpError::NoCacheDir { .. }) => match http.get_bytes(&url) {
                Ok(Fetched::Found(bytes)) => {
                    Ok(Lookup::Found(String::from_utf8_lossy(&bytes).into_owned()))
                }
                Ok(Fetched::NotFound) => Ok(Lookup::Absent),
                Err(e) => Err(e.into()),
            },
            Err(e) => Err(e.into()),
        }
    }

    fn lookup(
        &self,
        repo: &str,
        commit: &str,
        path: &str,
    ) -> Result<Option<String>, RepoFilesError> {
        match self.read_mirror(repo, commit, path)? {
            Lookup::Found(text) => return Ok(Some(text)),
            Lookup::Absent => return Ok(None),
            Lookup::NotHere => {}
        }
        match self.read_github(repo, commit, path)? {
            Lookup::Found(text) => Ok(Some(text)),
            Lookup::Absent => Ok(None),
            Lookup::NotHere => Err(RepoFilesError::NotAvailable {
                sources: self.describe_sources(repo),
                commit: commit.to_string(),
            }),
        }
    }
}

enum Lookup {
    Found(String),
    /// The source knows the commit and the file is not there.
    Absent,
    /// The source cannot tell (no mirror for the repo, commit not in the mirror, no network).
    NotHere,
}

impl RepoFiles {
    /// `path` of `repo` at `commit`, remembered: `Ok(None)` when the file does not exist there.
    pub fn read(
        &self,
        repo: &str,
        commit: &str,
        path: &str,
    ) -> Result<Option<String>, RepoFilesError> {
        let Some(path) = normalize_repo_path(path) else {
            return Ok(None);
        };
        let key = (repo.to_string(), commit.to_string(), path.clone());
        if let Some(hit) = self.memo.lock()?.get(&key) {
            return Ok(hit.clone());
        }
        let answer = self.lookup(repo, commit, &path)?;
        self.memo.lock()?.insert(key, answer.clone());
        Ok(answer)
    }
}

impl FileSource for RepoFiles {
    fn file(&self, repo: &str, commit: &str, path: &str) -> Result<Option<String>, ReadError> {
        Ok(self.read(repo, commit, path)?)
    }
}

/// Percent-encodes a repository path for a URL, as `requests` does before sending it: unreserved
/// characters, `/` and the sub-delimiters stay, everything else (spaces, non-ASCII bytes, `%`, `#`,
/// `?`) is encoded. The original's `-r` quirk asks for paths like `dir/-r x.txt`, which must
/// reach the server (and get a 404) rather than fail as an invalid request.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Checks that a directory of bare mirrors (`--repo-mirror`, `SWTBENCH_REPO_MIRROR`) exists.
pub fn check_mirror_dir(dir: &Path) -> Result<(), MissingMirrorDir> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(MissingMirrorDir {
            dir: dir.to_path_buf(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::encode_path;

    #[test]
    fn paths_are_encoded_like_requests_does() {
        assert_eq!(
            encode_path("tests/requirements/py3.txt"),
            "tests/requirements/py3.txt"
        );
        assert_eq!(encode_path("d/-r missing.txt"), "d/-r%20missing.txt");
        assert_eq!(encode_path("ü#?%.txt"), "%C3%BC%23%3F%25.txt");
        assert_eq!(encode_path("a+b(1)~,=.txt"), "a+b(1)~,=.txt");
    }
}
