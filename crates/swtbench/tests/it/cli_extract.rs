//! `swtbench extract` on a repository the test creates and mirrors: a fuzzy answer, a custom
//! (ZeroShotPlus) answer and an answer that is no patch at all; the written diffs apply with real
//! `git apply`, a second run reuses them.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

fn swtbench(args: &[&str], home: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .env("HF_HOME", home.join("hf"))
        .env("HOME", home)
        .env_remove("SWTBENCH_REPO_MIRROR")
        .env_remove("HF_ENDPOINT")
        .output()
        .unwrap()
}

use crate::support::git;

const TESTS: &str = "from calc.ops import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_sub():\n    assert add(1, -1) == 0\n";

fn python3() -> Option<String> {
    let root = std::env::var("PYENV_ROOT")
        .unwrap_or_else(|_| format!("{}/.pyenv", std::env::var("HOME").unwrap_or_default()));
    let versions = std::fs::read_dir(format!("{root}/versions")).ok()?;
    let mut found: Vec<String> = versions
        .filter_map(Result::ok)
        .map(|e| e.path().join("bin/python"))
        .filter(|p| p.is_file() && p.to_string_lossy().contains("/3.11"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    found.sort();
    found.into_iter().next()
}

#[test]
fn extract_writes_diffs_that_git_applies_and_reuses_them() {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(work.join("tests")).unwrap();
    std::fs::write(work.join("tests/test_ops.py"), TESTS).unwrap();
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "base"]);
    let base = git(&work, &["rev-parse", "HEAD"]);
    let mirrors = home.path().join("mirrors");
    std::fs::create_dir_all(&mirrors).unwrap();
    git(
        &work,
        &[
            "clone",
            "-q",
            "--mirror",
            ".",
            mirrors.join("acme__calc.git").to_str().unwrap(),
        ],
    );

    let row = |id: &str| {
        json!({
            "instance_id": id, "repo": "acme/calc", "version": "0.1", "base_commit": base,
            "environment_setup_commit": base, "patch": "", "test_patch": "",
            "problem_statement": "", "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]",
            "created_at": "2024-01-01", "hints_text": ""
        })
        .to_string()
    };
    let dataset = home.path().join("dataset.jsonl");
    std::fs::write(
        &dataset,
        format!(
            "{}\n{}\n{}\n",
            row("acme__calc-1"),
            row("acme__calc-2"),
            row("acme__calc-3")
        ),
    )
    .unwrap();
    let fuzzy = "Here you go:\n```diff\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n@@ -4,2 +4,3 @@\n def test_add():\n     assert add(1, 2) == 3\n+    assert add(2, 2) == 4\n \n \n def test_sub():\n```\n";
    let custom = "```custom-diff\ndiff\ntests/test_ops.py\nrewrite\n8\ndef test_sub():\n    assert add(1, -1) == 0\n    assert add(0, 0) == 0\nend diff\n```\n";
    let pred = |id: &str, patch: &str| {
        json!({"instance_id": id, "model_name_or_path": "m", "model_patch": patch}).to_string()
    };
    let preds = home.path().join("preds.jsonl");
    std::fs::write(
        &preds,
        format!(
            "{}\n{}\n{}\n",
            pred("acme__calc-1", fuzzy),
            pred("acme__calc-2", custom),
            pred("acme__calc-3", "I cannot do that.")
        ),
    )
    .unwrap();

    let out_dir = home.path().join("out");
    let mut args: Vec<String> = [
        "extract",
        "--dataset",
        dataset.to_str().unwrap(),
        "--predictions_path",
        preds.to_str().unwrap(),
        "--repo_mirror",
        mirrors.to_str().unwrap(),
        "--output-dir",
        out_dir.to_str().unwrap(),
        "--patch_types",
        "fuzzy",
        "custom",
        "--custom-patch-style",
        "preserve",
        "--fuzzy-style",
        "fixed",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let python = python3();
    if let Some(p) = &python {
        args.extend(["--python".to_string(), p.clone()]);
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = swtbench(&argv, home.path());
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // One instance has no patch at all: partial success.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(lines[0].starts_with("acme__calc-1\tfuzzy\t"), "{stdout}");
    assert!(
        lines[2].starts_with("acme__calc-3\tfailed\tfuzzy: no file section"),
        "{stdout}"
    );
    assert!(stderr.contains("extracted"), "{stderr}");

    let apply = |id: &str| -> String {
        let diff = out_dir.join(id).join("extracted_patch.diff");
        let check = Command::new("git")
            .args(["apply", "--check"])
            .arg(&diff)
            .current_dir(&work)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{id}: {}",
            String::from_utf8_lossy(&check.stderr)
        );
        git(&work, &["apply", diff.to_str().unwrap()]);
        let content = std::fs::read_to_string(work.join("tests/test_ops.py")).unwrap();
        git(&work, &["checkout", "--", "."]);
        content
    };
    assert_eq!(
        apply("acme__calc-1"),
        TESTS.replace("== 3\n", "== 3\n    assert add(2, 2) == 4\n")
    );
    if python.is_some() {
        assert!(lines[1].starts_with("acme__calc-2\tcustom\t"), "{stdout}");
        assert_eq!(
            apply("acme__calc-2"),
            format!("{TESTS}    assert add(0, 0) == 0\n")
        );
    } else {
        eprintln!("skipped the custom half: no pyenv Python 3.11");
    }
    assert_eq!(
        std::fs::read_to_string(out_dir.join("acme__calc-3/raw_model_patch.txt")).unwrap(),
        "I cannot do that."
    );

    // A second run reuses every cached result.
    let mut json_args = argv.clone();
    json_args.push("--json");
    let again = swtbench(&json_args, home.path());
    let records: Vec<serde_json::Value> = String::from_utf8_lossy(&again.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r["reused"] == true), "{records:?}");
    assert_eq!(records[0]["patch_type_used"], "fuzzy");
}

