//! One module per subcommand. Each exposes `*Args` (clap) and `run(args, printer) -> CliResult`;
//! `cli.rs` lists them and dispatches to them.

pub mod clean;
pub mod dataset;
pub mod datasets;
pub mod envs;
pub mod extract;
pub mod grade;
pub mod help_markdown;
pub mod images;
pub mod k8s;
pub mod parse_log;
pub mod report;
pub mod run;
pub mod slurm;
pub mod spec;
pub mod validate;
pub mod verify;
