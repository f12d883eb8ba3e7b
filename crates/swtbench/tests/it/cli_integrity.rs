//! `swtbench grade` on a run tree with a forged log: the model's test fails, and prints a PASSED
//! line for itself from `atexit` (after pytest's summary) only when the gold fix is present. The
//! original grades that as fail-to-pass and resolved, and so does `grade` by default (the
//! report.json is the original's); the run report names the instance in `suspicious_ids` with
//! the reason, and `--strict-results` grades it unresolved. An honest instance beside it is
//! graded the same both ways and is not suspicious.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};
use swtbench_core::hash::sha256_hex;

const RUN: &str = "integrity-run";
const MODEL: &str = "org/model";
const MODEL_DIR: &str = "org__model";

const CODE_PATCH: &str = "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n+    return x + 1\n";

fn new_file_patch(path: &str) -> String {
    format!("diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x = 1\n")
}

/// A run's output as swtbench's eval script and pytest print it: the summary section, the final
/// line, then whatever the tests print at exit, then the coverage dump.
fn output(applied: bool, file: &str, results: &[(&str, &str)], at_exit: &str) -> String {
    let apply = if applied {
        format!("Checking patch {file}...\nApplied patch {file} cleanly.\n")
    } else {
        String::new()
    };
    let summary: String = results
        .iter()
        .map(|(status, test)| format!("{status} {file}::{test}\n"))
        .collect();
    let count = |s: &str| results.iter().filter(|(st, _)| *st == s).count();
    let counts = match (count("FAILED"), count("PASSED")) {
        (0, 0) => "no tests ran".to_string(),
        (0, p) => format!("{p} passed"),
        (f, 0) => format!("{f} failed"),
        (f, p) => format!("{f} failed, {p} passed"),
    };
    format!(
        "+ cd /testbed\n+ git apply -v -\n{apply}\
+ python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(src/m\\.py)' -m pytest --no-header -rA -p no:cacheprovider {file}\n\
============================= test session starts ==============================\n\
collected {n} items\n\n\
=========================== short test summary info ============================\n\
{summary}======================== {counts} in 0.02s =========================\n{at_exit}\
+ cat coverage.cover\n{{\"/testbed/src/m.py\": {{\"1\": 1, \"2\": 1}}}}\n+ git checkout 0123abcd\n",
        n = results.len()
    )
}

struct Inst {
    id: &'static str,
    outputs: [String; 6],
}

