//! The service's own share of a warm prediction's verdict latency: `swtbench serve` on the
//! fixture benchmark, one worker; each instance evaluated once first (images built, gold and base
//! runs stored), then `SWTBENCH_BENCH_PREDICTIONS` (default 10) new predictions of
//! `swtbench_bench_instance` (`SWTBENCH_BENCH_INSTANCE`, default swtfix__calc-1) submitted one
//! after the other through `POST /v1/evaluations?wait=120`, each a different patch (its test
//! renamed) so that its two prediction runs execute. Per prediction: the wall time from the
//! request to the verdict (client side), the container runs it executed and reused (from its
//! events), and the service's share: the wall time less the critical path of the runs it
//! executed, counted two ways — less the eval scripts' time only (`duration_ms`), and less the
//! whole runs (`duration_ms` + `overhead_ms`: container created, files in, started, outputs
//! read). The two prediction runs execute at once, so the critical path is the longer one.
//! Prints each and the medians (target: the service's share p50 ≤ 1 s).
//!
//! With `SWTBENCH_BENCH_THROUGHPUT=1,2,4` it measures throughput instead: for each worker count a
//! service on the same output directory (images and gold/base runs warm after the first), a batch of
//! `SWTBENCH_BENCH_PREDICTIONS` (default 24) new predictions spread over the fixture's evaluable
//! instances (each a renamed test: its two prediction runs execute), submitted at once through
//! `POST /v1/batches`; prints the time to the last verdict and the predictions per minute.
//!
//! With `SWTBENCH_BENCH_REAL_PREDICTIONS=FILE` it measures the latency above on real instances:
//! the service gets the run flags `SWTBENCH_BENCH_REAL_FLAGS` (e.g. `--dataset D.jsonl
//! --repo-mirror M --env-provider uv --offline --no-network --timeout 1800`) and the output
//! directory `SWTBENCH_BENCH_OUTPUT` (one whose gold runs are stored, say a campaign's), and each
//! prediction of FILE (one per instance, e.g. its gold test patch) is the warm-up of its instance.
//!
//! Run with `cargo bench -p swtbench --bench service` on a quiet machine; needs Docker and the
//! fixture base image (`swtbench images base`).

#![allow(clippy::print_stderr, clippy::print_stdout, clippy::unwrap_used)]

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

#[path = "../tests/engine_fixture/mod.rs"]
mod engine_fixture;

use engine_fixture::Fixture;
use serde_json::Value;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(3600)))
        .build()
        .into()
}

fn submit(url: &str, prediction: &Value) -> Value {
    let mut r = agent()
        .post(format!("{url}/v1/evaluations?wait=600"))
        .send(prediction.to_string().as_bytes())
        .unwrap();
    let text = r.body_mut().read_to_string().unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    // A first prediction of a real instance (images, gold and base runs) can take longer than
    // the longest wait the API gives: wait again until its verdict.
    while v["state"] == "queued" || v["state"] == "running" {
        let id = v["id"].as_str().unwrap().to_string();
        let mut r = agent()
            .get(format!("{url}/v1/evaluations/{id}?wait=600"))
            .call()
            .unwrap();
        v = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
    }
    assert_eq!(v["state"], "done", "{v}");
    v
}

/// (executed, reused, the longest executed run's script ms, the longest whole run's ms).
fn runs_of(events: &Path) -> (usize, usize, u64, u64) {
    let text = std::fs::read_to_string(events).unwrap_or_default();
    let (mut executed, mut reused, mut script, mut whole) = (0, 0, 0, 0);
    for e in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        if e["event"] != "run_finished" {
            continue;
        }
        match e["result"]["kind"].as_str() {
            Some("executed") => {
                executed += 1;
                let d = e["result"]["duration_ms"].as_u64().unwrap_or(0);
                let o = e["result"]["overhead_ms"].as_u64().unwrap_or(0);
                script = script.max(d);
                whole = whole.max(d + o);
            }
            Some("reused") | Some("copied") => reused += 1,
            _ => {}
        }
    }
    (executed, reused, script, whole)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Starts `swtbench serve --workers N` over `out`; its URL.
