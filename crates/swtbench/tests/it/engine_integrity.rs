//! A hostile prediction on the real engine with the fixture benchmark: its test always fails,
//! and at exit (after pytest's summary) it prints a PASSED line for itself when the gold fix is
//! present and appends a coverage entry of its own for the gold fix's changed line. The original
//! grades that as fail-to-pass and resolved, and so does `swtbench run` by default; the instance
//! summary says `suspicious` with the reasons, the run report lists it in `suspicious_ids`, and
//! the same outputs graded with `--skip-eval --strict-results` are unresolved.
//!
//! Needs what engine_run.rs needs (Docker, the fixture base image); skipped without them.

use crate::engine_fixture::*;
use serde_json::Value;

const MODEL: &str = "hostile-model";
const ID: &str = "swtfix__calc-3";

const FORGER: &str = r#"import atexit
from calc.ops import sub


def _forge():
    if sub(3, 1) == 2:
        print("PASSED tests/test_model_forged.py::test_forged", flush=True)
    with open("coverage.cover", "a") as f:
        f.write('{"/testbed/calc/ops.py": {"10": 7}}\n')


atexit.register(_forge)


def test_forged():
    assert sub(5, 3) == 3
"#;

#[test]
fn engine_a_test_that_forges_its_result_is_suspicious_and_strict_grading_unresolves_it() {
    require_engine!();
    let fx = Fixture::new();
    let out = fx.root.join("forged");
    let run_id = unique_run_id("forged");
    let lines: Vec<String> = FORGER.lines().map(str::to_string).collect();
    let patch = new_file_patch("test_model_forged.py", &lines);
    let pred =
        serde_json::json!({"instance_id": ID, "model_name_or_path": MODEL, "model_patch": patch});
    std::fs::write(fx.data.join("forged.jsonl"), format!("{pred}\n")).unwrap();
    let args = fx.run_args(&run_id, &out, "forged.jsonl", &["--instance-ids", ID]);
    let o = run(&args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("1 suspicious: "), "{stderr}");
    assert!(containers_of(&run_id).is_empty(), "containers left");

    let report_dir = out
        .join("run_instance_swt_logs")
        .join(&run_id)
        .join(MODEL)
        .join(ID);
    let read = |p: std::path::PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
    };
    let pred_post = out
        .join("run_instance_swt_logs")
        .join(&run_id)
        .join(format!("pred_post__{MODEL}"))
        .join(ID)
        .join("test_output.txt");
    eprintln!("{}", std::fs::read_to_string(&pred_post).unwrap());
    // The original's grade: resolved on the forged line.
    let report = read(report_dir.join("report.json"));
    assert_eq!(report[ID]["resolved"], true, "{report}");
    let summary = read(report_dir.join("swtbench_instance.json"));
    let integrity = &summary["integrity"];
    assert_eq!(integrity["verdict"], "suspicious", "{summary}");
    let checks: Vec<(&str, &str)> = integrity["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["run"].as_str().unwrap(), r["check"].as_str().unwrap()))
        .collect();
    eprintln!("reasons: {integrity}");
    for want in [
        ("pred_pre", "coverage_lines"),
        ("pred_post", "after_report"),
        ("pred_post", "double_status"),
        ("pred_post", "coverage_lines"),
    ] {
        assert!(checks.contains(&want), "{want:?} not in {checks:?}");
    }
    assert!(
        checks.iter().all(|(run, _)| run.starts_with("pred_")),
        "the gold and base runs are honest: {checks:?}"
    );
    let run_report = read(
        out.join("evaluation_results")
            .join(format!("{MODEL}.{run_id}.json")),
    );
    assert_eq!(run_report["suspicious_ids"], serde_json::json!([ID]));
    assert_eq!(run_report["resolved_ids"], serde_json::json!([ID]));
    assert!(run_report["run_parameters"].get("strict results").is_none());

    // The same outputs, graded strictly.
    let mut strict = args.clone();
    strict.extend(["--skip-eval".to_string(), "--strict-results".to_string()]);
    let o = run(&strict);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = read(report_dir.join("report.json"));
    assert_eq!(report[ID]["resolved"], false, "{report}");
    assert_eq!(
        report[ID]["tests_pred"]["FAIL_TO_FAIL"],
        serde_json::json!(["tests/test_model_forged.py::test_forged"])
    );
    let run_report = read(
        out.join("evaluation_results")
            .join(format!("{MODEL}.{run_id}.json")),
    );
    assert_eq!(run_report["unresolved_ids"], serde_json::json!([ID]));
    assert_eq!(
        run_report["run_parameters"]["strict results"],
        "on (docs/integrity.md)"
    );
    assert!(containers_of(&run_id).is_empty(), "containers left");
}
