//! `swtbench report` on a run over a custom dataset (the fixture benchmark's, repositories the
//! original has no log parser for): with `--spec-table` the HTML page shows the statuses parsed
//! from the logs (without it they are unknown, shown as "?"), finds the shared runs under the
//! table's non-test extensions, and names the dataset the run used; the denominator is the
//! dataset's instance count. The run tree is written by this test in the original's layout.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};
use swtbench_core::hash::sha256_hex;

const RUN: &str = "custom-run";
const MODEL: &str = "fixture-model";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn swtbench(args: &[&str], cwd: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("HF_HOME", cwd.join("hf"))
        .env("SWTBENCH_OFFLINE", "1")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A run's output as the eval script leaves it: `git apply -v`, the test command, pytest's `-rA`
/// summary lines.
fn output(patch_file: &str, tests: &[&str]) -> String {
    let mut s = format!(
        "+ cd /testbed\n+ git apply -v -\nChecking patch {patch_file}...\nApplied patch {patch_file} cleanly.\n\
         + pytest -rA --tb=no -p no:cacheprovider\n"
    );
    for t in tests {
        s.push_str(t);
        s.push('\n');
    }
    s
}

fn new_file(path: &str, line: &str) -> String {
    format!("diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{line}\n")
}

fn report_json(id: &str, resolved: bool) -> String {
    serde_json::to_string_pretty(&json!({ id: {
        "patch_is_None": false, "patch_exists": true, "patch_successfully_applied": true,
        "resolved": resolved, "coverage_pred": null, "coverage_gold": null, "coverage_base": null,
        "coverage_delta_pred": null, "coverage_delta_gold": null,
    }}))
    .unwrap()
}

/// Two instances of the fixture dataset, as `swtbench run` leaves them: `swtfix__calc-1`
/// (resolved: its test fails before the gold fix and passes after) with its gold runs, and
/// `swtfix__textkit-1` (unresolved) whose patch also changes a `.json` file, with base runs
/// under the directive hash that counts that file as a test directive.
fn build_tree(dir: &Path) {
    let logs = dir.join("run_instance_swt_logs");
    let run = logs.join(RUN);
    let pre = |id: &str| run.join(format!("pred_pre__{MODEL}")).join(id);
    let post = |id: &str| run.join(format!("pred_post__{MODEL}")).join(id);

    let calc = "swtfix__calc-1";
    let calc_patch = new_file("tests/test_model_sub.py", "def test_sub(): pass");
    write(&pre(calc).join("model_patch.diff"), &calc_patch);
    write(
        &pre(calc).join("test_output.txt"),
        &output(
            "tests/test_model_sub.py",
            &[
                "PASSED tests/test_model_sub.py::test_add_still_works",
                "FAILED tests/test_model_sub.py::test_sub_positive - assert 9 == 5",
            ],
        ),
    );
    write(
        &post(calc).join("test_output.txt"),
        &output(
            "tests/test_model_sub.py",
            &[
                "PASSED tests/test_model_sub.py::test_add_still_works",
                "PASSED tests/test_model_sub.py::test_sub_positive",
            ],
        ),
    );
    // The gold runs of every calc instance: the gold tests change tests/test_ops.py only.
    let gold = sha256_hex("tests/test_ops.py");
    write(
        &logs
            .join("gold_pre")
            .join(calc)
            .join(&gold)
            .join("test_output.txt"),
        &output(
            "tests/test_ops.py",
            &["FAILED tests/test_ops.py::test_sub - assert 9 == 5"],
        ),
    );
    write(
        &logs
            .join("gold_post")
            .join(calc)
            .join(&gold)
            .join("test_output.txt"),
        &output("tests/test_ops.py", &["PASSED tests/test_ops.py::test_sub"]),
    );
    write(
        &run.join(MODEL).join(calc).join("report.json"),
        &report_json(calc, true),
    );

    let textkit = "swtfix__textkit-1";
    let textkit_patch = format!(
        "{}{}",
        new_file("tests/test_model_slug.py", "def test_slug(): pass"),
        new_file("tests/data.json", "{}")
    );
    write(&pre(textkit).join("model_patch.diff"), &textkit_patch);
    for d in [pre(textkit), post(textkit)] {
        write(
            &d.join("test_output.txt"),
            &output(
                "tests/test_model_slug.py",
                &["PASSED tests/test_model_slug.py::test_slug"],
            ),
        );
    }
    // `.json` is a test directive under the table written below, not under the default list.
    let base = sha256_hex("tests/test_model_slug.py__tests/data.json");
    for kind in ["base_pre", "base_post"] {
        write(
            &logs
                .join(kind)
                .join(textkit)
                .join(&base)
                .join("test_output.txt"),
            &output(
                "tests/test_model_slug.py",
                &[
                    "PASSED tests/test_model_slug.py::test_slug",
                    "SKIPPED [1] tests/test_model_slug.py:3: later",
                ],
            ),
        );
    }
    write(
        &run.join(MODEL).join(textkit).join("report.json"),
        &report_json(textkit, false),
    );

    // The fixture's own table sets log parsers only; this one also lists textkit's non-test
    // extensions (without .json).
    let fixture_table =
        std::fs::read_to_string(workspace().join("fixtures/benchmark/spec-table.toml")).unwrap();
    write(
        &dir.join("table-exts.toml"),
        &fixture_table.replace(
            "[repos.\"swtfix/textkit\"]\n",
            "[repos.\"swtfix/textkit\"]\nnon_test_extensions = [\".txt\"]\n",
        ),
    );
}

/// The instance details embedded in a run page (plain JSON for small runs).
fn details(page: &str) -> Value {
    let start = page.find("id=\"swt-data\">").unwrap();
    let body = &page[start..];
    let open = body.find('>').unwrap() + 1;
    let close = body.find("</script>").unwrap();
    let v: Value = serde_json::from_str(&body[open..close]).unwrap();
    v["d"].clone()
}

/// The value of a row of the page's "Run parameters" table.
fn param(page: &str, key: &str) -> String {
    let row = format!("<tr><th>{key}</th><td>");
    let i = page
        .find(&row)
        .unwrap_or_else(|| panic!("no parameter {key}"))
        + row.len();
    page[i..i + page[i..].find("</td>").unwrap()].to_string()
}

fn page(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["report", "run_instance_swt_logs/custom-run/fixture-model"];
    args.extend(["--dataset", "fx/dataset.jsonl", "--format", "html"]);
    args.extend(extra);
    let out = swtbench(&args, dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn report_reads_custom_repositories_with_the_spec_table_and_names_the_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let made = Command::new("python3")
        .arg(workspace().join("fixtures/benchmark/make_benchmark.py"))
        .arg(dir.join("fx"))
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    build_tree(dir);
    let fixture_table = workspace().join("fixtures/benchmark/spec-table.toml");
    let fixture_table = fixture_table.to_str().unwrap();

    // Without a spec table: the runs are found, but no parser is known for swtfix/*.
    let plain = page(dir, &[]);
    let d = details(&plain);
    let calc = &d["swtfix__calc-1"]["r"];
    assert_eq!(calc[0]["o"], true, "pred_pre output found");
    assert!(calc[0].get("c").is_none(), "statuses unknown: {}", calc[0]);
    assert_eq!(d["swtfix__calc-1"]["t"]["e"], false);

    // With the fixture's table: real statuses in every run that has output, including the gold
    // runs, found through the dataset's gold test directives.
    let with_table = page(dir, &["--spec-table", fixture_table]);
    let d = details(&with_table);
    let calc = &d["swtfix__calc-1"]["r"];
    assert_eq!(
        calc[0]["c"],
        json!([1, 1, 0]),
        "pred_pre: 1 passed, 1 failed"
    );
    assert_eq!(calc[0]["a"], true);
    assert_eq!(calc[1]["c"], json!([2, 0, 0]), "pred_post");
    assert_eq!(calc[2]["k"], "gold_pre");
    assert_eq!(calc[2]["c"], json!([0, 1, 0]), "gold_pre");
    assert_eq!(calc[3]["c"], json!([1, 0, 0]), "gold_post");
    let grid = &d["swtfix__calc-1"]["t"];
    assert_eq!(grid["e"], true, "test grid from the parsed logs");
    let row = grid["n"]
        .as_array()
        .unwrap()
        .iter()
        .position(|n| n == "tests/test_model_sub.py::test_sub_positive")
        .unwrap();
    assert_eq!(grid["c"][row], "FP----");
    // textkit's base runs are named with .json counted as a test directive: not found here.
    let textkit = &d["swtfix__textkit-1"]["r"];
    assert_eq!(textkit[0]["c"], json!([1, 0, 0]));
    assert!(textkit[4].get("d").is_none(), "{}", textkit[4]);

    // The page names the dataset the run used, not lite, and counts its instances.
    assert_eq!(param(&with_table, "benchmark"), "dataset.jsonl");
    assert_eq!(param(&with_table, "dataset"), "fx/dataset.jsonl");
    assert_eq!(param(&with_table, "denominator"), "10");
    assert_eq!(param(&with_table, "spec table"), fixture_table);
    assert!(!with_table.contains("<td>lite"), "no lite parameter");

    // A table with textkit's non-test extensions finds its base runs, and parses them.
    let exts = page(dir, &["--spec-table", "table-exts.toml"]);
    let textkit = &details(&exts)["swtfix__textkit-1"]["r"];
    assert_eq!(textkit[4]["k"], "base_pre");
    assert!(textkit[4]["d"].is_string(), "{}", textkit[4]);
    assert_eq!(textkit[4]["c"], json!([1, 0, 1]));
    assert_eq!(textkit[5]["c"], json!([1, 0, 1]));

    // The table formats: the dataset's instance count is the denominator (lite's would be 276).
    let out = swtbench(
        &[
            "report",
            "run_instance_swt_logs/custom-run/fixture-model",
            "--dataset",
            "fx/dataset.jsonl",
            "--spec-table",
            fixture_table,
            "--format",
            "json",
        ],
        dir,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["denominator"], 10);
    assert_eq!(v["instances"], 2);
    assert!(
        text(&out.stderr).contains("--gold-run-id"),
        "a custom dataset has no default gold run: {}",
        text(&out.stderr)
    );

    // --compare takes the table and the dataset too.
    let out = swtbench(
        &[
            "report",
            "--compare",
            "run_instance_swt_logs/custom-run/fixture-model",
            "run_instance_swt_logs/custom-run/fixture-model",
            "--dataset",
            "fx/dataset.jsonl",
            "--spec-table",
            fixture_table,
        ],
        dir,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(param(&text(&out.stdout), "benchmark"), "dataset.jsonl");
    // A comparison is a page: asking for a table is an error, not a page in its place.
    let out = swtbench(
        &[
            "report",
            "--compare",
            "run_instance_swt_logs/custom-run/fixture-model",
            "run_instance_swt_logs/custom-run/fixture-model",
            "--format",
            "github",
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--compare writes an HTML page"));

    // Without --dataset the page says the benchmark is the default, lite.
    let out = swtbench(
        &[
            "report",
            "run_instance_swt_logs/custom-run/fixture-model",
            "--format",
            "html",
        ],
        dir,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(param(&text(&out.stdout), "benchmark"), "lite (the default)");

    // A spec table with an unknown parser is an input error naming it, whatever the format.
    write(
        &dir.join("bad.toml"),
        "[repos.\"swtfix/calc\"]\nlog_parser = \"nose\"\n",
    );
    for format in ["json", "html"] {
        let out = swtbench(
            &[
                "report",
                "run_instance_swt_logs/custom-run/fixture-model",
                "--spec-table",
                "bad.toml",
                "--format",
                format,
            ],
            dir,
        );
        assert_eq!(
            out.status.code(),
            Some(2),
            "{format}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stderr).contains("nose"), "{}", text(&out.stderr));
    }
}

#[test]
fn a_dataset_name_that_is_nothing_known_is_an_input_error_before_any_download() {
    let dir = tempfile::tempdir().unwrap();
    build_tree(dir.path());
    let model = dir
        .path()
        .join("run_instance_swt_logs/custom-run/fixture-model");
    let o = swtbench(
        &["report", model.to_str().unwrap(), "--dataset", "litee"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("unknown dataset `litee`"),
        "{}",
        text(&o.stderr)
    );
}

fn report_with_coverage(id: &str, resolved: bool, pred: f64, gold: f64) -> String {
    serde_json::to_string_pretty(&json!({ id: {
        "patch_is_None": false, "patch_exists": true, "patch_successfully_applied": true,
        "resolved": resolved, "coverage_pred": pred, "coverage_gold": gold, "coverage_base": 0.0,
        "coverage_delta_pred": pred, "coverage_delta_gold": gold,
    }}))
    .unwrap()
}

/// A model run under another run id than the benchmark's published gold run still gets its
/// coverage rows: the gold run under the same logs root with reports for its instances is found
/// and named; an equally good second one is warned about; `--gold-run-id` chooses.
#[test]
fn report_finds_the_gold_run_of_a_custom_dataset_under_the_logs_root() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let logs = dir.join("run_instance_swt_logs");
    let ids = ["swtfix__calc-1", "swtfix__textkit-1"];
    for (i, id) in ids.iter().enumerate() {
        write(
            &logs
                .join("model-run")
                .join(MODEL)
                .join(id)
                .join("report.json"),
            &report_with_coverage(id, i == 0, 0.5, 0.0),
        );
        write(
            &logs
                .join("my-gold")
                .join("gold")
                .join(id)
                .join("report.json"),
            &report_with_coverage(id, true, 1.0, 1.0),
        );
    }
    // Another gold run with one of the two instances only.
    write(
        &logs
            .join("partial-gold")
            .join("gold")
            .join(ids[0])
            .join("report.json"),
        &report_with_coverage(ids[0], true, 1.0, 1.0),
    );
    let args = |extra: &[&str]| {
        let mut v = vec![
            "report",
            "run_instance_swt_logs/model-run/fixture-model",
            "--dataset",
            "custom.jsonl",
            "--denominator",
            "2",
            "--format",
            "json",
        ];
        v.extend_from_slice(extra);
        v.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        swtbench(&a, dir)
    };
    let made = Command::new("python3")
        .arg(workspace().join("fixtures/benchmark/make_benchmark.py"))
        .arg(dir.join("fx"))
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    std::fs::copy(dir.join("fx/dataset.jsonl"), dir.join("custom.jsonl")).unwrap();

    let out = run(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("coverage rows relative to gold run my-gold") && err.contains("2 of the 2"),
        "{err}"
    );
    assert!(!err.contains("skipping the coverage delta rows"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["coverage_delta_all"], 50.0, "{v}");
    let with_found = v.clone();

    // A second gold run as good as the first: used is the newest, and the other is named. (The
    // times are set below, not waited for: file systems keep them at different resolutions.)
    for id in ids {
        write(
            &logs
                .join("zz-gold")
                .join("gold")
                .join(id)
                .join("report.json"),
            &report_with_coverage(id, true, 1.0, 1.0),
        );
    }
    let set_mtime = |run: &str, secs: u64| {
        let dir = std::fs::File::open(logs.join(run).join("gold")).unwrap();
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        dir.set_modified(t).unwrap();
    };
    set_mtime("my-gold", 1_700_000_000);
    set_mtime("zz-gold", 1_700_000_100);
    let out = run(&[]);
    let err = text(&out.stderr);
    assert!(
        err.contains("coverage rows relative to gold run zz-gold"),
        "{err}"
    );
    assert!(
        err.contains("warning: gold runs my-gold cover as many instances as zz-gold"),
        "{err}"
    );

    // --gold-run-id chooses, and says nothing about others.
    let out = run(&["--gold-run-id", "my-gold"]);
    let err = text(&out.stderr);
    assert!(!err.contains("cover as many"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v, with_found, "the same numbers as with the gold run found");
    // A gold run that does not exist: no coverage rows, and why.
    let out = run(&["--gold-run-id", "nope"]);
    assert!(
        text(&out.stderr).contains("no gold run found at"),
        "{}",
        text(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v.get("coverage_delta_all").is_none_or(Value::is_null),
        "{v}"
    );
}
