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
use swtbench_core::layout::REPORT_FILE;
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
            let guess = swtbench_data::dataset::near_alias(name)
                .map(|alias| format!("; did you mean \"{alias}\"?"))
                .unwrap_or_default();
            return Err(Error::input(anyhow!(
                "unknown dataset `{name}`: not lite, verified or full, and no such file or \
                 directory{guess}"
            ))
            .with_hint(
                "use lite, verified or full (the SWT-Bench denominators), a local dataset file, or a \
                 Hugging Face dataset name (owner/name)",
            ));
        }
        Ok(BenchmarkName::Dataset(name.to_string()))
    }

    /// The benchmark's name as a page shows it: lite/verified/full, or the dataset's file name (a
    /// hub dataset's name). `source` is where the denominator came from.
    pub fn label(&self, source: &DenominatorSource) -> String {
        match self {
            Benchmark::Known {
                dataset,
                given: true,
            } => dataset.name().to_string(),
            Benchmark::Known { given: false, .. } if *source == DenominatorSource::Explicit => {
                "not named (no --dataset; the denominator is --denominator)".to_string()
            }
            Benchmark::Known { given: false, .. }
                if matches!(source, DenominatorSource::Run(_)) =>
            {
                "not named (no --dataset; the denominator is the run's own instances)".to_string()
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

    /// The known benchmark's published gold run id (none for a custom dataset).
    pub fn published_gold_run_id(&self) -> Option<&'static str> {
        match self {
            Benchmark::Known { dataset, .. } => Some(dataset.gold_run_id()),
            Benchmark::Custom { .. } => None,
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

/// What a run's own record says it evaluated: the instances of its run report
/// (`evaluation_results/<model>.<run_id>.json`) outside the SWT filter lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    /// The run report read.
    pub path: PathBuf,
    pub instances: usize,
}

/// Where the run report of the model directory `<logs root>/<run_id>/<model>` is: beside the
/// logs root, `<logs root>/../evaluation_results/<model>.<run_id>.json`, as `run` (and the
/// original) write the two trees under one output directory. `None` when the path has no
/// `<run_id>` and logs root above it.
pub fn run_report_of(model_dir: &Path) -> Option<PathBuf> {
    let model = model_dir.file_name()?.to_str()?;
    let run_dir = model_dir.parent()?;
    let run_id = run_dir.file_name()?.to_str()?;
    let logs_root = run_dir.parent()?;
    let output_dir = logs_root.parent().unwrap_or(Path::new(""));
    Some(swtbench_core::layout::evaluation_results_path(
        &output_dir.join(swtbench_core::layout::EVALUATION_RESULTS_DIR),
        model,
        run_id,
    ))
}

/// Why a run has no record [`run_record`] can read: the file looked for, and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum RunRecordError {
    #[error("resolving {}: {source}", path.display())]
    Unresolvable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} names no <logs root>/<run_id>/<model>", .0.display())]
    NotAModelDir(PathBuf),
    #[error("{} cannot be read: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is no run report: {source}", path.display())]
    NotARunReport {
        path: PathBuf,
        source: swtbench_grade::run_report::RecordedInstancesError,
    },
}

/// The record of the run at `model_dir` ([`run_report_of`]), or why there is none (the file
/// looked for, and what is wrong with it).
pub fn run_record(model_dir: &Path) -> std::result::Result<RunRecord, RunRecordError> {
    let path = run_report_of(model_dir)
        .ok_or_else(|| RunRecordError::NotAModelDir(model_dir.to_path_buf()))?;
    let text = std::fs::read_to_string(&path).map_err(|source| RunRecordError::Unreadable {
        path: path.clone(),
        source,
    })?;
    let recorded =
        swtbench_grade::run_report::RecordedInstances::from_json(&text).map_err(|source| {
            RunRecordError::NotARunReport {
                path: path.clone(),
                source,
            }
        })?;
    let skip = filtered_ids();
    Ok(RunRecord {
        instances: recorded.count(&|id| skip.contains(id)),
        path,
    })
}

/// Where `report`'s denominator came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenominatorSource {
    /// `--denominator`.
    Explicit,
    /// The benchmark `--dataset` names: a known one's fixed count, or a read dataset's instances.
    Dataset,
    /// No `--dataset`: the run's own instances, from its run report.
    Run(PathBuf),
    /// No `--dataset` and no run report: lite's fixed count, the original's default.
    Default,
}

