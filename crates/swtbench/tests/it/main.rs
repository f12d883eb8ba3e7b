//! The integration tests of the `swtbench` binary, linked into one test executable: a module per
//! area. `cli_*` run the built binary without a container engine; `engine_*` and
//! `registry_token` (and `cli_dataset::engine_*`) are the engine layer (real Docker, the local
//! registry, Slurm), selected by module path in `.config/nextest.toml`.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

// The fixture benchmark on the real engine (also included by the benches); `require_engine!`.
#[macro_use]
#[path = "../engine_fixture/mod.rs"]
mod engine_fixture;
// What the modules share: the binary on the fixture benchmark, the skip rule, a registry.
#[path = "../support/mod.rs"]
mod support;

mod cli_config;
mod cli_dataset;
mod cli_docs;
mod cli_envlock;
mod cli_envs;
mod cli_exit_codes;
mod cli_extract;
mod cli_grade;
mod cli_integrity;
mod cli_k8s;
mod cli_prebuilt;
mod cli_predictions;
mod cli_report_custom;
mod cli_report_html;
mod cli_report_pak;
mod cli_report_path;
mod cli_run;
mod cli_serve;
mod cli_slurm;
mod cli_spec;
mod cli_validate;
mod engine_entry;
mod engine_envlock;
mod engine_evidence;
mod engine_grade;
mod engine_hung;
mod engine_integrity;
mod engine_leftovers;
mod engine_limits;
mod engine_memory;
mod engine_mirror;
mod engine_prebuilt;
mod engine_python_pull;
mod engine_registry;
mod engine_repeat;
mod engine_run;
mod engine_serve;
mod engine_serve_cache;
mod engine_serve_clients;
mod engine_serve_web;
mod engine_shared;
mod engine_slurm;
mod engine_slurm_worker;
mod engine_uv;
mod engine_workers;
mod layers;
mod registry_token;
