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
//! On Python 3.5–3.11 the script counts through a native line counter when the environment image
//! has one: a small C extension ([`NATIVE_C`]) that the environment image compiles against its own
//! Python with [`NATIVE_BUILD_SH`] into [`NATIVE_DIR`] (see [`native_dockerfile_lines`]). It counts
//! exactly what the Python trace functions count; without it (no compiler, an image built before
//! it existed, [`NATIVE_ENV`]`=0`) the script counts in Python.
//!
//! This crate only carries the script and facts about it. It must not run Python, touch
//! containers or parse cover files (parsing belongs to the grading crate).

/// The tracer script, byte for byte as it is copied into containers.
pub const TRACER_PY: &str = include_str!("../../../assets/tracer/trace.py");

/// Version of the tracer script (`TRACER_VERSION` inside it). Bump it with every behaviour change
/// so that cached results produced by an older tracer can be told apart.
pub const TRACER_VERSION: &str = "1.3.0";

/// Where the eval script expects the tracer inside the container.
pub const CONTAINER_PATH: &str = "/root/trace.py";

/// C source of the native line counter (the extension module `_swtbench_lines`, CPython 3.5–3.11).
pub const NATIVE_C: &str = include_str!("../../../assets/tracer/swtbench_lines.c");

/// Shell script that compiles [`NATIVE_C`] for a Python interpreter (`python3` by default) into its
/// own directory; it never fails (it says why nothing was built and exits 0).
pub const NATIVE_BUILD_SH: &str = include_str!("../../../assets/tracer/build-native.sh");

/// File names of [`NATIVE_C`] and [`NATIVE_BUILD_SH`] next to each other (the build script
/// compiles the source of that name in its own directory).
pub const NATIVE_C_NAME: &str = "swtbench_lines.c";
pub const NATIVE_BUILD_SH_NAME: &str = "build-native.sh";

/// Directory of the environment image holding the native counter (the tracer looks there).
pub const NATIVE_DIR: &str = "/opt/swtbench-tracer";

/// Directory of the environment image's build context that is copied to [`NATIVE_DIR`].
pub const NATIVE_CONTEXT_DIR: &str = "swtbench-tracer";

/// Environment variable read by the tracer: `0` (or `false`/`no`/`off`) counts with Python trace
/// functions even where the native counter is installed; `require` makes a missing native
/// counter an error (exit status 2), for checks that it is used. The counts are the same either
/// way.
pub const NATIVE_ENV: &str = "SWTBENCH_TRACE_NATIVE";

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

/// SHA-256 (hex) of the native counter's source and build script.
pub fn native_digest() -> String {
    swtbench_core::hash::sha256_hex(format!("{NATIVE_C}\0{NATIVE_BUILD_SH}"))
}

/// The files of [`NATIVE_CONTEXT_DIR`] in an environment image's build context: (path in the
/// context, text, mode).
pub fn native_context_files() -> [(String, &'static str, u32); 2] {
    [
        (
            format!("{NATIVE_CONTEXT_DIR}/{NATIVE_C_NAME}"),
            NATIVE_C,
            0o644,
        ),
        (
            format!("{NATIVE_CONTEXT_DIR}/{NATIVE_BUILD_SH_NAME}"),
            NATIVE_BUILD_SH,
            0o755,
        ),
    ]
}

/// The instructions an environment Dockerfile ends with to build the native counter for the
/// environment's Python: the context's [`NATIVE_CONTEXT_DIR`] copied to [`NATIVE_DIR`] and the
/// build script run in the activated environment (`~/.bashrc`, as the eval scripts' `python3`
/// is that environment's). The digest of the source and script is part of the text, so that an
/// image key taken over the Dockerfile changes with them. The build never fails the image.
pub fn native_dockerfile_lines() -> String {
    format!(
        "\n# The coverage tracer's native line counter, compiled for the environment's Python \
         (sha256 of its source and build script: {digest})\n\
         COPY ./{NATIVE_CONTEXT_DIR}/ {NATIVE_DIR}/\n\
         RUN /bin/bash -c \"source ~/.bashrc && /bin/sh {NATIVE_DIR}/{NATIVE_BUILD_SH_NAME}\"\n",
        digest = native_digest(),
    )
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
        assert!(TRACER_PY.contains(&format!("NATIVE_ENV = \"{NATIVE_ENV}\"")));
        assert!(TRACER_PY.contains(&format!("NATIVE_DIR = \"{NATIVE_DIR}\"")));
    }

    #[test]
    fn native_module_version_matches_the_script() {
        let version = |text: &str, prefix: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(prefix))
                .map(|rest| rest.trim().trim_matches('"').to_string())
                .expect("version line")
        };
        assert_eq!(
            version(NATIVE_C, "#define MODULE_VERSION "),
            version(TRACER_PY, "NATIVE_VERSION = "),
            "bump both: the tracer only loads the native module of its own version"
        );
        assert!(NATIVE_C.contains("\"_swtbench_lines\""));
        assert!(TRACER_PY.contains("NATIVE_MODULE = \"_swtbench_lines\""));
        assert!(NATIVE_BUILD_SH.contains(&format!("\"$dir/{NATIVE_C_NAME}\"")));
    }

    #[test]
    fn native_files_are_plain_ascii_and_the_dockerfile_names_their_digest() {
        for (path, text, _) in native_context_files() {
            assert!(text.is_ascii() && !text.contains('\r'), "{path}");
            assert!(path.starts_with(NATIVE_CONTEXT_DIR));
        }
        assert!(NATIVE_BUILD_SH.starts_with("#!/bin/sh\n"));
        let lines = native_dockerfile_lines();
        assert!(lines.contains(&native_digest()));
        assert!(lines.contains(&format!("COPY ./{NATIVE_CONTEXT_DIR}/ {NATIVE_DIR}/\n")));
        assert!(lines.ends_with(&format!("{NATIVE_DIR}/{NATIVE_BUILD_SH_NAME}\"\n")));
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
