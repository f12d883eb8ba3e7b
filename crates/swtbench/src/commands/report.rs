//! `swtbench report PATH`: the leaderboard table of one model's run, like the original's
//! `python -m src.report` (§1.2, §7.5). `PATH` is `<logs root>/<run_id>/<model>`.
//!
//! The run is measured against lite, verified or full (fixed denominators, published gold runs),
//! or against a custom dataset that is read: its instance count is the denominator and, with
//! `--spec-table`, the HTML page reads its repositories' logs as `swtbench run` did.
//!
//! Also home of [`FsTree`], the `std::fs` view of a log tree that `report` and `grade` hand to the
//! pure grading code.

use std::collections::{BTreeMap, BTreeSet};

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use swtbench_core::Instance;
use swtbench_data::SwtFilter;
use swtbench_grade::leaderboard::{self, Dataset, NoCoverage};
use swtbench_grade::tree::{collect_reports, CollectedReports};
use swtbench_grade::Parser;
use swtbench_spec::SpecTable;

use crate::args::DatasetArgs;
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;
use crate::settings::load_spec_table;

mod html;
pub use html::{HtmlArgs, ReportFormat};

/// Model directory name of the gold predictions (`model_name_or_path = "gold"`).
const GOLD_MODEL_DIR: &str = "gold";

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The model's report directory: `<logs root>/<run_id>/<model>` (e.g.
    /// `run_instance_swt_logs/my-run/gpt-4o`).
    #[arg(value_name = "PATH", required_unless_present = "compare")]
    pub path: Option<PathBuf>,

    /// Which benchmark the run is on. lite, verified or full (or any alias of them) select the
    /// denominator (276 / 433 / 1983) and the default gold run. Any other dataset (a local
    /// .json/.jsonl/.parquet file or a directory of them, or a Hugging Face dataset name) is
    /// read: its number of instances is the denominator (instances in the SWT filter lists are
    /// not counted), the page names it and takes its instances' gold fixes and gold runs from it,
    /// and there is no default gold run (see --gold-run-id). Default: lite.
    #[arg(long, alias = "dataset_name", value_name = "DATASET")]
    pub dataset: Option<String>,

    /// The split of a dataset that is read (see --dataset).
    #[arg(long, value_name = "SPLIT", default_value = "test")]
    pub split: String,

    /// Divide by this many instances instead of the dataset's count (subsets of a dataset).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub denominator: Option<u64>,

    /// Output format: github (Markdown table, the default), latex, json, csv, or html (a
    /// self-contained page with the summary, every instance and its logs; see --out). --compare
    /// writes html only.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<ReportFormat>,

    /// Run id of the gold run whose coverage is the Δᵃˡˡ denominator (under the same logs root,
    /// model `gold`). Default: the original's per dataset (validate-lite-gold-1,
    /// validate-verified-gold-1, validate-full-gold); none for other datasets.
    #[arg(long, alias = "gold_run_id", value_name = "RUN_ID")]
    pub gold_run_id: Option<String>,

    /// `single` (default), or `p@k` over several samples of one model: PATH holds `{seed}`,
    /// replaced by each of --seeds, and per instance one seed's report counts (the first seed that
    /// is resolved, else has the most added F→P tests, else the largest coverage delta, else
    /// applied), as the original's `--mode p@k`. Table formats only.
    #[arg(long, value_name = "MODE", default_value = "single", value_parser = ["single", "p@k"])]
    pub mode: String,

    /// The seeds that replace `{seed}` in PATH with --mode p@k, in the order they are tried.
    #[arg(long, value_name = "SEED", num_args = 1..)]
    pub seeds: Vec<String>,

    /// Column header of the table (default: the run id).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// Round numbers in github/latex/csv output to this many decimals (default: unrounded, as
    /// the original prints them).
    #[arg(long, value_name = "N")]
    pub decimals: Option<usize>,

    /// Extra spec table entries (TOML, or JSON for *.json), applied over the embedded table, as
    /// given to `swtbench run`: the HTML page (and --compare) reads the logs of repositories the
    /// original has no parser for with their `log_parser`, and finds their shared gold/base runs
    /// under their `non_test_extensions`. The tables read report.json files only; the file is
    /// checked all the same.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,

    #[command(flatten)]
    pub html: HtmlArgs,
}

pub use swtbench_app::tree::FsTree;

