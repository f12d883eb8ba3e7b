//! What the test modules of `tests/it` share, declared once in `tests/it/main.rs` as `support`.
//! The benches include `memory.rs` (and `tests/engine_fixture`) by path.

pub mod cli;
pub mod memory;
pub mod registry;
// The engine layer's skip rule: loaded once, by the engine fixture (which the benches include).
pub use crate::engine_fixture::layer;
// Starting the binary with a hermetic environment: loaded once, by the engine fixture too.
pub use crate::engine_fixture::binary;
// The backend's Unix-socket proxy in front of the engine, which can stop answering.
#[path = "../../../swtbench-backend/tests/support/socket_proxy.rs"]
pub mod socket_proxy;
// A real PostgreSQL server started by the test (the service's queue shared by workers).
#[path = "../../../swtbench-service/tests/support/postgres.rs"]
pub mod postgres;

/// Runs `git ARGS` in `dir` without the user's or the system's configuration (a fixed author):
/// its trimmed standard output; a failure fails the test with git's message.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
