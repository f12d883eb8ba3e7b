//! The algorithms that turn raw model output into an applicable `git diff`, apart from any I/O.
//!
//! Models do not always write clean diffs. The original harness offers three readings of their
//! output, tried in the order the user gives (`--patch-types`) until one succeeds:
//!
//! * [`PatchType::Vanilla`] — the unified diff, cut down to a "minimal patch" and applied with
//!   `git apply` rules ([`vanilla`], [`gitapply`]);
//! * [`PatchType::Fuzzy`] — unified-diff hunks placed where their context is most similar
//!   ([`fuzzy`]);
//! * [`PatchType::Custom`] — the ZeroShotPlus block format that rewrites or appends whole
//!   functions and classes, applied by our stdlib-only Python script ([`custom`]).
//!
//! Vanilla and fuzzy are computed here over the file contents at the base commit, read through a
//! [`FileSource`]; custom hands the contents to a [`PythonRunner`]. The attempts share one work
//! tree, as in the original: in a type's parity style a failed attempt keeps the edits it made
//! before failing (later types build on them, and when every type fails their diff is the patch);
//! in the other styles a failed attempt leaves nothing behind (see [`ExtractOptions`]). The result
//! is rendered as a proper git diff, created files included ([`gitdiff`]).
//!
//! This crate is pure: it must not touch files, processes, the environment or the network. Where
//! the base files come from (a checked-out tree, a git mirror, a container) and which interpreter
//! runs the custom script are the callers' business: they implement [`FileSource`] and
//! [`PythonRunner`] (`swtbench-extract` has the host-side adapters and the on-disk cache).

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod compact;
pub mod custom;
mod error;
pub mod fuzzy;
pub mod gitapply;
pub mod gitdiff;
pub mod key;
mod levenshtein;
pub mod paths;
mod pytext;
pub mod python;
pub mod sections;
pub mod source;
pub mod vanilla;
mod workspace;
mod xmyers;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use custom::BlockOrder;
pub use error::AttemptError;
pub use gitdiff::FileChange;
pub use python::{PythonError, PythonOutput, PythonRunner, CUSTOM_PATCH_SCRIPT};
pub use source::{FileSource, MemorySource, SourceError, SourceErrorKind};

use workspace::{BaseFiles, Workspace};

/// A way of reading model output as a patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatchType {
    Vanilla,
    Fuzzy,
    Custom,
}

impl PatchType {
    pub const ALL: [PatchType; 3] = [PatchType::Vanilla, PatchType::Fuzzy, PatchType::Custom];

    pub fn as_str(self) -> &'static str {
        match self {
            PatchType::Vanilla => "vanilla",
            PatchType::Fuzzy => "fuzzy",
            PatchType::Custom => "custom",
        }
    }
}

impl fmt::Display for PatchType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of a setting's values (`--patch-types`, the `--*-style` flags).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {value:?} (expected {expected})")]
pub struct UnknownNameError {
    /// What was being named (`patch type`, `fuzzy patch style`…).
    pub what: &'static str,
    pub value: String,
    /// The accepted names, for people.
    pub expected: &'static str,
}

impl UnknownNameError {
    fn new(what: &'static str, value: &str, expected: &'static str) -> Self {
        UnknownNameError {
            what,
            value: value.to_string(),
            expected,
        }
    }
}

impl FromStr for PatchType {
    type Err = UnknownNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PatchType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| UnknownNameError::new("patch type", s, "vanilla, fuzzy or custom"))
    }
}

/// Whether the original would run an extraction at all: with exactly `[vanilla]` (the default) it
/// uses the prediction as it is, minus binary sections ([`vanilla::passthrough`]).
pub fn needs_extraction(patch_types: &[PatchType]) -> bool {
    patch_types != [PatchType::Vanilla]
}

/// How custom blocks are written into the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CustomStyle {
    /// As the original: the whole file is re-emitted with `ast.unparse` (comments and formatting
    /// are lost everywhere, no final newline). Needs Python 3.9+ where the script runs.
    #[default]
    Parity,
    /// Only the spans of the replaced definitions change; inserts are appended as written.
    Preserve,
}

impl CustomStyle {
    pub fn as_str(self) -> &'static str {
        match self {
            CustomStyle::Parity => "parity",
            CustomStyle::Preserve => "preserve",
        }
    }
}

