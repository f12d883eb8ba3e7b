//! `swtbench dataset retrieve|build|swt` as a library: make the model inputs of SWT-Bench from a
//! SWE-bench dataset and local git mirrors, the way the published SWT-Bench datasets were made.
//!
//! - [`retrieve`]: per instance, BM25-rank the repository's Python files at `base_commit` against
//!   the issue text and write SWE-bench's retrieval JSON Lines (`{"instance_id", "hits"}`).
//! - [`build`]: render SWE-bench style-3 text rows (issue, READMEs, the best-ranked files that
//!   fit under a cl100k token cap, numbered) with the 13 SWE-bench text columns.
//! - [`swt`]: turn text rows into ZeroShotBase or ZeroShotPlus rows, with the patches swapped as
//!   in the published SWT-Bench datasets.
//!
//! Outputs are JSON Lines, or parquet when the file name ends in `.parquet`; every command
//! resumes (see `output`). Repositories are read from bare mirrors only; nothing is cloned and
//! nothing is indexed on disk. The algorithms live in `swtbench-textgen`; this module does the
//! I/O and the threads, and reports progress as [`RowEvent`]s (it never prints). Each command
//! comes in two steps where the caller loads something in between (the dataset, the SWT filter):
//! the checks and inputs first, so that their errors come before the caller's, then the work.
//! [`catalog`] is `swtbench datasets`.

pub mod catalog;
mod output;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{anyhow, Context};
use serde_json::Value;
use swtbench_core::Instance;
use swtbench_data::git_mirror::{mirror_dir_name, GitMirror};
use swtbench_textgen::render::{render_text, universal_newlines, Candidate, Style3};
use swtbench_textgen::retrieve::{decode_source, document_paths, rank, HitsLine};
use swtbench_textgen::row::{text_row, Row};
use swtbench_textgen::swt::{swt_row, SwtMode, SwtTemplate};
use swtbench_textgen::tokens::Cl100k;

use crate::lines::Line;
use crate::{Error, Result};
use output::RowOutput;

/// Progress of one command, on the calling thread, in completion order.
#[derive(Debug)]
pub enum RowEvent<'a> {
    /// The output was opened: of `total` instances, `total - todo` are in it already.
    Resumed { total: usize, todo: usize },
    /// `build`: instances to do that have no line in the retrieval file (their text gets no code
    /// files).
    NoHits { ids: &'a [&'a str] },
    /// `swt`: the input has `rows` rows, the SWT filter removes `removed`, `todo` are converted
    /// (in `mode`, with the template from `template`).
    SwtPlan {
        input: &'a Path,
        rows: usize,
        removed: usize,
        todo: usize,
        mode: &'a str,
        template: &'a str,
    },
    /// The `n`th of `total` items is in the output; `note` says what it holds.
    Done {
        n: usize,
        total: usize,
        id: &'a str,
        note: &'a str,
    },
    /// The `n`th of `total` items failed and is not in the output.
    Failed {
        n: usize,
        total: usize,
        id: &'a str,
        error: &'a anyhow::Error,
    },
}

impl RowEvent<'_> {
    /// The progress line of the event (`None`: nothing to say). `out` is the output file,
    /// `hits` the retrieval file of `build`.
    pub fn line(&self, out: &Path, hits: Option<&Path>) -> Option<Line> {
        match self {
            RowEvent::Resumed { total, todo } => (todo < total).then(|| {
                let done = total - todo;
                Line::Info(format!(
                    "{}: {done} of {total} instances already done, {todo} to go",
                    out.display()
                ))
            }),
            RowEvent::NoHits { ids } => Some(Line::Warn(format!(
                "{} instance(s) have no line in {}; their text gets no code files: {}",
                ids.len(),
                hits.map(|h| h.display().to_string()).unwrap_or_default(),
                preview(ids)
            ))),
            RowEvent::SwtPlan {
                input,
                rows,
                removed,
                todo,
                mode,
                template,
            } => Some(Line::Info(format!(
                "{}: {rows} rows, {removed} removed by the SWT filter, {todo} to convert ({mode} \
                 mode, template {template})",
                input.display(),
            ))),
            RowEvent::Done { n, total, id, note } => {
                Some(Line::Info(format!("[{n}/{total}] {id}: {note}")))
            }
            RowEvent::Failed {
                n,
                total,
                id,
                error,
            } => {
                let chain: Vec<String> = error.chain().map(|c| c.to_string()).collect();
                Some(Line::Warn(format!(
                    "[{n}/{total}] {id}: {}",
                    chain.join(": ")
                )))
            }
        }
    }
}

