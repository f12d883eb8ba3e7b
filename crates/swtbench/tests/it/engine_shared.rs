//! Several swtbench processes on one output directory, on the real engine with the fixture
//! benchmark: two evaluations of different models at once share their gold and base runs, and
//! each shared run executes once; a process killed with `kill -9` while it executes shared runs
//! does not hold the next one up.
//!
//! Needs what engine_run.rs needs (Docker, the fixture base image); skipped without them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::engine_fixture::{self, containers_of, spec_table, unique_run_id, wait_exit, Fixture};
use serde_json::Value;

/// The fixture's predictions under another model name, but the one whose test never ends (these
/// tests are not about timeouts); the file's path.
fn predictions_of(fx: &Fixture, model: &str) -> PathBuf {
    let text = std::fs::read_to_string(fx.data.join("predictions.jsonl")).unwrap();
    let lines: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["instance_id"] == engine_fixture::HANGING {
                return None;
            }
            v["model_name_or_path"] = Value::String(model.into());
            Some(v.to_string())
        })
        .collect();
    assert!(lines.len() >= 8, "{} predictions", lines.len());
    let path = fx.root.join(format!("{model}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn spawn_run(fx: &Fixture, out: &Path, run_id: &str, predictions: &Path, events: &Path) -> Child {
    crate::engine_fixture::swtbench_command()
        .arg("run")
        .args(["--dataset", &fx.dataset()])
        .arg("--predictions")
        .arg(predictions)
        .args(["--repo-mirror", &fx.mirrors()])
        .arg("--spec-table")
        .arg(spec_table())
        .args(["--run-id", run_id, "--timeout", "20", "--max-workers", "4"])
        .args(["--cache-level", "instance"])
        .arg("--output-dir")
        .arg(out)
        .arg("--events")
        .arg(events)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn events_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn executed_shared(ev: &[Value]) -> usize {
    ev.iter()
        .filter(|e| {
            e["event"] == "run_finished"
                && e["result"]["kind"] == "executed"
                && !e["run"].as_str().unwrap_or_default().starts_with("pred_")
        })
        .count()
}

/// The distinct content keys of the shared run directories with an output
/// (`<logs>/<kind>/<instance>/<dir>`): how many executions they took at least (identical runs of
/// other instances are copies).
fn shared_keys(out: &Path) -> usize {
    let logs = out.join("run_instance_swt_logs");
    ["gold_pre", "gold_post", "base_pre", "base_post"]
        .iter()
        .flat_map(|k| std::fs::read_dir(logs.join(k)).into_iter().flatten())
        .flatten()
        .flat_map(|inst| std::fs::read_dir(inst.path()).into_iter().flatten())
        .flatten()
        .filter_map(|d| std::fs::read_to_string(d.path().join("swtbench_key.json")).ok())
        .filter_map(|k| {
            Some(
                serde_json::from_str::<Value>(&k).ok()?["key"]
                    .as_str()?
                    .to_string(),
            )
        })
        .collect::<std::collections::BTreeSet<String>>()
        .len()
}

#[test]
fn engine_two_models_at_once_share_their_gold_and_base_runs_and_execute_each_once() {
    require_engine!();
    let fx = Fixture::new();
    let out = fx.root.join("out");
    let (id_a, id_b) = (unique_run_id("shared-a"), unique_run_id("shared-b"));
    let (ev_a, ev_b) = (fx.root.join("a.jsonl"), fx.root.join("b.jsonl"));
    let started = Instant::now();
    let mut a = spawn_run(&fx, &out, &id_a, &predictions_of(&fx, "model-a"), &ev_a);
    let mut b = spawn_run(&fx, &out, &id_b, &predictions_of(&fx, "model-b"), &ev_b);
    let (sa, sb) = (
        wait_exit(&mut a, Duration::from_secs(600)),
        wait_exit(&mut b, Duration::from_secs(600)),
    );
    eprintln!("both done in {:.1} s", started.elapsed().as_secs_f64());
    assert!(sa.success() && sb.success(), "{sa:?} {sb:?}");
    let (ea, eb) = (events_of(&ev_a), events_of(&ev_b));
    let waits = |ev: &[Value]| ev.iter().filter(|e| e["event"] == "run_waiting").count();
    eprintln!(
        "shared runs executed: {} + {}; waits: {} + {}",
        executed_shared(&ea),
        executed_shared(&eb),
        waits(&ea),
        waits(&eb)
    );
    let made = shared_keys(&out);
    assert!(made > 0);
    assert_eq!(
        executed_shared(&ea) + executed_shared(&eb),
        made,
        "every shared run executed once"
    );
    // Both graded every instance alike (the two models' predictions are the same).
    let logs = out.join("run_instance_swt_logs");
    for inst in std::fs::read_dir(logs.join(&id_a).join("model-a")).unwrap() {
        let inst = inst.unwrap().file_name();
        let report = |id: &str, model: &str| {
            std::fs::read(logs.join(id).join(model).join(&inst).join("report.json")).ok()
        };
        assert_eq!(
            report(&id_a, "model-a"),
            report(&id_b, "model-b"),
            "{inst:?}"
        );
    }
    assert!(containers_of(&id_a).is_empty() && containers_of(&id_b).is_empty());
}

#[test]
fn engine_a_holder_killed_with_sigkill_does_not_hold_the_next_process_up() {
    require_engine!();
    let fx = Fixture::new();
    let out = fx.root.join("out");
    let (id_a, id_b) = (unique_run_id("killed"), unique_run_id("after"));
    let (ev_a, ev_b) = (fx.root.join("a.jsonl"), fx.root.join("b.jsonl"));
    let mut a = spawn_run(&fx, &out, &id_a, &predictions_of(&fx, "model-a"), &ev_a);
    // Until it executes a shared run.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let running_shared = events_of(&ev_a).iter().any(|e| {
            e["event"] == "instance_phase"
                && e["phase"]["kind"] == "running"
                && e["phase"]["run"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("gold_"))
        });
        if running_shared {
            break;
        }
        assert!(Instant::now() < deadline, "no shared run started");
        std::thread::sleep(Duration::from_millis(100));
    }
    a.kill().unwrap();
    let _ = a.wait();
    let started = Instant::now();
    let mut b = spawn_run(&fx, &out, &id_b, &predictions_of(&fx, "model-b"), &ev_b);
    let status = wait_exit(&mut b, Duration::from_secs(600));
    let took = started.elapsed();
    eprintln!("the next process finished in {:.1} s", took.as_secs_f64());
    assert!(status.success(), "{status:?}");
    let eb = events_of(&ev_b);
    assert_eq!(
        eb.iter().filter(|e| e["event"] == "run_waiting").count(),
        0,
        "nothing to wait for: the killed process's locks went with it"
    );
    let expected = fx.expected();
    let want = expected["unit_test"]["instances"]
        .as_object()
        .unwrap()
        .values()
        .filter(|i| i["resolved"] == true)
        .count();
    let resolved = eb
        .iter()
        .filter(|e| e["event"] == "instance_finished" && e["outcome"]["kind"] == "resolved")
        .count();
    assert_eq!(resolved, want, "the grades of a whole evaluation");
    // The killed process's containers stop by themselves; the next one's are gone.
    assert!(containers_of(&id_b).is_empty());
    let _ = Command::new("docker")
        .args(["rm", "-f"])
        .args(containers_of(&id_a))
        .output();
}
