#![allow(dead_code)] // each test file uses part of it

//! What the command-line tests share: the workspace, the fixture benchmark made in a directory
//! (dataset, predictions, mirrors), and running the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The fixture benchmark (dataset, predictions, mirrors) in `dir/fx`.
pub fn make_fixture(dir: &Path) -> PathBuf {
    let fx = dir.join("fx");
    let made = Command::new("python3")
        .arg(workspace().join("fixtures/benchmark/make_benchmark.py"))
        .arg(&fx)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    fx
}

/// `swtbench ARGS` in `cwd`, started hermetic (`support/binary.rs`: no mirror, cache or settings
/// from the machine's environment).
pub fn swtbench<S: AsRef<std::ffi::OsStr>>(args: &[S], cwd: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// An engine endpoint that does not exist: a command-line test that must not depend on what the
/// machine's engine holds (its images, its networks) gives it as `DOCKER_HOST`.
pub const NO_ENGINE: &str = "unix:///nonexistent/swtbench-test-no-engine.sock";

/// [`swtbench`] with [`NO_ENGINE`]: what the command does on a machine without a container engine,
/// whatever this machine has.
pub fn swtbench_without_engine<S: AsRef<std::ffi::OsStr>>(args: &[S], cwd: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .current_dir(cwd)
        .env("DOCKER_HOST", NO_ENGINE)
        .output()
        .unwrap()
}

/// `--dataset`, `--instance-ids IDS`, `--repo-mirror` and `--spec-table` of the fixture benchmark
/// made in `fx` ([`make_fixture`]).
pub fn fixture_selection(fx: &Path, ids: &str) -> Vec<String> {
    vec![
        "--dataset".into(),
        fx.join("dataset.jsonl").display().to_string(),
        "--instance-ids".into(),
        ids.into(),
        "--repo-mirror".into(),
        fx.join("mirrors").display().to_string(),
        "--spec-table".into(),
        workspace()
            .join("fixtures/benchmark/spec-table.toml")
            .display()
            .to_string(),
    ]
}
