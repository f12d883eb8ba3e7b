//! `swtbench grade`, `swtbench report` and `swtbench parse-log`, run as the built binary on a small
//! run tree in the original's layout, written by this test. Every expected number below is worked
//! out by hand from the logs in this file (the comments show the arithmetic). The same tree was
//! also graded and reported by the original harness's Python code (grading.py, make_run_report,
//! report.py at 330a649, run on the host), which printed the same numbers: noted where checked.
//!
//! Set `SWTBENCH_KEEP_TEST_TREE=<dir>` to build the tree in `<dir>` and keep it.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};
use swtbench_core::hash::sha256_hex;

const RUN: &str = "synthetic-run";
const MODEL: &str = "org/test-model";
const MODEL_DIR: &str = "org__test-model";
const GOLD_RUN: &str = "gold-run";

/// The gold code fix of every instance: removes old lines 2–3 and adds new lines 2–3 of src/m.py.
const CODE_PATCH: &str = "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1,5 +1,5 @@\n def f(x):\n-    y = x\n-    return y\n+    y = x + 1\n+    return y * 2\n \n def g():\n";

fn test_patch(path: &str) -> String {
    format!("diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x = 1\n")
}

/// A run's output in the original's format: bash's `set -x` trace, `git apply -v`, the traced
/// test command, the tests' output, then the coverage dump.
fn output(applied: bool, tests: &str, cover: &[&str], django: bool) -> String {
    let apply = if applied {
        "Checking patch tests/test_new.py...\nApplied patch tests/test_new.py cleanly.\n"
    } else {
        "error: patch failed: tests/test_new.py:1\nerror: tests/test_new.py: patch does not apply\n"
    };
    let cmd = if django {
        "./tests/runtests.py --verbosity 2 m.test_new"
    } else {
        "-m pytest --no-header -rA -p no:cacheprovider tests/test_new.py"
    };
    let mut s = format!(
        "+ source /opt/miniconda3/bin/activate\n+ cd /testbed\nPASSED setup.py::install_noise\n+ git apply -v -\n{apply}\
+ python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(src/m\\.py)' {cmd}\n{tests}\n+ cat coverage.cover\n"
    );
    for c in cover {
        s.push_str(c);
        s.push('\n');
    }
    s.push_str("+ git checkout 0123abcd\n+ git apply /root/pre_state.patch\n");
    s
}

fn cov(hits: &str) -> String {
    format!("{{\"/testbed/src/m.py\": {{{hits}}}}}")
}

struct Inst {
    id: &'static str,
    repo: &'static str,
    /// pred_pre, pred_post, gold_pre, gold_post, base_pre, base_post outputs (None: missing).
    outputs: [Option<String>; 6],
    model_patch: Option<String>,
}

fn pytest_model_patch() -> String {
    test_patch("tests/test_new.py")
}

fn django_model_patch() -> String {
    test_patch("tests/m/test_new.py")
}

