//! The scheduler on a skewed workload: many short runs and a few long ones, on the fake engine
//! and the tokio clock (so the figures are the scheduler's alone, the same on every machine,
//! and a run of hours takes a second).
//!
//! The workload: `SWTBENCH_BENCH_INSTANCES` instances (default 48) of different commits, six
//! runs each, that take 5–40 s, except `SWTBENCH_BENCH_LONG` runs (default 5, spread over the
//! dataset's second half) that take 6–15 min; `SWTBENCH_BENCH_WORKERS` containers at once
//! (default 12). Durations come from a fixed seed. With the defaults the longest run is the
//! lower bound: what counts is that it starts first.
//!
//! Three figures, each against the lower bound max(longest run, all work / workers):
//!
//! - `first run`: nothing recorded yet, so every run of the repository has the same estimate
//!   (the runs side by side, instances in dataset order): nothing tells the long runs apart;
//! - `recorded`: the same work again after the first run recorded its durations (another
//!   timeout, so every run executes again): longest expected first. Target: within 15 %;
//! - `old order`: the former policy, simulated on the same durations: instances in dataset
//!   order on the workers, an instance's six runs one after the other.
//!
//! Run with `cargo bench -p swtbench-runner --bench schedule`; exits with 1 when the target is
//! missed.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use swtbench_backend::{FakeBackend, FakeExec};
use swtbench_core::{Instance, InstanceId, PatchLayout, Prediction, RunKind};
use swtbench_plan::{plan, PlanInput, RunSettings};
use swtbench_runner::events::RecordingSink;
use swtbench_runner::images::image_inventory;
use swtbench_runner::DiskOutputs;
use swtbench_runner::{Cancel, Evaluation};
use swtbench_spec::{Arch, ExecSpec, SpecTable, TableSyntax};

const TABLE: &str = r#"
[repos."acme/calc"]
test_command = "pytest -rA"
log_parser = "pytest"
[[repos."acme/calc".specs]]
versions = ["1.0"]
provider = "venv"
base_image = "acme-base:1"
install = "python -m pip install -e ."
"#;

