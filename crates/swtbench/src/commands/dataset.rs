//! `swtbench dataset retrieve|build|swt`: make the model inputs of SWT-Bench from a SWE-bench
//! dataset and local git mirrors, the way the published SWT-Bench datasets were made.
//!
//! - `retrieve`: per instance, BM25-rank the repository's Python files at `base_commit` against
//!   the issue text and write SWE-bench's retrieval JSON Lines (`{"instance_id", "hits"}`).
//! - `build`: render SWE-bench style-3 text rows (issue, READMEs, the best-ranked files that fit
//!   under a cl100k token cap, numbered) with the 13 SWE-bench text columns.
//! - `swt`: turn text rows into ZeroShotBase or ZeroShotPlus rows (our prompt texts, or
//!   `--template FILE`), with the patches swapped as in the published SWT-Bench datasets, so that
//!   `--is-swt` reads them back.
//!
//! Outputs are JSON Lines, or parquet when the file name ends in `.parquet`. Every command is
//! resumable: rows already in the output (or, for parquet, in `<out>.partial.jsonl`) are skipped,
//! and each finished row is appended at once. Repositories are read from bare mirrors
//! (`DIR/<owner>__<name>.git`) only; nothing is cloned and nothing is indexed on disk.
//! The algorithms live in `swtbench-textgen`; this module does the I/O, threads and progress.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::{BufRead, BufReader, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{anyhow, Context};
use serde_json::Value;
use swtbench_core::Instance;
use swtbench_data::git_mirror::{mirror_dir_name, GitMirror};
use swtbench_data::{LoadOptions, SwtFilter};
use swtbench_textgen::render::{render_text, universal_newlines, Candidate, Style3};
use swtbench_textgen::retrieve::{decode_source, document_paths, rank, HitsLine};
use swtbench_textgen::row::{columns_of, text_row, to_json_line, to_parquet, Row};
use swtbench_textgen::swt::{swt_row, SwtMode, SwtTemplate};
use swtbench_textgen::tokens::Cl100k;

use crate::args::{self as common, DatasetArgs};
use crate::env_vars;
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct DatasetCmdArgs {
    #[command(subcommand)]
    pub command: DatasetCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum DatasetCommand {
    /// Rank each instance's Python files against its issue with BM25 (Lucene's parameters and
    /// English analyzer) and write SWE-bench retrieval JSON Lines.
    Retrieve(RetrieveArgs),
    /// Render SWE-bench style-3 text rows: issue, READMEs and the best-ranked files that fit under
    /// a cl100k token cap, with line numbers.
    Build(BuildArgs),
    /// Turn SWE-bench text rows into SWT-Bench ZeroShotBase (unified diff) or ZeroShotPlus
    /// (custom diff) rows, with the gold patches swapped as in the published SWT datasets.
    Swt(SwtArgs),
}

/// Where the repositories are.
#[derive(Debug, Clone, clap::Args)]
pub struct MirrorArgs {
    /// Directory of bare git mirrors named `<owner>__<name>.git` (make one with
    /// `git clone --mirror https://github.com/<owner>/<name> DIR/<owner>__<name>.git`).
    #[arg(long, alias = "repo_mirror", value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: PathBuf,
}

/// Parallelism.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    /// Instances processed at the same time (default: the number of CPUs).
    #[arg(long, alias = "max_workers", value_name = "N")]
    pub max_workers: Option<usize>,
}

impl WorkerArgs {
    fn workers(&self, todo: usize) -> usize {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.max_workers.unwrap_or(cpus).clamp(1, todo.max(1))
    }
}

