//! What a run is measured against, decided once for every command: which benchmark a name means
//! (lite, verified or full with their fixed denominators and published gold runs, or a custom
//! dataset that is read), THE leaderboard denominator, and where a benchmark's gold run lives
//! and what it holds.
//!
//! `report` measures a model directory against the benchmark `--dataset` names; `run` measures
//! what it evaluated. Both go through [`denominator`] and the gold-run lookup here, so a table
//! printed by `run` and one printed by `report` for the same run cannot disagree by construction
//! of two rules. Nothing here prints.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use swtbench_core::Instance;
use swtbench_data::SwtFilter;
use swtbench_grade::leaderboard::Dataset;
use swtbench_grade::tree::{collect_reports, CollectedReports};
use swtbench_grade::InstanceReport;

use crate::tree::FsTree;
use crate::{Error, Result};

/// Model directory name of the gold predictions (`model_name_or_path = "gold"`).
pub const GOLD_MODEL_DIR: &str = "gold";

/// The benchmark named by `name` (lite/verified/full or one of their dataset aliases).
pub fn parse_dataset(name: &str) -> Result<Dataset> {
    if let Ok(d) = name.parse::<Dataset>() {
        return Ok(d);
    }
    swtbench_data::dataset::resolve_alias(name)
        .and_then(|k| k.key.parse::<Dataset>().ok())
        .ok_or_else(|| {
            Error::input(anyhow!("unknown benchmark `{name}`"))
                .with_hint("use lite, verified or full, or --denominator N for a custom set")
        })
}

/// Ids in any of the three SWT filter lists: the original skips them whatever the dataset.
pub fn filtered_ids() -> BTreeSet<&'static str> {
    SwtFilter::ALL.iter().flat_map(|f| f.ids()).collect()
}

/// What a model's run is measured against.
#[derive(Debug)]
pub enum Benchmark {
    /// lite, verified or full; `given`: named by `--dataset` rather than the default.
    Known { dataset: Dataset, given: bool },
    /// Any other dataset, read from `source` (the `--dataset` argument).
    Custom {
        source: String,
        instances: Vec<Instance>,
    },
}

/// What a benchmark name means, before a custom dataset is read.
#[derive(Debug)]
pub enum BenchmarkName {
    /// lite, verified or full (lite when no name is given).
    Known(Benchmark),
    /// Any other dataset (a local file or directory, or a hub dataset name): the caller reads it,
    /// as every command reads `--dataset`, and makes a [`Benchmark::Custom`] of it.
    Dataset(String),
}

impl Benchmark {
    /// The benchmark `name` names: a known one by name or alias, else a dataset to read. A name
    /// that is neither, nor a path nor a hub name (`owner/name`), is most likely a typo.
    pub fn named(name: Option<&str>) -> Result<BenchmarkName> {
        let Some(name) = name else {
            return Ok(BenchmarkName::Known(Benchmark::Known {
                dataset: Dataset::Lite,
                given: false,
            }));
        };
        if let Ok(dataset) = parse_dataset(name) {
            return Ok(BenchmarkName::Known(Benchmark::Known {
                dataset,
                given: true,
            }));
        }
        if !name.contains('/') && !Path::new(name).exists() {
            return Err(Error::input(anyhow!(
                "unknown dataset `{name}`: not lite, verified or full, and no such file or directory"
            ))
            .with_hint(
                "use lite, verified or full (the SWT-Bench denominators), a local dataset file, or a \
                 Hugging Face dataset name (owner/name)",
            ));
        }
        Ok(BenchmarkName::Dataset(name.to_string()))
    }

    /// The benchmark's name as a page shows it: lite/verified/full, or the dataset's file name (a
    /// hub dataset's name). `denominator` is the explicit one, if any.
    pub fn label(&self, denominator: Option<u64>) -> String {
        match self {
            Benchmark::Known {
                dataset,
                given: true,
            } => dataset.name().to_string(),
            Benchmark::Known { given: false, .. } if denominator.is_some() => {
                "not named (no --dataset; the denominator is --denominator)".to_string()
            }
            Benchmark::Known { dataset, .. } => format!("{} (the default)", dataset.name()),
            Benchmark::Custom { source, .. } => {
                let path = Path::new(source);
                match path.file_name() {
                    Some(n) if path.exists() => n.to_string_lossy().into_owned(),
                    _ => source.clone(),
                }
            }
        }
    }

    /// `explicit` (`--gold-run-id`), else the known benchmark's published gold run.
    pub fn gold_run_id(&self, explicit: Option<&str>) -> Option<String> {
        match (explicit, self) {
            (Some(id), _) => Some(id.to_string()),
            (None, Benchmark::Known { dataset, .. }) => Some(dataset.gold_run_id().to_string()),
            (None, Benchmark::Custom { .. }) => None,
        }
    }

    /// What the denominator counts for this benchmark.
    pub fn measured(&self) -> Measured<'_> {
        match self {
            Benchmark::Known { dataset, .. } => Measured::Benchmark(*dataset),
            Benchmark::Custom { source, instances } => Measured::Dataset { source, instances },
        }
    }

    /// The dataset's instances by id (none for a known benchmark, which is not read).
    pub fn instances_by_id(&self) -> BTreeMap<String, Instance> {
        match self {
            Benchmark::Custom { instances, .. } => instances
                .iter()
                .map(|i| (i.instance_id.to_string(), i.clone()))
                .collect(),
            Benchmark::Known { .. } => BTreeMap::new(),
        }
    }
}

