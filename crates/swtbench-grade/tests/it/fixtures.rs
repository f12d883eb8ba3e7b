//! Parser parity on the real logs kept in `tests/fixtures/` (no shared data needed): each parses
//! to exactly the map and `applied` flag the original returns for it, and the original's own
//! parser test cases pass.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use swtbench_grade::logs::{parse_log, parser_for, ExecMode};

use crate::parser_cases;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

#[test]
fn fixture_logs_parse_like_the_original() {
    let dir = fixtures().join("logs");
    let expected = std::fs::read_to_string(dir.join("expected.jsonl")).unwrap();
    let mut repos = std::collections::BTreeSet::new();
    let mut n = 0;
    for line in expected.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let rel = v["log"].as_str().unwrap();
        let repo = v["repo"].as_str().unwrap();
        let want: BTreeMap<String, String> = serde_json::from_value(v["tests"].clone()).unwrap();
        let bytes = std::fs::read(dir.join(rel)).unwrap();
        let got = parse_log(Some(&bytes), parser_for(repo, ExecMode::UnitTest).unwrap());
        let got_tests: BTreeMap<String, String> = got
            .tests
            .iter()
            .map(|(k, s)| (k.clone(), s.as_str().to_string()))
            .collect();
        assert_eq!(got_tests, want, "{rel} ({})", v["note"]);
        assert_eq!(got.applied, v["applied"].as_bool().unwrap(), "{rel}");
        repos.insert(repo.to_string());
        n += 1;
    }
    assert_eq!(n, 25);
    // Every repository of the original's parser map that the real data covers.
    assert_eq!(repos.len(), 18, "{repos:?}");
}

#[test]
fn original_parser_test_cases_from_the_fixture_copy() {
    let text = std::fs::read_to_string(fixtures().join("log_parser_fixtures.json")).unwrap();
    assert_eq!(parser_cases::check_all(&text), 10);
}
