//! Structured evidence on the real engine with the fixture benchmark (docs/integrity.md).
//!
//! - Hostile predictions for `swtfix__calc-3` (the gold fix repairs `sub`), each a test that
//!   fails and then tries to get graded as passing — and resolved — by another route: overwriting
//!   the evidence file, deleting it, deleting it and putting a secret file back (so that the runner
//!   looks as if it never started), printing from a child process that outlives pytest, writing
//!   straight to the eval script's stdout, and (a passing test) appending a coverage entry with
//!   the file's full line set to the cover file. Each is suspicious with the evidence reason it
//!   provokes, and with `--strict-results` none is resolved and the forged test is not passing.
//! - Honest runs: the logs with the evidence hook are the logs without it (timings aside), and
//!   every run of the honest predictions has verified evidence and the verdict `ok`.
//!
//! Needs what engine_run.rs needs (Docker, the fixture base image); skipped without them.

use std::path::Path;

use crate::engine_fixture::*;
use serde_json::Value;

const ID: &str = "swtfix__calc-3";

/// Prints a PASSED line for the test when the gold fix is present (`sub` fixed).
const WIN: &str = r#"
def _win():
    from calc.ops import sub
    if sub(3, 1) == 2:
        print("PASSED tests/test_model_forged.py::test_forged", flush=True)
"#;

const FAILING_TEST: &str = r#"
def test_forged():
    from calc.ops import sub
    assert sub(5, 3) == 3
"#;

fn forgers() -> Vec<(&'static str, String, &'static [&'static str])> {
    vec![
        (
            "tamper",
            format!(
                r#"import atexit, glob
{WIN}

def _tamper():
    for path in glob.glob("/var/tmp/.swtbench-*/*.ev"):
        with open(path, "w") as f:
            f.write('{{"pid":1,"runner":"pytest","t":"start"}}\t00\n')
            f.write('{{"id":"tests/test_model_forged.py::test_forged","o":"passed","rid":"tests/test_model_forged.py::test_forged","t":"r","when":"call","x":false}}\t00\n')
            f.write('{{"exit":0,"t":"end"}}\t00\n')
    _win()


atexit.register(_tamper)
{FAILING_TEST}"#
            ),
            &["evidence_tampered"],
        ),
        (
            "delete",
            format!(
                r#"import atexit, glob, os
{WIN}

def _delete():
    for path in glob.glob("/var/tmp/.swtbench-*/*.ev"):
        os.remove(path)
    _win()


atexit.register(_delete)
{FAILING_TEST}"#
            ),
            &["evidence_lost"],
        ),
        (
            "fake-secret",
            format!(
                r#"import atexit, glob, os
{WIN}

def _pretend():
    for path in glob.glob("/var/tmp/.swtbench-*/*.ev"):
        os.remove(path)
        with open(os.path.join(os.path.dirname(path), "k"), "w") as f:
            f.write("00" * 32 + "\n" + path + "\n")
    _win()


atexit.register(_pretend)
{FAILING_TEST}"#
            ),
            &["evidence_lost"],
        ),
        (
            "oversized",
            format!(
                r#"import atexit, glob
{WIN}

def _grow():
    for path in glob.glob("/var/tmp/.swtbench-*/*.ev"):
        with open(path, "ab") as f:
            for _ in range(70):
                f.write(b"x" * (1 << 20))
    _win()


atexit.register(_grow)
{FAILING_TEST}"#
            ),
            &["evidence_lost"],
        ),
        (
            "symlink",
            format!(
                r#"import atexit, glob, os
{WIN}

def _link():
    for path in glob.glob("/var/tmp/.swtbench-*/*.ev"):
        os.remove(path)
        os.symlink("/dev/zero", path)
    _win()


atexit.register(_link)
{FAILING_TEST}"#
            ),
            &["evidence_lost"],
        ),
        (
            "child",
            format!(
                r#"import atexit, subprocess, sys
{FAILING_TEST}

def _child():
    code = (
        "from calc.ops import sub\n"
        "if sub(3, 1) == 2:\n"
        "    print('PASSED tests/test_model_forged.py::test_forged', flush=True)\n"
    )
    subprocess.run([sys.executable, "-c", code])


atexit.register(_child)
"#
            ),
            &["evidence_disagrees"],
        ),
        (
            "stdout",
            format!(
                r#"import atexit, os
{FAILING_TEST}

def _write():
    from calc.ops import sub
    if sub(3, 1) == 2:
        fd = os.open("/proc/%d/fd/1" % os.getppid(), os.O_WRONLY)
        os.write(fd, b"PASSED tests/test_model_forged.py::test_forged\n")
        os.close(fd)


atexit.register(_write)
"#
            ),
            &["evidence_disagrees"],
        ),
    ]
}

/// A passing test whose fixture prints a result line for a test that does not exist (pytest shows
/// a passing test's captured output with `-rA`, outside its short summary).
const FIXTURE_FORGER: &str = r#"import pytest


@pytest.fixture
def forger():
    print("PASSED tests/test_model_forged.py::test_ghost")
    yield


def test_forged(forger):
    from calc.ops import add
    assert add(1, 1) == 2
"#;

/// A passing test that appends, for the lines the gold fix changes, a coverage entry in the
/// tracer's own shape (every executable line, computed with the tracer's own function).
const COVERAGE_FORGER: &str = r#"import atexit, importlib.util, json


def _forge():
    spec = importlib.util.spec_from_file_location("tracer", "/root/trace.py")
    tracer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tracer)
    path = "/testbed/calc/ops.py"
    lines = tracer.executable_lines(path)
    body = ", ".join('"%d": %d' % (n, 9) for n in sorted(lines))
    with open("/testbed/coverage.cover", "a") as f:
        f.write("{%s: {%s}}\n" % (json.dumps(path), body))


