//! How long SWT-Bench Full (1,983 instances, 6 runs each) takes on 1 to 256 test containers, with
//! images built on every node or pulled prebuilt from a registry: a simulation over the
//! scheduler's own pieces (the split of `--shard`, the order of instances, the estimates), fed
//! with measured test durations. Used by `docs/distributed.md`.
//!
//! ```text
//! cargo run --release -p swtbench-runner --example makespan -- [LOGS_DIR]
//! ```
//!
//! `LOGS_DIR` is a directory of real evaluation logs (`<instance>.<system>.eval.log`, e.g.
//! `shared/data/logs/old_harness_swebench_docker`): an instance of a repository takes, for each
//! of its runs, the test time one of that repository's logs reports (the logs in turn, so the
//! spread of real durations is kept, long tails included). Without it every instance takes its
//! repository's median (`assets/scheduling/run-secs.tsv`).
//!
//! The model, per node (a shard of the split, one per node, as the cluster jobs run them):
//! images become ready through `BUILD_WORKERS` slots in the schedule order (an env image the node
//! has not built yet, 10 min, then the instance image, 2½ min; or their pulls), and each ready
//! instance's six runs go to the node's container slots, the longest waiting run first. The
//! makespan is the last node's end plus the merge.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::path::Path;

use swtbench_plan::schedule::{
    order_instances, partition, partition_grouped, repo_run_secs, GroupedCost, InstanceCost,
    ENV_BUILD_SECS, INSTANCE_BUILD_SECS, RUN_OVERHEAD_SECS,
};

/// SWT-Bench Full per repository: instances (SWE-bench's full test split less the SWT-Bench
/// filter list `assets/swt-filters/full.txt`) and (repo, version) env images (the versions of
/// the spec table `assets/spec-table/swtbench.toml`; instances are spread evenly over them).
const FULL: [(&str, usize, usize); 12] = [
    ("astropy/astropy", 84, 16),
    ("django/django", 783, 18),
    ("matplotlib/matplotlib", 176, 17),
    ("mwaskom/seaborn", 22, 3),
    ("pallets/flask", 4, 4),
    ("psf/requests", 27, 27),
    ("pydata/xarray", 91, 7),
    ("pylint-dev/pylint", 43, 10),
    ("pytest-dev/pytest", 85, 16),
    ("scikit-learn/scikit-learn", 206, 5),
    ("sphinx-doc/sphinx", 116, 30),
    ("sympy/sympy", 346, 14),
];

const RUNS: usize = 6;
const TIMEOUT_SECS: f64 = 1800.0;
/// Containers per node (workers = nodes × this); one node below that.
const CONTAINERS_PER_NODE: usize = 8;
/// `--build-workers`: image builds (or pulls) at once per node.
const BUILD_WORKERS: usize = 2;

/// Prebuilt images: what a node pulls. An instance image is ~1.2 GB, of which the base and env
/// layers (~0.8 GB) are shared by every instance of the env and pulled once per node.
const INSTANCE_LAYER_GB: f64 = 0.4;
const ENV_LAYERS_GB: f64 = 0.8;
/// The registry's egress, shared by every node pulling (10 Gbit/s), and one node's link.
const REGISTRY_GBPS: f64 = 1.25;
const NODE_GBPS: f64 = 1.25;
/// Unpacking a pulled layer (gzip, one thread per layer): GB/s.
const EXTRACT_GBPS: f64 = 0.15;

/// Shared file system metadata operations per run (lock file open/flock/close, key file written
/// under a temporary name and renamed, `.done` pointer linked, log and output files created,
/// directory look-ups) and per instance (report.json, the instance's directory).
const META_OPS_PER_RUN: f64 = 30.0;
const META_OPS_PER_INSTANCE: f64 = 15.0;

/// The merge: one process reads every instance's outputs on the shared file system and writes the
/// reports (assumed 20 ms per instance over NFS).
const MERGE_SECS_PER_INSTANCE: f64 = 0.02;

#[derive(Debug, Clone)]
struct Instance {
    id: String,
    env: String,
    /// Seconds of one run, overhead included.
    run_secs: f64,
}

/// Test times per repository from the logs, in file name order.
fn measured(dir: &Path) -> BTreeMap<String, Vec<f64>> {
    let mut files = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(".eval.log") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut by_repo: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let id = name.split('.').next().unwrap_or_default();
        let Some((owner, rest)) = id.split_once("__") else {
            continue;
        };
        let repo = format!("{owner}/{}", rest.rsplit_once('-').map_or(rest, |r| r.0));
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        if let Some(secs) = reported_secs(&text) {
            by_repo.entry(repo).or_default().push(secs);
        }
    }
    by_repo
}

