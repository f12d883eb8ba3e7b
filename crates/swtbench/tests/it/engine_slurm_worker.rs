//! `swtbench worker` as a Slurm job on the real single-node cluster (`scripts/slurm-local`, as
//! engine_slurm.rs starts it), the recipe of docs/service.md: `sbatch` a script whose one task is
//! `srun swtbench worker --queue postgres://…`; it joins the pool of a service with no workers of
//! its own, evaluates the predictions submitted to the service (each `report.json`, served from
//! the queue, equal to `swtbench run`'s), and `scancel` stops it cleanly: it says it stops, the
//! Slurm job ends, and no job is left running in the queue, no container behind.
//!
//! Needs Docker and the fixture base image, Slurm (as engine_slurm.rs) and Debian's postgresql.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::engine_fixture::{self, binary, containers_of, reference_run, reports_of, Fixture};
use crate::support::postgres::Postgres;

/// A child process, killed when dropped (should the test fail).
struct Proc(std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A Slurm job, cancelled when dropped (should the test fail).
struct SlurmJob {
    id: String,
    conf: std::path::PathBuf,
}

impl Drop for SlurmJob {
    fn drop(&mut self) {
        let _ = Command::new("scancel")
            .arg(&self.id)
            .env("SLURM_CONF", &self.conf)
            .status();
    }
}

fn run_flags(fx: &Fixture, out: &Path) -> Vec<String> {
    vec![
        "--dataset".into(),
        fx.dataset(),
        "--repo-mirror".into(),
        fx.mirrors(),
        "--spec-table".into(),
        engine_fixture::spec_table().display().to_string(),
        "--timeout".into(),
        "20".into(),
        "--output-dir".into(),
        out.display().to_string(),
    ]
}

fn get(url: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let mut r = agent.get(url).call().unwrap();
    let status = r.status().as_u16();
    (status, r.body_mut().read_to_string().unwrap())
}

/// A shell word.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[test]
fn engine_slurm_worker_joins_the_pool_as_a_slurm_job_and_scancel_stops_it_cleanly() {
    require_engine!();
    let Some(pg) = Postgres::start_or_skip() else {
        return;
    };
    let Some(conf) = crate::engine_slurm::slurm_conf() else {
        return;
    };
    let fx = Fixture::new();
    let (ref_out, ref_id) = reference_run(&fx);
    let reference = reports_of(&ref_out, &ref_id);

    // The service: the API only.
    let service_out = fx.root.join("service-host");
    let address = service_out.join("service").join("address");
    let mut args: Vec<String> = ["serve", "--listen", "127.0.0.1:0", "--workers", "0"]
        .map(String::from)
        .to_vec();
    args.extend(["--queue".into(), pg.url.clone(), "--".into()]);
    args.extend(run_flags(&fx, &service_out));
    let mut service = Proc(
        engine_fixture::swtbench_command()
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let url = loop {
        let text = std::fs::read_to_string(&address).unwrap_or_default();
        if !text.trim().is_empty() {
            break text.trim().to_string();
        }
        assert!(Instant::now() < deadline, "the service wrote no address");
        std::thread::sleep(Duration::from_millis(50));
    };

    // Two predictions of the fixture.
    let predictions: Vec<Value> = std::fs::read_to_string(fx.data.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|p: &Value| p["instance_id"] != engine_fixture::HANGING)
        .take(2)
        .collect();
    let body: String = predictions.iter().map(|p| format!("{p}\n")).collect();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut r = agent
        .post(format!("{url}/v1/batches"))
        .send(body.as_bytes())
        .unwrap();
    let text = r.body_mut().read_to_string().unwrap();
    let accepted: Value = serde_json::from_str(&text).unwrap();
    let batch = accepted["id"].as_str().unwrap().to_string();

    // The recipe: a batch script whose task is `srun swtbench worker …`.
    let worker_out = fx.root.join("slurm-worker");
    std::fs::create_dir_all(&worker_out).unwrap();
    let mut worker: Vec<String> = vec![binary::bin_path().to_string(), "worker".into()];
    worker.extend([
        "--queue".into(),
        pg.url.clone(),
        "--lease".into(),
        "10".into(),
    ]);
    worker.push("--".into());
    worker.extend(run_flags(&fx, &worker_out));
    let script = worker_out.join("workers.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec srun {}\n",
            worker
                .iter()
                .map(|w| quoted(w))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    )
    .unwrap();
    let log = worker_out.join("slurm.out");
    let mut sbatch = Command::new("sbatch");
    binary::with_build_network(binary::hermetic(&mut sbatch));
    let submitted = sbatch
        .env("SLURM_CONF", &conf)
        .args([
            "--parsable",
            "--job-name",
            "swtbench-workers",
            "--ntasks",
            "1",
        ])
        .arg(format!("--output={}", log.display()))
        .arg(&script)
        .current_dir(&worker_out)
        .output()
        .unwrap();
    assert!(
        submitted.status.success(),
        "sbatch: {}",
        String::from_utf8_lossy(&submitted.stderr)
    );
    let job = SlurmJob {
        id: String::from_utf8_lossy(&submitted.stdout)
            .trim()
            .split(';')
            .next()
            .unwrap()
            .to_string(),
        conf: conf.clone(),
    };

    // Every verdict, made by the Slurm task, its report.json from the queue equal to `run`'s.
    let deadline = Instant::now() + Duration::from_secs(600);
    let evaluations = loop {
        let (status, text) = get(&format!("{url}/v1/batches/{batch}"));
        assert_eq!(status, 200, "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        if v["done"] == true {
            break v["evaluations"].as_array().unwrap().clone();
        }
        assert!(
            Instant::now() < deadline,
            "the Slurm worker did not finish the batch: {v}\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    for e in &evaluations {
        assert_eq!(e["state"], "done", "{e}");
        let instance = e["instance_id"].as_str().unwrap();
        let logs = e["verdict"]["logs"].as_str().unwrap();
        assert!(logs.contains(&worker_out.display().to_string()), "{logs}");
        let id = e["id"].as_str().unwrap();
        let (status, served) = get(&format!("{url}/v1/evaluations/{id}/report"));
        assert_eq!(status, 200, "{served}");
        assert_eq!(Some(&served), reference.get(instance), "{instance}");
    }

    // scancel: SIGTERM to the task, which stops cleanly, and the Slurm job ends.
    let cancelled = Command::new("scancel")
        .arg(&job.id)
        .env("SLURM_CONF", &conf)
        .status()
        .unwrap();
    assert!(cancelled.success());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let queued = Command::new("squeue")
            .args(["-h", "-j", &job.id, "-o", "%T"])
            .env("SLURM_CONF", &conf)
            .output()
            .unwrap();
        let state = String::from_utf8_lossy(&queued.stdout).trim().to_string();
        if state.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "the Slurm job is still {state}");
        std::thread::sleep(Duration::from_millis(500));
    }
    let out = std::fs::read_to_string(&log).unwrap();
    assert!(
        out.contains("worker: 1 worker(s) on") && out.contains("worker: stopping"),
        "{out}"
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM swtbench_jobs WHERE state <> 'done'"),
        "0"
    );
    for e in &evaluations {
        let id = e["id"].as_str().unwrap();
        assert!(containers_of(&format!("svc-{id}")).is_empty(), "{id}");
    }
    let stopped = Command::new("kill")
        .args(["-TERM", &service.0.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    assert!(engine_fixture::wait_exit(&mut service.0, Duration::from_secs(60)).success());
}
