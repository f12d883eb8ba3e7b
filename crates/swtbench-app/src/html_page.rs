//! A run's HTML page, at the edge of the file system: the paths are resolved here (the page's
//! links are relative to where it is written) and the tree is read through [`FsTree`]; building
//! and rendering the page is pure (`swtbench-html`). `report --format html` and `run` both make
//! their pages through [`load_view`], and `run` writes its page next to its run report with
//! [`write_run_page`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::anyhow;
use swtbench_data::LoadedDataset;
use swtbench_grade::leaderboard;
use swtbench_grade::tree::{NonTestExts, ReadRules};
use swtbench_html::{LoadError, LoadOptions, RunView};
use swtbench_plan::{Plan, RunSettings};

use crate::tree::FsTree;
use crate::{Error, Result};

/// Reads the run whose model directory is `model_dir` into a page's view, with links relative
/// to `opts.out_dir`. Both paths are resolved first (symbolic links included) so that the links
/// hold wherever the command was started.
pub fn load_view(model_dir: &Path, opts: LoadOptions) -> Result<RunView, LoadError> {
    let abs = std::fs::canonicalize(model_dir).map_err(|e| LoadError::Io {
        path: model_dir.to_path_buf(),
        source: e,
    })?;
    let out_dir = std::fs::canonicalize(&opts.out_dir).unwrap_or_else(|_| opts.out_dir.clone());
    let opts = LoadOptions { out_dir, ..opts };
    swtbench_html::load_run(&FsTree, &abs, &opts)
}

/// How an evaluation read each repository's logs: the parser the plan chose for it, and the
/// non-test extensions its spec used for the shared runs' directive hashes.
pub fn plan_rules(plan: &Plan) -> ReadRules {
    ReadRules {
        parsers: plan
            .instances
            .iter()
            .filter_map(|ip| ip.parser.map(|p| (ip.repo.clone(), p)))
            .collect(),
        non_test_exts: NonTestExts {
            by_repo: plan
                .instances
                .iter()
                .filter_map(|ip| {
                    Some((
                        ip.repo.clone(),
                        ip.spec.as_ref()?.non_test_extensions.clone(),
                    ))
                })
                .collect(),
            default: None,
        },
    }
}

/// What the page of an evaluation shows besides its tree.
#[derive(Debug, Clone)]
pub struct RunPage<'a> {
    pub settings: &'a RunSettings,
    /// The model's directory name.
    pub model_dir: &'a str,
    pub dataset: &'a LoadedDataset,
    /// The run report just written.
    pub run_report: &'a Path,
    /// The table's numbers.
    pub metrics: &'a leaderboard::Metrics,
    /// From [`plan_rules`].
    pub rules: ReadRules,
    /// How long the evaluation took.
    pub elapsed: Duration,
}

/// The parameters an evaluation's page lists first.
fn run_params(page: &RunPage<'_>) -> Vec<(String, String)> {
    let (settings, dataset) = (page.settings, page.dataset);
    let filter = match (dataset.filter_applied, dataset.filter) {
        (true, Some(list)) => format!("SWT-Bench filter list ({list})"),
        _ => "none".to_string(),
    };
    let patch_types = settings
        .patch_types
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let secs = page.elapsed.as_secs();
    let mut params = vec![
        ("dataset".into(), dataset.name.clone()),
        ("split".into(), dataset.split.clone()),
        ("filter".into(), filter),
        ("exec mode".into(), settings.eval.exec_mode.as_str().into()),
        ("patch types".into(), patch_types),
        (
            "coverage".into(),
            if settings.eval.coverage { "on" } else { "off" }.into(),
        ),
        (
            "coverage formula".into(),
            swtbench_grade::CoverageFormula::default().as_str().into(),
        ),
        (
            "time taken".into(),
            format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60),
        ),
    ];
    params.extend(settings.grading_version.run_parameter());
    params
}

/// Writes an evaluation's page next to its run report (`<model>.<run_id>.html` in the results
/// directory) and returns its path; `Ok(None)` when the run has no report directory yet
/// (interrupted before any instance had a report: nothing to show).
pub fn write_run_page(page: RunPage<'_>) -> Result<Option<PathBuf>> {
    let settings = page.settings;
    let model_path = swtbench_core::layout::LogsRoot::new(&settings.outputs.logs)
        .model_reports_dir(&settings.run_id, page.model_dir);
    if !model_path.is_dir() {
        return Ok(None);
    }
    let out_dir = settings.outputs.results.clone();
    let instances: BTreeMap<String, swtbench_core::Instance> = page
        .dataset
        .instances
        .iter()
        .map(|i| (i.instance_id.to_string(), i.clone()))
        .collect();
    // The page's links are relative to where it is written: every path it is given must be of
    // the same kind (a relative run report beside an absolute output directory made a link
    // that climbs to the file system's root).
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let model_path = abs(&model_path);
    let opts = LoadOptions {
        out_dir: abs(&out_dir),
        instances,
        metrics: Some(swtbench_html::Metrics::from(page.metrics)),
        denominator: Some(page.metrics.denominator),
        exec_mode: settings.grade_mode(),
        rules: page.rules.clone(),
        params: run_params(&page),
        generator: format!("swtbench {}", env!("CARGO_PKG_VERSION")),
        run_report: Some(abs(page.run_report)),
    };
    let view = load_view(&model_path, opts).map_err(|e| Error::input(anyhow!(e)))?;
    let html = swtbench_html::render_run(&view);
    let path = out_dir.join(format!("{}.{}.html", page.model_dir, settings.run_id));
    swtbench_data::fsutil::write_atomic(&path, html.as_bytes()).map_err(Error::environment)?;
    Ok(Some(path))
}
