//! The application layer: each command's pipeline as a library function that takes resolved
//! settings (and, for long work, an event sink) and returns data. The `swtbench` binary parses
//! arguments into those settings, calls one function here, prints what it returns and maps its
//! [`Error`] to an exit code; nothing here prints or exits.
//!
//! This crate is where the pure crates meet their I/O: it reads files, talks to the container
//! engine (through `swtbench-backend`), owns the async runtime of an evaluation, and writes
//! outputs through [`swtbench_data::fsutil::write_atomic`]. Business rules that more than one
//! command needs (benchmark resolution, the leaderboard denominator, where the gold run lives,
//! the HTML page of a run) live here once.

pub mod benchmark;
pub mod clean;
pub mod command_reference;
pub mod dataset;
pub mod engine;
pub mod env_vars;
pub mod envlock;
pub mod error;
pub mod evaluate;
pub mod extract;
pub mod grade;
pub mod html_page;
pub mod image_budget;
pub mod image_scripts;
pub mod images;
pub mod inputs;
pub mod k8s;
pub mod limits;
pub mod lines;
pub mod reexecute;
pub mod registry;
pub mod repeat;
pub mod report;
pub mod settings;
pub mod shards;
pub mod shell;
pub mod slurm;
pub mod spec;
pub mod tables;
pub mod tree;
pub mod validate;

pub use error::{Error, Fault, Result};
