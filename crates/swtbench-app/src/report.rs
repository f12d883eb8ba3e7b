//! `report` as library functions: the leaderboard numbers of one model's run, like the original's
//! `python -m src.report` (§1.2, §7.5), and its HTML page or the comparison page of two runs, with
//! the same numbers (computed once by [`leaderboard()`] and handed to the pages).
//!
//! A run is `<logs root>/<run_id>/<model>`. It is measured against a [`Benchmark`] (fixed
//! denominators and published gold runs, or a custom dataset whose instances are counted and,
//! with a spec table, whose repositories' logs the page reads as `swtbench run` did). Nothing
//! here prints: remarks go to a list of [`Notice`]s the caller shows, in order.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use anyhow::anyhow;
use swtbench_core::Instance;
use swtbench_grade::leaderboard::{self, NoCoverage};
use swtbench_grade::tree::{collect_reports, CollectedReports, ReadRules};
use swtbench_html::RunView;

use crate::benchmark::{filtered_ids, gold_reports, gold_run_dir, Benchmark};
use crate::html_page;
use crate::lines::{Line, Notice};
use crate::tree::FsTree;
use crate::{Error, Result};

/// Which run to measure, and against what.
#[derive(Debug, Clone, Copy)]
pub struct LeaderboardSettings<'a> {
    /// `<logs root>/<run_id>/<model>`; with `seeds`, it holds `{seed}`.
    pub path: &'a Path,
    /// `p@k` over these seeds, in the order they are tried; empty: one run.
    pub seeds: &'a [String],
    /// The gold run (under the same logs root) whose coverage is the Δᵃˡˡ denominator; `None`:
    /// no coverage rows.
    pub gold_run_id: Option<&'a str>,
    pub denominator: usize,
}

/// The leaderboard numbers of the run (what every format of `report` shows). With seeds, the
/// original's `p@k` mode picks one seed's report per instance
/// ([`leaderboard::select_pass_at_k`]).
pub fn leaderboard(
    settings: &LeaderboardSettings<'_>,
    notices: &mut Vec<Notice>,
) -> Result<leaderboard::Metrics> {
    let skip_ids = filtered_ids();
    let skip = |id: &str| skip_ids.contains(id);
    let (path, seeds, denominator) = (settings.path, settings.seeds, settings.denominator);
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
        per_seed.push(collect_model_dir(p, &skip, notices)?);
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
        notices.push(Notice::Info(format!(
            "p@k over {} seeds: {} instances with a report picked",
            seeds.len(),
            picked.len()
        )));
        CollectedReports {
            reports: picked,
            unreadable: per_seed.iter().flat_map(|c| c.unreadable.clone()).collect(),
            filtered: per_seed.iter().map(|c| c.filtered).max().unwrap_or(0),
        }
    };
    let gold = match settings.gold_run_id {
        Some(id) => {
            let gold = gold_reports(&root, id, &skip)?;
            for (iid, why) in gold.iter().flat_map(|g| &g.unreadable) {
                notices.push(Notice::Warn(format!(
                    "gold run {id}: {iid}: report.json skipped: {why}"
                )));
            }
            gold
        }
        None => None,
    };
    let metrics = leaderboard::compute(
        &collected.reports,
        gold.as_ref().map(|g| g.reports.as_slice()),
        denominator,
    );
    let gold_dir = settings.gold_run_id.map(|id| gold_run_dir(&root, id));
    coverage_notices(&metrics, gold_dir.as_deref(), notices);
    if collected.reports.is_empty() && collected.filtered == 0 && collected.unreadable.is_empty() {
        notices.push(Notice::Warn(format!(
            "no report.json under {}: every instance counts as failed (grade the run first with \
             `swtbench grade`, or check PATH)",
            path.display()
        )));
    }
    if collected.reports.len() > denominator {
        notices.push(Notice::Warn(format!(
            "{} reports but a denominator of {denominator}: pass --dataset or --denominator",
            collected.reports.len()
        )));
    }
    notices.push(Notice::Info(format!(
        "{} reports ({} skipped by the SWT filter lists), denominator {denominator}",
        collected.reports.len(),
        collected.filtered
    )));
    Ok(metrics)
}

