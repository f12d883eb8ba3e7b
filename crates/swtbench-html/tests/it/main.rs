//! The HTML report's integration tests, linked into one test executable: page structure on the
//! fixture run tree, and the pages in headless Chromium (`common::chromium`, also used by the
//! `perf` example).
#![allow(clippy::unwrap_used, clippy::print_stderr)]

#[path = "../common/mod.rs"]
mod common;

mod browser;
mod html_structure;
