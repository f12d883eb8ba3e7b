//! Several machines' worker pool on the real engine with the fixture benchmark: `swtbench serve
//! --queue postgres://` (a real PostgreSQL server the test starts, no workers of its own) and two
//! `swtbench worker` processes sharing an output directory (as hosts sharing a file system do).
//! Two workers are killed with SIGKILL while they evaluate (the first, then, with a replacement
//! started, the second); each killed job's lease runs out and another worker takes it. The
//! service is killed and started again three times meanwhile (it holds no job: the workers take
//! theirs from the database). Every verdict is delivered, each `report.json` is served by the service from
//! the queue (the service's own disk has none) and equals `swtbench run`'s byte for byte, each
//! verdict equals the SQLite service's, no run that had finished executed twice (the events
//! show it), and nothing is left behind: no container, no unfinished file, no running job or
//! lease in the queue, both processes stop cleanly on SIGTERM.
//!
//! Needs what engine_serve.rs needs (Docker, the fixture base image) and Debian's postgresql.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::engine_fixture::{self, containers_of, reference_run, reports_of, Fixture, HANGING};
use crate::engine_serve::submit_copy;
use crate::support::postgres::Postgres;

/// A child process, killed when dropped (should the test fail).
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    fn terminate(&mut self) -> std::process::ExitStatus {
        let sent = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        engine_fixture::wait_exit(&mut self.0, Duration::from_secs(60))
    }
}

/// The fixture's run flags into `out` (the same for the service and its workers but the output
/// directory).
fn run_flags(fx: &Fixture, out: &Path) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "--dataset".into(),
        fx.dataset(),
        "--repo-mirror".into(),
        fx.mirrors(),
        "--spec-table".into(),
        engine_fixture::spec_table().display().to_string(),
        "--timeout".into(),
        "20".into(),
    ];
    v.extend(["--output-dir".into(), out.display().to_string()]);
    v
}

fn spawn(args: &[String]) -> Proc {
    Proc(
        engine_fixture::swtbench_command()
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    )
}

