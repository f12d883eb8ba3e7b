//! `-m pytest` mode, as the eval script runs it: a tiny suite with a failing test, threads and a
//! Python child, in a virtual environment with pytest installed from PyPI.
//!
//! The virtual environment of each Python is kept under Cargo's target directory
//! (`CARGO_TARGET_TMPDIR`) and reused by later runs while it still imports pytest, so only the
//! first run of a fresh checkout pays for `pip install`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::{
    assert_same_hits, everything_under, fixed, has_native, line_of, program_stdout, read_cover,
    read_reference, reference_command, run, tracer_command, HostPython, Sandbox,
};
use crate::native::{compare_counters, Mode};

const DEADLINE: Duration = Duration::from_secs(300);

/// A virtual environment of `py` with pytest installed, reused across runs; returns its python.
/// Only this file's test for `py` uses it, so no two processes build one at the same time.
fn venv_with_pytest(py: &HostPython) -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("swtbench-tracer-venvs")
        .join(&py.name);
    let python = venv.join("bin").join("python");
    // Written once pytest is installed: a build that was interrupted is started again.
    let complete = venv.join("swtbench-complete");
    if complete.exists() {
        let mut check = Command::new(&python);
        check.args(["-c", "import pytest"]);
        if run(check, DEADLINE).code() == Some(0) {
            return python;
        }
    }
    let _ = std::fs::remove_dir_all(&venv);
    std::fs::create_dir_all(&venv).unwrap();
    let mut create = Command::new(&py.exe);
    create.args(["-m", "venv"]).arg(&venv);
    let created = run(create, DEADLINE);
    assert_eq!(
        created.code(),
        Some(0),
        "{}: python -m venv failed\n{}",
        py.name,
        created.describe()
    );
    let mut install = Command::new(&python);
    install
        .args(["-m", "pip", "install", "-q", "pytest"])
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1");
    // PyPI is reached through a TLS-intercepting proxy here: hand pip the system CA bundle.
    if std::env::var_os("PIP_CERT").is_none() {
        let bundle = std::env::var_os("SSL_CERT_FILE")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/etc/ssl/certs/ca-certificates.crt"));
        if bundle.exists() {
            install.env("PIP_CERT", bundle);
        }
    }
    let installed = run(install, DEADLINE);
    assert_eq!(
        installed.code(),
        Some(0),
        "{}: pip install pytest failed (PyPI must be reachable)\n{}",
        py.name,
        installed.describe()
    );
    std::fs::write(&complete, "").unwrap();
    python
}

fn pytest_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["-m", "pytest", "-rA", "-p", "no:cacheprovider"];
    args.extend_from_slice(extra);
    args
}

fn key(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

fn pytest_mode(py: &HostPython) {
    let python = venv_with_pytest(py);
    let sandbox = Sandbox::new();
    let suite = sandbox.copy_fixture("suite");
    let calc = suite.join("calc");
    let ops = calc.join("ops.py");
    let main = calc.join("__main__.py");
    let pattern = everything_under(&calc);

    // Without the subprocess test, the tracer and the settrace counter see the same program.
    let cover = sandbox.path().join("inprocess.cover");
    let args = pytest_args(&["-k", "not subprocess"]);
    let traced = run(
        tracer_command(&python, &sandbox, &cover, &pattern, &args, &suite),
        DEADLINE,
    );
    // pytest exits 1 (one test fails on purpose); the tracer exits 0 like the original.
    assert_eq!(traced.code(), Some(0), "{}", traced.describe());
    let output = program_stdout(&traced, &cover, &pattern);
    assert!(
        output.contains("1 failed, 10 passed, 1 deselected"),
        "{}",
        traced.describe()
    );
    assert!(output.contains("PASSED tests/test_ops.py::test_threads"));
    let reference_out = sandbox.path().join("inprocess.json");
    let reference = run(
        reference_command(&python, &reference_out, &pattern, &args, &suite),
        DEADLINE,
    );
    assert_eq!(reference.code(), Some(1), "{}", reference.describe());
    let reference = read_reference(&reference_out);
    let ours = read_cover(&cover);
    assert_same_hits(&ours, &reference, &py.name);
    let ops_hits = &ours[&key(&ops)];
    assert_eq!(ops_hits[&line_of(&ops, "return \"never called\"")], 0);
    assert_eq!(ops_hits[&line_of(&ops, "subtotal = sum(chunk)")], 3);

    // With it, by default, the child `python -m calc 40 + 2` runs as under the original tracer:
    // the tracer's directory is its sys.path[0], so calc is not found and the test fails (its
    // parent-side lines never touch calc, so the hits are those of the run without it).
    let cover = sandbox.path().join("original.cover");
    let args = pytest_args(&[]);
    let traced = run(
        tracer_command(&python, &sandbox, &cover, &pattern, &args, &suite),
        DEADLINE,
    );
    assert_eq!(traced.code(), Some(0), "{}", traced.describe());
    let output = program_stdout(&traced, &cover, &pattern);
    assert!(
        output.contains("2 failed, 10 passed"),
        "{}",
        traced.describe()
    );
    assert!(
        output.contains("FAILED tests/test_ops.py::test_subprocess"),
        "{}",
        traced.describe()
    );
    assert_same_hits(&read_cover(&cover), &reference, &py.name);

    // With the fixed behaviour the child finds calc, prints only its result, and adds its own
    // lines to the same file.
    let cover = sandbox.path().join("fixed.cover");
    let traced = run(
        fixed(tracer_command(
            &python, &sandbox, &cover, &pattern, &args, &suite,
        )),
        DEADLINE,
    );
    assert_eq!(traced.code(), Some(0), "{}", traced.describe());
    assert!(
        traced.stdout.contains("1 failed, 11 passed"),
        "{}",
        traced.describe()
    );
    let ours = read_cover(&cover);
    let split = line_of(&ops, "left, op, right = text.split()");
    assert_eq!(ours[&key(&ops)][&split], reference[&key(&ops)][&split] + 1);
    assert_eq!(ours[&key(&main)][&line_of(&main, "print(parse_expr")], 1);
    assert!(!reference.contains_key(&key(&main)));

    // The runs above counted with the native counter where there is one; the Python trace
    // functions give the same output and a byte-identical cover file, children included.
    if has_native(py.version) && sandbox.install_native(&python) {
        for mode in [Mode::Original, Mode::Fixed] {
            compare_counters(
                &python,
                &sandbox,
                &pattern,
                &args,
                &suite,
                mode,
                &[],
                &mask_volatile,
            );
        }
    }
}
per_python!(pytest_mode);

/// pytest's output with what changes from run to run masked: the summary line's duration
/// (`in 0.12s`) and object addresses in tracebacks (`at 0x7f…`).
fn mask_volatile(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = match line.rfind(" in ") {
            Some(at) if line.starts_with('=') && line[at + 4..].contains('s') => {
                format!("{} in <duration>", &line[..at])
            }
            _ => line.to_string(),
        };
        let mut rest = line.as_str();
        while let Some(at) = rest.find("0x") {
            out.push_str(&rest[..at]);
            let digits = rest[at + 2..]
                .find(|c: char| !c.is_ascii_hexdigit())
                .unwrap_or(rest.len() - at - 2);
            out.push_str("0x<address>");
            rest = &rest[at + 2 + digits..];
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}
