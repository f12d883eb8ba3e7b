//! `swtbench validate`: load and check a dataset and predictions, print a summary.
//!
//! Checks: every row is a valid instance (required fields, test lists, `<patch>` wrapping), ids
//! are unique, each (repo, version) is in the spec table, the gold patches parse as unified diffs,
//! and the predictions file parses and matches the dataset. The summary goes to stdout (text or
//! `--json`); problems and warnings go to stderr.
//!
//! Exit codes: 0 no problems; 1 problems found (or warnings with `--strict`); 2 unusable input
//! (unreadable dataset or predictions file, unknown `--instance-ids`).

use std::path::PathBuf;

use serde_json::json;
use swtbench_core::diff;
use swtbench_data::dataset::{Exclusion, LoadedDataset};
use swtbench_data::predictions::{load_predictions, LoadedPredictions, PredictionsSource};
use swtbench_spec::SpecError;

use crate::commands::common::{predictions_error, DatasetArgs};
use crate::commands::spec::load_spec_table;
use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

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

    /// Treat warnings (unknown or duplicate prediction ids, empty patches, instances without a
    /// prediction) as problems: exit 1 when there are any.
    #[arg(long)]
    pub strict: bool,

    /// Print the summary as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ValidateArgs, printer: &Printer) -> CliResult {
    let table = load_spec_table(args.spec_table.as_deref())?;
    let mut dataset = args.dataset.load(printer)?;

    dataset.check("version", &|i| match table.lookup(&i.repo, &i.version) {
        Ok(_) => None,
        Err(e @ SpecError::UnknownRepo { .. }) | Err(e @ SpecError::UnknownVersion { .. }) => {
            Some(e.to_string())
        }
        Err(e) => Some(e.to_string()),
    });
    dataset.check("patch", &|i| {
        diff::parse(&i.golden_code_patch)
            .err()
            .map(|e| format!("the gold code patch is not a unified diff: {e}"))
    });
    dataset.check("test_patch", &|i| {
        diff::parse(&i.golden_test_patch)
            .err()
            .map(|e| format!("the gold test patch is not a unified diff: {e}"))
    });

    let predictions = match &args.predictions {
        None => None,
        Some(p) => Some(
            load_predictions(&PredictionsSource::parse(p), &dataset).map_err(predictions_error)?,
        ),
    };

    const SHOWN: usize = 50;
    for p in dataset.problems.iter().take(SHOWN) {
        printer.warn(&format!("problem: {p}"));
    }
    if dataset.problems.len() > SHOWN {
        printer.warn(&format!(
            "… and {} more problems (all are in --json output)",
            dataset.problems.len() - SHOWN
        ));
    }
    let mut warning_count = 0;
    if let Some(p) = &predictions {
        for w in &p.warnings {
            printer.warn(w);
        }
        warning_count = p.warnings.len() + p.empty_patches().len() + p.missing.len();
    }

    if args.json {
        printer.data(
            &serde_json::to_string_pretty(&summary_json(&dataset, predictions.as_ref()))
                .unwrap_or_default(),
        );
    } else {
        printer.data(&summary_text(&dataset, predictions.as_ref()));
    }

    if !dataset.problems.is_empty() || (args.strict && warning_count > 0) {
        Ok(ExitCode::Partial)
    } else {
        Ok(ExitCode::Success)
    }
}

fn excluded_counts(d: &LoadedDataset) -> (usize, usize) {
    let by_filter = d
        .excluded
        .values()
        .filter(|e| matches!(e, Exclusion::SwtFilter(_)))
        .count();
    (by_filter, d.excluded.len() - by_filter)
}

fn layout_name(d: &LoadedDataset) -> &'static str {
    match d.layout {
        swtbench_core::PatchLayout::Swebench => "swebench",
        swtbench_core::PatchLayout::SweText => "swe-text",
        swtbench_core::PatchLayout::SwtSwapped => "swt-swapped",
    }
}

fn summary_text(d: &LoadedDataset, p: Option<&LoadedPredictions>) -> String {
    let (by_filter, not_selected) = excluded_counts(d);
    let mut excluded = Vec::new();
    if by_filter > 0 {
        let list = d.filter.map(|f| f.name()).unwrap_or("?");
        excluded.push(format!(
            "{by_filter} excluded by the SWT filter list {list}"
        ));
    }
    if not_selected > 0 {
        excluded.push(format!("{not_selected} not among --instance-ids"));
    }
    let invalid = d
        .problems
        .iter()
        .filter(|pr| pr.instance.as_deref().is_none_or(|id| d.get(id).is_none()))
        .count();
    if invalid > 0 {
        excluded.push(format!("{invalid} invalid rows"));
    }
    let mut lines = vec![
        ("dataset", format!("{} (split {})", d.name, d.split)),
        ("source", d.origin.to_string()),
        ("rows", d.rows.to_string()),
        (
            "instances",
            if excluded.is_empty() {
                d.instances.len().to_string()
            } else {
                format!("{} ({})", d.instances.len(), excluded.join(", "))
            },
        ),
        ("patch layout", layout_name(d).to_string()),
    ];
    if let Some(p) = p {
        lines.push(("predictions", format!("{} (model {})", p.source, p.model)));
        lines.push((
            "matched",
            format!(
                "{} of {} instances have a prediction",
                p.predictions.len(),
                d.instances.len()
            ),
        ));
        lines.push(("unknown ids", p.unknown.len().to_string()));
        if !p.excluded.is_empty() {
            lines.push((
                "skipped",
                format!("{} for excluded instances", p.excluded.len()),
            ));
        }
        lines.push(("empty patches", p.empty_patches().len().to_string()));
    }
    lines.push(("problems", d.problems.len().to_string()));
    let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    lines
        .into_iter()
        .map(|(k, v)| format!("{:<width$} {v}\n", format!("{k}:")))
        .collect()
}

fn summary_json(d: &LoadedDataset, p: Option<&LoadedPredictions>) -> serde_json::Value {
    let (by_filter, not_selected) = excluded_counts(d);
    let problems: Vec<_> = d
        .problems
        .iter()
        .map(|pr| {
            json!({
                "instance_id": pr.instance,
                "field": pr.field,
                "location": pr.location,
                "message": pr.message,
            })
        })
        .collect();
    let predictions = p.map(|p| {
        json!({
            "source": p.source,
            "model": p.model,
            "matched": p.predictions.len(),
            "unknown_ids": p.unknown,
            "excluded": p.excluded.len(),
            "missing": p.missing,
            "empty_patches": p.empty_patches(),
            "warnings": p.warnings,
        })
    });
    json!({
        "dataset": d.name,
        "split": d.split,
        "source": d.origin.to_string(),
        "rows": d.rows,
        "instances": d.instances.len(),
        "instance_ids": d.instances.iter().map(|i| i.instance_id.as_str()).collect::<Vec<_>>(),
        "excluded_by_filter": by_filter,
        "not_selected": not_selected,
        "filter": d.filter.map(|f| f.name()),
        "filter_applied": d.filter_applied,
        "patch_layout": layout_name(d),
        "notes": d.notes,
        "predictions": predictions,
        "problems": problems,
    })
}
