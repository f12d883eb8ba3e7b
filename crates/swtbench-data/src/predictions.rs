//! Loading predictions (§2.3–§2.5): `gold`, a `.json` file or a `.jsonl` file, matched against a
//! loaded dataset.
//!
//! Policy (also in docs/usage.md, "Predictions"):
//! - a malformed record is an error naming the file, the line (or item/key) and the field;
//! - a prediction for an id that is not in the dataset is a warning, and it is skipped;
//! - a prediction for an instance the SWT filter or `--instance-ids` left out is skipped quietly
//!   (counted);
//! - a duplicate id is a warning, and the last record wins;
//! - a null, missing or empty `model_patch` is kept; it is graded later as an empty patch;
//! - predictions from several models in one file are an error (a run evaluates one model).
//!
//! Parsing itself is `swtbench_core::prediction`; this module reads files and matches ids.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use swtbench_core::prediction::{self, PredictionSet};
use swtbench_core::{InstanceId, Prediction, PredictionError};

use crate::dataset::{Exclusion, LoadedDataset};

/// The model name of gold predictions.
pub const GOLD_MODEL: &str = "gold";

/// What `--predictions` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PredictionsSource {
    /// The gold test patch of every instance, as model `gold`.
    Gold,
    File(PathBuf),
}

impl PredictionsSource {
    /// `gold` (exactly, as the original) or a path.
    pub fn parse(value: &str) -> PredictionsSource {
        if value == GOLD_MODEL {
            PredictionsSource::Gold
        } else {
            PredictionsSource::File(PathBuf::from(value))
        }
    }
}

/// Why predictions could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PredictionsError {
    #[error("predictions file {} does not exist", path.display())]
    NotFound { path: PathBuf },
    #[error("predictions file {}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "predictions file {}: not UTF-8 text: line {line} has an invalid byte (file offset {offset})",
        path.display()
    )]
    NotText {
        path: PathBuf,
        line: usize,
        offset: usize,
    },
    #[error(
        "predictions file {}: unknown type; expected `gold`, a .json or a .jsonl file",
        path.display()
    )]
    UnknownFormat { path: PathBuf },
    #[error(transparent)]
    Parse(#[from] PredictionError),
    #[error("the dataset has no instances to build gold predictions from")]
    NoGold,
}

/// Predictions matched against a dataset.
#[derive(Debug, Clone)]
pub struct LoadedPredictions {
    /// `gold` or the file path.
    pub source: String,
    /// The one model name.
    pub model: String,
    /// Predictions for selected instances of the dataset, by id.
    pub predictions: BTreeMap<InstanceId, Prediction>,
    /// Ids of predictions that are not in the dataset at all (skipped, with a warning).
    pub unknown: Vec<InstanceId>,
    /// Ids of predictions for instances the filter or the selection left out (skipped).
    pub excluded: Vec<(InstanceId, Exclusion)>,
    /// Selected instances without a prediction (they will not be evaluated).
    pub missing: Vec<InstanceId>,
    /// Duplicates and unknown ids, one sentence each.
    pub warnings: Vec<String>,
}

impl LoadedPredictions {
    /// The model name as used in directory names (`/` → `__`).
    pub fn model_dir(&self) -> String {
        prediction::model_dir_name(&self.model)
    }

    /// Matched predictions whose patch is null, empty or blank.
    pub fn empty_patches(&self) -> Vec<&InstanceId> {
        self.predictions
            .values()
            .filter(|p| p.is_empty_patch())
            .map(|p| &p.instance_id)
            .collect()
    }

    pub fn is_gold(&self) -> bool {
        self.source == GOLD_MODEL
    }
}

