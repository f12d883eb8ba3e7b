//! Child processes: Python children started through `subprocess` are traced; by default they run
//! exactly as under the original tracer (option list printed, exit status 0, the original's
//! command rewriting with its failures), with `SWTBENCH_TRACE_COMPAT=0` they behave as they would
//! untraced; a child killed while holding the cover file's lock does not hold up the parent's
//! write.

use std::process::Command;
use std::time::Duration;

use std::path::Path;

use crate::common::{
    self, everything_under, fixed, line_of, options_line, read_cover, regex_escape, run,
    tracer_command, HostPython, Sandbox,
};

const DEADLINE: Duration = Duration::from_secs(120);

fn children_are_traced_and_transparent(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("spawn.py");
    let kid = programs.join("kid.py");
    let cover = sandbox.cover();
    let outcome = run(
        fixed(tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &everything_under(&programs),
            &[script.to_str().unwrap()],
            // A different working directory: children must still append to the same file.
            &programs,
        )),
        DEADLINE,
    );
    assert_eq!(outcome.code(), Some(0), "{}", outcome.describe());
    let results: Vec<&str> = outcome.stdout.lines().collect();
    // Each child's exit status and output are what they would be without the tracer.
    assert_eq!(
        results,
        [
            "(4, 'kid 1', '')",
            "(0, 'kid 3', '')",
            "(0, \"6 ['x']\", '')",
            "(0, 'kid 10\\nshell-ok', '')",
            "(0, 'kid 15', '')",
        ],
        "{}",
        outcome.describe()
    );

    let hits = read_cover(&cover);
    let kid_hits = &hits[kid.to_str().unwrap()];
    // work(n) ran for n = 2, 3, 4, 5, 6 in five processes.
    assert_eq!(kid_hits[&line_of(&kid, "total += i")], 20);
    assert_eq!(kid_hits[&line_of(&kid, "def work")], 5);
    // Only the processes that ran kid.py as __main__ (all but the -c one) reached its print.
    assert_eq!(kid_hits[&line_of(&kid, "print(\"kid\"")], 4);
    assert!(hits.contains_key(script.to_str().unwrap()));

    let raw = std::fs::read_to_string(&cover).unwrap();
    let kid_lines = raw
        .lines()
        .filter(|l| l.starts_with(&format!("{{\"{}\"", kid.display())))
        .count();
    assert_eq!(kid_lines, 5, "one cover line per child process:\n{raw}");
}
per_python!(children_are_traced_and_transparent);

fn children_run_as_under_the_original_tracer(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("spawn_original.py");
    let kid = programs.join("kid.py");
    // The eval script's kind of pattern: a group of escaped paths, relative cover file.
    let pattern = format!(
        "{}/(kid\\.py|spawn_original\\.py)",
        regex_escape(programs.to_str().unwrap())
    );
    let cover = Path::new("coverage.cover");
    let outcome = run(
        tracer_command(
            &py.exe,
            &sandbox,
            cover,
            &pattern,
            &[script.to_str().unwrap()],
            &programs,
        ),
        DEADLINE,
    );
    assert_eq!(outcome.code(), Some(0), "{}", outcome.describe());
    let options = options_line(cover, &pattern);
    let mut lines = outcome.stdout.lines();
    assert_eq!(
        lines.next(),
        Some(options.as_str()),
        "{}",
        outcome.describe()
    );
    let results: Vec<serde_json::Value> = lines
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let printed = |rest: &str| serde_json::Value::from(format!("{options}\n{rest}"));
    assert_eq!(results.len(), 6, "{}", outcome.describe());
    // A script child prints the option list first and exits 0 whatever its own status (4).
    assert_eq!(results[0], serde_json::json!([0, printed("kid 1\n"), ""]));
    // `-m` and `-c` children keep the tracer's directory as sys.path[0]: the working directory
    // is not searched, so `-m kid` fails; `-c` code sees the tracer's whole command line.
    assert_eq!(
        results[1],
        serde_json::json!([1, printed(""), "ImportError: No module named kid"])
    );
    assert_eq!(
        results[2],
        serde_json::json!([0, printed("9 x True\n"), ""])
    );
    // A shell string is re-joined with spaces: the pattern's parentheses reach /bin/sh unquoted.
    assert_eq!(results[3][0], 2, "{}", outcome.describe());
    let shell_error = results[3][2].as_str().unwrap();
    assert!(
        results[3][1] == "" && shell_error.contains('(') && shell_error.contains("unexpected"),
        "{}",
        outcome.describe()
    );
    // A path object in a python argv makes Popen raise.
    assert_eq!(results[4], serde_json::json!(["raised", "TypeError"]));
    // Any program whose name contains "python" runs on the tracer's interpreter.
    assert_eq!(results[5], serde_json::json!([0, printed("kid 15\n"), ""]));

    // Each process writes the cover file named as given, relative to its working directory.
    let parent = read_cover(&programs.join("coverage.cover"));
    assert_eq!(
        parent.keys().collect::<Vec<_>>(),
        [script.to_str().unwrap()],
        "{parent:?}"
    );
    let children = read_cover(&programs.join("sub").join("coverage.cover"));
    let kid_hits = &children[kid.to_str().unwrap()];
    // work(2) and work(6) ran in the two children started in sub/.
    assert_eq!(kid_hits[&line_of(&kid, "total += i")], 2 + 6);
}
per_python!(children_run_as_under_the_original_tracer);

