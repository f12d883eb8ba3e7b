//! `swtbench slurm` and `run --merge` without a cluster or an engine: the scripts `--print`
//! writes, the run flags the cluster command refuses, and a merge that names the shards missing
//! (shards graded with --skip-eval, so nothing needs containers).

use std::path::Path;

use crate::support::cli::{make_fixture, swtbench, workspace};

/// The fixture's run flags, run id `r1`, outputs under `out`.
fn run_flags(fx: &Path, out: &Path) -> Vec<String> {
    let table = workspace().join("fixtures/benchmark/spec-table.toml");
    [
        "--dataset",
        fx.join("dataset.jsonl").to_str().unwrap(),
        "--predictions",
        fx.join("predictions.jsonl").to_str().unwrap(),
        "--repo-mirror",
        fx.join("mirrors").to_str().unwrap(),
        "--spec-table",
        table.to_str().unwrap(),
        "--run-id",
        "r1",
        "--output-dir",
        out.to_str().unwrap(),
        "--timeout",
        "20",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn args(head: &[&str], flags: &[String], tail: &[&str]) -> Vec<String> {
    head.iter()
        .map(|s| s.to_string())
        .chain(flags.iter().cloned())
        .chain(tail.iter().map(|s| s.to_string()))
        .collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn submit_print_writes_an_array_job_of_shards_and_a_merge_job_with_the_run_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = make_fixture(tmp.path());
    let out = tmp.path().join("out");
    let flags = run_flags(&fx, &out);
    let o = swtbench(
        &args(
            &["slurm", "submit", "--shards", "2"],
            &flags,
            &[
                "--partition",
                "debug",
                "--print",
                "--sbatch-arg=--constraint=docker",
                "--cpus-per-task=4",
            ],
        ),
        tmp.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let dir = out.join("slurm").join("r1");
    let listed = text(&o.stdout);
    assert!(
        listed.contains(dir.join("shards.sbatch").to_str().unwrap()),
        "{listed}"
    );
    assert!(
        listed.contains(dir.join("merge.sbatch").to_str().unwrap()),
        "{listed}"
    );
    let shards = std::fs::read_to_string(dir.join("shards.sbatch")).unwrap();
    for line in [
        "#SBATCH --array=1-2",
        "#SBATCH --partition=debug",
        "#SBATCH --cpus-per-task=4",
        "#SBATCH --constraint=docker",
    ] {
        assert!(
            shards.lines().any(|l| l == line),
            "{line} missing:\n{shards}"
        );
    }
    let chdir = format!("#SBATCH --chdir={}", tmp.path().display());
    assert!(shards.lines().any(|l| l == chdir), "{shards}");
    let exec = shards.lines().last().unwrap();
    assert!(
        exec.starts_with(&format!("exec {} run ", env!("CARGO_BIN_EXE_swtbench"))),
        "{exec}"
    );
    assert!(exec.contains("--run-id r1"), "{exec}");
    assert!(
        exec.ends_with(r#"--shard "${SLURM_ARRAY_TASK_ID}/2""#),
        "{exec}"
    );
    for own in [
        "--shards",
        "--partition",
        "--print",
        "--sbatch-arg",
        "--cpus-per-task",
    ] {
        assert!(!exec.contains(own), "{own} is not a run flag: {exec}");
    }
    let merge = std::fs::read_to_string(dir.join("merge.sbatch")).unwrap();
    assert!(
        merge.trim_end().ends_with("--timeout 20 --merge"),
        "{merge}"
    );
    assert!(!dir.join("jobs.json").exists(), "--print submits nothing");
    assert!(
        text(&o.stderr).contains("--dependency=afterany:"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn run_flags_the_cluster_sets_itself_and_bad_inputs_are_refused_before_submitting() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = make_fixture(tmp.path());
    let out = tmp.path().join("out");
    let flags = run_flags(&fx, &out);
    for extra in [
        ["--shard", "1/2"],
        ["--merge", "--print"],
        ["--dry-run", "--print"],
    ] {
        let o = swtbench(
            &args(&["slurm", "submit", "--shards", "2"], &flags, &extra),
            tmp.path(),
        );
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("is set by `slurm submit` itself"),
            "{}",
            text(&o.stderr)
        );
    }
    let o = swtbench(
        &args(
            &["slurm", "submit", "--shards", "2", "--print"],
            &flags,
            &["--repeat", "3"],
        ),
        tmp.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("does not combine with shards"),
        "{}",
        text(&o.stderr)
    );
    // Predictions that do not exist: an input error, nothing written.
    let mut bad = flags.clone();
    let p = bad.iter().position(|a| a == "--predictions").unwrap();
    bad[p + 1] = "/nonexistent.jsonl".into();
    let o = swtbench(
        &args(&["slurm", "submit", "--shards", "2", "--print"], &bad, &[]),
        tmp.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(!out.join("slurm").exists());
    let o = swtbench(
        &args(
            &["slurm", "status", "--run-id", "r1", "--output-dir"],
            &[out.display().to_string()],
            &[],
        ),
        tmp.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("was not submitted to Slurm"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn merge_names_the_missing_shards_and_then_writes_the_report_over_all_of_them() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = make_fixture(tmp.path());
    let out = tmp.path().join("out");
    let flags = run_flags(&fx, &out);
    let results = out.join("evaluation_results");

    let o = swtbench(&args(&["run"], &flags, &["--merge"]), tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("was not split into shards"),
        "{}",
        text(&o.stderr)
    );

    // Shard 1 of 2, graded from (missing) outputs: it finishes, with errors.
    let o = swtbench(
        &args(&["run"], &flags, &["--skip-eval", "--shard", "1/2"]),
        tmp.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(results
        .join("swtbench-fixture-model.r1.shard-1-of-2.json")
        .is_file());
    let o = swtbench(&args(&["run"], &flags, &["--merge"]), tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("shard 2/2") && err.contains("--shard 2/2"),
        "{err}"
    );
    assert!(!err.contains("shard 1/2:"), "shard 1 finished: {err}");
    assert!(!results.join("swtbench-fixture-model.r1.json").exists());

    let o = swtbench(
        &args(&["run"], &flags, &["--skip-eval", "--shard", "2/2"]),
        tmp.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    let o = swtbench(&args(&["run"], &flags, &["--merge"]), tmp.path());
    // Every instance is an error (no outputs), as in the shards: exit 1, and the report written.
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(results.join(name)).unwrap()).unwrap()
    };
    let whole = read("swtbench-fixture-model.r1.json");
    let (a, b) = (
        read("swtbench-fixture-model.r1.shard-1-of-2.json"),
        read("swtbench-fixture-model.r1.shard-2-of-2.json"),
    );
    assert_eq!(
        whole["total_instances"].as_u64().unwrap(),
        a["total_instances"].as_u64().unwrap() + b["total_instances"].as_u64().unwrap()
    );
    let mut reasons = a["error_reasons"].as_object().unwrap().clone();
    reasons.extend(b["error_reasons"].as_object().unwrap().clone());
    assert_eq!(whole["error_reasons"].as_object().unwrap(), &reasons);
    assert!(whole.get("not_in_this_report_ids").is_none());
}
