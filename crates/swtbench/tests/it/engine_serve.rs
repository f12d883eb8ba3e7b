//! `swtbench serve` on the real engine with the fixture benchmark: a batch of the fixture's
//! predictions through the HTTP API, the service killed with SIGKILL three times while it
//! evaluates (once while it builds an instance image, then after one verdict and after three) and
//! started again each time; every verdict is delivered, each instance's `report.json` is
//! byte-identical to `swtbench run`'s (the shared reference run), no job executed twice once it
//! had finished, and nothing of the killed processes is left (containers, the build's container,
//! temporary files). The batch's first prediction is the fixture's `swtfix__calc-1` under an id
//! of the test's own, whose instance image no other test has, so that the service builds it.
//!
//! Needs what engine_run.rs needs (Docker, the fixture base image).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::engine_fixture::{self, containers_of, reference_run, reports_of, Fixture, HANGING};
use crate::support::git;

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
    start_with(&fx.dataset(), &fx.mirrors(), out, workers)
}

/// A dataset and mirror directory with one instance no other test has.
pub(crate) struct OwnInstance {
    pub(crate) dataset: String,
    pub(crate) mirrors: String,
}

/// The fixture's instance `source` as instance `own`, whose base commit is a new commit on top of
/// `source`'s (it adds a file that no test reads), in a copy of the fixture's mirrors under
/// `dir`: its patches, tests and verdict are `source`'s, but its instance image (keyed by its
/// checkout) is its own, so a test may build it, evict it or kill its build without touching
/// the fixture images other tests use. The dataset holds the fixture's rows when `with_fixture`,
/// then `own`'s.
pub(crate) fn own_instance(
    fx: &Fixture,
    source: &str,
    own: &str,
    dir: &Path,
    with_fixture: bool,
) -> OwnInstance {
    let rows = std::fs::read_to_string(fx.data.join("dataset.jsonl")).unwrap();
    let mut row: Value = rows
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["instance_id"] == source)
        .unwrap();
    let mirrors = dir.join("mirrors");
    std::fs::create_dir_all(dir).unwrap();
    let copied = Command::new("cp")
        .arg("-r")
        .arg(fx.data.join("mirrors"))
        .arg(&mirrors)
        .status()
        .unwrap();
    assert!(copied.success());
    let mirror = mirrors.join(format!(
        "{}.git",
        row["repo"].as_str().unwrap().replace('/', "__")
    ));
    let work = dir.join("checkout");
    git(
        dir,
        &[
            "clone",
            "-q",
            &mirror.display().to_string(),
            &work.display().to_string(),
        ],
    );
    git(
        &work,
        &["checkout", "-q", row["base_commit"].as_str().unwrap()],
    );
    std::fs::write(work.join("OWN_INSTANCE.txt"), format!("{own}\n")).unwrap();
    git(&work, &["add", "OWN_INSTANCE.txt"]);
    git(
        &work,
        &["commit", "-q", "-m", &format!("{own}: its own checkout")],
    );
    let commit = git(&work, &["rev-parse", "HEAD"]);
    git(
        &work,
        &["push", "-q", "origin", &format!("HEAD:refs/heads/{own}")],
    );
    row["instance_id"] = Value::from(own);
    row["base_commit"] = Value::from(commit);
    let dataset = dir.join("dataset.jsonl");
    let fixture_rows = match with_fixture {
        true => format!("{}\n", rows.trim_end()),
        false => String::new(),
    };
    std::fs::write(&dataset, format!("{fixture_rows}{row}\n")).unwrap();
    OwnInstance {
        dataset: dataset.display().to_string(),
        mirrors: mirrors.display().to_string(),
    }
}

/// [`start`] with another dataset file and mirror directory ([`own_instance`]'s).
pub(crate) fn start_on(data: &OwnInstance, out: &Path, workers: usize) -> Serve {
    start_with(&data.dataset, &data.mirrors, out, workers)
}

fn start_with(dataset: &str, mirrors: &str, out: &Path, workers: usize) -> Serve {
    let mut cmd = engine_fixture::swtbench_command();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--workers"])
        .arg(workers.to_string())
        .arg("--")
        .args(["--dataset", dataset, "--repo-mirror", mirrors])
        .arg("--spec-table")
        .arg(engine_fixture::spec_table())
        .args(["--timeout", "20", "--output-dir"])
        .arg(out);
    Serve::spawn(cmd, out)
}