fn instances() -> Vec<Inst> {
    let gold_pre_cov = cov("\"1\": 1, \"2\": 1, \"3\": 1");
    let gold_post_cov = cov("\"1\": 1, \"2\": 2, \"3\": 2");
    let gold_pre = |c: &[&str]| {
        output(
            true,
            "FAILED tests/test_m.py::test_fix - assert 0",
            c,
            false,
        )
    };
    let gold_post = |c: &[&str]| output(true, "PASSED tests/test_m.py::test_fix", c, false);
    let dj_fail_then_ok = "test_new (m.test_new.T) ... FAIL\ntest_old (m.test_new.T) ... ok\n\n\
======================================================================\nFAIL: test_new (m.test_new.T)\n\
----------------------------------------------------------------------\nAssertionError\n\nFAILED (failures=1)";
    let dj_all_ok = "test_new (m.test_new.T) ... ok\ntest_old (m.test_new.T) ... ok\n\nOK";
    let dj_nothing = "Ran 0 tests in 0.000s\n\nOK";
    vec![
        // A: resolved. pred: new F→P, old P→P; base: old P→P. Coverage with base_post hitting
        // new line 2 five times (the base_post lookup quirk shows on removed line 2).
        Inst {
            id: "pytest-dev__pytest-90001",
            repo: "pytest-dev/pytest",
            outputs: [
                Some(output(true, "FAILED tests/test_new.py::test_new - assert 0\nPASSED tests/test_new.py::test_old", &[&cov("\"2\": 1, \"3\": 0")], false)),
                Some(output(true, "PASSED tests/test_new.py::test_new\nPASSED tests/test_new.py::test_old", &[&cov("\"2\": 1"), &cov("\"3\": 1")], false)),
                Some(gold_pre(&[&gold_pre_cov])),
                Some(gold_post(&[&gold_post_cov])),
                Some(output(false, "PASSED tests/test_new.py::test_old", &[&cov("\"1\": 1, \"2\": 0, \"3\": 0")], false)),
                Some(output(false, "PASSED tests/test_new.py::test_old", &[&cov("\"1\": 1, \"2\": 5, \"3\": 0")], false)),
            ],
            model_patch: Some(pytest_model_patch()),
        },
        // B: the new test passes before the fix (P→P only); base runs nothing, no coverage.
        Inst {
            id: "pytest-dev__pytest-90002",
            repo: "pytest-dev/pytest",
            outputs: [
                Some(output(true, "PASSED tests/test_new.py::test_new", &[&cov("\"2\": 1, \"3\": 1")], false)),
                Some(output(true, "PASSED tests/test_new.py::test_new", &[&cov("\"2\": 1, \"3\": 1")], false)),
                Some(gold_pre(&[&gold_pre_cov])),
                Some(gold_post(&[&gold_post_cov])),
                Some(output(false, "", &[], false)),
                Some(output(false, "", &[], false)),
            ],
            model_patch: Some(pytest_model_patch()),
        },
        // C: the new test fails before and after (F→F); no coverage anywhere → nulls.
        Inst {
            id: "pytest-dev__pytest-90003",
            repo: "pytest-dev/pytest",
            outputs: [
                Some(output(true, "FAILED tests/test_new.py::test_new - assert 0", &[], false)),
                Some(output(true, "FAILED tests/test_new.py::test_new - assert 0", &[], false)),
                Some(gold_pre(&[])),
                Some(gold_post(&[])),
                Some(output(false, "", &[], false)),
                Some(output(false, "", &[], false)),
            ],
            model_patch: Some(pytest_model_patch()),
        },
        // D: the model patch does not apply (no "Applied patch" in pred_pre).
        Inst {
            id: "pytest-dev__pytest-90004",
            repo: "pytest-dev/pytest",
            outputs: [
                Some(output(false, "PASSED tests/test_new.py::test_new", &[&cov("\"2\": 1")], false)),
                Some(output(false, "PASSED tests/test_new.py::test_new", &[&cov("\"2\": 1")], false)),
                Some(gold_pre(&[&gold_pre_cov])),
                Some(gold_post(&[&gold_post_cov])),
                Some(output(false, "", &[], false)),
                Some(output(false, "", &[], false)),
            ],
            model_patch: Some(pytest_model_patch()),
        },
        // E: pred_pre produced no output (failed or timed out): an error.
        Inst {
            id: "pytest-dev__pytest-90005",
            repo: "pytest-dev/pytest",
            outputs: [None, None, None, None, None, None],
            model_patch: Some(pytest_model_patch()),
        },
        // F: Django. `... FAIL` swallows `test_old` in pred_pre (§15), so pred F→P = {new, old}
        // and added_f2p = 2 although only one test really went from fail to pass.
        Inst {
            id: "django__django-90006",
            repo: "django/django",
            outputs: [
                Some(output(true, dj_fail_then_ok, &[], true)),
                Some(output(true, dj_all_ok, &[], true)),
                Some(output(true, dj_fail_then_ok, &[], true)),
                Some(output(true, dj_all_ok, &[], true)),
                Some(output(false, dj_nothing, &[], true)),
                Some(output(false, dj_nothing, &[], true)),
            ],
            model_patch: Some(django_model_patch()),
        },
        // G: like F, but its id is in the SWT-Bench Lite filter list: graded, yet left out of
        // the table.
        Inst {
            id: "django__django-13658",
            repo: "django/django",
            outputs: [
                Some(output(true, dj_fail_then_ok, &[], true)),
                Some(output(true, dj_all_ok, &[], true)),
                Some(output(true, dj_fail_then_ok, &[], true)),
                Some(output(true, dj_all_ok, &[], true)),
                Some(output(false, dj_nothing, &[], true)),
                Some(output(false, dj_nothing, &[], true)),
            ],
            model_patch: Some(django_model_patch()),
        },
        // H: in the dataset, but no prediction: not part of the run.
        Inst {
            id: "pytest-dev__pytest-90008",
            repo: "pytest-dev/pytest",
            outputs: [None, None, None, None, None, None],
            model_patch: None,
        },
    ]
}

