//! Peak memory of `swtbench run` on the fixture benchmark (`fixtures/benchmark`), one instance
//! (`swtfix__calc-1`, six runs), in two cases that once cost gigabytes:
//!
//! - `big-patch`: a prediction whose `model_patch` is 50 MB (a test file behind 50 MB of comment
//!   lines; `SWTBENCH_BENCH_PATCH_MB` changes the size);
//! - `loud-output`: a test that prints 500 MB (`SWTBENCH_BENCH_OUTPUT_MB`), with `--max-output 0`
//!   so that all of it is kept.
//!
//! Prints, per case, the peak resident set size of the `swtbench` process (the kernel's `VmHWM`
//! high-water mark) and the wall time. Target: under 300 MB for both. Run with
//! `cargo bench -p swtbench --bench memory` (release build); needs Docker and the fixture base
//! image (`scripts/base-image`), and builds the fixture images like the engine tests (kept, for
//! them). Without an engine it says why and measures nothing.

#![allow(clippy::print_stderr, clippy::print_stdout, clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Instant;

#[path = "../tests/engine_fixture/mod.rs"]
mod engine_fixture;
#[path = "../tests/support/memory.rs"]
mod memory;

fn env_mb(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if let Some(why) = engine_fixture::engine_missing() {
        eprintln!("memory bench skipped: {why}");
        return;
    }
    let bin = PathBuf::from(engine_fixture::bin());
    let fx = engine_fixture::Fixture::new();
    let tmp = &fx.root;
    let cases: [(&str, String, Vec<&str>); 2] = [
        (
            "big-patch",
            memory::big_patch_prediction(&fx, env_mb("SWTBENCH_BENCH_PATCH_MB", 50) << 20),
            vec![],
        ),
        (
            "loud-output",
            memory::loud_prediction(&fx, env_mb("SWTBENCH_BENCH_OUTPUT_MB", 500) << 20),
            vec!["--max-output", "0"],
        ),
    ];
    println!("peak RSS of `swtbench run` (one instance, six runs):");
    for (name, predictions, extra) in cases {
        let out_dir = tmp.join(format!("out-{name}"));
        let run_id = format!("bench-memory-{name}-{}", std::process::id());
        let started = Instant::now();
        let (status, peak) =
            memory::run_measured(&bin, &fx, &predictions, &run_id, &out_dir, &extra);
        let secs = started.elapsed().as_secs_f64();
        let left = engine_fixture::containers_of(&run_id);
        assert!(left.is_empty(), "{name}: containers left: {left:?}");
        println!(
            "  {name:<12} peak RSS {:>7.1} MB   {secs:>6.1} s   exit {}",
            peak as f64 / (1 << 20) as f64,
            status
        );
        let _ = std::fs::remove_dir_all(&out_dir);
    }
}
