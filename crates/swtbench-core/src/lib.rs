//! Pure types and functions shared by every swtbench crate.
//!
//! This crate knows what an instance, a prediction, a test status and a unified diff are. It parses
//! and validates them from in-memory data and returns data. It must not do I/O (no files, network,
//! processes, terminals, async runtimes): the crates at the edges do that and hand text in here.

pub mod diff;
pub mod directives;
pub mod engine;
pub mod hash;
pub mod instance;
pub mod layout;
pub mod outcome;
pub mod owner;
pub mod prediction;
pub mod py;
pub mod runs;
pub mod status;
pub mod text;

pub use instance::{Instance, InstanceError, InstanceId, PatchLayout};
pub use prediction::{Prediction, PredictionError};
pub use runs::RunKind;
pub use status::{StatusMap, TestStatus};