fn killed_lock_holder_does_not_block_the_parent(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("killed.py");
    let cover = sandbox.cover();
    let outcome = run(
        tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &everything_under(&programs),
            &[script.to_str().unwrap(), cover.to_str().unwrap(), "kill"],
            &programs,
        ),
        DEADLINE,
    );
    assert_eq!(outcome.code(), Some(0), "{}", outcome.describe());
    assert!(
        outcome.stdout.contains("child killed -9"),
        "{}",
        outcome.describe()
    );
    // The child held the lock when it died; the kernel dropped it, so the parent neither waited
    // for the lock timeout nor wrote without the lock.
    assert!(
        !outcome.stderr.contains("still locked"),
        "{}",
        outcome.describe()
    );
    println!(
        "{}: parent finished {:?} after start",
        py.name, outcome.elapsed
    );
    let hits = read_cover(&cover);
    let parent = &hits[script.to_str().unwrap()];
    assert_eq!(parent[&line_of(&script, "total += i")], 10);
    // The killed child never got to write its own lines.
    assert!(!hits.contains_key(programs.join("kid_lock.py").to_str().unwrap()));
}
per_python!(killed_lock_holder_does_not_block_the_parent);

fn stuck_lock_holder_delays_the_write_only_boundedly(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("killed.py");
    let cover = sandbox.cover();
    let outcome = run(
        tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &everything_under(&programs),
            &[script.to_str().unwrap(), cover.to_str().unwrap(), "stop"],
            &programs,
        ),
        DEADLINE,
    );
    // Clean up the stopped child (started by the program under test) before asserting.
    let pid = outcome
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("child stopped "))
        .map(str::to_string);
    if let Some(pid) = &pid {
        let _ = Command::new("kill").args(["-KILL", pid]).status();
    }
    assert!(pid.is_some(), "{}", outcome.describe());
    assert_eq!(outcome.code(), Some(0), "{}", outcome.describe());
    assert!(
        outcome.stderr.contains("still locked after 5 s"),
        "{}",
        outcome.describe()
    );
    let hits = read_cover(&cover);
    assert_eq!(
        hits[script.to_str().unwrap()][&line_of(&script, "total += i")],
        10
    );
}
/// The wait is plain `flock` and a clock, the same on every Python: the oldest and the newest host
/// Python are enough, and each run waits the whole 5 s timeout.
#[test]
fn stuck_lock_holder_on_the_oldest_and_newest_python() {
    let pythons = common::host_pythons();
    if pythons.is_empty() {
        println!("SKIPPED: no Python under $(pyenv root)/versions");
        return;
    }
    stuck_lock_holder_delays_the_write_only_boundedly(&pythons[0]);
    if pythons.len() > 1 {
        stuck_lock_holder_delays_the_write_only_boundedly(&pythons[pythons.len() - 1]);
    }
}
