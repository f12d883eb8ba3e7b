//! The uv environment provider on the real container engine. A local stand-in for
//! `python:3.11-slim-bookworm` (the fixture base image's Debian Python, with a `python` command
//! and without the EXTERNALLY-MANAGED marker, as in the official images; labelled
//! `swtbench.test=uv-python-stand-in`) is passed with `--python-image`; then:
//! - the fixture benchmark with `--env-provider uv` gives the same report.json files, byte for
//!   byte, as with the table's venv provider;
//! - the env image of a small pinned entry (`no_deps = true`) holds exactly its pins
//!   (`uv pip freeze`).
//!
//! Every image this test builds is removed at its end (the fixture's venv images are shared with
//! the other engine tests and kept).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::engine_fixture::*;

const STAND_IN: &str = "swtbench-test-uv-python";
const TEMPLATE: &str = "swtbench-test-uv-python:{version}-slim-bookworm";

fn docker(args: &[&str]) -> std::process::Output {
    Command::new("docker").args(args).output().unwrap()
}

fn build_stand_in() {
    let dockerfile = format!(
        "FROM {}\nRUN rm -f /usr/lib/python3*/EXTERNALLY-MANAGED && ln -sf /usr/bin/python3 /usr/local/bin/python\nLABEL swtbench.test=uv-python-stand-in\n",
        base_image()
    );
    assert!(
        docker_build(&format!("{STAND_IN}:3.11-slim-bookworm"), &dockerfile),
        "building the Python stand-in"
    );
}

/// The image keys `swtbench spec` renders for the dataset's instances with `extra` flags.
fn keys(fx: &Fixture, table: &Path, extra: &[&str]) -> Vec<Value> {
    let out_dir = fx.root.join(format!("spec-{}", unique_run_id("k")));
    let mut args: Vec<String> = vec![
        "spec".into(),
        "--dataset".into(),
        fx.dataset(),
        "--repo-mirror".into(),
        fx.mirrors(),
        "--spec-table".into(),
        table.display().to_string(),
        "--out".into(),
        out_dir.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = run(&args);
    assert!(out.status.success());
    let mut keys = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let p = dir.join("keys.json");
        keys.push(serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap());
    }
    keys
}

/// `swtbench images build --level env` of swtfix__calc-1 with the uv provider on `template`.
fn build_env_image(
    fx: &Fixture,
    table: &Path,
    template: &str,
    out_dir: &Path,
) -> std::process::Output {
    run(&[
        "images".into(),
        "build".into(),
        "--dataset".into(),
        fx.dataset(),
        "--repo-mirror".into(),
        fx.mirrors(),
        "--spec-table".into(),
        table.display().to_string(),
        "--env-provider".into(),
        "uv".into(),
        "--python-image".into(),
        template.into(),
        "--level".into(),
        "env".into(),
        "--instance-ids".into(),
        "swtfix__calc-1".into(),
        "--output-dir".into(),
        out_dir.display().to_string(),
    ])
}

fn remove_images(keys: &[Value]) {
    let mut tags: Vec<String> = Vec::new();
    for k in keys {
        for kind in ["instance", "env"] {
            let t = k[kind].as_str().unwrap().to_string();
            if !tags.contains(&t) {
                tags.push(t);
            }
        }
    }
    for t in &tags {
        let _ = docker(&["rmi", "-f", t]);
    }
}

