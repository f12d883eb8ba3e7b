//! The extraction crate's integration tests, linked into one test executable; `common` holds
//! what they share (fixture paths, real git repositories, interpreters from pyenv).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

#[path = "../common/mod.rs"]
mod common;

mod cache;
mod custom;
mod fuzzy;
mod gitdiff_bytes;
mod parity;
mod parity_rules;
mod vanilla;