#[derive(Debug, clap::Args)]
pub struct RetrieveArgs {
    #[command(flatten)]
    pub data: DatasetArgs,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// Index test files too (SWT-Bench's datasets were built this way; SWE-bench's default leaves
    /// out paths with the word test, tests or testing).
    #[arg(long, alias = "include_tests")]
    pub include_tests: bool,
    /// Hits kept per instance.
    #[arg(long, alias = "top_k", default_value_t = swtbench_textgen::retrieve::DEFAULT_TOP_K)]
    pub top_k: usize,
    /// Skip Python files that are not valid UTF-8 instead of failing the instance (the original
    /// gives such an instance no hits at all).
    #[arg(long)]
    pub skip_undecodable: bool,
    /// Output file (JSON Lines), appended to and resumed.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub workers: WorkerArgs,
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub data: DatasetArgs,
    /// The retrieval file written by `swtbench dataset retrieve` (or SWE-bench's
    /// `bm25_retrieval.py`).
    #[arg(long, alias = "retrieval_file", value_name = "FILE")]
    pub hits: PathBuf,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// Prompt style; only style 3 (what the SWT datasets were built from) is supported.
    #[arg(long, alias = "prompt_style", default_value = "3", value_parser = parse_style)]
    pub style: u8,
    /// Token cap for the prompt (cl100k_base); 0 includes every retrieved file.
    #[arg(long, alias = "max_context_len", default_value_t = 27_000)]
    pub max_tokens: usize,
    /// Keep only the first K hits as candidates (default: all of them).
    #[arg(long)]
    pub k: Option<usize>,
    /// A style-3 template replacing ours: text with the placeholders {{problem_statement}},
    /// {{readmes}} and {{code}}, each once.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Output file: JSON Lines, or parquet when it ends in `.parquet`.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub workers: WorkerArgs,
}

/// Which SWT filter list removes instances in `dataset swt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterChoice {
    /// The list of the dataset the rows come from (inferred from the instance ids).
    Auto,
    List(SwtFilter),
    None,
}

fn parse_filter_choice(s: &str) -> Result<FilterChoice, String> {
    match s.to_ascii_lowercase().as_str() {
        "auto" => Ok(FilterChoice::Auto),
        "none" => Ok(FilterChoice::None),
        other => other.parse::<SwtFilter>().map(FilterChoice::List),
    }
}

fn parse_mode(s: &str) -> Result<SwtMode, String> {
    match s.to_ascii_lowercase().as_str() {
        "zsb" | "base" => Ok(SwtMode::Zsb),
        "zsp" | "plus" => Ok(SwtMode::Zsp),
        other => Err(format!("unknown mode {other:?} (expected zsb or zsp)")),
    }
}

fn parse_style(s: &str) -> Result<u8, String> {
    match s {
        "3" | "style-3" => Ok(3),
        other => Err(format!(
            "prompt style {other:?} is not supported (only 3, the style the SWT-Bench datasets use)"
        )),
    }
}

#[derive(Debug, clap::Args)]
pub struct SwtArgs {
    /// SWE-bench text rows (.jsonl, .json or .parquet), e.g. from `swtbench dataset build`.
    #[arg(long, alias = "dataset_path", value_name = "FILE")]
    pub input: PathBuf,
    /// zsb (ZeroShotBase: answer as a unified diff) or zsp (ZeroShotPlus: the custom diff format
    /// of `--patch-types custom`); `base` and `plus` are accepted too.
    #[arg(long, value_parser = parse_mode, default_value = "zsp")]
    pub mode: SwtMode,
    /// Remove the instances SWT-Bench excludes: `auto` uses the list of the benchmark the rows
    /// belong to (Lite, Verified, else Full), or name it; `none` keeps every row.
    #[arg(
        long,
        alias = "filter_cases",
        alias = "swt-filter-list",
        value_name = "auto|lite|verified|full|none",
        default_value = "auto",
        value_parser = parse_filter_choice
    )]
    pub filter_swt: FilterChoice,
    /// A template replacing our prompt for the mode: text with one {{body}} placeholder, which
    /// receives the issue and code section (`<issue>` … `</code>`); the text before it replaces
    /// the first line, the text after it is the instructions.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Only these instances (several values, or one comma-separated list).
    #[arg(long, alias = "instance_ids", value_name = "ID", num_args = 1..)]
    pub instance_ids: Vec<String>,
    /// Output file: JSON Lines, or parquet when it ends in `.parquet`.
    #[arg(long, alias = "output_path", value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run(args: DatasetCmdArgs, printer: &Printer) -> CliResult {
    match args.command {
        DatasetCommand::Retrieve(a) => retrieve(a, printer),
        DatasetCommand::Build(a) => build(a, printer),
        DatasetCommand::Swt(a) => swt(a, printer),
    }
}

