//! Running programs under the tracer: script, `-m` and `-c` modes, exit statuses, errors and the
//! command line, with hit maps compared to a plain `sys.settrace` counter.

use std::process::Command;
use std::time::Duration;

use crate::common::{
    self, assert_markers, assert_same_hits, everything_under, fixed, line_of, program_stdout,
    py_repr, read_cover, read_reference, reference_command, run, tracer_command, HostPython,
    Sandbox,
};

const DEADLINE: Duration = Duration::from_secs(120);

fn script_mode_matches_reference(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("features.py");
    let script_arg = script.to_str().unwrap();
    let pattern = everything_under(&programs);
    let cover = sandbox.cover();

    let traced = run(
        tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &pattern,
            &[script_arg],
            &programs,
        ),
        DEADLINE,
    );
    // features.py ends with sys.exit(3); the tracer swallows SystemExit like the original.
    assert_eq!(traced.code(), Some(0), "{}", traced.describe());
    assert!(traced.stdout.contains("6 "), "{}", traced.describe());

    let reference_out = sandbox.path().join("reference.json");
    let reference = run(
        reference_command(&py.exe, &reference_out, &pattern, &[script_arg], &programs),
        DEADLINE,
    );
    assert_eq!(reference.code(), Some(3), "{}", reference.describe());
    // The original printed its option list before the program's output.
    assert_eq!(
        program_stdout(&traced, &cover, &pattern),
        reference.stdout,
        "{}",
        traced.describe()
    );

    let ours = read_cover(&cover);
    assert_same_hits(&ours, &read_reference(&reference_out), &py.name);
    assert_markers(&ours, &script, &py.name);

    // With the fixed behaviour the output is the program's alone; the hits are the same.
    std::fs::remove_file(&cover).unwrap();
    let traced = run(
        fixed(tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &pattern,
            &[script_arg],
            &programs,
        )),
        DEADLINE,
    );
    assert_eq!(traced.code(), Some(0), "{}", traced.describe());
    assert_eq!(traced.stdout, reference.stdout);
    assert_same_hits(
        &read_cover(&cover),
        &read_reference(&reference_out),
        &py.name,
    );
}
per_python!(script_mode_matches_reference);

fn threads_match_reference(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("threads.py");
    let script_arg = script.to_str().unwrap();
    let pattern = everything_under(&programs);
    let cover = sandbox.cover();

    let traced = run(
        tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &pattern,
            &[script_arg],
            &programs,
        ),
        DEADLINE,
    );
    assert_eq!(traced.code(), Some(0), "{}", traced.describe());
    let reference_out = sandbox.path().join("reference.json");
    let reference = run(
        reference_command(&py.exe, &reference_out, &pattern, &[script_arg], &programs),
        DEADLINE,
    );
    assert_eq!(reference.code(), Some(0), "{}", reference.describe());

    let ours = read_cover(&cover);
    assert_same_hits(&ours, &read_reference(&reference_out), &py.name);
    // Seven count_to calls ran in five threads and the main thread: 5+10+20+7+3+4 loop turns.
    let body = line_of(&script, "total += i");
    assert_eq!(ours[script.to_str().unwrap()][&body], 49);
}
per_python!(threads_match_reference);