impl Serve {
    /// Starts `cmd` (a `serve` command line whose output directory is `out`) and waits for the
    /// address it listens on.
    pub(crate) fn spawn(mut cmd: Command, out: &Path) -> Serve {
        let address = out.join("service").join("address");
        let _ = std::fs::remove_file(&address);
        cmd.stdout(Stdio::null()).stderr(Stdio::inherit());
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

/// Polls the batches until `done(their evaluations)` holds (at most `limit`): the evaluations.
fn wait_batches(
    url: &str,
    batches: &[String],
    limit: Duration,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + limit;
    loop {
        let mut evaluations = Vec::new();
        for batch in batches {
            let (status, text) = get(&format!("{url}/v1/batches/{batch}"));
            assert_eq!(status, 200, "{text}");
            let v: Value = serde_json::from_str(&text).unwrap();
            evaluations.extend(v["evaluations"].as_array().unwrap().iter().cloned());
        }
        if done(&evaluations) {
            return evaluations;
        }
        assert!(
            Instant::now() < deadline,
            "the batches did not get there: {evaluations:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
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

/// How many batches of `per_batch` predictions a fault drill submits: one, or as many as
/// `SWTBENCH_TEST_SERVE_PREDICTIONS=N` needs (for the measurement in docs/service.md), each under
/// a model name of its own.
pub(crate) fn batch_copies(per_batch: usize) -> usize {
    let wanted: usize = std::env::var("SWTBENCH_TEST_SERVE_PREDICTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(per_batch);
    wanted.div_ceil(per_batch).max(1)
}

/// Submits `predictions` as one batch, under the model name `swtbench-fixture-model-{copy}`
/// unless `copy` is 0: the batch's id and its evaluations' ids.
pub(crate) fn submit_copy(url: &str, predictions: &[Value], copy: usize) -> (String, Vec<String>) {
    let body: String = predictions
        .iter()
        .map(|p| {
            let mut p = p.clone();
            if copy > 0 {
                p["model_name_or_path"] = Value::from(format!("swtbench-fixture-model-{copy}"));
            }
            format!("{p}\n")
        })
        .collect();
    let mut r = agent()
        .post(format!("{url}/v1/batches"))
        .send(body.as_bytes())
        .unwrap();
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap();
    assert_eq!(status, 202, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let ids = v["evaluations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect();
    (v["id"].as_str().unwrap().to_string(), ids)
}

/// The fixture instance copied under the test's own id (its instance image is built by the
/// service), and that id.
const COPIED: &str = "swtfix__calc-1";
const OWN: &str = "swtfix__calc-9102";

/// The image tag and any container that builds it, removed when dropped (should the test fail
/// before the service removed its build).
pub(crate) struct OwnImage(pub(crate) Option<String>);

impl Drop for OwnImage {
    fn drop(&mut self) {
        if let Some(tag) = &self.0 {
            for id in build_containers(tag) {
                let _ = Command::new("docker").args(["rm", "-f", &id]).output();
            }
            let _ = Command::new("docker").args(["rmi", "-f", tag]).output();
        }
    }
}

/// The containers that build image `tag` (a commit build's, labelled with the image it builds).
fn build_containers(tag: &str) -> Vec<String> {
    engine_fixture::containers_matching(&[
        format!("label=swtbench.image={tag}"),
        "name=swtbench-build-".to_string(),
    ])
}

/// Waits until job `id`'s events say an instance image build started and has not ended: its tag.
fn wait_instance_build(out: &Path, id: &str) -> String {
    let events = out.join("service/events").join(format!("{id}.jsonl"));
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let text = std::fs::read_to_string(&events).unwrap_or_default();
        let parsed: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let started = parsed
            .iter()
            .find(|e| e["event"] == "image_build_started" && e["kind"] == "instance");
        if let Some(started) = started {
            let tag = started["tag"].as_str().unwrap().to_string();
            assert!(
                !parsed
                    .iter()
                    .any(|e| e["event"] == "image_ready" && e["tag"] == tag.as_str()),
                "the build of {tag} ended before the test could kill the service during it"
            );
            return tag;
        }
        assert!(
            Instant::now() < deadline,
            "no instance image build in 300 s: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn engine_serve_verdicts_equal_run_and_survive_three_kills() {
    require_engine!();
    let fx = Fixture::new();
    let (ref_out, ref_id) = reference_run(&fx);
    let mut reference = reports_of(&ref_out, &ref_id);
    let out = fx.root.join("served");
    let mut predictions: Vec<Value> = std::fs::read_to_string(fx.data.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|p: &Value| p["instance_id"] != HANGING)
        .collect();
    // The copied instance first: the service builds its instance image at once.
    let data = own_instance(&fx, COPIED, OWN, &fx.root.join("served-data"), true);
    let mut own = predictions
        .iter()
        .find(|p| p["instance_id"] == COPIED)
        .unwrap()
        .clone();
    own["instance_id"] = Value::from(OWN);
    predictions.insert(0, own);
    let own_reference = reference[COPIED].replace(COPIED, OWN);
    reference.insert(OWN.to_string(), own_reference);
    let copies = batch_copies(predictions.len());
    let started = Instant::now();

    let mut serve = start_on(&data, &out, 2);
    let mut batches = Vec::new();
    let mut submitted: Vec<(String, String)> = Vec::new(); // (instance, evaluation id)
    for k in 0..copies {
        let (batch, ids) = submit_copy(&serve.url, &predictions, k);
        batches.push(batch);
        assert_eq!(ids.len(), predictions.len());
        for (p, id) in predictions.iter().zip(ids) {
            submitted.push((p["instance_id"].as_str().unwrap().to_string(), id));
        }
    }
    let total = submitted.len() as u64;

    // Killed while it builds the copied instance's image.
    let mut guard = OwnImage(None);
    let tag = wait_instance_build(&out, &submitted[0].1);
    guard.0 = Some(tag.clone());
    kill9(&mut serve);
    serve = start_on(&data, &out, 2);

    // Killed twice more while it evaluates: after the first verdict (a tenth of them), and after
    // a few more (half); each time while the running jobs are on their first take (a job whose
    // third take a kill ends fails, by design: a job that keeps killing its worker is not taken
    // forever).
    let mut finished_before_kills = Vec::new();
    for at_least in [(total / 10).max(1), (total / 2).max(3)] {
        let evaluations = wait_batches(&serve.url, &batches, Duration::from_secs(1800), |es| {
            es.iter().filter(|e| e["state"] == "done").count() as u64 >= at_least
                && es
                    .iter()
                    .all(|e| e["state"] != "running" || e["attempts"].as_u64().unwrap_or(0) <= 1)
        });
        kill9(&mut serve);
        finished_before_kills = evaluations
            .iter()
            .filter(|e| e["state"] == "done")
            .map(|e| {
                (
                    e["id"].as_str().unwrap().to_string(),
                    e["attempts"].as_u64(),
                )
            })
            .collect();
        serve = start_on(&data, &out, 2);
    }
    let evaluations = wait_batches(&serve.url, &batches, Duration::from_secs(3600), |es| {
        es.iter().all(|e| {
            ["done", "failed", "cancelled"].contains(&e["state"].as_str().unwrap_or_default())
        })
    });
    let done = evaluations.iter().filter(|e| e["state"] == "done").count() as u64;
    assert_eq!(done, total, "every verdict delivered: {evaluations:?}");
    eprintln!(
        "engine_serve: {total} predictions in {copies} batch(es), 2 workers, the service killed \
         three times: every verdict in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // A job that had finished was not taken again.
    for (id, attempts) in &finished_before_kills {
        let (_, text) = get(&format!("{}/v1/evaluations/{id}", serve.url));
        let job: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(job["attempts"].as_u64(), *attempts, "{id} ran again: {job}");
    }
    // Each verdict's report.json is the run's, byte for byte.
    for (instance, id) in &submitted {
        let instance = instance.as_str();
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
    // The killed build's container is gone; the image was built again and is kept (warm).
    assert_eq!(build_containers(&tag), Vec::<String>::new());
    let (_, text) = get(&format!("{}/v1/evaluations/{}", serve.url, submitted[0].1));
    let job: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(job["verdict"]["resolved"], true, "{job}");

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