// ---------------------------------------------------------------------------------------------
// retrieve

fn retrieve(args: RetrieveArgs, printer: &Printer) -> CliResult {
    check_mirror_dir(&args.mirror.repo_mirror)?;
    if args.out.extension().is_some_and(|e| e == "parquet") {
        return Err(CliError::input(anyhow!(
            "{}: retrieval files are JSON Lines; choose a .jsonl name",
            args.out.display()
        )));
    }
    let loaded = args.data.load_valid(printer)?;
    let mut out = RowOutput::open(&args.out)?;
    let todo: Vec<&Instance> = loaded
        .instances
        .iter()
        .filter(|i| !out.done.contains(i.instance_id.as_str()))
        .collect();
    report_resume(printer, &args.out, loaded.instances.len(), todo.len());

    let include_tests = args.include_tests;
    let skip_undecodable = args.skip_undecodable;
    let top_k = args.top_k;
    let mirror_dir = args.mirror.repo_mirror.clone();
    let mut failures = 0usize;
    let mut progress = Progress::new(printer, todo.len());
    for_each_parallel(
        &todo,
        args.workers.workers(todo.len()),
        |inst| retrieve_one(inst, &mirror_dir, include_tests, skip_undecodable, top_k),
        |inst, result| {
            match result {
                Ok((line, note)) => {
                    let json = serde_json::to_string(&line).map_err(|e| anyhow!(e))?;
                    out.append_line(&json, &line.instance_id)?;
                    progress.ok(inst.instance_id.as_str(), &note);
                }
                Err(e) => {
                    failures += 1;
                    progress.failed(inst.instance_id.as_str(), &e);
                }
            }
            Ok(())
        },
    )?;
    let order: Vec<&str> = loaded
        .instances
        .iter()
        .map(|i| i.instance_id.as_str())
        .collect();
    out.finish(&order)?;
    finish(printer, &args.out, todo.len(), failures)
}

fn retrieve_one(
    inst: &Instance,
    mirror_dir: &Path,
    include_tests: bool,
    skip_undecodable: bool,
    top_k: usize,
) -> anyhow::Result<(HitsLine, String)> {
    let started = Instant::now();
    let issue = inst
        .problem_statement()
        .ok_or_else(|| anyhow!("the row has no problem_statement to search with"))?;
    let mirror = open_mirror(mirror_dir, &inst.repo)?;
    let files = mirror.list_files(&inst.base_commit)?;
    let paths = document_paths(files.iter().map(String::as_str), include_tests);
    let mut batch = mirror.batch()?;
    let mut docs: Vec<(&str, String)> = Vec::with_capacity(paths.len());
    let mut skipped = 0usize;
    for path in paths {
        let bytes = batch.read(&inst.base_commit, path)?.ok_or_else(|| {
            anyhow!(
                "{path} is listed at {} but cannot be read",
                inst.base_commit
            )
        })?;
        match decode_source(path, bytes) {
            Ok(text) => docs.push((path, text)),
            Err(_) if skip_undecodable => skipped += 1,
            Err(e) => {
                return Err(anyhow!(e).context(
                    "a Python file is not UTF-8 (pass --skip-undecodable to leave such files out)",
                ))
            }
        }
    }
    let ranking = rank(issue, docs.iter().map(|(p, c)| (*p, c.as_str())), top_k);
    let mut note = format!(
        "{} hits from {} files in {:.1} s",
        ranking.hits.len(),
        ranking.num_documents,
        started.elapsed().as_secs_f64()
    );
    if skipped > 0 {
        note.push_str(&format!(", {skipped} undecodable file(s) skipped"));
    }
    if ranking.query_chars < ranking.issue_chars {
        note.push_str(&format!(
            ", query cut to {} of {} characters (more than 1024 distinct terms)",
            ranking.query_chars, ranking.issue_chars
        ));
    }
    Ok((
        HitsLine {
            instance_id: inst.instance_id.to_string(),
            hits: ranking.hits,
        },
        note,
    ))
}