impl FromStr for CustomStyle {
    type Err = UnknownNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "parity" => Ok(CustomStyle::Parity),
            "preserve" => Ok(CustomStyle::Preserve),
            _ => Err(UnknownNameError::new(
                "custom patch style",
                s,
                "parity or preserve",
            )),
        }
    }
}

/// How the vanilla format's minimal patch is handed to `git apply`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VanillaStyle {
    /// As the original: it writes the minimal patch to a temporary file and runs `git apply` on
    /// it without flushing, so git sees an empty file unless the patch has at least
    /// [`vanilla::UNFLUSHED_THRESHOLD`] bytes (the text layer's buffer). Smaller patches fail.
    #[default]
    Parity,
    /// The minimal patch is applied whatever its size.
    Fixed,
}

impl VanillaStyle {
    pub fn as_str(self) -> &'static str {
        match self {
            VanillaStyle::Parity => "parity",
            VanillaStyle::Fixed => "fixed",
        }
    }
}

impl FromStr for VanillaStyle {
    type Err = UnknownNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "parity" => Ok(VanillaStyle::Parity),
            "fixed" => Ok(VanillaStyle::Fixed),
            _ => Err(UnknownNameError::new(
                "vanilla patch style",
                s,
                "parity or fixed",
            )),
        }
    }
}

/// How fuzzy hunks are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FuzzyStyle {
    /// As the original, including its edge cases (see [`fuzzy`]).
    #[default]
    Parity,
    /// No truncation to the end of the file, final newline kept (see [`fuzzy`]).
    Fixed,
}

impl FuzzyStyle {
    pub fn as_str(self) -> &'static str {
        match self {
            FuzzyStyle::Parity => "parity",
            FuzzyStyle::Fixed => "fixed",
        }
    }
}

impl FromStr for FuzzyStyle {
    type Err = UnknownNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "parity" => Ok(FuzzyStyle::Parity),
            "fixed" => Ok(FuzzyStyle::Fixed),
            _ => Err(UnknownNameError::new(
                "fuzzy patch style",
                s,
                "parity or fixed",
            )),
        }
    }
}

/// Everything that changes what an extraction produces (and so belongs in its cache key).
///
/// Each type's style decides all of that type's departures from the original: the parity styles
/// (the defaults) reproduce it, the others fix what they fix, including
///
/// * new files: only the fixed vanilla and fuzzy styles read `--- /dev/null` sections
///   ([`ExtractOptions::new_files`]); in parity such a section is not a section, as in the
///   original (its hunks fold into the previous file's section, or are not seen at all);
/// * custom block order: parity compares the line fields as strings, preserve as numbers
///   ([`ExtractOptions::block_order`]);
/// * failed attempts: in parity a failed fuzzy or custom attempt keeps the edits it made before
///   failing, later types build on them and, when every type fails, their diff is the patch, as
///   in the original's work tree; a type that applies without changing anything ends the search;
///   where the original's script crashes (a file section whose `---`/`+++` lines are not
///   adjacent; in custom an empty `rewrite` block, a null byte, exhausted recursion) the
///   extraction ends with no patch at all ([`ExtractOptions::parity`]). Otherwise a failed attempt leaves nothing behind and a type
///   that changes nothing lets the next one try.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ExtractOptions {
    pub vanilla_style: VanillaStyle,
    pub custom_style: CustomStyle,
    pub fuzzy_style: FuzzyStyle,
}

impl ExtractOptions {
    /// Whether `patch_type` runs in its parity style.
    pub fn parity(&self, patch_type: PatchType) -> bool {
        match patch_type {
            PatchType::Vanilla => self.vanilla_style == VanillaStyle::Parity,
            PatchType::Fuzzy => self.fuzzy_style == FuzzyStyle::Parity,
            PatchType::Custom => self.custom_style == CustomStyle::Parity,
        }
    }

    /// Whether `--- /dev/null` sections are read (vanilla and fuzzy): not in parity, where the
    /// original's section pattern needs `--- a/`.
    pub fn new_files(&self, patch_type: PatchType) -> bool {
        !self.parity(patch_type)
    }

    /// How custom blocks are ordered: as the original (strings) in parity.
    pub fn block_order(&self) -> BlockOrder {
        match self.custom_style {
            CustomStyle::Parity => BlockOrder::Text,
            CustomStyle::Preserve => BlockOrder::Numeric,
        }
    }
}