fn preview(ids: &[&str]) -> String {
    let mut s = ids.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    if ids.len() > 5 {
        s.push_str(&format!(", … ({} more)", ids.len() - 5));
    }
    s
}

/// What a command did: `failures` of the `todo` items are not in the output (a rerun retries
/// them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowsWritten {
    pub todo: usize,
    pub failures: usize,
}

/// A value the dataset commands' flags refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatasetFlagError {
    /// `--filter-swt` names no list.
    #[error(transparent)]
    Filter(#[from] swtbench_data::filters::UnknownFilterList),
    /// `--mode` is neither zsb nor zsp.
    #[error("unknown mode {0:?} (expected zsb or zsp)")]
    Mode(String),
    /// `--style` is not 3.
    #[error("prompt style {0:?} is not supported (only 3, the style the SWT-Bench datasets use)")]
    Style(String),
}

/// `--filter-swt`: auto, none, or a list's name.
pub fn parse_filter_choice(s: &str) -> Result<FilterChoice, DatasetFlagError> {
    match s.to_ascii_lowercase().as_str() {
        "auto" => Ok(FilterChoice::Auto),
        "none" => Ok(FilterChoice::None),
        other => Ok(FilterChoice::List(
            other.parse::<swtbench_data::SwtFilter>()?,
        )),
    }
}

/// `--mode`: zsb (or base) or zsp (or plus).
pub fn parse_mode(s: &str) -> Result<SwtMode, DatasetFlagError> {
    match s.to_ascii_lowercase().as_str() {
        "zsb" | "base" => Ok(SwtMode::Zsb),
        "zsp" | "plus" => Ok(SwtMode::Zsp),
        other => Err(DatasetFlagError::Mode(other.to_string())),
    }
}

/// `--style`: only 3 (or style-3).
pub fn parse_style(s: &str) -> Result<u8, DatasetFlagError> {
    match s {
        "3" | "style-3" => Ok(3),
        other => Err(DatasetFlagError::Style(other.to_string())),
    }
}

impl RowsWritten {
    /// The last line of a command writing `out`: a warning when some items failed.
    pub fn summary(&self, out: &Path) -> crate::lines::Line {
        let RowsWritten { todo, failures } = *self;
        match failures {
            0 => crate::lines::Line::Info(format!("wrote {}", out.display())),
            _ => crate::lines::Line::Warn(format!(
                "{failures} of {todo} instance(s) failed (see above); they are not in {}; run the \
                 command again to retry them",
                out.display()
            )),
        }
    }
}

/// Checks that the directory of bare mirrors exists.
pub fn check_mirror_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(Error::input(anyhow!(
        "--repo-mirror {}: no such directory",
        dir.display()
    ))
    .with_hint(
        "make mirrors with `git clone --mirror https://github.com/<owner>/<name> DIR/<owner>__<name>.git`",
    ))
}

/// The number of threads for `todo` items: `max_workers`, by default the number of CPUs, at
/// least one and no more than there are items.
fn workers(max_workers: Option<usize>, todo: usize) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    max_workers.unwrap_or(cpus).clamp(1, todo.max(1))
}

// ---------------------------------------------------------------------------------------------
// retrieve

/// `dataset retrieve`.
#[derive(Debug, Clone)]
pub struct RetrieveSettings {
    /// Directory of bare mirrors `<owner>__<name>.git`.
    pub mirror_dir: PathBuf,
    /// Index test files too.
    pub include_tests: bool,
    /// Hits kept per instance.
    pub top_k: usize,
    /// Leave out Python files that are not UTF-8 instead of failing the instance.
    pub skip_undecodable: bool,
    /// The JSON Lines output, appended to and resumed.
    pub out: PathBuf,
    pub max_workers: Option<usize>,
}

impl RetrieveSettings {
    /// What can be checked before the dataset is loaded.
    pub fn check(&self) -> Result<()> {
        check_mirror_dir(&self.mirror_dir)?;
        if self.out.extension().is_some_and(|e| e == "parquet") {
            return Err(Error::input(anyhow!(
                "{}: retrieval files are JSON Lines; choose a .jsonl name",
                self.out.display()
            )));
        }
        Ok(())
    }
}