/// The longest time a test runner's summary line reports: pytest's `== … in 1.23s ==`,
/// unittest's `Ran N tests in 1.23s`, sympy's `… in 1.23 seconds` (as the import of
/// `run-secs.tsv` reads them).
fn reported_secs(text: &str) -> Option<f64> {
    let mut best: Option<f64> = None;
    for line in text.lines() {
        let candidate = if line.starts_with('=') || line.starts_with("Ran ") {
            line.rsplit_once(" in ")
                .and_then(|(_, t)| t.split('s').next())
                .and_then(|t| t.trim().parse::<f64>().ok())
        } else {
            line.rsplit_once(" in ")
                .and_then(|(_, t)| t.strip_suffix(" seconds"))
                .and_then(|t| t.trim().parse::<f64>().ok())
        };
        if let Some(s) = candidate {
            best = Some(best.map_or(s, |b: f64| b.max(s)));
        }
    }
    best
}

fn instances(measured: &BTreeMap<String, Vec<f64>>) -> Vec<Instance> {
    let mut out = vec![];
    for (repo, count, envs) in FULL {
        let median = repo_run_secs(repo).unwrap_or(10.0);
        for i in 0..count {
            let test = measured
                .get(repo)
                .filter(|v| !v.is_empty())
                .map_or(median, |v| v[i % v.len()]);
            out.push(Instance {
                id: format!("{}-{i:04}", repo.replace('/', "__")),
                env: format!("{repo}@{}", i % envs),
                run_secs: (test + RUN_OVERHEAD_SECS).min(TIMEOUT_SECS),
            });
        }
    }
    out
}

#[derive(Debug, Clone, Copy)]
struct Setup {
    nodes: usize,
    containers: usize,
    prebuilt: bool,
    /// Split whole envs (their instances together) instead of instances.
    by_env: bool,
}

#[derive(Debug, Default)]
struct Outcome {
    makespan: f64,
    /// The busiest node's image work (builds or pulls), and its run work over its containers.
    image_secs: f64,
    run_secs: f64,
    bytes_gb: f64,
    env_images: usize,
}

/// One node: its instances in the schedule order; returns (end, image work, env images made).
fn node(instances: &[&Instance], setup: Setup, pull_gbps: f64) -> (f64, f64, usize, f64) {
    let costs: Vec<InstanceCost> = instances
        .iter()
        .map(|i| {
            let ms = (i.run_secs * 1000.0) as u64;
            InstanceCost::new(&[ms; RUNS], !setup.prebuilt, !setup.prebuilt)
        })
        .collect();
    let order = order_instances(&costs);
    // Images: BUILD_WORKERS slots, each image in turn on the first free one.
    let mut slots = vec![0.0f64; BUILD_WORKERS];
    let mut env_ready: BTreeMap<&str, f64> = BTreeMap::new();
    let mut image_work = 0.0;
    let mut bytes = 0.0;
    let per_pull_gbps = (pull_gbps / BUILD_WORKERS as f64).min(EXTRACT_GBPS);
    let take = |after: f64, secs: f64, slots: &mut Vec<f64>| -> f64 {
        let (k, free) = slots
            .iter()
            .copied()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        let end = free.max(after) + secs;
        slots[k] = end;
        end
    };
    let mut ready = vec![0.0; instances.len()];
    for &i in &order {
        let inst = instances[i];
        let env_at = match env_ready.get(inst.env.as_str()) {
            Some(&t) => t,
            None => {
                let secs = if setup.prebuilt {
                    ENV_LAYERS_GB / per_pull_gbps
                } else {
                    ENV_BUILD_SECS
                };
                bytes += if setup.prebuilt { ENV_LAYERS_GB } else { 0.0 };
                image_work += secs;
                let t = take(0.0, secs, &mut slots);
                env_ready.insert(&inst.env, t);
                t
            }
        };
        let secs = if setup.prebuilt {
            bytes += INSTANCE_LAYER_GB;
            INSTANCE_LAYER_GB / per_pull_gbps
        } else {
            INSTANCE_BUILD_SECS
        };
        image_work += secs;
        ready[i] = take(env_at, secs, &mut slots);
    }
    // Runs: container slots, the longest waiting run first.
    let mut runs: Vec<(f64, f64)> = order
        .iter()
        .flat_map(|&i| std::iter::repeat_n((ready[i], instances[i].run_secs), RUNS))
        .collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut free: BinaryHeap<Reverse<u64>> = (0..setup.containers).map(|_| Reverse(0)).collect();
    let mut waiting: BinaryHeap<(u64, Reverse<usize>)> = BinaryHeap::new();
    let ms = |s: f64| (s * 1000.0) as u64;
    let (mut next, mut end) = (0, 0u64);
    while next < runs.len() || !waiting.is_empty() {
        let Reverse(t) = free.pop().unwrap();
        while next < runs.len() && ms(runs[next].0) <= t {
            waiting.push((ms(runs[next].1), Reverse(next)));
            next += 1;
        }
        match waiting.pop() {
            Some((d, _)) => {
                end = end.max(t + d);
                free.push(Reverse(t + d));
            }
            // Nothing ready: the slot waits for the next image.
            None => free.push(Reverse(ms(runs[next].0))),
        }
    }
    (end as f64 / 1000.0, image_work, env_ready.len(), bytes)
}