// ---------------------------------------------------------------------------------------------
// build

fn build(args: BuildArgs, printer: &Printer) -> CliResult {
    debug_assert_eq!(args.style, 3);
    check_mirror_dir(&args.mirror.repo_mirror)?;
    let style = match &args.template {
        None => Style3::builtin(),
        Some(p) => {
            Style3::parse(&p.display().to_string(), &read_text(p)?).map_err(CliError::input)?
        }
    };
    let hits = read_hits(&args.hits)?;
    let loaded = args.data.load_valid(printer)?;
    let mut out = RowOutput::open(&args.out)?;
    let todo: Vec<&Instance> = loaded
        .instances
        .iter()
        .filter(|i| !out.done.contains(i.instance_id.as_str()))
        .collect();
    report_resume(printer, &args.out, loaded.instances.len(), todo.len());
    let missing: Vec<&str> = todo
        .iter()
        .map(|i| i.instance_id.as_str())
        .filter(|id| !hits.contains_key(*id))
        .collect();
    if !missing.is_empty() {
        printer.warn(&format!(
            "{} instance(s) have no line in {}; their text gets no code files: {}",
            missing.len(),
            args.hits.display(),
            preview(&missing)
        ));
    }

    let cap = (args.max_tokens > 0).then_some(args.max_tokens);
    let mirror_dir = args.mirror.repo_mirror.clone();
    let k = args.k;
    let mut failures = 0usize;
    let mut progress = Progress::new(printer, todo.len());
    for_each_parallel(
        &todo,
        args.workers.workers(todo.len()),
        |inst| {
            let empty = Vec::new();
            let paths = hits.get(inst.instance_id.as_str()).unwrap_or(&empty);
            let paths = &paths[..k.unwrap_or(paths.len()).min(paths.len())];
            build_one(inst, paths, &mirror_dir, &style, cap)
        },
        |inst, result| {
            match result {
                Ok((row, note)) => {
                    out.append_row(&row, inst.instance_id.as_str())?;
                    progress.ok(inst.instance_id.as_str(), &note);
                }
                Err(e) => {
                    failures += 1;
                    progress.failed(inst.instance_id.as_str(), &e);
                }
            }
            Ok(())
        },
    )?;
    let order: Vec<&str> = loaded
        .instances
        .iter()
        .map(|i| i.instance_id.as_str())
        .collect();
    out.finish(&order)?;
    finish(printer, &args.out, todo.len(), failures)
}

