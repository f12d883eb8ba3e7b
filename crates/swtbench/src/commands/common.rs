//! Arguments shared by every command that reads a dataset (`validate`, `run`, `spec`, grading…):
//! `--dataset --split --filter-swt --swt-filter-list --is-swt --offline --instance-ids`, and the
//! one function that turns them into a [`LoadedDataset`]. Commands `#[command(flatten)]`
//! [`DatasetArgs`] so the flags, their snake_case aliases and their behaviour are identical
//! everywhere.

use std::io::IsTerminal;

use swtbench_core::PredictionError;
use swtbench_data::dataset::{DatasetError, LoadOptions, LoadedDataset};
use swtbench_data::http::HttpConfig;
use swtbench_data::hub::{Hub, HubConfig, HubError};
use swtbench_data::predictions::PredictionsError;
use swtbench_data::SwtFilter;

use crate::env_vars;
use crate::error::CliError;
use crate::printer::Printer;

/// The original harness's `str2bool`: yes/true/t/y/1 and no/false/f/n/0, case-insensitive.
pub fn parse_bool(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "yes" | "true" | "t" | "y" | "1" => Ok(true),
        "no" | "false" | "f" | "n" | "0" => Ok(false),
        other => Err(format!(
            "expected a boolean (true/false, yes/no, 1/0), got {other:?}"
        )),
    }
}

/// Which dataset to evaluate, and which of its instances.
#[derive(Debug, Clone, clap::Args)]
pub struct DatasetArgs {
    /// Dataset: an alias (lite, verified, full, princeton-nlp/SWE-bench_Lite, …; see `swtbench
    /// datasets`), a local .json/.jsonl/.parquet file or a directory of them, or any Hugging Face
    /// dataset name.
    #[arg(
        long,
        alias = "dataset_name",
        value_name = "DATASET",
        default_value = "princeton-nlp/SWE-bench_Lite"
    )]
    pub dataset: String,

    /// Dataset split.
    #[arg(long, value_name = "SPLIT", default_value = "test")]
    pub split: String,

    /// Drop the instances SWT-Bench excludes from SWE-bench (Lite keeps 276, Verified 433,
    /// Full 1983).
    #[arg(long, alias = "filter_swt")]
    pub filter_swt: bool,

    /// The SWT filter list for --filter-swt when the dataset is not an alias (default: inferred
    /// from its name, else from its instance ids).
    #[arg(long, alias = "swt_filter_list", value_name = "lite|verified|full")]
    pub swt_filter_list: Option<SwtFilter>,

    /// The dataset's `patch` is wrapped in <patch> tags (SWE-bench text/RAG datasets and the
    /// published SWT-Bench datasets, whose patch fields are swapped; both are detected).
    #[arg(
        long,
        alias = "is_swt",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "false",
        default_missing_value = "true",
        value_parser = parse_bool,
    )]
    pub is_swt: bool,

    /// Never use the network: embedded dataset copies and the download cache only (also set by
    /// SWTBENCH_OFFLINE=1 or HF_HUB_OFFLINE=1).
    #[arg(long)]
    pub offline: bool,

    /// Only these instances (several values, or one comma-separated list). Each must be in the
    /// dataset.
    #[arg(long, alias = "instance_ids", value_name = "ID", num_args = 1..)]
    pub instance_ids: Vec<String>,
}

impl DatasetArgs {
    /// Whether the network is off limits (flag or environment).
    pub fn is_offline(&self) -> bool {
        self.offline
            || truthy_env(std::env::var(env_vars::SWTBENCH_OFFLINE).ok().as_deref())
            || truthy_env(std::env::var(env_vars::HF_HUB_OFFLINE).ok().as_deref())
    }

    pub fn options(&self) -> LoadOptions {
        LoadOptions {
            dataset: self.dataset.clone(),
            split: self.split.clone(),
            filter_swt: self.filter_swt,
            filter_list: self.swt_filter_list,
            is_swt: self.is_swt,
            offline: self.is_offline(),
            instance_ids: self.instance_ids.clone(),
        }
    }

    /// Loads the dataset, printing notes (fallbacks, detections) on stderr. Invalid rows are kept
    /// in [`LoadedDataset::problems`]; use [`DatasetArgs::load_valid`] to refuse them.
    pub fn load(&self, printer: &Printer) -> Result<LoadedDataset, CliError> {
        let hub = hub_from_env()?;
        let mut bar = DownloadBar::new(printer);
        let mut progress = |url: &str, done: u64, total: Option<u64>| bar.update(url, done, total);
        let result = swtbench_data::load_dataset(&self.options(), &hub, Some(&mut progress));
        bar.finish();
        let loaded = result.map_err(dataset_error)?;
        for note in &loaded.notes {
            printer.info(&format!("note: {note}"));
        }
        Ok(loaded)
    }

    /// Like [`DatasetArgs::load`], but any invalid row is an input error listing the problems
    /// (what `run`, `spec` and grading commands want).
    #[allow(dead_code)]
    pub fn load_valid(&self, printer: &Printer) -> Result<LoadedDataset, CliError> {
        let loaded = self.load(printer)?;
        if !loaded.problems.is_empty() {
            for p in loaded.problems.iter().take(20) {
                printer.warn(&p.to_string());
            }
        }
        loaded.into_valid().map_err(dataset_error)
    }
}

/// An on/off environment variable as the Hugging Face libraries read `HF_HUB_OFFLINE`: 1, ON,
/// YES or TRUE (any case) mean on.
fn truthy_env(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_uppercase().as_str(),
            "1" | "ON" | "YES" | "TRUE"
        )
    })
}

