//! `swtbench report PATH`: the leaderboard table of one model's run, like the original's
//! `python -m src.report` (§1.2, §7.5), or its HTML page, or the comparison page of two runs.
//! `PATH` is `<logs root>/<run_id>/<model>`.
//!
//! The work is [`swtbench_app::report`] (the numbers, the pages) and
//! [`swtbench_app::benchmark`] (what the run is measured against, the denominator, the gold
//! run); this file is the command line, the checks of its combinations, reading a custom
//! dataset, and printing.

use std::path::{Path, PathBuf};

use swtbench_app::benchmark::{denominator, Benchmark, BenchmarkName};
use swtbench_app::report::{leaderboard, LeaderboardSettings, PageContext, PageParams};
use swtbench_grade::leaderboard;

use crate::args::DatasetArgs;
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;
use crate::settings::load_spec_table;

mod html;
pub use html::{HtmlArgs, ReportFormat};

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
    /// and its gold run is found under the logs root (see --gold-run-id). Default: lite.
    #[arg(long, alias = "dataset_name", value_name = "DATASET")]
    pub dataset: Option<String>,

    /// The split of a dataset that is read (see --dataset).
    #[arg(long, value_name = "SPLIT", default_value = "test")]
    pub split: String,

    /// Divide by this many instances instead of the dataset's count (subsets of a dataset).
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_positive::<u64>)]
    pub denominator: Option<u64>,

    /// Output format: github (Markdown table, the default), latex, json, csv, or html (a
    /// self-contained page with the summary, every instance and its logs; see --out). --compare
    /// writes html only.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<ReportFormat>,

    /// Run id of the gold run whose coverage is the Δᵃˡˡ denominator (under the same logs root,
    /// model `gold`). Default: the original's per dataset (validate-lite-gold-1,
    /// validate-verified-gold-1, validate-full-gold) when it is there, else the gold run under the
    /// logs root with coverage reports for the most of the run's instances (named on stderr).
    #[arg(long, alias = "gold_run_id", value_name = "RUN_ID")]
    pub gold_run_id: Option<String>,

    /// `single` (default), or `p@k` over several samples of one model: PATH holds `{seed}`,
    /// replaced by each of --seeds, and per instance one seed's report counts (the first seed that
    /// is resolved, else has the most added F→P tests, else the largest coverage delta, else
    /// applied), as the original's `--mode p@k`. Table formats only. (The original's `libro`
    /// is refused.)
    #[arg(long, value_name = "MODE", default_value = "single", value_parser = swtbench_app::report::parse_mode)]
    pub mode: String,

    /// The seeds that replace `{seed}` in PATH with --mode p@k, in the order they are tried:
    /// several values, or one list as the original took it (`1,2,3`, `[1,2,3]` or `(1,2,3)`).
    #[arg(long, value_name = "SEED", num_args = 1..)]
    pub seeds: Vec<String>,

    /// The original's decisions file of its libro mode, which swtbench does not have: refused.
    #[arg(long, alias = "libro_decision_file", value_name = "FILE", hide = true)]
    pub libro_decision_file: Option<PathBuf>,

    /// Column header of the table (default: the run id).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// Round numbers in github/latex/csv output to this many decimals (default: unrounded, as
    /// the original prints them).
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_count::<usize>)]
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

/// The benchmark `--dataset` names; a dataset that is not a known benchmark is read (a local
/// file or directory, or a hub dataset, as every other command reads `--dataset`).
fn resolve_benchmark(args: &ReportArgs, printer: &Printer) -> Result<Benchmark, CliError> {
    let name = match Benchmark::named(args.dataset.as_deref())? {
        BenchmarkName::Known(b) => return Ok(b),
        BenchmarkName::Dataset(name) => name,
    };
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
        source: name,
        instances: loaded.instances,
    })
}

