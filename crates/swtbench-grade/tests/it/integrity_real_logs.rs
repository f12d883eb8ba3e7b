//! The integrity checks find nothing on honest logs: every real log under
//! `../shared/data/logs/` (test runs of an earlier SWE-bench evaluation, of gold patches and of
//! two agents' patches, run on the gold test files) passes every per-run check with the run's
//! test directives taken from the instance's gold test patch, as that harness selected them.
//!
//! One check is left out here: those logs come from an older harness that prints its own
//! `>>>>> Patch Apply Failed` / `>>>>> Tests Timed Out` lines, which swtbench's eval script never
//! prints (there the marker can only come from the tests).
//!
//! Every log with a result line appended after it (what a test printing from `atexit` leaves)
//! must be found, except in logs whose runner never printed its final summary (it crashed or
//! timed out there).
//!
//! Skipped (with a message) when the shared data is not present.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use swtbench_core::directives::{test_directives, DEFAULT_NON_TEST_EXTS};
use swtbench_core::RunKind;
use swtbench_grade::integrity::{check_run, Reason};
use swtbench_grade::logs::{parser_for, ExecMode};
use swtbench_grade::py;
use swtbench_grade::Parser;

fn shared_data() -> Option<PathBuf> {
    let dir = match std::env::var_os("SWTBENCH_SHARED_DATA") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    };
    dir.is_dir().then_some(dir)
}

fn gold_test_patches(data: &std::path::Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for file in ["swebench_lite_test.jsonl", "swebench_lite_dev.jsonl"] {
        let Ok(text) = std::fs::read_to_string(data.join("datasets").join(file)) else {
            continue;
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line).unwrap();
            out.insert(
                v["instance_id"].as_str().unwrap().to_string(),
                v["test_patch"].as_str().unwrap_or_default().to_string(),
            );
        }
    }
    out
}

#[test]
fn no_check_fires_on_a_real_log() {
    let Some(data) = shared_data() else {
        eprintln!("SKIPPED: shared data not found (set SWTBENCH_SHARED_DATA)");
        return;
    };
    let patches = gold_test_patches(&data);
    let expected = std::fs::read_to_string(data.join("logs/expected_parser_output.jsonl"))
        .expect("expected_parser_output.jsonl");
    let mut checked = 0;
    let mut with_directives = 0;
    let mut findings = Vec::new();
    let (mut caught, mut missed) = (0, Vec::new());
    for line in expected.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        let rel = v["log"].as_str().unwrap();
        let repo = v["repo"].as_str().unwrap();
        let id = v["instance_id"].as_str().unwrap();
        let bytes = std::fs::read(data.join("logs").join(rel)).unwrap();
        let (text, _) = py::read_text(&bytes);
        let parser = parser_for(repo, ExecMode::UnitTest).unwrap();
        let directives = patches
            .get(id)
            .map(|p| test_directives(p, repo, DEFAULT_NON_TEST_EXTS));
        with_directives += usize::from(directives.as_ref().is_some_and(|d| !d.is_empty()));
        for kind in [RunKind::PredPre, RunKind::PredPost] {
            let found = check_run(kind, &text, parser, directives.as_deref());
            for r in found.reasons {
                if !matches!(r, Reason::FailureMarker { .. }) && kind == RunKind::PredPost {
                    findings.push(format!("{rel}: {r}"));
                }
            }
        }
        // The same log with a result printed at exit, after the runner finished.
        let forged_line = match parser {
            Parser::Django => "test_forged (forged.tests.T) ... ok".to_string(),
            Parser::Sympy => "test_forged ok".to_string(),
            _ => {
                let file = directives
                    .as_ref()
                    .and_then(|d| d.first().cloned())
                    .unwrap_or_default();
                format!("PASSED {file}::test_forged")
            }
        };
        let forged = format!("{text}\n{forged_line}\n");
        let found = check_run(RunKind::PredPost, &forged, parser, directives.as_deref());
        if found
            .reasons
            .iter()
            .any(|r| matches!(r, Reason::AfterReport { test, .. } if test.contains("test_forged")))
        {
            caught += 1;
        } else if !text.contains("Tests Timed Out") {
            missed.push(rel.to_string());
        }
        checked += 1;
    }
    eprintln!(
        "a result printed after the runner's summary: found in {caught} of {checked} logs; \
         missed in {} (logs without a final summary line): {:?}",
        missed.len(),
        missed.iter().take(5).collect::<Vec<_>>()
    );
    assert!(
        caught * 10 >= checked * 9,
        "found in only {caught} of {checked}"
    );
    eprintln!(
        "{checked} real logs checked ({with_directives} with test directives): {} findings",
        findings.len()
    );
    assert!(checked >= 854, "only {checked} logs checked");
    assert!(
        with_directives >= 800,
        "only {with_directives} with directives"
    );
    assert!(
        findings.is_empty(),
        "{} findings on honest logs:\n{}",
        findings.len(),
        findings.join("\n")
    );
}
