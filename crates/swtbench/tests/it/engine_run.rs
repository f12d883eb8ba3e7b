//! `swtbench run` end to end on the real container engine, with the fixture benchmark
//! (`fixtures/benchmark`): every prediction's outcome against `expected.json`, with and without
//! coverage, in unit-test and reproduction-script mode; the metrics of `swtbench report`;
//! `--skip-eval` on the finished tree (exit code 0, and 1 once an output is missing); a
//! `kill -9` followed by a resumed run that ends with the same `report.json` files as an
//! uninterrupted one; Ctrl-C (SIGINT) during the runs (partial reports), while an eval script
//! hangs (exit in seconds, not after the timeout; its container gone) and during an image build;
//! `swtbench clean --run-id`; a second process on the same run id; an unwritable output directory.
//! Every test counts the containers left with its run id (must be zero).
//!
//! Needs Docker and the local base image `swtbench-fixture-base:bookworm` (`scripts/base-image`,
//! which `scripts/test` runs first); without them each test prints why it is skipped. The env and
//! instance images of the fixture are built once (under a lock, `swtbench images build`) and
//! kept for the other tests: remove them with `swtbench images rm --kind instance env`.
//! `SWTBENCH_FIXTURE_BASE_IMAGE=name:tag` runs the tests on another base image (e.g. a `docker tag`
//! of the fixture's): its env and instance images have their own keys, so the tests can be timed
//! from scratch, or kept apart from other users of the engine, without touching the shared ones.
//! Test names contain `engine` so nextest's docker group limits how many run at once.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use swtbench_grade::leaderboard::{is_applicable, transitions_beyond_base};

use crate::engine_fixture::*;

