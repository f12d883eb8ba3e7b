//! `swtbench grade` on a tree that `swtbench run` wrote on the real container engine: with the
//! same dataset, predictions and spec table, `grade --rewrite` must write every `report.json`
//! byte for byte as `run` did (custom repositories read through the table's `log_parser`, an
//! empty prediction graded without runs) and a run report with the same content; without
//! `--predictions` the empty patch's report is kept.
//!
//! Needs Docker and the local base image `swtbench-fixture-base:bookworm` (`scripts/base-image`);
//! without them the test prints why it is skipped. The fixture images are built (or reused) under
//! the same lock as the other engine tests. The test name contains `engine` so nextest's docker
//! group limits how many run at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::layer;

const BASE_IMAGE: &str = "swtbench-fixture-base:bookworm";
const MODEL_DIR: &str = "swtbench-fixture-model";
const IMAGES_LOCK: &str = "/tmp/swtbench-engine-tests.images.lock";
/// Every kind of outcome but the hanging test (which only costs time): resolved, passes before
/// the fix, never passes, does not apply, empty patch, binary diff plus a good test, and a second
/// repository.
const INSTANCES: &[&str] = &[
    "swtfix__calc-1",
    "swtfix__calc-2",
    "swtfix__calc-3",
    "swtfix__calc-4",
    "swtfix__calc-5",
    "swtfix__calc-6",
    "swtfix__textkit-1",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn engine_missing() -> Option<String> {
    let docker = Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output();
    if !docker.is_ok_and(|o| o.status.success()) {
        return Some("no reachable Docker engine (`docker info` failed)".into());
    }
    let base = Command::new("docker")
        .args(["image", "inspect", BASE_IMAGE])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !base.is_ok_and(|s| s.success()) {
        return Some(format!(
            "the base image {BASE_IMAGE} is missing (build it with scripts/base-image)"
        ));
    }
    None
}

fn swtbench(args: &[&str], cwd: &Path) -> Output {
    let out = crate::engine_fixture::swtbench_command()
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    eprintln!(
        "swtbench {}\n--- stderr ---\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every `report.json` under `dir`, by path relative to it.
fn reports(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "report.json") {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn engine_grade_reproduces_the_reports_of_run() {
    if let Some(why) = engine_missing() {
        layer::skip(&why);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let data = root.join("fx");
    let made = Command::new("python3")
        .arg(workspace().join("fixtures/benchmark/make_benchmark.py"))
        .arg(&data)
        .output()
        .unwrap();
    assert!(made.status.success(), "make_benchmark.py failed");
    let s = |p: &Path| p.display().to_string();
    let (dataset, preds, mirrors) = (
        s(&data.join("dataset.jsonl")),
        s(&data.join("predictions.jsonl")),
        s(&data.join("mirrors")),
    );
    let table = s(&workspace().join("fixtures/benchmark/spec-table.toml"));
    let mut flock = Command::new("flock");
    crate::engine_fixture::binary::with_build_network(crate::engine_fixture::binary::hermetic(
        &mut flock,
    ));
    let built = flock
        .arg(IMAGES_LOCK)
        .arg(crate::engine_fixture::bin())
        .args(["images", "build", "--dataset", &dataset])
        .args(["--repo-mirror", &mirrors, "--spec-table", &table])
        .args(["--output-dir", &s(&root.join("prebuild"))])
        .output()
        .unwrap();
    assert!(built.status.success(), "building the fixture images failed");

    let run_id = format!("grade-{}", std::process::id());
    let mut args = vec![
        "run",
        "--dataset",
        &dataset,
        "--predictions",
        &preds,
        "--repo-mirror",
        &mirrors,
        "--spec-table",
        &table,
        "--run-id",
        &run_id,
        "--output-dir",
        "out",
        "--timeout",
        "60",
        "--max-workers",
        "2",
        "--cache-level",
        "instance",
        "--instance-ids",
    ];
    args.extend(INSTANCES.iter().copied());
    let out = swtbench(&args, root);
    assert_eq!(out.status.code(), Some(0));
    let left = Command::new("docker")
        .args(["ps", "-a", "-q", "--filter"])
        .arg(format!("label=swtbench.run_id={run_id}"))
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "containers left by the run");
    let out_dir = root.join("out");
    let logs = out_dir.join("run_instance_swt_logs");
    let by_run = reports(&logs);
    assert_eq!(by_run.len(), INSTANCES.len());
    let run_report_path = out_dir
        .join("evaluation_results")
        .join(format!("{MODEL_DIR}.{run_id}.json"));
    let mut by_run_report = read_json(&run_report_path);
    assert_eq!(by_run_report["completed_instances"], 0);
    // How the run was made is `run`'s to say; `grade` into another directory does not know it.
    let params = by_run_report
        .as_object_mut()
        .unwrap()
        .remove("run_parameters")
        .expect("run writes run_parameters");
    assert_eq!(params["exec mode"], "unit_test");

    // grade --rewrite: the same reports, byte for byte, and the same run report.
    let grade = |extra: &[&str]| {
        let mut a = vec![
            "grade",
            "--dataset",
            &dataset,
            "--run-id",
            &run_id,
            "--spec-table",
            &table,
            "--logs-root",
            "out/run_instance_swt_logs",
            "--output-dir",
            "graded",
        ];
        a.extend(extra);
        swtbench(&a, root)
    };
    let mut with_preds = vec![
        "--predictions",
        preds.as_str(),
        "--rewrite",
        "--instance-ids",
    ];
    with_preds.extend(INSTANCES.iter().copied());
    let out = grade(&with_preds);
    assert_eq!(out.status.code(), Some(0));
    let graded_path = root
        .join("graded")
        .join(format!("{MODEL_DIR}.{run_id}.json"));
    assert_eq!(reports(&logs), by_run);
    assert_eq!(read_json(&graded_path), by_run_report);
    let empty = by_run_report["unresolved_ids"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v == "swtfix__calc-5");
    assert!(empty, "the empty patch is graded, not an error");

    // From the reports the runs left, without the predictions: everything is reused and the
    // empty patch (no runs at all) keeps its report; only `completed` differs from run's.
    let out = grade(&["--model", MODEL_DIR]);
    assert_eq!(out.status.code(), Some(0));
    let mut graded = read_json(&graded_path);
    assert_eq!(graded["completed_instances"], INSTANCES.len());
    for k in ["completed_instances", "completed_ids"] {
        graded[k] = by_run_report[k].clone();
    }
    assert_eq!(graded, by_run_report);
    assert_eq!(reports(&logs), by_run);

    // Re-graded where `run` wrote its run report: how the run was made stays in it.
    let out = swtbench(
        &[
            "grade",
            "--dataset",
            &dataset,
            "--run-id",
            &run_id,
            "--spec-table",
            &table,
            "--logs-root",
            "out/run_instance_swt_logs",
            "--output-dir",
            "out/evaluation_results",
            "--model",
            MODEL_DIR,
        ],
        root,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(read_json(&run_report_path)["run_parameters"], params);
}
