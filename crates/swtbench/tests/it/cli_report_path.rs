//! `swtbench report PATH` where PATH is one level too high (the run directory instead of
//! `<run>/<model>`): an input error that names the model directories to pass, instead of a table
//! of zeros; a model directory without any report.json gets a warning.

use std::path::Path;
use std::process::Output;

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

#[test]
fn a_run_directory_given_as_path_is_an_input_error_naming_the_model_directory() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("logs/my-run");
    for sub in [
        "pred_pre__org__m/psf__requests-1",
        "pred_post__org__m/psf__requests-1",
        "org__m/psf__requests-1",
    ] {
        std::fs::create_dir_all(run.join(sub)).unwrap();
    }
    let out = swtbench(&["report", "logs/my-run", "--format", "json"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.contains("run directory"), "{stderr}");
    assert!(stderr.contains("logs/my-run/org__m"), "{stderr}");
}

#[test]
fn a_model_directory_without_reports_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("logs/my-run/org__m/psf__requests-1")).unwrap();
    let out = swtbench(
        &["report", "logs/my-run/org__m", "--format", "json"],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("no report.json"), "{stderr}");
}

/// A report.json of instance `id`: applied with tests (applicable) or not applied.
fn instance_report(model_dir: &Path, id: &str, applicable: bool) {
    let transitions = serde_json::json!({"FAIL_TO_PASS": [], "PASS_TO_PASS": ["t"],
        "FAIL_TO_FAIL": [], "PASS_TO_FAIL": [], "UNMATCHED": []});
    let tests = if applicable {
        transitions.clone()
    } else {
        serde_json::Value::Null
    };
    let body = serde_json::json!({id: {
        "patch_is_None": false, "patch_exists": true, "patch_successfully_applied": applicable,
        "resolved": false, "coverage_pred": null, "coverage_gold": null, "coverage_base": null,
        "coverage_delta_pred": null, "coverage_delta_gold": null,
        "tests_base": transitions, "tests_pred": tests,
    }});
    let d = model_dir.join(id);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("report.json"), body.to_string()).unwrap();
}

/// A run of 10 instances (7 applicable) is divided by its own 10, read from its run report, when
/// no --dataset is given (not by lite's 276: 2.54 % instead of 70 %), and the output says so;
/// `--dataset lite` divides by 276 with a warning that the run has 10; without a run report it is
/// lite's 276, with a warning.
#[test]
fn without_a_dataset_the_denominator_is_the_runs_own_and_is_stated() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("run_instance_swt_logs/r10/org__m");
    let ids: Vec<String> = (1..=10).map(|i| format!("acme__calc-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        instance_report(&model, id, i < 7);
    }
    let record = dir.path().join("evaluation_results/org__m.r10.json");
    std::fs::create_dir_all(record.parent().unwrap()).unwrap();
    std::fs::write(
        &record,
        serde_json::json!({"total_instances": 10, "resolved_ids": [],
            "unresolved_ids": ids, "error_ids": []})
        .to_string(),
    )
    .unwrap();
    let path = "run_instance_swt_logs/r10/org__m";
    let board = |extra: &[&str]| {
        let mut args = vec!["report", path, "--format", "json"];
        args.extend_from_slice(extra);
        let out = swtbench(&args, dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (v, stderr)
    };
    let (v, stderr) = board(&[]);
    assert_eq!(v["denominator"], 10, "{stderr}");
    assert_eq!(v["applicability"], 70.0, "{stderr}");
    assert!(
        stderr.contains("denominator 10: the run's instances")
            && stderr.contains("evaluation_results/org__m.r10.json"),
        "{stderr}"
    );
    assert!(!stderr.contains("warning: denominator"), "{stderr}");
    assert!(!stderr.contains("warning: the run has"), "{stderr}");
    // A benchmark named: its fixed count, and a warning that the run has fewer.
    let (v, stderr) = board(&["--dataset", "lite"]);
    assert_eq!(v["denominator"], 276, "{stderr}");
    assert!(
        stderr.contains("warning: the run has 10 instances")
            && stderr.contains("the denominator is 276, lite's fixed count"),
        "{stderr}"
    );
    // --denominator is taken as given.
    let (v, _) = board(&["--denominator", "20"]);
    assert_eq!(v["applicability"], 35.0);
    // No run report: lite's 276 as before, but said with a warning.
    std::fs::remove_file(&record).unwrap();
    let (v, stderr) = board(&[]);
    assert_eq!(v["denominator"], 276, "{stderr}");
    assert!(
        stderr.contains("warning: denominator 276: lite's fixed count (the default)"),
        "{stderr}"
    );
}
