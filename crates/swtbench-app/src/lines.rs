//! What a command says, for the caller to print in order: data for machines (stdout), lines for
//! people (stderr, left out by `--quiet`) and warnings (always shown).

/// One line of what a command says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Data(String),
    Info(String),
    Warn(String),
}

/// A remark made on the way, for the caller to show in order: a warning (always shown) or a
/// line of information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    Warn(String),
    Info(String),
}

impl From<Notice> for Line {
    fn from(n: Notice) -> Line {
        match n {
            Notice::Warn(w) => Line::Warn(w),
            Notice::Info(i) => Line::Info(i),
        }
    }
}