fn gold_test_patch(repo: &str) -> String {
    if repo == "django/django" {
        test_patch("tests/m/tests.py")
    } else {
        test_patch("tests/test_m.py")
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Writes the dataset, the predictions, the run tree and the gold run's reports under `dir`.
fn build_tree(dir: &Path) {
    let logs = dir.join("run_instance_swt_logs");
    let mut rows = String::new();
    let mut preds = String::new();
    for inst in instances() {
        let gold_tp = gold_test_patch(inst.repo);
        rows.push_str(
            &json!({
                "instance_id": inst.id, "repo": inst.repo, "version": "0.1",
                "base_commit": "0123abcd", "patch": CODE_PATCH, "test_patch": gold_tp,
                "problem_statement": "synthetic", "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]",
            })
            .to_string(),
        );
        rows.push('\n');
        let Some(model_patch) = &inst.model_patch else {
            continue;
        };
        preds.push_str(
            &json!({"instance_id": inst.id, "model_name_or_path": MODEL, "model_patch": model_patch})
                .to_string(),
        );
        preds.push('\n');
        // Directive hashes of the shared dirs: Django labels for Django.
        let (gold_dirs, base_dirs) = if inst.repo == "django/django" {
            ("m.tests", "m.test_new")
        } else {
            ("tests/test_m.py", "tests/test_new.py")
        };
        let (gh, bh) = (sha256_hex(gold_dirs), sha256_hex(base_dirs));
        let dirs = [
            logs.join(RUN)
                .join(format!("pred_pre__{MODEL_DIR}"))
                .join(inst.id),
            logs.join(RUN)
                .join(format!("pred_post__{MODEL_DIR}"))
                .join(inst.id),
            logs.join("gold_pre").join(inst.id).join(&gh),
            logs.join("gold_post").join(inst.id).join(&gh),
            logs.join("base_pre").join(inst.id).join(&bh),
            logs.join("base_post").join(inst.id).join(&bh),
        ];
        write(&dirs[0].join("model_patch.diff"), model_patch);
        for (d, out) in dirs.iter().zip(&inst.outputs) {
            if let Some(out) = out {
                write(&d.join("test_output.txt"), out);
            }
        }
    }
    write(&dir.join("dataset.jsonl"), &rows);
    write(&dir.join("preds.jsonl"), &preds);
    // The gold run's reports: only `coverage_delta_gold` matters to the table.
    let gold_delta: [(&str, Value); 7] = [
        ("pytest-dev__pytest-90001", json!(1.0)),
        ("pytest-dev__pytest-90002", json!(1.0)),
        ("pytest-dev__pytest-90003", Value::Null),
        ("pytest-dev__pytest-90004", json!(0.5)),
        ("django__django-90006", Value::Null),
        ("django__django-13658", json!(1.0)),
        ("pytest-dev__pytest-90008", json!(0.25)),
    ];
    for (id, d) in gold_delta {
        let report = json!({ id: {
            "patch_is_None": false, "patch_exists": true, "patch_successfully_applied": true,
            "resolved": true, "coverage_pred": d, "coverage_gold": d, "coverage_base": 0.0,
            "coverage_delta_pred": d, "coverage_delta_gold": d,
        }});
        write(
            &logs
                .join(GOLD_RUN)
                .join("gold")
                .join(id)
                .join("report.json"),
            &serde_json::to_string_pretty(&report).unwrap(),
        );
    }
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

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn report_of(dir: &Path, id: &str) -> Value {
    let p = dir
        .join("run_instance_swt_logs")
        .join(RUN)
        .join(MODEL_DIR)
        .join(id)
        .join("report.json");
    read_json(&p)[id].clone()
}

struct TreeDir {
    path: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

fn tree_dir() -> TreeDir {
    match std::env::var_os("SWTBENCH_KEEP_TEST_TREE") {
        Some(d) => {
            let path = PathBuf::from(d);
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            TreeDir { path, _tmp: None }
        }
        None => {
            let t = tempfile::tempdir().unwrap();
            TreeDir {
                path: t.path().to_path_buf(),
                _tmp: Some(t),
            }
        }
    }
}

const GRADE: &[&str] = &[
    "grade",
    "--dataset",
    "dataset.jsonl",
    "--predictions",
    "preds.jsonl",
    "--run-id",
    RUN,
];

#[test]
fn grade_then_report_gives_the_hand_computed_numbers() {
    let tree = tree_dir();
    let dir = tree.path.as_path();
    build_tree(dir);

    let out = swtbench(GRADE, dir);
    // One instance (E) has no output: the command finishes with exit code 1 (partial).
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));

    // A: resolved, added_f2p 1. N = 4 executable changed lines (old 2, 3 and new 2, 3).
    // pred: old2 1>0, old3 0, new2 1>0, new3 1>0 → 3/4; gold: all hit → 1.0;
    // base (base_post for both halves): old2 5>0, old3 0, new2 5>0, new3 0 → 2/4;
    // delta pred: old2 1−5, old3 0−0, new2 1−5, new3 1−0>0 → 1/4;
    // delta gold: old2 1−5, old3 1−0>0, new2 2−5, new3 2−0>0 → 2/4.
    let a = report_of(dir, "pytest-dev__pytest-90001");
    assert_eq!(a["resolved"], json!(true));
    assert_eq!(a["added_f2p"], json!(1));
    assert_eq!(
        [
            &a["coverage_pred"],
            &a["coverage_gold"],
            &a["coverage_base"],
            &a["coverage_delta_pred"],
            &a["coverage_delta_gold"]
        ],
        [
            &json!(0.75),
            &json!(1.0),
            &json!(0.5),
            &json!(0.25),
            &json!(0.5)
        ]
    );
    assert_eq!(
        a["tests_pred"]["FAIL_TO_PASS"],
        json!(["tests/test_new.py::test_new"])
    );
    assert_eq!(
        a["tests_pred"]["PASS_TO_PASS"],
        json!(["tests/test_new.py::test_old"])
    );
    assert_eq!(
        a["tests_base"]["PASS_TO_PASS"],
        json!(["tests/test_new.py::test_old"])
    );
    // The noise line before the traced command is not a test.
    assert!(!a.to_string().contains("install_noise"));
    // The report file is the original's exact text: indent 4, no trailing newline.
    let a_text = std::fs::read_to_string(
        dir.join("run_instance_swt_logs")
            .join(RUN)
            .join(MODEL_DIR)
            .join("pytest-dev__pytest-90001/report.json"),
    )
    .unwrap();
    assert!(a_text.starts_with("{\n    \"pytest-dev__pytest-90001\": {\n        \"patch_is_None\": false,\n        \"patch_exists\": true,\n        \"patch_successfully_applied\": true,\n        \"resolved\": true,\n        \"coverage_pred\": 0.75,\n"));
    assert!(a_text.ends_with("\n    }\n}"));

    // B: P→P only, all covered: 4/4 for pred, gold and both deltas; base saw nothing.
    let b = report_of(dir, "pytest-dev__pytest-90002");
    assert_eq!(b["resolved"], json!(false));
    assert_eq!(b["coverage_pred"], json!(1.0));
    assert_eq!(b["coverage_base"], json!(0.0));
    assert_eq!(b["coverage_delta_pred"], json!(1.0));
    // C: F→F, nothing executable → all coverage null.
    let c = report_of(dir, "pytest-dev__pytest-90003");
    assert_eq!(
        c["tests_pred"]["FAIL_TO_FAIL"],
        json!(["tests/test_new.py::test_new"])
    );
    assert_eq!(c["coverage_pred"], Value::Null);
    // D: not applied: early return, no tests_* keys, no added_f2p.
    let d = report_of(dir, "pytest-dev__pytest-90004");
    assert_eq!(d["patch_successfully_applied"], json!(false));
    assert!(d.get("tests_pred").is_none() && d.get("added_f2p").is_none());
    // F: the swallowed Django test counts as a second F→P test.
    let f = report_of(dir, "django__django-90006");
    assert_eq!(f["resolved"], json!(true));
    assert_eq!(f["added_f2p"], json!(2));
    assert_eq!(
        f["tests_pred"]["FAIL_TO_PASS"],
        json!(["test_new (m.test_new.T)", "test_old (m.test_new.T)"])
    );

    // The run report. Submitted A–G (7), E is an error; resolved A, F, G; unresolved B, C, D.
    // Mean coverage over A, B (the only non-null coverage_pred): (0.75 + 1.0) / 2 = 0.875;
    // mean delta (0.25 + 1.0) / 2 = 0.625.
    let rr_path = dir
        .join("evaluation_results")
        .join(format!("{MODEL_DIR}.{RUN}.json"));
    let rr = read_json(&rr_path);
    assert_eq!(rr["total_instances"], json!(7));
    assert_eq!(rr["completed_instances"], json!(0));
    assert_eq!(rr["resolved_instances"], json!(3));
    assert_eq!(rr["unresolved_instances"], json!(3));
    assert_eq!(rr["error_instances"], json!(1));
    assert_eq!(rr["Mean coverage"], json!(0.875));
    assert_eq!(rr["Mean coverage delta"], json!(0.625));
    assert_eq!(rr["error_ids"], json!(["pytest-dev__pytest-90005"]));
    assert_eq!(rr["submitted_instances"], json!(7));
    assert_eq!(
        rr["f2p_ids"],
        json!([
            "django__django-13658",
            "django__django-90006",
            "pytest-dev__pytest-90001"
        ])
    );
    assert!(rr["error_reasons"]["pytest-dev__pytest-90005"]
        .as_str()
        .unwrap()
        .contains("test_output.txt is missing"));

    // The table. Reports: A, B, C, D, F (E has none, G is in the Lite filter list): 5.
    // W: A (2 ≥ 0.1·1), B, C, F (any test ≥ 0.1·0) = 4; S: A, F = 2; F→X: A, C, F = 3;
    // F→P: A, F = 2; P→P: B = 1 (A's P→P test is also base's). Denominator 276 (--dataset lite;
    // without it, the run's own 6 instances: G is in the filter list).
    // Gold run: non-null coverage_delta_gold of A, B, D, H = 4 (G is filtered).
    // Δall = 100·(0.25 + 1.0)/4 = 31.25. Resolved A, F: own non-null delta_gold A → Gr = 1,
    // Δs = 100·0.25/1 = 25.0. Unresolved B, C, D: 100·1.0/(4 − 1) = 33.333333333333336.
    let out = swtbench(
        &[
            "report",
            &format!("run_instance_swt_logs/{RUN}/{MODEL_DIR}"),
            "--dataset",
            "lite",
            "--format",
            "json",
            "--gold-run-id",
            GOLD_RUN,
        ],
        dir,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("warning: the run has 6 instances"),
        "{}",
        text(&out.stderr)
    );
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        m,
        json!({
            "applicability": 400.0 / 276.0,
            "success_rate": 200.0 / 276.0,
            "f_to_x": 300.0 / 276.0,
            "f_to_p": 200.0 / 276.0,
            "p_to_p": 100.0 / 276.0,
            "coverage_delta_all": 31.25,
            "coverage_delta_resolved": 25.0,
            "coverage_delta_unresolved": 100.0 / 3.0,
            "instances": 5,
            "denominator": 276,
        })
    );
    // The original printed (github format): 1.4492753623188406, 0.7246376811594203,
    // 1.0869565217391304, 0.7246376811594203, 0.36231884057971014, 31.25, 25.0, 33.333333333333336.
    let out = swtbench(
        &[
            "report",
            &format!("run_instance_swt_logs/{RUN}/{MODEL_DIR}"),
            "--dataset",
            "lite",
            "--gold-run-id",
            GOLD_RUN,
        ],
        dir,
    );
    let table = text(&out.stdout);
    for n in [
        "1.4492753623188406",
        "0.7246376811594203",
        "1.0869565217391304",
        "0.36231884057971014",
        "31.25",
        "25.0",
        "33.333333333333336",
    ] {
        assert!(table.contains(n), "{n} missing in\n{table}");
    }
    assert!(table.starts_with("| Method"), "{table}");

    // Without --gold-run-id (lite's published gold run is not there) the gold run under the same
    // logs root is found and named; a custom denominator is used.
    let report_json = |extra: &[&str]| {
        let path = format!("run_instance_swt_logs/{RUN}/{MODEL_DIR}");
        let mut args = vec![
            "report",
            path.as_str(),
            "--format",
            "json",
            "--denominator",
            "5",
        ];
        args.extend_from_slice(extra);
        swtbench(&args, dir)
    };
    let out = report_json(&[]);
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["applicability"], json!(80.0));
    assert_eq!(m["coverage_delta_all"], json!(31.25));
    assert!(
        text(&out.stderr).contains(&format!("coverage rows relative to gold run {GOLD_RUN}")),
        "{}",
        text(&out.stderr)
    );
    // A gold run that is not there: the coverage fields are null, and why.
    let out = report_json(&["--gold-run-id", "absent-gold"]);
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["coverage_delta_all"], Value::Null);
    assert!(
        text(&out.stderr).contains("no gold run"),
        "{}",
        text(&out.stderr)
    );

    // A second grade reuses every report (the original's "completed").
    let out = swtbench(GRADE, dir);
    assert_eq!(out.status.code(), Some(1));
    let rr = read_json(&rr_path);
    assert_eq!(rr["completed_instances"], json!(6));

    // --rewrite with the corrected formula: removed lines now read base_pre (0, 0).
    // base: old2 0, old3 0, new2 5>0, new3 0 → 1/4; delta pred: old2 1>0, old3 0, new2 1−5,
    // new3 1 → 2/4; delta gold: old2 1, old3 1, new2 2−5, new3 2 → 3/4.
    let mut args = GRADE.to_vec();
    args.extend(["--rewrite", "--coverage-formula", "corrected"]);
    swtbench(&args, dir);
    let a = report_of(dir, "pytest-dev__pytest-90001");
    assert_eq!(
        [
            &a["coverage_base"],
            &a["coverage_delta_pred"],
            &a["coverage_delta_gold"]
        ],
        [&json!(0.25), &json!(0.5), &json!(0.75)]
    );
    assert_eq!(read_json(&rr_path)["completed_instances"], json!(0));
}