/// What a leaderboard's denominator counts.
#[derive(Debug, Clone, Copy)]
pub enum Measured<'a> {
    /// The whole of a known benchmark: its fixed count of SWT-Bench instances.
    Benchmark(Dataset),
    /// A dataset that was read: its instances outside the SWT filter lists (whose reports are
    /// not counted either).
    Dataset {
        source: &'a str,
        instances: &'a [Instance],
    },
    /// The instances one evaluation ran (a selection, or a dataset that is not a whole known
    /// benchmark): their number, at least one.
    Evaluated(usize),
}

/// THE leaderboard denominator: `explicit` (`--denominator`) when given, else what `measured`
/// counts. A dataset without any instance outside the filter lists is an error.
pub fn denominator(explicit: Option<u64>, measured: Measured<'_>) -> Result<usize> {
    if let Some(n) = explicit {
        return Ok(n as usize);
    }
    match measured {
        Measured::Benchmark(dataset) => Ok(dataset.denominator()),
        Measured::Evaluated(n) => Ok(n.max(1)),
        Measured::Dataset { source, instances } => {
            let skip = filtered_ids();
            let n = instances
                .iter()
                .filter(|i| !skip.contains(i.instance_id.as_str()))
                .count();
            if n == 0 {
                return Err(Error::input(anyhow!(
                    "dataset {source} has no instances outside the SWT-Bench filter lists"
                ))
                .with_hint("pass --denominator N"));
            }
            Ok(n)
        }
    }
}

/// The known benchmark an evaluation is measured against: the dataset is one (its alias's
/// short name is `known`), it was filtered with its SWT list (`filter_swt`) and no instances
/// were selected out of it. Anything else is measured by what was evaluated.
pub fn benchmark_of_run(known: Option<&str>, selection: bool, filter_swt: bool) -> Option<Dataset> {
    known
        .and_then(|k| k.parse::<Dataset>().ok())
        .filter(|_| !selection && filter_swt)
}

/// The denominator of an evaluation's table: the known benchmark's count, else the number of
/// instances evaluated (at least one).
pub fn run_denominator(benchmark: Option<Dataset>, evaluated: usize) -> usize {
    let measured = benchmark.map_or(Measured::Evaluated(evaluated), Measured::Benchmark);
    // Neither a benchmark nor an evaluation can lack instances to count.
    denominator(None, measured).unwrap_or(1)
}

/// Where the gold run `run_id` of a logs root keeps its reports: `<root>/<run_id>/gold`.
pub fn gold_run_dir(logs_root: &Path, run_id: &str) -> PathBuf {
    logs_root.join(run_id).join(GOLD_MODEL_DIR)
}

/// The reports of the gold run `run_id` under `logs_root`, skipping the ids `skip` names;
/// `Ok(None)` when the run has no report directory.
pub fn gold_reports(
    logs_root: &Path,
    run_id: &str,
    skip: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Option<CollectedReports>> {
    let dir = gold_run_dir(logs_root, run_id);
    collect_reports(&FsTree, &dir, skip)
        .map_err(|e| Error::input(anyhow!("reading {}: {e}", dir.display())))
}

/// The reports of a known benchmark's published gold run under `logs_root`, every one of them;
/// `None` when it is not there or cannot be read (an evaluation's table then has no coverage
/// rows).
pub fn published_gold_reports(logs_root: &Path, benchmark: Dataset) -> Option<Vec<InstanceReport>> {
    gold_reports(logs_root, benchmark.gold_run_id(), &|_| false)
        .ok()
        .flatten()
        .map(|c| c.reports)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn known_benchmarks_by_name_alias_or_default() {
        let BenchmarkName::Known(b) = Benchmark::named(None).unwrap() else {
            panic!("lite is the default");
        };
        assert!(matches!(
            b,
            Benchmark::Known {
                dataset: Dataset::Lite,
                given: false
            }
        ));
        assert_eq!(b.label(None), "lite (the default)");
        assert_eq!(b.gold_run_id(None).as_deref(), Some("validate-lite-gold-1"));
        assert_eq!(parse_dataset("Verified").unwrap(), Dataset::Verified);
        assert!(parse_dataset("nothing-known").is_err());
        let err = Benchmark::named(Some("litee")).unwrap_err();
        assert!(err.to_string().contains("unknown dataset `litee`"), "{err}");
        assert!(matches!(
            Benchmark::named(Some("owner/name")).unwrap(),
            BenchmarkName::Dataset(n) if n == "owner/name"
        ));
    }

    #[test]
    fn one_denominator_rule_for_report_and_run() {
        assert_eq!(denominator(Some(7), Measured::Evaluated(3)).unwrap(), 7);
        assert_eq!(
            denominator(None, Measured::Benchmark(Dataset::Full)).unwrap(),
            1983
        );
        assert_eq!(denominator(None, Measured::Evaluated(0)).unwrap(), 1);
        let empty: &[Instance] = &[];
        assert!(denominator(
            None,
            Measured::Dataset {
                source: "x.jsonl",
                instances: empty
            }
        )
        .is_err());
        // `run`: the benchmark only for the whole filtered dataset.
        assert_eq!(
            benchmark_of_run(Some("lite"), false, true),
            Some(Dataset::Lite)
        );
        assert_eq!(benchmark_of_run(Some("lite"), true, true), None);
        assert_eq!(benchmark_of_run(Some("lite"), false, false), None);
        assert_eq!(benchmark_of_run(None, false, true), None);
        assert_eq!(run_denominator(Some(Dataset::Verified), 5), 433);
        assert_eq!(run_denominator(None, 5), 5);
        assert_eq!(run_denominator(None, 0), 1);
    }
}