fn build_one(
    inst: &Instance,
    hit_paths: &[String],
    mirror_dir: &Path,
    style: &Style3,
    cap: Option<usize>,
) -> anyhow::Result<(Row, String)> {
    let issue = inst
        .problem_statement()
        .ok_or_else(|| anyhow!("the row has no problem_statement"))?;
    let mirror = open_mirror(mirror_dir, &inst.repo)?;
    let files = mirror.list_files(&inst.base_commit)?;
    let mut batch = mirror.batch()?;
    let mut read = |path: &str| -> anyhow::Result<String> {
        let bytes = batch.read(&inst.base_commit, path)?.ok_or_else(|| {
            anyhow!(
                "{path} does not exist at {}; was the retrieval file made for another dataset?",
                inst.base_commit
            )
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            anyhow!(
                "{path}: not valid UTF-8 (byte {})",
                e.utf8_error().valid_up_to()
            )
        })?;
        Ok(universal_newlines(&text))
    };
    let mut readmes = BTreeMap::new();
    for f in files.iter().filter(|f| !f.contains('/')) {
        if f.to_lowercase().starts_with("readme") {
            readmes.insert(f.clone(), read(f)?);
        }
    }
    let mut candidates = Vec::with_capacity(hit_paths.len());
    for p in hit_paths {
        candidates.push(Candidate {
            path: p.clone(),
            content: read(p)?,
        });
    }
    let rendered = render_text(style, issue, &readmes, &candidates, cap, &Cl100k);
    let note = match cap {
        Some(c) => format!(
            "{} of {} files, about {} of {c} tokens",
            rendered.included.len(),
            candidates.len(),
            rendered.estimated_tokens
        ),
        None => format!("{} files", rendered.included.len()),
    };
    Ok((text_row(inst, rendered.text), note))
}

/// `instance_id` → hit paths in rank order.
fn read_hits(path: &Path) -> Result<HashMap<String, Vec<String>>, CliError> {
    let text = read_text(path)?;
    let mut map = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: HitsLine = serde_json::from_str(line).map_err(|e| {
            CliError::input(anyhow!(
                "{} line {}: not a retrieval line ({{\"instance_id\", \"hits\": [{{\"docid\", \"score\"}}]}}): {e}",
                path.display(),
                n + 1
            ))
        })?;
        map.insert(
            parsed.instance_id,
            parsed.hits.into_iter().map(|h| h.docid).collect(),
        );
    }
    Ok(map)
}

// ---------------------------------------------------------------------------------------------
// swt