fn module_and_code_modes(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let kid = programs.join("kid.py");
    let pattern = everything_under(&programs);
    let cover = sandbox.cover();

    let mut module = tracer_command(
        &py.exe,
        &sandbox,
        &cover,
        &pattern,
        &["-m", "kid", "3", "5"],
        sandbox.path(),
    );
    module.env("PYTHONPATH", &programs);
    let module = run(module, DEADLINE);
    assert_eq!(module.code(), Some(0), "{}", module.describe());
    assert_eq!(program_stdout(&module, &cover, &pattern).trim(), "kid 3");

    let reference_out = sandbox.path().join("reference.json");
    let mut reference = reference_command(
        &py.exe,
        &reference_out,
        &pattern,
        &["-m", "kid", "3", "5"],
        sandbox.path(),
    );
    reference.env("PYTHONPATH", &programs);
    let reference = run(reference, DEADLINE);
    assert_eq!(reference.code(), Some(5), "{}", reference.describe());
    assert_same_hits(
        &read_cover(&cover),
        &read_reference(&reference_out),
        &py.name,
    );

    let code = "import sys, kid; print(kid.work(4), sys.argv, repr(globals().get('__file__')))";
    // The original left sys.argv alone in -c mode (the program sees the tracer's command line)
    // and gave the code a __file__ of "<string>"; the fixed behaviour is Python's own.
    let tracer_argv: Vec<String> = [
        sandbox.tracer().to_str().unwrap(),
        "--count",
        "-C",
        cover.to_str().unwrap(),
        "--include-pattern",
        &pattern,
        "-c",
        code,
        "a",
        "b",
    ]
    .iter()
    .map(|w| py_repr(w))
    .collect();
    let cases = [
        (false, format!("6 [{}] '<string>'", tracer_argv.join(", "))),
        (true, "6 ['-c', 'a', 'b'] None".to_string()),
    ];
    for (fixed_mode, want) in cases {
        std::fs::remove_file(&cover).unwrap();
        let mut inline = tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &pattern,
            &["-c", code, "a", "b"],
            sandbox.path(),
        );
        inline.env("PYTHONPATH", &programs);
        if fixed_mode {
            inline = fixed(inline);
        }
        let inline = run(inline, DEADLINE);
        assert_eq!(inline.code(), Some(0), "{}", inline.describe());
        let stdout = if fixed_mode {
            inline.stdout.as_str()
        } else {
            program_stdout(&inline, &cover, &pattern)
        };
        assert_eq!(stdout.trim(), want, "{}", inline.describe());
        let hits = read_cover(&cover);
        let kid_hits = &hits[kid.to_str().unwrap()];
        assert_eq!(kid_hits[&line_of(&kid, "total += i")], 4);
        assert_eq!(kid_hits[&line_of(&kid, "print(\"kid\"")], 0);
    }
}
per_python!(module_and_code_modes);

fn uncaught_exception_still_writes_coverage(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("fails.py");
    let cover = sandbox.cover();
    for fixed_mode in [false, true] {
        let _ = std::fs::remove_file(&cover);
        let mut cmd = tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &everything_under(&programs),
            &[script.to_str().unwrap()],
            &programs,
        );
        if fixed_mode {
            cmd = fixed(cmd);
        }
        let outcome = run(cmd, DEADLINE);
        assert_eq!(outcome.code(), Some(1), "{}", outcome.describe());
        assert_eq!(
            outcome.stderr.trim_end().lines().last(),
            Some("RuntimeError: boom"),
            "{}",
            outcome.describe()
        );
        // The original's traceback ran through its own frames; the fixed one shows the
        // program's frames only.
        assert_eq!(
            outcome.stderr.contains("trace.py"),
            !fixed_mode,
            "{}",
            outcome.stderr
        );
        let hits = read_cover(&cover);
        let lines = &hits[script.to_str().unwrap()];
        assert_eq!(lines[&line_of(&script, "raise RuntimeError")], 1);
        assert_eq!(lines[&line_of(&script, "return value")], 0);
    }
}
per_python!(uncaught_exception_still_writes_coverage);

fn program_namespace_and_os_errors(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("namespace.py");
    let script_arg = script.to_str().unwrap();
    let pattern = everything_under(&programs);
    let cover = sandbox.cover();
    let missing = sandbox.path().join("no-such-file");
    let missing_arg = missing.to_str().unwrap();
    let command =
        |args: &[&str]| tracer_command(&py.exe, &sandbox, &cover, &pattern, args, &programs);

    // As under the original: the program's globals are a plain dict while sys.modules["__main__"]
    // stays the tracer (pickling a class of the program fails), SystemExit(5) is swallowed, and
    // an uncaught OSError ends the run with the original's one-line message and status 1.
    let original = run(command(&[script_arg]), DEADLINE);
    assert_eq!(original.code(), Some(0), "{}", original.describe());
    assert_eq!(
        program_stdout(&original, &cover, &pattern),
        "path0 is the script's directory True\nown main module False\npickle failed PicklingError\n"
    );
    let original = run(command(&[script_arg, missing_arg]), DEADLINE);
    assert_eq!(original.code(), Some(1), "{}", original.describe());
    assert_eq!(
        original.stderr.trim_end(),
        format!(
            "Cannot run file {} because: [Errno 2] No such file or directory: {}",
            py_repr(script_arg),
            py_repr(missing_arg)
        ),
        "{}",
        original.describe()
    );
    let hits = read_cover(&cover);
    assert_eq!(
        hits[script_arg][&line_of(&script, "os.stat(sys.argv[1])")],
        1
    );

    // Fixed: a real __main__ module, and the OSError is an ordinary traceback.
    let fixed_run = run(fixed(command(&[script_arg])), DEADLINE);
    assert_eq!(fixed_run.code(), Some(0), "{}", fixed_run.describe());
    assert_eq!(
        fixed_run.stdout,
        "path0 is the script's directory True\nown main module True\npickled\n"
    );
    let fixed_run = run(fixed(command(&[script_arg, missing_arg])), DEADLINE);
    assert_eq!(fixed_run.code(), Some(1), "{}", fixed_run.describe());
    assert!(
        fixed_run.stderr.contains("Traceback") && fixed_run.stderr.contains("FileNotFoundError"),
        "{}",
        fixed_run.describe()
    );
}
per_python!(program_namespace_and_os_errors);

