//! The error of reading an option's name (coverage formula, exec mode, log parser, benchmark,
//! table format, grading version): which kind of name, what was given and, where the list is
//! short, what would have been understood. Every `FromStr` of this crate returns it, so a command
//! line, a spec table or a caller's settings report an unknown name the same way.

use std::fmt;

/// A name that is not one of the known ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What the name should have named (`log parser`, `exec mode`, …).
    pub kind: &'static str,
    /// The name as given (a log parser's without its `parse_log_` prefix).
    pub name: String,
    /// The known names, as a sentence fragment (`original or corrected`).
    pub expected: Option<&'static str>,
}

impl UnknownName {
    pub(crate) fn new(kind: &'static str, name: &str, expected: Option<&'static str>) -> Self {
        UnknownName {
            kind,
            name: name.to_string(),
            expected,
        }
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} `{}`", self.kind, self.name)?;
        if let Some(e) = self.expected {
            write!(f, " (expected {e})")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownName {}

#[cfg(test)]
mod tests {
    use crate::coverage::CoverageFormula;
    use crate::leaderboard::{Dataset, Format};
    use crate::logs::ExecMode;
    use crate::parsers::Parser;

    #[test]
    fn messages_name_the_kind_and_the_choices() {
        let msg = |e: super::UnknownName| e.to_string();
        assert_eq!(
            msg("x".parse::<CoverageFormula>().unwrap_err()),
            "unknown coverage formula `x` (expected original or corrected)"
        );
        assert_eq!(
            msg("Litee".parse::<Dataset>().unwrap_err()),
            "unknown dataset `Litee` (expected lite, verified or full)"
        );
        assert_eq!(
            msg("xml".parse::<Format>().unwrap_err()),
            "unknown format `xml` (expected github, latex, json or csv)"
        );
        assert_eq!(
            msg("parse_log_nose".parse::<Parser>().unwrap_err()),
            "unknown log parser `nose`"
        );
        assert_eq!(
            msg("docker".parse::<ExecMode>().unwrap_err()),
            "unknown exec mode `docker` (expected unit_test or reproduction_script)"
        );
    }
}
