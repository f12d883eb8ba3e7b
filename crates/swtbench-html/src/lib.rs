//! HTML run reports: one self-contained page per run (summary, instance table, instance details)
//! and per comparison of two runs.
//!
//! - [`model`]: the view model, plain data.
//! - [`build`]: pure construction of instance views from file contents.
//! - [`render`]: pure rendering of a view model to one HTML string (inline CSS, JS and SVG; no
//!   network at view time; everything from the run tree escaped).
//! - [`load`]: reads a run tree into a view model through a `TreeReader` the caller implements
//!   (the file system lives at the application layer's edge), finding each output where
//!   `swtbench grade` finds it.
//! - [`grade_bridge`]: where statuses, coverage and metrics come from (the grading logic).
//!
//! The crate is pure: data in, page out. Nothing here reads or writes files, prints or spawns
//! processes; the caller hands in a tree reader and writes the returned string.

pub mod build;
pub mod escape;
pub mod grade_bridge;
pub mod load;
pub mod model;
pub mod render;
pub mod svg;

pub use load::{compare, load_run, LoadError, LoadOptions, RunLocation};
pub use model::{CompareView, InstanceView, Metrics, Outcome, RunView};
pub use render::{render_compare, render_run, render_run_with, DetailEncoding, RenderOptions};
pub use swtbench_grade::tree::{NonTestExts, ReadRules, TreeReader};
