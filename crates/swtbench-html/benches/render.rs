//! Rendering speed of a full-size run page: 2,294 instances built in memory (patches of a few
//! dozen lines, a handful of tests and coverage dumps each), rendered with plain and compressed
//! details. Page weight and browser timings are measured by `examples/perf.rs`.
#![allow(clippy::unwrap_used)]

use criterion::{criterion_group, criterion_main, Criterion};
use swtbench_core::RunKind;
use swtbench_html::build::{build_instance, InstanceInput, InstanceReport, RunInput};
use swtbench_html::render::{render_run_with, DetailEncoding, RenderOptions};
use swtbench_html::{Metrics, RunView};

fn patch(path: &str, n: usize) -> String {
    let mut s = format!(
        "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -10,{n} +10,{} @@ def f():\n",
        n + 1
    );
    for i in 0..n {
        s.push_str(&format!("     line_{i} = compute({i})\n"));
    }
    s.push_str("+    added = True\n");
    s
}

fn output(status: &str, n: usize) -> Vec<u8> {
    let mut s = String::from("Applied patch tests/test_x.py cleanly.\n+ python3 /root/trace.py --count -C coverage.cover -m pytest -rA\n");
    for i in 0..n {
        s.push_str(&format!("{status} tests/test_x.py::test_{i}\n"));
    }
    s.push_str("+ cat coverage.cover\n{\"/testbed/src/m.py\": {\"10\": 1, \"11\": 2, \"40\": 0}}\n+ git checkout x\n");
    s.into_bytes()
}

fn view(n: usize) -> RunView {
    let instances = (0..n)
        .map(|i| {
            let runs = RunKind::ALL
                .iter()
                .map(|&kind| RunInput {
                    kind,
                    dir: Some(format!("../logs/{kind}/i{i}/")),
                    files: vec!["test_output.txt".into(), "eval.sh".into()],
                    test_output: Some(output(if kind.is_post() { "PASSED" } else { "FAILED" }, 12)),
                    parsed_output: None,
                })
                .collect();
            build_instance(InstanceInput {
                id: format!("pytest-dev__pytest-{i}"),
                repo: "pytest-dev/pytest".into(),
                report: Some(Ok(InstanceReport {
                    patch_successfully_applied: true,
                    resolved: i % 5 == 0,
                    ..InstanceReport::default()
                })),
                model_patch: Some(patch("tests/test_x.py", 40)),
                gold_code_patch: Some(patch("src/m.py", 30)),
                runs,
                ..InstanceInput::default()
            })
        })
        .collect();
    RunView {
        title: "bench".into(),
        metrics: Metrics::default(),
        instances,
        ..RunView::default()
    }
}

fn bench(c: &mut Criterion) {
    let v = view(2294);
    let mut g = c.benchmark_group("render_run_2294");
    g.sample_size(10);
    g.bench_function("compressed", |b| {
        b.iter(|| {
            render_run_with(
                &v,
                RenderOptions {
                    details: DetailEncoding::Compressed,
                },
            )
        })
    });
    g.bench_function("plain", |b| {
        b.iter(|| {
            render_run_with(
                &v,
                RenderOptions {
                    details: DetailEncoding::Plain,
                },
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
