//! Helpers shared by the integration tests: fixture paths, real git repositories in temporary
//! directories, interpreters from pyenv.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use swtbench_extract::{HostPython, MemorySource};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every file under `dir`, keyed by its `/`-separated relative path.
pub fn read_tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

pub fn memory_source(files: &BTreeMap<String, String>) -> MemorySource {
    files.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

pub fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args([
            "-c",
            "user.name=swtbench",
            "-c",
            "user.email=swtbench@example.invalid",
        ])
        .args(["-c", "core.autocrlf=false", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A git work tree holding `files`, committed; returns the directory and the commit id.
pub fn git_repo(files: &BTreeMap<String, String>) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
    }
    assert!(git(dir.path(), &["init", "-q"]).status.success());
    assert!(git(dir.path(), &["add", "-A"]).status.success());
    assert!(git(dir.path(), &["commit", "-qm", "base"]).status.success());
    let head = git(dir.path(), &["rev-parse", "HEAD"]);
    let commit = String::from_utf8(head.stdout).unwrap().trim().to_string();
    (dir, commit)
}

/// Runs real `git apply --check` and `git apply` with `patch` on a fresh repository holding
/// `files`; returns the resulting content of every path in `paths`, or git's error.
pub fn git_apply(
    files: &BTreeMap<String, String>,
    patch: &str,
    paths: &[String],
) -> Result<BTreeMap<String, Option<String>>, String> {
    let (dir, _) = git_repo(files);
    let patch_file = dir.path().join(".swtbench-test.diff");
    std::fs::write(&patch_file, patch).unwrap();
    for args in [
        &["apply", "--check", ".swtbench-test.diff"][..],
        &["apply", ".swtbench-test.diff"][..],
    ] {
        let out = git(dir.path(), args);
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
    }
    Ok(paths
        .iter()
        .map(|p| (p.clone(), std::fs::read_to_string(dir.path().join(p)).ok()))
        .collect())
}

/// The interpreter of the first installed pyenv version starting with `prefix`.
pub fn python(prefix: &str) -> Option<HostPython> {
    let root = HostPython::pyenv_root(|k| std::env::var_os(k))?;
    HostPython::pyenv_versions(&root, prefix)
        .into_iter()
        .next()
        .map(|(_, p)| p)
}
