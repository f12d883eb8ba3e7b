//! Turning `--dataset` and `--predictions` into loaded data, with the fault and hint a user needs
//! for each way that can fail: the hub client from the environment, the offline switches, and the
//! mapping of dataset and predictions errors to [`Error`]s.

use swtbench_core::PredictionError;
use swtbench_data::dataset::{DatasetError, LoadOptions, LoadedDataset};
use swtbench_data::hub::{Hub, HubConfig, HubError};
use swtbench_data::predictions::{load_predictions, PredictionsError, PredictionsSource};
use swtbench_data::LoadedPredictions;

use crate::env_vars;
use crate::Error;

/// Whether the environment forbids the network (`SWTBENCH_OFFLINE`, `HF_HUB_OFFLINE`).
pub fn offline_from_env() -> bool {
    truthy_env(env_vars::var(env_vars::SWTBENCH_OFFLINE).as_deref())
        || truthy_env(env_vars::var(env_vars::HF_HUB_OFFLINE).as_deref())
}

/// Loads a dataset (progress of downloads goes to `progress(url, done, total)`). Invalid rows
/// are kept in [`LoadedDataset::problems`]; notes (fallbacks, detections) in `notes`.
pub fn load_dataset(
    options: &LoadOptions,
    progress: &mut dyn FnMut(&str, u64, Option<u64>),
) -> Result<LoadedDataset, Error> {
    let hub = hub_from_env()?;
    swtbench_data::load_dataset(options, &hub, Some(progress)).map_err(dataset_error)
}

/// The instance `instance_id` of `dataset` (`split`), loaded alone (`envs show`).
pub fn load_instance(
    dataset: &str,
    split: &str,
    instance_id: &str,
    offline: bool,
) -> Result<swtbench_core::Instance, Error> {
    let options = LoadOptions {
        dataset: dataset.to_string(),
        split: split.to_string(),
        filter_swt: false,
        filter_list: None,
        is_swt: false,
        offline,
        instance_ids: vec![instance_id.to_string()],
    };
    let loaded = load_dataset(&options, &mut |_, _, _| {})?;
    loaded
        .instances
        .into_iter()
        .find(|i| i.instance_id.as_str() == instance_id)
        .ok_or_else(|| {
            Error::input(anyhow::anyhow!(
                "instance {instance_id} is not in dataset {dataset}"
            ))
            .with_hint("name the dataset it is in with --dataset (lite, verified, full or a file)")
        })
}

/// Loads `--predictions` (`gold`, .json, .jsonl) against a dataset.
pub fn load_predictions_for(
    spec: &str,
    dataset: &LoadedDataset,
) -> Result<LoadedPredictions, Error> {
    load_predictions(&PredictionsSource::parse(spec), dataset).map_err(predictions_error)
}

/// An on/off environment variable as the Hugging Face libraries read `HF_HUB_OFFLINE`: 1, ON,
/// YES or TRUE (any case) mean on.
pub fn truthy_env(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_uppercase().as_str(),
            "1" | "ON" | "YES" | "TRUE"
        )
    })
}

/// The hub client, configured from `HF_ENDPOINT`, `HF_HOME`, `HF_TOKEN`, the CA bundle
/// (`SSL_CERT_FILE`) and the proxy variables.
pub fn hub_from_env() -> Result<Hub, Error> {
    let config = HubConfig::from_env(&env_vars::var);
    Hub::new(config, crate::env_vars::http_config()).map_err(|e| {
        Error::environment(e).with_hint(format!(
            "check {} and the proxy variables (HTTPS_PROXY, NO_PROXY)",
            env_vars::SSL_CERT_FILE
        ))
    })
}

