//! The native line counter against the Python trace functions on a CPU-heavy pure-Python
//! workload that needs no network: eight of CPython's own test suites (`test_statistics`,
//! `test_argparse`, `test_difflib`, `test_configparser`, `test_textwrap`, `test_ipaddress`,
//! `test_fractions`, `test_csv`: pure-Python standard library modules) run with
//! `python -m unittest`, untraced and under the tracer with each counter, on every host Python
//! that has a native counter (3.6–3.11).
//!
//! Two patterns: "2 files" traces `statistics.py` and `argparse.py` (what SWT-Bench does: the
//! few files of the gold fix, among much code that is not traced), "stdlib" traces every file of
//! the standard library but `random.py` (every line the suites run is counted: the worst case).
//! The cover files of the two counters are compared after each measurement; the table says
//! whether they are byte-identical, else how many lines of which files differ. The suites were
//! chosen to run the same lines every time: `test_email` loops for a fixed time (a faster counter
//! runs more iterations), `test_pprint` sorts by id-based hashes; `benches/stdlib_suites.py`
//! seeds `random` first, and `random.py` is not traced (a few suites make their own generators).
//! What can still differ is code whose course depends on when the cyclic garbage collector runs
//! (weak references, as in the ABC caches of 3.6's pure-Python `abc`): the Python trace
//! functions allocate objects, the native counter does not (docs/tracer.md).
//!
//! `cargo bench -p swtbench-tracer --bench native` — a few minutes. Environment:
//! `SWTBENCH_BENCH_PYTHONS` (default `3.6,3.7,3.8,3.9,3.10,3.11`), `SWTBENCH_BENCH_REPEAT`
//! (default 3). Prints a Markdown table of median CPU seconds (user + system of the whole process
//! tree) and wall seconds.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::print_stderr)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{run, HostPython, Sandbox};
use swtbench_tracer::NATIVE_ENV;

const SUITES: &[&str] = &[
    "test.test_statistics",
    "test.test_argparse",
    "test.test_difflib",
    "test.test_configparser",
    "test.test_textwrap",
    "test.test_ipaddress",
    "test.test_fractions",
    "test.test_csv",
];

const NARROW: &str = r".*/lib/python3\.[0-9]+/(statistics|argparse)\.py";
const WIDE: &str = r".*/lib/python3\.[0-9]+/(?!random\.py$).*";

const LONG: Duration = Duration::from_secs(3600);

struct Measured {
    wall: f64,
    cpu: f64,
}

fn measure(
    py: &HostPython,
    cwd: &Path,
    repeat: u32,
    command: &[String],
    env: &[(&str, &str)],
) -> Measured {
    let mut cmd = Command::new(&py.exe);
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/measure.py"))
        .arg(repeat.to_string())
        .arg(cwd)
        .arg("--")
        .arg(&py.exe)
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
        "{}: a run failed: {command:?} {statuses:?}",
        py.name
    );
    Measured {
        wall: value["wall"].as_f64().unwrap(),
        cpu: value["cpu"].as_f64().unwrap(),
    }
}

/// "identical", or which lines of which files have other counts.
fn compare_covers(python: &str, native: &str) -> String {
    if python == native {
        return "identical".into();
    }
    let (a, b) = (parse(python), parse(native));
    let mut differing = Vec::new();
    for (file, lines) in &a {
        let other = b.get(file);
        let n = lines
            .iter()
            .filter(|(line, hits)| other.and_then(|o| o.get(*line)) != Some(*hits))
            .count();
        if n > 0 {
            let name = file.rsplit('/').next().unwrap_or(file);
            differing.push(format!("{n} in {name}"));
        }
    }
    format!("lines with other counts: {}", differing.join(", "))
}

fn parse(
    text: &str,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>> {
    let mut out: std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>> =
        Default::default();
    for line in text.lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        for (file, lines) in value.as_object().unwrap() {
            let entry = out.entry(file.clone()).or_default();
            for (number, hits) in lines.as_object().unwrap() {
                *entry.entry(number.clone()).or_default() += hits.as_u64().unwrap();
            }
        }
    }
    out
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` / nextest listing: nothing to run here.
    }
    let wanted = std::env::var("SWTBENCH_BENCH_PYTHONS")
        .unwrap_or_else(|_| "3.6,3.7,3.8,3.9,3.10,3.11".into());
    let repeat: u32 = std::env::var("SWTBENCH_BENCH_REPEAT")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
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
        let sandbox = Sandbox::new();
        if !sandbox.install_native(&py.exe) {
            eprintln!("native: no native counter for Python {}, skipped", py.name);
            continue;
        }
        let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/stdlib_suites.py");
        let mut unittest: Vec<String> = vec![driver.display().to_string()];
        unittest.extend(SUITES.iter().map(|s| s.to_string()));
        let cover = sandbox.cover();
        let traced = |pattern: &str| -> Vec<String> {
            let mut c = vec![
                sandbox.tracer().display().to_string(),
                "--count".into(),
                "-C".into(),
                cover.display().to_string(),
                "--include-pattern".into(),
                pattern.into(),
            ];
            c.extend(unittest.iter().cloned());
            c
        };
        let cwd = sandbox.path();
        eprintln!("native: measuring Python {}", py.name);
        let base = measure(&py, cwd, repeat, &unittest, &[]);
        for (label, pattern) in [("2 files", NARROW), ("stdlib", WIDE)] {
            let mut covers = Vec::new();
            let mut results = Vec::new();
            for choice in ["0", "require"] {
                let _ = std::fs::remove_file(&cover);
                results.push(measure(
                    &py,
                    cwd,
                    repeat,
                    &traced(pattern),
                    &[(NATIVE_ENV, choice)],
                ));
                covers.push(std::fs::read_to_string(&cover).unwrap_or_default());
            }
            assert!(!covers[0].is_empty(), "{}: nothing traced", py.name);
            let (python, native) = (&results[0], &results[1]);
            rows.push(format!(
                "| {} | {label} | {:.2} | {:.2} ({:.2}x) | {:.2} ({:.2}x) | {:.0} % | {:.1} / {:.1} / {:.1} | {} files, {} |",
                py.name,
                base.cpu,
                python.cpu,
                python.cpu / base.cpu,
                native.cpu,
                native.cpu / base.cpu,
                100.0 * (python.cpu - native.cpu) / (python.cpu - base.cpu),
                base.wall,
                python.wall,
                native.wall,
                covers[0].lines().count() / repeat as usize,
                compare_covers(&covers[0], &covers[1]),
            ));
        }
    }
    println!(
        "| Python | traced | untraced CPU s | Python counter CPU s | native counter CPU s | \
         overhead removed | wall s (untraced / Python / native) | cover files |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}