fn simulate(all: &[Instance], setup: Setup) -> Outcome {
    // The split of `--shard`: expected work per instance (builds + runs, as the plan counts).
    let costs: Vec<(&str, u64)> = all
        .iter()
        .map(|i| {
            let runs = (i.run_secs * 1000.0) as u64 * RUNS as u64;
            let builds = if setup.prebuilt {
                0
            } else {
                ((ENV_BUILD_SECS + INSTANCE_BUILD_SECS) * 1000.0) as u64
            };
            (i.id.as_str(), runs + builds)
        })
        .collect();
    let shard_of = if setup.by_env {
        // What `run --shard` does: an env's instances stay together (its build paid once)
        // unless they are more than a shard's share (`partition_grouped`).
        let env_ms = if setup.prebuilt {
            0
        } else {
            (ENV_BUILD_SECS * 1000.0) as u64
        };
        let items: Vec<GroupedCost> = all
            .iter()
            .zip(&costs)
            .map(|(i, (id, ms))| GroupedCost {
                id,
                group: Some(i.env.as_str()),
                ms: ms - env_ms,
                group_ms: env_ms,
            })
            .collect();
        partition_grouped(&items, setup.nodes)
    } else {
        partition(&costs, setup.nodes)
    };
    // Every node pulls at once: each gets its share of the registry, at most its own link.
    let pull_gbps = (REGISTRY_GBPS / setup.nodes as f64).min(NODE_GBPS);
    let mut out = Outcome::default();
    for k in 0..setup.nodes {
        let mine: Vec<&Instance> = all
            .iter()
            .zip(&shard_of)
            .filter(|(_, s)| **s == k)
            .map(|(i, _)| i)
            .collect();
        let (end, image, envs, gb) = node(&mine, setup, pull_gbps);
        out.env_images += envs;
        out.bytes_gb += gb;
        if end > out.makespan {
            out.makespan = end;
            out.image_secs = image / BUILD_WORKERS as f64;
            out.run_secs = mine.iter().map(|i| i.run_secs * RUNS as f64).sum::<f64>()
                / setup.containers as f64;
        }
    }
    out.makespan += MERGE_SECS_PER_INSTANCE * all.len() as f64;
    out
}

fn hours(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.0} min", s / 60.0)
    }
}

fn main() {
    let measured = std::env::args_os()
        .nth(1)
        .map(|d| measured(Path::new(&d)))
        .unwrap_or_default();
    let all = instances(&measured);
    let logs: usize = measured.values().map(Vec::len).sum();
    let run_work: f64 = all.iter().map(|i| i.run_secs * RUNS as f64).sum();
    let longest = all.iter().map(|i| i.run_secs).fold(0.0, f64::max);
    let envs: BTreeSet<&str> = all.iter().map(|i| i.env.as_str()).collect();
    println!(
        "{} instances × {RUNS} runs, {} env images; run durations from {} ({logs} logs); \
         all runs {:.1} h of container time; longest run {:.0} s",
        all.len(),
        envs.len(),
        if logs > 0 {
            "real logs"
        } else {
            "repository medians"
        },
        run_work / 3600.0,
        longest
    );
    println!();
    println!(
        "| workers | nodes × containers | images, split | makespan | busiest node: images / build slots | its runs / containers | env images made (all nodes) | pulled | FS metadata ops/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let meta_ops = all.len() as f64 * (RUNS as f64 * META_OPS_PER_RUN + META_OPS_PER_INSTANCE);
    for workers in [1usize, 8, 64, 256, 1024] {
        let (nodes, containers) = if workers <= CONTAINERS_PER_NODE {
            (1, workers)
        } else {
            (workers / CONTAINERS_PER_NODE, CONTAINERS_PER_NODE)
        };
        for (prebuilt, by_env) in [(false, false), (false, true), (true, false), (true, true)] {
            if workers == 1 && by_env {
                continue;
            }
            let o = simulate(
                &all,
                Setup {
                    nodes,
                    containers,
                    prebuilt,
                    by_env,
                },
            );
            println!(
                "| {workers} | {nodes} × {containers} | {} | {} | {} | {} | {} | {} | {:.0} |",
                match (prebuilt, by_env) {
                    (false, false) => "built",
                    (false, true) => "built, split by env",
                    (true, false) => "prebuilt (pulled)",
                    (true, true) => "prebuilt, split by env",
                },
                hours(o.makespan),
                hours(o.image_secs),
                hours(o.run_secs),
                o.env_images,
                if prebuilt {
                    format!("{:.0} GB", o.bytes_gb)
                } else {
                    "–".to_string()
                },
                meta_ops / o.makespan
            );
        }
    }
    println!();
    println!(
        "merge: {:.0} s (assumed {:.0} ms per instance); lower bound of any setup: the longest \
         instance, {:.0} s of runs after its images",
        MERGE_SECS_PER_INSTANCE * all.len() as f64,
        MERGE_SECS_PER_INSTANCE * 1000.0,
        longest
    );
}
