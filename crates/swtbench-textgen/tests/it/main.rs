//! The text crate's integration tests, linked into one test executable.
#![allow(clippy::unwrap_used)]

mod porter_words;
mod ranking;
