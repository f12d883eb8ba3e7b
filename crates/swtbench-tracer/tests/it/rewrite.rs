//! The tracer's own command line and its rewriting of child commands (argv lists, Python option
//! clusters, shell strings, Popen arguments), checked case by case on the oldest and newest host
//! Pythons.

use std::process::Command;
use std::time::Duration;

use crate::common::{self, run, Sandbox};

#[test]
fn command_line_and_child_rewriting_cases() {
    let pythons = common::host_pythons();
    if pythons.is_empty() {
        println!("SKIPPED: no Python under $(pyenv root)/versions");
        return;
    }
    let sandbox = Sandbox::new();
    let mut chosen = vec![pythons[0].clone()];
    if pythons.len() > 1 {
        chosen.push(pythons[pythons.len() - 1].clone());
    }
    for py in chosen {
        let mut cmd = Command::new(&py.exe);
        cmd.arg(common::fixtures().join("rewrite_cases.py"))
            .arg(sandbox.tracer());
        let outcome = run(cmd, Duration::from_secs(60));
        assert_eq!(
            outcome.code(),
            Some(0),
            "{}: {}",
            py.name,
            outcome.describe()
        );
    }
}