/// Every instance of `expected[mode]` against its report.json, and the metrics of `report`.
fn check_expected(out_dir: &Path, run_id: &str, expected: &Value, coverage: bool) {
    let instances = expected["instances"].as_object().unwrap();
    for (id, e) in instances {
        let r = read_report(out_dir, run_id, id).unwrap_or_else(|| panic!("{id}: no report.json"));
        let (fx, fp, pp) = transitions_beyond_base(&r);
        let got = [
            ("applied", r.patch_successfully_applied),
            ("resolved", r.resolved),
            ("W", is_applicable(&r)),
            ("FX", fx),
            ("FP", fp),
            ("PP", pp),
        ];
        for (k, v) in got {
            assert_eq!(
                Some(v),
                e[k].as_bool(),
                "{id} ({}): {k}",
                e["kind"].as_str().unwrap_or_default()
            );
        }
        if coverage {
            for k in ["coverage_pred", "coverage_delta_pred"] {
                if let Some(want) = e[k].as_f64() {
                    let have = match k {
                        "coverage_pred" => r.coverage.coverage_pred,
                        _ => r.coverage.coverage_delta_pred,
                    };
                    assert_eq!(have, Some(want), "{id}: {k}");
                }
            }
        }
        // The integrity checks find nothing in the fixture's honest runs (coverage dumps
        // included); an instance without a grade has no verdict.
        let summary_path = report_dir(out_dir, run_id)
            .join(id)
            .join("swtbench_instance.json");
        if let Ok(text) = std::fs::read_to_string(&summary_path) {
            let summary: Value = serde_json::from_str(&text).unwrap();
            if let Some(integrity) = summary.get("integrity") {
                assert_eq!(integrity["verdict"], "ok", "{id}: {integrity}");
                eprintln!("{id}: integrity ok");
            }
        }
        if e["timed_out"].as_bool() == Some(true) {
            let summary: Value = serde_json::from_str(
                &std::fs::read_to_string(
                    report_dir(out_dir, run_id)
                        .join(id)
                        .join("swtbench_instance.json"),
                )
                .unwrap(),
            )
            .unwrap();
            let reasons = summary["reasons"].to_string();
            assert!(reasons.contains("timed out"), "{id}: {reasons}");
            let out = std::fs::read_to_string(
                out_dir
                    .join("run_instance_swt_logs")
                    .join(run_id)
                    .join(format!("pred_pre__{MODEL_DIR}"))
                    .join(id)
                    .join("test_output.txt"),
            )
            .unwrap();
            assert!(
                out.contains("collected"),
                "the output before the timeout is kept"
            );
            assert!(out.trim_end().ends_with("until then]"), "{out}");
        }
    }
    // The leaderboard metrics as `swtbench report` computes them.
    let denominator = expected["denominator"].as_u64().unwrap().to_string();
    let out = crate::engine_fixture::swtbench_command()
        .arg("report")
        .arg(report_dir(out_dir, run_id))
        .args(["--denominator", &denominator, "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metrics: Value = serde_json::from_slice(&out.stdout).unwrap();
    for (k, v) in expected["metrics"].as_object().unwrap() {
        assert_eq!(metrics[k].as_f64(), v.as_f64(), "metric {k}");
    }
}

#[test]
fn engine_fixture_unit_tests_without_coverage_and_rerun_reuses_everything() {
    require_engine!();
    let fx = Fixture::new();
    let run_id = unique_run_id("nocov");
    let out_dir = fx.root.join("out");
    let args = fx.run_args(&run_id, &out_dir, "predictions.jsonl", &["--no-coverage"]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("| Applicability (W) |"), "{table}");
    check_expected(&out_dir, &run_id, &fx.expected()["unit_test"], false);
    // The summary counts in the run report's words: a patch that did not apply is "not
    // applied", not "unresolved".
    let want = fx.expected()["unit_test"]["instances"].clone();
    let count =
        |f: &dyn Fn(&Value) -> bool| want.as_object().unwrap().values().filter(|v| f(v)).count();
    let empty = count(&|v| v["kind"] == "empty patch");
    let not_applied = count(&|v| v["applied"] == false && v["kind"] != "empty patch");
    let unresolved = count(&|v| v["applied"] == true && v["resolved"] == false);
    let resolved = count(&|v| v["resolved"] == true);
    assert!(not_applied > 0 && unresolved > 0);
    let err = String::from_utf8_lossy(&out.stderr);
    let summary = format!(
        "{resolved} resolved, {unresolved} unresolved, {not_applied} not applied, {empty} empty patch, 0 error(s)"
    );
    assert!(err.contains(&summary), "want {summary:?} in {err}");
    // Key files keep the eval script's exit code (its last step's: 128) and the tests' own.
    let result_of = |run: &str| -> Value {
        let key = out_dir
            .join("run_instance_swt_logs")
            .join(&run_id)
            .join(format!("{run}__{MODEL_DIR}"))
            .join("swtfix__calc-1")
            .join("swtbench_key.json");
        serde_json::from_str::<Value>(&std::fs::read_to_string(key).unwrap()).unwrap()["result"]
            .clone()
    };
    let (pre, post) = (result_of("pred_pre"), result_of("pred_post"));
    assert_eq!(pre["exit_code"], 128, "{pre}");
    assert_eq!(
        pre["test_exit_code"], 1,
        "the model's test fails before the fix: {pre}"
    );
    assert_eq!(post["exit_code"], 128, "{post}");
    assert_eq!(post["test_exit_code"], 0, "and passes after it: {post}");
    let log = std::fs::read_to_string(
        out_dir
            .join("run_instance_swt_logs")
            .join(&run_id)
            .join(format!("pred_post__{MODEL_DIR}"))
            .join("swtfix__calc-1")
            .join("run_instance.log"),
    )
    .unwrap();
    assert!(log.contains("tests exited with 0 after"), "{log}");
    assert!(containers_of(&run_id).is_empty(), "leftover containers");
    let run_report = out_dir
        .join("evaluation_results")
        .join(format!("{MODEL_DIR}.{run_id}.json"));
    let rr: Value = serde_json::from_str(&std::fs::read_to_string(&run_report).unwrap()).unwrap();
    assert_eq!(rr["total_instances"], 10);
    assert_eq!(rr["error_instances"], 0);
    assert_eq!(rr["run_parameters"]["exec mode"], "unit_test");
    assert_eq!(rr["run_parameters"]["coverage"], "off");
    assert!(out_dir
        .join("evaluation_results")
        .join(format!("{MODEL_DIR}.{run_id}.html"))
        .is_file());

    // The same command again: every run is reused, the reports are the same.
    let before = reports_of(&out_dir, &run_id);
    std::fs::remove_file(out_dir.join("events.jsonl")).unwrap();
    let again = run(&args);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(executed_runs(&events(&out_dir)), 0, "nothing runs again");
    assert_eq!(reports_of(&out_dir, &run_id), before);

    // --skip-eval grades what is on disk: everything is there, so the same reports and exit 0.
    let mut skip = args.clone();
    skip.push("--skip-eval".into());
    let graded = run(&skip);
    assert_eq!(graded.status.code(), Some(0));
    assert_eq!(reports_of(&out_dir, &run_id), before);
    // One output gone: that instance is an error, and the exit code says so.
    std::fs::remove_file(
        out_dir
            .join("run_instance_swt_logs")
            .join(&run_id)
            .join(format!("pred_post__{MODEL_DIR}"))
            .join("swtfix__calc-1")
            .join("test_output.txt"),
    )
    .unwrap();
    let graded = run(&skip);
    assert_eq!(graded.status.code(), Some(1));
    let err = String::from_utf8_lossy(&graded.stderr);
    assert!(
        err.contains("swtfix__calc-1: error: outputs are missing") && err.contains(" 1 error(s)"),
        "{err}"
    );
}

#[test]
fn engine_fixture_unit_tests_with_coverage() {
    require_engine!();
    let fx = Fixture::new();
    let run_id = unique_run_id("cov");
    let out_dir = fx.root.join("out");
    let out = run(&fx.run_args(&run_id, &out_dir, "predictions.jsonl", &[]));
    assert_eq!(out.status.code(), Some(0));
    check_expected(&out_dir, &run_id, &fx.expected()["unit_test"], true);
    // The tracer ran: gold runs hold a coverage dump.
    let r = read_report(&out_dir, &run_id, "swtfix__calc-1").unwrap();
    assert!(r.coverage.coverage_gold.is_some());
    assert!(containers_of(&run_id).is_empty(), "leftover containers");
}

#[test]
fn engine_fixture_reproduction_script_mode() {
    require_engine!();
    let fx = Fixture::new();
    let run_id = unique_run_id("repro");
    let out_dir = fx.root.join("out");
    let expected = fx.expected()["reproduction_script"].clone();
    let script = expected["script"].as_str().unwrap().to_string();
    let out = run(&fx.run_args(
        &run_id,
        &out_dir,
        "predictions_repro.jsonl",
        &[
            "--exec-mode",
            "reproduction_script",
            "--reproduction-script-name",
            &script,
        ],
    ));
    assert_eq!(out.status.code(), Some(0));
    check_expected(&out_dir, &run_id, &expected, false);
    assert!(containers_of(&run_id).is_empty(), "leftover containers");
}

/// A subset without the timeout instance keeps the three runs of this test short.
const RESUME_IDS: &str = "swtfix__calc-1,swtfix__calc-2,swtfix__calc-4,swtfix__calc-5,swtfix__textkit-1,swtfix__textkit-2";

#[test]
fn engine_kill_9_and_resume_gives_the_reports_of_an_uninterrupted_run() {
    require_engine!();
    let fx = Fixture::new();
    let extra = ["--no-coverage", "--instance-ids", RESUME_IDS];

    let straight_id = unique_run_id("straight");
    let straight_dir = fx.root.join("straight");
    let out = run(&fx.run_args(&straight_id, &straight_dir, "predictions.jsonl", &extra));
    assert_eq!(out.status.code(), Some(0));
    let want = reports_of(&straight_dir, &straight_id);
    assert_eq!(want.len(), 6);

    let run_id = unique_run_id("killed");
    let out_dir = fx.root.join("killed");
    let args = fx.run_args(&run_id, &out_dir, "predictions.jsonl", &extra);
    let mut child = spawn(&args);
    wait_for_events(&out_dir, "three executed runs", |ev| executed_runs(ev) >= 3);
    child.kill().unwrap(); // SIGKILL: no cleanup at all
    child.wait().unwrap();
    let resumed = run(&args);
    assert_eq!(resumed.status.code(), Some(0));
    let ev = events(&out_dir);
    assert!(
        ev.iter()
            .any(|e| e["event"] == "run_finished" && e["result"]["kind"] == "reused"),
        "the resumed run reuses what the killed one finished"
    );
    assert_eq!(reports_of(&out_dir, &run_id), want);
    assert!(containers_of(&run_id).is_empty(), "leftover containers");
}

#[test]
fn engine_ctrl_c_stops_cleans_up_and_writes_partial_reports() {
    require_engine!();
    let fx = Fixture::new();
    let run_id = unique_run_id("sigint");
    let out_dir = fx.root.join("out");
    let args = fx.run_args(&run_id, &out_dir, "predictions.jsonl", &["--no-coverage"]);
    let mut child = spawn(&args);
    wait_for_events(&out_dir, "a finished instance", |ev| {
        ev.iter()
            .any(|e| e["event"] == "instance_finished" && e["outcome"]["kind"] != "empty_patch")
            && ev.iter().any(|e| e["event"] == "instance_phase")
    });
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let status = wait_exit(&mut child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130));
    assert!(containers_of(&run_id).is_empty(), "leftover containers");
    // A creation the engine was still working on at the interrupt would show up only now.
    std::thread::sleep(Duration::from_secs(2));
    assert!(containers_of(&run_id).is_empty(), "containers created late");
    let run_report: Value = serde_json::from_str(
        &std::fs::read_to_string(
            out_dir
                .join("evaluation_results")
                .join(format!("{MODEL_DIR}.{run_id}.json")),
        )
        .unwrap(),
    )
    .unwrap();
    let graded = run_report["resolved_instances"].as_u64().unwrap()
        + run_report["unresolved_instances"].as_u64().unwrap();
    assert!(graded >= 1, "{run_report}");
    let interrupted = run_report["error_reasons"]
        .as_object()
        .unwrap()
        .values()
        .filter(|v| v.as_str().is_some_and(|s| s.contains("interrupted")))
        .count();
    assert!(interrupted >= 1, "{run_report}");
    assert!(
        !reports_of(&out_dir, &run_id).is_empty(),
        "reports of finished instances"
    );
}

#[test]
fn engine_clean_removes_the_containers_of_a_killed_run() {
    require_engine!();
    // Under a host name of its own: a run that another test starts meanwhile on this machine
    // would otherwise sweep the killed run's containers before `clean` does.
    if let Some(why) = crate::engine_leftovers::no_uts_namespace() {
        skip(&why);
        return;
    }
    let host = crate::engine_leftovers::test_host("clean-run-id");
    let fx = Fixture::new();
    let run_id = unique_run_id("clean");
    let out_dir = fx.root.join("out");
    let args = fx.run_args(&run_id, &out_dir, "predictions.jsonl", &["--no-coverage"]);
    let mut child = crate::engine_leftovers::spawn_under(&host, &args);
    // Kill while a container exists.
    let deadline = Instant::now() + Duration::from_secs(600);
    while containers_of(&run_id).is_empty() {
        assert!(Instant::now() < deadline, "no container appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !containers_of(&run_id).is_empty(),
        "kill -9 leaves its containers"
    );
    let out = crate::engine_leftovers::run_under(
        &host,
        &["clean".into(), "--run-id".into(), run_id.clone()],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(containers_of(&run_id).is_empty(), "clean removed them");
}

#[test]
fn engine_patch_extraction_runs_in_a_container_without_a_mirror() {
    require_engine!();
    let fx = Fixture::new();
    let run_id = unique_run_id("extract");
    let out_dir = fx.root.join("out");
    // No --repo-mirror: the base files come from the instance image, and the custom format's
    // script runs in a container (the images exist: Fixture::new built them). The prediction
    // creates a test file, which only the fixed fuzzy style reads (parity, as the original,
    // sees no `--- /dev/null` section).
    let mut args = fx.run_args(
        &run_id,
        &out_dir,
        "predictions.jsonl",
        &[
            "--no-coverage",
            "--fuzzy-style",
            "fixed",
            "--patch-types",
            "custom",
            "fuzzy",
            "--instance-ids",
            "swtfix__calc-1",
        ],
    );
    let at = args.iter().position(|a| a == "--repo-mirror").unwrap();
    args.drain(at..at + 2);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0));
    let dir = report_dir(&out_dir, &run_id).join("swtfix__calc-1");
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("extraction.json")).unwrap())
            .unwrap();
    assert_eq!(record["patch_type_used"], "fuzzy");
    // The custom attempt ran Python in the container and reported why the diff is not its format.
    assert_eq!(record["attempts"][0]["patch_type"], "custom");
    assert!(record["attempts"][0]["error"]["reason"]
        .as_str()
        .unwrap()
        .contains("does not parse"));
    let r = read_report(&out_dir, &run_id, "swtfix__calc-1").unwrap();
    assert!(r.resolved);
    assert!(containers_of(&run_id).is_empty(), "leftover containers");

    // The fixture images are listed by kind.
    let list = crate::engine_fixture::swtbench_command()
        .args(["images", "list", "--json"])
        .output()
        .unwrap();
    assert!(list.status.success());
    let kinds: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["kind"].as_str().map(str::to_string))
        .collect();
    for k in ["base", "env", "instance"] {
        assert!(kinds.iter().any(|x| x == k), "{k} in {kinds:?}");
    }
}

