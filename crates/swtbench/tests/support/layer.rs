//! What an engine-layer test (real Docker, the local registry, Slurm) does when what it needs is
//! missing here: it skips, saying why on a `SKIPPED: <why>` line (scripts/test counts those), unless
//! the engine layer is required (`SWTBENCH_REQUIRE_ENGINE=1`, which scripts/test sets when it
//! prepared the engine); then it fails.
#![allow(dead_code, clippy::print_stderr)]

/// The switch that makes the engine layer required.
pub const REQUIRE_ENGINE: &str = "SWTBENCH_REQUIRE_ENGINE";

/// Whether the engine layer must run here.
pub fn engine_required() -> bool {
    std::env::var(REQUIRE_ENGINE).is_ok_and(|v| v == "1")
}

/// Skips the calling test (it returns next), or fails it when the engine layer is required.
pub fn skip(why: &str) {
    assert!(
        !engine_required(),
        "{why} ({REQUIRE_ENGINE}=1: the engine layer is required here)"
    );
    eprintln!("SKIPPED: {why}");
}