/// `swtbench run` takes the same style options as `extract` and keys its extraction cache on
/// them: a diff extracted with `--fuzzy-style fixed` into the run's report directory is reused
/// by a run with `--fuzzy-style fixed` and extracted again by one with the default style.
#[test]
fn run_style_options_reach_the_extraction_cache_key() {
    let home = tempfile::tempdir().unwrap();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let fx = home.path().join("fx");
    let made = Command::new("python3")
        .arg(workspace.join("fixtures/benchmark/make_benchmark.py"))
        .arg(&fx)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (dataset, preds, mirrors) = (
        s(&fx.join("dataset.jsonl")),
        s(&fx.join("predictions.jsonl")),
        s(&fx.join("mirrors")),
    );
    let report_dir = home
        .path()
        .join("run_instance_swt_logs/styles/swtbench-fixture-model");
    let out = swtbench(
        &[
            "extract",
            "--dataset",
            &dataset,
            "--predictions",
            &preds,
            "--repo-mirror",
            &mirrors,
            "--patch-types",
            "fuzzy",
            "--fuzzy-style",
            "fixed",
            "--instance-ids",
            "swtfix__calc-1",
            "--output-dir",
            &s(&report_dir),
        ],
        home.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = s(&workspace.join("fixtures/benchmark/spec-table.toml"));
    let output_dir = s(home.path());
    let plan_patch = |style: &str| -> String {
        let out = swtbench(
            &[
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
                "styles",
                "--output-dir",
                &output_dir,
                "--patch-types",
                "fuzzy",
                "--fuzzy-style",
                style,
                "--instance-ids",
                "swtfix__calc-1",
                "--dry-run",
                "--json",
            ],
            home.path(),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let calc1 = plan["instances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["instance_id"] == "swtfix__calc-1")
            .unwrap()
            .clone();
        calc1["patch"]["kind"].as_str().unwrap().to_string()
    };
    assert_eq!(plan_patch("fixed"), "extracted_cached");
    assert_eq!(plan_patch("parity"), "extract");
    let bad = swtbench(&["run", "--vanilla-style", "sideways"], home.path());
    assert_eq!(bad.status.code(), Some(2));
}

/// An instance whose repository has no mirror still gets its line on stdout (tab-separated and
/// `--json`), naming the mirror path that was looked for, so scripts reading the output see every
/// instance; the run is a partial success.
#[test]
fn an_instance_without_a_mirror_is_reported_on_stdout_with_the_path_looked_for() {
    let home = tempfile::tempdir().unwrap();
    let mirrors = home.path().join("mirrors");
    std::fs::create_dir_all(&mirrors).unwrap();
    let row = json!({
        "instance_id": "acme__other-1", "repo": "acme/other", "version": "0.1",
        "base_commit": "0123456789abcdef0123456789abcdef01234567",
        "environment_setup_commit": "0123456789abcdef0123456789abcdef01234567",
        "patch": "", "test_patch": "", "problem_statement": "", "FAIL_TO_PASS": "[]",
        "PASS_TO_PASS": "[]", "created_at": "2024-01-01", "hints_text": ""
    });
    let dataset = home.path().join("dataset.jsonl");
    std::fs::write(&dataset, format!("{row}\n")).unwrap();
    let preds = home.path().join("preds.jsonl");
    let pred = json!({"instance_id": "acme__other-1", "model_name_or_path": "m",
        "model_patch": "--- a/t.py\n+++ b/t.py\n@@ -1,1 +1,2 @@\n x = 1\n+y = 2\n"});
    std::fs::write(&preds, format!("{pred}\n")).unwrap();
    let out_dir = home.path().join("out");
    let args = [
        "extract",
        "--dataset",
        dataset.to_str().unwrap(),
        "--predictions",
        preds.to_str().unwrap(),
        "--repo-mirror",
        mirrors.to_str().unwrap(),
        "--output-dir",
        out_dir.to_str().unwrap(),
        "--patch-types",
        "fuzzy",
    ];
    let expected_mirror = mirrors.join("acme__other.git");
    let expected_mirror = expected_mirror.to_str().unwrap();

    let out = swtbench(&args, home.path());
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}\n{stderr}");
    assert!(lines[0].starts_with("acme__other-1\tfailed\t"), "{stdout}");
    assert!(lines[0].contains(expected_mirror), "{stdout}");
    assert!(stderr.contains("git clone --mirror"), "{stderr}");

    let mut json_args = args.to_vec();
    json_args.push("--json");
    let again = swtbench(&json_args, home.path());
    let stdout = String::from_utf8_lossy(&again.stdout).into_owned();
    let records: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 1, "{stdout}");
    assert_eq!(records[0]["instance_id"], "acme__other-1");
    assert!(records[0]["patch_type_used"].is_null(), "{stdout}");
    assert!(
        records[0]["error"]
            .as_str()
            .unwrap()
            .contains(expected_mirror),
        "{stdout}"
    );

    // A mirror directory that is not a git repository fails its instance, not the command.
    std::fs::create_dir_all(mirrors.join("acme__other.git")).unwrap();
    let broken = swtbench(&args, home.path());
    let stdout = String::from_utf8_lossy(&broken.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&broken.stderr).into_owned();
    assert_eq!(broken.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("acme__other-1\tfailed\tthe mirror of acme/other is unusable"),
        "{stdout}\n{stderr}"
    );
    assert!(stderr.contains("git clone --mirror"), "{stderr}");
}

/// `extract --patch-types vanilla` (no mirror needed) writes, for every prediction, exactly the
/// patch a `run` with the default patch types would apply (the plan's sha256), and an empty diff
/// where the run has no patch to apply: the fixture benchmark's predictions (edits, a diff that
/// does not apply, an empty one, a binary diff) and awkward raw texts (CRLF, prose, binary only,
/// a form feed, no final newline).
#[test]
fn extract_vanilla_alone_writes_what_run_applies() {
    let home = tempfile::tempdir().unwrap();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let fx = home.path().join("fx");
    let made = Command::new("python3")
        .arg(workspace.join("fixtures/benchmark/make_benchmark.py"))
        .arg(&fx)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let dataset = s(&fx.join("dataset.jsonl"));
    let ids: Vec<String> = std::fs::read_to_string(&dataset)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["instance_id"].as_str().unwrap().to_string()
        })
        .collect();
    let odd = [
        "diff --git a/t.py b/t.py\r\n--- a/t.py\r\n+++ b/t.py\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n",
        "Sure! Here is the test:\n\n```python\ndef test_x():\n    assert True\n```\n",
        "diff --git a/x.pyc b/x.pyc\nBinary files a/x.pyc and b/x.pyc differ\n",
        "diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -1,1 +1,2 @@\n a\n+b\x0cc\n",
        "--- a/t.py\n+++ b/t.py\n@@ -1 +1 @@\n-a\n+b",
        "   \n",
    ];
    let odd_preds = fx.join("odd.jsonl");
    let rows: Vec<String> = ids
        .iter()
        .zip(odd)
        .map(|(id, patch)| {
            json!({"instance_id": id, "model_name_or_path": "odd", "model_patch": patch})
                .to_string()
        })
        .collect();
    std::fs::write(&odd_preds, rows.join("\n") + "\n").unwrap();
    let table = s(&workspace.join("fixtures/benchmark/spec-table.toml"));
    let mut compared = 0;
    for (k, preds) in [
        fx.join("predictions.jsonl"),
        fx.join("predictions_repro.jsonl"),
        odd_preds,
    ]
    .iter()
    .enumerate()
    {
        let preds = s(preds);
        let out_dir = home.path().join(format!("extracted-{k}"));
        let out = swtbench(
            &[
                "extract",
                "--dataset",
                &dataset,
                "--predictions",
                &preds,
                "--patch-types",
                "vanilla",
                "--output-dir",
                &s(&out_dir),
            ],
            home.path(),
        );
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{stdout}\n{stderr}"
        );
        let run = swtbench(
            &[
                "run",
                "--dataset",
                &dataset,
                "--predictions",
                &preds,
                "--repo-mirror",
                &s(&fx.join("mirrors")),
                "--spec-table",
                &table,
                "--run-id",
                &format!("vanilla-{k}"),
                "--output-dir",
                &s(home.path()),
                "--dry-run",
                "--json",
            ],
            home.path(),
        );
        assert_eq!(
            run.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let plan: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        let lines: std::collections::HashMap<&str, &str> =
            stdout.lines().filter_map(|l| l.split_once('\t')).collect();
        for instance in plan["instances"].as_array().unwrap() {
            let id = instance["instance_id"].as_str().unwrap();
            let Some(kind) = instance["patch"]["kind"].as_str() else {
                continue;
            };
            let line = format!("{id}\t{}", lines.get(id).copied().unwrap_or_default());
            let written = std::fs::read_to_string(out_dir.join(id).join("extracted_patch.diff"))
                .unwrap_or_else(|e| panic!("{id}: {e}\n{stdout}"));
            match kind {
                "vanilla" => {
                    assert_eq!(
                        swtbench_core::hash::sha256_hex(&written),
                        instance["patch"]["sha256"].as_str().unwrap(),
                        "{id} ({preds}): extract wrote\n{written:?}"
                    );
                    assert!(line.starts_with(&format!("{id}\tvanilla\t")), "{stdout}");
                }
                "empty" => {
                    assert_eq!(written, "", "{id} ({preds})");
                    assert!(line.starts_with(&format!("{id}\tfailed\t")), "{stdout}");
                }
                other => panic!("{id}: run prepares its patch as {other:?}"),
            }
            compared += 1;
        }
    }
    // Ten instances: two unit-test sets of predictions and the odd texts.
    assert!(compared >= 10 + 6, "{compared}");

    // Other patch types still need the mirrors.
    let out = swtbench(
        &[
            "extract",
            "--dataset",
            &dataset,
            "--predictions",
            &s(&fx.join("predictions.jsonl")),
            "--patch-types",
            "vanilla",
            "fuzzy",
            "--output-dir",
            &s(&home.path().join("x")),
        ],
        home.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--repo-mirror is needed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A fuzzy answer that edits a file and then names a missing one: in the parity style (default)
/// the edit is kept and its diff is the patch, as the original emits it (`partial`, exit 0, the
/// diff applies with real git); `--fuzzy-style fixed` keeps nothing (`failed`, exit 1).
#[test]
fn a_failed_parity_attempt_that_edited_files_yields_their_diff() {
    let home = tempfile::tempdir().unwrap();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let fx = home.path().join("fx");
    let made = Command::new("python3")
        .arg(workspace.join("fixtures/benchmark/make_benchmark.py"))
        .arg(&fx)
        .output()
        .unwrap();
    assert!(made.status.success());
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let answer = "--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -9,5 +9,5 @@\n     # Subtract b from a.\n-    return a + b\n+    return a - b\n \n \n def mul(a, b):\n--- a/calc/missing.py\n+++ b/calc/missing.py\n@@ -1,1 +1,1 @@\n-x\n+y\n";
    let preds = home.path().join("preds.jsonl");
    let row =
        json!({"instance_id": "swtfix__calc-1", "model_name_or_path": "m", "model_patch": answer});
    std::fs::write(&preds, format!("{row}\n")).unwrap();
    let extract = |style: &str, out_dir: &Path| {
        swtbench(
            &[
                "extract",
                "--dataset",
                &s(&fx.join("dataset.jsonl")),
                "--predictions",
                &s(&preds),
                "--repo-mirror",
                &s(&fx.join("mirrors")),
                "--patch-types",
                "fuzzy",
                "--fuzzy-style",
                style,
                "--output-dir",
                &s(out_dir),
            ],
            home.path(),
        )
    };
    let parity_dir = home.path().join("parity");
    let out = extract("parity", &parity_dir);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.starts_with("swtfix__calc-1\tpartial\tfuzzy: calc/missing.py: no such file"),
        "{stdout}"
    );
    assert!(stdout.contains("edits to calc/ops.py are kept"), "{stdout}");
    let diff = parity_dir.join("swtfix__calc-1/extracted_patch.diff");
    let work = home.path().join("work");
    git(
        home.path(),
        &[
            "clone",
            "-q",
            &s(&fx.join("mirrors/swtfix__calc.git")),
            &s(&work),
        ],
    );
    git(&work, &["apply", &s(&diff)]);
    let ops = std::fs::read_to_string(work.join("calc/ops.py")).unwrap();
    assert!(
        ops.contains("    # Subtract b from a.\n    return a - b\n"),
        "{ops}"
    );

    let fixed_dir = home.path().join("fixed");
    let out = extract("fixed", &fixed_dir);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.starts_with("swtfix__calc-1\tfailed\t"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(fixed_dir.join("swtfix__calc-1/extracted_patch.diff")).unwrap(),
        ""
    );
}
