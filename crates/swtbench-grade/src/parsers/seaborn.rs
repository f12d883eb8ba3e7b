//! `parse_log_seaborn`: only PASSED and FAILED are ever recorded (ERROR and SKIPPED lines are
//! ignored, as in the original). Checked in this order per line:
//! 1. starts with `FAILED` → second token FAILED;
//! 2. contains ` PASSED ` and its second token is `PASSED` → first token PASSED;
//! 3. starts with `PASSED` → second token PASSED.
//!
//! The original raises `IndexError` on a line with a single token in cases 1–3; such lines are
//! skipped.

use swtbench_core::{StatusMap, TestStatus};

use crate::py::first_two_tokens;

pub fn parse_seaborn(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        if line.starts_with("FAILED") {
            if let (_, Some(name)) = first_two_tokens(line) {
                map.insert(name.to_string(), TestStatus::Failed);
            }
        } else if line.contains(" PASSED ") {
            if let (Some(name), Some("PASSED")) = first_two_tokens(line) {
                map.insert(name.to_string(), TestStatus::Passed);
            }
        } else if line.starts_with("PASSED") {
            if let (_, Some(name)) = first_two_tokens(line) {
                map.insert(name.to_string(), TestStatus::Passed);
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_passed_and_failed() {
        let log = "tests/test_a.py::test_x PASSED [ 10%]\n\
tests/test_a.py::test_y FAILED [ 20%]\n\
PASSED tests/test_a.py::test_z\n\
FAILED tests/test_a.py::test_y - AssertionError\n\
ERROR tests/test_a.py::test_e - ImportError\n\
SKIPPED [1] tests/test_a.py:3: skip\n\
PASSED\n\
\x20PASSED \n\
something PASSED is second\n\
not PASSED: second\n";
        let map = parse_seaborn(log);
        let want: StatusMap = [
            ("tests/test_a.py::test_x", TestStatus::Passed),
            ("tests/test_a.py::test_z", TestStatus::Passed),
            ("tests/test_a.py::test_y", TestStatus::Failed),
            ("something", TestStatus::Passed),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(map, want);
    }
}
