//! The I/O edge for data: everything swtbench reads from files, the network or the binary itself.
//!
//! - [`dataset`]: `--dataset` (alias, file, directory, hub name, embedded copy) → validated,
//!   filtered, selected instances ([`dataset::load_dataset`]).
//! - [`predictions`]: `--predictions` (`gold`, `.json`, `.jsonl`) matched against a dataset
//!   ([`predictions::load_predictions`]).
//! - [`hub`]: Hugging Face hub datasets over HTTP, with an on-disk cache.
//! - [`rows`]: dataset rows from JSON, JSON Lines and Parquet files.
//! - [`embedded`], [`filters`]: the dataset copies and SWT filter lists compiled into the binary.
//! - [`http`]: blocking HTTP GET with timeouts, retries, an on-disk cache and progress.
//! - [`git_mirror`]: files of a repository at a commit, from a local bare mirror.
//! - [`repo_files`]: the requirement files the spec renderer reads, from mirrors or GitHub raw.
//! - [`build_files`]: `--build-files`, the trees copied onto checkouts before the install.
//! - [`fsutil`]: the one atomic write every output goes through, and its small neighbours.
//! - [`owner`]: this process as the owner of what it creates, and whether another owner runs.
//!
//! Parsing and validation of single records happen in `swtbench-core`; this crate finds the
//! bytes, hands them over and reports where they came from. It must not depend on terminal or
//! async crates and never prints: progress is a callback, messages are returned as data.

pub mod build_files;
pub mod dataset;
pub mod embedded;
pub mod filters;
pub mod fsutil;
pub mod git_mirror;
pub mod http;
pub mod hub;
pub mod owner;
pub mod predictions;
pub mod registry;
pub mod repo_files;
pub mod rows;
pub mod slim_repo;
pub mod tree;

pub use dataset::{load_dataset, DatasetError, DatasetSource, LoadOptions, LoadedDataset};
pub use filters::SwtFilter;
pub use predictions::{load_predictions, LoadedPredictions, PredictionsError, PredictionsSource};
