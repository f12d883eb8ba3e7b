//! The backend's integration tests, linked into one test executable. Each module drives the real
//! Docker engine (the engine layer); `support` holds what they share.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

#[path = "../support/mod.rs"]
mod support;

mod docker_backend;
mod docker_commit;
mod docker_hung;