#[test]
fn engine_a_second_process_with_the_same_run_id_and_output_dir_is_refused() {
    require_engine!();
    let fx = Fixture::new();
    let run_id = unique_run_id("twice");
    let out_dir = fx.root.join("out");
    let args = fx.run_args(
        &run_id,
        &out_dir,
        "predictions.jsonl",
        &["--no-coverage", "--instance-ids", RESUME_IDS],
    );
    let mut first = spawn(&args);
    wait_for_events(&out_dir, "an executed run", |ev| executed_runs(ev) >= 1);
    // The second would overwrite the first's prediction runs and reports (and used to remove its
    // running containers as leftovers).
    let mut second_args = args.clone();
    let at = second_args.iter().position(|a| a == "--events").unwrap();
    second_args[at + 1] = fx.root.join("second.jsonl").display().to_string();
    let second = run(&second_args);
    assert_eq!(second.status.code(), Some(2));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains(&format!("pid {}", first.id())),
        "names the running process: {err}"
    );
    let status = wait_exit(&mut first, Duration::from_secs(600));
    assert_eq!(status.code(), Some(0), "the first run is not disturbed");
    assert_eq!(reports_of(&out_dir, &run_id).len(), 6);
    assert!(containers_of(&run_id).is_empty(), "leftover containers");
}