fn instances() -> Vec<Inst> {
    let t = "tests/test_new.py";
    let g = "tests/test_m.py";
    let gold = [
        output(true, g, &[("FAILED", "test_fix")], ""),
        output(true, g, &[("PASSED", "test_fix")], ""),
    ];
    let base = output(false, t, &[], "");
    vec![
        // Honest: the new test really goes from fail to pass.
        Inst {
            id: "pytest-dev__pytest-91001",
            outputs: [
                output(true, t, &[("FAILED", "test_new")], ""),
                output(true, t, &[("PASSED", "test_new")], ""),
                gold[0].clone(),
                gold[1].clone(),
                base.clone(),
                base.clone(),
            ],
        },
        // Forged: the test fails both times; with the fix present it prints a PASSED line for
        // itself after pytest's summary.
        Inst {
            id: "pytest-dev__pytest-91002",
            outputs: [
                output(true, t, &[("FAILED", "test_new")], ""),
                output(
                    true,
                    t,
                    &[("FAILED", "test_new")],
                    "PASSED tests/test_new.py::test_new\n",
                ),
                gold[0].clone(),
                gold[1].clone(),
                base.clone(),
                base,
            ],
        },
    ]
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn build_tree(dir: &Path) {
    let logs = dir.join("run_instance_swt_logs");
    let (mut rows, mut preds) = (String::new(), String::new());
    let model_patch = new_file_patch("tests/test_new.py");
    let (gh, bh) = (
        sha256_hex("tests/test_m.py"),
        sha256_hex("tests/test_new.py"),
    );
    for inst in instances() {
        let row = json!({
            "instance_id": inst.id, "repo": "pytest-dev/pytest", "version": "0.1",
            "base_commit": "0123abcd", "patch": CODE_PATCH,
            "test_patch": new_file_patch("tests/test_m.py"),
            "problem_statement": "synthetic", "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]",
        });
        rows.push_str(&format!("{row}\n"));
        let pred = json!({"instance_id": inst.id, "model_name_or_path": MODEL, "model_patch": model_patch});
        preds.push_str(&format!("{pred}\n"));
        let run = logs.join(RUN);
        let dirs = [
            run.join(format!("pred_pre__{MODEL_DIR}")).join(inst.id),
            run.join(format!("pred_post__{MODEL_DIR}")).join(inst.id),
            logs.join("gold_pre").join(inst.id).join(&gh),
            logs.join("gold_post").join(inst.id).join(&gh),
            logs.join("base_pre").join(inst.id).join(&bh),
            logs.join("base_post").join(inst.id).join(&bh),
        ];
        write(&dirs[0].join("model_patch.diff"), &model_patch);
        for (d, out) in dirs.iter().zip(&inst.outputs) {
            write(&d.join("test_output.txt"), out);
        }
    }
    write(&dir.join("dataset.jsonl"), &rows);
    write(&dir.join("preds.jsonl"), &preds);
}

fn swtbench(args: &[&str], cwd: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("HF_HOME", cwd.join("hf"))
        .env("SWTBENCH_OFFLINE", "true")
        .output()
        .unwrap()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn report_text(dir: &Path, id: &str) -> String {
    let p = dir
        .join("run_instance_swt_logs")
        .join(RUN)
        .join(MODEL_DIR)
        .join(id)
        .join("report.json");
    std::fs::read_to_string(p).unwrap()
}

const GRADE: &[&str] = &[
    "grade",
    "--dataset",
    "dataset.jsonl",
    "--predictions",
    "preds.jsonl",
    "--run-id",
    RUN,
    "--rewrite",
];

#[test]
fn a_forged_result_is_suspicious_and_strict_grading_unresolves_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    build_tree(dir);
    let run_report = dir.join(format!("evaluation_results/{MODEL_DIR}.{RUN}.json"));
    let (honest, forged) = ("pytest-dev__pytest-91001", "pytest-dev__pytest-91002");

    // Default: the original's grade. Both resolved; the forged one is named.
    let out = swtbench(GRADE, dir);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("1 suspicious instance(s)")
            && stderr.contains(&format!("{forged}: pred_post line 12: a result for `tests/test_new.py::test_new` after the test runner's final summary line")),
        "{stderr}"
    );
    let r = read_json(&run_report);
    assert_eq!(r["resolved_ids"], json!([honest, forged]));
    assert_eq!(r["suspicious_ids"], json!([forged]));
    let reasons = r["suspicious_reasons"][forged].as_array().unwrap();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons[1]
        .as_str()
        .unwrap()
        .contains("reported both PASSED and FAILED"));
    let default_reports = (report_text(dir, honest), report_text(dir, forged));
    let forged_report: Value = serde_json::from_str(&default_reports.1).unwrap();
    assert_eq!(forged_report[forged]["resolved"], json!(true));
    assert_eq!(
        forged_report[forged]["tests_pred"]["FAIL_TO_PASS"],
        json!(["tests/test_new.py::test_new"])
    );

    // Strict: the named test counts as failed, the instance is unresolved; the honest one keeps
    // its report byte for byte.
    let mut strict = GRADE.to_vec();
    strict.push("--strict-results");
    let out = swtbench(&strict, dir);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("graded strictly"), "{stderr}");
    let r = read_json(&run_report);
    assert_eq!(r["resolved_ids"], json!([honest]));
    assert_eq!(r["unresolved_ids"], json!([forged]));
    assert_eq!(r["suspicious_ids"], json!([forged]));
    assert_eq!(report_text(dir, honest), default_reports.0);
    let strict_report: Value = serde_json::from_str(&report_text(dir, forged)).unwrap();
    assert_eq!(strict_report[forged]["resolved"], json!(false));
    assert_eq!(
        strict_report[forged]["tests_pred"]["FAIL_TO_FAIL"],
        json!(["tests/test_new.py::test_new"])
    );
    assert_eq!(strict_report[forged]["added_f2p"], json!(0));

    // Graded again without the flag: the original's grade is back, and with an honest tree
    // the run report has no integrity keys at all.
    let out = swtbench(GRADE, dir);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(report_text(dir, forged), default_reports.1);
    let forged_post = dir
        .join("run_instance_swt_logs")
        .join(RUN)
        .join(format!("pred_post__{MODEL_DIR}"))
        .join(forged)
        .join("test_output.txt");
    write(
        &forged_post,
        &output(true, "tests/test_new.py", &[("FAILED", "test_new")], ""),
    );
    let out = swtbench(GRADE, dir);
    assert_eq!(out.status.code(), Some(0));
    let r = read_json(&run_report);
    assert!(r.get("suspicious_ids").is_none(), "{r}");
    assert!(r.get("suspicious_reasons").is_none(), "{r}");
}

#[test]
fn verify_names_suspicious_instances_and_reports_that_disagree_with_their_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    build_tree(dir);
    let forged = "pytest-dev__pytest-91002";
    let run_dir = format!("run_instance_swt_logs/{RUN}");
    let verify: Vec<&str> = vec![
        "verify",
        &run_dir,
        "--dataset",
        "dataset.jsonl",
        "--predictions",
        "preds.jsonl",
    ];
    assert_eq!(swtbench(GRADE, dir).status.code(), Some(0));

    // The reports agree with the outputs; the forged log is suspicious: exit code 1.
    let out = swtbench(&verify, dir);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "suspicious {forged}: pred_post line 12: a result for"
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("mismatch"), "{stdout}");
    assert!(
        stderr.contains("2 instance(s) checked: 2 agree with their outputs, 0 do not"),
        "{stderr}"
    );

    // The forged output replaced by an honest one, the report left: a mismatch, nothing
    // suspicious. Without --predictions the model is the run's only one.
    let pred_post = dir
        .join("run_instance_swt_logs")
        .join(RUN)
        .join(format!("pred_post__{MODEL_DIR}"))
        .join(forged)
        .join("test_output.txt");
    write(
        &pred_post,
        &output(true, "tests/test_new.py", &[("FAILED", "test_new")], ""),
    );
    let out = swtbench(&verify[..4], dir);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("mismatch {forged}: "))
            && stdout.contains("differs from the grade of its outputs now"),
        "{stdout}"
    );
    assert!(!stdout.contains("suspicious"), "{stdout}");

    // Graded again: everything agrees, exit code 0; verify wrote nothing.
    assert_eq!(swtbench(GRADE, dir).status.code(), Some(0));
    let before = report_text(dir, forged);
    let out = swtbench(&verify, dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(report_text(dir, forged), before);
}

#[test]
fn verify_reexecute_with_an_unreachable_engine_is_exit_code_3() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    build_tree(dir);
    assert_eq!(swtbench(GRADE, dir).status.code(), Some(0));
    let run_dir = format!("run_instance_swt_logs/{RUN}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_swtbench"))
        .args(["verify", &run_dir, "--dataset", "dataset.jsonl"])
        .args(["--predictions", "preds.jsonl", "--reexecute", "1"])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("container engine"), "{stderr}");
}
