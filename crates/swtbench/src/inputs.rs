//! The loaders of the datasets, predictions and spec tables the flag groups of `swtbench_cli::args`
//! name, their notes and warnings printed, with the download bar on stderr.

use swtbench_app::envlock::EnvChoice;
use swtbench_cli::args::{DatasetArgs, EnvProviderArgs};
use swtbench_data::dataset::{LoadOptions, LoadedDataset};
use swtbench_spec::SpecTable;

use crate::error::CliError;
use crate::printer::Printer;

/// Loads the dataset `args` name, printing notes (fallbacks, detections) on stderr. Invalid rows
/// are kept in [`LoadedDataset::problems`]; use [`load_valid`] to refuse them.
pub fn load(args: &DatasetArgs, printer: &Printer) -> Result<LoadedDataset, CliError> {
    Ok(load_dataset(&args.options(), printer)?)
}

/// Like [`load`], but any invalid row is an input error listing the problems (what `run`, `spec`
/// and grading commands want).
pub fn load_valid(args: &DatasetArgs, printer: &Printer) -> Result<LoadedDataset, CliError> {
    let loaded = load(args, printer)?;
    for p in loaded.problems.iter().take(20) {
        printer.warn(&p.to_string());
    }
    Ok(loaded
        .into_valid()
        .map_err(swtbench_app::inputs::dataset_error)?)
}

/// Loads a dataset with the download bar on stderr, its notes printed.
pub fn load_dataset(
    options: &LoadOptions,
    printer: &Printer,
) -> swtbench_app::Result<LoadedDataset> {
    let mut bar = swtbench_reporter::DownloadBar::new(printer.is_quiet());
    let mut progress = |url: &str, done: u64, total: Option<u64>| bar.update(url, done, total);
    let result = swtbench_app::inputs::load_dataset(options, &mut progress);
    bar.finish();
    let loaded = result?;
    for note in &loaded.notes {
        printer.info(&format!("note: {note}"));
    }
    Ok(loaded)
}

/// Loads `--predictions` (`gold`, .json, .jsonl) against `dataset`, its warnings printed.
pub fn load_predictions(
    spec: &str,
    dataset: &LoadedDataset,
    printer: &Printer,
) -> Result<swtbench_data::LoadedPredictions, CliError> {
    let predictions = swtbench_app::inputs::load_predictions_for(spec, dataset)?;
    for w in &predictions.warnings {
        printer.warn(w);
    }
    Ok(predictions)
}

/// The table with the flags of `args` applied ([`apply_env_choice`]).
pub fn apply_env_provider(
    args: &EnvProviderArgs,
    table: SpecTable,
    printer: &Printer,
) -> Result<SpecTable, CliError> {
    apply_env_choice(table, &args.choice(), printer)
}

/// The table with `choice` applied (`swtbench_app::envlock::apply_env_choice`), its warnings
/// and notes printed.
pub fn apply_env_choice(
    table: SpecTable,
    choice: &EnvChoice,
    printer: &Printer,
) -> Result<SpecTable, CliError> {
    let mut notices = Vec::new();
    let table = swtbench_app::envlock::apply_env_choice(table, choice, &mut notices);
    printer.lines(&notices);
    Ok(table?)
}
