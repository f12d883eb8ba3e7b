//! `swtbench validate`'s flags.

use std::path::PathBuf;

use crate::args::DatasetArgs;

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Predictions: `gold` (the gold tests as model `gold`), a .json or a .jsonl file. Without
    /// it only the dataset is checked.
    #[arg(long, alias = "predictions_path", value_name = "gold|FILE")]
    pub predictions: Option<String>,

    /// Extra spec table entries (TOML or JSON, same format as the embedded table); instance
    /// versions are checked against the embedded table plus these.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,

    /// The run id the predictions will be evaluated under: checked as `swtbench run` checks it,
    /// together with the model name (the run report `<model>.<run id>.html` must fit in a file
    /// name). Without it the model name is checked on its own.
    #[arg(long, alias = "run_id", value_name = "ID")]
    pub run_id: Option<String>,

    /// Treat warnings (unknown or duplicate prediction ids, empty patches, instances without a
    /// prediction) as problems: exit 1 when there are any.
    #[arg(long)]
    pub strict: bool,

    /// Print the summary as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}
