//! Every way into an evaluation goes through `swtbench_app::evaluate::evaluate`, and they agree:
//! on the same predictions, `run` (the shared reference run), each repeat of `run --repeat 2`, the
//! two shards of `run --shard K/2` (then `--merge`) and `verify --reexecute` write the same
//! `report.json`, byte for byte (the re-execution compares its fresh reports itself).
//!
//! Needs what engine_run.rs needs (Docker, the fixture base image).

use std::path::Path;

use crate::engine_fixture::{
    reference_run, reports_of, run, spec_table, swtbench_command, unique_run_id, Fixture,
};

/// The instances this test evaluates (three, of both fixture repositories).
const IDS: [&str; 3] = ["swtfix__calc-1", "swtfix__calc-2", "swtfix__textkit-1"];

fn assert_same_reports(
    what: &str,
    out: &Path,
    run_id: &str,
    reference: &std::collections::BTreeMap<String, String>,
) {
    let got = reports_of(out, run_id);
    for id in IDS {
        assert_eq!(
            got.get(id),
            reference.get(id),
            "{what}: {id}'s report.json differs from run's"
        );
    }
}

#[test]
fn engine_run_repeat_shards_and_reexecute_write_the_same_reports() {
    require_engine!();
    let fx = Fixture::new();
    let (ref_out, ref_id) = reference_run(&fx);
    let reference = reports_of(&ref_out, &ref_id);
    let ids = IDS.join(",");

    // --repeat 2: the first repeat where run puts it, the second in its own tree.
    let out = fx.root.join("repeat");
    let id = unique_run_id("entry-repeat");
    let args = fx.run_args(
        &id,
        &out,
        "predictions.jsonl",
        &["--instance-ids", &ids, "--repeat", "2"],
    );
    let child = swtbench_command()
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "run --repeat 2: {stderr}");
    // Its own containers (whose removal is under way at its end) are never reported as what an
    // ended process left (other processes' leftovers may be, by another pid).
    let names_me =
        |l: &str| l.contains(&format!("pid {pid}:")) || l.contains(&format!("pid {pid} "));
    assert!(
        !stderr
            .lines()
            .any(|l| l.contains("left by swtbench processes") && names_me(l)),
        "{stderr}"
    );
    assert_same_reports("repeat 1", &out, &id, &reference);
    assert_same_reports(
        "repeat 2",
        &out.join("repeats").join(&id).join("2"),
        &id,
        &reference,
    );

    // Two shards into one tree, then the merge.
    let out = fx.root.join("shards");
    let id = unique_run_id("entry-shards");
    for k in ["1/2", "2/2"] {
        let args = fx.run_args(
            &id,
            &out,
            "predictions.jsonl",
            &["--instance-ids", &ids, "--shard", k],
        );
        let o = run(&args);
        assert!(
            o.status.success(),
            "--shard {k}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let args = fx.run_args(
        &id,
        &out,
        "predictions.jsonl",
        &["--instance-ids", &ids, "--merge"],
    );
    assert!(run(&args).status.success(), "--merge");
    assert_same_reports("shards", &out, &id, &reference);

    // verify --reexecute of the reference: a fresh evaluation of a sample, compared.
    let run_dir = ref_out.join("run_instance_swt_logs").join(&ref_id);
    let args: Vec<String> = vec![
        "verify".into(),
        run_dir.display().to_string(),
        "--dataset".into(),
        fx.dataset(),
        "--spec-table".into(),
        spec_table().display().to_string(),
        "--reexecute".into(),
        "3".into(),
        format!("--run-arg=--repo-mirror={}", fx.mirrors()),
        "--run-arg=--timeout=20".into(),
        "--run-arg=--max-workers=2".into(),
        "--run-arg=--cache-level=instance".into(),
    ];
    let o = run(&args);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    assert_eq!(
        stdout.matches(": the same report").count(),
        3,
        "three re-executed instances, each the same: {stdout}"
    );
}