/// Why the coverage rows are missing, when they are.
fn coverage_notices(
    metrics: &leaderboard::Metrics,
    gold_dir: Option<&Path>,
    notices: &mut Vec<Notice>,
) {
    let text = match (&metrics.coverage, gold_dir) {
        (Err(NoCoverage::NoGoldRun), Some(dir)) => format!(
            "no gold run found at {}, skipping the coverage delta rows",
            dir.display()
        ),
        (Err(NoCoverage::NoGoldRun), None) => "no gold run for this dataset, skipping the \
             coverage delta rows (pass --gold-run-id RUN_ID, a run of the gold predictions under \
             the same logs root)"
            .to_string(),
        (Err(NoCoverage::NoGoldCoverage), Some(dir)) => format!(
            "the gold run at {} has no coverage_delta_gold, skipping the coverage delta rows",
            dir.display()
        ),
        (Err(NoCoverage::NoGoldCoverage), None) | (Ok(_), _) => return,
    };
    notices.push(Notice::Warn(text));
}

/// The reports of the model directory at `path`, after the checks that `path` names one.
fn collect_model_dir(
    path: &Path,
    skip: &(dyn Fn(&str) -> bool + Sync),
    notices: &mut Vec<Notice>,
) -> Result<CollectedReports> {
    if !path.is_dir() {
        return Err(Error::input(anyhow!(
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
        return Err(Error::input(anyhow!(
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
        .map_err(|e| Error::input(anyhow!("reading {}: {e}", path.display())))?
        .unwrap_or_default();
    for (id, why) in &collected.unreadable {
        notices.push(Notice::Warn(format!("{id}: report.json skipped: {why}")));
    }
    Ok(collected)
}

/// The run id of `<root>/<run_id>/<model>` (the table's default column header).
pub fn run_id_of(path: &Path) -> Result<String> {
    run_id_and_root(path).map(|(id, _)| id)
}

/// The gold run whose coverage the Δ rows of the model directory at `path` use
/// ([`crate::benchmark::choose_gold_run`]): `explicit`, else the benchmark's published gold run
/// when it is under the same logs root, else the gold run there with reports for the most of the
/// instances `path` has reports for.
pub fn gold_run_for(
    path: &Path,
    explicit: Option<&str>,
    benchmark: &Benchmark,
) -> crate::benchmark::GoldChoice {
    let published = benchmark.published_gold_run_id();
    if explicit.is_some() {
        return crate::benchmark::choose_gold_run(explicit, published, &[], 0);
    }
    let Ok((_, root)) = run_id_and_root(path) else {
        return crate::benchmark::choose_gold_run(None, published, &[], 0);
    };
    let ids = swtbench_runner::report::reported_ids(path);
    let candidates = crate::benchmark::gold_candidates(&root, &ids);
    crate::benchmark::choose_gold_run(None, published, &candidates, ids.len())
}

/// `(run_id, logs root)` of `<root>/<run_id>/<model>`.
fn run_id_and_root(path: &Path) -> Result<(String, PathBuf)> {
    let abs = std::path::absolute(path)
        .map_err(|e| Error::input(anyhow!("resolving {}: {e}", path.display())))?;
    let abs = normalize(&abs);
    let run_dir = abs
        .parent()
        .ok_or_else(|| Error::input(anyhow!("{} has no parent directory", path.display())))?;
    let run_id = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| Error::input(anyhow!("{} has no run id directory", path.display())))?;
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
        .filter_map(std::result::Result::ok)
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
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Everything about a run the page shows besides what it reads from the tree.
#[derive(Debug, Clone)]
pub struct PageContext {
    /// `report`'s parameters worth showing (benchmark, denominator, gold run, …).
    pub params: Vec<(String, String)>,
    pub denominator: usize,
    /// The dataset's instances by id, when a dataset was read (repositories, gold fixes and the
    /// gold test directives that name the gold runs).
    pub instances: BTreeMap<String, Instance>,
    /// The spec table's parsers and non-test extensions.
    pub rules: ReadRules,
    /// `swtbench <version>`.
    pub generator: String,
}

/// What a page lists about how `report` measured the run.
#[derive(Debug, Clone, Copy)]
pub struct PageParams<'a> {
    pub benchmark: &'a Benchmark,
    /// Where the denominator came from.
    pub denominator_source: &'a crate::benchmark::DenominatorSource,
    /// The denominator used.
    pub denominator: usize,
    /// The split of a dataset that was read.
    pub split: &'a str,
    pub gold_run_id: Option<&'a str>,
    pub spec_table: Option<&'a Path>,
}

impl PageContext {
    /// The page context of a run measured as `params` says, read under `rules`.
    pub fn new(params: &PageParams<'_>, rules: ReadRules, generator: String) -> PageContext {
        let benchmark = params.benchmark;
        let mut shown = vec![(
            "benchmark".to_string(),
            benchmark.label(params.denominator_source),
        )];
        if let Benchmark::Custom { source, .. } = benchmark {
            shown.push(("dataset".to_string(), source.clone()));
            shown.push(("split".to_string(), params.split.to_string()));
        }
        shown.extend([
            ("denominator".to_string(), params.denominator.to_string()),
            (
                "gold run (coverage rows)".to_string(),
                params
                    .gold_run_id
                    .unwrap_or("none (pass --gold-run-id)")
                    .to_string(),
            ),
            (
                "filter".to_string(),
                "instances in the SWT-Bench filter lists are not counted".to_string(),
            ),
        ]);
        if let Some(p) = params.spec_table {
            shown.push(("spec table".to_string(), p.display().to_string()));
        }
        PageContext {
            params: shown,
            denominator: params.denominator,
            instances: benchmark.instances_by_id(),
            rules,
            generator,
        }
    }
}

/// A page and what is worth saying about it.
#[derive(Debug, Clone)]
pub struct Page {
    pub html: String,
    pub warnings: Vec<String>,
}

/// The directory a page written to `out` (stdout: `None`) lives in; links are relative to it.
fn out_dir(out: Option<&Path>) -> Result<PathBuf> {
    let dir = match out.and_then(Path::parent) {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::path::absolute(&dir).map_err(|e| Error::input(anyhow!("resolving {}: {e}", dir.display())))
}

fn load(
    path: &Path,
    metrics: &leaderboard::Metrics,
    ctx: &PageContext,
    out_dir: &Path,
) -> Result<RunView> {
    let opts = swtbench_html::LoadOptions {
        out_dir: out_dir.to_path_buf(),
        instances: ctx.instances.clone(),
        metrics: Some(swtbench_html::Metrics::from(metrics)),
        denominator: Some(ctx.denominator),
        rules: ctx.rules.clone(),
        params: ctx.params.clone(),
        generator: ctx.generator.clone(),
        ..swtbench_html::LoadOptions::default()
    };
    html_page::load_view(path, opts).map_err(|e| {
        Error::input(anyhow!(e)).with_hint(
            "PATH is <logs root>/<run_id>/<model>, e.g. run_instance_swt_logs/my-run/my-model",
        )
    })
}

/// The page of the run at `path` with the given metrics, for writing to `out` (`None`: stdout).
pub fn html_page(
    path: &Path,
    metrics: &leaderboard::Metrics,
    ctx: &PageContext,
    out: Option<&Path>,
) -> Result<Page> {
    let view = load(path, metrics, ctx, &out_dir(out)?)?;
    Ok(Page {
        html: swtbench_html::render_run(&view),
        warnings: view.warnings.clone(),
    })
}

/// The comparison page of two runs, each with its metrics, for writing to `out`.
pub fn compare_page(
    runs: [(&Path, &leaderboard::Metrics); 2],
    ctx: &PageContext,
    out: Option<&Path>,
) -> Result<String> {
    let dir = out_dir(out)?;
    let a = load(runs[0].0, runs[0].1, ctx, &dir)?;
    let b = load(runs[1].0, runs[1].1, ctx, &dir)?;
    let view = swtbench_html::compare(&a, &b, &ctx.generator);
    Ok(swtbench_html::render_compare(&view))
}

/// Writes a page to `file`.
pub fn write_page(file: &Path, html: &str) -> Result<()> {
    swtbench_data::fsutil::write_atomic(file, html.as_bytes())
        .map_err(|e| Error::input(e).with_hint("check that the directory exists and is writable"))
}

/// A `--mode` of `report` that it refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportModeError {
    /// The original's libro mode, with what to use instead.
    #[error(
        "swtbench has no libro mode (one sample per instance chosen by an LLM's yes/no decisions); \
         use --mode p@k --seeds to count one sample per instance, or report each sample's run on \
         its own"
    )]
    Libro,
    /// Neither single nor p@k.
    #[error("unknown mode `{0}` (expected single or p@k)")]
    Unknown(String),
}

/// `--mode`: single or p@k; the original's libro is refused with what to use instead.
pub fn parse_mode(s: &str) -> Result<String, ReportModeError> {
    match s {
        "single" | "p@k" => Ok(s.to_owned()),
        "libro" => Err(ReportModeError::Libro),
        _ => Err(ReportModeError::Unknown(s.to_owned())),
    }
}

/// `--seeds` as given: separate values, or one list in the original's spelling (`1,2,3`,
/// `[1,2,3]`, `(1, 2, 3)`), each value split at commas and stripped of the brackets.
pub fn seed_list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| {
            v.trim()
                .trim_start_matches(['[', '('])
                .trim_end_matches([']', ')'])
                .split(',')
                .map(|s| s.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// `--libro_decision_file`: the input of the original's libro mode, refused.
pub fn libro_refused() -> Error {
    Error::input(anyhow!(
        "--libro_decision_file is not supported: it is the input of the original's libro \
         mode, which swtbench does not have"
    ))
    .with_hint(
        "leave it out; to count one of several samples per instance use --mode p@k --seeds \
         (PATH with {seed})",
    )
}

/// `PATH` with `{seed}` replaced by the first of `seeds` (the run the gold run must cover), or
/// `PATH` itself without seeds.
pub fn first_seed_path(path: &Path, seeds: &[String]) -> PathBuf {
    match seeds.first() {
        Some(seed) => PathBuf::from(path.to_string_lossy().replace("{seed}", seed)),
        None => path.to_path_buf(),
    }
}

/// The seeds `report` measures over: with `--mode p@k` (`pak`), `seeds`, which PATH must have a
/// `{seed}` for; else none, and `--seeds` is refused.
pub fn checked_seeds<'a>(path: &Path, pak: bool, seeds: &'a [String]) -> Result<&'a [String]> {
    if pak {
        if !path.to_string_lossy().contains("{seed}") || seeds.is_empty() {
            return Err(Error::input(anyhow!(
                "--mode p@k needs a PATH with {{seed}} in it and --seeds"
            ))
            .with_hint(
                "e.g. swtbench report 'run_instance_swt_logs/my-run-{seed}/my-model' --mode p@k \
                 --seeds 1 2 3",
            ));
        }
        Ok(seeds)
    } else if !seeds.is_empty() {
        Err(Error::input(anyhow!(
            "--seeds is only used with --mode p@k"
        )))
    } else {
        Ok(&[])
    }
}

/// `--compare` writes an HTML page: a table format is refused.
pub fn check_compare_format(format: Option<ReportFormat>) -> Result<()> {
    if let Some(ReportFormat::Table(_)) = format {
        return Err(Error::input(anyhow!(
            "--compare writes an HTML page; a table format cannot show a comparison"
        ))
        .with_hint(
            "leave out --format (or pass --format html), or run `swtbench report` on each run",
        ));
    }
    Ok(())
}

/// `PATH`, which is needed without `--compare`.
pub fn report_path(path: Option<&Path>) -> Result<&Path> {
    path.ok_or_else(|| {
        Error::input(anyhow!("missing PATH"))
            .with_hint("pass <logs root>/<run_id>/<model>, or --compare RUN_A RUN_B")
    })
}

/// The table format of `--mode p@k` (the page shows one run; `--out` is for the page).
pub fn pak_format(format: Option<ReportFormat>, out: bool) -> Result<leaderboard::Format> {
    let ReportFormat::Table(format) = format.unwrap_or_default() else {
        return Err(Error::input(anyhow!(
            "--mode p@k makes a table; the HTML page shows one run"
        ))
        .with_hint("use --format github|latex|json|csv, or report each seed's run"));
    };
    if out {
        return Err(out_without_html());
    }
    Ok(format)
}

/// `--out` with a table format.
pub fn out_without_html() -> Error {
    Error::input(anyhow!("--out is only used with --format html"))
        .with_hint("redirect stdout to save a table")
}

/// What `report` prints: one of the leaderboard table formats, or the HTML page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Table(leaderboard::Format),
    Html,
}

impl Default for ReportFormat {
    fn default() -> Self {
        ReportFormat::Table(leaderboard::Format::default())
    }
}

impl std::str::FromStr for ReportFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("html") {
            return Ok(ReportFormat::Html);
        }
        s.parse::<leaderboard::Format>()
            .map(ReportFormat::Table)
            .map_err(|_| {
                format!("unknown format `{s}` (expected github, latex, json, csv or html)")
            })
    }
}

/// Where a page goes: written to `out` (the line saying so), or the page itself on stdout.
pub fn page_output(html: String, out: Option<&Path>) -> Result<crate::lines::Line> {
    use crate::lines::Line;
    match out {
        Some(file) => {
            write_page(file, &html)?;
            Ok(Line::Info(format!(
                "HTML report: {} ({} kB)",
                file.display(),
                html.len().div_ceil(1000)
            )))
        }
        None => Ok(Line::Data(html)),
    }
}

/// `report`'s flags, as given.
#[derive(Debug, Clone, Default)]
pub struct ReportRequest {
    /// `<logs root>/<run_id>/<model>` (with `{seed}` for p@k); `None` with `compare`.
    pub path: Option<PathBuf>,
    /// `--dataset`: a benchmark alias, or a dataset to read (default: lite).
    pub dataset: Option<String>,
    pub split: String,
    pub denominator: Option<u64>,
    pub format: Option<ReportFormat>,
    pub gold_run_id: Option<String>,
    /// `--mode p@k`.
    pub pak: bool,
    /// `--seeds` as given (see [`seed_list`]).
    pub seeds: Vec<String>,
    /// `--libro_decision_file` was given (refused).
    pub libro_decision_file: bool,
    /// The table's column header (default: the run id).
    pub name: Option<String>,
    pub decimals: Option<usize>,
    pub spec_table: Option<PathBuf>,
    /// Where the page goes (`None`: stdout).
    pub out: Option<PathBuf>,
    /// `--compare RUN_A RUN_B`.
    pub compare: Option<[PathBuf; 2]>,
}

/// Reads a dataset (`--dataset` that names no known benchmark), as the caller reads datasets.
pub type LoadDataset<'a> = dyn FnMut(&swtbench_data::dataset::LoadOptions) -> Result<swtbench_data::dataset::LoadedDataset>
    + 'a;

/// `swtbench report`: the checks of the flags' combinations, the benchmark and its denominator,
/// the gold run, the numbers, then the table (stdout) or the page (stdout or `out`). What it says
/// goes to `say` as it goes, remarks first.
pub fn report(
    req: &ReportRequest,
    load: &mut LoadDataset<'_>,
    say: &mut dyn FnMut(Line),
) -> Result<()> {
    if req.libro_decision_file {
        return Err(libro_refused());
    }
    let seeds = seed_list(&req.seeds);
    // The spec table first: a bad file is an error whatever the format.
    let spec_table = req.spec_table.as_deref();
    let table = crate::tables::load_spec_table(spec_table)?;
    let rules =
        crate::grade::read_rules(&table, table.repos.keys().map(String::as_str), spec_table)?;
    let benchmark = resolve_benchmark(req, load, say)?;
    // The model directory whose instances the gold run must cover and whose run report counts
    // the run's instances: the first of a comparison, the first seed's of p@k.
    let main_path = match (&req.compare, &req.path) {
        (Some(pair), _) => Some(pair[0].clone()),
        (None, Some(p)) => Some(first_seed_path(p, &seeds)),
        (None, None) => None,
    };
    let record = match (&main_path, req.denominator) {
        (Some(p), None) => Some(
            std::path::absolute(p)
                .map_err(|source| crate::benchmark::RunRecordError::Unresolvable {
                    path: p.clone(),
                    source,
                })
                .and_then(|abs| crate::benchmark::run_record(&normalize(&abs))),
        ),
        _ => None,
    };
    let measured =
        crate::benchmark::report_denominator(req.denominator, &benchmark, record.as_ref())?;
    measured.notices.iter().cloned().for_each(|n| say(n.into()));
    let denominator = measured.value;
    let gold_run_id = match &main_path {
        Some(p) => gold_for(p, req, &benchmark, say),
        None => req.gold_run_id.clone(),
    };
    let gold = gold_run_id.as_deref();
    let out = req.out.as_deref();
    let page_context = || {
        let params = PageParams {
            benchmark: &benchmark,
            denominator_source: &measured.source,
            denominator,
            split: &req.split,
            gold_run_id: gold,
            spec_table,
        };
        PageContext::new(&params, rules.clone(), generator())
    };
    if let Some(pair) = &req.compare {
        check_compare_format(req.format)?;
        // Each run against its own gold run (the two may sit under different logs roots).
        let a = measure(&pair[0], &[], gold, denominator, say)?;
        let gold_b = gold_for(&pair[1], req, &benchmark, say);
        let b = measure(&pair[1], &[], gold_b.as_deref(), denominator, say)?;
        let html = compare_page([(&pair[0], &a), (&pair[1], &b)], &page_context(), out)?;
        say(page_output(html, out)?);
        return Ok(());
    }
    let path = report_path(req.path.as_deref())?;
    let seeds = checked_seeds(path, req.pak, &seeds)?;
    let format = if seeds.is_empty() {
        req.format.unwrap_or_default()
    } else {
        ReportFormat::Table(pak_format(req.format, out.is_some())?)
    };
    let metrics = measure(path, seeds, gold, denominator, say)?;
    let format = match format {
        ReportFormat::Html => {
            let page = html_page(path, &metrics, &page_context(), out)?;
            page.warnings.into_iter().for_each(|w| say(Line::Warn(w)));
            say(page_output(page.html, out)?);
            return Ok(());
        }
        ReportFormat::Table(_) if out.is_some() => return Err(out_without_html()),
        ReportFormat::Table(format) => format,
    };
    let name = match &req.name {
        Some(n) => n.clone(),
        None => run_id_of(path)?,
    };
    say(Line::Data(leaderboard::render(
        &metrics,
        &name,
        format,
        req.decimals,
    )));
    Ok(())
}

/// `swtbench <version>`, as the pages name their generator.
pub fn generator() -> String {
    format!("swtbench {}", env!("CARGO_PKG_VERSION"))
}

/// The benchmark `--dataset` names; a dataset that is not a known benchmark is read with `load`.
fn resolve_benchmark(
    req: &ReportRequest,
    load: &mut LoadDataset<'_>,
    say: &mut dyn FnMut(Line),
) -> Result<Benchmark> {
    let name = match Benchmark::named(req.dataset.as_deref())? {
        crate::benchmark::BenchmarkName::Known(b) => return Ok(b),
        crate::benchmark::BenchmarkName::Dataset(name) => name,
    };
    let loaded = load(&swtbench_data::dataset::LoadOptions {
        dataset: name.clone(),
        split: req.split.clone(),
        filter_swt: false,
        filter_list: None,
        is_swt: false,
        offline: false,
        instance_ids: Vec::new(),
    })?;
    if !loaded.problems.is_empty() {
        say(Line::Warn(format!(
            "{}: {} row(s) are not valid instances and are not counted (`swtbench validate \
             --dataset {name}` lists them)",
            loaded.name,
            loaded.problems.len()
        )));
    }
    Ok(Benchmark::Custom {
        source: name,
        instances: loaded.instances,
    })
}

/// The gold run of the model directory at `path` ([`gold_run_for`]), its remarks said.
fn gold_for(
    path: &Path,
    req: &ReportRequest,
    benchmark: &Benchmark,
    say: &mut dyn FnMut(Line),
) -> Option<String> {
    let choice = gold_run_for(path, req.gold_run_id.as_deref(), benchmark);
    choice.notices.into_iter().for_each(|n| say(n.into()));
    choice.run_id
}

/// The leaderboard numbers of the run at `path` (with `seeds`: p@k over them), remarks said.
fn measure(
    path: &Path,
    seeds: &[String],
    gold_run_id: Option<&str>,
    denominator: usize,
    say: &mut dyn FnMut(Line),
) -> Result<leaderboard::Metrics> {
    let mut notices = Vec::new();
    let settings = LeaderboardSettings {
        path,
        seeds,
        gold_run_id,
        denominator,
    };
    let metrics = leaderboard(&settings, &mut notices);
    notices.into_iter().for_each(|n| say(n.into()));
    metrics
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    #[test]
    fn run_ids_come_from_the_model_directory_path() {
        assert_eq!(run_id_of(Path::new("logs/my-run/m")).unwrap(), "my-run");
        assert_eq!(run_id_of(Path::new("logs/my-run/m/.")).unwrap(), "my-run");
        let (_, root) = run_id_and_root(Path::new("/x/logs/r/m")).unwrap();
        assert_eq!(root, Path::new("/x/logs"));
    }

    #[test]
    fn seeds_in_the_original_spellings() {
        let s = |v: &[&str]| seed_list(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(s(&["1", "2", "3"]), ["1", "2", "3"]);
        assert_eq!(s(&["1,2,3"]), ["1", "2", "3"]);
        assert_eq!(s(&["[1,2,3]"]), ["1", "2", "3"]);
        assert_eq!(s(&["(1, 2, 3)"]), ["1", "2", "3"]);
        assert_eq!(s(&["(7,)"]), ["7"]);
    }

    #[test]
    fn libro_mode_is_refused_with_what_to_use() {
        assert_eq!(parse_mode("p@k").as_deref(), Ok("p@k"));
        let e = parse_mode("libro").expect_err("refused").to_string();
        assert!(
            e.contains("no libro mode") && e.contains("--mode p@k"),
            "{e}"
        );
        assert!(parse_mode("x").is_err());
    }

    /// The combinations `report` refuses, each before any run is read.
    #[test]
    fn report_refuses_combinations_before_reading_runs() {
        let refused = |req: ReportRequest| {
            let mut load = |_: &swtbench_data::dataset::LoadOptions| -> Result<_> {
                panic!("no dataset is read")
            };
            let mut said = Vec::new();
            let e = report(&req, &mut load, &mut |l| said.push(l)).expect_err("refused");
            e.error.to_string()
        };
        let libro = ReportRequest {
            libro_decision_file: true,
            ..ReportRequest::default()
        };
        assert!(refused(libro).contains("--libro_decision_file"));
        assert!(refused(ReportRequest::default()).contains("missing PATH"));
        let path = Some(PathBuf::from("/nonexistent/logs/r/m"));
        let seeds = ReportRequest {
            path: path.clone(),
            seeds: vec!["1".into()],
            ..ReportRequest::default()
        };
        assert!(refused(seeds).contains("only used with --mode p@k"));
        let pak_html = ReportRequest {
            path: Some(PathBuf::from("/nonexistent/logs/r-{seed}/m")),
            pak: true,
            seeds: vec!["1".into()],
            format: Some(ReportFormat::Html),
            ..ReportRequest::default()
        };
        assert!(refused(pak_html).contains("makes a table"));
        let compare = ReportRequest {
            compare: Some([
                PathBuf::from("/nonexistent/a/r/m"),
                PathBuf::from("/nonexistent/b/r/m"),
            ]),
            format: Some(ReportFormat::Table(leaderboard::Format::Json)),
            ..ReportRequest::default()
        };
        assert!(refused(compare).contains("--compare writes an HTML page"));
    }

    #[test]
    fn formats_parse() {
        assert_eq!("html".parse::<ReportFormat>(), Ok(ReportFormat::Html));
        assert_eq!(
            "json".parse::<ReportFormat>(),
            Ok(ReportFormat::Table(leaderboard::Format::Json))
        );
        assert!("xml".parse::<ReportFormat>().is_err());
    }
}
