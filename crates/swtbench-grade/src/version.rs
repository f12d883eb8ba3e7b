//! Which release of the original harness grading follows ([`GradingVersion`]).
//!
//! The default is the original's current grading (release 1.3.0, September 2025). Release 1.2.0
//! (March 2025) graded the published results evaluated before September 2025 and differs in two
//! places, both reproduced by [`GradingVersion::V1_2`]:
//!
//! - the sympy parser's result-line regex had no trailing `\s` (`test_(\S*)\s+(E|F|ok)`): on sympy
//!   1.0 and 1.1, a failure header of 80 characters or more is followed directly by the
//!   traceback's `  File "…"` line, and the `F` of `File` made the header's `<file>.py:<test>` a
//!   FAILED test of its own ([`crate::parsers::Parser::Sympy12`]);
//! - F→X and X→X were counted as `FAIL_TO_FAIL` instead of `UNMATCHED`
//!   ([`crate::transitions::Transitions::between_for`]), so such a test (the phantom test above
//!   is one: it is only printed while the test fails) made an instance unresolved.
//!
//! Everything else between a log and a score is the same in both releases.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::parsers::Parser;

/// The name of the run report's `run_parameters` entry that records a grading version other than
/// the default.
pub const RUN_PARAMETER: &str = "grading version";

/// The release of the original harness whose grading is reproduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum GradingVersion {
    /// Release 1.3.0 (September 2025), the original's current grading: the default.
    #[default]
    #[serde(rename = "1.3")]
    V1_3,
    /// Release 1.2.0 (March 2025), which graded the results published before September 2025.
    #[serde(rename = "1.2")]
    V1_2,
}

impl GradingVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            GradingVersion::V1_3 => "1.3",
            GradingVersion::V1_2 => "1.2",
        }
    }

    /// Whether this is the default (the original's current grading).
    pub fn is_default(self) -> bool {
        self == GradingVersion::default()
    }

    /// The run report's `run_parameters` entry ([`RUN_PARAMETER`]) for this version; none for the
    /// default, so that a run graded as the original grades now keeps the original's parameters.
    pub fn run_parameter(self) -> Option<(String, String)> {
        (!self.is_default()).then(|| {
            (
                RUN_PARAMETER.to_string(),
                format!(
                    "{self} (graded as the original's release {self}.0 grades; docs/deviations.md)"
                ),
            )
        })
    }

    /// The parser this release reads logs with where the current release uses `parser`.
    pub fn parser(self, parser: Parser) -> Parser {
        match (self, parser) {
            (GradingVersion::V1_2, Parser::Sympy) => Parser::Sympy12,
            (_, p) => p,
        }
    }
}

impl fmt::Display for GradingVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for GradingVersion {
    type Err = crate::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "1.3" | "1.3.0" => Ok(GradingVersion::V1_3),
            "1.2" | "1.2.0" => Ok(GradingVersion::V1_2),
            other => Err(crate::UnknownName::new(
                "grading version",
                other,
                Some("1.3 or 1.2"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_parsers() {
        assert_eq!(GradingVersion::default(), GradingVersion::V1_3);
        for v in [GradingVersion::V1_3, GradingVersion::V1_2] {
            assert_eq!(v.as_str().parse::<GradingVersion>(), Ok(v));
            assert_eq!(
                serde_json::to_string(&v).unwrap(),
                format!("\"{}\"", v.as_str())
            );
        }
        assert_eq!("1.2.0".parse::<GradingVersion>(), Ok(GradingVersion::V1_2));
        assert_eq!(
            "1.1".parse::<GradingVersion>().unwrap_err().to_string(),
            "unknown grading version `1.1` (expected 1.3 or 1.2)"
        );
        assert_eq!(GradingVersion::V1_3.run_parameter(), None);
        assert_eq!(
            GradingVersion::V1_2.run_parameter(),
            Some((
                "grading version".to_string(),
                "1.2 (graded as the original's release 1.2.0 grades; docs/deviations.md)"
                    .to_string()
            ))
        );
        assert_eq!(GradingVersion::V1_2.parser(Parser::Sympy), Parser::Sympy12);
        assert_eq!(GradingVersion::V1_3.parser(Parser::Sympy), Parser::Sympy);
        for p in Parser::ALL.into_iter().filter(|p| *p != Parser::Sympy) {
            assert_eq!(GradingVersion::V1_2.parser(p), p);
        }
    }
}
