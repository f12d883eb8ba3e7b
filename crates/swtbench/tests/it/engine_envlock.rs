//! `swtbench envs lock` and `run --env-lock` on the real engine, with the fixture benchmark moved to
//! uv on a local stand-in Python image (as in `engine_uv.rs`; labelled
//! `swtbench.test=envlock-python-stand-in`):
//! - `envs lock` resolves the fixture's one environment once (PyPI through the host's CA bundle)
//!   and writes an entry per repository;
//! - a run with the lock gives the same report.json files as a run without it, and its env images
//!   hold exactly the lock's pins (`uv pip freeze`);
//! - after one entry's pin is changed, running again into the same output directory executes the
//!   runs of that entry's instances and reuses every other.
//!
//! Ctrl-C during `envs lock` ends it with 130, no lock file and no resolve container left.
//!
//! Three of the fixture's instances keep it short (two of swtfix/calc, one of swtfix/textkit).
//! Every image this test builds, the stand-in too, is removed at its end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::engine_fixture::*;

const STAND_IN: &str = "swtbench-test-envlock-python:3.11-slim-bookworm";
const TEMPLATE: &str = "swtbench-test-envlock-python:{version}-slim-bookworm";
const IDS: &str = "swtfix__calc-1,swtfix__calc-2,swtfix__textkit-1";

fn docker(args: &[&str]) -> std::process::Output {
    Command::new("docker").args(args).output().unwrap()
}

fn build_stand_in() {
    let dockerfile = format!(
        "FROM {}\nRUN rm -f /usr/lib/python3*/EXTERNALLY-MANAGED && ln -sf /usr/bin/python3 /usr/local/bin/python\nLABEL swtbench.test=envlock-python-stand-in\n",
        base_image()
    );
    assert!(
        docker_build(STAND_IN, &dockerfile),
        "building the Python stand-in"
    );
}

/// The fixture benchmark without its venv images (this test builds uv ones only).
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let data = root.join("fx");
    let out = Command::new("python3")
        .arg(workspace().join("fixtures/benchmark/make_benchmark.py"))
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success());
    Fixture {
        _tmp: tmp,
        root,
        data,
    }
}

fn common(fx: &Fixture) -> Vec<String> {
    vec![
        "--dataset".into(),
        fx.dataset(),
        "--instance-ids".into(),
        IDS.into(),
        "--repo-mirror".into(),
        fx.mirrors(),
        "--spec-table".into(),
        spec_table().display().to_string(),
        "--env-provider".into(),
        "uv".into(),
        "--python-image".into(),
        TEMPLATE.into(),
    ]
}

/// Instance id → its image keys, as `swtbench spec` renders them with `extra` flags.
fn keys(fx: &Fixture, extra: &[String]) -> BTreeMap<String, Value> {
    let out_dir = fx.root.join(format!("spec-{}", unique_run_id("k")));
    let mut args: Vec<String> = vec!["spec".into()];
    args.extend(common(fx));
    args.extend(["--out".into(), out_dir.display().to_string()]);
    args.extend(extra.iter().cloned());
    let out = run(&args);
    assert!(out.status.success());
    let mut keys = BTreeMap::new();
    for e in std::fs::read_dir(&out_dir).unwrap() {
        let dir = e.unwrap().path();
        let text = std::fs::read_to_string(dir.join("keys.json")).unwrap();
        keys.insert(
            dir.file_name().unwrap().to_string_lossy().into_owned(),
            serde_json::from_str(&text).unwrap(),
        );
    }
    assert_eq!(keys.len(), 3, "{keys:?}");
    keys
}

fn run_args(
    fx: &Fixture,
    run_id: &str,
    out_dir: &Path,
    events: &Path,
    extra: &[String],
) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "run".into(),
        "--predictions".into(),
        fx.data.join("predictions.jsonl").display().to_string(),
        "--run-id".into(),
        run_id.into(),
        "--output-dir".into(),
        out_dir.display().to_string(),
        "--timeout".into(),
        "60".into(),
        "--max-workers".into(),
        "2".into(),
        "--cache-level".into(),
        "instance".into(),
        "--events".into(),
        events.display().to_string(),
    ];
    v.extend(common(fx));
    v.extend(extra.iter().cloned());
    v
}