fn swt(args: SwtArgs, printer: &Printer) -> CliResult {
    let template = match &args.template {
        None => SwtTemplate::builtin(args.mode),
        Some(p) => {
            SwtTemplate::parse(&p.display().to_string(), &read_text(p)?).map_err(CliError::input)?
        }
    };
    // The message already names the cause; its source is not repeated as "caused by".
    let (rows, _) = swtbench_data::rows::read_file(&args.input, "test")
        .map_err(|e| CliError::input(anyhow!(e.to_string())))?;
    let rows: Vec<Row> = rows
        .into_iter()
        .map(|r| match r.value {
            Value::Object(m) => Ok(m),
            _ => Err(CliError::input(anyhow!(
                "{} {}: the row is not a JSON object",
                r.source,
                r.location
            ))),
        })
        .collect::<Result<_, _>>()?;

    let dropped = filtered_ids(&args, printer)?;
    let wanted: BTreeSet<String> = swtbench_data::dataset::split_instance_ids(&args.instance_ids)
        .into_iter()
        .collect();
    let id_of = |r: &Row| {
        r.get("instance_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if let Some(unknown) = wanted
        .iter()
        .find(|w| !rows.iter().any(|r| id_of(r) == **w))
    {
        return Err(CliError::input(anyhow!(
            "--instance-ids: {unknown} is not in {}",
            args.input.display()
        )));
    }

    let mut out = RowOutput::open(&args.out)?;
    let selected: Vec<&Row> = rows
        .iter()
        .filter(|r| !dropped.contains(&id_of(r)))
        .filter(|r| wanted.is_empty() || wanted.contains(&id_of(r)))
        .collect();
    let todo: Vec<&Row> = selected
        .iter()
        .copied()
        .filter(|r| !out.done.contains(&id_of(r)))
        .collect();
    printer.info(&format!(
        "{}: {} rows, {} removed by the SWT filter, {} to convert ({} mode, template {})",
        args.input.display(),
        rows.len(),
        rows.iter().filter(|r| dropped.contains(&id_of(r))).count(),
        todo.len(),
        args.mode.name(),
        template.origin()
    ));
    let mut failures = 0usize;
    let mut progress = Progress::new(printer, todo.len());
    for row in &todo {
        let id = id_of(row);
        match swt_row(row, &template) {
            Ok(new) => {
                out.append_row(&new, &id)?;
                progress.ok(&id, "converted");
            }
            Err(e) => {
                failures += 1;
                // The progress line names the instance already.
                let message = e.to_string();
                let message = message.strip_prefix(&format!("{id}: ")).unwrap_or(&message);
                progress.failed(&id, &anyhow!(message.to_string()));
            }
        }
    }
    let order: Vec<String> = selected.iter().map(|r| id_of(r)).collect();
    let order: Vec<&str> = order.iter().map(String::as_str).collect();
    out.finish(&order)?;
    finish(printer, &args.out, todo.len(), failures)
}

/// The ids the SWT filter removes from the input.
fn filtered_ids(args: &SwtArgs, printer: &Printer) -> Result<BTreeSet<String>, CliError> {
    let list = match args.filter_swt {
        FilterChoice::None => return Ok(BTreeSet::new()),
        FilterChoice::List(f) => f,
        FilterChoice::Auto => {
            // The dataset loader knows how to tell Lite, Verified and Full apart.
            let mut options = LoadOptions::new(args.input.display().to_string());
            options.filter_swt = true;
            options.is_swt = true;
            options.offline = true;
            let hub = common::hub_from_env()?;
            let loaded =
                swtbench_data::load_dataset(&options, &hub, None).map_err(common::dataset_error)?;
            for note in &loaded.notes {
                printer.info(&format!("note: {note}"));
            }
            loaded.filter.unwrap_or(SwtFilter::Full)
        }
    };
    Ok(list.ids().map(str::to_string).collect())
}

// ---------------------------------------------------------------------------------------------
// shared plumbing

fn check_mirror_dir(dir: &Path) -> Result<(), CliError> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(CliError::input(anyhow!(
        "--repo-mirror {}: no such directory",
        dir.display()
    ))
    .with_hint(
        "make mirrors with `git clone --mirror https://github.com/<owner>/<name> DIR/<owner>__<name>.git`",
    ))
}

fn open_mirror(dir: &Path, repo: &str) -> anyhow::Result<GitMirror> {
    GitMirror::locate(dir, repo)?.ok_or_else(|| {
        anyhow!(
            "no mirror of {repo} at {}",
            dir.join(mirror_dir_name(repo)).display()
        )
    })
}

fn read_text(path: &Path) -> Result<String, CliError> {
    fs::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))
        .map_err(CliError::input)
}

fn preview(ids: &[&str]) -> String {
    let mut s = ids.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    if ids.len() > 5 {
        s.push_str(&format!(", … ({} more)", ids.len() - 5));
    }
    s
}

fn report_resume(printer: &Printer, out: &Path, total: usize, todo: usize) {
    if todo < total {
        printer.info(&format!(
            "{}: {} of {total} instances already done, {todo} to go",
            out.display(),
            total - todo
        ));
    }
}

fn finish(printer: &Printer, out: &Path, todo: usize, failures: usize) -> CliResult {
    if failures > 0 {
        printer.warn(&format!(
            "{failures} of {todo} instance(s) failed (see above); they are not in {}; run the \
             command again to retry them",
            out.display()
        ));
        return Ok(ExitCode::Partial);
    }
    printer.info(&format!("wrote {}", out.display()));
    Ok(ExitCode::Success)
}

