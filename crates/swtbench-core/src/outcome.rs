//! The kinds of outcome an instance of an evaluation ends with, as the runner decides them and as
//! its per-instance summary (`swtbench_instance.json`, `outcome.kind`) records them. The runner's
//! outcome type carries the details (why a skip, which error); readers of a run tree (the HTML
//! page) match on this kind instead of comparing strings.

/// How an instance ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutcomeKind {
    Resolved,
    Unresolved,
    /// Graded as an empty patch without running anything.
    EmptyPatch,
    /// Not evaluated (a plan-time cause, an extraction failure).
    Skipped,
    /// Something failed (image build, container, …); a rerun retries it.
    Error,
    /// The run was cancelled before the instance finished.
    Interrupted,
}

impl OutcomeKind {
    pub const ALL: [OutcomeKind; 6] = [
        OutcomeKind::Resolved,
        OutcomeKind::Unresolved,
        OutcomeKind::EmptyPatch,
        OutcomeKind::Skipped,
        OutcomeKind::Error,
        OutcomeKind::Interrupted,
    ];

    /// The name written as `outcome.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Resolved => "resolved",
            OutcomeKind::Unresolved => "unresolved",
            OutcomeKind::EmptyPatch => "empty_patch",
            OutcomeKind::Skipped => "skipped",
            OutcomeKind::Error => "error",
            OutcomeKind::Interrupted => "interrupted",
        }
    }

    /// The kind a recorded `outcome.kind` names; `None` for a name this version does not know.
    pub fn parse(name: &str) -> Option<OutcomeKind> {
        OutcomeKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_none() {
        for k in OutcomeKind::ALL {
            assert_eq!(OutcomeKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(OutcomeKind::parse("exploded"), None);
    }
}