/// Opens the output (keeping the rows already there) and says how many instances are left.
fn resume<'a>(
    path: &Path,
    instances: &'a [Instance],
    on_event: &mut dyn FnMut(RowEvent<'_>),
) -> Result<(RowOutput, Vec<&'a Instance>)> {
    let out = RowOutput::open(path)?;
    let todo: Vec<&Instance> = instances
        .iter()
        .filter(|i| !out.done.contains(i.instance_id.as_str()))
        .collect();
    on_event(RowEvent::Resumed {
        total: instances.len(),
        todo: todo.len(),
    });
    Ok((out, todo))
}

/// Ranks the files of every instance not yet in the output and appends its hits line.
pub fn retrieve(
    settings: &RetrieveSettings,
    instances: &[Instance],
    on_event: &mut dyn FnMut(RowEvent<'_>),
) -> Result<RowsWritten> {
    let (mut out, todo) = resume(&settings.out, instances, on_event)?;
    let mut progress = Progress::new(on_event, todo.len());
    for_each_parallel(
        &todo,
        workers(settings.max_workers, todo.len()),
        |inst| retrieve_one(inst, settings),
        |inst, result| {
            match result {
                Ok((line, note)) => {
                    let json = serde_json::to_string(&line).map_err(|e| anyhow!(e))?;
                    out.append_line(&json, &line.instance_id)?;
                    progress.ok(inst.instance_id.as_str(), &note);
                }
                Err(e) => progress.failed(inst.instance_id.as_str(), &e),
            }
            Ok(())
        },
    )?;
    let failures = progress.failures;
    out.finish(&dataset_order(instances))?;
    Ok(RowsWritten {
        todo: todo.len(),
        failures,
    })
}

fn dataset_order(instances: &[Instance]) -> Vec<&str> {
    instances.iter().map(|i| i.instance_id.as_str()).collect()
}

fn retrieve_one(
    inst: &Instance,
    settings: &RetrieveSettings,
) -> anyhow::Result<(HitsLine, String)> {
    let started = Instant::now();
    let issue = inst
        .problem_statement()
        .ok_or_else(|| anyhow!("the row has no problem_statement to search with"))?;
    let mirror = open_mirror(&settings.mirror_dir, &inst.repo)?;
    let files = mirror.list_files(&inst.base_commit)?;
    let paths = document_paths(files.iter().map(String::as_str), settings.include_tests);
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
            Err(_) if settings.skip_undecodable => skipped += 1,
            Err(e) => {
                return Err(anyhow!(e).context(
                    "a Python file is not UTF-8 (pass --skip-undecodable to leave such files out)",
                ))
            }
        }
    }
    let ranking = rank(
        issue,
        docs.iter().map(|(p, c)| (*p, c.as_str())),
        settings.top_k,
    );
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

/// `dataset build`.
#[derive(Debug, Clone)]
pub struct BuildSettings {
    /// The retrieval file (`dataset retrieve`, or SWE-bench's `bm25_retrieval.py`).
    pub hits: PathBuf,
    /// Directory of bare mirrors `<owner>__<name>.git`.
    pub mirror_dir: PathBuf,
    /// Token cap for the prompt (cl100k_base); 0 includes every retrieved file.
    pub max_tokens: usize,
    /// Keep only the first K hits as candidates.
    pub k: Option<usize>,
    /// A style-3 template replacing ours.
    pub template: Option<PathBuf>,
    /// JSON Lines, or parquet when it ends in `.parquet`.
    pub out: PathBuf,
    pub max_workers: Option<usize>,
}

/// What `build` reads before the dataset is loaded: the template and the retrieval file.
#[derive(Debug)]
pub struct BuildInputs {
    style: Style3,
    /// `instance_id` → hit paths in rank order.
    hits: HashMap<String, Vec<String>>,
}

/// Checks the mirror directory and reads the template and the retrieval file.
pub fn prepare_build(settings: &BuildSettings) -> Result<BuildInputs> {
    check_mirror_dir(&settings.mirror_dir)?;
    let style = match &settings.template {
        None => Style3::builtin(),
        Some(p) => Style3::parse(&p.display().to_string(), &read_text(p)?).map_err(Error::input)?,
    };
    let hits = read_hits(&settings.hits)?;
    Ok(BuildInputs { style, hits })
}

