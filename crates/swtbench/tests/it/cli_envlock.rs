//! `--env-lock FILE` as the built binary, without the engine: on the fixture benchmark moved to
//! uv, a lock with an entry for swtfix/calc changes calc's setup script and image keys and leaves
//! swtfix/textkit's as they were; `envs show` names the lock; unreadable, malformed and
//! mismatching lock files are refused with the file and line, by `spec`, `envs show` and `run`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::cli::{fixture_selection, make_fixture, swtbench};
use serde_json::Value;

fn common(fx: &Path) -> Vec<String> {
    let mut v = fixture_selection(fx, "swtfix__calc-1,swtfix__textkit-1");
    v.extend(["--env-provider", "uv", "--python-image", "py:{version}"].map(String::from));
    v
}

/// Instance id → (keys.json, setup_env.sh) from `swtbench spec`, or the failed output.
fn spec(
    dir: &Path,
    fx: &Path,
    extra: &[&str],
) -> Result<BTreeMap<String, (Value, String)>, std::process::Output> {
    let out_dir = tempfile::tempdir_in(dir).unwrap();
    let mut args = vec!["spec".to_string()];
    args.extend(common(fx));
    args.extend(["--out".into(), out_dir.path().display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = swtbench(&args, dir);
    if !out.status.success() {
        return Err(out);
    }
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(out_dir.path()).unwrap() {
        let d = e.unwrap().path();
        let keys =
            serde_json::from_str(&std::fs::read_to_string(d.join("keys.json")).unwrap()).unwrap();
        let env = std::fs::read_to_string(d.join("setup_env.sh")).unwrap();
        m.insert(
            d.file_name().unwrap().to_string_lossy().into_owned(),
            (keys, env),
        );
    }
    Ok(m)
}

fn lock_text(unlocked_env: &str, version: &str) -> String {
    format!(
        r#"format = 1

[[env]]
repo = "swtfix/calc"
version = "{version}"
provider = "uv"
python = "3.11"
python_image = "py:3.11"
unlocked_env = "{unlocked_env}"
source = "resolved"
origin = "written by hand"
instances = ["swtfix__calc-1"]
pins = [
    "iniconfig==2.0.0",
    "pytest==8.3.3",
]
"#
    )
}

#[test]
fn env_lock_changes_only_the_locked_environment_and_refuses_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let fx = make_fixture(dir.path());
    let unlocked = spec(dir.path(), &fx, &[]).unwrap();
    let calc_env = unlocked["swtfix__calc-1"].0["env"].as_str().unwrap();
    let lock = dir.path().join("team.lock");
    std::fs::write(&lock, lock_text(calc_env, "0.1")).unwrap();
    let lock_arg = lock.display().to_string();

    let locked = spec(dir.path(), &fx, &["--env-lock", &lock_arg]).unwrap();
    let (calc_keys, calc_sh) = &locked["swtfix__calc-1"];
    assert_ne!(calc_keys["env"], unlocked["swtfix__calc-1"].0["env"]);
    assert_ne!(
        calc_keys["instance"],
        unlocked["swtfix__calc-1"].0["instance"]
    );
    assert!(
        calc_sh.contains("iniconfig==2.0.0\npytest==8.3.3\nEOF_59812759871\nuv pip install --no-deps -r $HOME/requirements.txt\n"),
        "{calc_sh}"
    );
    assert!(!calc_sh.contains("uv pip install pytest"), "{calc_sh}");
    assert_eq!(locked["swtfix__textkit-1"], unlocked["swtfix__textkit-1"]);

    // envs show names the lock entry.
    let mut args = vec!["envs".to_string(), "show".into(), "swtfix__calc-1".into()];
    args.extend(
        common(&fx)
            .into_iter()
            .filter(|a| a != "--instance-ids" && !a.contains(',')),
    );
    args.extend(["--env-lock".into(), lock_arg.clone()]);
    let out = swtbench(&args, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "pins:      2 (environment lock {lock_arg}:3 (resolved: written by hand))"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("\n  iniconfig==2.0.0\n"), "{stdout}");
    assert!(
        stdout.contains("locked for Python 3.11; installed with uv pip install --no-deps"),
        "{stdout}"
    );

    // Bad files: exit code 2, the file and the line.
    let bad = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let cases = [
        (
            bad("syntax.lock", "format = 1\n[[env]\nrepo = 1\n"),
            "line 2".to_string(),
        ),
        (
            bad("version.lock", &lock_text(calc_env, "9.9")),
            "version.lock:3: entry swtfix/calc 9.9 matches no environment".to_string(),
        ),
        (
            dir.path().join("missing.lock").display().to_string(),
            "cannot read environment lock".to_string(),
        ),
    ];
    for (path, needle) in &cases {
        let err = spec(dir.path(), &fx, &["--env-lock", path]).unwrap_err();
        let stderr = String::from_utf8_lossy(&err.stderr);
        assert_eq!(err.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(needle.as_str()) && stderr.contains(path.as_str()),
            "{needle}: {stderr}"
        );
    }
    // Made for this instance from other inputs (another Python image): the instance is refused.
    let mut args = vec!["spec".to_string()];
    args.extend(common(&fx).into_iter().map(|a| {
        if a == "py:{version}" {
            "other:{version}".into()
        } else {
            a
        }
    }));
    args.extend([
        "--out".into(),
        dir.path().join("other").display().to_string(),
        "--env-lock".into(),
        lock_arg.clone(),
    ]);
    let out = swtbench(&args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("swtfix__calc-1: the environment lock")
            && stderr.contains("made from other inputs"),
        "{stderr}"
    );

    // run reads the lock before it does anything else.
    let mut args = vec![
        "run".to_string(),
        "--predictions".into(),
        "gold".into(),
        "--dry-run".into(),
        "--run-id".into(),
        "lockcheck".into(),
        "--output-dir".into(),
        dir.path().join("out").display().to_string(),
    ];
    args.extend(common(&fx));
    args.extend(["--env-lock".into(), cases[1].0.clone()]);
    let out = swtbench(&args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("matches no environment"), "{stderr}");

    // envs lock writes a lock; it does not read one.
    let mut args = vec![
        "envs".to_string(),
        "lock".into(),
        "--output".into(),
        "x.lock".into(),
    ];
    args.extend(common(&fx));
    args.extend(["--env-lock".into(), lock_arg]);
    let out = swtbench(&args, dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--env-lock reads one"));
}
