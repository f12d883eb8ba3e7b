//! `swtbench report PATH`: the leaderboard table of one model's run, like the original's
//! `python -m src.report` (§1.2, §7.5). `PATH` is `<logs root>/<run_id>/<model>`.
//!
//! Also home of [`FsTree`], the `std::fs` view of a log tree that `report` and `grade` hand to the
//! pure grading code.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use swtbench_data::SwtFilter;
use swtbench_grade::leaderboard::{self, Dataset, NoCoverage};
use swtbench_grade::tree::{collect_reports, TreeReader};

use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;

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

    /// Which benchmark the run is on: lite, verified or full (or any alias of them). Selects the
    /// denominator (276 / 433 / 1983) and the default gold run.
    #[arg(long, value_name = "DATASET", default_value = "lite")]
    pub dataset: String,

    /// Divide by this many instances instead of the dataset's fixed count (custom subsets).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub denominator: Option<u64>,

    /// Output format: github (Markdown table), latex, json, csv, or html (a self-contained page
    /// with the summary, every instance and its logs; see --out).
    #[arg(long, value_name = "FORMAT", default_value = "github")]
    pub format: ReportFormat,

    /// Run id of the gold run whose coverage is the Δᵃˡˡ denominator (under the same logs root,
    /// model `gold`). Default: the original's per dataset (validate-lite-gold-1,
    /// validate-verified-gold-1, validate-full-gold).
    #[arg(long, alias = "gold_run_id", value_name = "RUN_ID")]
    pub gold_run_id: Option<String>,

    /// Column header of the table (default: the run id).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// Round numbers in github/latex/csv output to this many decimals (default: unrounded, as
    /// the original prints them).
    #[arg(long, value_name = "N")]
    pub decimals: Option<usize>,

    #[command(flatten)]
    pub html: HtmlArgs,
}

/// The file system as a [`TreeReader`].
#[derive(Debug, Clone, Copy, Default)]
pub struct FsTree;

impl TreeReader for FsTree {
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn subdirs(&self, path: &Path) -> io::Result<Option<Vec<String>>> {
        let entries = match std::fs::read_dir(path) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry?;
            // `Path.is_dir()` of the original follows symlinks.
            if entry.path().is_dir() {
                out.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        out.sort();
        Ok(Some(out))
    }
}

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

pub fn run(args: ReportArgs, printer: &Printer) -> CliResult {
    let dataset = parse_dataset(&args.dataset)?;
    let out = args.html.out.as_deref();
    if let Some(pair) = &args.html.compare {
        let a = leaderboard_for(&pair[0], dataset, &args, printer)?;
        let b = leaderboard_for(&pair[1], dataset, &args, printer)?;
        let ctx = page_context(dataset, &args, a.denominator);
        return html::write_compare([(&pair[0], &a), (&pair[1], &b)], &ctx, out, printer);
    }
    let Some(path) = args.path.as_deref() else {
        return Err(CliError::input(anyhow!("missing PATH"))
            .with_hint("pass <logs root>/<run_id>/<model>, or --compare RUN_A RUN_B"));
    };
    let metrics = leaderboard_for(path, dataset, &args, printer)?;
    match args.format {
        ReportFormat::Html => {
            let ctx = page_context(dataset, &args, metrics.denominator);
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

/// The parameters an HTML page lists for the report it shows.
fn page_context(dataset: Dataset, args: &ReportArgs, denominator: usize) -> html::PageContext {
    let gold_run_id = args
        .gold_run_id
        .clone()
        .unwrap_or_else(|| dataset.gold_run_id().to_string());
    html::PageContext {
        params: vec![
            ("benchmark".to_string(), dataset.name().to_string()),
            ("denominator".to_string(), denominator.to_string()),
            ("gold run (coverage rows)".to_string(), gold_run_id),
            (
                "filter".to_string(),
                "instances in the SWT-Bench filter lists are not counted".to_string(),
            ),
        ],
        denominator,
    }
}

/// The leaderboard numbers of the run at `path` (what every format of `report` shows).
fn leaderboard_for(
    path: &Path,
    dataset: Dataset,
    args: &ReportArgs,
    printer: &Printer,
) -> Result<leaderboard::Metrics, CliError> {
    if !path.is_dir() {
        return Err(CliError::input(anyhow!(
            "instance log directory not found at {}",
            path.display()
        ))
        .with_hint(
            "PATH is <logs root>/<run_id>/<model>, e.g. run_instance_swt_logs/my-run/my-model",
        ));
    }
    let (_, root) = run_id_and_root(path)?;
    let skip_ids = filtered_ids();
    let skip = |id: &str| skip_ids.contains(id);
    let tree = FsTree;
    let collected = collect_reports(&tree, path, &skip)
        .map_err(|e| CliError::input(anyhow!("reading {}: {e}", path.display())))?
        .unwrap_or_default();
    for (id, why) in &collected.unreadable {
        printer.warn(&format!("{id}: report.json skipped: {why}"));
    }
    let gold_run_id = args
        .gold_run_id
        .clone()
        .unwrap_or_else(|| dataset.gold_run_id().to_string());
    let gold_dir = root.join(&gold_run_id).join(GOLD_MODEL_DIR);
    let gold = collect_reports(&tree, &gold_dir, &skip)
        .map_err(|e| CliError::input(anyhow!("reading {}: {e}", gold_dir.display())))?;
    for (id, why) in gold.iter().flat_map(|g| &g.unreadable) {
        printer.warn(&format!(
            "gold run {gold_run_id}: {id}: report.json skipped: {why}"
        ));
    }
    let denominator = args
        .denominator
        .map_or(dataset.denominator(), |n| n as usize);
    let metrics = leaderboard::compute(
        &collected.reports,
        gold.as_ref().map(|g| g.reports.as_slice()),
        denominator,
    );
    match &metrics.coverage {
        Err(NoCoverage::NoGoldRun) => printer.warn(&format!(
            "no gold run found at {}, skipping the coverage delta rows",
            gold_dir.display()
        )),
        Err(NoCoverage::NoGoldCoverage) => printer.warn(&format!(
            "the gold run at {} has no coverage_delta_gold, skipping the coverage delta rows",
            gold_dir.display()
        )),
        Ok(_) => {}
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