fn read_events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Per instance, how many of its runs were executed (not reused).
fn executed_by_instance(ev: &[Value]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in ev {
        if e["event"] == "run_finished" && e["result"]["kind"] == "executed" {
            *out.entry(e["instance_id"].as_str().unwrap().to_string())
                .or_insert(0) += 1;
        }
    }
    out
}

fn freeze(image: &str) -> Vec<String> {
    let out = docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        image,
        "bash",
        "-c",
        "source /opt/swtbench-venv/bin/activate && uv pip freeze",
    ]);
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

fn pins_of(lock: &str, repo: &str) -> Vec<String> {
    let at = lock.find(&format!("repo = \"{repo}\"")).unwrap();
    let rest = &lock[at..];
    let start = rest.find("pins = [\n").unwrap() + "pins = [\n".len();
    let end = rest[start..].find(']').unwrap();
    rest[start..start + end]
        .lines()
        .map(|l| l.trim().trim_end_matches(',').trim_matches('"').to_string())
        .collect()
}

#[test]
fn engine_env_lock_installs_exactly_and_a_changed_entry_reruns_only_its_instances() {
    require_engine!();
    let fx = fixture();
    build_stand_in();
    let lock_path: PathBuf = fx.root.join("team.lock");

    let mut lock_args: Vec<String> = vec!["envs".into(), "lock".into()];
    lock_args.extend(common(&fx));
    lock_args.extend(["--output".into(), lock_path.display().to_string()]);

    // Ctrl-C while the environment resolves: exit 130, no lock file, no resolve container left.
    let mut child = spawn(&lock_args);
    let label = format!("envs-lock-{}", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while containers_of(&label).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no resolve container appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let status = wait_exit(&mut child, std::time::Duration::from_secs(60));
    assert_eq!(status.code(), Some(130));
    assert!(
        containers_of(&label).is_empty(),
        "leftover resolve container"
    );
    assert!(!lock_path.exists(), "a lock file after the interrupt");

    // Lock: one environment (calc and textkit render the same one), resolved once.
    let started = std::time::Instant::now();
    let locked = run(&lock_args);
    let lock_secs = started.elapsed().as_secs_f64();
    let lock_text = std::fs::read_to_string(&lock_path).unwrap_or_default();
    eprintln!("envs lock: {lock_secs:.1} s, {} bytes", lock_text.len());
    let lock_flag = vec!["--env-lock".to_string(), lock_path.display().to_string()];

    let unlocked_keys = keys(&fx, &[]);
    let locked_keys = keys(&fx, &lock_flag);

    // Without the lock, then with it: the same scores.
    let plain_id = unique_run_id("envlock-plain");
    let plain_dir = fx.root.join("plain");
    let plain = run(&run_args(
        &fx,
        &plain_id,
        &plain_dir,
        &fx.root.join("plain.jsonl"),
        &[],
    ));
    let lock_id = unique_run_id("envlock-locked");
    let lock_dir = fx.root.join("locked");
    let first_events = fx.root.join("locked-1.jsonl");
    let first = run(&run_args(
        &fx,
        &lock_id,
        &lock_dir,
        &first_events,
        &lock_flag,
    ));
    let (want, got) = (
        reports_of(&plain_dir, &plain_id),
        reports_of(&lock_dir, &lock_id),
    );
    let calc_env = locked_keys["swtfix__calc-1"]["env"]
        .as_str()
        .unwrap()
        .to_string();
    let textkit_env = locked_keys["swtfix__textkit-1"]["env"]
        .as_str()
        .unwrap()
        .to_string();
    let installed = freeze(&calc_env);

    // One entry's pin changed: swtfix/calc's instances run again, swtfix/textkit's are reused.
    let calc_pins = pins_of(&lock_text, "swtfix/calc");
    let old_pin = calc_pins
        .iter()
        .find(|p| p.starts_with("iniconfig=="))
        .cloned()
        .unwrap_or_default();
    let new_pin = if old_pin == "iniconfig==2.0.0" {
        "iniconfig==2.1.0"
    } else {
        "iniconfig==2.0.0"
    };
    let at = lock_text.find("repo = \"swtfix/calc\"").unwrap_or(0);
    let edited = format!(
        "{}{}",
        &lock_text[..at],
        lock_text[at..].replacen(&format!("\"{old_pin}\""), &format!("\"{new_pin}\""), 1)
    );
    std::fs::write(&lock_path, &edited).unwrap();
    let edited_keys = keys(&fx, &lock_flag);
    let second_events = fx.root.join("locked-2.jsonl");
    let second = run(&run_args(
        &fx,
        &lock_id,
        &lock_dir,
        &second_events,
        &lock_flag,
    ));
    let edited_env = edited_keys["swtfix__calc-1"]["env"]
        .as_str()
        .unwrap()
        .to_string();
    let installed_edited = freeze(&edited_env);
    let after_edit = reports_of(&lock_dir, &lock_id);
    let leftover: Vec<String> = [&plain_id, &lock_id]
        .iter()
        .flat_map(|id| containers_of(id))
        .collect();
    let resolve_leftover = String::from_utf8_lossy(
        &docker(&["ps", "-a", "-q", "--filter", "label=swtbench.kind=env-lock"]).stdout,
    )
    .trim()
    .to_string();

    // Clean up before asserting: every image this test built, the stand-in too.
    let mut tags: Vec<String> = Vec::new();
    for k in unlocked_keys
        .values()
        .chain(locked_keys.values())
        .chain(edited_keys.values())
    {
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
    let _ = docker(&["rmi", STAND_IN]);

    assert!(locked.status.success(), "envs lock failed");
    assert_eq!(lock_text.matches("[[env]]").count(), 2, "{lock_text}");
    assert_eq!(lock_text.matches("source = \"resolved\"").count(), 2);
    assert!(
        calc_pins.contains(&"pytest==8.3.3".to_string()),
        "{calc_pins:?}"
    );
    assert_eq!(pins_of(&lock_text, "swtfix/textkit"), calc_pins);
    assert!(
        resolve_leftover.is_empty(),
        "resolve containers left: {resolve_leftover}"
    );

    for id in unlocked_keys.keys() {
        assert_ne!(
            unlocked_keys[id]["env"], locked_keys[id]["env"],
            "{id}: the pins are in the env key"
        );
    }
    assert_eq!(calc_env, textkit_env, "same pins, same environment");
    assert_eq!(plain.status.code(), Some(0));
    assert_eq!(first.status.code(), Some(0));
    assert_eq!(want.len(), 3);
    assert_eq!(got, want, "report.json with and without the lock");
    assert_eq!(
        installed, calc_pins,
        "uv pip freeze of the locked env image"
    );

    // The edit: new keys for calc only.
    assert!(!old_pin.is_empty(), "{calc_pins:?}");
    assert_ne!(edited_env, calc_env);
    assert_eq!(
        edited_keys["swtfix__textkit-1"],
        locked_keys["swtfix__textkit-1"]
    );
    assert_ne!(
        edited_keys["swtfix__calc-2"]["instance"],
        locked_keys["swtfix__calc-2"]["instance"]
    );
    assert_eq!(second.status.code(), Some(0));
    let mut want_edited = calc_pins.clone();
    for p in &mut want_edited {
        if *p == old_pin {
            *p = new_pin.to_string();
        }
    }
    want_edited.sort();
    assert_eq!(installed_edited, want_edited);
    let before = executed_by_instance(&read_events(&first_events));
    let again = executed_by_instance(&read_events(&second_events));
    eprintln!("executed runs: first {before:?}, after the edit {again:?}");
    assert!(
        before.get("swtfix__textkit-1").copied().unwrap_or(0) > 0,
        "{before:?}"
    );
    assert_eq!(
        again.get("swtfix__textkit-1"),
        None,
        "textkit's runs are reused: {again:?}"
    );
    // Identical runs of two instances execute once, under either instance: count calc's together.
    let calc = |m: &BTreeMap<String, usize>| {
        m.iter()
            .filter(|(id, _)| id.starts_with("swtfix__calc-"))
            .map(|(_, n)| n)
            .sum::<usize>()
    };
    assert!(calc(&again) > 0, "calc runs again: {again:?}");
    assert_eq!(
        calc(&again),
        calc(&before),
        "every calc run again: {before:?} {again:?}"
    );
    assert_eq!(after_edit, want, "same scores after the edit");
    assert!(leftover.is_empty(), "leftover containers {leftover:?}");
}
