//! Starting the `swtbench` binary from a test, the one way: with a hermetic environment.
//!
//! A test's `swtbench` sees only what the test gives it, not the developer's shell: its own
//! `HOME` (so no `~/.docker/config.json`, `~/.cache/swtbench` or Hugging Face token of the
//! machine), no `XDG_*`, `SWTBENCH_*`, `HF_*`, `DOCKER_CONFIG` or proxy variables. What passes:
//! `PATH` and `TMPDIR`; `DOCKER_HOST`, the engine under test, which the tests' own `docker` calls
//! use too; `SWTBENCH_NO_NETWORK` from `.cargo/config.toml` (fixture evaluations stay off the
//! internet); `SLURM_CONF` when the suite started a cluster. A test that needs more sets it on the
//! command, as it would for any other variable.
//!
//! Builds of real images need the package index: [`engine_command`] adds the machine's proxy and
//! CA-bundle variables, which image builds pass on (and nothing else reads).
#![allow(dead_code)] // each test module uses part of it

use std::path::PathBuf;
use std::process::Command;

/// The variables a test's `swtbench` inherits from the test process.
const PASSED: &[&str] = &[
    "PATH",
    "TMPDIR",
    "DOCKER_HOST",
    "SWTBENCH_NO_NETWORK",
    "SLURM_CONF",
];

/// Proxy and CA-bundle variables, for commands that build images from the package index.
const BUILD_NETWORK: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "PIP_CERT",
];

/// The path of the binary under test.
pub fn bin_path() -> &'static str {
    env!("CARGO_BIN_EXE_swtbench")
}

/// The home directory of every `swtbench` the tests start: one per build directory, shared by the
/// tests (as a user's home is shared by their runs), empty of the machine's settings.
pub fn test_home() -> PathBuf {
    let home = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("swtbench-test-home");
    std::fs::create_dir_all(&home).unwrap();
    home
}

/// Makes `cmd` (the binary, or a wrapper such as `flock` that starts it) hermetic.
pub fn hermetic(cmd: &mut Command) -> &mut Command {
    cmd.env_clear();
    for name in PASSED {
        if let Some(v) = std::env::var_os(name) {
            cmd.env(name, v);
        }
    }
    cmd.env("HOME", test_home())
}

/// Adds the machine's proxy and CA-bundle variables to `cmd`, for image builds.
pub fn with_build_network(cmd: &mut Command) -> &mut Command {
    for name in BUILD_NETWORK {
        if let Some(v) = std::env::var_os(name) {
            cmd.env(name, v);
        }
    }
    cmd
}

/// `swtbench`, hermetic: for the tests that need no engine.
pub fn command() -> Command {
    let mut cmd = Command::new(bin_path());
    hermetic(&mut cmd);
    cmd
}

/// `swtbench`, hermetic, with what image builds need from the machine: for engine tests.
pub fn engine_command() -> Command {
    let mut cmd = command();
    with_build_network(&mut cmd);
    cmd
}