/// The hub client, configured from `HF_ENDPOINT`, `HF_HOME`, `HF_TOKEN`, the CA bundle
/// (`SSL_CERT_FILE`) and the proxy variables.
pub fn hub_from_env() -> Result<Hub, CliError> {
    let config = HubConfig::from_env(&|k| std::env::var(k).ok());
    Hub::new(config, HttpConfig::default()).map_err(|e| {
        CliError::environment(e).with_hint(format!(
            "check {} and the proxy variables (HTTPS_PROXY, NO_PROXY)",
            env_vars::SSL_CERT_FILE
        ))
    })
}

/// Maps a dataset error to the exit code and hint a user needs.
pub fn dataset_error(e: DatasetError) -> CliError {
    let hint = match &e {
        DatasetError::NotOffline { .. } => {
            // The dataset exists; the network it needs is switched off: an environment matter.
            return CliError::environment(e).with_hint(format!(
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
        DatasetError::NoInstanceIds => Some(
            "give ids separated by spaces or commas, or leave --instance-ids out to select every \
             instance"
                .to_string(),
        ),
        DatasetError::Hub { source, .. } if source.is_unavailable() => {
            return CliError::environment(e).with_hint(
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
    let err = CliError::input(e);
    match hint {
        Some(h) => err.with_hint(h),
        None => err,
    }
}

/// Maps a predictions error to the exit code and a hint that fits the problem.
pub fn predictions_error(e: PredictionsError) -> CliError {
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
    CliError::input(e).with_hint(hint)
}

/// A progress bar for hub downloads, drawn only on a terminal and never with --quiet.
/// Not on a terminal (CI logs, pipes), each download is one line instead.
struct DownloadBar {
    printer: Printer,
    enabled: bool,
    terminal: bool,
    bar: Option<indicatif::ProgressBar>,
    url: String,
}

impl DownloadBar {
    fn new(printer: &Printer) -> DownloadBar {
        DownloadBar {
            printer: *printer,
            enabled: !printer.is_quiet(),
            terminal: std::io::stderr().is_terminal(),
            bar: None,
            url: String::new(),
        }
    }

    fn update(&mut self, url: &str, done: u64, total: Option<u64>) {
        if !self.enabled {
            return;
        }
        if self.url != url && !self.terminal {
            self.url = url.to_string();
            let name = url.rsplit('/').next().unwrap_or(url);
            let size = total
                .map(|t| format!(" ({:.1} MB)", t as f64 / 1e6))
                .unwrap_or_default();
            self.printer
                .info(&format!("downloading {name}{size} from {url}"));
            return;
        }
        if !self.terminal {
            return;
        }
        if self.url != url {
            if let Some(b) = self.bar.take() {
                b.finish_and_clear();
            }
            self.url = url.to_string();
            let bar = match total {
                Some(t) => indicatif::ProgressBar::new(t),
                None => indicatif::ProgressBar::new_spinner(),
            };
            let style = indicatif::ProgressStyle::with_template(
                "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            let name = url.rsplit('/').next().unwrap_or(url);
            bar.set_message(format!("downloading {name}"));
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
    }

    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct T {
        #[command(flatten)]
        d: DatasetArgs,
    }

    #[test]
    fn snake_case_aliases_and_str2bool() {
        let t = T::try_parse_from([
            "t",
            "--dataset_name",
            "lite",
            "--filter_swt",
            "--is_swt",
            "False",
            "--instance_ids",
            "a",
            "b,c",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.d.dataset, "lite");
        assert!(t.d.filter_swt);
        assert!(!t.d.is_swt);
        assert_eq!(
            swtbench_data::dataset::split_instance_ids(&t.d.instance_ids),
            vec!["a", "b", "c"]
        );
        let t = T::try_parse_from(["t", "--is-swt", "--offline"]).unwrap_or_else(|e| panic!("{e}"));
        assert!(t.d.is_swt && t.d.offline);
        assert_eq!(t.d.dataset, "princeton-nlp/SWE-bench_Lite");
        assert_eq!(t.d.split, "test");
        let t = T::try_parse_from(["t", "--swt-filter-list", "Verified"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.d.swt_filter_list, Some(SwtFilter::Verified));
        assert!(T::try_parse_from(["t", "--is_swt", "maybe"]).is_err());
    }

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

/// How the extraction formats behave (`--patch-types` other than vanilla alone), shared by `run`
/// and `extract` (docs/extraction.md).
#[derive(Debug, Clone, clap::Args)]
pub struct ExtractStyleArgs {
    /// Custom patch type: parity re-emits each file with ast.unparse, as the original (comments
    /// and formatting are lost); preserve changes only the replaced definitions and the appended
    /// code.
    #[arg(
        long,
        alias = "custom_patch_style",
        value_name = "STYLE",
        default_value = "parity"
    )]
    pub custom_patch_style: swtbench_extract::CustomStyle,

    /// Fuzzy patch type: parity keeps the original's placement (a change without following
    /// context truncates the file, the final newline is dropped); fixed does neither.
    #[arg(long, value_name = "STYLE", default_value = "parity")]
    pub fuzzy_style: swtbench_extract::FuzzyStyle,

    /// Vanilla patch type among others: parity never applies minimal patches under 8192 bytes,
    /// as the original (its temporary file is not flushed); fixed applies them.
    #[arg(long, value_name = "STYLE", default_value = "parity")]
    pub vanilla_style: swtbench_extract::VanillaStyle,
}

impl ExtractStyleArgs {
    pub fn options(&self) -> swtbench_extract::ExtractOptions {
        swtbench_extract::ExtractOptions {
            custom_style: self.custom_patch_style,
            fuzzy_style: self.fuzzy_style,
            vanilla_style: self.vanilla_style,
            ..swtbench_extract::ExtractOptions::default()
        }
    }
}
