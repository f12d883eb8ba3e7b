//! The grading crate reads what the tracer writes: tracer output from several processes (with the
//! option lists the tracer and its children print by default), placed in a synthetic test log the
//! way the eval script prints it (`+ cat coverage.cover` followed by the cover file), parses to
//! the same per-file, per-line hits.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::{self, read_cover, regex_escape, run, tracer_command, Sandbox};
use swtbench_grade::coverage::parse_dump;

#[test]
fn grading_parses_the_tracer_output() {
    let Some(py) = common::host_pythons().pop() else {
        println!("SKIPPED: no Python under $(pyenv root)/versions");
        return;
    };
    let sandbox = Sandbox::new();
    let programs = sandbox.copy_fixture("programs");
    let script = programs.join("spawn_original.py");
    let cover = sandbox.cover();
    let pattern = format!(
        "{}/(kid\\.py|spawn_original\\.py)",
        regex_escape(programs.to_str().unwrap())
    );
    let outcome = run(
        tracer_command(
            &py.exe,
            &sandbox,
            &cover,
            &pattern,
            &[script.to_str().unwrap()],
            &programs,
        ),
        Duration::from_secs(120),
    );
    assert_eq!(outcome.code(), Some(0), "{}", outcome.describe());
    let dump = std::fs::read_to_string(&cover).unwrap();
    assert_eq!(
        dump.lines().count(),
        3,
        "the parent and the two children that ran kid.py:\n{dump}"
    );
    assert!(
        outcome.stdout.starts_with("['--count'"),
        "{}",
        outcome.describe()
    );

    // Inside a container the repository is /testbed: give the files the paths they would have
    // there (the sandbox path is plain ASCII, so JSON holds it verbatim).
    let prefix = format!("{{\"{}/", programs.display());
    let in_container = dump.replace(&prefix, "{\"/testbed/");
    assert!(in_container.lines().all(|l| l.starts_with("{\"/testbed/")));
    let log = format!(
        "+ python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(kid\\.py|spawn_original\\.py)' spawn_original.py\n\
         {stdout}\
         + cat coverage.cover\n\
         {in_container}\
         + git checkout 0123456789abcdef0123456789abcdef01234567 kid.py spawn_original.py\n\
         Updated 0 paths from 0123456\n",
        stdout = outcome.stdout,
    );
    let parsed = parse_dump(Some(log.as_bytes()));

    let mut expected: BTreeMap<String, BTreeMap<i64, i64>> = BTreeMap::new();
    for (file, lines) in read_cover(&cover) {
        let relative = file
            .strip_prefix(&format!("{}/", programs.display()))
            .unwrap()
            .to_string();
        expected.insert(
            relative,
            lines
                .into_iter()
                .map(|(l, h)| (i64::from(l), h as i64))
                .collect(),
        );
    }
    assert_eq!(parsed, expected);
    assert_eq!(
        parsed.keys().collect::<Vec<_>>(),
        ["kid.py", "spawn_original.py"],
        "both files, child entries summed into one"
    );
    let kid_loop = common::line_of(&programs.join("kid.py"), "total += i") as i64;
    assert_eq!(parsed["kid.py"][&kid_loop], 2 + 6);
}
