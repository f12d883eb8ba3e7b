//! Wall time of `swtbench run` on the fixture benchmark (`fixtures/benchmark`: 10 instances, 40
//! runs, one prediction whose tests hang into the 20 s timeout before and after the fix) against
//! its longest single chain: an instance's image builds plus its longest run (the run's test time
//! and its container overhead, as its `run_finished` event reports them).
//!
//! Two cases, one output directory:
//!
//! - `first run`: nothing recorded; enough workers for every run at once
//!   (`SWTBENCH_BENCH_WORKERS`, default 40, with `--memory 512m` so that the host's memory holds
//!   them all);
//! - `recorded`: the same again with another timeout (21 s: new keys, every run executes again)
//!   and `SWTBENCH_BENCH_RECORDED_WORKERS` (default 8) containers: the durations the first run
//!   recorded put the hanging runs first.
//!
//! `SWTBENCH_BENCH_BASELINE=/path/to/swtbench` runs the first case with another binary too (an
//! earlier version, for before/after figures). `SWTBENCH_BENCH_COLD=1` adds a first case with
//! `--force-rebuild` (the chain then includes the env and instance image builds).
//!
//! Prints per case the wall time, the longest chain and their ratio (target: within 10 %), the
//! peak number of test containers at once, and swtbench's peak resident set size. Run with
//! `cargo bench -p swtbench --bench schedule`; needs Docker and the fixture base image
//! (`scripts/base-image`); builds the fixture images like the engine tests (kept, for them).

#![allow(clippy::print_stderr, clippy::print_stdout, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

#[path = "../tests/engine_fixture/mod.rs"]
mod engine_fixture;
#[path = "../tests/support/memory.rs"]
mod memory;

use engine_fixture::{events, Fixture};

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

struct Measured {
    wall_s: f64,
    chain_s: f64,
    chain_of: String,
    peak_containers: usize,
    peak_rss: u64,
    exit: i32,
}

/// The longest chain of the events: per instance, the builds announced for it plus its longest
/// executed run; and the peak number of runs executing at once.
fn chain_and_peak(ev: &[Value]) -> (f64, String, usize) {
    let mut build_ms: BTreeMap<String, u64> = BTreeMap::new();
    let mut built_by: BTreeMap<String, String> = BTreeMap::new();
    let mut chains: BTreeMap<String, u64> = BTreeMap::new();
    let mut edges: Vec<(u64, i32)> = Vec::new();
    let mut started: BTreeMap<(String, String), u64> = BTreeMap::new();
    for e in ev {
        let id = e["instance_id"].as_str().unwrap_or_default().to_string();
        match e["event"].as_str().unwrap_or_default() {
            "image_build_started" => {
                built_by.insert(e["tag"].as_str().unwrap().to_string(), id);
            }
            "image_ready" => {
                if let Some(ms) = e["outcome"]["duration_ms"].as_u64() {
                    build_ms.insert(e["tag"].as_str().unwrap().to_string(), ms);
                }
            }
            "instance_phase" if e["phase"]["kind"] == "running" => {
                let run = e["phase"]["run"].as_str().unwrap().to_string();
                started.insert((id, run), e["elapsed_ms"].as_u64().unwrap());
            }
            "run_finished" if e["result"]["kind"] == "executed" => {
                let r = &e["result"];
                let ms = r["duration_ms"].as_u64().unwrap() + r["overhead_ms"].as_u64().unwrap();
                let c = chains.entry(id.clone()).or_default();
                *c = (*c).max(ms);
                let run = e["run"].as_str().unwrap().to_string();
                if let Some(from) = started.get(&(id, run)) {
                    edges.push((*from, 1));
                    edges.push((e["elapsed_ms"].as_u64().unwrap(), -1));
                }
            }
            _ => {}
        }
    }
    // A build counts for the instance it was started for (the others waited for it too).
    for (tag, id) in &built_by {
        if let (Some(ms), Some(c)) = (build_ms.get(tag), chains.get_mut(id)) {
            *c += ms;
        }
    }
    edges.sort();
    let (mut now, mut peak) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    let (id, ms) = chains
        .into_iter()
        .max_by_key(|(_, ms)| *ms)
        .unwrap_or_default();
    (ms as f64 / 1000.0, id, peak as usize)
}