#[test]
fn engine_uv_provider_scores_like_venv_and_installs_exactly_the_pins() {
    require_engine!();
    let fx = Fixture::new();
    build_stand_in();
    let uv_flags = ["--env-provider", "uv", "--python-image", TEMPLATE];
    let uv_keys = keys(&fx, &spec_table(), &uv_flags);
    let venv_keys = keys(&fx, &spec_table(), &[]);
    for (u, v) in uv_keys.iter().zip(&venv_keys) {
        assert_ne!(u["env"], v["env"], "a uv environment has its own key");
        assert_eq!(u["base"], "swtbench-test-uv-python:3.11-slim-bookworm");
    }

    // Same scores: every report.json of the uv run equals the venv run's.
    // The venv run is the test run's reference evaluation of the fixture.
    let (venv_dir, venv_id) = reference_run(&fx);
    let uv_id = unique_run_id("uv-parity-uv");
    let uv_dir = fx.root.join("uv");
    let out = run(&fx.run_args_no_hang(&uv_id, &uv_dir, "predictions.jsonl", &uv_flags));
    let ok = out.status.code() == Some(0);
    let (want, got) = (reports_of(&venv_dir, &venv_id), reports_of(&uv_dir, &uv_id));
    let leftover = containers_of(&uv_id);

    // The env image of a small pinned entry holds exactly its pins.
    let pins = [
        "iniconfig==2.0.0",
        "packaging==24.1",
        "pip==24.2",
        "pluggy==1.5.0",
        "pytest==8.3.3",
        "setuptools==68.0.0",
        "wheel==0.44.0",
    ];
    let table = std::fs::read_to_string(spec_table()).unwrap();
    let pinned = table.replacen(
        "pip_packages = [\"pytest==8.3.3\"]",
        &format!(
            "no_deps = true\npip_packages = [{}]",
            pins.iter()
                .map(|p| format!("{p:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        1,
    );
    assert_ne!(pinned, table);
    let pinned_path = fx.root.join("pinned.toml");
    std::fs::write(&pinned_path, pinned).unwrap();
    let pinned_keys = keys(&fx, &pinned_path, &uv_flags);
    let build = build_env_image(&fx, &pinned_path, TEMPLATE, &fx.root.join("pinned-build"));
    let env_image = pinned_keys
        .iter()
        .map(|k| k["env"].as_str().unwrap().to_string())
        .find(|e| !uv_keys.iter().any(|k| k["env"] == e.as_str()))
        .unwrap();
    let freeze = docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        &env_image,
        "bash",
        "-c",
        "source /opt/swtbench-venv/bin/activate && uv pip freeze",
    ]);
    let uv_version = docker(&["run", "--rm", &env_image, "uv", "--version"]);

    // Clean up before asserting: every image this test built, the stand-in too.
    remove_images(&uv_keys);
    remove_images(&pinned_keys);
    let _ = docker(&["rmi", &format!("{STAND_IN}:3.11-slim-bookworm")]);

    assert!(ok, "the uv run failed");
    assert!(leftover.is_empty(), "leftover containers {leftover:?}");
    assert!(want.len() >= 6, "{}", want.len());
    assert_eq!(got.len(), want.len());
    for (id, text) in &want {
        assert_eq!(got.get(id), Some(text), "{id}: report.json differs");
    }
    assert!(build.status.success());
    let freeze = String::from_utf8_lossy(&freeze.stdout);
    let mut lines: Vec<&str> = freeze.lines().collect();
    lines.sort();
    assert_eq!(lines, pins, "uv pip freeze");
    assert!(
        String::from_utf8_lossy(&uv_version.stdout).contains(swtbench_spec::UV_VERSION),
        "{}",
        String::from_utf8_lossy(&uv_version.stdout)
    );
}

/// A Python image whose pip installs into the user scheme (`[install] user = true`): `pip install
/// uv` puts the `uv` program into `~/.local/bin`, which is not on PATH, as on images whose
/// interpreter's scripts directory is not on PATH. The environment must build anyway (it once failed with `uv: command not found` right
/// after pip had installed uv), and `uv` must work inside the activated environment.
#[test]
fn engine_uv_environment_builds_when_the_interpreters_bin_is_not_on_path() {
    require_engine!();
    let fx = Fixture::new();
    let image = "swtbench-test-uv-optpython";
    let dockerfile = format!(
        "FROM {}\nRUN rm -f /usr/lib/python3*/EXTERNALLY-MANAGED && ln -sf /usr/bin/python3 /usr/local/bin/python \
         && printf '[install]\\nuser = true\\n' > /etc/pip.conf && ! command -v uv\nLABEL swtbench.test=uv-python-off-path\n",
        base_image()
    );
    assert!(
        docker_build(&format!("{image}:3.11-slim-bookworm"), &dockerfile),
        "building the off-PATH Python image"
    );
    let template = format!("{image}:{{version}}-slim-bookworm");
    let flags = [
        "--env-provider",
        "uv",
        "--python-image",
        template.as_str(),
        "--instance-ids",
        "swtfix__calc-1",
    ];
    let env_keys = keys(&fx, &spec_table(), &flags);
    assert_eq!(env_keys.len(), 1);
    let out_dir = fx.root.join("off-path-build");
    let build = build_env_image(&fx, &spec_table(), &template, &out_dir);
    let env_image = env_keys[0]["env"].as_str().unwrap().to_string();
    let uv_version = docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        &env_image,
        "bash",
        "-c",
        "source /opt/swtbench-venv/bin/activate && uv --version && python -m pytest --version",
    ]);

    remove_images(&env_keys);
    let _ = docker(&["rmi", &format!("{image}:3.11-slim-bookworm")]);

    assert!(
        build.status.success(),
        "the env image did not build:\n{}\n{}",
        String::from_utf8_lossy(&build.stdout),
        String::from_utf8_lossy(&build.stderr)
    );
    let text = String::from_utf8_lossy(&uv_version.stdout);
    assert!(
        uv_version.status.success() && text.contains(swtbench_spec::UV_VERSION),
        "uv inside the environment: {text}\n{}",
        String::from_utf8_lossy(&uv_version.stderr)
    );
}