/// The leaderboard numbers of the run at `path` (with `seeds`: p@k over them), remarks printed.
fn measure(
    path: &Path,
    seeds: &[String],
    gold_run_id: Option<&str>,
    denominator: usize,
    printer: &Printer,
) -> Result<leaderboard::Metrics, CliError> {
    let mut notices = Vec::new();
    let metrics = leaderboard(
        &LeaderboardSettings {
            path,
            seeds,
            gold_run_id,
            denominator,
        },
        &mut notices,
    );
    printer.notices(&notices);
    Ok(metrics?)
}

/// The table's column header: `--name`, else the run id.
fn table_name(args: &ReportArgs, path: &Path) -> Result<String, CliError> {
    match &args.name {
        Some(n) => Ok(n.clone()),
        None => Ok(swtbench_app::report::run_id_of(path)?),
    }
}

pub fn run(mut args: ReportArgs, printer: &Printer) -> CliResult {
    if args.libro_decision_file.is_some() {
        return Err(swtbench_app::report::libro_refused().into());
    }
    args.seeds = swtbench_app::report::seed_list(&args.seeds);
    // The spec table first: a bad file is an error whatever the format.
    let table = load_spec_table(args.spec_table.as_deref())?;
    let rules = swtbench_app::grade::read_rules(
        &table,
        table.repos.keys().map(String::as_str),
        args.spec_table.as_deref(),
    )?;
    let benchmark = resolve_benchmark(&args, printer)?;
    let denominator = denominator(args.denominator, benchmark.measured())?;
    // The model directory whose instances the gold run must cover: the first of a comparison,
    // the first seed's of p@k.
    let main_path = match (&args.html.compare, &args.path) {
        (Some(pair), _) => Some(pair[0].clone()),
        (None, Some(p)) => Some(swtbench_app::report::first_seed_path(p, &args.seeds)),
        (None, None) => None,
    };
    let gold_for = |p: &Path| {
        let choice = swtbench_app::report::gold_run_for(p, args.gold_run_id.as_deref(), &benchmark);
        printer.notices(&choice.notices);
        choice.run_id
    };
    let gold_run_id = match &main_path {
        Some(p) => gold_for(p),
        None => args.gold_run_id.clone(),
    };
    let out = args.html.out.as_deref();
    let measure_one =
        |path: &Path| measure(path, &[], gold_run_id.as_deref(), denominator, printer);
    let page_context = || {
        PageContext::new(
            &PageParams {
                benchmark: &benchmark,
                explicit_denominator: args.denominator,
                denominator,
                split: &args.split,
                gold_run_id: gold_run_id.as_deref(),
                spec_table: args.spec_table.as_deref(),
            },
            rules.clone(),
            html::generator(),
        )
    };
    if let Some(pair) = &args.html.compare {
        swtbench_app::report::check_compare_format(args.format)?;
        // Each run against its own gold run (the two may sit under different logs roots).
        let a = measure_one(&pair[0])?;
        let gold_b = gold_for(&pair[1]);
        let b = measure(&pair[1], &[], gold_b.as_deref(), denominator, printer)?;
        let ctx = page_context();
        return html::write_compare([(&pair[0], &a), (&pair[1], &b)], &ctx, out, printer);
    }
    let path = swtbench_app::report::report_path(args.path.as_deref())?;
    let seeds = swtbench_app::report::checked_seeds(path, args.mode == "p@k", &args.seeds)?;
    if !seeds.is_empty() {
        let format = swtbench_app::report::pak_format(args.format, out.is_some())?;
        let metrics = measure(path, seeds, gold_run_id.as_deref(), denominator, printer)?;
        let name = table_name(&args, path)?;
        printer.data(&leaderboard::render(&metrics, &name, format, args.decimals));
        return Ok(ExitCode::Success);
    }
    let metrics = measure_one(path)?;
    match args.format.unwrap_or_default() {
        ReportFormat::Html => {
            let ctx = page_context();
            html::write_run(path, &metrics, &ctx, out, printer)
        }
        ReportFormat::Table(format) => {
            if out.is_some() {
                return Err(swtbench_app::report::out_without_html().into());
            }
            let name = table_name(&args, path)?;
            printer.data(&leaderboard::render(&metrics, &name, format, args.decimals));
            Ok(ExitCode::Success)
        }
    }
}