fn measure(bin: &Path, fx: &Fixture, out_dir: &Path, run_id: &str, extra: &[&str]) -> Measured {
    let started = Instant::now();
    let child = fx
        .bench_run(bin, run_id, out_dir)
        .args(extra)
        .spawn()
        .unwrap();
    let (exit, peak_rss) = memory::peak_of(child);
    let wall_s = started.elapsed().as_secs_f64();
    let ev = events(out_dir);
    let _ = std::fs::rename(
        out_dir.join("events.jsonl"),
        out_dir.join(format!("events-{run_id}.jsonl")),
    );
    let (chain_s, chain_of, peak_containers) = chain_and_peak(&ev);
    let left = engine_fixture::containers_of(run_id);
    assert!(left.is_empty(), "{run_id}: containers left: {left:?}");
    Measured {
        wall_s,
        chain_s,
        chain_of,
        peak_containers,
        peak_rss,
        exit,
    }
}

fn print(name: &str, m: &Measured) {
    println!(
        "  {name:<22} wall {:>6.1} s   longest chain {:>6.1} s ({})   {:.3} ×   {} containers at \
         most   peak RSS {:>5.1} MB   exit {}",
        m.wall_s,
        m.chain_s,
        m.chain_of,
        m.wall_s / m.chain_s.max(0.001),
        m.peak_containers,
        m.peak_rss as f64 / (1 << 20) as f64,
        m.exit
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if let Some(why) = engine_fixture::engine_missing() {
        eprintln!("schedule bench skipped: {why}");
        return;
    }
    let bin = PathBuf::from(engine_fixture::bin());
    let fx = Fixture::new();
    let workers = env_or("SWTBENCH_BENCH_WORKERS", "40");
    let recorded_workers = env_or("SWTBENCH_BENCH_RECORDED_WORKERS", "8");
    let first: Vec<&str> = vec![
        "--timeout",
        "20",
        "--max-workers",
        &workers,
        "--memory",
        "512m",
    ];
    let pid = std::process::id();
    println!("fixture benchmark (10 instances, 40 runs, two of them hang into the timeout):");
    if std::env::var("SWTBENCH_BENCH_COLD").is_ok_and(|v| v == "1") {
        let out = fx.root.join("out-cold");
        let mut args = first.clone();
        args.push("--force-rebuild");
        print(
            "cold (images built)",
            &measure(&bin, &fx, &out, &format!("bench-cold-{pid}"), &args),
        );
    }
    if let Ok(baseline) = std::env::var("SWTBENCH_BENCH_BASELINE") {
        let out = fx.root.join("out-baseline");
        let m = measure(
            Path::new(&baseline),
            &fx,
            &out,
            &format!("bench-base-{pid}"),
            &first,
        );
        print("first run, baseline", &m);
    }
    let out = fx.root.join("out");
    let run_id = format!("bench-schedule-{pid}");
    let m1 = measure(&bin, &fx, &out, &run_id, &first);
    print("first run", &m1);
    let again = [
        "--timeout",
        "21",
        "--max-workers",
        &recorded_workers,
        "--memory",
        "512m",
    ];
    let m2 = measure(&bin, &fx, &out, &run_id, &again);
    print(&format!("recorded ({recorded_workers} workers)"), &m2);
    let met = |m: &Measured| m.wall_s <= m.chain_s * 1.10;
    println!(
        "target (wall within 10 % of the longest chain): first run {}, recorded {}",
        if met(&m1) { "met" } else { "NOT MET" },
        if met(&m2) { "met" } else { "NOT MET" }
    );
}