/// `report`'s denominator, where it came from, and what to say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportDenominator {
    pub value: usize,
    pub source: DenominatorSource,
    pub notices: Vec<crate::lines::Notice>,
}

/// THE denominator of `report`: `--denominator` when given; else the benchmark `--dataset`
/// names ([`denominator`]), with a warning when the run's record (`run`, when it was found)
/// counts another number of instances; else, without `--dataset`, the run's own instances
/// (so a run of 10 instances is not divided by lite's 276), and lite's count with a warning when
/// the run has no record. A run of a whole benchmark has that benchmark's count of instances,
/// so its numbers are the same either way. Pure.
pub fn report_denominator(
    explicit: Option<u64>,
    benchmark: &Benchmark,
    run: Option<&std::result::Result<RunRecord, RunRecordError>>,
) -> Result<ReportDenominator> {
    use crate::lines::Notice;
    let value = denominator(explicit, benchmark.measured())?;
    let record = run.and_then(|r| r.as_ref().ok());
    if explicit.is_some() {
        return Ok(ReportDenominator {
            value,
            source: DenominatorSource::Explicit,
            notices: vec![Notice::Info(format!("denominator {value} (--denominator)"))],
        });
    }
    let named = match benchmark {
        Benchmark::Known {
            dataset,
            given: true,
        } => Some(format!("{}'s fixed count", dataset.name())),
        Benchmark::Custom { source, .. } => Some(format!("the instances of {source}")),
        Benchmark::Known { given: false, .. } => None,
    };
    if let Some(named) = named {
        let mut notices = vec![Notice::Info(format!("denominator {value}: {named}"))];
        if let Some(r) = record.filter(|r| r.instances != value) {
            notices.push(Notice::Warn(format!(
                "the run has {} instances (its run report {}) but the denominator is {value}, \
                 {named}: the instances it did not evaluate count as failed; leave out --dataset \
                 to divide by the run's own {}",
                r.instances,
                r.path.display(),
                r.instances
            )));
        }
        return Ok(ReportDenominator {
            value,
            source: DenominatorSource::Dataset,
            notices,
        });
    }
    match (record, run) {
        (Some(r), _) => {
            let value = r.instances.max(1);
            Ok(ReportDenominator {
                value,
                source: DenominatorSource::Run(r.path.clone()),
                notices: vec![Notice::Info(format!(
                    "denominator {value}: the run's instances (its run report {}); pass \
                     --dataset lite, verified or full to divide by a benchmark's fixed count",
                    r.path.display()
                ))],
            })
        }
        (None, why) => {
            let why = match why {
                Some(Err(why)) => format!(" ({why})"),
                _ => String::new(),
            };
            Ok(ReportDenominator {
                value,
                source: DenominatorSource::Default,
                notices: vec![Notice::Warn(format!(
                    "denominator {value}: lite's fixed count (the default), as the run's own \
                     record was not found{why}; pass --dataset or --denominator if the run is \
                     not the whole of SWT-Bench Lite"
                ))],
            })
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
    swtbench_core::layout::LogsRoot::new(logs_root).model_reports_dir(run_id, GOLD_MODEL_DIR)
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

/// A gold run found under a logs root: `<root>/<run_id>/gold/`, with reports for `covered` of
/// the instances asked about; `modified` orders equally good ones (newest first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldCandidate {
    pub run_id: String,
    pub covered: usize,
    pub modified: Option<std::time::SystemTime>,
}

/// The gold runs under `logs_root` that have a `report.json` for at least one of `instance_ids`
/// and coverage in it (a gold run made without coverage, or in reproduction mode, has none to
/// offer). File names are looked at (one `stat` per run and instance) and one report per run is
/// read, so a large logs root is searched in moments.
pub fn gold_candidates(logs_root: &Path, instance_ids: &[String]) -> Vec<GoldCandidate> {
    let Ok(entries) = std::fs::read_dir(logs_root) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in entries.flatten() {
        let Some(run_id) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let dir = gold_run_dir(logs_root, &run_id);
        let Ok(meta) = std::fs::metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        let reported: Vec<&String> = instance_ids
            .iter()
            .filter(|id| dir.join(id.as_str()).join(REPORT_FILE).is_file())
            .collect();
        let covered = reported.len();
        if reported
            .first()
            .is_some_and(|id| has_gold_coverage(&dir.join(id.as_str()).join(REPORT_FILE), id))
        {
            found.push(GoldCandidate {
                run_id,
                covered,
                modified: meta.modified().ok(),
            });
        }
    }
    found
}

/// Whether the gold report at `path` (of instance `id`) has a `coverage_delta_gold` number.
fn has_gold_coverage(path: &Path, id: &str) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v[id]["coverage_delta_gold"].is_number())
}

