//! Read files of a repository at a commit from a local bare mirror, through the host `git`.
//!
//! A mirror directory holds one bare repository per GitHub repository, named
//! `<owner>__<name>.git` (e.g. `git clone --mirror https://github.com/django/django
//! DIR/django__django.git`). Reading objects from it is safe for any content, so this runs the
//! host's `git` directly; nothing here writes to a mirror or checks anything out.
//!
//! `git cat-file --batch` answers many lookups through one process, which matters when a dataset
//! builder reads hundreds of files at one commit. Every error names the mirror, the commit and,
//! where there is one, the path.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Why a mirror could not answer.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git mirror {}: not a git repository ({detail})", mirror.display())]
    NotARepository { mirror: PathBuf, detail: String },
    #[error(
        "git mirror {}: commit {commit} not found; fetch it into the mirror \
         (git --git-dir {} fetch origin {commit})",
        mirror.display(), mirror.display()
    )]
    CommitNotFound { mirror: PathBuf, commit: String },
    #[error(
        "git mirror {}: it is shallow, so an image cannot get the whole history of a commit; \
         fetch the rest (git --git-dir {} fetch --unshallow)",
        mirror.display(), mirror.display()
    )]
    Shallow { mirror: PathBuf },
    #[error("git mirror {}: {commit}:{path} is a {kind}, not a file", mirror.display())]
    NotAFile {
        mirror: PathBuf,
        commit: String,
        path: String,
        kind: String,
    },
    #[error("git mirror {}: invalid {what} {value:?}", mirror.display())]
    InvalidName {
        mirror: PathBuf,
        what: &'static str,
        value: String,
    },
    #[error(
        "git mirror {}: it lacks {} object(s) of commit {commit}'s files: {}; a complete mirror \
         holds them (`git clone --mirror`; a copy that leaves out large files does not)",
        mirror.display(), missing.len(), swtbench_core::text::first_few(missing)
    )]
    MissingObjects {
        mirror: PathBuf,
        commit: String,
        /// `<path> (<object id>)`, in the order of the commit's tree.
        missing: Vec<String>,
    },
    #[error("git mirror {}: `git {args}` failed: {detail}", mirror.display())]
    Command {
        mirror: PathBuf,
        args: String,
        detail: String,
    },
}

/// A bare git repository holding the history of one GitHub repository.
#[derive(Debug, Clone)]
pub struct GitMirror {
    path: PathBuf,
}

/// The directory name of a repository's mirror: `owner/name` → `owner__name.git`.
/// A submodule as `.gitmodules` declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submodule {
    pub path: String,
    pub url: String,
}

/// The submodules a `.gitmodules` file declares (those with both a path and a URL), in order.
pub fn parse_gitmodules(text: &str) -> Vec<Submodule> {
    let mut out = Vec::new();
    let mut current: Option<(Option<String>, Option<String>)> = None;
    let mut flush = |entry: Option<(Option<String>, Option<String>)>| {
        if let Some((Some(path), Some(url))) = entry {
            out.push(Submodule { path, url });
        }
    };
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            flush(current.take());
            if line.starts_with("[submodule") {
                current = Some((None, None));
            }
        } else if let (Some(entry), Some((key, value))) = (current.as_mut(), line.split_once('=')) {
            let value = value.trim().trim_matches('"').to_string();
            match key.trim() {
                "path" => entry.0 = Some(value),
                "url" => entry.1 = Some(value),
                _ => {}
            }
        }
    }
    flush(current);
    out
}

/// `owner/name` of a GitHub repository URL (https, ssh or git protocol, with or without `.git`).
pub fn github_repo(url: &str) -> Option<String> {
    let rest = [
        "https://github.com/",
        "http://github.com/",
        "git://github.com/",
        "git@github.com:",
        "ssh://git@github.com/",
    ]
    .iter()
    .find_map(|p| url.strip_prefix(p))?;
    let rest = rest.trim_end_matches('/');
    let rest = rest.strip_suffix(".git").unwrap_or(rest);
    let (owner, name) = rest.split_once('/')?;
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    (ok(owner) && ok(name)).then(|| format!("{owner}/{name}"))
}

