//! The core crate's integration tests, linked into one test executable.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod diff_props;
