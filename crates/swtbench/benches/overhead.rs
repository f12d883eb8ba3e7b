//! The harness's own time per run on the fixture benchmark: the `overhead_ms` of every executed
//! run's `run_finished` event (container created → files in, started, the evidence hook, the eval
//! script's end → exit code, limit counters and evidence read, outputs written; the container's
//! removal runs in the background), with the defaults a user gets (evidence on, the default
//! limits, the isolated network under `--no-network` when `SWTBENCH_BENCH_NETWORK=isolated`).
//!
//! Every instance of the fixture but the hanging one, the fixture's model predictions (gold, base
//! and prediction runs all execute), `SWTBENCH_BENCH_WORKERS` workers (default 4), repeated
//! `SWTBENCH_BENCH_REPEATS` times (default 3) with a timeout one second longer each time, so that
//! every run has a new key and executes again on images already built. Prints per repeat and over
//! all of them: the executed runs, the median, 90th percentile and largest overhead, for all runs
//! and for the gold runs alone (target: median ≤ 300 ms). `SWTBENCH_BENCH_BASELINE=/path/to/swtbench`
//! measures another binary the same way first (before/after figures).
//!
//! Run with `cargo bench -p swtbench --bench overhead` on a quiet machine; needs Docker and the
//! fixture base image (`scripts/base-image`); builds the fixture images like the engine tests.

#![allow(clippy::print_stderr, clippy::print_stdout, clippy::unwrap_used)]

use std::path::Path;

#[path = "../tests/engine_fixture/mod.rs"]
mod engine_fixture;

use engine_fixture::{events, Fixture};

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// The overhead of each executed run: (run kind, milliseconds).
fn overheads(out_dir: &Path) -> Vec<(String, u64)> {
    events(out_dir)
        .iter()
        .filter(|e| e["event"] == "run_finished" && e["result"]["kind"] == "executed")
        .map(|e| {
            (
                e["run"].as_str().unwrap_or_default().to_string(),
                e["result"]["overhead_ms"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn describe(ms: &mut [u64]) -> String {
    if ms.is_empty() {
        return "no executed runs".to_string();
    }
    ms.sort_unstable();
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    format!(
        "{:>3} runs, median {:>4} ms, p90 {:>4} ms, max {:>5} ms",
        ms.len(),
        at(0.5),
        at(0.9),
        ms[ms.len() - 1]
    )
}

fn measure(name: &str, bin: &Path, fx: &Fixture, workers: &str, repeats: u64) -> Vec<u64> {
    let ids = fx.ids_without_hanging();
    let mut all = Vec::new();
    let mut gold_all = Vec::new();
    for k in 0..repeats {
        let out = fx.root.join(format!("out-{name}-{k}"));
        let run_id = format!("bench-overhead-{name}-{}-{k}", std::process::id());
        let timeout = (30 + k).to_string();
        let mut cmd = fx.bench_run(bin, &run_id, &out);
        cmd.args(["--instance-ids", &ids, "--max-workers", workers])
            .args(["--timeout", &timeout]);
        if env_or("SWTBENCH_BENCH_NETWORK", "isolated") == "isolated" {
            cmd.arg("--no-network");
        }
        let status = cmd.status().unwrap();
        let runs = overheads(&out);
        let mut ms: Vec<u64> = runs.iter().map(|(_, ms)| *ms).collect();
        let mut gold: Vec<u64> = runs
            .iter()
            .filter(|(run, _)| run.starts_with("gold"))
            .map(|(_, ms)| *ms)
            .collect();
        println!(
            "  {name} #{k} (exit {}): all: {}; gold: {}",
            status.code().unwrap_or(-1),
            describe(&mut ms.clone()),
            describe(&mut gold.clone())
        );
        let left = engine_fixture::containers_of(&run_id);
        assert!(left.is_empty(), "{run_id}: containers left: {left:?}");
        all.append(&mut ms);
        gold_all.append(&mut gold);
    }
    println!(
        "  {name}, all repeats: all: {}; gold: {}",
        describe(&mut all.clone()),
        describe(&mut gold_all)
    );
    all
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if let Some(why) = engine_fixture::engine_missing() {
        eprintln!("overhead bench skipped: {why}");
        return;
    }
    let fx = Fixture::new();
    fx.ensure_images();
    let workers = env_or("SWTBENCH_BENCH_WORKERS", "4");
    let repeats: u64 = env_or("SWTBENCH_BENCH_REPEATS", "3").parse().unwrap();
    println!(
        "harness overhead per run, fixture benchmark without the hanging instance, {workers} workers, \
         {repeats} repeats, network {}:",
        env_or("SWTBENCH_BENCH_NETWORK", "isolated")
    );
    if let Ok(baseline) = std::env::var("SWTBENCH_BENCH_BASELINE") {
        measure("baseline", Path::new(&baseline), &fx, &workers, repeats);
    }
    let mut all = measure(
        "this",
        Path::new(engine_fixture::bin()),
        &fx,
        &workers,
        repeats,
    );
    all.sort_unstable();
    let median = all.get(all.len() / 2).copied().unwrap_or_default();
    println!(
        "target (median ≤ 300 ms): {} ({median} ms)",
        if median <= 300 { "met" } else { "NOT MET" }
    );
}
