//! `swtbench run` without running anything: argument checks and the `--dry-run --json` plan of the
//! fixture benchmark. Works with or without a container engine (without one the plan assumes no
//! image exists and says so).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn swtbench(args: &[&str], cwd: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_swtbench"))
        .args(args)
        .current_dir(cwd)
        .env_remove("SWTBENCH_REPO_MIRROR")
        .output()
        .unwrap()
}

#[test]
fn the_dry_run_plan_of_the_fixture_benchmark() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = tmp.path().join("fx");
    let made = Command::new("python3")
        .arg(workspace().join("fixtures/benchmark/make_benchmark.py"))
        .arg(&fx)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let table = workspace().join("fixtures/benchmark/spec-table.toml");
    let (dataset, predictions, mirrors) = (
        fx.join("dataset.jsonl"),
        fx.join("predictions.jsonl"),
        fx.join("mirrors"),
    );
    let args = [
        "run",
        "--dataset",
        dataset.to_str().unwrap(),
        "--predictions",
        predictions.to_str().unwrap(),
        "--repo-mirror",
        mirrors.to_str().unwrap(),
        "--spec-table",
        table.to_str().unwrap(),
        "--run_id",
        "plan",
        "--dry-run",
        "--json",
    ];
    let out = swtbench(&args, tmp.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["format"], 1);
    assert_eq!(plan["model"], "swtbench-fixture-model");
    assert_eq!(plan["exec_mode"], "unit_test");
    assert_eq!(plan["counts"]["instances"], 10);
    assert_eq!(plan["counts"]["empty_patch"], 1);
    let instances = plan["instances"].as_array().unwrap();
    let by_id = |id: &str| instances.iter().find(|i| i["instance_id"] == id).unwrap();
    assert_eq!(by_id("swtfix__calc-5")["status"], "empty_patch");
    let calc1 = by_id("swtfix__calc-1");
    assert_eq!(calc1["status"], "evaluate");
    assert_eq!(calc1["runs"].as_array().unwrap().len(), 6);
    // The other calc instances share calc-1's gold runs.
    let gold = &by_id("swtfix__calc-2")["runs"][2];
    assert_eq!(gold["kind"], "gold_pre");
    assert_eq!(gold["action"], "same_as");
    assert_eq!(gold["instance_id"], "swtfix__calc-1");
    // Nothing was written: a dry run has no side effects.
    assert!(!tmp.path().join("run_instance_swt_logs").exists());
    assert!(!tmp.path().join("image_build_logs").exists());
}

#[test]
fn bad_arguments_are_input_errors() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (
            vec![
                "run",
                "--predictions",
                "gold",
                "--run-id",
                "gold_pre",
                "--dry-run",
            ],
            "collides",
        ),
        (
            vec![
                "run",
                "--predictions",
                "gold",
                "--run-id",
                "r",
                "--exec-mode",
                "reproduction_script",
                "--dry-run",
            ],
            "reproduction",
        ),
        (
            vec![
                "run",
                "--predictions",
                "gold",
                "--run-id",
                "r",
                "--max-workers",
                "0",
            ],
            "at least 1",
        ),
    ] {
        let out = swtbench(&args, tmp.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn an_unreachable_engine_is_exit_code_3_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_swtbench"))
        .args([
            "run",
            "--dataset",
            "lite",
            "--offline",
            "--predictions",
            "gold",
        ])
        .args(["--instance-ids", "sympy__sympy-20590", "--run-id", "smoke"])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach the container engine"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "nothing written"
    );
}
