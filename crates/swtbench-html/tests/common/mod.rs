//! Shared helpers of the integration tests: where the fixture run tree is, and how to load it.
#![allow(dead_code, clippy::unwrap_used)]

pub mod chromium;

use std::path::{Path, PathBuf};

use swtbench_data::tree::FsTree;
use swtbench_grade::leaderboard;
use swtbench_grade::InstanceReport;
use swtbench_html::{load_run, LoadOptions, RunView};

/// Denominator used with the fixture runs.
pub const DENOMINATOR: usize = 6;

pub fn fixture_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run_tree")
}

pub fn model_dir(run_id: &str, model: &str) -> PathBuf {
    fixture_root()
        .join("run_instance_swt_logs")
        .join(run_id)
        .join(model)
}

/// Every `report.json` under `dir`, sorted by instance id.
fn reports_in(dir: &Path) -> Vec<InstanceReport> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
        .iter()
        .filter_map(|n| {
            let text = std::fs::read_to_string(dir.join(n).join("report.json")).ok()?;
            Some(InstanceReport::from_report_json(&text, Some(n)).unwrap())
        })
        .collect()
}

/// The leaderboard numbers of a fixture run, computed as `swtbench report` computes them (with
/// the fixture's gold run `validate-lite-gold-1` for the coverage rows).
pub fn leaderboard(run_id: &str, model: &str) -> leaderboard::Metrics {
    let reports = reports_in(&model_dir(run_id, model));
    let gold = reports_in(&model_dir("validate-lite-gold-1", "gold"));
    leaderboard::compute(&reports, Some(&gold), DENOMINATOR)
}

/// Reads the run at `model_dir` as the application layer does: paths resolved first (symbolic
/// links included), then the tree read from the file system.
pub fn load_dir(model_dir: &Path, opts: &LoadOptions) -> RunView {
    let opts = LoadOptions {
        out_dir: std::fs::canonicalize(&opts.out_dir).unwrap_or_else(|_| opts.out_dir.clone()),
        ..opts.clone()
    };
    load_run(&FsTree, &std::fs::canonicalize(model_dir).unwrap(), &opts).unwrap()
}

pub fn load(run_id: &str, model: &str, out_dir: &Path) -> RunView {
    let opts = LoadOptions {
        out_dir: out_dir.to_path_buf(),
        metrics: Some((&leaderboard(run_id, model)).into()),
        generator: "swtbench test".to_string(),
        params: vec![("dataset".to_string(), "fixture".to_string())],
        ..LoadOptions::default()
    };
    load_dir(&model_dir(run_id, model), &opts)
}
