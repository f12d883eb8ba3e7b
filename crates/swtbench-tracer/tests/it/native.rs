//! The native line counter against the Python trace functions: every fixture program run under
//! both (`SWTBENCH_TRACE_NATIVE=0` and `=require`, which fails when the native counter cannot be
//! loaded), with the same exit status, stdout, stderr and a byte-identical cover file. On 3.12
//! and later, where the tracer uses `sys.monitoring`, there is no native counter: `require`
//! says so and exits 2, and the default runs as before.

use std::path::Path;
use std::time::Duration;

use swtbench_tracer::NATIVE_ENV;

use crate::common::{
    self, everything_under, fixed, has_native, regex_escape, run, tracer_command, HostPython,
    Outcome, Sandbox,
};

const DEADLINE: Duration = Duration::from_secs(120);

/// Which process behaviour a comparison runs with.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The original's (the default).
    Original,
    /// `SWTBENCH_TRACE_COMPAT=0`.
    Fixed,
}

/// Runs `program` with the Python counter, then with the native one, and asserts that both give
/// the same exit status, output and cover file; returns the native run and its cover text.
/// `env` is added to both runs' environment; `mask` rewrites the output before comparing
/// (pytest's durations, say).
#[allow(clippy::too_many_arguments)]
pub fn compare_counters(
    py: &Path,
    sandbox: &Sandbox,
    pattern: &str,
    program: &[&str],
    cwd: &Path,
    mode: Mode,
    env: &[(&str, &Path)],
    mask: &dyn Fn(&str) -> String,
) -> (Outcome, String) {
    let cover = sandbox.path().join("counters.cover");
    let mut runs = Vec::new();
    for choice in ["0", "require"] {
        let _ = std::fs::remove_file(&cover);
        // What a fixture program leaves behind (spawn_original.py makes programs/sub).
        let _ = std::fs::remove_dir_all(cwd.join("sub"));
        let mut cmd = tracer_command(py, sandbox, &cover, pattern, program, cwd);
        cmd.env(NATIVE_ENV, choice);
        for (name, value) in env {
            cmd.env(name, value);
        }
        if mode == Mode::Fixed {
            cmd = fixed(cmd);
        }
        let outcome = run(cmd, DEADLINE);
        let text = std::fs::read_to_string(&cover).unwrap_or_default();
        runs.push((outcome, text));
    }
    let (native, native_cover) = runs.pop().expect("native run");
    let (python, python_cover) = runs.pop().expect("python run");
    let context = format!("{} {program:?}", py.display());
    assert_eq!(
        python.code(),
        native.code(),
        "{context}: exit status\n--- Python counter\n{}\n--- native counter\n{}",
        python.describe(),
        native.describe()
    );
    assert_eq!(
        mask(&python.stdout),
        mask(&native.stdout),
        "{context}: stdout\n{}",
        native.describe()
    );
    assert_eq!(
        mask(&python.stderr),
        mask(&native.stderr),
        "{context}: stderr"
    );
    assert_eq!(python_cover, native_cover, "{context}: cover file");
    (native, native_cover)
}

fn same(text: &str) -> String {
    text.to_string()
}

fn programs_under_both_counters(py: &HostPython) {
    let sandbox = Sandbox::new();
    if !has_native(py.version) || !sandbox.install_native(&py.exe) {
        return;
    }
    let programs = sandbox.copy_fixture("programs");
    let tree = sandbox.copy_fixture("tree");
    let pattern = format!(
        "{}|{}",
        everything_under(&programs),
        everything_under(&tree)
    );
    let path = |name: &str| programs.join(name).to_str().unwrap().to_string();
    let runs: Vec<(Vec<String>, Mode)> = vec![
        (vec![path("features.py")], Mode::Original),
        (vec![path("features.py")], Mode::Fixed),
        (vec!["-m".into(), "features".into()], Mode::Original),
        (
            vec![
                "-c".into(),
                "import features; print(features.loops(4))".into(),
            ],
            Mode::Fixed,
        ),
        (vec![path("threads.py")], Mode::Original),
        (
            vec![path("namespace.py"), "/no/such/file".into()],
            Mode::Original,
        ),
        (vec![path("namespace.py")], Mode::Fixed),
        (vec![path("fails.py")], Mode::Original),
        (vec![path("spawn.py")], Mode::Fixed),
        (vec![path("spawn_original.py")], Mode::Original),
        (vec![path("tracing_games.py")], Mode::Original),
        (vec![path("tracing_games.py")], Mode::Fixed),
        (
            vec![tree.join("run.py").to_str().unwrap().to_string()],
            Mode::Original,
        ),
    ];
    for (program, mode) in runs {
        let args: Vec<&str> = program.iter().map(String::as_str).collect();
        // -m and -c find the fixtures through PYTHONPATH (the original left sys.path[0] alone).
        let env = [("PYTHONPATH", programs.as_path())];
        let (outcome, cover) = compare_counters(
            &py.exe, &sandbox, &pattern, &args, &programs, mode, &env, &same,
        );
        assert!(
            !cover.is_empty() || program[0].ends_with("namespace.py"),
            "{program:?} traced nothing\n{}",
            outcome.describe()
        );
    }
}
per_python!(programs_under_both_counters);