pub fn mirror_dir_name(repo: &str) -> String {
    format!("{}.git", repo.replace('/', "__"))
}

impl GitMirror {
    /// The mirror of `repo` (`owner/name`) under `mirror_dir`, or `None` when the directory
    /// `mirror_dir/<owner>__<name>.git` does not exist.
    pub fn locate(mirror_dir: &Path, repo: &str) -> Result<Option<GitMirror>, GitError> {
        let path = mirror_dir.join(mirror_dir_name(repo));
        if !path.is_dir() {
            return Ok(None);
        }
        GitMirror::open(&path).map(Some)
    }

    /// Opens the git directory at `path` (bare, or the `.git` of a work tree).
    pub fn open(path: &Path) -> Result<GitMirror, GitError> {
        let path = path.canonicalize().map_err(|e| GitError::NotARepository {
            mirror: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        let mirror = GitMirror { path };
        let out = mirror.run(&["rev-parse", "--git-dir"]);
        match out {
            Ok(_) => Ok(mirror),
            Err(GitError::Command { mirror, detail, .. }) => {
                Err(GitError::NotARepository { mirror, detail })
            }
            Err(e) => Err(e),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `commit` (a sha, or any revision) names a commit in the mirror.
    pub fn has_commit(&self, commit: &str) -> Result<bool, GitError> {
        let mut batch = self.batch()?;
        batch.has_commit(commit)
    }

    /// The content of `path` at `commit`; `None` when the path does not exist at that commit.
    pub fn show(&self, commit: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let mut batch = self.batch()?;
        batch.read(commit, path)
    }

    /// The commit a submodule at `path` points to at `commit` (its gitlink); `None` when `path` is
    /// not a submodule there.
    pub fn gitlink(&self, commit: &str, path: &str) -> Result<Option<String>, GitError> {
        self.check_name("commit", commit)?;
        let out = self.run(&["ls-tree", commit, "--", path])?;
        let text = String::from_utf8_lossy(&out);
        Ok(text.lines().find_map(|line| {
            let (meta, name) = line.split_once('\t')?;
            let mut parts = meta.split_whitespace();
            let (mode, kind, sha) = (parts.next()?, parts.next()?, parts.next()?);
            (mode == "160000" && kind == "commit" && name == path).then(|| sha.to_string())
        }))
    }

    /// Every file (blob, including symlinks; not submodules) at `commit`, sorted, repository-relative.
    pub fn list_files(&self, commit: &str) -> Result<Vec<String>, GitError> {
        self.check_name("commit", commit)?;
        if !self.has_commit(commit)? {
            return Err(self.commit_not_found(commit));
        }
        let treeish = format!("{commit}^{{tree}}");
        let out = self.run(&["ls-tree", "-r", "-z", "--full-tree", &treeish])?;
        let mut files = Vec::new();
        for entry in out.split(|b| *b == 0).filter(|e| !e.is_empty()) {
            // `<mode> SP <type> SP <object> TAB <path>`
            let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
                continue;
            };
            let meta = String::from_utf8_lossy(&entry[..tab]);
            if meta.split(' ').nth(1) == Some("blob") {
                files.push(String::from_utf8_lossy(&entry[tab + 1..]).into_owned());
            }
        }
        files.sort();
        Ok(files)
    }

    /// Reads many paths at one commit through one `git cat-file` process. Missing paths map to
    /// `None`.
    pub fn read_files<S: AsRef<str>>(
        &self,
        commit: &str,
        paths: &[S],
    ) -> Result<BTreeMap<String, Option<Vec<u8>>>, GitError> {
        let mut batch = self.batch()?;
        if !batch.has_commit(commit)? {
            return Err(self.commit_not_found(commit));
        }
        let mut out = BTreeMap::new();
        for p in paths {
            let p = p.as_ref();
            let content = batch.read(commit, p)?;
            out.insert(p.to_string(), content);
        }
        Ok(out)
    }

    /// A long-lived reader for many lookups (at any commits).
    pub fn batch(&self) -> Result<BatchReader, GitError> {
        let mut child = self
            .command()
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| self.command_error("cat-file --batch", e.to_string()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(BufReader::new);
        match (stdin, stdout) {
            (Some(stdin), Some(stdout)) => Ok(BatchReader {
                mirror: self.path.clone(),
                child,
                stdin: Some(stdin),
                stdout,
            }),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                Err(self.command_error("cat-file --batch", "no pipes to git".to_string()))
            }
        }
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new("git");
        // A mirror owned by another user is still safe to read; without this git refuses it.
        cmd.arg("-c")
            .arg("safe.directory=*")
            .arg("--git-dir")
            .arg(&self.path)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_OBJECT_DIRECTORY")
            .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES");
        cmd
    }

    pub(crate) fn run(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        let out = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| self.command_error(&args.join(" "), e.to_string()))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(self.command_error(&args.join(" "), format!("{}: {stderr}", out.status)));
        }
        Ok(out.stdout)
    }

    /// Runs `git args` with `input` on its standard input (written from a thread, so that a large
    /// input cannot block on a full output pipe).
    pub(crate) fn run_with_input(
        &self,
        args: &[&str],
        input: Vec<u8>,
    ) -> Result<Vec<u8>, GitError> {
        let what = args.join(" ");
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| self.command_error(&what, e.to_string()))?;
        let writer = child.stdin.take().map(|mut stdin| {
            std::thread::spawn(move || {
                let r = stdin.write_all(&input);
                drop(stdin);
                r
            })
        });
        let out = child
            .wait_with_output()
            .map_err(|e| self.command_error(&what, e.to_string()))?;
        let written = writer.map(|w| w.join());
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(self.command_error(&what, format!("{}: {stderr}", out.status)));
        }
        match written {
            Some(Ok(Ok(()))) => Ok(out.stdout),
            Some(Ok(Err(e))) => Err(self.command_error(&what, format!("writing its input: {e}"))),
            _ => Err(self.command_error(&what, "no input pipe to git".to_string())),
        }
    }

    pub(crate) fn check_name(&self, what: &'static str, value: &str) -> Result<(), GitError> {
        check_name(&self.path, what, value)
    }

    pub(crate) fn command_error(&self, args: &str, detail: String) -> GitError {
        GitError::Command {
            mirror: self.path.clone(),
            args: args.to_string(),
            detail,
        }
    }

    pub(crate) fn commit_not_found(&self, commit: &str) -> GitError {
        GitError::CommitNotFound {
            mirror: self.path.clone(),
            commit: commit.to_string(),
        }
    }
}