/// What happened to one patch type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// It produced these changed files (repository-relative, sorted).
    Applied {
        files: Vec<String>,
    },
    Failed {
        error: AttemptError,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub patch_type: PatchType,
    #[serde(flatten)]
    pub outcome: AttemptOutcome,
    /// A failed attempt in its parity style: the files it had edited before failing, whose
    /// edits stay for the later types and the final diff (as in the original's work tree).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_edits: Vec<String>,
}

impl Attempt {
    fn failed(patch_type: PatchType, error: AttemptError) -> Attempt {
        Attempt {
            patch_type,
            outcome: AttemptOutcome::Failed { error },
            kept_edits: Vec::new(),
        }
    }
}

/// The result of an extraction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extraction {
    /// The patch as a git diff; empty when every attempt failed and none kept edits (see
    /// [`Extraction::is_partial`]).
    pub patch: String,
    /// The patch type that produced `patch`; `None` when every attempt failed.
    pub patch_type_used: Option<PatchType>,
    /// Every attempt made, in order (the ones after a success are not made).
    pub attempts: Vec<Attempt>,
    /// The changed files behind `patch`.
    #[serde(skip)]
    pub files: Vec<FileChange>,
}

impl Extraction {
    pub fn succeeded(&self) -> bool {
        self.patch_type_used.is_some()
    }

    /// Every type failed, but parity-style attempts kept edits and `patch` is their diff: the
    /// original runs such a patch, so `swtbench run` does too.
    pub fn is_partial(&self) -> bool {
        self.patch_type_used.is_none() && !self.patch.is_empty()
    }

    /// There is a patch to run (a successful type or kept edits).
    pub fn has_patch(&self) -> bool {
        !self.patch.is_empty()
    }

