//! Parity on the shared real data: every log under `../shared/data/logs/` parses to exactly the
//! map the original's parser produced, and every case of the original's parser tests passes.
//! Skipped (with a message) when the shared data is not present; the trimmed copies under
//! `tests/fixtures/` keep the suite meaningful without it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use swtbench_grade::logs::{parse_log, parser_for, ExecMode};

use crate::parser_cases;

fn shared_data() -> Option<PathBuf> {
    let dir = match std::env::var_os("SWTBENCH_SHARED_DATA") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    };
    dir.is_dir().then_some(dir)
}

fn as_strings(m: &swtbench_core::StatusMap) -> BTreeMap<String, String> {
    m.iter()
        .map(|(k, v)| (k.clone(), v.as_str().to_string()))
        .collect()
}

#[test]
fn every_shared_log_parses_like_the_original() {
    let Some(data) = shared_data() else {
        eprintln!("SKIPPED: shared data not found (set SWTBENCH_SHARED_DATA)");
        return;
    };
    let expected = std::fs::read_to_string(data.join("logs/expected_parser_output.jsonl"))
        .expect("expected_parser_output.jsonl");
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for line in expected.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("jsonl line");
        let rel = v["log"].as_str().expect("log");
        let repo = v["repo"].as_str().expect("repo");
        let want_tests: BTreeMap<String, String> =
            serde_json::from_value(v["tests"].clone()).expect("tests");
        let want_applied = v["applied"].as_bool().expect("applied");
        let bytes = std::fs::read(data.join("logs").join(rel)).expect("log file");
        let parser = parser_for(repo, ExecMode::UnitTest).expect("parser for repo");
        let got = parse_log(Some(&bytes), parser);
        let got_tests = as_strings(&got.tests);
        if got_tests != want_tests || got.applied != want_applied {
            let missing: Vec<_> = want_tests
                .iter()
                .filter(|(k, v)| got_tests.get(*k) != Some(v))
                .take(3)
                .collect();
            let extra: Vec<_> = got_tests
                .iter()
                .filter(|(k, _)| !want_tests.contains_key(*k))
                .take(3)
                .collect();
            mismatches.push(format!(
                "{rel}: applied {} vs {}; {} vs {} tests; wrong/missing {missing:?}; extra {extra:?}",
                got.applied,
                want_applied,
                got_tests.len(),
                want_tests.len()
            ));
        }
        checked += 1;
    }
    assert!(checked >= 854, "only {checked} logs checked");
    assert!(
        mismatches.is_empty(),
        "{} of {checked} logs differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn original_parser_test_cases() {
    let Some(data) = shared_data() else {
        eprintln!("SKIPPED: shared data not found (set SWTBENCH_SHARED_DATA)");
        return;
    };
    let text = std::fs::read_to_string(data.join("swtbench/log_parser_fixtures.json"))
        .expect("log_parser_fixtures.json");
    // The same cases as the fixture-only test (`fixtures.rs`) runs from the copy kept in the crate.
    let n = parser_cases::check_all(&text);
    assert_eq!(n, 10);
}