/// The benchmark named by `name` (lite/verified/full or one of their dataset aliases).
pub fn parse_dataset(name: &str) -> Result<Dataset, CliError> {
    if let Ok(d) = name.parse::<Dataset>() {
        return Ok(d);
    }
    swtbench_data::dataset::resolve_alias(name)
        .and_then(|k| k.key.parse::<Dataset>().ok())
        .ok_or_else(|| {
            CliError::input(anyhow!("unknown benchmark `{name}`"))
                .with_hint("use lite, verified or full, or --denominator N for a custom set")
        })
}

/// Ids in any of the three SWT filter lists: the original skips them whatever the dataset.
fn filtered_ids() -> BTreeSet<&'static str> {
    SwtFilter::ALL.iter().flat_map(|f| f.ids()).collect()
}

/// What a run is measured against.
#[derive(Debug)]
enum Benchmark {
    /// lite, verified or full; `given`: named by --dataset rather than the default.
    Known { dataset: Dataset, given: bool },
    /// Any other dataset, read from `source` (the --dataset argument).
    Custom {
        source: String,
        instances: Vec<Instance>,
    },
}

impl Benchmark {
    /// The dataset `--dataset` names: a known benchmark by name or alias, else read (a local
    /// file or directory, or a hub dataset, as every other command reads `--dataset`).
    fn resolve(args: &ReportArgs, printer: &Printer) -> Result<Benchmark, CliError> {
        let Some(name) = &args.dataset else {
            return Ok(Benchmark::Known {
                dataset: Dataset::Lite,
                given: false,
            });
        };
        if let Ok(dataset) = parse_dataset(name) {
            return Ok(Benchmark::Known {
                dataset,
                given: true,
            });
        }
        // Neither a benchmark name, a path nor a hub name (`owner/name`): most likely a typo.
        if !name.contains('/') && !std::path::Path::new(name).exists() {
            return Err(CliError::input(anyhow!(
                "unknown dataset `{name}`: not lite, verified or full, and no such file or directory"
            ))
            .with_hint(
                "use lite, verified or full (the SWT-Bench denominators), a local dataset file, or a \
                 Hugging Face dataset name (owner/name)",
            ));
        }
        let loaded = DatasetArgs {
            dataset: name.clone(),
            split: args.split.clone(),
            filter_swt: false,
            swt_filter_list: None,
            is_swt: false,
            offline: false,
            instance_ids: Vec::new(),
        }
        .load(printer)?;
        if !loaded.problems.is_empty() {
            printer.warn(&format!(
                "{}: {} row(s) are not valid instances and are not counted (`swtbench validate \
                 --dataset {name}` lists them)",
                loaded.name,
                loaded.problems.len()
            ));
        }
        Ok(Benchmark::Custom {
            source: name.clone(),
            instances: loaded.instances,
        })
    }

