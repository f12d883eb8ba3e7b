//! The evidence hook (`assets/evidence/hook.py`) with real interpreters and real test runners:
//! the CPython builds of the host's pyenv, each in a throwaway virtual environment with one
//! pytest release from PyPI (3.x to 8.x), and a unittest runner named `runtests.py` as Django's
//! is. Our own small test suites run on the host here (no model code).
//!
//! For each: the log with the hook is the log without it (timings aside), the secret file is
//! gone, the evidence verifies, and its status map equals the log parser's map of the log.
//! Skipped when pyenv's Python builds are missing; the pytest cases also need PyPI.

use std::path::{Path, PathBuf};
use std::process::Command;

use swtbench_core::TestStatus;
use swtbench_grade::evidence::read_evidence;
use swtbench_grade::Parser;
use swtbench_runner::evidence::EvidencePlan;

fn pyenv_python(version_prefix: &str) -> Option<PathBuf> {
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| {
            let out = Command::new("pyenv").arg("root").output().ok()?;
            Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        })
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")))?;
    let versions = std::fs::read_dir(root.join("versions")).ok()?;
    let mut found: Vec<PathBuf> = versions
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name == version_prefix || name.starts_with(&format!("{version_prefix}."))
        })
        .map(|e| e.path().join("bin/python"))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    found.pop()
}

fn sh(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A virtual environment of `python` under `dir`, with `packages` from PyPI.
fn venv(python: &Path, dir: &Path, packages: &[&str]) -> PathBuf {
    let env = dir.join("venv");
    sh(Command::new(python).args(["-m", "venv"]).arg(&env));
    if !packages.is_empty() {
        let mut pip = Command::new(env.join("bin/python"));
        pip.args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(packages);
        if let Some(ca) = std::env::var_os("SSL_CERT_FILE") {
            pip.env("PIP_CERT", ca);
        }
        sh(&mut pip);
    }
    env
}

fn site_packages(env: &Path) -> PathBuf {
    let lib = env.join("lib");
    let py = std::fs::read_dir(&lib)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("python"))
        .unwrap();
    py.path().join("site-packages")
}

/// Puts the hook's files where the harness puts them in a container, and its `.pth` line into
/// the environment. Returns the plan (the caller removes `plan.dir`).
fn install(env: &Path) -> EvidencePlan {
    let plan = EvidencePlan::new().unwrap();
    for f in plan.files() {
        let p = Path::new(&f.path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, &f.contents).unwrap();
    }
    std::fs::write(site_packages(env).join(&plan.pth_name), plan.pth_line()).unwrap();
    plan
}

fn uninstall(env: &Path, plan: &EvidencePlan) {
    let _ = std::fs::remove_file(site_packages(env).join(&plan.pth_name));
    let _ = std::fs::remove_dir_all(&plan.dir);
}

/// Timings and addresses differ between two executions of the same suite.
fn normalise(log: &str) -> String {
    // "in 0.05s", "in 0.050 seconds", "Ran 3 tests in 0.001s", addresses: the digits go.
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|c| c.is_ascii_digit() || *c == '.')
            {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    out
}

const PYTEST_SUITE: &str = r#"import socket

import pytest


@pytest.fixture
def broken():
    raise RuntimeError("setup fails")


def test_passes():
    print("PASSED tests/test_suite.py::test_printed_only")
    assert 1 + 1 == 2


def test_fails():
    assert 1 + 1 == 3


def test_errors_in_setup(broken):
    pass


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known")
def test_xfails():
    assert False


@pytest.mark.parametrize("value", ["a b", "c - d", "plain"])
def test_params(value):
    assert value != "c - d"


class TestGroup:
    def test_method(self):
        pass


def test_uses_the_network():
    # A UDP "connection" sends nothing; the hook records the address all the same. Loopback is
    # not recorded.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("192.0.2.1", 9))
    s.close()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("127.0.0.1", 9))
    s.close()
"#;

