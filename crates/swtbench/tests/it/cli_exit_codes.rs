//! An environment failure is exit code 3 whichever command meets it: every command that connects
//! to the container engine, run against one that cannot be reached (`DOCKER_HOST` naming a socket
//! that does not exist), ends with exit code 3 and the engine's error, not 2 (input).

use std::process::Command;

use crate::support::cli::{fixture_selection, make_fixture};

#[test]
fn every_engine_command_exits_3_when_the_engine_cannot_be_reached() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = make_fixture(tmp.path());
    let fixture_args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        v.extend(fixture_selection(&fx, "swtfix__calc-1"));
        v
    };
    let predictions = fx.join("predictions.jsonl").display().to_string();
    let cases: Vec<Vec<String>> = vec![
        fixture_args(&["run", "--predictions", &predictions, "--run-id", "r3"]),
        fixture_args(&["images", "build"]),
        fixture_args(&["images", "check", "--registry", "localhost:1/swt"]),
        fixture_args(&["images", "push", "--registry", "localhost:1/swt"]),
        fixture_args(&["images", "pull", "--registry", "localhost:1/swt"]),
        fixture_args(&["envs", "lock", "--output", "x.lock"]),
        vec!["images".into(), "list".into()],
        vec![
            "images".into(),
            "rm".into(),
            "--all".into(),
            "--dry-run".into(),
        ],
        vec!["clean".into(), "--run-id".into(), "r3".into()],
    ];
    for args in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_swtbench"))
            .args(&args)
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .env_remove("SWTBENCH_REPO_MIRROR")
            .current_dir(tmp.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains("container engine"), "{args:?}: {err}");
    }
}
