//! The grading crate's integration tests, linked into one test executable: parser parity on the
//! logs kept in `tests/fixtures` and on the shared real data, integrity checks on real logs,
//! properties of the report.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

// The original's parser test cases (`tests/common`), run by `fixtures` and `shared_data`.
#[path = "../common/parser_cases.rs"]
mod parser_cases;

mod fixtures;
mod grading_version;
mod integrity_real_logs;
mod properties;
mod scan_parity;
mod shared_data;