/// Where the coverage rows of a model run come from, and what to say about it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GoldChoice {
    pub run_id: Option<String>,
    pub notices: Vec<crate::lines::Notice>,
}

/// The gold run whose coverage the Δ rows of a model run are measured against: `explicit`
/// (`--gold-run-id`) when given; else `published` (a known benchmark's published gold run) when
/// it is among `candidates`; else the candidate with reports for the most of the `wanted`
/// instances, the newest among equals. A chosen run is named in a notice, and a warning says when
/// another run would have done as well. Pure.
pub fn choose_gold_run(
    explicit: Option<&str>,
    published: Option<&str>,
    candidates: &[GoldCandidate],
    wanted: usize,
) -> GoldChoice {
    use crate::lines::Notice;
    if let Some(id) = explicit {
        return GoldChoice {
            run_id: Some(id.to_string()),
            notices: Vec::new(),
        };
    }
    if let Some(p) = published {
        if let Some(pc) = candidates.iter().find(|c| c.run_id == p) {
            // The published run, as the original's report uses it; say when another covers more.
            let better = candidates
                .iter()
                .filter(|c| c.covered > pc.covered)
                .max_by_key(|c| c.covered);
            let notices = better
                .map(|b| {
                    Notice::Warn(format!(
                        "the published gold run {p} has reports for {} of the {wanted} \
                         instances, gold run {} for {}; pass --gold-run-id {} to use it",
                        pc.covered, b.run_id, b.covered, b.run_id
                    ))
                })
                .into_iter()
                .collect();
            return GoldChoice {
                run_id: Some(p.to_string()),
                notices,
            };
        }
    }
    let mut ranked: Vec<&GoldCandidate> = candidates.iter().collect();
    ranked.sort_by(|a, b| {
        b.covered
            .cmp(&a.covered)
            .then(b.modified.cmp(&a.modified))
            .then(a.run_id.cmp(&b.run_id))
    });
    let Some(best) = ranked.first() else {
        // Nothing found: the published run still names where the coverage was looked for.
        return GoldChoice {
            run_id: published.map(str::to_string),
            notices: Vec::new(),
        };
    };
    let mut notices = vec![Notice::Info(format!(
        "coverage rows relative to gold run {} (found under the same logs root; it has reports \
         for {} of the {wanted} instances)",
        best.run_id, best.covered
    ))];
    let equal: Vec<&str> = ranked[1..]
        .iter()
        .filter(|c| c.covered == best.covered)
        .map(|c| c.run_id.as_str())
        .collect();
    if !equal.is_empty() {
        notices.push(Notice::Warn(format!(
            "gold runs {} cover as many instances as {}; {} is used (the newest); pass \
             --gold-run-id to choose",
            equal.join(", "),
            best.run_id,
            best.run_id
        )));
    }
    GoldChoice {
        run_id: Some(best.run_id.clone()),
        notices,
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
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
        assert_eq!(b.label(&DenominatorSource::Default), "lite (the default)");
        assert_eq!(b.published_gold_run_id(), Some("validate-lite-gold-1"));
        assert_eq!(parse_dataset("Verified").unwrap(), Dataset::Verified);
        assert!(parse_dataset("nothing-known").is_err());
        let err = Benchmark::named(Some("litee")).unwrap_err();
        assert!(err.to_string().contains("unknown dataset `litee`"), "{err}");
        assert!(err.to_string().ends_with("did you mean \"lite\"?"), "{err}");
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

    #[test]
    fn report_divides_by_the_run_without_a_dataset_and_warns_when_a_dataset_differs() {
        use crate::lines::Notice;
        let default = Benchmark::Known {
            dataset: Dataset::Lite,
            given: false,
        };
        let lite = Benchmark::Known {
            dataset: Dataset::Lite,
            given: true,
        };
        let record = |n| {
            Ok(RunRecord {
                path: PathBuf::from("evaluation_results/m.r.json"),
                instances: n,
            })
        };
        let warnings = |d: &ReportDenominator| {
            d.notices
                .iter()
                .filter_map(|n| match n {
                    Notice::Warn(t) => Some(t.clone()),
                    Notice::Info(_) => None,
                })
                .collect::<Vec<_>>()
        };
        // A run of 10 instances, no --dataset: 10, said, no warning.
        let d = report_denominator(None, &default, Some(&record(10))).unwrap();
        assert_eq!(d.value, 10);
        assert_eq!(
            d.source,
            DenominatorSource::Run(PathBuf::from("evaluation_results/m.r.json"))
        );
        assert!(warnings(&d).is_empty(), "{:?}", d.notices);
        assert!(
            matches!(&d.notices[..], [Notice::Info(t)] if t.starts_with("denominator 10: the run's instances")),
            "{:?}",
            d.notices
        );
        assert!(default.label(&d.source).contains("the run's own instances"));
        // The whole of Lite evaluated: the same 276 either way (score parity).
        let d = report_denominator(None, &default, Some(&record(276))).unwrap();
        assert_eq!(d.value, 276);
        let d = report_denominator(None, &lite, Some(&record(276))).unwrap();
        assert_eq!(d.value, 276);
        assert!(warnings(&d).is_empty(), "{:?}", d.notices);
        // --dataset lite on a run of 10: 276, with a warning naming both.
        let d = report_denominator(None, &lite, Some(&record(10))).unwrap();
        assert_eq!(
            (d.value, d.source.clone()),
            (276, DenominatorSource::Dataset)
        );
        let w = warnings(&d);
        assert!(
            w.len() == 1
                && w[0].contains("the run has 10 instances")
                && w[0].contains("denominator is 276, lite's fixed count"),
            "{w:?}"
        );
        // No record: lite's 276, with a warning saying why.
        let unreadable = RunRecordError::Unreadable {
            path: PathBuf::from("x.json"),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        };
        let d = report_denominator(None, &default, Some(&Err(unreadable))).unwrap();
        assert_eq!(
            (d.value, d.source.clone()),
            (276, DenominatorSource::Default)
        );
        assert!(
            warnings(&d)[0].contains("(x.json cannot be read: gone)"),
            "{:?}",
            d.notices
        );
        // --denominator wins over everything, quietly.
        let d = report_denominator(Some(50), &lite, Some(&record(10))).unwrap();
        assert_eq!(
            (d.value, d.source.clone()),
            (50, DenominatorSource::Explicit)
        );
        assert!(warnings(&d).is_empty());
        // An empty record still divides by at least one.
        assert_eq!(
            report_denominator(None, &default, Some(&record(0)))
                .unwrap()
                .value,
            1
        );
    }

    #[test]
    fn the_run_report_of_a_model_directory_is_beside_the_logs_root() {
        assert_eq!(
            run_report_of(Path::new("out/run_instance_swt_logs/r1/org__m")),
            Some(PathBuf::from("out/evaluation_results/org__m.r1.json"))
        );
        assert_eq!(
            run_report_of(Path::new("/x/logs/r1/m")),
            Some(PathBuf::from("/x/evaluation_results/m.r1.json"))
        );
        assert_eq!(
            run_report_of(Path::new("logs/r1/m")),
            Some(PathBuf::from("evaluation_results/m.r1.json"))
        );
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("logs/r1/m");
        assert!(run_record(&model)
            .unwrap_err()
            .to_string()
            .contains("cannot be read"));
        std::fs::create_dir_all(dir.path().join("evaluation_results")).unwrap();
        // django__django-13658 is in lite's SWT filter list: not counted, as its report is not.
        std::fs::write(
            dir.path().join("evaluation_results/m.r1.json"),
            r#"{"total_instances": 3, "resolved_ids": ["a__a-1"], "unresolved_ids": ["django__django-13658"], "error_ids": ["a__a-2"]}"#,
        )
        .unwrap();
        let r = run_record(&model).unwrap();
        assert_eq!(r.instances, 2);
        assert_eq!(r.path, dir.path().join("evaluation_results/m.r1.json"));
    }

    #[test]
    fn gold_runs_are_chosen_explicit_then_published_then_by_coverage() {
        use crate::lines::Notice;
        use std::time::{Duration, UNIX_EPOCH};
        let c = |id: &str, covered: usize, t: u64| GoldCandidate {
            run_id: id.into(),
            covered,
            modified: Some(UNIX_EPOCH + Duration::from_secs(t)),
        };
        let cands = vec![
            c("old", 5, 1),
            c("partial", 3, 9),
            c("new", 5, 2),
            c("lite-gold", 1, 0),
        ];
        let pick = |e, p| choose_gold_run(e, p, &cands, 5);
        assert_eq!(
            pick(Some("mine"), Some("lite-gold")).run_id.as_deref(),
            Some("mine")
        );
        assert!(pick(Some("mine"), None).notices.is_empty());
        // The published run wins (as in the original's report), with a word about a better one.
        let published = pick(None, Some("lite-gold"));
        assert_eq!(published.run_id.as_deref(), Some("lite-gold"));
        assert!(
            matches!(&published.notices[..], [Notice::Warn(t)] if t.contains("--gold-run-id")),
            "{:?}",
            published.notices
        );
        // A published run that is not there does not count; the best covered, newest first.
        let g = pick(None, Some("absent"));
        assert_eq!(g.run_id.as_deref(), Some("new"));
        assert!(
            matches!(&g.notices[0], Notice::Info(t) if t.contains("gold run new") && t.contains("5 of the 5"))
        );
        assert!(
            matches!(&g.notices[1], Notice::Warn(t) if t.contains("gold runs old cover as many"))
        );
        let only = choose_gold_run(None, None, &cands[1..2], 5);
        assert_eq!(only.run_id.as_deref(), Some("partial"));
        assert_eq!(only.notices.len(), 1, "no warning without an equal");
        assert_eq!(choose_gold_run(None, None, &[], 5), GoldChoice::default());
        let nothing = choose_gold_run(None, Some("lite-gold"), &[], 5);
        assert_eq!(nothing.run_id.as_deref(), Some("lite-gold"));
    }

    #[test]
    fn gold_candidates_are_the_gold_dirs_with_reports_of_wanted_instances() {
        let root = tempfile::tempdir().unwrap();
        for (run, ids) in [
            ("g1", &["a", "b"][..]),
            ("g2", &["b"][..]),
            ("g3", &["z"][..]),
        ] {
            for id in ids {
                let d = root.path().join(run).join("gold").join(id);
                std::fs::create_dir_all(&d).unwrap();
                let cov = if run == "g2" { "0.5" } else { "1.0" };
                std::fs::write(
                    d.join("report.json"),
                    format!("{{\"{id}\": {{\"coverage_delta_gold\": {cov}}}}}"),
                )
                .unwrap();
            }
        }
        std::fs::create_dir_all(root.path().join("model-run/acme__m/a")).unwrap();
        // A gold run without coverage (--no-coverage, reproduction mode) is no candidate.
        let d = root.path().join("nocov/gold/a");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("report.json"),
            r#"{"a": {"coverage_delta_gold": null}}"#,
        )
        .unwrap();
        let mut got: Vec<(String, usize)> = gold_candidates(root.path(), &["a".into(), "b".into()])
            .into_iter()
            .map(|c| (c.run_id, c.covered))
            .collect();
        got.sort();
        assert_eq!(got, vec![("g1".into(), 2), ("g2".into(), 1)]);
        assert!(gold_candidates(&root.path().join("missing"), &["a".into()]).is_empty());
    }
}
