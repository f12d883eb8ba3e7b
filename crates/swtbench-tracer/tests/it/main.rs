//! The tracer's integration tests, linked into one test executable; `common` holds what they
//! share (the sandbox, host interpreters, `per_python!`) and is also included by the bench.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod grade_join;
mod lines;
mod modes;
mod native;
mod processes;
mod pytest_mode;
mod rewrite;
mod syntax;
