//! `swtbench serve` on the real engine with the fixture benchmark: a batch of the fixture's
//! predictions through the HTTP API, the service killed with SIGKILL twice while it evaluates and
//! started again each time; every verdict is delivered, each instance's `report.json` is
//! byte-identical to `swtbench run`'s (the shared reference run), no job executed twice once it
//! had finished, and nothing of the killed processes is left (containers, temporary files).
//!
//! Needs what engine_run.rs needs (Docker, the fixture base image).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::engine_fixture::{self, containers_of, reference_run, reports_of, Fixture, HANGING};

/// The service as a child process over `out`, listening on a free loopback port (killed when
/// dropped, should the test fail).
pub(crate) struct Serve {
    pub(crate) child: Child,
    pub(crate) url: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start(fx: &Fixture, out: &Path, workers: usize) -> Serve {
    let address = out.join("service").join("address");
    let _ = std::fs::remove_file(&address);
    let mut cmd = engine_fixture::swtbench_command();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--workers"])
        .arg(workers.to_string())
        .arg("--")
        .args(["--dataset", &fx.dataset(), "--repo-mirror", &fx.mirrors()])
        .arg("--spec-table")
        .arg(engine_fixture::spec_table())
        .args(["--timeout", "20", "--output-dir"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    // Held from the start: a panic below kills it on drop.
    let mut serve = Serve {
        child: cmd.spawn().unwrap(),
        url: String::new(),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&address).unwrap_or_default();
        if !text.trim().is_empty() {
            serve.url = text.trim().to_string();
            return serve;
        }
        assert!(
            Instant::now() < deadline,
            "the service wrote no address in 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An HTTP client that returns every status as an answer (the tests check them).
pub(crate) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

/// GET `url`: its status and body.
pub(crate) fn get(url: &str) -> (u16, String) {
    let mut r = agent().get(url).call().unwrap();
    let status = r.status().as_u16();
    (status, r.body_mut().read_to_string().unwrap())
}

fn kill9(s: &mut Serve) {
    s.child.kill().unwrap(); // SIGKILL
    s.child.wait().unwrap();
}

/// Polls the batch until `done(batch)` holds (at most `limit`).
fn wait_batch(url: &str, batch: &str, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let (status, text) = get(&format!("{url}/v1/batches/{batch}"));
        assert_eq!(status, 200, "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        if done(&v) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "the batch did not get there: {v}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn done_count(batch: &Value) -> u64 {
    batch["counts"]["done"].as_u64().unwrap_or(0)
}

/// Files a killed process leaves half-written (`swtbench_data::fsutil::TEMP_PREFIX`) under
/// `root`, at any depth, sorted.
pub(crate) fn temporary_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".swtbench-tmp-"))
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out.sort();
    out
}

#[test]
fn engine_serve_verdicts_equal_run_and_survive_two_kills() {
    require_engine!();
    let fx = Fixture::new();
    let (ref_out, ref_id) = reference_run(&fx);
    let reference = reports_of(&ref_out, &ref_id);
    let out = fx.root.join("served");
    let predictions: Vec<Value> = std::fs::read_to_string(fx.data.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|p: &Value| p["instance_id"] != HANGING)
        .collect();
    let body: String = predictions.iter().map(|p| format!("{p}\n")).collect();

    let mut serve = start(&fx, &out, 2);
    let mut r = agent()
        .post(format!("{}/v1/batches", serve.url))
        .send(body.as_bytes())
        .unwrap();
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap();
    assert_eq!(status, 202, "{text}");
    let accepted: Value = serde_json::from_str(&text).unwrap();
    let batch = accepted["id"].as_str().unwrap().to_string();
    let ids: Vec<String> = accepted["evaluations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), predictions.len());

    // Killed twice while it evaluates: after the first verdict, and after a few more.
    let mut finished_before_kills = Vec::new();
    for at_least in [1, 3] {
        let b = wait_batch(&serve.url, &batch, Duration::from_secs(600), |b| {
            done_count(b) >= at_least
        });
        kill9(&mut serve);
        finished_before_kills = b["evaluations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["state"] == "done")
            .map(|e| {
                (
                    e["id"].as_str().unwrap().to_string(),
                    e["attempts"].as_u64(),
                )
            })
            .collect();
        serve = start(&fx, &out, 2);
    }
    let total = ids.len() as u64;
    let b = wait_batch(&serve.url, &batch, Duration::from_secs(900), |b| {
        b["done"] == true
    });
    assert_eq!(done_count(&b), total, "every verdict delivered: {b}");

    // A job that had finished was not taken again.
    for (id, attempts) in &finished_before_kills {
        let (_, text) = get(&format!("{}/v1/evaluations/{id}", serve.url));
        let job: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(job["attempts"].as_u64(), *attempts, "{id} ran again: {job}");
    }
    // Each verdict's report.json is the run's, byte for byte.
    for (p, id) in predictions.iter().zip(&ids) {
        let instance = p["instance_id"].as_str().unwrap();
        let (status, served) = get(&format!("{}/v1/evaluations/{id}/report", serve.url));
        assert_eq!(status, 200, "{instance}: {served}");
        assert_eq!(
            Some(&served),
            reference.get(instance),
            "{instance}: the service's report.json differs from swtbench run's"
        );
        assert!(
            containers_of(&format!("svc-{id}")).is_empty(),
            "containers of {id} left"
        );
    }
    assert_eq!(temporary_files(&out), Vec::<PathBuf>::new());

    // Metrics and health answer; SIGTERM stops it cleanly and removes the address file.
    let (status, metrics) = get(&format!("{}/metrics", serve.url));
    assert_eq!(status, 200);
    assert!(
        metrics.contains(&format!("swtbench_jobs{{state=\"done\"}} {total}")),
        "{metrics}"
    );
    let stopped = Command::new("kill")
        .args(["-TERM", &serve.child.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let status = engine_fixture::wait_exit(&mut serve.child, Duration::from_secs(60));
    assert!(status.success(), "{status}");
    assert!(!out.join("service").join("address").exists());
}
