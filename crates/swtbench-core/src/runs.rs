//! The six runs the harness performs per instance (§0 of the behaviour reference).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which of the six runs: whose tests (pred/gold/base) and whether the gold code fix is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    PredPre,
    PredPost,
    GoldPre,
    GoldPost,
    BasePre,
    BasePost,
}

impl RunKind {
    /// All six, in the order the original runs them.
    pub const ALL: [RunKind; 6] = [
        RunKind::PredPre,
        RunKind::PredPost,
        RunKind::GoldPre,
        RunKind::GoldPost,
        RunKind::BasePre,
        RunKind::BasePost,
    ];

    /// `pred_pre`, `gold_post`, …: the name used in directory names and file names.
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::PredPre => "pred_pre",
            RunKind::PredPost => "pred_post",
            RunKind::GoldPre => "gold_pre",
            RunKind::GoldPost => "gold_post",
            RunKind::BasePre => "base_pre",
            RunKind::BasePost => "base_post",
        }
    }

    pub fn parse(s: &str) -> Option<RunKind> {
        RunKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether the gold code fix is applied before the tests run.
    pub fn is_post(self) -> bool {
        matches!(
            self,
            RunKind::PredPost | RunKind::GoldPost | RunKind::BasePost
        )
    }

    /// Runs 3–6 are shared across run ids and models (cached by content).
    pub fn is_shared(self) -> bool {
        !matches!(self, RunKind::PredPre | RunKind::PredPost)
    }

    /// The `patch_id` the original uses: `pred_pre__<model>` for prediction runs, the bare name else.
    pub fn patch_id(self, model_dir: &str) -> String {
        if self.is_shared() {
            self.as_str().to_string()
        } else {
            format!("{}__{}", self.as_str(), model_dir)
        }
    }
}

impl fmt::Display for RunKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_patch_ids() {
        for k in RunKind::ALL {
            assert_eq!(RunKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(RunKind::PredPre.patch_id("gpt__4"), "pred_pre__gpt__4");
        assert_eq!(RunKind::BasePost.patch_id("gpt__4"), "base_post");
        assert!(RunKind::GoldPost.is_post() && !RunKind::GoldPre.is_post());
    }
}
