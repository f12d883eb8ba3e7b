//! Child processes: Python children started through `subprocess` are traced into the same cover
//! file, behave as they would untraced, and a child killed while holding the cover file's lock
//! does not hold up the parent's write.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[macro_use]
mod common;

use std::process::Command;
use std::time::Duration;

use common::{everything_under, line_of, read_cover, run, tracer_command, HostPython, Sandbox};

const DEADLINE: Duration = Duration::from_secs(120);

fn children_are_traced_and_transparent(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("spawn.py");
    let kid = programs.join("kid.py");
    let cover = sandbox.cover();
    let outcome = run(
        tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &everything_under(&programs),
            &[script.to_str().unwrap()],
            // A different working directory: children must still append to the same file.
            &programs,
        ),
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
per_python!(stuck_lock_holder_delays_the_write_only_boundedly);