fn pytest_case(python_version: &str, pytest: &str) {
    let Some(python) = pyenv_python(python_version) else {
        eprintln!("SKIPPED: no pyenv Python {python_version}");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let env = venv(&python, tmp.path(), &[pytest]);
    let project = tmp.path().join("project");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(project.join("tests/test_suite.py"), PYTEST_SUITE).unwrap();
    let run = || {
        let out = Command::new(env.join("bin/python"))
            .args([
                "-m",
                "pytest",
                "-rA",
                "-p",
                "no:cacheprovider",
                "tests/test_suite.py",
            ])
            .current_dir(&project)
            .output()
            .unwrap();
        let mut log = String::from_utf8_lossy(&out.stdout).into_owned();
        log.push_str(&String::from_utf8_lossy(&out.stderr));
        log
    };
    let plain = run();
    let plan = install(&env);
    let hooked = run();
    let key_left = Path::new(&plan.key_path).exists();
    let raw = std::fs::read(&plan.evidence_path);
    uninstall(&env, &plan);
    eprintln!("{pytest} on Python {python_version}:\n{hooked}");
    assert_eq!(
        normalise(&plain),
        normalise(&hooked),
        "the hook changed the log"
    );
    assert!(!key_left, "the runner did not take the secret");
    let raw = raw.expect("no evidence file");
    let ev = read_evidence(&raw, &plan.secret);
    assert_eq!(ev.problems, vec![], "{}", String::from_utf8_lossy(&raw));
    assert!(ev.complete, "no end record");
    let from_log = Parser::Pytest.parse(&hooked);
    let from_evidence = ev.status_map(Parser::Pytest).unwrap();
    let decisive = |m: &swtbench_core::StatusMap| -> Vec<(String, TestStatus)> {
        m.iter()
            .filter(|(_, s)| {
                matches!(
                    s,
                    TestStatus::Passed | TestStatus::Failed | TestStatus::Error
                )
            })
            .filter(|(t, _)| t.as_str() != "tests/test_suite.py::test_printed_only")
            .map(|(t, s)| (t.clone(), s.clone()))
            .collect()
    };
    // pytest before 5 prints no PASSED lines in its short summary; where the log has statuses,
    // the evidence has the same.
    let logged = decisive(&from_log);
    let reported = decisive(&from_evidence);
    for entry in &logged {
        assert!(reported.contains(entry), "{entry:?} not in {reported:?}");
    }
    if logged.iter().any(|(_, s)| *s == TestStatus::Passed) {
        assert_eq!(reported, logged);
    }
    assert_eq!(
        from_evidence.get("tests/test_suite.py::test_passes"),
        Some(&TestStatus::Passed)
    );
    assert_eq!(
        from_evidence.get("tests/test_suite.py::test_fails"),
        Some(&TestStatus::Failed)
    );
    assert!(
        !from_evidence.contains_key("tests/test_suite.py::test_printed_only"),
        "a printed line is no report"
    );
    assert_eq!(ev.network, ["192.0.2.1:9"], "the runner's network use");
}

#[test]
fn pytest_8_on_python_3_13() {
    pytest_case("3.13", "pytest==8.3.3");
}

#[test]
fn pytest_7_on_python_3_11() {
    pytest_case("3.11", "pytest==7.4.4");
}

#[test]
fn pytest_5_on_python_3_8() {
    pytest_case("3.8", "pytest==5.4.3");
}

#[test]
fn pytest_4_on_python_3_6() {
    pytest_case("3.6", "pytest==4.6.11");
}

#[test]
fn pytest_3_on_python_3_6() {
    pytest_case("3.6", "pytest==3.10.1");
}

const RUNTESTS: &str = r#"import sys
import unittest


class Suite(unittest.TestCase):
    def test_ok(self):
        pass

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise RuntimeError("boom")

    @unittest.skip("later")
    def test_skip(self):
        pass

    def test_after(self):
        pass


if __name__ == "__main__":
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(Suite)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(not result.wasSuccessful())
"#;

fn unittest_case(python_version: &str) {
    let Some(python) = pyenv_python(python_version) else {
        eprintln!("SKIPPED: no pyenv Python {python_version}");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let env = venv(&python, tmp.path(), &[]);
    let project = tmp.path().join("project");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::write(project.join("tests/runtests.py"), RUNTESTS).unwrap();
    let run = || {
        let out = Command::new(env.join("bin/python"))
            .arg("tests/runtests.py")
            .current_dir(&project)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let plain = run();
    let plan = install(&env);
    let hooked = run();
    let key_left = Path::new(&plan.key_path).exists();
    let raw = std::fs::read(&plan.evidence_path);
    uninstall(&env, &plan);
    eprintln!("unittest on Python {python_version}:\n{hooked}");
    assert_eq!(
        normalise(&plain),
        normalise(&hooked),
        "the hook changed the log"
    );
    assert!(!key_left, "the runner did not take the secret");
    let raw = raw.expect("no evidence file");
    let ev = read_evidence(&raw, &plan.secret);
    assert_eq!(ev.problems, vec![], "{}", String::from_utf8_lossy(&raw));
    assert!(ev.complete);
    assert_eq!(
        ev.status_map(Parser::Django).unwrap(),
        Parser::Django.parse(&hooked),
        "evidence {:?}",
        ev.unittest
    );
}

#[test]
fn unittest_runtests_on_python_3_6() {
    unittest_case("3.6");
}

#[test]
fn unittest_runtests_on_python_3_12() {
    unittest_case("3.12");
}

#[test]
fn other_processes_leave_the_secret_alone() {
    let Some(python) = pyenv_python("3.11") else {
        eprintln!("SKIPPED: no pyenv Python 3.11");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let env = venv(&python, tmp.path(), &[]);
    let plan = install(&env);
    // An install step, a helper script: not a test runner.
    let out = Command::new(env.join("bin/python"))
        .args([
            "-c",
            "import sys; print(sorted(m for m in sys.modules if 'swtbench' in m))",
        ])
        .output()
        .unwrap();
    let key_left = Path::new(&plan.key_path).exists();
    let evidence = Path::new(&plan.evidence_path).exists();
    uninstall(&env, &plan);
    assert!(key_left && !evidence);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
