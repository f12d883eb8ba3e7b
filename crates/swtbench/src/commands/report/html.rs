//! `swtbench report --format html` and `swtbench report --compare RUN_A RUN_B`: the run's page (or
//! the comparison page) as one self-contained HTML file, with the same numbers as
//! `--format json` (the metrics are computed once, by `report`, and handed in here).
//!
//! This module reads the run tree through `swtbench_html::load_run` and writes the page; the
//! rendering itself is pure (`swtbench_html::render_*`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use swtbench_core::Instance;
use swtbench_grade::leaderboard::{self, Format};
use swtbench_grade::Parser;

use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;

/// What `report` prints: one of the leaderboard table formats, or the HTML page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Table(Format),
    Html,
}

impl Default for ReportFormat {
    fn default() -> Self {
        ReportFormat::Table(Format::default())
    }
}

impl std::str::FromStr for ReportFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("html") {
            return Ok(ReportFormat::Html);
        }
        s.parse::<Format>().map(ReportFormat::Table).map_err(|_| {
            format!("unknown format `{s}` (expected github, latex, json, csv or html)")
        })
    }
}

/// The HTML-only options of `report`.
#[derive(Debug, Clone, clap::Args)]
pub struct HtmlArgs {
    /// With `--format html`: write the page to FILE instead of stdout. Log links in the page are
    /// relative to FILE's directory, so keep the page next to the run tree it describes (or move
    /// both together).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Compare two runs side by side (HTML): which instances each resolves that the other does
    /// not, and the metric deltas. Each run is `<logs root>/<run_id>/<model>`; implies
    /// `--format html`.
    #[arg(long, num_args = 2, value_names = ["RUN_A", "RUN_B"], conflicts_with = "path")]
    pub compare: Option<Vec<PathBuf>>,
}

/// Everything about a run the page shows besides what it reads from the tree.
#[derive(Debug, Clone)]
pub struct PageContext {
    /// `report`'s parameters worth showing (dataset, denominator, gold run, …).
    pub params: Vec<(String, String)>,
    pub denominator: usize,
    /// The dataset's instances by id, when a dataset was read (repositories, gold fixes and the
    /// gold test directives that name the gold runs).
    pub instances: BTreeMap<String, Instance>,
    /// The spec table's unit-test log parsers by repository.
    pub parsers: BTreeMap<String, Parser>,
    /// The spec table's non-test extensions (they name the shared gold/base runs).
    pub non_test_exts: swtbench_html::NonTestExts,
}

fn generator() -> String {
    format!("swtbench {}", env!("CARGO_PKG_VERSION"))
}

/// The directory the page will be written to (links are relative to it).
fn out_dir(out: Option<&Path>) -> Result<PathBuf, CliError> {
    let dir = match out.and_then(Path::parent) {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::path::absolute(&dir)
        .map_err(|e| CliError::input(anyhow!("resolving {}: {e}", dir.display())))
}

fn load(
    path: &Path,
    metrics: &leaderboard::Metrics,
    ctx: &PageContext,
    out_dir: &Path,
) -> Result<swtbench_html::RunView, CliError> {
    let opts = swtbench_html::LoadOptions {
        out_dir: out_dir.to_path_buf(),
        instances: ctx.instances.clone(),
        metrics: Some(swtbench_html::Metrics::from(metrics)),
        denominator: Some(ctx.denominator),
        parsers: ctx.parsers.clone(),
        params: ctx.params.clone(),
        generator: generator(),
        ..swtbench_html::LoadOptions::default()
    };
    swtbench_html::load_run_with(path, &opts, &ctx.non_test_exts).map_err(|e| {
        CliError::input(anyhow!(e)).with_hint(
            "PATH is <logs root>/<run_id>/<model>, e.g. run_instance_swt_logs/my-run/my-model",
        )
    })
}

fn emit(html: &str, out: Option<&Path>, printer: &Printer) -> CliResult {
    match out {
        Some(file) => {
            std::fs::write(file, html).map_err(|e| {
                CliError::input(anyhow!("cannot write {}: {e}", file.display()))
                    .with_hint("check that the directory exists and is writable")
            })?;
            printer.info(&format!(
                "HTML report: {} ({} kB)",
                file.display(),
                html.len().div_ceil(1000)
            ));
        }
        None => printer.data(html),
    }
    Ok(ExitCode::Success)
}

/// Writes the page of the run at `path` with the given metrics.
pub fn write_run(
    path: &Path,
    metrics: &leaderboard::Metrics,
    ctx: &PageContext,
    out: Option<&Path>,
    printer: &Printer,
) -> CliResult {
    let view = load(path, metrics, ctx, &out_dir(out)?)?;
    for w in &view.warnings {
        printer.warn(w);
    }
    emit(&swtbench_html::render_run(&view), out, printer)
}

/// Writes the comparison page of two runs, each with its metrics.
pub fn write_compare(
    runs: [(&Path, &leaderboard::Metrics); 2],
    ctx: &PageContext,
    out: Option<&Path>,
    printer: &Printer,
) -> CliResult {
    let dir = out_dir(out)?;
    let a = load(runs[0].0, runs[0].1, ctx, &dir)?;
    let b = load(runs[1].0, runs[1].1, ctx, &dir)?;
    let view = swtbench_html::compare(&a, &b, &generator());
    emit(&swtbench_html::render_compare(&view), out, printer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse() {
        assert_eq!("html".parse::<ReportFormat>(), Ok(ReportFormat::Html));
        assert_eq!(
            "json".parse::<ReportFormat>(),
            Ok(ReportFormat::Table(Format::Json))
        );
        assert!("xml".parse::<ReportFormat>().is_err());
    }
}
