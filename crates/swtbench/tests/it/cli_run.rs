//! `swtbench run` without running anything: argument checks, the `--dry-run --json` plan of the
//! fixture benchmark, and the exit codes of `--skip-eval` (grading what is on disk). Works with or
//! without a container engine: the plan is made as on a machine without one (no image exists, and
//! it says so), so that what this machine's engine holds does not change it.

use crate::support::cli::{make_fixture, swtbench, swtbench_without_engine, workspace};

use serde_json::Value;

#[test]
fn the_dry_run_plan_of_the_fixture_benchmark() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = make_fixture(tmp.path());
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
    let out = swtbench_without_engine(&args, tmp.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the plan assumes no image exists"),
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

/// A negative number is a value the flag refuses, not an unknown argument: every numeric flag says
/// what it takes, before any engine is contacted (exit code 2, as every bad argument).
#[test]
fn negative_numbers_say_what_the_flag_takes() {
    let tmp = tempfile::tempdir().unwrap();
    let run = ["run", "--predictions", "gold", "--run-id", "r"];
    let seconds = "expected a positive number of seconds";
    let positive = "expected a positive whole number";
    let count = "expected 0 or a positive whole number";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        ([&run[..], &["--timeout", "-1"]].concat(), seconds),
        ([&run[..], &["--timeout=-5"]].concat(), seconds),
        ([&run[..], &["--timeout", "0"]].concat(), seconds),
        ([&run[..], &["--build-timeout", "-1"]].concat(), seconds),
        ([&run[..], &["--max-workers", "-1"]].concat(), positive),
        ([&run[..], &["--build-workers", "-2"]].concat(), positive),
        ([&run[..], &["--pids-limit", "-1"]].concat(), count),
        ([&run[..], &["--open-file-limit", "-1"]].concat(), count),
        (
            [&run[..], &["--cpus", "-1"]].concat(),
            "expected a positive number of CPUs",
        ),
        (vec!["report", "some/path", "--denominator", "-1"], positive),
        (vec!["report", "some/path", "--decimals", "-1"], count),
        (vec!["images", "build", "--build-workers", "-1"], positive),
        (vec!["dataset", "retrieve", "--top-k", "-1"], count),
        (vec!["dataset", "retrieve", "--max-workers", "-1"], positive),
        (vec!["dataset", "build", "--max-tokens", "-1"], count),
        (vec!["dataset", "build", "--k", "-3"], count),
    ];
    for (args, needle) in cases {
        let out = crate::support::binary::command()
            .args(&args)
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .current_dir(tmp.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
        assert!(!err.contains("container engine"), "{args:?}: {err}");
    }
}

#[test]
fn an_unreachable_engine_is_exit_code_3_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let out = crate::support::binary::command()
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

/// The summary line's count of `what` ("error(s)", "skipped").
fn summary_count(stderr: &str, what: &str) -> usize {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains(" instance(s): ") && l.contains("error(s)"))
        .unwrap_or_else(|| panic!("no summary line in {stderr}"));
    let before = &line[..line.find(&format!(" {what}")).unwrap()];
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn skip_eval_errors_give_exit_code_1_and_a_clean_grading_0_without_an_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = make_fixture(tmp.path());
    let table = workspace().join("fixtures/benchmark/spec-table.toml");
    let run = |ids: &str, run_id: &str| {
        let out = crate::support::binary::command()
            .arg("run")
            .arg("--dataset")
            .arg(fx.join("dataset.jsonl"))
            .arg("--predictions")
            .arg(fx.join("predictions.jsonl"))
            .arg("--repo-mirror")
            .arg(fx.join("mirrors"))
            .arg("--spec-table")
            .arg(&table)
            .args(["--instance-ids", ids, "--run_id", run_id, "--skip_eval"])
            // --skip-eval needs no engine: one that cannot be reached changes nothing.
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .env_remove("SWTBENCH_REPO_MIRROR")
            .current_dir(tmp.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), stderr)
    };

    // calc-1 has no outputs on disk (nothing ran): an error, so exit code 1.
    let (code, err) = run("swtfix__calc-1,swtfix__calc-5", "graded-missing");
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(summary_count(&err, "error(s)"), 1, "{err}");
    assert!(
        err.contains("swtfix__calc-1: error: outputs are missing and --skip-eval runs nothing"),
        "{err}"
    );
    assert!(
        err.contains("0 to evaluate, 0 run(s) to execute, 0 image(s) to build"),
        "--skip-eval runs and builds nothing: {err}"
    );
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(
            tmp.path()
                .join("evaluation_results/swtbench-fixture-model.graded-missing.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(report["error_ids"], serde_json::json!(["swtfix__calc-1"]));
    assert_eq!(
        report["unresolved_ids"],
        serde_json::json!(["swtfix__calc-5"]),
        "the empty prediction is graded: {report}"
    );

    let report_path = tmp
        .path()
        .join("evaluation_results/swtbench-fixture-model.graded-missing.json");
    let read_report = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap()
    };

    // The same run id on a subset that evaluates nothing (its one instance is in error): no
    // table, no run report written over the last one, one error naming the cause, exit code 1
    // (the cause is not the machine's).
    let (code, err) = run("swtfix__calc-1", "graded-missing");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("error: nothing was evaluated"), "{err}");
    assert_eq!(
        read_report()["total_instances"],
        2,
        "the earlier run report stays"
    );

    // The same run id on a subset that is graded: the run report covers only it, and says so
    // (not silently). Two empty predictions (graded without outputs) under a run id of their
    // own, then one of them.
    let empty = |id: &str| serde_json::json!({"instance_id": id, "model_name_or_path": "swtbench-fixture-model", "model_patch": ""});
    let preds = tmp.path().join("empty.jsonl");
    std::fs::write(
        &preds,
        format!("{}\n{}\n", empty("swtfix__calc-2"), empty("swtfix__calc-5")),
    )
    .unwrap();
    let run_empty = |ids: &str| {
        let out = crate::support::binary::command()
            .arg("run")
            .arg("--dataset")
            .arg(fx.join("dataset.jsonl"))
            .arg("--predictions")
            .arg(&preds)
            .arg("--spec-table")
            .arg(&table)
            .args([
                "--instance-ids",
                ids,
                "--run-id",
                "graded-subset",
                "--skip-eval",
            ])
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .current_dir(tmp.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run_empty("swtfix__calc-2,swtfix__calc-5");
    assert_eq!(code, Some(0), "{err}");
    let (_, err) = run_empty("swtfix__calc-5");
    assert!(
        err.contains("1 other instance(s) have reports under run id graded-subset"),
        "{err}"
    );
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(
            tmp.path()
                .join("evaluation_results/swtbench-fixture-model.graded-subset.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(report["total_instances"], 1);
    assert_eq!(
        report["not_in_this_report_ids"],
        serde_json::json!(["swtfix__calc-2"])
    );
    // The run's page, written beside its run report (output directory `.`), links to it there.
    let page = std::fs::read_to_string(
        tmp.path()
            .join("evaluation_results/swtbench-fixture-model.graded-subset.html"),
    )
    .unwrap();
    assert!(
        page.contains("href=\"swtbench-fixture-model.graded-subset.json\""),
        "the run report's link climbs out of evaluation_results/"
    );

    // Only the empty prediction: graded without outputs, no error, exit code 0.
    let (code, err) = run("swtfix__calc-5", "graded-clean");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(summary_count(&err, "error(s)"), 0, "{err}");
    assert_eq!(summary_count(&err, "skipped"), 0, "{err}");
    assert!(!err.contains("other instance(s) have reports"), "{err}");
}

/// What a run would trip over is refused before it starts, by `run` and `validate` alike: a log
/// parser the spec table misspells, a memory limit below the engine's minimum. A dry run that
/// cannot reach the engine says so and does not call a local base image missing.
#[test]
fn values_a_run_would_trip_over_are_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = make_fixture(tmp.path());
    let fixture =
        std::fs::read_to_string(workspace().join("fixtures/benchmark/spec-table.toml")).unwrap();
    let bad = tmp.path().join("typo.toml");
    std::fs::write(
        &bad,
        fixture.replacen("log_parser = \"pytest\"", "log_parser = \"pytset\"", 1),
    )
    .unwrap();
    let dataset = fx.join("dataset.jsonl");
    let predictions = fx.join("predictions.jsonl");
    let (d, p) = (dataset.to_str().unwrap(), predictions.to_str().unwrap());
    let no_engine = |args: &[&str]| {
        crate::support::binary::command()
            .args(args)
            .current_dir(tmp.path())
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .output()
            .unwrap()
    };
    let run = [
        "run",
        "--dataset",
        d,
        "--predictions",
        p,
        "--run-id",
        "r",
        "--dry-run",
    ];
    for args in [
        [&run[..], &["--spec-table", bad.to_str().unwrap()]].concat(),
        vec![
            "validate",
            "--dataset",
            d,
            "--predictions",
            p,
            "--spec-table",
            bad.to_str().unwrap(),
        ],
    ] {
        let out = no_engine(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("typo.toml") && err.contains("swtfix/calc") && err.contains("pytset"),
            "{args:?}: {err}"
        );
    }
    let table = workspace().join("fixtures/benchmark/spec-table.toml");
    let table = table.to_str().unwrap();
    let out = no_engine(&[&run[..], &["--spec-table", table, "--memory", "1k"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("at least 6m"), "{err}");

    // Without the engine: planned, with the warning, and no "base image … does not exist".
    let out = no_engine(
        &[
            &run[..],
            &[
                "--spec-table",
                table,
                "--repo-mirror",
                fx.join("mirrors").to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    let (stdout, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("the plan assumes no image exists"), "{err}");
    let missing = "base image swtbench-fixture-base:bookworm does not exist";
    assert!(
        !stdout.contains(missing) && !err.contains(missing),
        "{stdout}{err}"
    );
    assert!(
        stdout.contains("9 to evaluate") || err.contains("9 to evaluate"),
        "{stdout}{err}"
    );
}

#[test]
fn ca_in_tests_needs_the_network_and_a_bundle_and_changes_every_run_key() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = make_fixture(tmp.path());
    let bundle = tmp.path().join("ca.crt");
    std::fs::write(&bundle, "-----BEGIN CERTIFICATE-----\n").unwrap();
    let mut base: Vec<String> = crate::support::cli::fixture_selection(&fx, "swtfix__calc-1");
    base.extend(
        [
            "--predictions",
            fx.join("predictions.jsonl").to_str().unwrap(),
            "--run-id",
            "ca",
            "--dry-run",
            "--json",
        ]
        .map(String::from),
    );
    let run = |extra: &[&str]| {
        let mut args = vec!["run".to_string()];
        args.extend(base.iter().cloned());
        args.extend(extra.iter().map(|s| s.to_string()));
        swtbench_without_engine(&args, tmp.path())
    };
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();

    let isolated = run(&[
        "--ca-in-tests",
        "--no-network",
        "--ca-bundle",
        bundle.to_str().unwrap(),
    ]);
    assert_eq!(isolated.status.code(), Some(2), "{}", stderr(&isolated));
    assert!(
        stderr(&isolated).contains("--ca-in-tests goes with the engine's network"),
        "{}",
        stderr(&isolated)
    );
    // The test process passes no SSL_CERT_FILE: without --ca-bundle there is nothing to trust.
    let none = run(&["--ca-in-tests", "--allow-network"]);
    assert_eq!(none.status.code(), Some(2), "{}", stderr(&none));
    assert!(stderr(&none).contains("no CA bundle"), "{}", stderr(&none));

    let keys = |o: &std::process::Output| -> Vec<String> {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
        let plan: Value = serde_json::from_slice(&o.stdout).unwrap();
        plan["instances"][0]["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["key"].as_str().unwrap().to_string())
            .collect()
    };
    let trusted = keys(&run(&[
        "--ca-in-tests",
        "--allow-network",
        "--ca-bundle",
        bundle.to_str().unwrap(),
    ]));
    let plain = keys(&run(&["--allow-network"]));
    assert_eq!(trusted.len(), 6);
    assert!(
        trusted.iter().all(|k| !plain.contains(k)),
        "{trusted:?} {plain:?}"
    );
}

/// `run`'s help as (heading, the long flags under it), in the order it prints them.
fn help_sections(help: &str) -> Vec<(String, Vec<String>)> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for line in help
        .lines()
        .skip_while(|l| !l.starts_with("Usage:"))
        .skip(1)
    {
        let text = line.trim_start();
        let indent = line.len() - text.len();
        if indent == 0 && text.ends_with(':') {
            sections.push((text.trim_end_matches(':').to_string(), Vec::new()));
        } else if (indent == 2 || indent == 6) && text.starts_with('-') {
            let long = text
                .split_whitespace()
                .find(|w| w.starts_with("--"))
                .unwrap();
            let (_, flags) = sections.last_mut().expect("a flag before any heading");
            flags.push(long.trim_end_matches(',').to_string());
        }
    }
    sections
}

/// `run -h` and `--help` group the flags under headings: the essentials first, the original
/// harness's parity switches last; only the global --quiet and --help stay under Options.
#[test]
fn run_help_groups_its_flags_under_headings() {
    let tmp = tempfile::tempdir().unwrap();
    let parity = "Parity with the original harness";
    for help_flag in ["-h", "--help"] {
        let out = swtbench(&["run", help_flag], tmp.path());
        assert_eq!(out.status.code(), Some(0), "{help_flag}");
        let help = String::from_utf8(out.stdout).unwrap();
        let sections = help_sections(&help);
        let headings: Vec<&str> = sections.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(
            headings,
            [
                "Options",
                "Inputs",
                "Execution",
                "Reports and output",
                "Clusters and registries",
                "Tuning",
                parity,
            ],
            "{help_flag}:\n{help}"
        );
        assert_eq!(
            sections[0].1,
            ["--quiet", "--config", "--no-config", "--help"],
            "{help_flag}:\n{help}"
        );
        let under = |flag: &str| {
            let found = sections
                .iter()
                .find(|(_, flags)| flags.iter().any(|f| f == flag));
            found.map(|(heading, _)| heading.as_str())
        };
        for (flag, heading) in [
            ("--dataset", "Inputs"),
            ("--instance-ids", "Inputs"),
            ("--predictions", "Inputs"),
            ("--run-id", "Inputs"),
            ("--output-dir", "Inputs"),
            ("--max-workers", "Execution"),
            ("--no-network", "Execution"),
            ("--repo-mirror", "Execution"),
            ("--env-provider", "Execution"),
            ("--no-coverage", "Execution"),
            ("--events", "Reports and output"),
            ("--dry-run", "Reports and output"),
            ("--shard", "Clusters and registries"),
            ("--registry", "Clusters and registries"),
            ("--build-workers", "Tuning"),
            ("--cache-level", "Tuning"),
            ("--exec-mode", parity),
            ("--compute-coverage", parity),
            ("--is-swt", parity),
            ("--vanilla-style", parity),
            ("--sympy-strip-bug", parity),
        ] {
            assert_eq!(under(flag), Some(heading), "{help_flag} {flag}:\n{help}");
        }
        // Inputs come first: --dataset leads them, well before the parity heading.
        assert_eq!(sections[1].1[0], "--dataset", "{help_flag}:\n{help}");
    }
}

/// The plan of README command 1 (a conda environment, whose base image is built from Docker
/// Hub's Ubuntu) says the real run needs Docker Hub, and what to use without it; a plan on local
/// Python images (`--env-provider uv`) does not.
#[test]
fn a_dry_run_says_when_the_real_run_needs_docker_hub() {
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "--dataset",
        "lite",
        "--predictions",
        "gold",
        "--instance-ids",
        "sympy__sympy-20590",
        "--run-id",
        "smoke",
        "--offline",
        "--dry-run",
    ];
    let plan = |args: &[&str]| {
        let out = swtbench_without_engine(args, tmp.path());
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{text}");
        text
    };
    let text = plan(&args);
    assert!(
        text.contains("its build starts FROM ubuntu:22.04: Docker Hub (registry-1.docker.io)"),
        "{text}"
    );
    assert!(text.contains("--env-provider uv"), "{text}");
    let text = plan(&[&args[..], &["--env-provider", "uv"]].concat());
    assert!(
        !text.contains("Docker Hub (registry-1.docker.io)"),
        "{text}"
    );
}
