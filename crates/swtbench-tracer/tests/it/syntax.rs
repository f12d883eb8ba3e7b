//! The tracer must run unchanged on every Python a benchmark environment uses, down to 3.5 (the
//! Django 1.x and old matplotlib environments), and compile on every host Python.

use std::process::Command;
use std::time::Duration;

use crate::common::{self, run, HostPython, Sandbox};
use swtbench_tracer::{PythonVersion, TRACER_PY};

const DEADLINE: Duration = Duration::from_secs(60);

fn checker() -> Option<HostPython> {
    let newest = common::host_pythons()
        .into_iter()
        .rev()
        .find(|p| p.version >= PythonVersion { major: 3, minor: 8 });
    if newest.is_none() {
        println!("SKIPPED: no Python 3.8+ under $(pyenv root)/versions to run the syntax check");
    }
    newest
}

fn check(py: &HostPython, sandbox: &Sandbox, name: &str, text: &str) -> common::Outcome {
    let path = sandbox.path().join(name);
    std::fs::write(&path, text).unwrap();
    let mut cmd = Command::new(&py.exe);
    cmd.arg(common::fixtures().join("check_py35.py")).arg(&path);
    run(cmd, DEADLINE)
}

#[test]
fn tracer_uses_python_35_syntax_only() {
    let Some(py) = checker() else { return };
    let sandbox = Sandbox::new();
    let outcome = check(&py, &sandbox, "trace.py", TRACER_PY);
    assert_eq!(outcome.code(), Some(0), "{}", outcome.describe());
}

#[test]
fn the_syntax_check_catches_newer_syntax() {
    let Some(py) = checker() else { return };
    let sandbox = Sandbox::new();
    for (name, text, complaint) in [
        ("fstring.py", "x = 1\ny = f\"{x}\"\n", "f-string"),
        (
            "comma.py",
            "def f(a, *args,\n      **kwargs,\n):\n    pass\n",
            "trailing comma",
        ),
        (
            "annotation.py",
            "x: int = 1\n",
            "only supported in Python 3.6",
        ),
        (
            "underscore.py",
            "x = 1_000\n",
            "only supported in Python 3.6",
        ),
    ] {
        let outcome = check(&py, &sandbox, name, text);
        assert_eq!(outcome.code(), Some(1), "{name}: {}", outcome.describe());
        assert!(
            outcome.stdout.contains(complaint),
            "{name}: {}",
            outcome.describe()
        );
    }
    let fine = check(
        &py,
        &sandbox,
        "fine.py",
        "def f(a, *args, **kwargs):\n    return f(a, *args, **kwargs,)\n",
    );
    assert_eq!(fine.code(), Some(0), "{}", fine.describe());
}

#[test]
fn tracer_compiles_on_every_host_python() {
    let pythons = common::host_pythons();
    if pythons.is_empty() {
        println!("SKIPPED: no Python under $(pyenv root)/versions");
        return;
    }
    let sandbox = Sandbox::new();
    for py in pythons {
        let mut cmd = Command::new(&py.exe);
        cmd.args(["-W", "error", "-c"])
            .arg("import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')")
            .arg(sandbox.tracer());
        let outcome = run(cmd, DEADLINE);
        assert_eq!(
            outcome.code(),
            Some(0),
            "{}: {}",
            py.name,
            outcome.describe()
        );
    }
}
