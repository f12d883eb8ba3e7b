//! HTML run reports: one self-contained page per run (summary, instance table, instance details)
//! and per comparison of two runs.
//!
//! - [`model`]: the view model, plain data.
//! - [`build`]: pure construction of instance views from file contents.
//! - [`render`]: pure rendering of a view model to one HTML string (inline CSS, JS and SVG; no
//!   network at view time; everything from the run tree escaped).
//! - [`load`]: **the I/O edge**: reads a run tree from disk into a view model.
//! - [`grade_bridge`]: where statuses, coverage and metrics come from (the grading logic).
//!
//! Nothing here prints, spawns processes or writes files; the caller writes the returned string.

pub mod build;
pub mod escape;
pub mod grade_bridge;
pub mod load;
pub mod model;
pub mod render;
pub mod svg;

pub use load::{
    compare, load_run, load_run_with, LoadError, LoadOptions, NonTestExts, RunLocation,
};
pub use model::{CompareView, InstanceView, Metrics, Outcome, RunView};
pub use render::{render_compare, render_run, render_run_with, DetailEncoding, RenderOptions};
