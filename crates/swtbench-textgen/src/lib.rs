//! Model inputs for SWT-Bench, built the way the published SWT-Bench datasets were built:
//!
//! 1. [`retrieve`] picks a repository's Python files and [`bm25`] ranks them against the issue
//!    text, with Lucene's BM25 and English [`analyzer`] (including a port of Lucene's [`porter`]
//!    stemmer);
//! 2. [`render`] turns the issue, the READMEs and the best-ranked files that fit under a token cap
//!    ([`tokens`], cl100k) into an SWE-bench "style-3" text row;
//! 3. [`swt`] rewrites such a row into a test-writing task (ZeroShotBase: answer as a unified diff;
//!    ZeroShotPlus: answer in the custom `diff / rewrite|insert` format) and swaps the patches.
//!
//! Everything here is pure: repositories, datasets and output files are read and written by the
//! caller (the `swtbench dataset` command), which hands text in and gets rows back. Prompt texts
//! are [`template`]s; the defaults are ours and live in `assets/prompts/`.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod analyzer;
pub mod bm25;
pub mod porter;
pub mod render;
pub mod retrieve;
pub mod row;
pub mod swt;
pub mod template;
pub mod tokens;
