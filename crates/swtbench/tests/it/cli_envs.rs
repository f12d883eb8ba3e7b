//! `swtbench envs show` and `--env-provider` / `--python-image`, run as the built binary, offline
//! (the embedded Verified dataset and frozen pins).

use std::path::Path;
use std::process::Output;

fn swtbench(args: &[&str], home: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .env("HOME", home)
        .env("HF_HOME", home.join("hf"))
        .env("SWTBENCH_CACHE_DIR", home.join("cache"))
        .env("SWTBENCH_OFFLINE", "1")
        .env_remove("SWTBENCH_REPO_MIRROR")
        .output()
        .unwrap()
}

#[test]
fn envs_show_prints_the_frozen_pins_and_their_source() {
    let home = tempfile::tempdir().unwrap();
    let out = swtbench(&["envs", "show", "astropy__astropy-12907"], home.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("provider:  uv\n"), "{stdout}");
    assert!(
        stdout.contains("(base image python:3.9-slim-bookworm)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("frozen environment of astropy__astropy-12907"),
        "{stdout}"
    );
    assert!(
        stdout.contains("frozen Python 3.9.20; installed with uv pip install --no-deps"),
        "{stdout}"
    );
    assert!(stdout.contains("\n  pytest==7.4.0\n"), "{stdout}");
    assert!(!stdout.contains("\n  astropy=="), "{stdout}");
    assert!(stdout.contains("\n  conda-only: libgcc-ng\n"), "{stdout}");

    // Another Python image: its name in the base image and another env key.
    let other = swtbench(
        &[
            "envs",
            "show",
            "astropy__astropy-12907",
            "--python-image",
            "py:{version}",
        ],
        home.path(),
    );
    let other = String::from_utf8_lossy(&other.stdout);
    assert!(other.contains("(base image py:3.9)"), "{other}");
    let key = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("env image:"))
            .unwrap()
            .to_string()
    };
    assert_ne!(key(&stdout), key(&other));

    // Python 3.6 (django 3.0): pip in a venv of the Python image, same pins.
    let out = swtbench(&["envs", "show", "django__django-11099"], home.path());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("installed with pip install --no-deps"), "{s}");
    assert!(s.contains("\n  asgiref==3.4.1\n"), "{s}");
}

#[test]
fn envs_show_and_provider_flags_refuse_what_they_cannot_do() {
    let home = tempfile::tempdir().unwrap();
    let out = swtbench(&["envs", "show", "acme__nothing-1"], home.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("acme__nothing-1"), "{err}");
    let out = swtbench(
        &[
            "envs",
            "show",
            "astropy__astropy-12907",
            "--env-provider",
            "conda",
            "--python-image",
            "x:{version}",
        ],
        home.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--python-image applies to --env-provider uv only"),
        "{err}"
    );
    let out = swtbench(
        &[
            "envs",
            "show",
            "astropy__astropy-12907",
            "--env-provider",
            "nix",
        ],
        home.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("conda, venv or uv"));
}
