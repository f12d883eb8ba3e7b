//! The I/O edge for data: everything swtbench reads from files, the network or the binary itself.
//!
//! - [`http`]: blocking HTTP GET with timeouts, retries, an on-disk cache and progress.
//! - [`git_mirror`]: files of a repository at a commit, from a local bare mirror.
//!
//! Parsing and validation of what is read happen in `swtbench-core`; this crate finds the bytes,
//! hands them over and reports where they came from. It must not depend on terminal or async
//! crates: progress is a callback, messages are returned as data.

pub mod git_mirror;
pub mod http;