/// A program that recurses to the recursion limit: the Python counter's trace functions take
/// some of the depth, and the RecursionError raised inside one of them ends tracing. The native
/// counter makes the same recursion checks, so the error strikes at the same depth with the same
/// message, and the counts stop at the same place. The offsets put the deepest frame where the
/// first hit of a line, the first sight of a `__file__` value or the first code of a traced file
/// takes the Python counter deeper than an ordinary event.
fn recursion_limit_under_both_counters(py: &HostPython) {
    let sandbox = Sandbox::new();
    if !has_native(py.version) || !sandbox.install_native(&py.exe) {
        return;
    }
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("recursion.py");
    let pattern = format!(
        "{}/recursion(_extra)?\\.py",
        regex_escape(&programs.to_string_lossy())
    );
    let mut scenarios: Vec<(&str, u32)> = ["down", "lines", "excluded", "dunder", "generators"]
        .iter()
        .map(|s| (*s, 0))
        .collect();
    for scenario in ["first_hit", "miss", "miss_included", "new_counter"] {
        for offset in 2..=7 {
            scenarios.push((scenario, offset));
        }
    }
    let mut stopped = 0;
    for (scenario, offset) in scenarios {
        let offset = offset.to_string();
        let args = [script.to_str().unwrap(), scenario, "200", offset.as_str()];
        let (outcome, _) = compare_counters(
            &py.exe,
            &sandbox,
            &pattern,
            &args,
            &programs,
            Mode::Original,
            &[],
            &same,
        );
        assert!(
            outcome.stdout.contains(&format!("{scenario} 200 ")),
            "{}",
            outcome.describe()
        );
        if outcome
            .stdout
            .contains("maximum recursion depth exceeded while calling a Python object')")
        {
            stopped += 1;
        }
    }
    // Some offsets must have hit the deeper paths (the error raised by a C call's check).
    assert!(stopped > 0, "no scenario reached a call's recursion check");
}
per_python!(recursion_limit_under_both_counters);

/// Where there is no native counter: `require` fails with a message naming why, the default and
/// `0` count with the Python functions (or sys.monitoring) and say nothing about it.
fn without_a_native_counter(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("features.py");
    let pattern = everything_under(&programs);
    let cover = sandbox.cover();
    // No module beside trace.py: this sandbox's tracer is not given one.
    let mut cmd = common::tracer_command_without_native(
        &py.exe,
        &sandbox,
        &cover,
        &pattern,
        &[script.to_str().unwrap()],
        &programs,
    );
    cmd.env(NATIVE_ENV, "require");
    let outcome = run(cmd, DEADLINE);
    if has_native(py.version) && Path::new(swtbench_tracer::NATIVE_DIR).exists() {
        // A machine with the image directory (a container) may have one there.
        return;
    }
    assert_eq!(outcome.code(), Some(2), "{}", outcome.describe());
    assert!(
        outcome
            .stderr
            .contains("SWTBENCH_TRACE_NATIVE=require: cannot load the native line counter"),
        "{}",
        outcome.describe()
    );
    assert!(!cover.exists());
    for choice in [None, Some("0")] {
        let mut cmd = common::tracer_command_without_native(
            &py.exe,
            &sandbox,
            &cover,
            &pattern,
            &[script.to_str().unwrap()],
            &programs,
        );
        if let Some(choice) = choice {
            cmd.env(NATIVE_ENV, choice);
        }
        let outcome = run(fixed(cmd), DEADLINE);
        assert_eq!(outcome.code(), Some(0), "{}", outcome.describe());
        assert_eq!(outcome.stderr, "", "nothing is said about the counter");
        assert!(common::read_cover(&cover).contains_key(script.to_str().unwrap()));
        std::fs::remove_file(&cover).unwrap();
    }
}
per_python!(without_a_native_counter);
