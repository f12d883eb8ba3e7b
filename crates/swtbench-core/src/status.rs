//! Test statuses as the log parsers report them.
//!
//! The original parsers map test names to the status *string* they read from the log. Almost always
//! that is one of the four words below, but some parser quirks produce other strings (the pytest
//! parser turns `ERROR: file or directory not found: x` into the status `ERROR:`). For score parity
//! such strings are kept verbatim in [`TestStatus::Other`]; grading treats everything that is not
//! `PASSED` or `FAILED` alike.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One test's status in one run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TestStatus {
    Passed,
    Failed,
    Skipped,
    Error,
    /// Any other status string a parser produced (kept for parity with the original's output).
    Other(String),
}

impl TestStatus {
    pub fn as_str(&self) -> &str {
        match self {
            TestStatus::Passed => "PASSED",
            TestStatus::Failed => "FAILED",
            TestStatus::Skipped => "SKIPPED",
            TestStatus::Error => "ERROR",
            TestStatus::Other(s) => s,
        }
    }

    /// Parses the status word exactly as written in a log (case-sensitive).
    pub fn from_word(s: &str) -> TestStatus {
        match s {
            "PASSED" => TestStatus::Passed,
            "FAILED" => TestStatus::Failed,
            "SKIPPED" => TestStatus::Skipped,
            "ERROR" => TestStatus::Error,
            other => TestStatus::Other(other.to_string()),
        }
    }
}

impl fmt::Display for TestStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TestStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TestStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(TestStatus::from_word(&s))
    }
}

/// Test name → status, sorted by name so every rendering is stable.
pub type StatusMap = BTreeMap<String, TestStatus>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_known_and_other_words() {
        for w in ["PASSED", "FAILED", "SKIPPED", "ERROR", "ERROR:", "xfail"] {
            let st = TestStatus::from_word(w);
            assert_eq!(st.as_str(), w);
            let json = serde_json::to_string(&st).unwrap_or_default();
            assert_eq!(json, format!("\"{w}\""));
        }
        assert_eq!(
            TestStatus::from_word("passed"),
            TestStatus::Other("passed".into())
        );
    }
}