const CODE: &str = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,2 +1,2 @@\n def sub(a, b):\n-    return a + b\n+    return a - b\n";
const GOLD_TESTS: &str = "diff --git a/tests/test_ops.py b/tests/test_ops.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_ops.py\n@@ -0,0 +1,2 @@\n+def test_sub():\n+    assert sub(3, 1) == 2\n";
const MODEL_TESTS: &str = "diff --git a/tests/test_model.py b/tests/test_model.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_model.py\n@@ -0,0 +1,2 @@\n+def test_model_sub():\n+    assert sub(5, 2) == 3\n";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small deterministic generator (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn secs(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

struct Workload {
    instances: Vec<Instance>,
    /// Seconds per (instance id, run name).
    secs: HashMap<(String, String), u64>,
}

fn workload(n: usize, long: usize) -> Workload {
    let mut rng = Lcg(20_261_202);
    let mut instances = Vec::new();
    let mut secs = HashMap::new();
    for i in 0..n {
        let id = format!("acme__calc-{i:04}");
        instances.push(
            Instance::from_row(
                &json!({
                    "instance_id": id, "repo": "acme/calc", "version": "1.0",
                    "base_commit": format!("{:040x}", i + 1),
                    "patch": CODE, "test_patch": GOLD_TESTS,
                }),
                PatchLayout::Swebench,
            )
            .unwrap(),
        );
        for kind in RunKind::ALL {
            secs.insert((id.clone(), kind.as_str().to_string()), rng.secs(5, 40));
        }
    }
    // The long runs, in the second half of the dataset, where the old order found them last.
    for k in 0..long {
        let i = n / 2 + (k * (n / 2)) / long.max(1);
        let id = format!("acme__calc-{i:04}");
        let kind = RunKind::ALL[k % 6].as_str().to_string();
        secs.insert((id, kind), rng.secs(360, 900));
    }
    Workload { instances, secs }
}

fn settings(dir: &std::path::Path, workers: usize, timeout: u64) -> RunSettings {
    let mut s = RunSettings::new("bench", dir);
    s.eval.coverage = false;
    s.exec.timeout = Duration::from_secs(timeout);
    s.max_workers = workers;
    s
}

/// Plans and runs the workload on `fake`; the wall time on the tokio clock.
async fn run(fake: &Arc<FakeBackend>, w: &Workload, st: &RunSettings) -> Duration {
    let mut table = SpecTable::embedded().clone();
    table.merge(
        SpecTable::parse(TABLE, "t.toml", TableSyntax::Toml, &|_| Err("no".into())).unwrap(),
    );
    let no_files = |_: &str, _: &str, _: &str| Ok(None);
    let specs: BTreeMap<_, _> = w
        .instances
        .iter()
        .map(|i| {
            let spec = ExecSpec::new(i, &table, Arch::X86_64, &no_files);
            (i.instance_id.to_string(), spec)
        })
        .collect();
    let predictions: BTreeMap<InstanceId, Prediction> = w
        .instances
        .iter()
        .map(|i| {
            let p = Prediction {
                instance_id: i.instance_id.clone(),
                model_name_or_path: "org/model".into(),
                model_patch: Some(MODEL_TESTS.to_string()),
            };
            (i.instance_id.clone(), p)
        })
        .collect();
    let tags: Vec<String> = specs
        .values()
        .filter_map(|s| s.as_ref().ok())
        .flat_map(|s| {
            [
                s.keys.base.clone(),
                s.keys.env.clone(),
                s.keys.instance.clone(),
            ]
        })
        .collect();
    let images = image_inventory(fake.as_ref(), tags).await.unwrap();
    let planned = plan(
        &PlanInput {
            settings: st,
            model: "org/model",
            instances: &w.instances,
            predictions: &predictions,
            specs: &specs,
            table: &table,
            images: &images,
            registry: None,
            prebuilt: None,
            tracer_sha256: None,
        },
        &DiskOutputs,
    );
    let eval = Evaluation {
        settings: st.clone(),
        plan: planned,
        instances: w
            .instances
            .iter()
            .map(|i| (i.instance_id.to_string(), i.clone()))
            .collect(),
        images,
        tracer: None,
        submitted_ids: predictions.keys().map(|k| k.to_string()).collect(),
        network: swtbench_backend::BuildNetwork::none(),
        shard_outcomes: None,
    };
    let started = tokio::time::Instant::now();
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        Cancel::new(),
    )
    .await;
    let wall = started.elapsed();
    assert_eq!(out.stats.errors, 0, "{:?}", out.warnings);
    assert_eq!(out.stats.runs_executed, w.instances.len() * 6);
    wall
}

/// The former policy: instances in dataset order on `workers` workers, runs one after another.
fn old_order(w: &Workload, workers: usize) -> u64 {
    let mut free = vec![0u64; workers.max(1)];
    for i in &w.instances {
        let id = i.instance_id.to_string();
        let total: u64 = RunKind::ALL
            .iter()
            .map(|k| w.secs[&(id.clone(), k.as_str().to_string())])
            .sum();
        let first = free.iter_mut().min().unwrap();
        *first += total;
    }
    free.into_iter().max().unwrap_or(0)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let n = env_usize("SWTBENCH_BENCH_INSTANCES", 48);
    let long = env_usize("SWTBENCH_BENCH_LONG", 5);
    let workers = env_usize("SWTBENCH_BENCH_WORKERS", 12);
    let w = workload(n, long);
    let total: u64 = w.secs.values().sum();
    let longest = w.secs.values().copied().max().unwrap_or(0);
    let bound = longest.max(total.div_ceil(workers as u64));
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let (first, recorded) = rt.block_on(async {
        let fake = Arc::new(FakeBackend::new());
        fake.add_image("acme-base:1", BTreeMap::new());
        let secs = w.secs.clone();
        fake.on_exec_with(move |ctx| {
            if !ctx.command_line().contains("eval.sh") {
                return None;
            }
            let label = |k: &str| ctx.spec.labels.get(k).cloned().unwrap_or_default();
            let key = (
                label(swtbench_backend::labels::INSTANCE_ID),
                label(swtbench_backend::labels::RUN),
            );
            let took = Duration::from_secs(*secs.get(&key)?);
            Some(FakeExec::ok("PASSED tests/test_model.py::test_model_sub\n").taking(took))
        });
        let first = run(&fake, &w, &settings(dir.path(), workers, 1000)).await;
        // Another timeout: new keys, every run executes again, with the durations recorded.
        let recorded = run(&fake, &w, &settings(dir.path(), workers, 1001)).await;
        (first, recorded)
    });
    let old = old_order(&w, workers);
    let ratio = |secs: u64| secs as f64 / bound as f64;
    println!(
        "skewed workload: {n} instances × 6 runs, {long} long; {workers} containers at once; \
         {total} s of work, longest run {longest} s; lower bound {bound} s"
    );
    for (name, secs) in [
        ("first run", first.as_secs()),
        ("recorded", recorded.as_secs()),
        ("old order (simulated)", old),
    ] {
        println!(
            "  {name:<22} {secs:>6} s   {:.3} × the lower bound",
            ratio(secs)
        );
    }
    let met = ratio(recorded.as_secs()) <= 1.15;
    println!(
        "target (recorded within 15 % of the lower bound): {}",
        if met { "met" } else { "NOT MET" }
    );
    if !met {
        std::process::exit(1);
    }
}
