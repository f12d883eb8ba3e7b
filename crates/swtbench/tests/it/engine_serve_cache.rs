//! `swtbench serve --image-cache-size`: with a budget smaller than one instance image, the
//! instance image an evaluation used is removed once its verdict is stored (the metrics count
//! it), and the next prediction of that instance builds it again and gets the same verdict. The
//! environment and base images stay. The instance is the fixture's `swtfix__calc-1` under an id
//! and a checkout of its own, so that its instance image is this test's alone (other tests use
//! the fixture's).
//!
//! Needs what engine_run.rs needs (Docker, the fixture base image).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::engine_fixture::{self, Fixture};
use crate::engine_serve::{agent, get, own_instance, OwnImage, Serve};

const SOURCE: &str = "swtfix__calc-1";
const OWN: &str = "swtfix__calc-9101";

fn image_exists(tag: &str) -> bool {
    Command::new("docker")
        .args(["image", "inspect", tag])
        .output()
        .unwrap()
        .status
        .success()
}

/// The instance image tag the job's events name, and whether the job built it.
fn instance_image(out: &Path, job: &str) -> (String, bool) {
    let events = out.join("service/events").join(format!("{job}.jsonl"));
    let text = std::fs::read_to_string(&events).unwrap();
    let ready: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "image_ready" && e["kind"] == "instance")
        .collect();
    assert_eq!(ready.len(), 1, "one instance image in {text}");
    let built = ready[0]["outcome"]["kind"] == "built";
    (ready[0]["tag"].as_str().unwrap().to_string(), built)
}

fn evaluate(url: &str, model: &str, patch: &str) -> Value {
    let body = json!({"instance_id": OWN, "model_name_or_path": model, "model_patch": patch});
    let mut r = agent()
        .post(format!("{url}/v1/evaluations?wait=100"))
        .header("content-type", "application/json")
        .send(body.to_string().as_bytes())
        .unwrap();
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap();
    assert!(status == 200 || status == 202, "{status} {text}");
    let mut job: Value = serde_json::from_str(&text).unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    while job["state"] != "done" {
        assert!(
            job["state"] == "queued" || job["state"] == "running",
            "{job}"
        );
        assert!(Instant::now() < deadline, "no verdict in 600 s: {job}");
        let (_, text) = get(&format!(
            "{url}/v1/evaluations/{}?wait=60",
            job["id"].as_str().unwrap()
        ));
        job = serde_json::from_str(&text).unwrap();
    }
    job
}

/// Waits until the metrics count `n` evicted images.
fn wait_evicted(url: &str, n: u64) {
    let want = format!("swtbench_images_total{{result=\"evicted\"}} {n}\n");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (status, text) = get(&format!("{url}/metrics"));
        assert_eq!(status, 200, "{text}");
        if text.contains(&want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no `{}` in 120 s:\n{text}",
            want.trim()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn engine_serve_image_cache_evicts_the_least_recently_used_and_builds_it_again() {
    require_engine!();
    let fx = Fixture::new();
    // The dataset and prediction of one instance of the test's own.
    let data = own_instance(&fx, SOURCE, OWN, &fx.root.join("cache-data"), false);
    let patch = std::fs::read_to_string(fx.data.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|p| p["instance_id"] == SOURCE)
        .unwrap()["model_patch"]
        .as_str()
        .unwrap()
        .to_string();

    let out = fx.root.join("served-cache");
    let mut cmd = engine_fixture::swtbench_command();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--workers", "1"])
        .args(["--image-cache-size", "1"])
        .arg("--")
        .args(["--dataset", &data.dataset])
        .args(["--repo-mirror", &data.mirrors])
        .arg("--spec-table")
        .arg(engine_fixture::spec_table())
        .args(["--timeout", "20", "--output-dir"])
        .arg(&out);
    let serve = Serve::spawn(cmd, &out);
    let mut guard = OwnImage(None);

    let first = evaluate(&serve.url, "model-a", &patch);
    assert_eq!(first["verdict"]["resolved"], true, "{first}");
    let (tag, built) = instance_image(&out, first["id"].as_str().unwrap());
    guard.0 = Some(tag.clone());
    assert!(built, "the first prediction builds its instance image");
    // Over the budget of 1 byte once the job ended: the image is removed.
    wait_evicted(&serve.url, 1);
    assert!(!image_exists(&tag), "{tag} was evicted");
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("service/image-use.json")).unwrap())
            .unwrap();
    assert!(record.get(&tag).is_none(), "{record}");

    // Another prediction of the instance (another model: another job) builds it again, reuses the
    // stored gold and base runs, and gets the same verdict.
    let second = evaluate(&serve.url, "model-b", &patch);
    assert_eq!(second["verdict"]["resolved"], true, "{second}");
    let (again, built) = instance_image(&out, second["id"].as_str().unwrap());
    assert_eq!(again, tag);
    assert!(built, "the evicted image is built again");
    assert_eq!(
        second["verdict"]["detail"], first["verdict"]["detail"],
        "the same outcome"
    );
    assert!(
        second["verdict"]["runs"]["reused"].as_u64().unwrap() >= 4,
        "gold and base runs come from the store: {second}"
    );
    wait_evicted(&serve.url, 2);
    assert!(!image_exists(&tag));
    drop(serve);
}
