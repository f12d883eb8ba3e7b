//! Hostile model tests against the default limits, on the real engine with the fixture benchmark:
//! a fork loop stops at the process limit, an allocation is killed at the memory limit, a big
//! file stops at the largest file, many files stop at the disk limit; each hit is a named cause
//! in `swtbench_instance.json` and the run report while the prediction is still graded; a run
//! that reached a limit is made again under other limits; a test container whose swtbench was killed stops by itself shortly
//! after its timeout. Every test bounds what it asks of the machine (a few thousand processes at
//! most, the memory limit plus 1 GiB, a few hundred MiB of disk) and leaves no container.
//!
//! Needs what engine_run.rs needs (Docker, the fixture base image); skipped without them.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::engine_fixture::*;
use serde_json::Value;

const HOSTILE_MODEL: &str = "hostile-model";

/// A prediction whose patch adds `tests/<name>` with `body`.
fn new_test_file_prediction(instance_id: &str, name: &str, body: &str) -> Value {
    let lines: Vec<String> = body.lines().map(str::to_string).collect();
    let patch = new_file_patch(name, &lines);
    serde_json::json!({"instance_id": instance_id, "model_name_or_path": HOSTILE_MODEL, "model_patch": patch})
}

fn write_predictions(fx: &Fixture, file: &str, rows: &[Value]) {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(fx.data.join(file), text).unwrap();
}

/// `run --dry-run --json` with the same flags: the plan's resolved container limits.
fn planned_limits(args: &[String]) -> Value {
    let mut dry = args.to_vec();
    dry.extend(["--dry-run".to_string(), "--json".to_string()]);
    let out = crate::engine_fixture::swtbench_command()
        .args(&dry)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    plan["limits"].clone()
}

fn hostile_dir(out: &Path, run_id: &str, id: &str) -> std::path::PathBuf {
    out.join("run_instance_swt_logs")
        .join(run_id)
        .join(HOSTILE_MODEL)
        .join(id)
}

