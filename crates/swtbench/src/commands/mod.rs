//! One module per subcommand. Each exposes `run(args, printer) -> CliResult`, over the `*Args` of
//! `swtbench_cli::commands::<name>` (clap); `cli.rs` dispatches to them.

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
pub mod serve;
pub mod slurm;
pub mod spec;
pub mod validate;
pub mod verify;
pub mod worker;
