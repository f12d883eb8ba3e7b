//! `swtbench extract`'s flags, and the settings of [`swtbench_app::extract`] they give.

use std::path::PathBuf;

use swtbench_app::extract::ExtractSettings;
use swtbench_extract::PatchType;

use crate::args::{DatasetArgs, ExtractStyleArgs};

#[derive(Debug, clap::Args)]
pub struct ExtractArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Predictions: a .json or .jsonl file of {instance_id, model_name_or_path, model_patch}.
    #[arg(long, alias = "predictions_path", value_name = "FILE")]
    pub predictions: String,

    /// Patch types to try, in order, until one produces a change. `vanilla` alone extracts
    /// nothing: the prediction minus binary diffs, exactly what `swtbench run` applies.
    #[arg(long, alias = "patch_types", value_name = "TYPE", num_args = 1.., required = true)]
    pub patch_types: Vec<PatchType>,

    #[command(flatten)]
    pub mirror: crate::args::RepoMirrorArgs,

    /// Where to write `<instance>/extracted_patch.diff` and its companions.
    #[arg(long, value_name = "DIR")]
    pub output_dir: PathBuf,

    #[command(flatten)]
    pub styles: ExtractStyleArgs,

    /// Python interpreter for the custom type (parses the model's code on this host).
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<PathBuf>,

    /// One JSON object per instance instead of tab-separated lines.
    #[arg(long)]
    pub json: bool,
}

impl ExtractArgs {
    pub fn settings(&self) -> ExtractSettings {
        ExtractSettings {
            repo_mirror: self.mirror.repo_mirror.clone(),
            output_dir: self.output_dir.clone(),
            patch_types: self.patch_types.clone(),
            options: self.styles.options(),
            python: self.python.clone(),
        }
    }
}