fn summary(out: &Path, run_id: &str, id: &str) -> Value {
    let p = hostile_dir(out, run_id, id).join("swtbench_instance.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn pred_output(out: &Path, run_id: &str, run: &str, id: &str) -> String {
    let p = out
        .join("run_instance_swt_logs")
        .join(run_id)
        .join(format!("{run}__{HOSTILE_MODEL}"))
        .join(id)
        .join("test_output.txt");
    String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned()
}

fn run_report(out: &Path, run_id: &str) -> Value {
    let p = out
        .join("evaluation_results")
        .join(format!("{HOSTILE_MODEL}.{run_id}.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

/// The number after `marker` on the last line that has it.
fn last_number_after(text: &str, marker: &str) -> Option<u64> {
    text.lines()
        .rev()
        .filter_map(|l| l.split(marker).nth(1))
        .find_map(|rest| rest.split_whitespace().next()?.parse().ok())
}

/// Both prediction runs of `id` reached `limit`, and the instance was graded.
fn assert_pred_runs_hit(out: &Path, run_id: &str, id: &str, limit: &str) {
    let s = summary(out, run_id, id);
    let hits: Vec<(String, String)> = s["limit_hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no limit_hits in {s}"))
        .iter()
        .map(|h| {
            (
                h["run"].as_str().unwrap().to_string(),
                h["limit"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        hits,
        vec![
            ("pred_pre".to_string(), limit.to_string()),
            ("pred_post".to_string(), limit.to_string())
        ],
        "{s}"
    );
    let kind = s["outcome"]["kind"].as_str().unwrap();
    assert!(
        kind == "resolved" || kind == "unresolved",
        "a limit hit is graded: {s}"
    );
    assert!(
        s["reasons"].as_array().unwrap().iter().any(|r| r
            .as_str()
            .unwrap()
            .contains("graded as the prediction's outcome")),
        "{s}"
    );
    assert!(hostile_dir(out, run_id, id).join("report.json").is_file());
    let report = run_report(out, run_id);
    assert_eq!(
        report["limit_hits"][id],
        serde_json::json!([format!("pred_pre: {limit}"), format!("pred_post: {limit}")]),
        "{report}"
    );
    assert!(containers_of(run_id).is_empty(), "containers left");
}

const FORK_LOOP: &str = r#"import os


def test_forks_without_end():
    n = 0
    # The children live until the loop ends (they wait for the pipe's end), so the processes add
    # up to the limit however slowly a loaded machine forks.
    r, w = os.pipe()
    try:
        for _ in range(5000):
            if os.fork() == 0:
                os.close(w)
                os.read(r, 1)
                os._exit(0)
            n += 1
    except OSError as e:
        print("FORK_FAILED", e)
    os.close(w)
    print("FORKED", n)
    assert False
"#;

#[test]
fn engine_a_fork_loop_stops_at_the_default_process_limit() {
    require_engine!();
    let fx = Fixture::new();
    let out = fx.root.join("fork");
    let run_id = unique_run_id("fork");
    write_predictions(
        &fx,
        "fork.jsonl",
        &[new_test_file_prediction(
            "swtfix__calc-3",
            "test_model_fork.py",
            FORK_LOOP,
        )],
    );
    let args = fx.run_args(
        &run_id,
        &out,
        "fork.jsonl",
        &["--instance-ids", "swtfix__calc-3"],
    );
    let limit = planned_limits(&args)["pids"]
        .as_u64()
        .expect("a default pids limit");
    assert!((256..=16384).contains(&limit), "{limit}");
    let started = Instant::now();
    let o = run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    eprintln!("fork loop run: {:?}", started.elapsed());
    let text = pred_output(&out, &run_id, "pred_pre", "swtfix__calc-3");
    let forked = last_number_after(&text, "FORKED")
        .unwrap_or_else(|| panic!("the test printed no count:\n{text}"));
    assert!(text.contains("FORK_FAILED"), "{text}");
    assert!(
        forked < limit && forked > limit / 2,
        "forked {forked} with a limit of {limit}"
    );
    assert_pred_runs_hit(&out, &run_id, "swtfix__calc-3", "pids");
}

/// Allocates 64 MiB at a time up to `mib` MiB, touching every page.
fn allocation(mib: u64) -> String {
    format!(
        r#"def test_allocates():
    chunks = []
    for i in range({}):
        chunks.append(b"x" * (64 << 20))
    assert False
"#,
        mib / 64
    )
}

#[test]
fn engine_an_allocation_is_killed_at_the_default_memory_limit_and_made_again_with_more() {
    require_engine!();
    let fx = Fixture::new();
    let out = fx.root.join("memory");
    let run_id = unique_run_id("memory");
    // Many workers make the default small (2 GiB, its floor, on hosts up to 85 GiB).
    let base_args = |file: &str, extra: &[&str]| {
        let mut a = vec!["--instance-ids", "swtfix__calc-3"];
        a.extend_from_slice(extra);
        let mut args = fx.run_args(&run_id, &out, file, &a);
        let at = args.iter().position(|a| a == "--max-workers").unwrap();
        args[at + 1] = "32".into();
        // A container at its memory limit without swap evicts its own program's pages before the
        // kernel kills it: on a loaded machine that can take longer than the fixture's 20 s.
        let at = args.iter().position(|a| a == "--timeout").unwrap();
        args[at + 1] = "180".into();
        args
    };
    let probe = base_args("memory.jsonl", &[]);
    write_predictions(
        &fx,
        "memory.jsonl",
        &[new_test_file_prediction(
            "swtfix__calc-3",
            "test_model_alloc.py",
            &allocation(0),
        )],
    );
    let limit = planned_limits(&probe)["memory_bytes"]
        .as_u64()
        .expect("a default memory limit");
    assert!(limit <= 16 << 30, "{limit}");
    let limit_mib = limit >> 20;
    write_predictions(
        &fx,
        "memory.jsonl",
        &[new_test_file_prediction(
            "swtfix__calc-3",
            "test_model_alloc.py",
            &allocation(limit_mib + 1024),
        )],
    );
    let o = run(&base_args("memory.jsonl", &[]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_killed_before_the_end(&out, &run_id);
    assert_pred_runs_hit(&out, &run_id, "swtfix__calc-3", "memory");

    // The same run again reuses everything; with more memory the runs at the limit are made again.
    let again = run(&base_args("memory.jsonl", &[]));
    assert!(again.status.success());
    assert_eq!(executed_runs(&events(&out)), 0, "the same limits reuse");
    let other = format!("{}m", limit_mib + 512);
    let o = run(&base_args("memory.jsonl", &["--memory", &other]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        executed_runs(&events(&out)),
        2,
        "with more memory the two runs that reached the limit execute again (the others stand)"
    );
    assert_killed_before_the_end(&out, &run_id);
}

/// The allocating test was killed (SIGKILL, 137) before it could fail on its own.
fn assert_killed_before_the_end(out: &Path, run_id: &str) {
    for run in ["pred_pre", "pred_post"] {
        let dir = out
            .join("run_instance_swt_logs")
            .join(run_id)
            .join(format!("{run}__{HOSTILE_MODEL}"))
            .join("swtfix__calc-3");
        let key: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("swtbench_key.json")).unwrap())
                .unwrap();
        assert_eq!(key["result"]["test_exit_code"], 137, "{run}: {key}");
        assert_eq!(key["result"]["limit"], "memory", "{run}: {key}");
        let text = pred_output(out, run_id, run, "swtfix__calc-3");
        assert!(!text.contains("1 failed"), "{run} ran to its end: {text}");
    }
}

const BIG_FILE: &str = r#"def test_writes_a_big_file():
    written = 0
    try:
        with open("/tmp/big.bin", "wb") as f:
            for _ in range(20):
                f.write(b"\0" * (8 << 20))
                written += 8
    except OSError as e:
        print("WRITE_FAILED", e)
    print("WRITTEN_MIB", written)
    assert False
"#;

const MANY_FILES: &str = r#"import time


def test_writes_many_files():
    for i in range(40):
        with open(f"/tmp/many{i}.bin", "wb") as f:
            f.write(b"\0" * (8 << 20))
    time.sleep(15)
    print("NOT_STOPPED")
"#;

#[test]
fn engine_writes_stop_at_the_largest_file_and_at_the_disk_limit() {
    require_engine!();
    let fx = Fixture::new();
    let out = fx.root.join("disk");
    let run_id = unique_run_id("disk");
    write_predictions(
        &fx,
        "disk.jsonl",
        &[
            new_test_file_prediction("swtfix__calc-3", "test_model_big.py", BIG_FILE),
            new_test_file_prediction("swtfix__calc-2", "test_model_many.py", MANY_FILES),
        ],
    );
    let ids = ["--instance-ids", "swtfix__calc-3", "swtfix__calc-2"];
    // By default both bounds are there.
    let defaults = planned_limits(&fx.run_args(&run_id, &out, "disk.jsonl", &ids));
    assert_eq!(defaults["file_bytes"].as_u64(), Some(1 << 30), "{defaults}");
    assert!(
        defaults["disk_bytes"].as_u64().unwrap() >= 1 << 30,
        "{defaults}"
    );
    // Small ones, so that the test writes little.
    let mut extra = ids.to_vec();
    extra.extend(["--file-limit", "64m", "--disk-limit", "128m"]);
    let o = run(&fx.run_args(&run_id, &out, "disk.jsonl", &extra));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let big = pred_output(&out, &run_id, "pred_pre", "swtfix__calc-3");
    assert!(big.contains("File too large"), "{big}");
    assert_eq!(last_number_after(&big, "WRITTEN_MIB"), Some(64), "{big}");
    assert_pred_runs_hit(&out, &run_id, "swtfix__calc-3", "disk");

    let many = pred_output(&out, &run_id, "pred_pre", "swtfix__calc-2");
    assert!(!many.contains("NOT_STOPPED"), "{many}");
    assert!(
        many.contains(
            "[swtbench: the run wrote more than its disk limit of 128 MiB and was stopped"
        ),
        "{many}"
    );
    assert_pred_runs_hit(&out, &run_id, "swtfix__calc-2", "disk");
}

/// Seconds a test container outlives its timeout at most (the runner's grace).
const CONTAINER_GRACE_SECS: u64 = 20;

#[test]
fn engine_a_test_container_stops_by_itself_after_its_timeout_when_swtbench_is_killed() {
    require_engine!();
    let fx = Fixture::new();
    let out = fx.root.join("killed");
    let run_id = unique_run_id("killed");
    let timeout = 5;
    let mut args = fx.run_args(
        &run_id,
        &out,
        "predictions.jsonl",
        &["--instance-ids", "swtfix__calc-7"],
    );
    let at = args.iter().position(|a| a == "--timeout").unwrap();
    args[at + 1] = timeout.to_string();
    let mut child = spawn(&args);
    let deadline = Instant::now() + Duration::from_secs(120);
    while containers_of(&run_id).is_empty() {
        assert!(Instant::now() < deadline, "no container appeared");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    assert!(
        !containers_of(&run_id).is_empty(),
        "left running at the kill"
    );
    let bound = Duration::from_secs(timeout + CONTAINER_GRACE_SECS + 10);
    while !containers_of(&run_id).is_empty() {
        if killed.elapsed() > bound {
            let left = containers_of(&run_id);
            for id in &left {
                let _ = Command::new("docker").args(["rm", "-f", id]).output();
            }
            panic!("containers {left:?} still there {bound:?} after the kill");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!(
        "the container was gone {:.1} s after swtbench was killed (timeout {timeout} s)",
        killed.elapsed().as_secs_f64()
    );
}
