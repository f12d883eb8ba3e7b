//! A malformed predictions file gives the same error, naming the file and the line, and the same
//! hint from every command that reads predictions (`validate`, `spec`, `grade`, `extract`, `run`).
//! Nothing here needs a container engine: each command stops at the predictions.

use std::path::Path;
use std::process::Output;

use serde_json::json;

fn swtbench(args: &[&str], cwd: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("HF_HOME", cwd.join("hf"))
        .env("SWTBENCH_OFFLINE", "1")
        .env_remove("SWTBENCH_REPO_MIRROR")
        .output()
        .unwrap()
}

const PATCH: &str = "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";
const TEST_PATCH: &str = "diff --git a/tests/test_m.py b/tests/test_m.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_m.py\n@@ -0,0 +1 @@\n+x = 1\n";

/// The `error:` and `hint:` lines of a command's stderr.
fn error_and_hint(out: &Output) -> (String, String) {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = |prefix: &str| {
        err.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{err}"))
            .to_string()
    };
    (line("error:"), line("hint:"))
}

#[test]
fn a_malformed_predictions_line_is_named_the_same_way_by_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut rows = String::new();
    for id in ["acme__widget-1", "acme__widget-2"] {
        rows.push_str(
            &json!({
                "instance_id": id, "repo": "acme/widget", "version": "0.1",
                "base_commit": "0123abcd", "patch": PATCH, "test_patch": TEST_PATCH,
                "problem_statement": "synthetic", "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]",
            })
            .to_string(),
        );
        rows.push('\n');
    }
    std::fs::write(dir.join("dataset.jsonl"), rows).unwrap();
    // Line 1 is a good record; line 2 is cut off mid-object.
    let good = json!({"instance_id": "acme__widget-1", "model_name_or_path": "m", "model_patch": TEST_PATCH});
    std::fs::write(
        dir.join("preds.jsonl"),
        format!("{good}\n{{\"instance_id\": \"acme__widget-2\", \"model_patch\": \n"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("mirrors")).unwrap();

    let common = ["--dataset", "dataset.jsonl", "--predictions", "preds.jsonl"];
    let commands: [(&str, &[&str]); 5] = [
        ("validate", &[]),
        ("spec", &["--out", "specs"]),
        ("grade", &["--run-id", "r1"]),
        (
            "extract",
            &[
                "--patch-types",
                "vanilla",
                "--repo-mirror",
                "mirrors",
                "--output-dir",
                "extracted",
            ],
        ),
        ("run", &["--run-id", "r1", "--dry-run"]),
    ];
    let mut seen: Vec<(String, (String, String))> = Vec::new();
    for (cmd, extra) in commands {
        let mut args = vec![cmd];
        args.extend(common);
        args.extend(extra);
        let out = swtbench(&args, dir);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (error, hint) = error_and_hint(&out);
        assert!(
            error.starts_with("error: preds.jsonl: line 2: not valid JSON"),
            "{cmd}: {error}"
        );
        assert!(hint.contains(".jsonl file of"), "{cmd}: {hint}");
        seen.push((cmd.to_string(), (error, hint)));
    }
    for (cmd, msg) in &seen[1..] {
        assert_eq!(msg, &seen[0].1, "{cmd} differs from {}", seen[0].0);
    }
    assert!(!dir.join("extracted").exists(), "extract stopped early");
}