    /// The benchmark's name as the page shows it: lite/verified/full, or the dataset's file name
    /// (a hub dataset's name).
    fn label(&self, denominator: Option<u64>) -> String {
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

    /// `--gold-run-id`, else the known benchmark's published gold run.
    fn gold_run_id(&self, args: &ReportArgs) -> Option<String> {
        match (&args.gold_run_id, self) {
            (Some(id), _) => Some(id.clone()),
            (None, Benchmark::Known { dataset, .. }) => Some(dataset.gold_run_id().to_string()),
            (None, Benchmark::Custom { .. }) => None,
        }
    }

    /// `--denominator`, else the benchmark's fixed count, else the dataset's instances outside
    /// the SWT filter lists (the reports of those are not counted either).
    fn denominator(&self, args: &ReportArgs) -> Result<usize, CliError> {
        if let Some(n) = args.denominator {
            return Ok(n as usize);
        }
        match self {
            Benchmark::Known { dataset, .. } => Ok(dataset.denominator()),
            Benchmark::Custom { source, instances } => {
                let skip = filtered_ids();
                let n = instances
                    .iter()
                    .filter(|i| !skip.contains(i.instance_id.as_str()))
                    .count();
                if n == 0 {
                    return Err(CliError::input(anyhow!(
                        "dataset {source} has no instances outside the SWT-Bench filter lists"
                    ))
                    .with_hint("pass --denominator N"));
                }
                Ok(n)
            }
        }
    }
}

pub fn run(args: ReportArgs, printer: &Printer) -> CliResult {
    // The spec table first: a bad file is an error whatever the format.
    let table = load_spec_table(args.spec_table.as_deref())?;
    let parsers = log_parsers(&table, args.spec_table.as_deref())?;
    let benchmark = Benchmark::resolve(&args, printer)?;
    let denominator = benchmark.denominator(&args)?;
    let gold_run_id = benchmark.gold_run_id(&args);
    let out = args.html.out.as_deref();
    let measure =
        |path: &Path| leaderboard_for(path, &[], gold_run_id.as_deref(), denominator, printer);
    let page_context = || {
        let gold_run_id = gold_run_id.as_deref();
        page_context(
            &benchmark,
            &args,
            &table,
            &parsers,
            gold_run_id,
            denominator,
        )
    };
    if let Some(pair) = &args.html.compare {
        if let Some(ReportFormat::Table(_)) = args.format {
            return Err(CliError::input(anyhow!(
                "--compare writes an HTML page; a table format cannot show a comparison"
            ))
            .with_hint(
                "leave out --format (or pass --format html), or run `swtbench report` on each run",
            ));
        }
        let a = measure(&pair[0])?;
        let b = measure(&pair[1])?;
        let ctx = page_context();
        return html::write_compare([(&pair[0], &a), (&pair[1], &b)], &ctx, out, printer);
    }
    let Some(path) = args.path.as_deref() else {
        return Err(CliError::input(anyhow!("missing PATH"))
            .with_hint("pass <logs root>/<run_id>/<model>, or --compare RUN_A RUN_B"));
    };
    let seeds: &[String] = if args.mode == "p@k" {
        if !path.to_string_lossy().contains("{seed}") || args.seeds.is_empty() {
            return Err(CliError::input(anyhow!(
                "--mode p@k needs a PATH with {{seed}} in it and --seeds"
            ))
            .with_hint(
                "e.g. swtbench report 'run_instance_swt_logs/my-run-{seed}/my-model' --mode p@k \
                 --seeds 1 2 3",
            ));
        }
        &args.seeds
    } else {
        if !args.seeds.is_empty() {
            return Err(CliError::input(anyhow!(
                "--seeds is only used with --mode p@k"
            )));
        }
        &[]
    };
    if !seeds.is_empty() {
        let ReportFormat::Table(format) = args.format.unwrap_or_default() else {
            return Err(CliError::input(anyhow!(
                "--mode p@k makes a table; the HTML page shows one run"
            ))
            .with_hint("use --format github|latex|json|csv, or report each seed's run"));
        };
        if out.is_some() {
            return Err(
                CliError::input(anyhow!("--out is only used with --format html"))
                    .with_hint("redirect stdout to save a table"),
            );
        }
        let metrics = leaderboard_for(path, seeds, gold_run_id.as_deref(), denominator, printer)?;
        let (run_id, _) = run_id_and_root(path)?;
        let name = args.name.clone().unwrap_or(run_id);
        printer.data(&leaderboard::render(&metrics, &name, format, args.decimals));
        return Ok(ExitCode::Success);
    }
    let metrics = measure(path)?;
    match args.format.unwrap_or_default() {
        ReportFormat::Html => {
            let ctx = page_context();
            html::write_run(path, &metrics, &ctx, out, printer)
        }
        ReportFormat::Table(format) => {
            if out.is_some() {
                return Err(
                    CliError::input(anyhow!("--out is only used with --format html"))
                        .with_hint("redirect stdout to save a table"),
                );
            }
            let (run_id, _) = run_id_and_root(path)?;
            let name = args.name.clone().unwrap_or(run_id);
            printer.data(&leaderboard::render(&metrics, &name, format, args.decimals));
            Ok(ExitCode::Success)
        }
    }
}

/// What an HTML page needs besides the tree: the parameters it lists, the dataset's instances
/// and the spec table's rules for reading the logs.
fn page_context(
    benchmark: &Benchmark,
    args: &ReportArgs,
    table: &SpecTable,
    parsers: &BTreeMap<String, Parser>,
    gold_run_id: Option<&str>,
    denominator: usize,
) -> html::PageContext {
    let mut params = vec![("benchmark".to_string(), benchmark.label(args.denominator))];
    let instances = match benchmark {
        Benchmark::Custom { source, instances } => {
            params.push(("dataset".to_string(), source.clone()));
            params.push(("split".to_string(), args.split.clone()));
            instances
                .iter()
                .map(|i| (i.instance_id.to_string(), i.clone()))
                .collect()
        }
        Benchmark::Known { .. } => BTreeMap::new(),
    };
    params.extend([
        ("denominator".to_string(), denominator.to_string()),
        (
            "gold run (coverage rows)".to_string(),
            gold_run_id
                .unwrap_or("none (pass --gold-run-id)")
                .to_string(),
        ),
        (
            "filter".to_string(),
            "instances in the SWT-Bench filter lists are not counted".to_string(),
        ),
    ]);
    if let Some(p) = &args.spec_table {
        params.push(("spec table".to_string(), p.display().to_string()));
    }
    html::PageContext {
        params,
        denominator,
        instances,
        parsers: parsers.clone(),
        non_test_exts: non_test_exts(table),
    }
}

/// The spec table's `non_test_extensions` (per repository and the table's own), which decide the
/// directive hashes of the shared gold/base run directories the HTML page reads.
pub(crate) fn non_test_exts(table: &SpecTable) -> swtbench_html::NonTestExts {
    swtbench_html::NonTestExts {
        by_repo: table
            .repos
            .iter()
            .filter_map(|(repo, r)| Some((repo.clone(), r.non_test_extensions.clone()?)))
            .collect(),
        default: table.non_test_extensions.clone(),
    }
}

/// The spec table's unit-test log parsers by repository (`log_parser`), as `swtbench run` and
/// `swtbench grade` read them.
fn log_parsers(
    table: &SpecTable,
    spec_table: Option<&Path>,
) -> Result<BTreeMap<String, Parser>, CliError> {
    let mut parsers = BTreeMap::new();
    for (repo, spec) in &table.repos {
        let Some(name) = spec.log_parser.as_deref() else {
            continue;
        };
        let parser = name.parse::<Parser>().map_err(|e| {
            CliError::input(anyhow!(
                "spec table{}: repository {repo}: {e}",
                spec_table
                    .map(|p| format!(" {}", p.display()))
                    .unwrap_or_default(),
            ))
            .with_hint(
                "log_parser is one of pytest, pytest_options, pytest_v2, django, seaborn, \
                 matplotlib, sympy",
            )
        })?;
        parsers.insert(repo.clone(), parser);
    }
    Ok(parsers)
}

/// The reports of the model directory at `path`, after the checks that PATH names one.
fn collect_model_dir(
    path: &Path,
    skip: &(dyn Fn(&str) -> bool + Sync),
    printer: &Printer,
) -> Result<CollectedReports, CliError> {
    if !path.is_dir() {
        return Err(CliError::input(anyhow!(
            "instance log directory not found at {}",
            path.display()
        ))
        .with_hint(
            "PATH is <logs root>/<run_id>/<model>, e.g. run_instance_swt_logs/my-run/my-model",
        ));
    }
    let models = pred_pre_models(path);
    if !models.is_empty() {
        let dirs: Vec<String> = models
            .iter()
            .map(|m| path.join(m).display().to_string())
            .collect();
        return Err(CliError::input(anyhow!(
            "{} is a run directory (it holds pred_pre__<model> directories), not a model's \
             report directory",
            path.display()
        ))
        .with_hint(format!(
            "PATH is <logs root>/<run_id>/<model>: pass {}",
            dirs.join(" or ")
        )));
    }
    let collected = collect_reports(&FsTree, path, skip)
        .map_err(|e| CliError::input(anyhow!("reading {}: {e}", path.display())))?
        .unwrap_or_default();
    for (id, why) in &collected.unreadable {
        printer.warn(&format!("{id}: report.json skipped: {why}"));
    }
    Ok(collected)
}

/// The leaderboard numbers of the run at `path` (what every format of `report` shows), against
/// the gold run `gold_run_id` of the same logs root (none: no coverage rows). With `seeds`, `path`
/// holds `{seed}` and the original's `p@k` mode picks one seed's report per instance
/// ([`leaderboard::select_pass_at_k`]).
fn leaderboard_for(
    path: &Path,
    seeds: &[String],
    gold_run_id: Option<&str>,
    denominator: usize,
    printer: &Printer,
) -> Result<leaderboard::Metrics, CliError> {
    let skip_ids = filtered_ids();
    let skip = |id: &str| skip_ids.contains(id);
    let tree = FsTree;
    let paths: Vec<PathBuf> = if seeds.is_empty() {
        vec![path.to_path_buf()]
    } else {
        seeds
            .iter()
            .map(|seed| PathBuf::from(path.to_string_lossy().replace("{seed}", seed)))
            .collect()
    };
    let (_, root) = run_id_and_root(&paths[0])?;
    let mut per_seed = Vec::with_capacity(paths.len());
    for p in &paths {
        per_seed.push(collect_model_dir(p, &skip, printer)?);
    }
    let collected = if seeds.is_empty() {
        per_seed.remove(0)
    } else {
        let picked = leaderboard::select_pass_at_k(
            &per_seed
                .iter()
                .map(|c| c.reports.clone())
                .collect::<Vec<_>>(),
        );
        printer.info(&format!(
            "p@k over {} seeds: {} instances with a report picked",
            seeds.len(),
            picked.len()
        ));
        CollectedReports {
            reports: picked,
            unreadable: per_seed.iter().flat_map(|c| c.unreadable.clone()).collect(),
            filtered: per_seed.iter().map(|c| c.filtered).max().unwrap_or(0),
        }
    };
    let gold_dir = gold_run_id.map(|id| root.join(id).join(GOLD_MODEL_DIR));
    let gold = match (&gold_dir, gold_run_id) {
        (Some(dir), Some(id)) => {
            let gold = collect_reports(&tree, dir, &skip)
                .map_err(|e| CliError::input(anyhow!("reading {}: {e}", dir.display())))?;
            for (iid, why) in gold.iter().flat_map(|g| &g.unreadable) {
                printer.warn(&format!("gold run {id}: {iid}: report.json skipped: {why}"));
            }
            gold
        }
        _ => None,
    };
    let metrics = leaderboard::compute(
        &collected.reports,
        gold.as_ref().map(|g| g.reports.as_slice()),
        denominator,
    );
    match (&metrics.coverage, &gold_dir) {
        (Err(NoCoverage::NoGoldRun), Some(dir)) => printer.warn(&format!(
            "no gold run found at {}, skipping the coverage delta rows",
            dir.display()
        )),
        (Err(NoCoverage::NoGoldRun), None) => printer.warn(
            "no gold run for this dataset, skipping the coverage delta rows (pass --gold-run-id \
             RUN_ID, a run of the gold predictions under the same logs root)",
        ),
        (Err(NoCoverage::NoGoldCoverage), Some(dir)) => printer.warn(&format!(
            "the gold run at {} has no coverage_delta_gold, skipping the coverage delta rows",
            dir.display()
        )),
        (Err(NoCoverage::NoGoldCoverage), None) | (Ok(_), _) => {}
    }
    if collected.reports.is_empty() && collected.filtered == 0 && collected.unreadable.is_empty() {
        printer.warn(&format!(
            "no report.json under {}: every instance counts as failed (grade the run first with \
             `swtbench grade`, or check PATH)",
            path.display()
        ));
    }
    if collected.reports.len() > denominator {
        printer.warn(&format!(
            "{} reports but a denominator of {denominator}: pass --dataset or --denominator",
            collected.reports.len()
        ));
    }
    printer.info(&format!(
        "{} reports ({} skipped by the SWT filter lists), denominator {denominator}",
        collected.reports.len(),
        collected.filtered
    ));
    Ok(metrics)
}

/// `(run_id, logs root)` of `<root>/<run_id>/<model>`.
fn run_id_and_root(path: &Path) -> Result<(String, PathBuf), CliError> {
    let abs = std::path::absolute(path)
        .map_err(|e| CliError::input(anyhow!("resolving {}: {e}", path.display())))?;
    let abs = normalize(&abs);
    let run_dir = abs
        .parent()
        .ok_or_else(|| CliError::input(anyhow!("{} has no parent directory", path.display())))?;
    let run_id = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| CliError::input(anyhow!("{} has no run id directory", path.display())))?;
    let root = run_dir.parent().unwrap_or(Path::new("/")).to_path_buf();
    Ok((run_id, root))
}

/// The models `m` of the `pred_pre__<m>` directories directly under `dir` (sorted): non-empty
/// when `dir` is a run directory rather than a model's report directory.
fn pred_pre_models(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut models: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("pred_pre__"))
                .map(str::to_string)
        })
        .collect();
    models.sort();
    models
}

/// Removes `.` and resolves `..` lexically (so `runs/r/m/.` names run `r`).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