atexit.register(_forge)


def test_forged():
    from calc.ops import add
    assert add(1, 1) == 2
"#;

fn instance_summary(out: &Path, run_id: &str, model: &str) -> Value {
    let p = out
        .join("run_instance_swt_logs")
        .join(run_id)
        .join(model)
        .join(ID)
        .join("swtbench_instance.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn checks(summary: &Value) -> Vec<(String, String)> {
    summary["integrity"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["run"].as_str().unwrap().to_string(),
                r["check"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn run_model(fx: &Fixture, out: &Path, model: &str, body: &str) -> (String, Vec<String>) {
    let run_id = unique_run_id(model);
    let lines: Vec<String> = body.lines().map(str::to_string).collect();
    let patch = new_file_patch("test_model_forged.py", &lines);
    let pred =
        serde_json::json!({"instance_id": ID, "model_name_or_path": model, "model_patch": patch});
    let file = format!("{model}.jsonl");
    std::fs::write(fx.data.join(&file), format!("{pred}\n")).unwrap();
    let args = fx.run_args(&run_id, out, &file, &["--instance-ids", ID]);
    let o = run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(containers_of(&run_id).is_empty(), "containers left");
    (run_id, args)
}

fn pred_post_log(out: &Path, run_id: &str, model: &str) -> String {
    std::fs::read_to_string(
        out.join("run_instance_swt_logs")
            .join(run_id)
            .join(format!("pred_post__{model}"))
            .join(ID)
            .join("test_output.txt"),
    )
    .unwrap_or_default()
}

#[test]
fn engine_forgeries_of_the_evidence_are_named_and_strict_grading_resolves_none() {
    require_engine!();
    let fx = Fixture::new();
    let out = fx.root.join("forged");
    let mut table = Vec::new();
    let mut cases = forgers();
    cases.push((
        "coverage",
        COVERAGE_FORGER.to_string(),
        &["coverage_file_disagrees"],
    ));
    cases.push((
        "fixture",
        FIXTURE_FORGER.to_string(),
        &["evidence_unknown_test"],
    ));
    for (name, body, wanted) in cases {
        let model = format!("forger-{name}");
        let (run_id, args) = run_model(&fx, &out, &model, &body);
        eprintln!(
            "--- {name}: pred_post ---\n{}",
            pred_post_log(&out, &run_id, &model)
        );
        let summary = instance_summary(&out, &run_id, &model);
        let found = checks(&summary);
        eprintln!("{name}: {}", summary["integrity"]);
        assert_eq!(
            summary["integrity"]["verdict"], "suspicious",
            "{name}: {summary}"
        );
        for want in wanted.iter() {
            assert!(
                found
                    .iter()
                    .any(|(run, c)| c == want && run.starts_with("pred_")),
                "{name}: {want} not in {found:?}"
            );
        }
        assert!(
            found.iter().all(|(run, _)| run.starts_with("pred_")),
            "{name}: the gold and base runs are honest: {found:?}"
        );
        let report_path = out
            .join("run_instance_swt_logs")
            .join(&run_id)
            .join(&model)
            .join(ID)
            .join("report.json");
        let read_report = || -> Value {
            serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap()
        };
        let default_resolved = read_report()[ID]["resolved"].clone();
        // Graded strictly from the same outputs.
        let mut strict = args.clone();
        strict.extend(["--skip-eval".to_string(), "--strict-results".to_string()]);
        let o = run(&strict);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let report = read_report();
        assert_eq!(report[ID]["resolved"], false, "{name}: {report}");
        let passing: Vec<&Value> = ["FAIL_TO_PASS", "PASS_TO_PASS"]
            .iter()
            .filter_map(|b| report[ID]["tests_pred"][b].as_array())
            .flatten()
            .collect();
        match name {
            // Their tests pass for real; the ghost must not.
            "coverage" => {}
            "fixture" => assert!(
                !passing
                    .iter()
                    .any(|t| t.as_str().is_some_and(|t| t.contains("test_ghost"))),
                "{name}: the ghost passes: {report}"
            ),
            _ => assert!(
                passing.is_empty(),
                "{name}: the forged test passes: {report}"
            ),
        }
        table.push(format!(
            "{name}: {} (default resolved: {default_resolved}; strict: unresolved)",
            found
                .iter()
                .map(|(r, c)| format!("{r}/{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    eprintln!("forgeries:\n{}", table.join("\n"));
}

/// Durations differ between two executions.
fn without_timings(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|c| c.is_ascii_digit() || *c == '.')
            {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    out
}

/// Every `test_output.txt` under `dir`: path (relative to `root`) → (log without timings,
/// whether an evidence record is beside it).
fn collect_logs(
    root: &Path,
    dir: &Path,
    logs: &mut std::collections::BTreeMap<String, (String, bool)>,
) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            collect_logs(root, &p, logs);
        } else if p.file_name().is_some_and(|n| n == "test_output.txt") {
            let text = std::fs::read_to_string(&p).unwrap();
            let evidence = p.with_file_name("swtbench_evidence.json").exists();
            let key = p
                .parent()
                .unwrap()
                .strip_prefix(root)
                .unwrap()
                .display()
                .to_string();
            logs.insert(key, (without_timings(&text), evidence));
        }
    }
}

#[test]
fn engine_the_evidence_hook_leaves_the_logs_as_they_are() {
    require_engine!();
    let fx = Fixture::new();
    let ids = "swtfix__calc-1 swtfix__calc-2 swtfix__calc-3 swtfix__textkit-1";
    let mut trees = Vec::new();
    for (name, extra) in [("with", &[][..]), ("without", &["--no-evidence"][..])] {
        let out = fx.root.join(name);
        let run_id = "logs".to_string();
        let mut flags = vec!["--instance-ids"];
        flags.extend(ids.split(' '));
        flags.extend(extra);
        let args = fx.run_args(&run_id, &out, "predictions.jsonl", &flags);
        let o = run(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut logs = std::collections::BTreeMap::new();
        let logs_root = out.join("run_instance_swt_logs");
        collect_logs(&logs_root, &logs_root, &mut logs);
        trees.push(logs);
    }
    let (with, without) = (&trees[0], &trees[1]);
    assert_eq!(
        with.keys().collect::<Vec<_>>(),
        without.keys().collect::<Vec<_>>()
    );
    assert!(with.len() >= 4 * 6 - 8, "{:?}", with.keys());
    for (k, (text, evidence)) in with {
        assert_eq!(
            text, &without[k].0,
            "{k}: the log differs with the evidence hook"
        );
        assert!(*evidence, "{k}: no evidence record");
        assert!(!without[k].1, "{k}: evidence with --no-evidence");
    }
    // The runs after an image's first got the hook with their files, without the root step, and
    // their evidence is there too (checked above for every run).
    let copied_in = with
        .keys()
        .filter(|k| {
            let log = fx
                .root
                .join("with/run_instance_swt_logs")
                .join(k)
                .join("run_instance.log");
            std::fs::read_to_string(log)
                .unwrap_or_default()
                .contains("evidence hook copied in with the run's files")
        })
        .count();
    assert!(
        copied_in >= with.len() / 2,
        "{copied_in} of {} runs got the hook with their files",
        with.len()
    );
    // Every honest run is verified: nothing suspicious, and the runs that ran pytest have
    // their evidence.
    for id in ids.split(' ') {
        let p = report_dir(&fx.root.join("with"), "logs")
            .join(id)
            .join("swtbench_instance.json");
        let summary: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(summary["integrity"]["verdict"], "ok", "{id}: {summary}");
        assert!(
            summary["integrity"].get("without_evidence").is_none(),
            "{id}: {summary}"
        );
    }
}

/// `verify --reexecute`: a tree whose outputs, key files and reports were forged consistently
/// (and whose evidence was removed, as an older tree would lack it) passes the checks that read
/// only the tree; running the instances again finds it.
#[test]
fn engine_verify_reexecute_finds_a_consistently_forged_tree() {
    require_engine!();
    let fx = Fixture::new();
    let out = fx.root.join("submitted");
    let run_id = unique_run_id("verify");
    let ids = ["swtfix__calc-1", "swtfix__calc-3"];
    let mut flags = vec!["--instance-ids"];
    flags.extend(ids);
    let args = fx.run_args(&run_id, &out, "predictions.jsonl", &flags);
    assert!(run(&args).status.success());
    let run_dir = out.join("run_instance_swt_logs").join(&run_id);
    let verify = |extra: &[String]| {
        let mut v: Vec<String> = vec![
            "verify".into(),
            run_dir.display().to_string(),
            "--dataset".into(),
            fx.dataset(),
            "--spec-table".into(),
            spec_table().display().to_string(),
        ];
        v.extend(extra.iter().cloned());
        let o = run(&v);
        // A fresh tree kept for a look (when the reports differ) goes with the test.
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        if let Some(kept) = stderr
            .lines()
            .find_map(|l| l.strip_prefix("the fresh run is kept in "))
        {
            std::fs::remove_dir_all(kept.trim()).unwrap();
        }
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let reexecute: Vec<String> = vec![
        "--reexecute".into(),
        "2".into(),
        format!("--run-arg=--repo-mirror={}", fx.mirrors()),
        "--run-arg=--timeout=20".into(),
        "--run-arg=--max-workers=2".into(),
        "--run-arg=--cache-level=instance".into(),
    ];
    let (code, stdout) = verify(&reexecute);
    assert_eq!(code, Some(0), "{stdout}");
    for id in ids {
        assert!(
            stdout.contains(&format!("reexecuted {id}: the same report")),
            "{stdout}"
        );
    }

    // calc-3's test fails after the fix; make its pred_post say it passed, everywhere.
    let dir = run_dir
        .join("pred_post__swtbench-fixture-model")
        .join("swtfix__calc-3");
    let log = std::fs::read_to_string(dir.join("test_output.txt")).unwrap();
    let forged = log
        .replace(
            "FAILED tests/test_model_wrong.py::test_sub_wrong_expectation",
            "PASSED tests/test_model_wrong.py::test_sub_wrong_expectation",
        )
        .replace(" 1 failed", " 1 passed");
    assert_ne!(forged, log);
    std::fs::write(dir.join("test_output.txt"), &forged).unwrap();
    let key_path = dir.join("swtbench_key.json");
    let mut key: Value =
        serde_json::from_str(&std::fs::read_to_string(&key_path).unwrap()).unwrap();
    key["output_sha256"] = swtbench_core::hash::sha256_hex(forged.as_bytes()).into();
    std::fs::write(&key_path, serde_json::to_string_pretty(&key).unwrap()).unwrap();
    for f in ["swtbench_evidence.json", "test_evidence.jsonl"] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    let mut regrade = args.clone();
    regrade.extend(["--skip-eval".to_string(), "true".to_string()]);
    assert!(run(&regrade).status.success());
    let report = std::fs::read_to_string(
        report_dir(&out, &run_id)
            .join("swtfix__calc-3")
            .join("report.json"),
    )
    .unwrap();
    assert!(report.contains("\"resolved\": true"), "{report}");

    // The tree alone is consistent: only the missing evidence is said.
    let (code, stdout) = verify(&[]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains("no evidence swtfix__calc-3: pred_post"),
        "{stdout}"
    );
    // Running it again is not.
    let (code, stdout) = verify(&reexecute);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("reexecuted swtfix__calc-1: the same report"),
        "{stdout}"
    );
    assert!(
        stdout.contains("reexecuted swtfix__calc-3: differs: ")
            && stdout.contains("resolved submitted true, now false"),
        "{stdout}"
    );
    assert!(containers_of(&format!("{run_id}-reexecute")).is_empty());
}