/// Maps a dataset error to the exit code and hint a user needs.
pub fn dataset_error(e: DatasetError) -> Error {
    let hint = match &e {
        DatasetError::NotOffline { .. } => {
            // The dataset exists; the network it needs is switched off: an environment matter.
            return Error::environment(e).with_hint(format!(
                "run once without --offline (and without {}/{}) to download it into the cache, \
                 or pass a local file with --dataset",
                env_vars::SWTBENCH_OFFLINE,
                env_vars::HF_HUB_OFFLINE
            ));
        }
        DatasetError::FileNotFound { .. } => Some(
            "check the path; `swtbench datasets` lists the aliases (lite, verified, full, …)"
                .to_string(),
        ),
        DatasetError::NearAlias { name, suggestion } => Some(format!(
            "use --dataset {suggestion}; `swtbench datasets` lists the aliases. A Hugging Face \
             dataset is named owner/name, a local file by its path (./{name})"
        )),
        DatasetError::NoInstanceIds => Some(
            "give ids separated by spaces or commas, or leave --instance-ids out to select every \
             instance"
                .to_string(),
        ),
        DatasetError::Hub { source, .. } if source.is_unavailable() => {
            return Error::environment(e).with_hint(
                "the Hugging Face hub could not be reached; check the network and proxy \
                 variables, set HF_ENDPOINT for a mirror, or pass a local file with --dataset",
            );
        }
        DatasetError::Hub { source, .. } => match &**source {
            HubError::DatasetNotFound { .. } => Some(
                "known aliases are listed by `swtbench datasets`; a local file must end in \
                 .json, .jsonl or .parquet"
                    .to_string(),
            ),
            HubError::AccessDenied { .. } => Some(format!(
                "set {} to a token that can read this dataset",
                env_vars::HF_TOKEN
            )),
            _ => None,
        },
        DatasetError::UnknownInstanceIds { missing, .. } => {
            let filtered = missing.iter().any(|(_, why)| {
                matches!(why, Some(swtbench_data::dataset::Exclusion::SwtFilter(_)))
            });
            Some(format!(
                "`swtbench validate --dataset … --json` lists the dataset's ids under \
                 `instance_ids`{}",
                if filtered {
                    "; ids the SWT filter removes are available without --filter-swt"
                } else {
                    ""
                }
            ))
        }
        DatasetError::Invalid { problems, .. } => Some(format!(
            "`swtbench validate` lists all {} problem(s)",
            problems.len()
        )),
        _ => None,
    };
    let err = Error::input(e);
    match hint {
        Some(h) => err.with_hint(h),
        None => err,
    }
}

/// Maps a predictions error to the exit code and a hint that fits the problem.
pub fn predictions_error(e: PredictionsError) -> Error {
    const FORMAT: &str = "predictions are `gold`, a .jsonl file of {\"instance_id\", \
                          \"model_name_or_path\", \"model_patch\"} records (one per line), or a \
                          .json file holding a list of them or an object keyed by instance id";
    let hint = match &e {
        PredictionsError::NotFound { .. } => {
            "check the path; `gold` (lower case) evaluates the gold tests".to_string()
        }
        PredictionsError::NotText { .. } => {
            "save the file as UTF-8 (JSON text is always UTF-8)".to_string()
        }
        PredictionsError::Io { .. } => "check the file's permissions".to_string(),
        PredictionsError::NoGold => {
            "the dataset selection is empty; check --instance-ids and --filter-swt".to_string()
        }
        PredictionsError::Parse(PredictionError::MixedModels { .. }) => {
            "split the file by `model_name_or_path` and evaluate each model separately".to_string()
        }
        PredictionsError::Parse(PredictionError::BadModelName { .. }) => {
            "set `model_name_or_path` to the model's name; it names the run's output directory"
                .to_string()
        }
        _ => FORMAT.to_string(),
    };
    Error::input(e).with_hint(hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hf_hub_offline_values() {
        for v in ["1", "ON", "on", "yes", "True", " 1 "] {
            assert!(truthy_env(Some(v)), "{v}");
        }
        for v in ["0", "off", "false", "", "2"] {
            assert!(!truthy_env(Some(v)), "{v}");
        }
        assert!(!truthy_env(None));
    }
}