/// Renders the text row of every instance not yet in the output.
pub fn build(
    settings: &BuildSettings,
    inputs: &BuildInputs,
    instances: &[Instance],
    on_event: &mut dyn FnMut(RowEvent<'_>),
) -> Result<RowsWritten> {
    let (mut out, todo) = resume(&settings.out, instances, on_event)?;
    let missing: Vec<&str> = todo
        .iter()
        .map(|i| i.instance_id.as_str())
        .filter(|id| !inputs.hits.contains_key(*id))
        .collect();
    if !missing.is_empty() {
        on_event(RowEvent::NoHits { ids: &missing });
    }

    let cap = (settings.max_tokens > 0).then_some(settings.max_tokens);
    let mut progress = Progress::new(on_event, todo.len());
    for_each_parallel(
        &todo,
        workers(settings.max_workers, todo.len()),
        |inst| {
            let empty = Vec::new();
            let paths = inputs.hits.get(inst.instance_id.as_str()).unwrap_or(&empty);
            let paths = &paths[..settings.k.unwrap_or(paths.len()).min(paths.len())];
            build_one(inst, paths, &settings.mirror_dir, &inputs.style, cap)
        },
        |inst, result| {
            match result {
                Ok((row, note)) => {
                    out.append_row(&row, inst.instance_id.as_str())?;
                    progress.ok(inst.instance_id.as_str(), &note);
                }
                Err(e) => progress.failed(inst.instance_id.as_str(), &e),
            }
            Ok(())
        },
    )?;
    let failures = progress.failures;
    out.finish(&dataset_order(instances))?;
    Ok(RowsWritten {
        todo: todo.len(),
        failures,
    })
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
fn read_hits(path: &Path) -> Result<HashMap<String, Vec<String>>> {
    let text = read_text(path)?;
    let mut map = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: HitsLine = serde_json::from_str(line).map_err(|e| {
            Error::input(anyhow!(
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

/// Which SWT filter list removes instances in `dataset swt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterChoice {
    /// The list of the dataset the rows come from (inferred from the instance ids).
    Auto,
    List(swtbench_data::SwtFilter),
    None,
}

/// The ids the SWT filter removes from the rows of `input`, and the loader's notes (how the list
/// was inferred). With [`FilterChoice::Auto`] the dataset loader tells Lite, Verified and Full
/// apart, offline; `hub` is only asked for then.
pub fn swt_filter_ids(
    input: &Path,
    choice: FilterChoice,
    hub: &dyn Fn() -> Result<swtbench_data::hub::Hub>,
) -> Result<(BTreeSet<String>, Vec<String>)> {
    let (list, notes) = match choice {
        FilterChoice::None => return Ok((BTreeSet::new(), Vec::new())),
        FilterChoice::List(f) => (f, Vec::new()),
        FilterChoice::Auto => {
            let mut options = swtbench_data::LoadOptions::new(input.display().to_string());
            options.filter_swt = true;
            options.is_swt = true;
            options.offline = true;
            let loaded = swtbench_data::load_dataset(&options, &hub()?, None)
                .map_err(crate::inputs::dataset_error)?;
            (
                loaded.filter.unwrap_or(swtbench_data::SwtFilter::Full),
                loaded.notes,
            )
        }
    };
    Ok((list.ids().map(str::to_string).collect(), notes))
}

/// `dataset swt`.
#[derive(Debug, Clone)]
pub struct SwtSettings {
    /// SWE-bench text rows (.jsonl, .json or .parquet).
    pub input: PathBuf,
    pub mode: SwtMode,
    /// A template replacing our prompt for the mode.
    pub template: Option<PathBuf>,
    /// Only these instances (each must be in the input); empty means all.
    pub instance_ids: Vec<String>,
    /// JSON Lines, or parquet when it ends in `.parquet`.
    pub out: PathBuf,
}

/// What `swt` reads before the SWT filter is resolved: the template and the input rows.
#[derive(Debug)]
pub struct SwtInput {
    template: SwtTemplate,
    rows: Vec<Row>,
}

impl SwtInput {
    pub fn template(&self) -> &SwtTemplate {
        &self.template
    }
}

/// Reads the template and the input rows (each must be a JSON object).
pub fn prepare_swt(settings: &SwtSettings) -> Result<SwtInput> {
    let template = match &settings.template {
        None => SwtTemplate::builtin(settings.mode),
        Some(p) => {
            SwtTemplate::parse(&p.display().to_string(), &read_text(p)?).map_err(Error::input)?
        }
    };
    // The message already names the cause; its source is not repeated as "caused by".
    let (rows, _) = swtbench_data::rows::read_file(&settings.input, "test")
        .map_err(|e| Error::input(anyhow!(e.to_string())))?;
    let rows: Vec<Row> = rows
        .into_iter()
        .map(|r| match r.value {
            Value::Object(m) => Ok(m),
            _ => Err(Error::input(anyhow!(
                "{} {}: the row is not a JSON object",
                r.source,
                r.location
            ))),
        })
        .collect::<Result<_>>()?;
    Ok(SwtInput { template, rows })
}

fn row_id(r: &Row) -> String {
    r.get("instance_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Converts every selected row that `dropped` (the ids the SWT filter removes) keeps and that is
/// not yet in the output.
pub fn swt(
    settings: &SwtSettings,
    input: &SwtInput,
    dropped: &BTreeSet<String>,
    on_event: &mut dyn FnMut(RowEvent<'_>),
) -> Result<RowsWritten> {
    let rows = &input.rows;
    let wanted: BTreeSet<String> =
        swtbench_data::dataset::split_instance_ids(&settings.instance_ids)
            .into_iter()
            .collect();
    if let Some(unknown) = wanted
        .iter()
        .find(|w| !rows.iter().any(|r| row_id(r) == **w))
    {
        return Err(Error::input(anyhow!(
            "--instance-ids: {unknown} is not in {}",
            settings.input.display()
        )));
    }

    let mut out = RowOutput::open(&settings.out)?;
    let selected: Vec<&Row> = rows
        .iter()
        .filter(|r| !dropped.contains(&row_id(r)))
        .filter(|r| wanted.is_empty() || wanted.contains(&row_id(r)))
        .collect();
    let todo: Vec<&Row> = selected
        .iter()
        .copied()
        .filter(|r| !out.done.contains(&row_id(r)))
        .collect();
    on_event(RowEvent::SwtPlan {
        input: &settings.input,
        rows: rows.len(),
        removed: rows.iter().filter(|r| dropped.contains(&row_id(r))).count(),
        todo: todo.len(),
        mode: settings.mode.name(),
        template: input.template.origin(),
    });
    let mut progress = Progress::new(on_event, todo.len());
    for row in &todo {
        let id = row_id(row);
        match swt_row(row, &input.template) {
            Ok(new) => {
                // A failed append is an input error here (exit code 2), as `swt` has always
                // reported it; `retrieve` and `build` report theirs as environment errors.
                out.append_row(&new, &id)?;
                progress.ok(&id, "converted");
            }
            Err(e) => {
                // The progress line names the instance already.
                let message = e.to_string();
                let message = message.strip_prefix(&format!("{id}: ")).unwrap_or(&message);
                progress.failed(&id, &anyhow!(message.to_string()));
            }
        }
    }
    let failures = progress.failures;
    let order: Vec<String> = selected.iter().map(|r| row_id(r)).collect();
    let order: Vec<&str> = order.iter().map(String::as_str).collect();
    out.finish(&order)?;
    Ok(RowsWritten {
        todo: todo.len(),
        failures,
    })
}

// ---------------------------------------------------------------------------------------------
// shared plumbing

fn open_mirror(dir: &Path, repo: &str) -> anyhow::Result<GitMirror> {
    GitMirror::locate(dir, repo)?.ok_or_else(|| {
        anyhow!(
            "no mirror of {repo} at {}",
            dir.join(mirror_dir_name(repo)).display()
        )
    })
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))
        .map_err(Error::input)
}

/// Runs `work` on every item with `workers` threads and hands each result, in completion order,
/// to `done` on the calling thread (which owns the output file).
fn for_each_parallel<'a, T: Sync, R: Send>(
    items: &'a [&'a T],
    workers: usize,
    work: impl Fn(&T) -> R + Sync,
    mut done: impl FnMut(&T, R) -> anyhow::Result<()>,
) -> Result<()> {
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
                return Err(Error::environment(e));
            }
        }
        Ok(())
    })
}

/// Numbers the finished items and counts the failures.
struct Progress<'e> {
    on_event: &'e mut dyn FnMut(RowEvent<'_>),
    total: usize,
    n: usize,
    failures: usize,
}

impl<'e> Progress<'e> {
    fn new(on_event: &'e mut dyn FnMut(RowEvent<'_>), total: usize) -> Self {
        Progress {
            on_event,
            total,
            n: 0,
            failures: 0,
        }
    }

    fn ok(&mut self, id: &str, note: &str) {
        self.n += 1;
        (self.on_event)(RowEvent::Done {
            n: self.n,
            total: self.total,
            id,
            note,
        });
    }

    fn failed(&mut self, id: &str, error: &anyhow::Error) {
        self.n += 1;
        self.failures += 1;
        (self.on_event)(RowEvent::Failed {
            n: self.n,
            total: self.total,
            id,
            error,
        });
    }
}
