//! The command line of the `swtbench` binary, as data: its clap definitions (each subcommand's
//! arguments in `commands/<name>.rs`, `run`'s and the flag groups several commands flatten in
//! `args.rs`), their help text, and the conversions of the flags into the settings of the library
//! pipelines (`settings.rs` for `run`'s). The original harness's snake_case flags are accepted as
//! aliases. The binary parses [`Cli`], runs each command and prints; nothing here prints.

// The doc comments are clap's --help text (`<name>`, `<owner>/<name>` shown verbatim), not HTML.
#![allow(rustdoc::invalid_html_tags)]

use clap::{Parser, Subcommand};

pub mod args;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod settings;

pub use crate::args::GlobalArgs;

#[derive(Debug, Parser)]
#[command(
    name = "swtbench",
    version,
    about = "Evaluate LLM-written test patches on SWT-Bench"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load and check a dataset and predictions; print a summary.
    Validate(commands::validate::ValidateArgs),
    /// List the dataset aliases and the embedded offline copies.
    Datasets(commands::datasets::DatasetsArgs),
    /// Parse one test log with the original's parser for a repository; print its test statuses.
    ParseLog(commands::parse_log::ParseLogArgs),
    /// Re-grade a run from its logs (no containers): per-instance report.json and the run report.
    Grade(Box<commands::grade::GradeArgs>),
    /// Check a finished run without containers or writing: outputs against their key files,
    /// report.json files against re-grading the outputs, and the logs' integrity. Exit code 1
    /// on any disagreement or suspicious instance.
    Verify(Box<commands::verify::VerifyArgs>),
    /// The leaderboard table (W, S, F→X, F→P, P→P, Δ coverage) of one model's run.
    Report(commands::report::ReportArgs),
    /// Render the Dockerfiles, setup scripts, eval scripts and image keys of instances.
    Spec(commands::spec::SpecArgs),
    /// Build model inputs: BM25 retrieval, SWE-bench style-3 text rows, SWT zsb/zsp prompts.
    Dataset(commands::dataset::DatasetCmdArgs),
    /// Evaluate predictions end to end: build images, run the six runs per instance in
    /// containers, grade, write the reports and print the table.
    Run(Box<crate::args::RunArgs>),
    /// Run the evaluation service: an HTTP/JSON API that evaluates one prediction or a batch as
    /// `run` does, with a durable queue and workers (docs/service.md).
    Serve(Box<commands::serve::ServeArgs>),
    /// Evaluate the jobs of a service's PostgreSQL queue on this host: a worker of a pool that
    /// spans several machines (docs/service.md).
    Worker(Box<commands::worker::WorkerArgs>),
    /// Pre-build images for a dataset selection, list or remove the images swtbench made.
    Images(commands::images::ImagesArgs),
    /// Show the Python environment an instance gets (provider, frozen pins and their source), or
    /// lock the environments of a selection into a file that --env-lock installs exactly.
    Envs(commands::envs::EnvsArgs),
    /// Remove what swtbench processes that have ended left behind (containers, unfinished
    /// files), and with --run-id a run's containers and temporary images.
    Clean(commands::clean::CleanArgs),
    /// Evaluate on a Slurm cluster: the run's shards as an array job and a merge job after it.
    Slurm(commands::slurm::SlurmArgs),
    /// Turn raw model outputs into git diffs (--patch-types) without running anything.
    Extract(Box<commands::extract::ExtractArgs>),
    /// Evaluate on Kubernetes: the run's shards as an Indexed Job and a merge Job after it.
    K8s(commands::k8s::K8sArgs),
    /// Print the command reference (every command's --help) as Markdown: docs/commands.md.
    #[command(hide = true)]
    HelpMarkdown(commands::help_markdown::HelpMarkdownArgs),
}
