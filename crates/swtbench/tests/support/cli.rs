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

/// `swtbench ARGS` in `cwd`, without a mirror from the environment.
pub fn swtbench<S: AsRef<std::ffi::OsStr>>(args: &[S], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_swtbench"))
        .args(args)
        .current_dir(cwd)
        .env_remove("SWTBENCH_REPO_MIRROR")
        .output()
        .unwrap()
}