#[test]
fn grade_without_predictions_finds_the_runs_instances() {
    let tree = tempfile::tempdir().unwrap();
    let dir = tree.path();
    build_tree(dir);
    let out = swtbench(
        &[
            "grade",
            "--dataset",
            "dataset.jsonl",
            "--run-id",
            RUN,
            "--model",
            MODEL,
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rr = read_json(
        &dir.join("evaluation_results")
            .join(format!("{MODEL_DIR}.{RUN}.json")),
    );
    // H has no directory in the run, so it is not part of it.
    assert_eq!(rr["total_instances"], json!(7));
    assert_eq!(rr["resolved_instances"], json!(3));
}

#[test]
fn parse_log_prints_sorted_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let log = output(
        true,
        "PASSED b::z\nFAILED a::y - boom\nSKIPPED [1] a.py:3: skip",
        &[],
        false,
    );
    write(&dir.path().join("t.txt"), &log);
    let out = swtbench(
        &["parse-log", "--repo", "pytest-dev/pytest", "t.txt"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"applied\": true, \"tests\": {\"[1]\": \"SKIPPED\", \"a::y\": \"FAILED\", \"b::z\": \"PASSED\"}}\n"
    );
    let out = swtbench(
        &["parse-log", "--repo", "nobody/nothing", "t.txt"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no log parser for repository `nobody/nothing`"));
    // Reproduction-script mode needs no repository; without either, the command says what to give.
    write(
        &dir.path().join("r.txt"),
        "+ python3 /testbed/repro.py\nTraceback\n+ echo 1\n",
    );
    let out = swtbench(
        &["parse-log", "--exec-mode", "reproduction_script", "r.txt"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"applied\": false, \"tests\": {\"reproduction_script\": \"FAILED\"}}\n"
    );
    let out = swtbench(&["parse-log", "r.txt"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--repo"),
        "{}",
        text(&out.stderr)
    );
}

/// `parse-log` on every real log of the shared data prints exactly the original's result.
#[test]
fn parse_log_matches_the_original_on_every_shared_log() {
    let data = std::env::var_os("SWTBENCH_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"));
    let index = data.join("logs/expected_parser_output.jsonl");
    let Ok(expected) = std::fs::read_to_string(&index) else {
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "SKIPPED: {} not found (set SWTBENCH_SHARED_DATA)",
                index.display()
            );
        }
        return;
    };
    let mut n = 0;
    for line in expected.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let log = v["log"].as_str().unwrap();
        let out = swtbench(
            &["parse-log", "--repo", v["repo"].as_str().unwrap(), log],
            &data.join("logs"),
        );
        assert!(out.status.success(), "{log}: {}", text(&out.stderr));
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            got,
            json!({"applied": v["applied"], "tests": v["tests"]}),
            "{log}"
        );
        n += 1;
    }
    assert_eq!(n, 854);
}

/// A repository the original has no parser for, described by a spec table as `swtbench run`
/// takes it (`log_parser`, and `non_test_extensions`, which decide the directive hash naming the
/// shared base directories), plus an empty prediction that `run` graded without running it.
#[test]
fn grade_reads_the_spec_table_and_grades_empty_patches_like_run() {
    let tree = tempfile::tempdir().unwrap();
    let dir = tree.path();
    let logs = dir.join("run_instance_swt_logs");
    let model_patch = "diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_new.py\n@@ -0,0 +1 @@\n+x = 1\ndiff --git a/tests/data.json b/tests/data.json\n--- a/tests/data.json\n+++ b/tests/data.json\n@@ -1 +1 @@\n-{}\n+[]\n";
    let mut rows = String::new();
    for id in ["acme__widget-1", "acme__widget-2"] {
        rows.push_str(&json!({
            "instance_id": id, "repo": "acme/widget", "version": "0.1", "base_commit": "0123abcd",
            "patch": CODE_PATCH, "test_patch": test_patch("tests/test_m.py"),
            "problem_statement": "synthetic", "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]",
        }).to_string());
        rows.push('\n');
    }
    write(&dir.join("dataset.jsonl"), &rows);
    let preds = [("acme__widget-1", model_patch), ("acme__widget-2", "")]
        .iter()
        .map(|(id, p)| {
            json!({"instance_id": id, "model_name_or_path": MODEL, "model_patch": p}).to_string()
        })
        .collect::<Vec<_>>()
        .join("\n");
    write(&dir.join("preds.jsonl"), &preds);
    // `.json` is not a non-test extension for this repository, so the data file is a directive.
    write(
        &dir.join("table.toml"),
        "[repos.\"acme/widget\"]\nlog_parser = \"pytest\"\nnon_test_extensions = [\".txt\"]\n",
    );
    let id = "acme__widget-1";
    let gold_hash = sha256_hex("tests/test_m.py");
    let base_hash = sha256_hex("tests/test_new.py__tests/data.json");
    let pre = logs
        .join(RUN)
        .join(format!("pred_pre__{MODEL_DIR}"))
        .join(id);
    write(&pre.join("model_patch.diff"), model_patch);
    let runs = [
        (pre, "FAILED tests/test_new.py::test_new - assert 0"),
        (
            logs.join(RUN)
                .join(format!("pred_post__{MODEL_DIR}"))
                .join(id),
            "PASSED tests/test_new.py::test_new",
        ),
        (
            logs.join("gold_pre").join(id).join(&gold_hash),
            "FAILED tests/test_m.py::test_fix",
        ),
        (
            logs.join("gold_post").join(id).join(&gold_hash),
            "PASSED tests/test_m.py::test_fix",
        ),
        (
            logs.join("base_pre").join(id).join(&base_hash),
            "PASSED tests/test_new.py::test_base",
        ),
        (
            logs.join("base_post").join(id).join(&base_hash),
            "FAILED tests/test_new.py::test_base",
        ),
    ];
    for (i, (d, tests)) in runs.iter().enumerate() {
        write(
            &d.join("test_output.txt"),
            &output(i < 4, tests, &[], false),
        );
    }
    let mut args = GRADE.to_vec();
    args.push("--rewrite");

    // Without the table: no parser for acme/widget, and widget-2 (empty) is graded anyway.
    let out = swtbench(&args, dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rr_path = dir
        .join("evaluation_results")
        .join(format!("{MODEL_DIR}.{RUN}.json"));
    let rr = read_json(&rr_path);
    assert_eq!(rr["error_ids"], json!(["acme__widget-1"]));
    assert!(rr["error_reasons"]["acme__widget-1"]
        .as_str()
        .unwrap()
        .contains("log_parser"));

    args.extend(["--spec-table", "table.toml"]);
    let out = swtbench(&args, dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rr = read_json(&rr_path);
    assert_eq!(rr["error_ids"], json!([]));
    assert_eq!(rr["resolved_ids"], json!(["acme__widget-1"]));
    assert_eq!(rr["unresolved_ids"], json!(["acme__widget-2"]));
    // The base runs were found under the table's directive hash: base P→F `test_base`, which
    // the prediction does not have, so nothing new fails.
    let w1 = report_of(dir, "acme__widget-1");
    assert_eq!(
        w1["tests_base"]["PASS_TO_FAIL"],
        json!(["tests/test_new.py::test_base"])
    );
    // The empty patch gets the not-applied report `swtbench run` writes, byte for byte.
    let w2 = std::fs::read_to_string(
        logs.join(RUN)
            .join(MODEL_DIR)
            .join("acme__widget-2/report.json"),
    )
    .unwrap();
    assert_eq!(
        w2,
        "{\n    \"acme__widget-2\": {\n        \"patch_is_None\": false,\n        \"patch_exists\": true,\n        \"patch_successfully_applied\": false,\n        \"resolved\": false,\n        \"coverage_pred\": null,\n        \"coverage_gold\": null,\n        \"coverage_base\": null,\n        \"coverage_delta_pred\": null,\n        \"coverage_delta_gold\": null\n    }\n}"
    );

    // Without --predictions, the empty patch's report is kept (it has no runs to grade from).
    let out = swtbench(
        &[
            "grade",
            "--dataset",
            "dataset.jsonl",
            "--run-id",
            RUN,
            "--model",
            MODEL,
            "--spec-table",
            "table.toml",
        ],
        dir,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rr = read_json(&rr_path);
    assert_eq!(rr["unresolved_ids"], json!(["acme__widget-2"]));
    assert_eq!(rr["completed_instances"], json!(2));

    // A table naming a parser that does not exist is an input error naming it.
    write(
        &dir.join("bad.toml"),
        "[repos.\"acme/widget\"]\nlog_parser = \"nose\"\n",
    );
    let mut args = GRADE.to_vec();
    args.extend(["--spec-table", "bad.toml"]);
    let out = swtbench(&args, dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("nose"), "{}", text(&out.stderr));
}

/// The output cap of `swtbench run` cuts at arbitrary bytes; the grader drops the partial lines
/// around the marker the engine inserts, so a cut-off summary line is not a test.
#[test]
fn parse_log_ignores_the_partial_lines_around_an_output_cut() {
    let marker = swtbench_backend::output::truncation_marker(123_456);
    assert!(swtbench_grade::logs::is_cut_marker_line(
        marker.trim_matches('\n')
    ));
    let dir = tempfile::tempdir().unwrap();
    let log = output(
        true,
        &format!("PASSED t.py::test_a\nPASSED t.py::te{marker}st_b\nFAILED t.py::test_c - x"),
        &[],
        false,
    );
    write(&dir.path().join("t.txt"), &log);
    let out = swtbench(
        &["parse-log", "--repo", "pytest-dev/pytest", "t.txt"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"applied\": true, \"tests\": {\"t.py::test_a\": \"PASSED\", \"t.py::test_c\": \"FAILED\"}}\n"
    );
}

/// `grade --grading-version 1.2` grades a run tree again as the original's release 1.2.0 did: on a
/// sympy 1.0 prediction whose failure header is 81 characters long (the synthetic fixture logs of
/// swtbench-grade), 1.2.0's sympy parser reads a phantom failed test that goes F→X, which it
/// counted as FAIL_TO_FAIL: unresolved. The default grade (1.3) resolves it, and a grade with
/// --rewrite goes back to it.
#[test]
fn grade_grading_version_1_2_reads_sympy_as_release_1_2_did() {
    let tree = tempfile::tempdir().unwrap();
    let dir = tree.path();
    let logs = dir.join("run_instance_swt_logs");
    let id = "sympy__sympy-12096";
    let test_file = "sympy/polys/tests/test_coverup_sympy__sympy-12096.py";
    let gold_test_file = "sympy/core/tests/test_evalf.py";
    let code_patch = "diff --git a/sympy/core/function.py b/sympy/core/function.py\n--- a/sympy/core/function.py\n+++ b/sympy/core/function.py\n@@ -1391,1 +1391,1 @@\n-        x = 1\n+        x = 2\n";
    let row = json!({
        "instance_id": id, "repo": "sympy/sympy", "version": "1.0",
        "base_commit": "360290c4c401e386db60723ddb0109ed499c9f6e", "patch": code_patch,
        "test_patch": test_patch(gold_test_file), "problem_statement": "synthetic",
        "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]",
    });
    write(&dir.join("dataset.jsonl"), &format!("{row}\n"));
    let model_patch = test_patch(test_file);
    let pred = json!({"instance_id": id, "model_name_or_path": MODEL, "model_patch": model_patch});
    write(&dir.join("preds.jsonl"), &format!("{pred}\n"));
    let fixture = |phase: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
                "../swtbench-grade/tests/fixtures/logs/sympy__sympy/sympy-1.1-style-long-header.{phase}.synthetic.log"
            )),
        )
        .unwrap()
    };
    // Gold and base runs: nothing selected runs (0 tests).
    let nothing = |file: &str| {
        format!(
            "+ PYTHONWARNINGS=ignore::UserWarning,ignore::SyntaxWarning\n\
+ python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(sympy/core/function\\.py)' bin/test -C --verbose {file}\n\
================== tests finished: 0 passed, in 0.00 seconds ===================\n+ cat coverage.cover\n"
        )
    };
    let pre = logs
        .join(RUN)
        .join(format!("pred_pre__{MODEL_DIR}"))
        .join(id);
    write(&pre.join("model_patch.diff"), &model_patch);
    let (gold_hash, base_hash) = (sha256_hex(gold_test_file), sha256_hex(test_file));
    let runs = [
        (pre, fixture("pre")),
        (
            logs.join(RUN)
                .join(format!("pred_post__{MODEL_DIR}"))
                .join(id),
            fixture("post"),
        ),
        (
            logs.join("gold_pre").join(id).join(&gold_hash),
            nothing(gold_test_file),
        ),
        (
            logs.join("gold_post").join(id).join(&gold_hash),
            nothing(gold_test_file),
        ),
        (
            logs.join("base_pre").join(id).join(&base_hash),
            nothing(test_file),
        ),
        (
            logs.join("base_post").join(id).join(&base_hash),
            nothing(test_file),
        ),
    ];
    for (d, out) in &runs {
        write(&d.join("test_output.txt"), out);
    }
    let run_report = dir
        .join("evaluation_results")
        .join(format!("{MODEL_DIR}.{RUN}.json"));
    let phantom = "test_coverup_sympy__sympy-12096.py:test_evalf_composition_bug";

    // The default: the current release's grade.
    let out = swtbench(GRADE, dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = report_of(dir, id);
    assert_eq!(r["resolved"], json!(true), "{r}");
    assert_eq!(r["tests_pred"]["FAIL_TO_FAIL"], json!([]));
    assert_eq!(read_json(&run_report)["resolved_instances"], json!(1));
    assert!(read_json(&run_report).get("run_parameters").is_none());

    // Release 1.2.0's grade: the existing report.json is not reused.
    let mut args = GRADE.to_vec();
    args.extend(["--grading-version", "1.2"]);
    let out = swtbench(&args, dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("release 1.2.0"),
        "{}",
        text(&out.stderr)
    );
    let r = report_of(dir, id);
    assert_eq!(r["resolved"], json!(false), "{r}");
    assert_eq!(
        r["tests_pred"]["FAIL_TO_PASS"],
        json!(["test_evalf_composition_bug"])
    );
    assert_eq!(r["tests_pred"]["FAIL_TO_FAIL"], json!([phantom]));
    assert_eq!(r["tests_pred"]["UNMATCHED"], json!([]));
    let rr = read_json(&run_report);
    assert_eq!(rr["resolved_instances"], json!(0));
    assert!(
        rr["run_parameters"]["grading version"]
            .as_str()
            .is_some_and(|v| v.starts_with("1.2 ")),
        "{rr}"
    );

    // Back to the default with --rewrite.
    let mut args = GRADE.to_vec();
    args.push("--rewrite");
    let out = swtbench(&args, dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(report_of(dir, id)["resolved"], json!(true));
    assert!(read_json(&run_report).get("run_parameters").is_none());

    // An unknown version is refused, naming the ones there are.
    let mut args = GRADE.to_vec();
    args.extend(["--grading-version", "1.1"]);
    let out = swtbench(&args, dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("1.3 or 1.2"),
        "{}",
        text(&out.stderr)
    );
}
