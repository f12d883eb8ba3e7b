//! The runner's integration tests, linked into one test executable: the fake engine, prebuilt
//! instance images and the evidence hook.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

mod evidence_hook;
mod runner_fake;
mod runner_prebuilt;