fn check_name(mirror: &Path, what: &'static str, value: &str) -> Result<(), GitError> {
    // cat-file --batch reads one object name per line.
    if value.is_empty() || value.contains(['\n', '\r', '\0']) {
        return Err(GitError::InvalidName {
            mirror: mirror.to_path_buf(),
            what,
            value: value.to_string(),
        });
    }
    Ok(())
}

/// One `git cat-file --batch` process. Lookups are sequential (one request, one answer), so the
/// pipes never fill up. The process ends when the reader is dropped.
#[derive(Debug)]
pub struct BatchReader {
    mirror: PathBuf,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

/// What `cat-file --batch` said about one object name.
enum Object {
    Missing,
    Found { kind: String, content: Vec<u8> },
}

impl BatchReader {
    /// Whether `commit` names a commit.
    pub fn has_commit(&mut self, commit: &str) -> Result<bool, GitError> {
        check_name(&self.mirror, "commit", commit)?;
        match self.lookup(&format!("{commit}^{{commit}}"))? {
            Object::Missing => Ok(false),
            Object::Found { .. } => Ok(true),
        }
    }

    /// The content of `path` at `commit`; `None` when the path does not exist there. An unknown
    /// commit is an error, so that "file absent" is never confused with "history incomplete".
    pub fn read(&mut self, commit: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        check_name(&self.mirror, "commit", commit)?;
        check_name(&self.mirror, "path", path)?;
        let rel = path.trim_start_matches("./").trim_start_matches('/');
        match self.lookup(&format!("{commit}:{rel}"))? {
            Object::Found { kind, content } if kind == "blob" => Ok(Some(content)),
            Object::Found { kind, .. } => Err(GitError::NotAFile {
                mirror: self.mirror.clone(),
                commit: commit.to_string(),
                path: path.to_string(),
                kind,
            }),
            Object::Missing => {
                if self.has_commit(commit)? {
                    Ok(None)
                } else {
                    Err(GitError::CommitNotFound {
                        mirror: self.mirror.clone(),
                        commit: commit.to_string(),
                    })
                }
            }
        }
    }

