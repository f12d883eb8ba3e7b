//! `swtbench serve` under concurrent clients, as an agent or training loop uses it: 20 clients
//! each submit 10 predictions one by one (`POST /v1/evaluations`) at the same time, 200 in all —
//! the fixture benchmark's 8 non-empty predictions under one of 4 model names (client K uses
//! `model-(K mod 4)`, so five clients send each prediction at once), and two of them again. Every
//! submission gets its verdict; identical submissions, concurrent or repeated, are one job (32
//! jobs); every instance's `report.json` is byte-identical to `swtbench run`'s (the shared
//! reference run); no job was taken twice, and no container run was executed twice: the gold and
//! base runs once in all, a prediction's runs once per job (the same patch under another model
//! name is another job, whose prediction runs execute again). A client told 429 (over the
//! service's request rate for one token) waits a second and asks again, as the answer's hint says.
//!
//! Needs what engine_run.rs needs (Docker, the fixture base image).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::engine_fixture::{reference_run, reports_of, Fixture, HANGING};
use crate::engine_serve::{agent, get, start};

const CLIENTS: usize = 20;
const PER_CLIENT: usize = 10;
const MODELS: usize = 4;

fn get_json(url: &str) -> Value {
    // 429: more requests in a second than the service takes from one token; a client waits and
    // asks again, as the answer's hint says.
    let (status, text) = loop {
        let (status, text) = get(url);
        if status != 429 {
            break (status, text);
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    // 202 while the job is queued or running (after ?wait=), 200 with its verdict.
    assert!(status == 200 || status == 202, "{url}: {status} {text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn engine_serve_twenty_clients_get_every_verdict_once() {
    require_engine!();
    let fx = Fixture::new();
    let (ref_out, ref_id) = reference_run(&fx);
    let reference = reports_of(&ref_out, &ref_id);
    let predictions: Vec<Value> = std::fs::read_to_string(fx.data.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|p| p["instance_id"] != HANGING)
        .filter(|p| !p["model_patch"].as_str().unwrap_or("").trim().is_empty())
        .collect();
    assert_eq!(
        predictions.len(),
        8,
        "the fixture's non-empty, non-hanging predictions"
    );

    let out = fx.root.join("served-clients");
    let serve = start(&fx, &out, 2);
    let started = Instant::now();
    // Each client: the 8 predictions as model `model-(K mod 4)`, then the first two again.
    let answers: Vec<Vec<(String, String)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|k| {
                let (url, predictions) = (&serve.url, &predictions);
                scope.spawn(move || {
                    let mut got = Vec::new();
                    for i in 0..PER_CLIENT {
                        let p = &predictions[i % predictions.len()];
                        let body = json!({
                            "instance_id": p["instance_id"],
                            "model_name_or_path": format!("model-{}", k % MODELS),
                            "model_patch": p["model_patch"],
                        });
                        let (status, text) = loop {
                            let mut r = agent()
                                .post(format!("{url}/v1/evaluations"))
                                .header("content-type", "application/json")
                                .send(body.to_string().as_bytes())
                                .unwrap();
                            let status = r.status().as_u16();
                            let text = r.body_mut().read_to_string().unwrap();
                            if status != 429 {
                                break (status, text);
                            }
                            // Over the service's rate for one token: wait a second, as its hint says.
                            std::thread::sleep(Duration::from_secs(1));
                        };
                        assert!(
                            status == 202 || status == 200,
                            "client {k}: {status} {text}"
                        );
                        let v: Value = serde_json::from_str(&text).unwrap();
                        got.push((
                            p["instance_id"].as_str().unwrap().to_string(),
                            v["id"].as_str().unwrap().to_string(),
                        ));
                    }
                    got
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let submitted: usize = answers.iter().map(Vec::len).sum();
    assert_eq!(submitted, CLIENTS * PER_CLIENT);
    // A repeated submission is the same job.
    for client in &answers {
        assert_eq!(client[0].1, client[predictions.len()].1);
        assert_eq!(client[1].1, client[predictions.len() + 1].1);
    }
    let jobs: BTreeMap<String, String> = answers
        .iter()
        .flatten()
        .map(|(instance, id)| (id.clone(), instance.clone()))
        .collect();
    assert_eq!(
        jobs.len(),
        MODELS * predictions.len(),
        "one job per model and prediction"
    );

    // Every verdict arrives: each client long-polls its own jobs (`?wait=`), as a loop would.
    let finished: BTreeMap<String, Value> = std::thread::scope(|scope| {
        let handles: Vec<_> = answers
            .iter()
            .map(|client| {
                let url = &serve.url;
                scope.spawn(move || {
                    let mut got = Vec::new();
                    let ids: BTreeSet<&String> = client.iter().map(|(_, id)| id).collect();
                    for id in ids {
                        let deadline = Instant::now() + Duration::from_secs(1200);
                        loop {
                            let job = get_json(&format!("{url}/v1/evaluations/{id}?wait=60"));
                            if job["state"] == "done" {
                                got.push((id.clone(), job));
                                break;
                            }
                            assert!(
                                job["state"] == "queued" || job["state"] == "running",
                                "{id}: {job}"
                            );
                            assert!(Instant::now() < deadline, "{id}: no verdict in 20 minutes");
                        }
                    }
                    got
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(finished.len(), jobs.len(), "every job has its verdict");
    let elapsed = started.elapsed();
    eprintln!(
        "{} submissions from {CLIENTS} clients, {} jobs: every verdict in {:.1} s ({:.0} predictions per minute)",
        submitted,
        jobs.len(),
        elapsed.as_secs_f64(),
        jobs.len() as f64 * 60.0 / elapsed.as_secs_f64()
    );

    // Reports equal swtbench run's; no job taken twice.
    for (id, instance) in &jobs {
        assert_eq!(
            finished[id]["attempts"].as_u64(),
            Some(1),
            "{id}: {}",
            finished[id]
        );
        let (_, served) = get(&format!("{}/v1/evaluations/{id}/report", serve.url));
        assert_eq!(
            Some(&served),
            reference.get(instance.as_str()),
            "{instance} ({id}): the service's report.json differs from swtbench run's"
        );
    }
    // No run executed twice: the gold and base runs (content-keyed, shared by every job) once in
    // all; a prediction run once per job, i.e. once per model name for the same patch.
    let mut executed: BTreeMap<(String, String), usize> = BTreeMap::new();
    for record in instance_records(&out) {
        for run in record["runs"].as_array().into_iter().flatten() {
            if run["result"]["kind"] == "executed" {
                let kind = run["run"].as_str().unwrap_or_default().to_string();
                let key = run["key"].as_str().unwrap_or_default().to_string();
                *executed.entry((kind, key)).or_default() += 1;
            }
        }
    }
    assert!(
        !executed.is_empty(),
        "no executed runs recorded under {}",
        out.display()
    );
    for ((kind, key), n) in &executed {
        let most = if kind.starts_with("pred_") { MODELS } else { 1 };
        assert!(
            *n <= most,
            "{kind} run {key} executed {n} times (at most {most})"
        );
    }
    drop(serve);
}

/// Every `swtbench_instance.json` under the service's logs root.
fn instance_records(out: &std::path::Path) -> Vec<Value> {
    let mut found = Vec::new();
    let mut stack = vec![out.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "swtbench_instance.json") {
                if let Ok(v) =
                    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_default())
                {
                    found.push(v);
                }
            }
        }
    }
    found
}