fn serve(fx: &Fixture, out: &Path, workers: usize) -> (Serve, String) {
    let address = out.join("service").join("address");
    let _ = std::fs::remove_file(&address);
    let mut cmd = engine_fixture::swtbench_command();
    cmd.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--workers",
        &workers.to_string(),
        "--",
    ])
    .args(["--dataset", &fx.dataset(), "--repo-mirror", &fx.mirrors()])
    .arg("--spec-table")
    .arg(engine_fixture::spec_table())
    .args(["--timeout", "20", "--output-dir"])
    .arg(out)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let child = Serve(cmd.spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(t) = std::fs::read_to_string(&address) {
            if !t.trim().is_empty() {
                return (child, t.trim().to_string());
            }
        }
        assert!(Instant::now() < deadline, "no address");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Predictions per minute at each worker count of `counts`.
fn throughput(fx: &Fixture, counts: &[usize]) {
    let n: usize = env_or("SWTBENCH_BENCH_PREDICTIONS", "24").parse().unwrap();
    let out = fx.root.join("served-throughput");
    let predictions: Vec<Value> = std::fs::read_to_string(fx.data.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|p| p["instance_id"] != engine_fixture::HANGING)
        .filter(|p| {
            p["model_patch"]
                .as_str()
                .is_some_and(|t| t.contains("def test_"))
        })
        .collect();
    // Warm-up: every instance once (images, gold and base runs).
    {
        let (_s, url) = serve(fx, &out, 2);
        let t = Instant::now();
        batch(&url, &predictions);
        println!(
            "warm-up: {} instances evaluated once in {:.1} s",
            predictions.len(),
            t.elapsed().as_secs_f64()
        );
    }
    for &workers in counts {
        let (_s, url) = serve(fx, &out, workers);
        let batch_predictions: Vec<Value> = (0..n)
            .map(|k| {
                let mut p = predictions[k % predictions.len()].clone();
                let patch = p["model_patch"].as_str().unwrap().to_string();
                p["model_patch"] =
                    Value::String(rename_added_test(&patch, &format!("w{workers}_{k}_")));
                p
            })
            .collect();
        let t = Instant::now();
        batch(&url, &batch_predictions);
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{workers} worker(s): {n} predictions in {secs:.1} s, {:.1} predictions per minute",
            n as f64 * 60.0 / secs
        );
    }
}

