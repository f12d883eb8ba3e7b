//! docs/commands.md is the command reference generated from the command-line definitions
//! (`swtbench help-markdown`): this test fails when the file and the binary's `--help` differ, and
//! `SWTBENCH_BLESS=1 cargo test -p swtbench --test it cli_docs` writes the file anew.

use std::path::PathBuf;

fn reference_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/commands.md")
}

fn generated() -> String {
    let out = crate::support::binary::command()
        .arg("help-markdown")
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "swtbench help-markdown failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn commands_md_is_the_help_of_every_command() {
    let path = reference_path();
    let now = generated();
    if std::env::var_os("SWTBENCH_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    if written != now {
        let line = written
            .lines()
            .zip(now.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| written.lines().count().min(now.lines().count()));
        panic!(
            "docs/commands.md is not the command reference the binary prints (first difference at \
             line {}: file {:?}, binary {:?}).\nIt is generated from the clap definitions; do not \
             edit it by hand. Regenerate it with:\n    SWTBENCH_BLESS=1 cargo test -p swtbench \
             --test it cli_docs",
            line + 1,
            written.lines().nth(line).unwrap_or("<end of file>"),
            now.lines().nth(line).unwrap_or("<end of output>"),
        );
    }
}

#[test]
fn every_command_has_a_section() {
    let now = generated();
    for cmd in [
        "validate",
        "datasets",
        "parse-log",
        "grade",
        "verify",
        "report",
        "spec",
        "dataset",
        "run",
        "images",
        "envs",
        "clean",
        "slurm",
        "extract",
        "k8s",
    ] {
        assert!(
            now.contains(&format!("\n## swtbench {cmd}\n")),
            "no section for swtbench {cmd}"
        );
    }
    assert!(
        !now.contains("## swtbench help-markdown"),
        "the hidden command is listed"
    );
}
