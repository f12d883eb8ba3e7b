//! Which lines a cover entry lists: docstrings out, decorators and multi-line statements in, a
//! file with a syntax error elsewhere in the tree never read, a source that stops compiling
//! skipped without losing the other files.

use std::time::Duration;

use crate::common::{
    assert_markers, everything_under, program_stdout, read_cover, run, tracer_command, HostPython,
    Sandbox,
};

const DEADLINE: Duration = Duration::from_secs(120);

fn package_tree_with_a_syntax_error_elsewhere(py: &HostPython) {
    let sandbox = Sandbox::new();
    let tree = sandbox.copy_fixture("tree");
    let script = tree.join("run.py");
    let cover = sandbox.cover();
    let pattern = everything_under(&tree);
    let outcome = run(
        tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &pattern,
            &[script.to_str().unwrap()],
            &tree,
        ),
        DEADLINE,
    );
    assert_eq!(outcome.code(), Some(0), "{}", outcome.describe());
    assert_eq!(
        program_stdout(&outcome, &cover, &pattern).trim(),
        "square 9 1 7"
    );
    assert!(outcome.stderr.is_empty(), "{}", outcome.describe());

    let hits = read_cover(&cover);
    let files: Vec<String> = hits
        .keys()
        .map(|f| {
            f.strip_prefix(&format!("{}/", tree.display()))
                .unwrap()
                .to_string()
        })
        .collect();
    // broken/bad_syntax.py matches the pattern but never ran, so it has no entry.
    assert_eq!(
        files,
        [
            "pkg/__init__.py",
            "pkg/shapes.py",
            "pkg/volatile.py",
            "run.py"
        ]
    );
    assert_markers(&hits, &tree.join("pkg/shapes.py"), &py.name);
    // The package docstring is its only line-1 statement and is left out.
    assert!(!hits[tree.join("pkg/__init__.py").to_str().unwrap()].contains_key(&1));
}
per_python!(package_tree_with_a_syntax_error_elsewhere);

fn source_that_stops_compiling_is_skipped(py: &HostPython) {
    let sandbox = Sandbox::new();
    let tree = sandbox.copy_fixture("tree");
    let script = tree.join("run.py");
    let cover = sandbox.cover();
    let outcome = run(
        tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &everything_under(&tree),
            &[script.to_str().unwrap(), "--break-volatile"],
            &tree,
        ),
        DEADLINE,
    );
    assert_eq!(outcome.code(), Some(0), "{}", outcome.describe());
    assert!(
        outcome.stderr.contains("cannot compile") && outcome.stderr.contains("volatile.py"),
        "{}",
        outcome.describe()
    );
    let hits = read_cover(&cover);
    assert!(!hits.contains_key(tree.join("pkg/volatile.py").to_str().unwrap()));
    assert!(hits.contains_key(tree.join("pkg/shapes.py").to_str().unwrap()));
    assert!(hits.contains_key(script.to_str().unwrap()));
}
per_python!(source_that_stops_compiling_is_skipped);

fn features_line_set(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("features.py");
    let cover = sandbox.cover();
    let outcome = run(
        tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &everything_under(&programs),
            &[script.to_str().unwrap()],
            &programs,
        ),
        DEADLINE,
    );
    assert_eq!(outcome.code(), Some(0), "{}", outcome.describe());
    let hits = read_cover(&cover);
    assert_markers(&hits, &script, &py.name);
    let lines = &hits[script.to_str().unwrap()];
    let numbers: Vec<u32> = lines.keys().copied().collect();
    let mut sorted = numbers.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(numbers, sorted);
    // Line 0 appears (with 0 hits) only where the module's code starts on it, as in 3.11+.
    if let Some(hits_on_zero) = lines.get(&0) {
        assert_eq!(*hits_on_zero, 0);
        assert!(py.version.minor >= 11, "{}: line 0 listed", py.name);
    }
    // Every listed line with hits is a real source line.
    let source_lines = std::fs::read_to_string(&script).unwrap().lines().count() as u32;
    assert!(numbers.iter().all(|n| *n <= source_lines));
}
per_python!(features_line_set);