#[test]
fn engine_an_unwritable_output_dir_is_one_error_before_any_work() {
    require_engine!();
    let fx = Fixture::new();
    let run_id = unique_run_id("unwritable");
    // A path below a regular file cannot be created, whoever runs the test (root included).
    let file = fx.root.join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = run(&fx.run_args(
        &run_id,
        &file.join("out"),
        "predictions.jsonl",
        &["--no-coverage"],
    ));
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("hint: --output-dir"), "{err}");
    assert!(out.stdout.is_empty(), "no table of zeros");
    assert!(containers_of(&run_id).is_empty());
}

/// Runs `docker` with arguments, returning stdout (trimmed) when it succeeds.
fn docker(args: &[&str]) -> Option<String> {
    let out = Command::new("docker").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn engine_ctrl_c_during_an_image_build_leaves_no_container_or_image() {
    require_engine!();
    let fx = Fixture::new();
    let run_id = unique_run_id("ctrlc-build");
    // A base image of this test alone, so that the env image on it really builds (no layer cache)
    // and its build containers can be told from everybody else's.
    let label = format!("swtbench.test={run_id}");
    let base = format!("swtbench-test-{run_id}:1");
    let dockerfile = format!("FROM {}\nLABEL {label}\n", base_image());
    let mut build = Command::new("docker")
        .args(["build", "-q", "-t", &base, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        build
            .stdin
            .take()
            .unwrap()
            .write_all(dockerfile.as_bytes())
            .unwrap();
    }
    assert!(build.wait().unwrap().success(), "building {base}");
    struct Cleanup(String, String);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            // Layers the cancelled build committed carry the test's label.
            let filter = format!("label={}", self.1);
            docker(&["image", "prune", "-f", "--filter", &filter]);
            docker(&["rmi", "-f", &self.0]);
        }
    }
    let _cleanup = Cleanup(base.clone(), label.clone());
    let table = std::fs::read_to_string(spec_table())
        .unwrap()
        .replace(&base_image(), &base);
    let table_path = fx.root.join("spec-table.toml");
    std::fs::write(&table_path, table).unwrap();

    let out_dir = fx.root.join("out");
    let mut args = fx.run_args(
        &run_id,
        &out_dir,
        "predictions.jsonl",
        &["--no-coverage", "--instance-ids", "swtfix__calc-1"],
    );
    let at = args.iter().position(|a| a == "--spec-table").unwrap();
    args[at + 1] = table_path.display().to_string();
    let at = args.iter().position(|a| a == "--cache-level").unwrap();
    args[at + 1] = "none".into();
    let mut plan_args = args.clone();
    plan_args.extend(["--dry-run".to_string(), "--json".to_string()]);
    let plan: Value = serde_json::from_slice(&run(&plan_args).stdout).unwrap();
    let env_tag = plan["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "env")
        .unwrap()["tag"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        docker(&["image", "inspect", &env_tag]).is_none(),
        "fresh key"
    );

    let mut child = spawn(&args);
    wait_for_events(&out_dir, "the env image build", |ev| {
        ev.iter()
            .any(|e| e["event"] == "image_build_started" && e["kind"] == "env")
    });
    // Let the build reach a RUN step (a build container exists).
    let ancestor = format!("ancestor={base}");
    let deadline = Instant::now() + Duration::from_secs(120);
    while docker(&["ps", "-aq", "--filter", &ancestor])
        .unwrap_or_default()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "no build container appeared");
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let status = wait_exit(&mut child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130));
    assert!(containers_of(&run_id).is_empty(), "leftover run containers");
    // The engine removes the cancelled build's container once the client has gone.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = docker(&["ps", "-aq", "--filter", &ancestor]).unwrap_or_default();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "build containers left: {left}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        docker(&["image", "inspect", &env_tag]).is_none(),
        "no half-built env image"
    );
    let ev = events(&out_dir);
    assert!(ev
        .iter()
        .any(|e| e["event"] == "instance_finished" && e["outcome"]["kind"] == "interrupted"));
}

