//! Rendering throughput: every SWE-bench Lite + Verified instance (800) turned into its Dockerfiles,
//! setup scripts, keys and the six eval scripts, with requirement files served from memory (a fake
//! file source: fetching is excluded from the measurement).
//!
//! Reads the datasets from the shared data directory (`SWTBENCH_SHARED_DATA` or
//! `<workspace>/../shared/data`); without it, the crate's 17 fixture instances are repeated to the
//! same count so the benchmark still runs.

use std::fs;
use std::path::PathBuf;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use serde_json::Value;
use swtbench_core::diff::{remove_binary_diffs, LineSplit};
use swtbench_core::{Instance, PatchLayout};
use swtbench_spec::{Arch, EvalOptions, ExecSpec, ReadError, RunInputs, SpecTable};

const FAKE_REQUIREMENTS: &str = "# requirements\n-r base.txt\nnumpy>=1.20\npytest\n-e .\n";

fn shared_data() -> Option<PathBuf> {
    let dir = std::env::var_os("SWTBENCH_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"));
    dir.join("datasets").is_dir().then_some(dir)
}

fn load(path: &PathBuf) -> Vec<Instance> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|row| Instance::from_row(&row, PatchLayout::Swebench).ok())
        .collect()
}

fn instances() -> Vec<Instance> {
    if let Some(dir) = shared_data() {
        let mut v = load(&dir.join("datasets/swebench_lite_test.jsonl"));
        v.extend(load(&dir.join("datasets/swebench_verified_test.jsonl")));
        if v.len() == 800 {
            return v;
        }
    }
    let fixtures =
        load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/instances.jsonl"));
    fixtures.iter().cycle().take(800).cloned().collect()
}

fn render_all(instances: &[Instance], table: &SpecTable) -> usize {
    let files = |_: &str, _: &str, path: &str| -> Result<Option<String>, ReadError> {
        Ok(Some(if path.ends_with(".yml") {
            "name: dev\nchannels:\n  - conda-forge\ndependencies:\n  - numpy\n".to_string()
        } else {
            FAKE_REQUIREMENTS.to_string()
        }))
    };
    let opts = EvalOptions::default();
    let mut bytes = 0;
    for instance in instances {
        let spec = ExecSpec::new(instance, table, Arch::X86_64, &files).expect("renders");
        let model_patch = remove_binary_diffs(&instance.golden_test_patch, LineSplit::Python);
        let inputs = RunInputs {
            model_patch: &model_patch,
            gold_test_patch: &instance.golden_test_patch,
            gold_code_patch: &instance.golden_code_patch,
        };
        bytes += spec.setup_env_sh.len() + spec.keys.instance.len();
        for run in spec.render_runs(&inputs, &opts).expect("renders") {
            bytes += run.eval_script.len();
        }
    }
    bytes
}

fn bench(c: &mut Criterion) {
    let instances = instances();
    let table = SpecTable::embedded();
    c.bench_function("render 800 instances (6 runs each)", |b| {
        b.iter(|| black_box(render_all(black_box(&instances), table)))
    });
    c.bench_function("parse the embedded spec table", |b| {
        b.iter(|| {
            black_box(
                SpecTable::parse(
                    swtbench_spec::table::EMBEDDED_TABLE,
                    "embedded",
                    swtbench_spec::TableSyntax::Toml,
                    &|_| Err(String::new().into()),
                )
                .expect("parses"),
            )
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
