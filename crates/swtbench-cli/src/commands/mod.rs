//! One module per subcommand: its `*Args` (clap), and the conversions of those flags into the
//! settings of its library pipeline. The binary's `commands/<name>.rs` runs it.

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
pub mod serve;
pub mod slurm;
pub mod spec;
pub mod validate;
pub mod verify;
pub mod worker;
