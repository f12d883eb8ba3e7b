//! Tracer overhead on a real test suite: 351 networkx tests (pure Python) run with
//! pytest untraced, under the tracer, under the tracer forced to `sys.settrace`, and under a plain
//! `sys.settrace` line counter (the mechanism of the original harness's tracer), on the host's
//! Python 3.11, 3.12 and 3.13.
//!
//! `cargo bench -p swtbench-tracer --bench overhead` — needs PyPI (pytest and networkx are
//! installed into throwaway virtual environments) and takes several minutes. Environment:
//! `SWTBENCH_BENCH_PYTHONS` (default `3.11,3.12,3.13`), `SWTBENCH_BENCH_REPEAT` (default 3).
//! Prints a Markdown table of median CPU seconds (user + system) and wall seconds.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::print_stderr)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{run, HostPython, Sandbox};

/// 351 tests (networkx 3.x).
const SUITES: &[&str] = &[
    "networkx.algorithms.shortest_paths",
    "networkx.algorithms.traversal",
    "networkx.classes.tests.test_graph",
    "networkx.classes.tests.test_digraph",
];

/// Two files, as when a fix touches a core class and one algorithm (what SWT-Bench traces).
const NARROW: &str =
    r".*/networkx/classes/graph\.py|.*/networkx/algorithms/shortest_paths/weighted\.py";
/// Every networkx file: the worst case, every line of the library counted.
const WIDE: &str = r".*/site-packages/networkx/.*";

const LONG: Duration = Duration::from_secs(1800);

fn venv(py: &HostPython, dir: &Path) -> PathBuf {
    let venv = dir.join(format!("venv-{}", py.name));
    let mut create = Command::new(&py.exe);
    create.args(["-m", "venv"]).arg(&venv);
    let created = run(create, LONG);
    assert_eq!(created.code(), Some(0), "{}", created.describe());
    let python = venv.join("bin").join("python");
    let mut install = Command::new(&python);
    install.args(["-m", "pip", "install", "-q", "pytest", "networkx"]);
    if std::env::var_os("PIP_CERT").is_none() {
        if let Some(bundle) = std::env::var_os("SSL_CERT_FILE") {
            install.env("PIP_CERT", bundle);
        }
    }
    let installed = run(install, LONG);
    assert_eq!(installed.code(), Some(0), "{}", installed.describe());
    python
}

struct Measured {
    wall: f64,
    cpu: f64,
}

fn measure(
    python: &Path,
    cwd: &Path,
    repeat: u32,
    command: &[String],
    env: &[(&str, &str)],
) -> Measured {
    let mut cmd = Command::new(python);
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/measure.py"))
        .arg(repeat.to_string())
        .arg(cwd)
        .arg("--")
        .arg(python)
        .args(command);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let outcome = run(cmd, LONG);
    assert_eq!(outcome.code(), Some(0), "{}", outcome.describe());
    let value: serde_json::Value = serde_json::from_str(outcome.stdout.trim()).unwrap();
    let statuses = value["statuses"].as_array().unwrap();
    assert!(
        statuses.iter().all(|s| s.as_i64() == Some(0)),
        "a run failed: {command:?} {statuses:?}"
    );
    Measured {
        wall: value["wall"].as_f64().unwrap(),
        cpu: value["cpu"].as_f64().unwrap(),
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` / nextest listing: nothing to run here.
    }
    let wanted =
        std::env::var("SWTBENCH_BENCH_PYTHONS").unwrap_or_else(|_| "3.11,3.12,3.13".into());
    let repeat: u32 = std::env::var("SWTBENCH_BENCH_REPEAT")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let sandbox = Sandbox::new();
    let reference = common::fixtures().join("ref_counter.py");
    let mut rows = Vec::new();
    for version in wanted.split(',') {
        let Some(minor) = version
            .trim()
            .strip_prefix("3.")
            .and_then(|m| m.parse().ok())
        else {
            continue;
        };
        let Some(py) = common::python(minor) else {
            continue;
        };
        eprintln!("overhead: preparing Python {}", py.name);
        let python = venv(&py, sandbox.path());
        let mut pytest: Vec<String> = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        pytest.extend(SUITES.iter().map(|s| s.to_string()));
        let cover = sandbox.path().join("bench.cover");
        let tracer = |pattern: &str| -> Vec<String> {
            let mut c = vec![
                sandbox.tracer().display().to_string(),
                "--count".into(),
                "-C".into(),
                cover.display().to_string(),
                "--include-pattern".into(),
                pattern.into(),
            ];
            c.extend(pytest.iter().cloned());
            c
        };
        let counter = |pattern: &str| -> Vec<String> {
            let mut c = vec![
                reference.display().to_string(),
                "-C".into(),
                cover.display().to_string(),
                "--include-pattern".into(),
                pattern.into(),
            ];
            c.extend(pytest.iter().cloned());
            c
        };
        let cwd = sandbox.path();
        eprintln!("overhead: measuring Python {}", py.name);
        let base = measure(&python, cwd, repeat, &pytest, &[]);
        let mut variants = vec![("untraced".to_string(), base)];
        for (label, pattern) in [("2 files", NARROW), ("all networkx", WIDE)] {
            variants.push((
                format!("tracer, {label}"),
                measure(&python, cwd, repeat, &tracer(pattern), &[]),
            ));
            if minor >= 12 {
                variants.push((
                    format!("tracer forced to settrace, {label}"),
                    measure(
                        &python,
                        cwd,
                        repeat,
                        &tracer(pattern),
                        &[(swtbench_tracer::BACKEND_ENV, "settrace")],
                    ),
                ));
            }
            variants.push((
                format!("plain settrace counter, {label}"),
                measure(&python, cwd, repeat, &counter(pattern), &[]),
            ));
        }
        let base_cpu = variants[0].1.cpu;
        for (label, m) in variants {
            rows.push(format!(
                "| {} | {} | {:.2} | {:.2}x | {:.2} |",
                py.name,
                label,
                m.cpu,
                m.cpu / base_cpu,
                m.wall
            ));
        }
    }
    println!("| Python | run | CPU s (median of {repeat}) | vs untraced | wall s |");
    println!("|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}