fn command_line_errors_and_ignored_flags(py: &HostPython) {
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let kid = programs.join("kid.py");
    let kid_arg = kid.to_str().unwrap();
    let tracer = sandbox.tracer();

    let mut unknown = Command::new(&py.exe);
    unknown.arg(&tracer).args(["--count", "--bogus", kid_arg]);
    let unknown = run(unknown, DEADLINE);
    assert_eq!(unknown.code(), Some(2), "{}", unknown.describe());
    assert!(unknown.stderr.contains("unrecognized option --bogus"));

    let mut missing = Command::new(&py.exe);
    missing.arg(&tracer).args(["--count", "-C", "x.cover"]);
    let missing = run(missing, DEADLINE);
    assert_eq!(missing.code(), Some(2), "{}", missing.describe());

    let mut no_module = Command::new(&py.exe);
    no_module
        .arg(&tracer)
        .args(["--count", "-C", "x.cover", "--include-pattern", ".*"])
        .args(["-m", "no_such_module_anywhere"]);
    let no_module = run(no_module, DEADLINE);
    assert_eq!(no_module.code(), Some(1), "{}", no_module.describe());
    assert!(no_module.stderr.contains("No module named"));

    // A pattern that is no regular expression is named in a one-line error, in both modes; the
    // original's exit status 1 is kept by default, a usage error (2) without compat.
    for (compat, status) in [("1", 1), ("0", 2)] {
        let mut bad_regex = Command::new(&py.exe);
        bad_regex
            .arg(&tracer)
            .args(["--count", "-C", "x.cover", "--include-pattern", "(unclosed"])
            .arg(kid_arg)
            .env(swtbench_tracer::COMPAT_ENV, compat)
            .current_dir(sandbox.path());
        let bad_regex = run(bad_regex, DEADLINE);
        assert_eq!(bad_regex.code(), Some(status), "{}", bad_regex.describe());
        assert!(
            bad_regex.stderr.contains("bad --include-pattern")
                && bad_regex.stderr.contains("(unclosed")
                && !bad_regex.stderr.contains("Traceback"),
            "compat={compat}: {}",
            bad_regex.describe()
        );
        assert!(
            !bad_regex.stdout.contains("kid 1"),
            "{}",
            bad_regex.describe()
        );
    }

    // Flags of the original command line are accepted; -C takes an attached value; include
    // patterns are joined with |, each alternative matching a whole path.
    let cover = sandbox.path().join("attached.cover");
    let stale_lock = sandbox.path().join("attached.cover.lock");
    std::fs::write(&stale_lock, "").unwrap();
    let mut flags = Command::new(&py.exe);
    flags
        .arg(&tracer)
        .args([
            "--count",
            "-t",
            "--missing",
            "-s",
            "-g",
            "-f",
            "counts",
            "-R",
        ])
        .arg(format!("-C{}", cover.display()))
        .args(["--include-pattern", "no/such/file\\.py"])
        .args(["--include-pattern", &common::regex_escape(kid_arg)])
        .args(["--", kid_arg, "2"])
        .current_dir(sandbox.path());
    let flags = run(flags, DEADLINE);
    assert_eq!(flags.code(), Some(0), "{}", flags.describe());
    let printed: Vec<&str> = flags.stdout.lines().collect();
    assert_eq!(printed.len(), 2, "{}", flags.describe());
    assert!(
        printed[0].starts_with("['--count', '-t', '--missing',") && printed[0].ends_with(", '--']"),
        "the option list as given, up to the program: {}",
        printed[0]
    );
    assert_eq!(printed[1], "kid 1");
    let hits = read_cover(&cover);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[kid_arg][&line_of(&kid, "total += i")], 2);
}
per_python!(command_line_errors_and_ignored_flags);

#[test]
fn every_host_python_runs_the_script_mode() {
    let pythons = common::host_pythons();
    if pythons.is_empty() {
        println!("SKIPPED: no Python under $(pyenv root)/versions");
        return;
    }
    for py in &pythons {
        script_mode_matches_reference(py);
    }
    for py in common::all_host_pythons() {
        if py.version < swtbench_tracer::MIN_PYTHON {
            println!(
                "note: Python {} is not supported by the tracer (it needs 3.5+)",
                py.name
            );
        }
    }
}