/// Submits `predictions` as one batch and waits for its last verdict.
fn batch(url: &str, predictions: &[Value]) {
    let body: String = predictions.iter().map(|p| format!("{p}\n")).collect();
    let mut r = agent()
        .post(format!("{url}/v1/batches"))
        .send(body.as_bytes())
        .unwrap();
    let text = r.body_mut().read_to_string().unwrap();
    assert_eq!(r.status().as_u16(), 202, "{text}");
    let id = serde_json::from_str::<Value>(&text).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(3600);
    loop {
        let mut r = agent()
            .get(format!("{url}/v1/batches/{id}"))
            .call()
            .unwrap();
        let b: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
        if b["done"] == true {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "batch {id} not done in an hour: {b}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn main() {
    if let Some(why) = engine_fixture::engine_missing() {
        eprintln!("service bench skipped: {why}");
        return;
    }
    let fx = Fixture::new();
    if let Ok(counts) = std::env::var("SWTBENCH_BENCH_THROUGHPUT") {
        let counts: Vec<usize> = counts
            .split(',')
            .map(|c| {
                c.trim()
                    .parse()
                    .expect("SWTBENCH_BENCH_THROUGHPUT: worker counts, e.g. 1,2,4")
            })
            .collect();
        throughput(&fx, &counts);
        return;
    }
    let n: usize = env_or("SWTBENCH_BENCH_PREDICTIONS", "10").parse().unwrap();
    if let Ok(file) = std::env::var("SWTBENCH_BENCH_REAL_PREDICTIONS") {
        real(&fx, &file, n);
        return;
    }
    let instance = env_or("SWTBENCH_BENCH_INSTANCE", "swtfix__calc-1");
    let out = fx.root.join("served");
    let mut cmd = engine_fixture::swtbench_command();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--workers", "1", "--"])
        .args(["--dataset", &fx.dataset(), "--repo-mirror", &fx.mirrors()])
        .arg("--spec-table")
        .arg(engine_fixture::spec_table())
        .args(["--timeout", "20", "--output-dir"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _serve = Serve(cmd.spawn().unwrap());
    let address = out.join("service").join("address");
    let deadline = Instant::now() + Duration::from_secs(60);
    let url = loop {
        if let Ok(t) = std::fs::read_to_string(&address) {
            if !t.trim().is_empty() {
                break t.trim().to_string();
            }
        }
        assert!(Instant::now() < deadline, "no address");
        std::thread::sleep(Duration::from_millis(50));
    };
    let predictions: Vec<Value> = std::fs::read_to_string(fx.data.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let base = predictions
        .iter()
        .find(|p| p["instance_id"] == instance.as_str())
        .unwrap()
        .clone();
    latency(&url, &out, &base, n);
}

/// The warm-up prediction `base` (images, gold and base runs), then `n` new predictions of its
/// instance one after the other (its first test function renamed): each one's wall time, runs and
/// the service's share, and the medians.
fn latency(url: &str, out: &Path, base: &Value, n: usize) {
    let instance = base["instance_id"].as_str().unwrap_or_default().to_string();
    let start = Instant::now();
    submit(url, base);
    println!(
        "warm-up: {instance} evaluated once in {:.1} s (images, gold and base runs)",
        start.elapsed().as_secs_f64()
    );
    let patch = base["model_patch"].as_str().unwrap().to_string();
    let (mut walls, mut shares_script, mut shares_whole) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..n {
        // Another test name: a new patch (new keys for the prediction runs), the same lines.
        let variant = rename_added_test(&patch, &format!("v{k}_"));
        assert_ne!(variant, patch, "the patch has no test function to rename");
        let mut p = base.clone();
        p["model_patch"] = Value::String(variant);
        let t = Instant::now();
        let job = submit(url, &p);
        let wall = t.elapsed().as_secs_f64();
        let id = job["id"].as_str().unwrap();
        let (executed, reused, script, whole) = runs_of(
            &out.join("service")
                .join("events")
                .join(format!("{id}.jsonl")),
        );
        let share_script = wall - script as f64 / 1000.0;
        let share_whole = wall - whole as f64 / 1000.0;
        println!(
            "prediction {k}: {wall:.2} s to the verdict; runs {executed} executed, {reused} reused; \
             service's share {share_script:.2} s (less the scripts), {share_whole:.2} s (less the whole runs)"
        );
        walls.push(wall);
        shares_script.push(share_script);
        shares_whole.push(share_whole);
    }
    println!(
        "{instance}: median over {n}: {:.2} s to the verdict; service's share {:.2} s less the scripts, {:.2} s less the whole runs (target ≤ 1 s)",
        median(&mut walls),
        median(&mut shares_script),
        median(&mut shares_whole)
    );
}

/// Real instances: `swtbench serve` with the run flags `SWTBENCH_BENCH_REAL_FLAGS` (dataset,
/// mirrors, provider…; split on spaces) over `SWTBENCH_BENCH_OUTPUT` (an output directory whose
/// stored gold runs are reused), one worker; the latency of [`latency`] for each prediction of
/// `file` (one per instance, e.g. the gold test patches).
fn real(fx: &Fixture, file: &str, n: usize) {
    let flags = env_or("SWTBENCH_BENCH_REAL_FLAGS", "");
    let out = std::path::PathBuf::from(env_or(
        "SWTBENCH_BENCH_OUTPUT",
        &fx.root.join("served-real").display().to_string(),
    ));
    let address = out.join("service").join("address");
    let _ = std::fs::remove_file(&address);
    let mut cmd = engine_fixture::swtbench_command();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--workers", "1", "--"])
        .args(flags.split_whitespace())
        .arg("--output-dir")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _serve = Serve(cmd.spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(120);
    let url = loop {
        if let Ok(t) = std::fs::read_to_string(&address) {
            if !t.trim().is_empty() {
                break t.trim().to_string();
            }
        }
        assert!(
            Instant::now() < deadline,
            "no address (is the dataset in the flags?)"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    for line in std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let base: Value = serde_json::from_str(line).unwrap();
        latency(&url, &out, &base, n);
    }
}

/// `patch` with the first test function it adds (a `+` line with `def test_`) renamed by `tag`
/// (`test_` becomes `test_<tag>`): a new patch whose runs execute, with the same lines. Context
/// lines are left as they are, so the patch still applies.
fn rename_added_test(patch: &str, tag: &str) -> String {
    let mut done = false;
    let mut out = String::with_capacity(patch.len() + tag.len());
    for line in patch.split_inclusive('\n') {
        if !done && line.starts_with('+') && !line.starts_with("+++") && line.contains("def test_")
        {
            out.push_str(&line.replacen("def test_", &format!("def test_{tag}"), 1));
            done = true;
        } else {
            out.push_str(line);
        }
    }
    out
}