#[test]
fn engine_ctrl_c_stops_a_hanging_eval_script_at_once() {
    require_engine!();
    let fx = Fixture::new();
    let run_id = unique_run_id("ctrlc-hang");
    let out_dir = fx.root.join("out");
    // swtfix__calc-7's model test never ends; with a 600 s timeout only the interrupt can stop it.
    let mut args = fx.run_args(
        &run_id,
        &out_dir,
        "predictions.jsonl",
        &["--no-coverage", "--instance-ids", "swtfix__calc-7"],
    );
    let at = args.iter().position(|a| a == "--timeout").unwrap();
    args[at + 1] = "600".into();
    // A failing check must not leave the hanging container behind.
    struct RemoveContainers(String);
    impl Drop for RemoveContainers {
        fn drop(&mut self) {
            for id in containers_of(&self.0) {
                docker(&["rm", "-f", &id]);
            }
        }
    }
    let _cleanup = RemoveContainers(run_id.clone());
    let mut child = spawn(&args);
    // Wait until the hanging test itself runs in a container of the run.
    let deadline = Instant::now() + Duration::from_secs(300);
    let container = loop {
        assert!(Instant::now() < deadline, "the hanging test did not start");
        assert!(child.try_wait().unwrap().is_none(), "swtbench ended early");
        let hanging = containers_of(&run_id).into_iter().find(|id| {
            docker(&["top", id, "-eo", "pid,args"]).is_some_and(|ps| ps.contains("test_model_hang"))
        });
        if let Some(id) = hanging {
            break id;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    std::thread::sleep(Duration::from_secs(2));
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let interrupted = Instant::now();
    // Generous against the 600 s timeout: the interrupt must not wait for the script.
    let status = wait_exit(&mut child, Duration::from_secs(60));
    let took = interrupted.elapsed();
    eprintln!("exited {took:?} after Ctrl-C");
    assert_eq!(status.code(), Some(130));
    assert!(
        took < Duration::from_secs(30),
        "exited {took:?} after one Ctrl-C"
    );
    assert!(
        docker(&["inspect", &container]).is_none(),
        "the hanging container {container} is gone"
    );
    assert!(containers_of(&run_id).is_empty(), "leftover containers");
    // The partial run report lists the instance as interrupted, and no run output was half
    // written (a rerun executes it).
    let run_report: Value = serde_json::from_str(
        &std::fs::read_to_string(
            out_dir
                .join("evaluation_results")
                .join(format!("{MODEL_DIR}.{run_id}.json")),
        )
        .unwrap(),
    )
    .unwrap();
    let reason = run_report["error_reasons"]["swtfix__calc-7"].to_string();
    assert!(reason.contains("interrupted"), "{run_report}");
    let run_dirs = out_dir.join("run_instance_swt_logs").join(&run_id);
    for kind in ["pred_pre", "pred_post"] {
        let dir = run_dirs
            .join(format!("{kind}__{MODEL_DIR}"))
            .join("swtfix__calc-7");
        assert!(!dir.join("test_output.txt").exists(), "{kind} output");
    }
}

/// An image a user builds `FROM` one of swtbench's inherits all of its labels (kind, run id):
/// `images list`, `images rm` and `clean` treat only what swtbench made as swtbench's.
#[test]
fn engine_images_built_from_swtbench_images_are_left_to_their_owner() {
    require_engine!();
    let run_id = unique_run_id("derived");
    let ours = format!("swtbench-test-temp-{run_id}:latest");
    let theirs = format!("swtbench-test-user-{run_id}:1");
    struct RemoveImages(Vec<String>);
    impl Drop for RemoveImages {
        fn drop(&mut self) {
            for t in &self.0 {
                docker(&["rmi", "-f", t]);
            }
        }
    }
    let _cleanup = RemoveImages(vec![theirs.clone(), ours.clone()]);
    // A temporary instance image of run `run_id`, labelled as the runner labels what it builds.
    let build_ours = || {
        docker_build(
            &ours,
            &format!(
                "FROM {}\nLABEL swtbench.managed=true swtbench.kind=instance \
                 swtbench.run_id={run_id} swtbench.image={ours}\n",
                base_image()
            ),
        )
    };
    assert!(build_ours());
    assert!(docker_build(
        &theirs,
        &format!("FROM {ours}\nLABEL user.note=mine\n")
    ));
    let inherited = docker(&[
        "image",
        "inspect",
        "-f",
        "{{index .Config.Labels \"swtbench.run_id\"}}",
        &theirs,
    ]);
    assert_eq!(
        inherited.as_deref(),
        Some(run_id.as_str()),
        "labels inherited"
    );

    let stdout = |args: &[&str]| {
        let out = crate::engine_fixture::swtbench_command()
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let listed = stdout(&["images", "list", "--json"]);
    assert!(listed.contains(&ours), "{listed}");
    assert!(!listed.contains(&theirs), "{listed}");
    let would = stdout(&["images", "rm", "--all", "--dry-run"]);
    assert!(would.lines().any(|l| l == ours), "{would}");
    assert!(!would.contains(&theirs), "{would}");

    // `clean --run-id` removes the run's own image and leaves the user's.
    stdout(&["clean", "--run-id", &run_id]);
    assert!(
        docker(&["image", "inspect", &ours]).is_none(),
        "ours removed"
    );
    assert!(
        docker(&["image", "inspect", &theirs]).is_some(),
        "theirs kept"
    );

    // So does `images rm --run-id`.
    assert!(build_ours());
    let removed = stdout(&["images", "rm", "--run-id", &run_id]);
    assert!(removed.contains(&format!("removed {ours}")), "{removed}");
    assert!(!removed.contains(&theirs), "{removed}");
    assert!(
        docker(&["image", "inspect", &ours]).is_none(),
        "ours removed"
    );
    assert!(
        docker(&["image", "inspect", &theirs]).is_some(),
        "theirs kept"
    );
}

/// An env image whose packages cannot be downloaded (here: every proxy points at a closed port)
/// fails in one line that names the unreachable source and the ways around it, instead of the
/// build log's last line.
#[test]
fn engine_an_unreachable_package_index_is_named_in_one_line() {
    require_engine!();
    let fx = Fixture::new();
    // An env no run ever builds successfully, so its image can never exist already.
    let table = std::fs::read_to_string(spec_table()).unwrap().replace(
        "pip_packages = [\"pytest==8.3.3\"]",
        "pip_packages = [\"pytest==8.3.3\", \"swtbench-probe-unreachable==0.0.1\"]",
    );
    assert!(table.contains("swtbench-probe-unreachable"));
    let table_path = fx.root.join("unreachable.toml");
    std::fs::write(&table_path, table).unwrap();
    // By commit (the default) and step by step: the same one line. Step by step, the step images
    // of the failed build are watched too (a commit build has none; its failures are tested in
    // the backend's docker_commit tests).
    for step_builds in [false, true] {
        let mut cmd = crate::engine_fixture::swtbench_command();
        cmd.args(["images", "build", "--dataset", &fx.dataset()])
            .args(["--instance-ids", "swtfix__calc-1", "--level", "env"])
            .arg("--spec-table")
            .arg(&table_path)
            .arg("--output-dir")
            .arg(fx.root.join(format!("unreachable-out-{step_builds}")));
        if step_builds {
            cmd.arg("--step-builds");
        }
        for v in ["NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"] {
            cmd.env_remove(v);
        }
        for v in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"] {
            cmd.env(v, "http://127.0.0.1:9");
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{err}");
        let line = err
            .lines()
            .find(|l| l.contains("swtfix__calc-1: image exec.env."))
            .unwrap_or_else(|| panic!("no failure line in {err}"));
        assert!(
            line.contains("could not be built: the Python package index")
                && line.contains("could not be reached from the build"),
            "step builds {step_builds}: {line}"
        );
        assert!(
            line.contains("HTTPS_PROXY") && line.contains("provider = \"venv\""),
            "{line}"
        );
        assert!(line.contains("build_image.log"), "{line}");
        if !step_builds {
            continue;
        }
        // The failed build leaves no dangling step image behind (untagged and without children:
        // the steps it shares with other images stay).
        let log_path = line
            .split_whitespace()
            .find(|w| w.contains("build_image.log"))
            .map(|w| w.trim_end_matches([';', ',', ')', '.']))
            .unwrap();
        let log = std::fs::read_to_string(log_path).unwrap_or_else(|e| panic!("{log_path}: {e}"));
        let steps: Vec<&str> = log
            .lines()
            .filter_map(|l| l.trim().strip_prefix("---> "))
            .filter(|id| id.len() >= 12 && id.chars().all(|c| c.is_ascii_hexdigit()))
            .collect();
        assert!(!steps.is_empty(), "the build ran steps: {log}");
        let dangling =
            docker(&["images", "-q", "--no-trunc", "-f", "dangling=true"]).unwrap_or_default();
        for id in steps {
            assert!(
                !dangling
                    .lines()
                    .any(|d| d.trim_start_matches("sha256:").starts_with(id)),
                "the failed build left its step image {id} dangling"
            );
        }
    }
}

/// A model run next to a gold run made under another run id (the common case with
/// `--instance-ids` or a custom benchmark) shows Δ coverage: the gold run is found under the same
/// output directory and named, or chosen with `--gold-run-id`.
#[test]
fn engine_a_model_run_finds_its_gold_run_for_the_coverage_rows() {
    require_engine!();
    let fx = Fixture::new();
    let out_dir = fx.root.join("out");
    let ids = ["--instance-ids", "swtfix__calc-1", "swtfix__calc-2"];
    let gold_id = unique_run_id("gold");
    let mut gold = fx.run_args(&gold_id, &out_dir, "predictions.jsonl", &ids);
    let at = gold.iter().position(|a| a == "--predictions").unwrap();
    gold[at + 1] = "gold".into();
    let out = run(&gold);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let model_id = unique_run_id("model");
    let args = fx.run_args(&model_id, &out_dir, "predictions.jsonl", &ids);
    let out = run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(table.contains("Coverage Delta (Δᵃˡˡ)"), "{table}\n{err}");
    assert!(
        err.contains(&format!("coverage rows relative to gold run {gold_id}")),
        "{err}"
    );
    // Named explicitly: the same table, and nothing to say about the choice.
    let mut explicit = args.clone();
    explicit.extend(["--gold-run-id".to_string(), gold_id.clone()]);
    let again = run(&explicit);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&again.stdout), table);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("coverage rows relative to"));
    assert!(containers_of(&model_id).is_empty() && containers_of(&gold_id).is_empty());
}
