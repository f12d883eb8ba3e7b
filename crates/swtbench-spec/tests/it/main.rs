//! The spec crate's integration tests, linked into one test executable. `snapshots` compares with
//! the files under `tests/snapshots/` (found from `CARGO_MANIFEST_DIR`).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod build_files;
mod compiler_cache;
mod lock;
mod providers;
mod snapshots;
mod table_data;
mod test_command;
mod uv;
