//! `swtbench slurm` on a real single-node Slurm cluster (Debian's slurm-wlm and munge, started
//! by `scripts/slurm-local`) and the real engine, with the fixture benchmark: three shards and
//! their merge give what one process gives, byte for byte; a shard cancelled mid-run with
//! `scancel` is all that a second `submit` submits, and the result is still the same, with no
//! container left.
//!
//! Needs Docker and the fixture base image (as engine_run.rs) and Slurm: skipped without
//! `sbatch`, unless the engine layer is required (SWTBENCH_REQUIRE_ENGINE=1, which scripts/test
//! sets, or SWTBENCH_REQUIRE_SLURM=1 for this test alone), and then it fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::engine_fixture::{
    self, containers_of, reference_run, report_dir, unique_run_id, workspace, Fixture,
};
use serde_json::Value;

/// The cluster's configuration file, starting the cluster when it is not up; `None` to skip.
pub(crate) fn slurm_conf() -> Option<PathBuf> {
    let required = engine_fixture::engine_required()
        || std::env::var("SWTBENCH_REQUIRE_SLURM").is_ok_and(|v| v == "1");
    let have = Command::new("sbatch").arg("--version").output().is_ok();
    if !have {
        assert!(
            !required,
            "the Slurm test is required here but sbatch is not installed (apt-get install slurm-wlm munge)"
        );
        eprintln!("SKIPPED: no sbatch (apt-get install slurm-wlm munge)");
        return None;
    }
    let out = Command::new("bash")
        .arg(workspace().join("scripts/slurm-local"))
        .arg("start")
        .output()
        .unwrap();
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(!required, "starting the local Slurm cluster failed: {why}");
        eprintln!("SKIPPED: starting the local Slurm cluster failed: {why}");
        return None;
    }
    Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn swtbench(conf: &Path, cwd: &Path, args: &[String]) -> Output {
    let out = crate::engine_fixture::swtbench_command()
        .args(args)
        .current_dir(cwd)
        .env("SLURM_CONF", conf)
        .output()
        .unwrap();
    eprintln!(
        "swtbench {}\n--- stdout ---\n{}--- stderr ---\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The fixture's run flags into `out` (no events file: the shards would share it).
fn run_flags(fx: &Fixture, run_id: &str, out: &Path) -> Vec<String> {
    let mut args = fx.run_args_no_hang(run_id, out, "predictions.jsonl", &[]);
    let events = args.iter().position(|a| a == "--events").unwrap();
    args.drain(events..events + 2);
    args.remove(0); // "run"
    args
}

fn submit(conf: &Path, fx: &Fixture, run_id: &str, out: &Path) -> Output {
    let mut args = vec!["slurm".to_string(), "submit".into()];
    args.extend(run_flags(fx, run_id, out));
    args.extend([
        "--shards".into(),
        "3".into(),
        "--time".into(),
        "00:20:00".into(),
    ]);
    swtbench(conf, &fx.root, &args)
}

fn status(conf: &Path, run_id: &str, out: &Path) -> Value {
    let args: Vec<String> = [
        "slurm",
        "status",
        "--json",
        "--run-id",
        run_id,
        "--output-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([out.display().to_string()])
    .collect();
    let o = crate::engine_fixture::swtbench_command()
        .args(&args)
        .env("SLURM_CONF", conf)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Until the scheduler has no job of the submission left that is not over.
fn wait_until_over(conf: &Path, run_id: &str, out: &Path) -> Value {
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let s = status(conf, run_id, out);
        let busy = s["jobs"].as_object().unwrap().values().any(|state| {
            matches!(
                state.as_str().unwrap_or_default(),
                "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING"
            )
        });
        if !busy {
            return s;
        }
        assert!(Instant::now() < deadline, "the jobs did not end: {s}");
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// Every instance's report.json, by instance.
fn reports(out: &Path, run_id: &str) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(report_dir(out, run_id))
        .unwrap()
        .flatten()
        .filter_map(|d| {
            let bytes = std::fs::read(d.path().join("report.json")).ok()?;
            Some((d.file_name().to_string_lossy().into_owned(), bytes))
        })
        .collect()
}

/// The run report over the whole run, without its timing field (and, with `resumed`, without
/// which instances were reused from an earlier invocation: a resubmitted shard reuses what it
/// finished before it was cancelled, as a resumed single process does).
fn run_report(out: &Path, run_id: &str, resumed: bool) -> Value {
    let path = out
        .join("evaluation_results")
        .join(format!("swtbench-fixture-model.{run_id}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut v: Value = serde_json::from_str(&text).unwrap();
    let m = v.as_object_mut().unwrap();
    m["run_parameters"]
        .as_object_mut()
        .unwrap()
        .remove("time taken");
    if resumed {
        m.remove("completed_ids");
        m.remove("completed_instances");
    }
    v
}

fn assert_same_result(out: &Path, run_id: &str, ref_out: &Path, ref_id: &str, resumed: bool) {
    let (got, want) = (reports(out, run_id), reports(ref_out, ref_id));
    assert_eq!(
        got.len(),
        9,
        "every instance graded (all but the hanging one)"
    );
    assert_eq!(got, want, "report.json files byte for byte");
    assert_eq!(
        run_report(out, run_id, resumed),
        run_report(ref_out, ref_id, resumed)
    );
    assert!(
        out.join("evaluation_results")
            .join(format!("swtbench-fixture-model.{run_id}.html"))
            .is_file(),
        "the merge writes the page"
    );
}

#[test]
fn engine_slurm_shards_and_merge_equal_one_process_and_a_cancelled_shard_is_resubmitted() {
    require_engine!();
    let Some(conf) = slurm_conf() else { return };
    let fx = Fixture::new();

    // One process: the test run's reference evaluation of the fixture.
    let (ref_out, ref_id) = reference_run(&fx);

    // Three shards and the merge.
    let (id, out) = (unique_run_id("slurm"), fx.root.join("sharded"));
    let started = Instant::now();
    let o = submit(&conf, &fx, &id, &out);
    assert!(o.status.success());
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("shard(s) 1-3 of 3"), "{said}");
    let s = wait_until_over(&conf, &id, &out);
    eprintln!(
        "3 Slurm shards and the merge {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(s["merged"], true, "{s}");
    for shard in s["shards"].as_array().unwrap() {
        assert_eq!(
            shard["graded"],
            shard["instances"].as_array().unwrap().len()
        );
    }
    assert_same_result(&out, &id, &ref_out, &ref_id, false);
    assert!(containers_of(&id).is_empty());

    // A shard cancelled mid-run, then submitted again.
    let (id, out) = (unique_run_id("slurm-cancel"), fx.root.join("cancelled"));
    let o = submit(&conf, &fx, &id, &out);
    assert!(o.status.success());
    let array = status(&conf, &id, &out)["array_job"]
        .as_str()
        .unwrap()
        .to_string();
    // The shard with the most instances (it runs longest), once it runs.
    let deadline = Instant::now() + Duration::from_secs(300);
    let victim = loop {
        let s = status(&conf, &id, &out);
        let biggest = s["shards"].as_array().and_then(|v| {
            v.iter()
                .max_by_key(|sh| sh["instances"].as_array().map_or(0, |i| i.len()))
                .cloned()
        });
        if let Some(sh) = biggest {
            let k = sh["shard"]["index"].as_u64().unwrap();
            let task = format!("{array}_{k}");
            if s["jobs"][&task] == "RUNNING" && sh["report"].is_null() {
                break k;
            }
        }
        assert!(Instant::now() < deadline, "no shard ran: {s}");
        std::thread::sleep(Duration::from_millis(500));
    };
    std::thread::sleep(Duration::from_secs(3));
    let o = Command::new("scancel")
        .arg(format!("{array}_{victim}"))
        .env("SLURM_CONF", &conf)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = wait_until_over(&conf, &id, &out);
    assert_eq!(s["merged"], false, "the merge refuses a missing shard: {s}");
    let merge_out = std::fs::read_to_string(out.join("slurm").join(&id).join("merge.out")).unwrap();
    assert!(
        merge_out.contains(&format!("--shard {victim}/3")),
        "the merge names the shard to run again:\n{merge_out}"
    );
    let o = submit(&conf, &fx, &id, &out);
    assert!(o.status.success());
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains(&format!("shard(s) {victim} of 3")),
        "only the cancelled shard is submitted again: {said}"
    );
    let s = wait_until_over(&conf, &id, &out);
    assert_eq!(s["merged"], true, "{s}");
    assert_same_result(&out, &id, &ref_out, &ref_id, true);
    assert!(containers_of(&id).is_empty(), "no container left");
    assert!(containers_of(&ref_id).is_empty());
}