/// The gold test patch of every selected instance, as model `gold` (§2.4).
pub fn gold_predictions(dataset: &LoadedDataset) -> PredictionSet {
    PredictionSet {
        model: GOLD_MODEL.to_string(),
        predictions: dataset
            .instances
            .iter()
            .map(|i| {
                (
                    i.instance_id.clone(),
                    Prediction {
                        instance_id: i.instance_id.clone(),
                        model_name_or_path: GOLD_MODEL.to_string(),
                        model_patch: Some(i.golden_test_patch.clone()),
                    },
                )
            })
            .collect(),
        warnings: Vec::new(),
    }
}

/// Reads and parses a predictions file (`.json` or `.jsonl`, by extension).
pub fn read_predictions_file(path: &Path) -> Result<PredictionSet, PredictionsError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let jsonl = match ext.as_deref() {
        Some("jsonl") | Some("ndjson") => true,
        Some("json") => false,
        _ => {
            return Err(if path.exists() {
                PredictionsError::UnknownFormat {
                    path: path.to_path_buf(),
                }
            } else {
                PredictionsError::NotFound {
                    path: path.to_path_buf(),
                }
            })
        }
    };
    let bytes = std::fs::read(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            PredictionsError::NotFound {
                path: path.to_path_buf(),
            }
        } else {
            PredictionsError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    })?;
    let text =
        crate::rows::utf8_text(&bytes).map_err(|(line, offset)| PredictionsError::NotText {
            path: path.to_path_buf(),
            line,
            offset,
        })?;
    let label = path.display().to_string();
    Ok(if jsonl {
        prediction::parse_jsonl(&label, text)?
    } else {
        prediction::parse_json(&label, text)?
    })
}

/// Loads predictions and matches them against the dataset.
pub fn load_predictions(
    source: &PredictionsSource,
    dataset: &LoadedDataset,
) -> Result<LoadedPredictions, PredictionsError> {
    let (label, set) = match source {
        PredictionsSource::Gold => {
            if dataset.instances.is_empty() {
                return Err(PredictionsError::NoGold);
            }
            (GOLD_MODEL.to_string(), gold_predictions(dataset))
        }
        PredictionsSource::File(path) => (path.display().to_string(), read_predictions_file(path)?),
    };
    Ok(match_predictions(label, set, dataset))
}

/// Splits a parsed set into matched, unknown and excluded predictions.
pub fn match_predictions(
    source: String,
    set: PredictionSet,
    dataset: &LoadedDataset,
) -> LoadedPredictions {
    let mut warnings = set.warnings;
    let mut predictions = BTreeMap::new();
    let mut unknown = Vec::new();
    let mut excluded = Vec::new();
    for (id, p) in set.predictions {
        if dataset.get(id.as_str()).is_some() {
            predictions.insert(id, p);
        } else if let Some(why) = dataset.excluded.get(&id) {
            excluded.push((id, *why));
        } else if dataset
            .problems
            .iter()
            .any(|pr| pr.instance.as_deref() == Some(id.as_str()))
        {
            // The instance exists but its row is invalid; the dataset problems say why.
            excluded.push((id, Exclusion::InvalidRow));
        } else {
            unknown.push(id);
        }
    }
    if !unknown.is_empty() {
        let shown: Vec<&str> = unknown.iter().take(10).map(InstanceId::as_str).collect();
        warnings.push(format!(
            "{source}: {} prediction(s) for instances not in dataset {} ({}) are skipped: {}{}{}",
            unknown.len(),
            dataset.name,
            dataset.split,
            shown.join(", "),
            if unknown.len() > shown.len() {
                ", …"
            } else {
                ""
            },
            // Most predictions unknown: the predictions are probably for another dataset.
            if unknown.len() * 2 > unknown.len() + predictions.len() {
                " (are these predictions for another --dataset or --split?)"
            } else {
                ""
            }
        ));
    }
    let missing = dataset
        .instances
        .iter()
        .filter(|i| !predictions.contains_key(&i.instance_id))
        .map(|i| i.instance_id.clone())
        .collect();
    LoadedPredictions {
        source,
        model: set.model,
        predictions,
        unknown,
        excluded,
        missing,
        warnings,
    }
}
