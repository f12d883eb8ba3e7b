//! `swtbench validate` as a library: the checks a dataset and its predictions must pass, and the
//! summary of what was loaded, as text or JSON.
//!
//! Checks: every row is a valid instance (done while loading), each (repo, version) is in the
//! spec table and the gold patches parse as unified diffs ([`check_dataset`]); the predictions
//! file parses and matches the dataset (done while loading it). [`Validation`] holds the result;
//! what is printed, and how many problems are shown, is the caller's business.

use serde_json::json;
use swtbench_core::diff;
use swtbench_data::dataset::{Exclusion, LoadedDataset};
use swtbench_data::predictions::LoadedPredictions;
use swtbench_spec::{SpecError, SpecTable};

/// Records a problem for every instance whose (repo, version) is not in `table` or whose gold
/// patches are not unified diffs.
pub fn check_dataset(dataset: &mut LoadedDataset, table: &SpecTable) {
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
}

/// A checked dataset and, when given, its predictions.
#[derive(Debug)]
pub struct Validation {
    pub dataset: LoadedDataset,
    pub predictions: Option<LoadedPredictions>,
}

impl Validation {
    /// The problems found (the first 50; all are in the JSON summary) and the predictions'
    /// warnings, as warnings.
    pub fn warnings(&self) -> Vec<crate::lines::Line> {
        use crate::lines::Line;
        const SHOWN: usize = 50;
        let problems = &self.dataset.problems;
        let mut out: Vec<Line> = problems
            .iter()
            .take(SHOWN)
            .map(|p| Line::Warn(format!("problem: {p}")))
            .collect();
        if problems.len() > SHOWN {
            out.push(Line::Warn(format!(
                "… and {} more problems (all are in --json output)",
                problems.len() - SHOWN
            )));
        }
        if let Some(p) = &self.predictions {
            out.extend(p.warnings.iter().map(|w| Line::Warn(w.clone())));
        }
        out
    }

    /// Warnings about the predictions: unknown or duplicate ids, empty patches, instances
    /// without a prediction.
    pub fn warning_count(&self) -> usize {
        self.predictions.as_ref().map_or(0, |p| {
            p.warnings.len() + p.empty_patches().len() + p.missing.len()
        })
    }

    /// No problems, and (with `strict`) no warnings either.
    pub fn passed(&self, strict: bool) -> bool {
        self.dataset.problems.is_empty() && !(strict && self.warning_count() > 0)
    }

    /// The summary as aligned `key: value` lines.
    pub fn summary_text(&self) -> String {
        summary_text(&self.dataset, self.predictions.as_ref())
    }

    /// The summary as one JSON object (every problem included).
    pub fn summary_json(&self) -> serde_json::Value {
        summary_json(&self.dataset, self.predictions.as_ref())
    }

    /// The summary as `validate` prints it: the text, or (`json`) the JSON object, pretty.
    pub fn summary(&self, json: bool) -> String {
        match json {
            true => serde_json::to_string_pretty(&self.summary_json()).unwrap_or_default(),
            false => self.summary_text(),
        }
    }
}

/// `validate --run-id`: the run id checked as `run` checks it, and with the predictions' model
/// the name of the run report they would get.
pub fn check_run(
    run_id: &str,
    predictions: Option<&swtbench_data::LoadedPredictions>,
) -> crate::Result<()> {
    crate::evaluate::check_run_id(run_id)?;
    match predictions {
        Some(p) => crate::evaluate::check_report_name(&p.model, run_id),
        None => Ok(()),
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
