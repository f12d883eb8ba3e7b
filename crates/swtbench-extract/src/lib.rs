//! Turning raw model output into an applicable `git diff`: the I/O side.
//!
//! The extraction algorithms (the vanilla, fuzzy and custom readings, `git apply` rules, diff
//! rendering) are pure and live in `swtbench-patch`; this crate re-exports them, so callers keep
//! naming `swtbench_extract::PatchType`, `swtbench_extract::extract`, `swtbench_extract::gitdiff`…
//! What is here is what touches the machine:
//!
//! * [`source`]: [`DirSource`] (a checked-out work tree) and [`GitMirrorSource`] (a bare mirror,
//!   read with `git cat-file` and `git ls-tree`);
//! * [`python`]: [`HostPython`], a Python interpreter on the host for tests and debugging;
//! * [`cache`]: the result stored next to the instance's logs and reused while the raw output and
//!   the settings stay the same.
//!
//! This crate never writes to a repository and never applies model text on the host's file
//! system; the only processes it starts are `git cat-file` and `git ls-tree` (reading a mirror)
//! and, through [`HostPython`], a Python interpreter.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod cache;
pub mod python;
pub mod source;

pub use swtbench_patch::{
    custom, extract, fuzzy, gitapply, gitdiff, needs_extraction, passthrough_extraction, paths,
    sections, vanilla, Attempt, AttemptError, AttemptOutcome, BlockOrder, CustomStyle,
    ExtractOptions, Extraction, FileChange, FuzzyStyle, PatchType, UnknownNameError, VanillaStyle,
};

pub use python::{HostPython, PythonError, PythonOutput, PythonRunner, CUSTOM_PATCH_SCRIPT};
pub use source::{
    DirSource, FileSource, GitMirrorSource, MemorySource, SourceError, SourceErrorKind,
};
