//! Why an extraction attempt failed, as data (serialisable, so the reason can be recorded next to
//! the instance's logs and shown again when a cached result is reused).

use serde::{Deserialize, Serialize};

/// Why one patch type could not produce a patch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttemptError {
    #[error("no file section (`--- a/…` followed by `+++ b/…`) found in the model output")]
    NoFileSections,
    #[error("file section {index} has no adjacent `--- a/…` / `+++ b/…` header lines")]
    MalformedHeader { index: usize },
    #[error("refusing path {path:?}: {why}")]
    UnsafePath { path: String, why: String },
    #[error("{path}: no such file at the base commit")]
    FileNotFound { path: String },
    #[error("{path}: the diff creates this file, but it exists at the base commit")]
    FileExists { path: String },
    #[error(
        "{path}: the diff creates this file (`--- /dev/null`) but has no hunk with a \
         `@@ -a,b +c,d @@` header; nothing to create"
    )]
    NewFileWithoutHunks { path: String },
    #[error("git apply would fail: {message}")]
    GitApply { message: String },
    #[error(
        "the minimal patch has {bytes} bytes; the original harness hands git an unflushed \
         temporary file, so patches under {threshold} bytes are never applied \
         (the fixed vanilla style applies them)"
    )]
    UnflushedPatch { bytes: usize, threshold: usize },
    #[error("no custom-diff block (`diff` / path / rewrite|insert / line / code / `end diff`) found in the model output")]
    NoCustomBlocks,
    #[error("{path}: {reason}")]
    Custom { path: String, reason: String },
    #[error("{path}: {reason} (the original's script crashes here and writes no patch at all)")]
    CustomCrash { path: String, reason: String },
    #[error(
        "the custom-diff blocks hold more than {limit} bytes of code together (blocks overlap \
         when `end diff` lines are missing); giving up"
    )]
    BlocksTooLarge { limit: usize },
    #[error("{path}: the placed hunks grow the file to {bytes} bytes; giving up")]
    TooLarge { path: String, bytes: usize },
    #[error("the prediction is empty or holds only binary diffs: nothing to pass through")]
    NothingToPassThrough,
    #[error("the patch type applied but changed nothing")]
    NoChanges,
    #[error("{path} cannot be patched: {detail}")]
    NotReadable { path: String, detail: String },
    #[error("cannot read {path} at the base commit: {detail}")]
    Source { path: String, detail: String },
    #[error("cannot run the custom-patch script: {detail}")]
    Python { detail: String },
}

impl AttemptError {
    /// A failure of the machinery rather than of the model output: retrying later may succeed,
    /// so such a result must not be cached.
    pub fn is_infrastructure(&self) -> bool {
        matches!(
            self,
            AttemptError::Source { .. } | AttemptError::Python { .. }
        )
    }
}