/// A service over `out` (its queue at `queue`, or its own SQLite file), and its URL.
fn serve(fx: &Fixture, out: &Path, queue: Option<&str>, workers: usize) -> (Proc, String) {
    let address = out.join("service").join("address");
    // A killed service's file names its old port.
    let _ = std::fs::remove_file(&address);
    let mut args: Vec<String> = vec!["serve".into(), "--listen".into(), "127.0.0.1:0".into()];
    args.extend(["--workers".into(), workers.to_string()]);
    if let Some(q) = queue {
        args.extend(["--queue".into(), q.into(), "--lease".into(), "4".into()]);
    }
    args.push("--".into());
    args.extend(run_flags(fx, out));
    let proc = spawn(&args);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&address).unwrap_or_default();
        if !text.trim().is_empty() {
            return (proc, text.trim().to_string());
        }
        assert!(
            Instant::now() < deadline,
            "the service wrote no address in 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn worker(fx: &Fixture, out: &Path, queue: &str) -> Proc {
    let mut args: Vec<String> = vec!["worker".into(), "--queue".into(), queue.into()];
    args.extend(["--workers".into(), "1".into(), "--lease".into(), "4".into()]);
    args.push("--".into());
    args.extend(run_flags(fx, out));
    spawn(&args)
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

fn get(url: &str) -> (u16, String) {
    let mut r = agent().get(url).call().unwrap();
    let status = r.status().as_u16();
    (status, r.body_mut().read_to_string().unwrap())
}

/// Polls the batch until it is done (at most `limit`); its evaluations by id.
fn wait_done(url: &str, batch: &str, limit: Duration) -> BTreeMap<String, Value> {
    let deadline = Instant::now() + limit;
    loop {
        let (status, text) = get(&format!("{url}/v1/batches/{batch}"));
        assert_eq!(status, 200, "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        if v["done"] == true {
            return v["evaluations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| (e["id"].as_str().unwrap().to_string(), e.clone()))
                .collect();
        }
        assert!(Instant::now() < deadline, "the batch did not finish: {v}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The runs an events file says were executed: (instance, run).
fn executed(events: &str) -> Vec<(String, String)> {
    events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "run_finished" && e["result"]["kind"] == "executed")
        .map(|e| {
            (
                e["instance_id"].as_str().unwrap_or_default().to_string(),
                e["run"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Waits until `worker` evaluates a job (not one of `skip`) that has executed runs, and kills it
/// with SIGKILL: the job's id and its events at the kill.
fn kill_while_evaluating(
    pg: &Postgres,
    worker: &mut Proc,
    events_dir: &Path,
    skip: &[String],
) -> (String, String) {
    let pid = worker.0.id();
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let running = pg.psql(&format!(
            "SELECT id FROM swtbench_jobs WHERE state = 'running' AND holder LIKE '%/{pid}/%'"
        ));
        if let Some(id) = running
            .lines()
            .next()
            .filter(|id| !skip.iter().any(|s| s == id))
        {
            let text =
                std::fs::read_to_string(events_dir.join(format!("{id}.jsonl"))).unwrap_or_default();
            if !executed(&text).is_empty() {
                worker.0.kill().unwrap(); // SIGKILL
                worker.0.wait().unwrap();
                // Read at once: another worker writes this job's events file when it takes it
                // again, after the lease has run out.
                let text = std::fs::read_to_string(events_dir.join(format!("{id}.jsonl")))
                    .unwrap_or_default();
                assert_eq!(
                    pg.psql(&format!(
                        "SELECT state FROM swtbench_jobs WHERE id = '{id}'"
                    )),
                    "running",
                    "{id} was finished when worker {pid} was killed"
                );
                return (id.to_string(), text);
            }
        }
        assert!(
            Instant::now() < deadline,
            "worker {pid} evaluated nothing in 600 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Files a killed process leaves half-written (`swtbench_data::fsutil::TEMP_PREFIX`).
fn temporary_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
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
    out
}

/// What a verdict says about the prediction: not where or how fast it was made, nor its
/// `reasons`, which say how the runs went (the fixture's network-probing test may or may not
/// reach the 20 s timeout on a loaded machine, with the same report either way).
fn judgement(evaluation: &Value) -> Value {
    let v = &evaluation["verdict"];
    serde_json::json!({
        "outcome": v["outcome"],
        "resolved": v["resolved"],
        "detail": v["detail"],
        "report": v["report"],
    })
}

#[test]
fn engine_workers_on_two_processes_survive_two_kills_and_give_the_sqlite_services_verdicts() {
    require_engine!();
    let Some(pg) = Postgres::start_or_skip() else {
        return;
    };
    let fx = Fixture::new();
    let (ref_out, ref_id) = reference_run(&fx);
    let reference = reports_of(&ref_out, &ref_id);
    let predictions: Vec<Value> = std::fs::read_to_string(fx.data.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|p: &Value| p["instance_id"] != HANGING)
        .collect();
    let copies = crate::engine_serve::batch_copies(predictions.len());
    let started = Instant::now();

    // The service (no workers of its own) and two workers on one shared output directory.
    let service_out = fx.root.join("service-host");
    let shared_out = fx.root.join("workers");
    let (mut service, url) = serve(&fx, &service_out, Some(&pg.url), 0);
    let mut a = worker(&fx, &shared_out, &pg.url);
    let mut b = worker(&fx, &shared_out, &pg.url);
    let mut batches = Vec::new();
    let mut jobs: Vec<(String, String, usize)> = Vec::new(); // (id, instance, copy)
    for k in 0..copies {
        let (batch, ids) = submit_copy(&url, &predictions, k);
        assert_eq!(ids.len(), predictions.len());
        for (p, id) in predictions.iter().zip(ids) {
            jobs.push((id, p["instance_id"].as_str().unwrap().to_string(), k));
        }
        batches.push(batch);
    }
    let ids: Vec<String> = jobs.iter().map(|(id, _, _)| id.clone()).collect();
    // The service (the API: the workers take their jobs from the database) is killed and
    // started again three times: at once, and after each worker's kill.
    let restart_service = |service: &mut Proc| {
        service.0.kill().unwrap(); // SIGKILL
        service.0.wait().unwrap();
        let (s, u) = serve(&fx, &service_out, Some(&pg.url), 0);
        *service = s;
        // The new service answers for the batches the killed one accepted.
        for batch in &batches {
            let (status, text) = get(&format!("{u}/v1/batches/{batch}"));
            assert_eq!(status, 200, "{text}");
        }
        u
    };
    restart_service(&mut service);

    // Worker A is killed while it evaluates a job that has finished runs; a replacement, C,
    // joins; then B is killed the same way, while evaluating another job.
    let events_dir = shared_out.join("service").join("events");
    let (a_pid, b_pid) = (a.0.id(), b.0.id());
    let (killed_a, a_events) = kill_while_evaluating(&pg, &mut a, &events_dir, &[]);
    restart_service(&mut service);
    let mut c = worker(&fx, &shared_out, &pg.url);
    let (killed_b, b_events) =
        kill_while_evaluating(&pg, &mut b, &events_dir, std::slice::from_ref(&killed_a));
    let url = restart_service(&mut service);
    let killed = [(killed_a, a_pid, a_events), (killed_b, b_pid, b_events)];
    let mut evaluations = BTreeMap::new();
    for batch in &batches {
        evaluations.extend(wait_done(&url, batch, Duration::from_secs(3600)));
    }
    let elapsed = started.elapsed();

    // Every verdict delivered; each killed job was taken twice (by a live worker the second
    // time), every other once.
    for id in &ids {
        let e = &evaluations[id];
        assert_eq!(e["state"], "done", "{e}");
        let by = e["verdict"]["worker"].as_str().unwrap();
        match killed.iter().find(|(k, _, _)| k == id) {
            Some((_, pid, _)) => {
                assert_eq!(e["attempts"], 2, "{e}");
                assert!(
                    !by.contains(&format!("/{pid}/")),
                    "{id} done by the killed {by}"
                );
            }
            None => assert_eq!(e["attempts"], 1, "{e}"),
        }
        // Where its logs are: this host, the workers' directory, with the report.json there.
        let logs = e["verdict"]["logs"].as_str().unwrap();
        let (host, dir) = logs.split_once(':').unwrap();
        assert_eq!(Some(host), by.split('/').next(), "{logs}");
        assert!(Path::new(dir).starts_with(&shared_out), "{logs}");
        assert!(Path::new(dir).join("report.json").is_file(), "{logs}");
    }

    // The service's disk has no report: each one comes from the queue, and is `run`'s.
    assert!(!service_out
        .join(swtbench_core::layout::LOGS_ROOT_DIR)
        .exists());
    for (id, instance, _) in &jobs {
        let instance = instance.as_str();
        let (status, served) = get(&format!("{url}/v1/evaluations/{id}/report"));
        assert_eq!(status, 200, "{instance}: {served}");
        assert_eq!(
            Some(&served),
            reference.get(instance),
            "{instance}: the served report.json differs from swtbench run's"
        );
    }

    // No run that had finished executed twice: over every job's events (the killed jobs' first
    // takes included), each run of an instance executed once at most (a prediction run once per
    // model name: another model's is another run); the runs a killed worker had finished were
    // reused by the second take.
    let copy_of = |id: &str| jobs.iter().find(|(j, _, _)| j == id).map(|(_, _, k)| *k);
    let keyed = |id: &str, runs: Vec<(String, String)>| -> Vec<(String, String, Option<usize>)> {
        runs.into_iter()
            .map(|(i, r)| {
                let copy = if r.starts_with("pred") {
                    copy_of(id)
                } else {
                    None
                };
                (i, r, copy)
            })
            .collect()
    };
    let mut runs = Vec::new();
    for (id, _, events) in &killed {
        runs.extend(keyed(id, executed(events)));
    }
    for id in &ids {
        let text = std::fs::read_to_string(events_dir.join(format!("{id}.jsonl"))).unwrap();
        if let Some((_, _, events)) = killed.iter().find(|(k, _, _)| k == id) {
            let again = executed(&text);
            for r in &executed(events) {
                assert!(!again.contains(r), "{r:?} executed again after the kill");
            }
        }
        runs.extend(keyed(id, executed(&text)));
    }
    let mut seen = std::collections::BTreeSet::new();
    for r in &runs {
        assert!(seen.insert(r), "{r:?} executed twice");
    }

    // Nothing left: containers, unfinished files, running jobs or leases in the queue.
    for id in &ids {
        assert!(
            containers_of(&format!("svc-{id}")).is_empty(),
            "containers of {id} left"
        );
    }
    assert_eq!(temporary_files(&shared_out), Vec::<PathBuf>::new());
    assert_eq!(
        pg.psql(
            "SELECT count(*) FROM swtbench_jobs WHERE state <> 'done' OR lease_until IS NOT NULL"
        ),
        "0"
    );
    assert!(c.terminate().success());
    assert!(service.terminate().success());
    eprintln!(
        "engine_workers: {} predictions in {copies} batch(es), 2 workers, two killed, the \
         service killed three times: {:.1} s",
        ids.len(),
        elapsed.as_secs_f64()
    );

    // The SQLite service gives each prediction the same verdict, under the same job id.
    let ids = &ids[..predictions.len()];
    let (mut sqlite, url) = serve(&fx, &fx.root.join("sqlite"), None, 2);
    let (batch, sqlite_ids) = submit_copy(&url, &predictions, 0);
    assert_eq!(sqlite_ids, ids);
    let sqlite_evaluations = wait_done(&url, &batch, Duration::from_secs(900));
    for id in ids {
        assert_eq!(
            judgement(&sqlite_evaluations[id]),
            judgement(&evaluations[id]),
            "{id}: the PostgreSQL pool's verdict differs from the SQLite service's"
        );
    }
    assert!(sqlite.terminate().success());
}
