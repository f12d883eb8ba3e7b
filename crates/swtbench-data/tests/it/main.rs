//! The data crate's integration tests, linked into one test executable: datasets, predictions,
//! the HTTP client, git mirrors and slim repositories; `support` is a local HTTP server.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

#[path = "../support/mod.rs"]
mod support;

mod dataset;
mod diff_reference;
mod git_mirror;
mod http;
mod predictions;
mod slim_repo;