    /// One line per failed attempt, `type: reason`.
    pub fn failure_summary(&self) -> String {
        self.attempts
            .iter()
            .filter_map(|a| match &a.outcome {
                AttemptOutcome::Failed { error } if a.kept_edits.is_empty() => {
                    Some(format!("{}: {error}", a.patch_type))
                }
                AttemptOutcome::Failed { error } => Some(format!(
                    "{}: {error} (its edits to {} are kept, as the original keeps them)",
                    a.patch_type,
                    a.kept_edits.join(", ")
                )),
                AttemptOutcome::Applied { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// False when an attempt failed for reasons outside the model output (unreadable files,
    /// no interpreter): such a result must not be reused.
    pub fn is_cacheable(&self) -> bool {
        !self.attempts.iter().any(
            |a| matches!(&a.outcome, AttemptOutcome::Failed { error } if error.is_infrastructure()),
        )
    }
}

fn attempt(
    patch_type: PatchType,
    model_output: &str,
    ws: &mut Workspace<'_>,
    python: Option<&dyn PythonRunner>,
    options: &ExtractOptions,
) -> Result<(), AttemptError> {
    match patch_type {
        PatchType::Vanilla => {
            let minimal = vanilla::minimal_patch(model_output, options.new_files(patch_type))
                .map_err(|vanilla::MinimalPatchError::MalformedHeader { index }| {
                    AttemptError::MalformedHeader { index }
                })?;
            if options.vanilla_style == VanillaStyle::Parity
                && minimal.len() < vanilla::UNFLUSHED_THRESHOLD
            {
                return Err(AttemptError::UnflushedPatch {
                    bytes: minimal.len(),
                    threshold: vanilla::UNFLUSHED_THRESHOLD,
                });
            }
            gitapply::apply(&minimal, ws)?;
        }
        PatchType::Fuzzy => {
            let files = fuzzy::parse(model_output, options.new_files(patch_type))?;
            fuzzy::apply(&files, ws, options.fuzzy_style)?;
        }
        PatchType::Custom => {
            custom::apply(
                model_output,
                ws,
                python,
                options.custom_style,
                options.block_order(),
            )?;
        }
    }
    Ok(())
}

/// Tries each patch type in order until one produces a change (see [`ExtractOptions`] for what a
/// failed attempt leaves to the next one).
///
/// This is the extraction proper, whatever the list; callers that follow the original's rule
/// for exactly `[vanilla]` ([`needs_extraction`] is false) use [`passthrough_extraction`] then.
///
/// `python` is needed only for [`PatchType::Custom`]; without it that attempt fails with a
/// recorded reason.
pub fn extract(
    model_output: &str,
    patch_types: &[PatchType],
    source: &dyn FileSource,
    python: Option<&dyn PythonRunner>,
    options: &ExtractOptions,
) -> Extraction {
    // The original reads the answer back from a file in text mode: universal newlines.
    let normalised;
    let model_output = if model_output.contains('\r') {
        normalised = model_output.replace("\r\n", "\n").replace('\r', "\n");
        normalised.as_str()
    } else {
        model_output
    };
    let base = BaseFiles::new(source);
    let abbrev = gitdiff::abbrev_len(source.object_count().unwrap_or(0));
    // One work tree for all attempts, as in the original; a copy taken before each attempt puts
    // a non-parity attempt's edits back.
    let mut ws = Workspace::new(&base);
    let mut attempts = Vec::new();
    for &patch_type in patch_types {
        let parity = options.parity(patch_type);
        let before = ws.clone();
        let result = attempt(patch_type, model_output, &mut ws, python, options);
        match result.and_then(|()| ws.changes()) {
            Ok(changes) if !changes.is_empty() => {
                let files = changes.iter().map(|c| c.path.clone()).collect();
                attempts.push(Attempt {
                    patch_type,
                    outcome: AttemptOutcome::Applied { files },
                    kept_edits: Vec::new(),
                });
                return Extraction {
                    patch: gitdiff::render_abbrev(&changes, abbrev),
                    patch_type_used: Some(patch_type),
                    attempts,
                    files: changes,
                };
            }
            Ok(_) => {
                attempts.push(Attempt::failed(patch_type, AttemptError::NoChanges));
                // The original counts this as a success and stops with an empty diff.
                if parity {
                    break;
                }
            }
            Err(error) => {
                // The original's script crashes on such a section (an IndexError before any
                // type's result is written): there is no patch at all, whatever came before.
                let crashes = matches!(
                    error,
                    AttemptError::MalformedHeader { .. } | AttemptError::CustomCrash { .. }
                );
                if parity && crashes {
                    attempts.push(Attempt::failed(patch_type, error));
                    return Extraction {
                        patch: String::new(),
                        patch_type_used: None,
                        attempts,
                        files: Vec::new(),
                    };
                }
                let mut failed = Attempt::failed(patch_type, error);
                if parity && !failed_by_machinery(&failed) {
                    failed.kept_edits = ws.edited_since(&before);
                } else {
                    ws = before;
                }
                attempts.push(failed);
            }
        }
    }
    // Every type failed: the diff of the edits kept (parity), which the original writes too.
    match ws.changes() {
        Ok(changes) if !changes.is_empty() => Extraction {
            patch: gitdiff::render_abbrev(&changes, abbrev),
            patch_type_used: None,
            attempts,
            files: changes,
        },
        _ => Extraction {
            patch: String::new(),
            patch_type_used: None,
            attempts,
            files: Vec::new(),
        },
    }
}

fn failed_by_machinery(attempt: &Attempt) -> bool {
    matches!(&attempt.outcome, AttemptOutcome::Failed { error } if error.is_infrastructure())
}

/// What exactly `--patch-types vanilla` gives, as an [`Extraction`]: no file is read, the patch
/// is [`vanilla::passthrough`] (what `swtbench run` applies in that case) and the one attempt
/// lists the paths of its `diff --git` lines.
pub fn passthrough_extraction(model_output: &str) -> Extraction {
    let patch_type = PatchType::Vanilla;
    match vanilla::passthrough(model_output) {
        Some(patch) => {
            let files = swtbench_core::diff::changed_paths(&patch);
            Extraction {
                patch,
                patch_type_used: Some(patch_type),
                attempts: vec![Attempt {
                    patch_type,
                    outcome: AttemptOutcome::Applied { files },
                    kept_edits: Vec::new(),
                }],
                files: Vec::new(),
            }
        }
        None => Extraction {
            patch: String::new(),
            patch_type_used: None,
            attempts: vec![Attempt::failed(
                patch_type,
                AttemptError::NothingToPassThrough,
            )],
            files: Vec::new(),
        },
    }
}
