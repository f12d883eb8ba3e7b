//! `swtbench report --mode p@k`: one report per instance picked over the seeds of a model, as the
//! original's multi-sample mode, on a tree of hand-written `report.json` files.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

fn swtbench(args: &[&str], cwd: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("SWTBENCH_OFFLINE", "1")
        .output()
        .unwrap()
}

fn report(dir: &Path, seed: u32, id: &str, resolved: bool, applied: bool) {
    let transitions = |f2p: Vec<&str>| json!({"FAIL_TO_PASS": f2p, "PASS_TO_PASS": [], "FAIL_TO_FAIL": [], "PASS_TO_FAIL": [], "UNMATCHED": []});
    let body = json!({id: {
        "patch_is_None": false, "patch_exists": true, "patch_successfully_applied": applied,
        "resolved": resolved, "coverage_pred": null, "coverage_gold": null, "coverage_base": null,
        "coverage_delta_pred": null, "coverage_delta_gold": null,
        "added_f2p": if applied { json!(u8::from(resolved)) } else { Value::Null },
        "tests_base": transitions(vec![]),
        "tests_pred": transitions(if resolved { vec!["t"] } else { vec![] }),
        "tests_gold": transitions(vec!["t"]),
    }});
    let d = dir
        .join(format!("run_instance_swt_logs/run-{seed}/m"))
        .join(id);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("report.json"), body.to_string()).unwrap();
}

#[test]
fn pass_at_k_counts_an_instance_resolved_by_any_seed_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // a: resolved by seed 2 only; b: applied only; c: nothing applies anywhere.
    report(root, 1, "o__a-1", false, true);
    report(root, 2, "o__a-1", true, true);
    report(root, 1, "o__b-1", false, true);
    report(root, 2, "o__b-1", false, false);
    report(root, 1, "o__c-1", false, false);
    report(root, 2, "o__c-1", false, false);
    let path = "run_instance_swt_logs/run-{seed}/m";
    let json_of = |args: &[&str]| -> Value {
        let o = swtbench(args, root);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let pak = json_of(&[
        "report",
        path,
        "--mode",
        "p@k",
        "--seeds",
        "1",
        "2",
        "--format",
        "json",
        "--denominator",
        "10",
    ]);
    // a (resolved) and b (applied) are picked; c has nothing and is left out.
    assert_eq!(pak["instances"], 2, "{pak}");
    assert_eq!(pak["success_rate"], 10.0, "{pak}");
    assert_eq!(pak["applicability"], 20.0, "{pak}");
    // Seed 1 alone resolves nothing.
    let single = json_of(&[
        "report",
        "run_instance_swt_logs/run-1/m",
        "--format",
        "json",
        "--denominator",
        "10",
    ]);
    assert_eq!(single["success_rate"], 0.0, "{single}");

    // Bad combinations are input errors that say what to pass.
    for args in [
        vec!["report", path, "--mode", "p@k"],
        vec![
            "report",
            "run_instance_swt_logs/run-1/m",
            "--mode",
            "p@k",
            "--seeds",
            "1",
        ],
        vec![
            "report", path, "--mode", "p@k", "--seeds", "1", "--format", "html",
        ],
        vec!["report", "run_instance_swt_logs/run-1/m", "--seeds", "1"],
    ] {
        let o = swtbench(&args, root);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
    // A seed whose run is missing is named.
    let o = swtbench(
        &[
            "report",
            path,
            "--mode",
            "p@k",
            "--seeds",
            "1",
            "3",
            "--denominator",
            "10",
        ],
        root,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("run-3"));
}
