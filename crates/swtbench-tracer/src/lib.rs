//! The in-container coverage tracer, embedded as text.
//!
//! The tracer is a Python script (`assets/tracer/trace.py`, standard library only) that runs the
//! repository's test command inside a test container and appends per-line hit counts of the files
//! the gold fix touches to a cover file, one JSON line per file:
//!
//! ```text
//! {"/testbed/pkg/mod.py": {"1": 1, "2": 0, "7": 12}}
//! ```
//!
//! Every executable line of the file is listed (0 when it never ran); docstring lines are left
//! out; files that never ran have no line at all; several processes may write lines for the same
//! file, which readers sum. The eval script runs it as
//! `python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(…)' …` and then
//! prints the cover file after `+ cat coverage.cover` (see `docs/tracer.md`).
//!
//! This crate only carries the script and facts about it. It must not run Python, touch
//! containers or parse cover files (parsing belongs to the grading crate).

/// The tracer script, byte for byte as it is copied into containers.
pub const TRACER_PY: &str = include_str!("../../../assets/tracer/trace.py");

/// Version of the tracer script (`TRACER_VERSION` inside it). Bump it with every behaviour change
/// so that cached results produced by an older tracer can be told apart.
pub const TRACER_VERSION: &str = "1.2.0";

/// Where the eval script expects the tracer inside the container.
pub const CONTAINER_PATH: &str = "/root/trace.py";

/// The cover file name the eval script passes with `-C`, relative to `/testbed`.
pub const COVER_FILE: &str = "coverage.cover";

/// Environment variable that forces a backend inside the container: `settrace` uses
/// `sys.settrace` on every Python; `auto` (the default) uses `sys.monitoring` on 3.12 and later.
pub const BACKEND_ENV: &str = "SWTBENCH_TRACE_BACKEND";

/// Environment variable read by the tracer inside the container. Unset (the default), the traced
/// program and its Python children run the way the original SWT-Bench tracer ran them wherever
/// that can change a test outcome (option list printed first, `SystemExit` swallowed in every
/// process, children rewritten as the original rewrote them, a plain-dict `__main__`); `0`
/// (or `false`/`no`/`off`) makes every traced process behave as it would untraced. Test outcomes
/// can differ between the two, so a runner that sets it must make it part of its result keys.
pub const COMPAT_ENV: &str = "SWTBENCH_TRACE_COMPAT";

/// Flag the tracer adds to the command lines of the Python child processes it traces when
/// [`COMPAT_ENV`] is `0` (in the default mode children get the original's command line).
pub const CHILD_FLAG: &str = "--swtbench-child";

/// Oldest Python the script runs on (its syntax stays within 3.5).
pub const MIN_PYTHON: PythonVersion = PythonVersion { major: 3, minor: 5 };

/// Newest Python the test suite has run the script on.
pub const MAX_TESTED_PYTHON: PythonVersion = PythonVersion {
    major: 3,
    minor: 13,
};

/// First Python on which the tracer uses `sys.monitoring` instead of `sys.settrace`.
pub const MONITORING_PYTHON: PythonVersion = PythonVersion {
    major: 3,
    minor: 12,
};

/// A `major.minor` Python version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PythonVersion {
    pub major: u32,
    pub minor: u32,
}

impl PythonVersion {
    /// Parses `"3.11"`, `"3.11.7"` or `"Python 3.11.7"` (the first two numbers count).
    pub fn parse(text: &str) -> Option<PythonVersion> {
        let text = text.trim();
        let text = text.strip_prefix("Python").unwrap_or(text).trim();
        let mut parts = text.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor_text: String = parts
            .next()?
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let minor = minor_text.parse().ok()?;
        Some(PythonVersion { major, minor })
    }
}

impl std::fmt::Display for PythonVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What the tracer does on a given Python.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Runs with `sys.settrace` (3.5–3.11).
    Settrace,
    /// Runs with `sys.monitoring` (3.12 and later), `sys.settrace` if no monitoring tool id is free.
    Monitoring,
    /// Cannot run (Python 2, or 3 older than 3.5).
    Unsupported,
}

/// How the tracer runs on `version`.
pub fn support(version: PythonVersion) -> Support {
    if version < MIN_PYTHON {
        Support::Unsupported
    } else if version < MONITORING_PYTHON {
        Support::Settrace
    } else {
        Support::Monitoring
    }
}

/// SHA-256 (hex) of the script text, for keys of cached results that the tracer produced.
pub fn tracer_digest() -> String {
    swtbench_core::hash::sha256_hex(TRACER_PY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_constant_matches_the_script() {
        let line = format!("TRACER_VERSION = \"{TRACER_VERSION}\"");
        assert!(
            TRACER_PY.lines().any(|l| l == line),
            "assets/tracer/trace.py must contain the line {line}"
        );
    }

    #[test]
    fn flags_and_env_names_match_the_script() {
        assert!(TRACER_PY.contains(&format!("CHILD_FLAG = \"{CHILD_FLAG}\"")));
        assert!(TRACER_PY.contains(&format!("BACKEND_ENV = \"{BACKEND_ENV}\"")));
        assert!(TRACER_PY.contains(&format!("COMPAT_ENV = \"{COMPAT_ENV}\"")));
    }

    #[test]
    fn script_is_plain_ascii_with_a_python3_shebang() {
        assert!(TRACER_PY.starts_with("#!/usr/bin/env python3\n"));
        assert!(
            TRACER_PY.is_ascii(),
            "the script must not depend on a source encoding"
        );
        assert!(!TRACER_PY.contains('\r'));
    }

    #[test]
    fn parses_versions() {
        assert_eq!(
            PythonVersion::parse("Python 3.11.7"),
            Some(PythonVersion {
                major: 3,
                minor: 11
            })
        );
        assert_eq!(
            PythonVersion::parse("3.13t"),
            Some(PythonVersion {
                major: 3,
                minor: 13
            })
        );
        assert_eq!(PythonVersion::parse("3"), None);
        assert_eq!(PythonVersion::parse("x.y"), None);
    }

    #[test]
    fn support_ranges() {
        let v = |major, minor| PythonVersion { major, minor };
        assert_eq!(support(v(2, 7)), Support::Unsupported);
        assert_eq!(support(v(3, 4)), Support::Unsupported);
        assert_eq!(support(v(3, 5)), Support::Settrace);
        assert_eq!(support(v(3, 11)), Support::Settrace);
        assert_eq!(support(v(3, 12)), Support::Monitoring);
        assert_eq!(support(v(3, 14)), Support::Monitoring);
    }

    #[test]
    fn digest_is_stable_hex() {
        let digest = tracer_digest();
        assert_eq!(digest.len(), 64);
        assert_eq!(digest, tracer_digest());
        assert!(digest.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