    fn lookup(&mut self, name: &str) -> Result<Object, GitError> {
        let io_err = |mirror: &Path, e: io::Error| GitError::Command {
            mirror: mirror.to_path_buf(),
            args: "cat-file --batch".to_string(),
            detail: e.to_string(),
        };
        let stdin = self.stdin.as_mut().ok_or_else(|| GitError::Command {
            mirror: self.mirror.clone(),
            args: "cat-file --batch".to_string(),
            detail: "the process has ended".to_string(),
        })?;
        stdin
            .write_all(format!("{name}\n").as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|e| io_err(&self.mirror, e))?;
        let mut header = String::new();
        let n = self
            .stdout
            .read_line(&mut header)
            .map_err(|e| io_err(&self.mirror, e))?;
        if n == 0 {
            return Err(GitError::Command {
                mirror: self.mirror.clone(),
                args: "cat-file --batch".to_string(),
                detail: "git exited unexpectedly".to_string(),
            });
        }
        let header = header.trim_end_matches('\n');
        // `<object> missing` / `<object> ambiguous`, or `<sha> <type> <size>`.
        if header.ends_with(" missing") || header.ends_with(" ambiguous") {
            return Ok(Object::Missing);
        }
        let mut parts = header.rsplitn(3, ' ');
        let size = parts.next().and_then(|s| s.parse::<usize>().ok());
        let kind = parts.next().map(str::to_string);
        let (Some(size), Some(kind)) = (size, kind) else {
            return Err(GitError::Command {
                mirror: self.mirror.clone(),
                args: "cat-file --batch".to_string(),
                detail: format!("unexpected answer {header:?} for {name:?}"),
            });
        };
        let mut content = vec![0u8; size];
        self.stdout
            .read_exact(&mut content)
            .map_err(|e| io_err(&self.mirror, e))?;
        let mut newline = [0u8; 1];
        self.stdout
            .read_exact(&mut newline)
            .map_err(|e| io_err(&self.mirror, e))?;
        Ok(Object::Found { kind, content })
    }
}

impl Drop for BatchReader {
    fn drop(&mut self) {
        // Closing stdin makes git exit after answering what it has.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitmodules_are_read_with_their_paths_and_urls() {
        let text = "[submodule \"astropy_helpers\"]\n\tpath = astropy_helpers\n\turl = https://github.com/astropy/astropy-helpers.git\n\
                    [core]\n\tpath = not-a-submodule\n\
                    [submodule \"no-url\"]\n\tpath = x\n\
                    [submodule \"b\"]\n  url = \"git@github.com:o/b\"\n  path = vendor/b\n";
        assert_eq!(
            parse_gitmodules(text),
            vec![
                Submodule {
                    path: "astropy_helpers".into(),
                    url: "https://github.com/astropy/astropy-helpers.git".into()
                },
                Submodule {
                    path: "vendor/b".into(),
                    url: "git@github.com:o/b".into()
                },
            ]
        );
        assert!(parse_gitmodules("").is_empty());
    }

    #[test]
    fn github_urls_name_their_repository() {
        for url in [
            "https://github.com/astropy/astropy-helpers.git",
            "https://github.com/astropy/astropy-helpers",
            "git://github.com/astropy/astropy-helpers.git",
            "git@github.com:astropy/astropy-helpers.git",
            "ssh://git@github.com/astropy/astropy-helpers/",
        ] {
            assert_eq!(
                github_repo(url).as_deref(),
                Some("astropy/astropy-helpers"),
                "{url}"
            );
        }
        for url in [
            "https://gitlab.com/a/b.git",
            "https://github.com/only-owner",
            "https://github.com/a/b/c",
            "../relative.git",
        ] {
            assert_eq!(github_repo(url), None, "{url}");
        }
    }
}
