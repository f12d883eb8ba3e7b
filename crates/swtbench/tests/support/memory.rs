#![allow(dead_code)] // each of the bench and the test uses part of it

//! What the memory bench (`benches/memory.rs`) and the memory engine test (`engine_memory.rs`)
//! share beyond the engine fixture (`tests/engine_fixture`, which both also include): the two
//! kinds of oversized predictions, and a `swtbench run` whose peak resident set size is read from
//! the kernel (`VmHWM`).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::engine_fixture::{new_file_patch, spec_table, Fixture};

/// The instance every measurement runs (pytest; six runs).
pub const INSTANCE: &str = "swtfix__calc-1";

/// Writes a one-line predictions file for [`INSTANCE`] with `patch`; returns its path.
fn write_prediction(fx: &Fixture, name: &str, patch: &str) -> String {
    let record = serde_json::json!({
        "instance_id": INSTANCE,
        "model_name_or_path": "swtbench-fixture-model",
        "model_patch": patch,
    });
    let path = fx.root.join(format!("{name}.jsonl"));
    std::fs::write(&path, format!("{record}\n")).unwrap();
    path.display().to_string()
}

/// A prediction of about `bytes` bytes: a passing test behind that much of comment lines.
pub fn big_patch_prediction(fx: &Fixture, bytes: usize) -> String {
    let comment = format!("# {}", "x".repeat(76));
    let mut lines = vec![comment; bytes / 80];
    for l in [
        "from calc.ops import add, sub",
        "",
        "",
        "def test_sub_positive():",
        "    assert sub(7, 2) == 5",
    ] {
        lines.push(l.to_string());
    }
    write_prediction(
        fx,
        "big-patch",
        &new_file_patch("test_model_big.py", &lines),
    )
}

/// The line a loud test prints (100 bytes with its newline).
pub fn loud_line() -> String {
    "y".repeat(99)
}

/// Lines a loud test prints at a time (about 1 MiB).
pub const LOUD_CHUNK_LINES: usize = 10486;

/// How many chunks of [`LOUD_CHUNK_LINES`] make about `bytes` bytes.
pub fn loud_chunks(bytes: usize) -> usize {
    (bytes / (LOUD_CHUNK_LINES * 100)).max(1)
}

/// A prediction whose test prints about `bytes` bytes of [`loud_line`]s
/// ([`loud_chunks`] × [`LOUD_CHUNK_LINES`] lines), which pytest shows in its `-rA` summary.
pub fn loud_prediction(fx: &Fixture, bytes: usize) -> String {
    let lines: Vec<String> = [
        "import sys",
        "",
        "",
        "def test_loud():",
        &format!("    chunk = ('y' * 99 + '\\n') * {LOUD_CHUNK_LINES}"),
        &format!("    for _ in range({}):", loud_chunks(bytes)),
        "        sys.stdout.write(chunk)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    write_prediction(fx, "loud", &new_file_patch("test_model_loud.py", &lines))
}

/// Runs `swtbench run` on [`INSTANCE`] and returns its exit code and peak RSS in bytes.
pub fn run_measured(
    bin: &Path,
    fx: &Fixture,
    predictions: &str,
    run_id: &str,
    out_dir: &Path,
    extra: &[&str],
) -> (i32, u64) {
    let child = Command::new(bin)
        .arg("run")
        .arg("--dataset")
        .arg(fx.data.join("dataset.jsonl"))
        .args(["--predictions", predictions])
        .arg("--repo-mirror")
        .arg(fx.data.join("mirrors"))
        .arg("--spec-table")
        .arg(spec_table())
        .args(["--run-id", run_id, "--instance-ids", INSTANCE])
        .arg("--output-dir")
        .arg(out_dir)
        .args(["--cache-level", "instance", "--timeout", "600"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    peak_of(child)
}

/// Waits for `child` and returns its exit code and the peak of its resident set size, in bytes:
/// the kernel's high-water mark (`VmHWM` in `/proc/<pid>/status`), read every 10 ms while it
/// runs (it only grows, so only growth in the last 10 ms could be missed). Safe code only, so
/// no `wait4`.
pub fn peak_of(mut child: std::process::Child) -> (i32, u64) {
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    loop {
        if let Ok(text) = std::fs::read_to_string(&status_path) {
            if let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kb * 1024);
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code().unwrap_or(-1), peak);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