/// Runs `work` on every item with `workers` threads and hands each result, in completion order,
/// to `done` on the calling thread (which owns the output file).
fn for_each_parallel<'a, T: Sync, R: Send>(
    items: &'a [&'a T],
    workers: usize,
    work: impl Fn(&T) -> R + Sync,
    mut done: impl FnMut(&T, R) -> anyhow::Result<()>,
) -> Result<(), CliError> {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, R)>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, work) = (&next, &work);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() {
                    break;
                }
                if tx.send((i, work(items[i]))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (i, result) in rx {
            if let Err(e) = done(items[i], result) {
                // Stop handing out work; the workers finish their current item.
                next.store(items.len(), Ordering::Relaxed);
                return Err(CliError::environment(e));
            }
        }
        Ok(())
    })
}

/// Per-instance progress lines on stderr.
struct Progress<'p> {
    printer: &'p Printer,
    total: usize,
    n: usize,
}

impl<'p> Progress<'p> {
    fn new(printer: &'p Printer, total: usize) -> Self {
        Progress {
            printer,
            total,
            n: 0,
        }
    }

    fn ok(&mut self, id: &str, note: &str) {
        self.n += 1;
        self.printer
            .info(&format!("[{}/{}] {id}: {note}", self.n, self.total));
    }

    fn failed(&mut self, id: &str, e: &anyhow::Error) {
        self.n += 1;
        let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
        self.printer.warn(&format!(
            "[{}/{}] {id}: {}",
            self.n,
            self.total,
            chain.join(": ")
        ));
    }
}

/// An output file that is appended to row by row and can be resumed.
///
/// JSON Lines are appended to the file itself; parquet output collects rows in
/// `<out>.partial.jsonl` and is written (to a temporary file, then renamed) once all rows are
/// there. A line cut short by a crash is dropped when the file is opened again.
struct RowOutput {
    path: PathBuf,
    parquet: bool,
    /// The JSON Lines file rows are appended to (the output, or the parquet's partial file).
    lines_path: PathBuf,
    file: fs::File,
    done: BTreeSet<String>,
}

