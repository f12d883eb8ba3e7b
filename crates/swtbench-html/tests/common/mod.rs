//! Shared helpers of the integration tests: where the fixture run tree is, and how to load it.
#![allow(dead_code, clippy::unwrap_used)]

pub mod chromium;

use std::path::{Path, PathBuf};

use swtbench_html::{load_run, LoadOptions, RunView};

pub fn fixture_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run_tree")
}

pub fn model_dir(run_id: &str, model: &str) -> PathBuf {
    fixture_root()
        .join("run_instance_swt_logs")
        .join(run_id)
        .join(model)
}

pub fn load(run_id: &str, model: &str, out_dir: &Path) -> RunView {
    let opts = LoadOptions {
        out_dir: out_dir.to_path_buf(),
        denominator: Some(6),
        generator: "swtbench test".to_string(),
        params: vec![("dataset".to_string(), "fixture".to_string())],
        ..LoadOptions::default()
    };
    load_run(&model_dir(run_id, model), &opts).unwrap()
}
