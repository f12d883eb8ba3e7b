//! The configuration file (docs/configuration.md): `swtbench.toml` in the current directory, the
//! `[tool.swtbench]` table of `pyproject.toml`, `--config FILE`, `--no-config`; the precedence
//! command line > environment variable > file > default; and its errors, which name the file and
//! the key.

use std::path::Path;
use std::process::Output;

use crate::support::cli::{make_fixture, workspace, NO_ENGINE};

use serde_json::Value;

/// `swtbench ARGS` in `cwd` without an engine, with `env` set (and SWTBENCH_REPO_MIRROR /
/// SWTBENCH_CONFIG removed unless set there, so the machine's own settings do not leak in).
fn run_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = crate::support::binary::command();
    cmd.args(args)
        .current_dir(cwd)
        .env("DOCKER_HOST", NO_ENGINE)
        .env_remove("SWTBENCH_REPO_MIRROR")
        .env_remove("SWTBENCH_CONFIG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A file that names everything `run --dry-run` needs (relative paths: relative to the file).
fn fixture_config(dir: &Path) -> String {
    let table = workspace().join("fixtures/benchmark/spec-table.toml");
    make_fixture(dir);
    format!(
        "[run]\n\
         dataset = \"fx/dataset.jsonl\"\n\
         predictions = \"fx/predictions.jsonl\"\n\
         repo-mirror = \"fx/mirrors\"\n\
         spec-table = \"{}\"\n\
         run-id = \"from-config\"\n\
         max-workers = 3\n",
        table.display()
    )
}

fn plan(out: &Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_run_takes_its_flags_from_swtbench_toml_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("swtbench.toml"), fixture_config(tmp.path())).unwrap();
    let out = run_in(tmp.path(), &["run", "--dry-run", "--json"], &[]);
    let p = plan(&out);
    assert_eq!(p["run_id"], "from-config");
    assert_eq!(p["counts"]["instances"], 10);
    let err = stderr(&out);
    assert!(err.contains("settings from swtbench.toml:"), "{err}");
    assert!(err.contains("--max-workers 3"), "{err}");

    // The command line wins, and what it overrides is not reported as the file's.
    let out = run_in(
        tmp.path(),
        &[
            "run",
            "--dry-run",
            "--json",
            "--run-id",
            "cli",
            "--max-workers",
            "1",
        ],
        &[],
    );
    assert_eq!(plan(&out)["run_id"], "cli");
    assert!(
        !stderr(&out).contains("--max-workers 3"),
        "{}",
        stderr(&out)
    );

    // --no-config reads nothing: --predictions is required again.
    let out = run_in(tmp.path(), &["run", "--dry-run", "--no-config"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--predictions"), "{}", stderr(&out));
}

#[test]
fn the_environment_wins_over_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("swtbench.toml"), fixture_config(tmp.path())).unwrap();
    let missing = tmp.path().join("no-such-mirrors");
    let out = run_in(
        tmp.path(),
        &["run", "--dry-run", "--json"],
        &[("SWTBENCH_REPO_MIRROR", missing.to_str().unwrap())],
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("no-such-mirrors"), "{}", stderr(&out));
}

#[test]
fn a_named_file_and_pyproject_are_read_too() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("conf");
    std::fs::create_dir(&conf).unwrap();
    // --config names a file elsewhere: its relative paths are relative to it.
    std::fs::write(conf.join("eval.toml"), fixture_config(&conf)).unwrap();
    let out = run_in(
        tmp.path(),
        &["run", "--dry-run", "--json", "--config", "conf/eval.toml"],
        &[],
    );
    assert_eq!(plan(&out)["counts"]["instances"], 10);
    // So does SWTBENCH_CONFIG.
    let out = run_in(
        tmp.path(),
        &["run", "--dry-run", "--json"],
        &[("SWTBENCH_CONFIG", "conf/eval.toml")],
    );
    assert_eq!(plan(&out)["run_id"], "from-config");

    // pyproject.toml's [tool.swtbench] table.
    let text = fixture_config(tmp.path()).replace("[run]", "[tool.swtbench.run]");
    std::fs::write(
        tmp.path().join("pyproject.toml"),
        format!("[project]\nname = \"x\"\n\n{text}"),
    )
    .unwrap();
    let out = run_in(tmp.path(), &["run", "--dry-run", "--json"], &[]);
    assert_eq!(plan(&out)["run_id"], "from-config");
    assert!(
        stderr(&out).contains("settings from pyproject.toml"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn mistakes_in_the_file_name_the_file_and_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |text: &str| std::fs::write(tmp.path().join("swtbench.toml"), text).unwrap();
    for (text, want) in [
        (
            "[run]\nmax-worker = 2\n",
            "swtbench.toml: `run.max-worker` is not a flag of swtbench run; did you mean `max-workers`?",
        ),
        ("[run]\nmax-workers = \"many\"\n", "swtbench.toml: `run.max-workers`: invalid value 'many'"),
        ("[run]\nno-network = \"yes\"\n", "is a switch"),
        ("[run\n", "swtbench.toml: not valid TOML"),
    ] {
        write(text);
        let out = run_in(tmp.path(), &["run", "--predictions", "gold", "--run-id", "x", "--dry-run"], &[]);
        assert_eq!(out.status.code(), Some(2), "{text}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{text}: {}", stderr(&out));
        assert_eq!(stderr(&out).matches("error:").count(), 1, "{}", stderr(&out));
    }
    // A missing named file.
    let out = run_in(tmp.path(), &["datasets", "--config", "nope.toml"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("nope.toml"), "{}", stderr(&out));
}

/// `swtbench ARGS` in `cwd`, expected to refuse and exit within 60 s; a service that starts
/// instead is stopped and the test fails.
fn refused(cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = crate::support::binary::command();
    cmd.args(args)
        .current_dir(cwd)
        .env("DOCKER_HOST", NO_ENGINE)
        .env_remove("SWTBENCH_REPO_MIRROR")
        .env_remove("SWTBENCH_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "swtbench {} did not refuse: it started\n{}",
                args.join(" "),
                stderr(&out)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn serve_takes_the_run_table_for_its_run_flags() {
    let tmp = tempfile::tempdir().unwrap();
    // The `[run]` table's flags are the defaults of the run flags after `serve --`: a batch flag
    // there is refused as if it were given after `--`.
    std::fs::write(
        tmp.path().join("swtbench.toml"),
        "[run]\ndataset = \"lite\"\noffline = true\ndry-run = true\n",
    )
    .unwrap();
    let out = refused(tmp.path(), &["serve", "--"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--dry-run cannot be given to the service"),
        "{}",
        stderr(&out)
    );
    // The command line after `--` wins over the file; a bad value in the file names the file and
    // the key.
    std::fs::write(
        tmp.path().join("swtbench.toml"),
        "[run]\ndataset = \"lite\"\noffline = true\nmax-workers = \"many\"\n",
    )
    .unwrap();
    let out = refused(tmp.path(), &["serve", "--", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("run.max-workers"),
        "the file's key is named: {}",
        stderr(&out)
    );
}