impl RowOutput {
    fn open(path: &Path) -> Result<RowOutput, CliError> {
        let parquet = path.extension().is_some_and(|e| e == "parquet");
        let lines_path = if parquet {
            let mut p = path.as_os_str().to_owned();
            p.push(".partial.jsonl");
            PathBuf::from(p)
        } else {
            path.to_path_buf()
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)
                .with_context(|| format!("creating {}", dir.display()))
                .map_err(CliError::environment)?;
        }
        let mut done = BTreeSet::new();
        // Rows of a finished parquet output count as done (and are kept).
        let mut carried: Vec<Row> = Vec::new();
        if parquet && path.is_file() {
            let (rows, _) = swtbench_data::rows::read_file(path, "test")
                .map_err(|e| CliError::input(anyhow!(e.to_string())))?;
            for r in rows {
                if let Value::Object(m) = r.value {
                    carried.push(m);
                }
            }
        }
        let mut file = fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&lines_path)
            .with_context(|| format!("opening {}", lines_path.display()))
            .map_err(CliError::environment)?;
        let good_len = scan_lines(&mut file, &lines_path, &mut done)?;
        let len = file
            .metadata()
            .map_err(|e| CliError::environment(anyhow!(e)))?
            .len();
        if good_len < len {
            file.set_len(good_len)
                .with_context(|| {
                    format!(
                        "truncating the incomplete last line of {}",
                        lines_path.display()
                    )
                })
                .map_err(CliError::environment)?;
        }
        let mut out = RowOutput {
            path: path.to_path_buf(),
            parquet,
            lines_path,
            file,
            done,
        };
        for row in carried {
            let id = row
                .get("instance_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if !out.done.contains(&id) {
                out.append_row(&row, &id).map_err(CliError::environment)?;
            }
        }
        Ok(out)
    }

    fn append_row(&mut self, row: &Row, id: &str) -> anyhow::Result<()> {
        let line = to_json_line(row);
        self.append_raw(line.trim_end_matches('\n'), id)
    }

    fn append_line(&mut self, json: &str, id: &str) -> anyhow::Result<()> {
        self.append_raw(json, id)
    }

    fn append_raw(&mut self, json: &str, id: &str) -> anyhow::Result<()> {
        let mut line = String::with_capacity(json.len() + 1);
        line.push_str(json);
        line.push('\n');
        // One write per row, on a file opened for appending: a row is either all there or (after
        // a crash) a cut line that the next run removes.
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .with_context(|| format!("appending to {}", self.lines_path.display()))?;
        self.done.insert(id.to_string());
        Ok(())
    }

    /// Puts the rows in `order` (the dataset's), and writes the parquet file if that is the
    /// output format.
    fn finish(self, order: &[&str]) -> Result<(), CliError> {
        let env = CliError::environment;
        let text = fs::read_to_string(&self.lines_path)
            .with_context(|| format!("reading back {}", self.lines_path.display()))
            .map_err(env)?;
        let mut by_id: BTreeMap<String, (usize, &str)> = BTreeMap::new();
        let mut ids_in_file = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let id = line_id(line).unwrap_or_default();
            ids_in_file.push(id.clone());
            by_id.entry(id).or_insert((n, line));
        }
        let rank: HashMap<&str, usize> = order.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        let mut sorted: Vec<&(usize, &str)> = by_id.values().collect();
        sorted.sort_by_key(|(n, line)| {
            let id = line_id(line).unwrap_or_default();
            (rank.get(id.as_str()).copied().unwrap_or(usize::MAX), *n)
        });
        if self.parquet {
            let rows: Vec<Row> = sorted
                .iter()
                .map(|(_, line)| serde_json::from_str::<Row>(line))
                .collect::<Result<_, _>>()
                .map_err(|e| env(anyhow!("{}: {e}", self.lines_path.display())))?;
            let bytes = to_parquet(&columns_of(&rows), &rows).map_err(|e| env(anyhow!(e)))?;
            swtbench_data::fsutil::write_atomic(&self.path, &bytes).map_err(|e| env(e.into()))?;
            fs::remove_file(&self.lines_path)
                .with_context(|| format!("removing {}", self.lines_path.display()))
                .map_err(env)?;
            return Ok(());
        }
        let in_order = sorted.iter().map(|(n, _)| *n).collect::<Vec<_>>();
        if in_order.windows(2).all(|w| w[0] < w[1]) && in_order.len() == ids_in_file.len() {
            return Ok(());
        }
        let mut body = String::with_capacity(text.len());
        for (_, line) in sorted {
            body.push_str(line);
            body.push('\n');
        }
        swtbench_data::fsutil::write_atomic(&self.path, body.as_bytes()).map_err(|e| env(e.into()))
    }
}

fn line_id(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    Some(v.get("instance_id")?.as_str()?.to_string())
}

/// Reads the ids of complete lines; returns the length of the file up to the last complete line.
fn scan_lines(
    file: &mut fs::File,
    path: &Path,
    done: &mut BTreeSet<String>,
) -> Result<u64, CliError> {
    file.rewind()
        .map_err(|e| CliError::environment(anyhow!(e)))?;
    let mut reader = BufReader::new(&*file);
    let mut good = 0u64;
    let mut line = String::new();
    let mut n = 0usize;
    loop {
        line.clear();
        let read = reader
            .read_line(&mut line)
            .with_context(|| format!("reading {}", path.display()))
            .map_err(CliError::input)?;
        if read == 0 {
            break;
        }
        n += 1;
        if !line.ends_with('\n') {
            break; // cut short by a crash: dropped
        }
        match line_id(line.trim_end()) {
            Some(id) => {
                done.insert(id);
                good += read as u64;
            }
            None if line.trim().is_empty() => good += read as u64,
            None => {
                return Err(CliError::input(anyhow!(
                    "{} line {n}: not a row with an instance_id; is this the right output file?",
                    path.display()
                )))
            }
        }
    }
    Ok(good)
}
